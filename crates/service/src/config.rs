//! The service's settings: what the binary's flags become, shared by every
//! front (fronts import it from here, never from the crate root).

use crate::digest::{self, DigestPolicy};
use crate::metrics::Metrics;
use crate::policy::hidden::Hidden;
use crate::policy::origin;
use crate::policy::presets::{Access, Writes};
use crate::policy::Policy;
use crate::upload::{HashMode, UploadPath};

/// Service settings (the storage backend is passed separately).
#[derive(Debug, Clone, Default)]
pub struct ServiceConfig {
    /// Who may read and write.
    pub access: Access,
    /// Users and their rights per folder (`serve --auth FILE`), shared by
    /// every route (a reload is seen by all).
    pub users: Option<std::sync::Arc<crate::policy::Users>>,
    /// Share links (`/-/shares/…` mints them; `?share=` presents one).
    pub shares: Option<std::sync::Arc<crate::policy::Shares>>,
    /// The links table every node on a bucket shares (`None`: the node's
    /// own, in `shares.json`).
    pub links: Option<crate::links::SharedLinks>,
    /// Browser sessions (`/-/session` signs in; its cookie presents one).
    pub sessions: Option<std::sync::Arc<crate::policy::Sessions>>,
    /// Which writes are taken at all (checked before the token).
    pub writes: Writes,
    /// Largest accepted upload body in bytes (`None`: unlimited). Bigger
    /// Content-Length → 413 before reading; a chunked body → 413 as soon as
    /// it crosses the limit.
    pub max_body: Option<u64>,
    /// How upload bodies reach storage.
    pub upload_path: UploadPath,
    /// Where upload digests are computed.
    pub hash: HashMode,
    /// When uploads are hashed.
    pub digest: DigestPolicy,
    /// The `Host` names and addresses answered (others get 421, a
    /// DNS-rebinding guard; see `origin::AllowedHosts`). `None`: any Host.
    pub allowed_hosts: Option<origin::AllowedHosts>,
    /// Where the routes count uploads and digest mismatches; also served at
    /// `GET /-/metrics`. `None`: no metrics route.
    pub metrics: Option<std::sync::Arc<Metrics>>,
    /// Names neither listed, served nor taken (`serve --hidden`).
    pub hidden: Hidden,
    /// Folders with an `index.html` answer with it (`serve --index`).
    pub index: bool,
    /// Served files may run scripts as this origin (`serve --allow-scripts`);
    /// by default they get `Content-Security-Policy: sandbox`.
    pub allow_scripts: bool,
    /// Entries one folder archive (`?archive=tar|zip`) may hold; more is
    /// answered 413. `None`: [`ARCHIVE_MAX_ENTRIES`].
    pub archive_max_entries: Option<usize>,
    /// WebDAV locks, shared by every front that writes (a clone of the
    /// config shares the table; `dav` takes locks, the others ask).
    pub locks: std::sync::Arc<crate::locks::LockTable>,
    /// Sign-in by a trusted proxy's headers (`serve --user-header`).
    pub proxy_sign_in: Option<crate::policy::groups::ProxySignIn>,
    /// The audit trail and the hooks (`serve --audit-log`, `--hook`).
    pub events: Option<std::sync::Arc<crate::events::Events>>,
    /// The index `?q=` searches (`serve --search`); `None`: a `?q=` is
    /// an ordinary listing's query.
    pub search: Option<std::sync::Arc<wirespeed_search::Search>>,
    /// `?thumbnail`: its threads and disk cache (a clone shares them).
    pub thumbnails: crate::thumbnail::Thumbnails,
    /// What each quota of the rules file holds, counted and kept current
    /// (a clone of the config shares it).
    pub quotas: std::sync::Arc<crate::usage::QuotaBook>,
    /// Days a deleted or overwritten file stays in the trash
    /// (`serve --trash-days`; 0: no trash, deletes are final).
    pub trash_days: u32,
    /// The `[rate]` buckets live transfers share (a clone shares them).
    pub bandwidth: crate::bandwidth::Bandwidth,
}

/// Entries one folder archive may hold unless `--archive-max-entries` says
/// otherwise (a plan holds every name in memory).
pub const ARCHIVE_MAX_ENTRIES: usize = 250_000;

impl ServiceConfig {
    /// The policy its presets (`access`, `writes`), rules file (`users`)
    /// and share links make: every route asks it.
    pub fn policy(&self) -> Policy {
        let mut policy =
            Policy::from_presets(&self.access, self.writes).with_hidden(self.hidden.clone());
        if let Some(users) = &self.users {
            policy = policy.with_users(users.clone());
        }
        if let Some(shares) = &self.shares {
            policy = policy.with_shares(shares.clone());
        }
        if let Some(sessions) = &self.sessions {
            policy = policy.with_sessions(sessions.clone());
        }
        if let Some(headers) = &self.proxy_sign_in {
            policy = policy.with_proxy_sign_in(headers.clone());
        }
        policy
    }

    /// Where to hash this request's upload, or `None` to store it unhashed
    /// (see [`digest::hash_upload`]).
    pub(crate) fn hash_for(
        &self,
        ex: &wirespeed_net::Exchange,
        expected: Option<&[u8; 32]>,
    ) -> Option<HashMode> {
        digest::hash_upload(self.digest, ex, expected).then_some(self.hash)
    }
}

/// What a control route over the files needs (the trash, a quota): the
/// storage, the config and the policy of the file routes, without knowing
/// the fronts.
pub(crate) trait FileParts: Send + Sync + 'static {
    type Storage: crate::storage::Storage;
    fn parts(&self) -> (&Self::Storage, &ServiceConfig, &Policy);
}
