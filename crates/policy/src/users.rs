//! The rules file as the server holds it: loaded at start, replaced whole
//! by a good reload (`SIGHUP`), and the sign-in checks against its users
//! (argon2id on blocking threads behind a bounded queue, a short cache of
//! good sign-ins, guessing bounded per source and per account by
//! `limiter.rs`).

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::basic::Credentials;
use super::limiter::{Limiter, Outcome, Ticket};
use super::password;
use super::rules::{Rules, RulesError, UserName};
use super::sessions::stamp_of;

/// Why a rules file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum UsersError {
    #[error("{path}: cannot read the rules file: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}, {source}")]
    Rules { path: String, source: RulesError },
}

/// How long a good sign-in is remembered (a client sending Basic on every
/// request pays argon2 once per this, not per request).
const CACHE_FOR: Duration = Duration::from_secs(60);
/// Remembered sign-ins at most (beyond: the expired go, then all).
const CACHE_MAX: usize = 4096;
/// Sign-ins waiting for argon2 per lane at most, per verification that
/// lane runs at once: beyond, a sign-in is refused at once (429).
const QUEUE_PER_PERMIT: usize = 8;
/// What a refusal for a full queue asks to wait.
const QUEUE_FULL_WAIT: Duration = Duration::from_secs(1);

/// How a sign-in ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignIn {
    /// The password is right: `stamp` is that of the hash it was checked
    /// against (a session carries it).
    User { name: UserName, stamp: u64 },
    /// Wrong user name or password.
    Wrong,
    /// Too many guesses (from this source, for this account) or too many
    /// sign-ins waiting: nothing was checked; try again after this long.
    TooMany { retry_after: Duration },
}

impl SignIn {
    /// The user signed in, if one is.
    pub fn user(self) -> Option<UserName> {
        match self {
            SignIn::User { name, .. } => Some(name),
            _ => None,
        }
    }
}

/// One queue of verifications: at most `permits` run, a bounded number
/// wait.
struct Lane {
    permits: tokio::sync::Semaphore,
    waiting: std::sync::atomic::AtomicUsize,
    max_waiting: usize,
}

impl Lane {
    fn new(permits: usize) -> Lane {
        Lane {
            permits: tokio::sync::Semaphore::new(permits),
            waiting: std::sync::atomic::AtomicUsize::new(0),
            max_waiting: permits * QUEUE_PER_PERMIT,
        }
    }

    /// A turn to verify, or `None` when too many wait already.
    async fn enter(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        if self.waiting.fetch_add(1, Ordering::AcqRel) >= self.max_waiting {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        // Counted down however the wait ends (a client that leaves too).
        struct Left<'a>(&'a std::sync::atomic::AtomicUsize);
        impl Drop for Left<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::AcqRel);
            }
        }
        let _left = Left(&self.waiting);
        self.permits.acquire().await.ok()
    }
}

/// The loaded rules file and its sign-in state, shared by every route.
pub struct Users {
    path: PathBuf,
    rules: RwLock<Arc<Rules>>,
    /// Bumped by each reload: remembered sign-ins of older files lapse.
    generation: AtomicU64,
    /// Keys the sign-in cache (credentials are never kept, only this hash).
    salt: [u8; 32],
    dummy: &'static str,
    cache: Mutex<HashMap<[u8; 32], (UserName, u64, Instant)>>,
    limiter: Mutex<Limiter>,
    /// Sign-ins from a source and for an account with no failure: never
    /// queued behind a flood of guesses, which go to `suspect`. Each lane
    /// runs argon2 (19 MiB each) once per core at most.
    clean: Lane,
    suspect: Lane,
    /// argon2 verifications run so far.
    verifications: AtomicU64,
}

impl std::fmt::Debug for Users {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (users, paths) = self.rules().counts();
        f.debug_struct("Users")
            .field("path", &self.path)
            .field("users", &users)
            .field("paths", &paths)
            .finish_non_exhaustive()
    }
}

impl Users {
    /// Read and check the rules file at `path`.
    pub fn load(path: &Path) -> Result<Users, UsersError> {
        let rules = read(path)?;
        Ok(Users::with_rules(path.to_path_buf(), rules))
    }

    /// Rules given as text (`name` stands for the file in messages).
    pub fn from_text(name: &str, text: &str) -> Result<Users, UsersError> {
        let rules = Rules::parse(text).map_err(|source| UsersError::Rules {
            path: name.to_string(),
            source,
        })?;
        Ok(Users::with_rules(PathBuf::from(name), rules))
    }

    fn with_rules(path: PathBuf, rules: Rules) -> Users {
        let mut salt = [0u8; 32];
        let _ = getrandom::getrandom(&mut salt);
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Users {
            path,
            rules: RwLock::new(Arc::new(rules)),
            generation: AtomicU64::new(0),
            salt,
            dummy: password::dummy_hash(),
            cache: Mutex::new(HashMap::new()),
            limiter: Mutex::new(Limiter::default()),
            clean: Lane::new(cores),
            suspect: Lane::new(cores),
            verifications: AtomicU64::new(0),
        }
    }

    /// The rules file's path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The rules in force.
    pub fn rules(&self) -> Arc<Rules> {
        self.rules.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Read the file again; on success its rules replace the old ones
    /// (and remembered sign-ins lapse), on failure the old ones stay.
    /// Returns the new counts of users and paths.
    pub fn reload(&self) -> Result<(usize, usize), UsersError> {
        let rules = read(&self.path)?;
        let counts = rules.counts();
        *self.rules.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(rules);
        self.generation.fetch_add(1, Ordering::Relaxed);
        lock(&self.cache).clear();
        Ok(counts)
    }

    /// Whether these credentials sign a user in. Slow when not remembered
    /// (argon2id, on a blocking thread); an unknown user costs the same
    /// as a wrong password; a guess past the bounds of its source or its
    /// account, or one finding the queue full, is refused at once
    /// ([`SignIn::TooMany`]). Failures are logged without the password.
    pub async fn sign_in(&self, c: &Credentials, client: IpAddr) -> SignIn {
        let key = self.cache_key(c);
        let now = Instant::now();
        if let Some((name, stamp, at)) = lock(&self.cache).get(&key) {
            if now.duration_since(*at) < CACHE_FOR {
                return SignIn::User {
                    name: *name,
                    stamp: *stamp,
                };
            }
        }
        let rules = self.rules();
        let (user, hash) = match rules.user(&c.user) {
            Some((u, h)) => (Some(u), h.to_string()),
            None => (None, self.dummy.to_string()),
        };
        // A name that is no account is counted under itself (so that a
        // refusal says nothing of which names exist), shortened: the table
        // of such names must stay small.
        let account = user.map_or_else(|| clip(&c.user), |u| u.as_str().to_string());
        let began = lock(&self.limiter).begin(client, &account, user.is_some(), now);
        let mut attempt = match began {
            Ok(ticket) => Attempt {
                users: self,
                ticket: Some(ticket),
            },
            Err(retry_after) => {
                tracing::debug!(target: "wirespeed::signin", user = %c.user, client = %client, "sign-in refused: too many recent failures");
                return SignIn::TooMany { retry_after };
            }
        };
        let clean = attempt.ticket.as_ref().is_some_and(|t| t.clean);
        let lane = if clean { &self.clean } else { &self.suspect };
        let ok = {
            let Some(_permit) = lane.enter().await else {
                tracing::debug!(target: "wirespeed::signin", user = %c.user, client = %client, "sign-in refused: too many waiting to be checked");
                return SignIn::TooMany {
                    retry_after: QUEUE_FULL_WAIT,
                };
            };
            self.verifications.fetch_add(1, Ordering::Relaxed);
            let pw = c.password.clone();
            let hash = hash.clone();
            tokio::task::spawn_blocking(move || password::verify(&pw, &hash))
                .await
                .unwrap_or(false)
        };
        let now = Instant::now();
        match (ok, user) {
            (true, Some(name)) => {
                // Checked against the file as it was when this began: if a
                // reload changed the password meanwhile, this sign-in is
                // for a password that is no more.
                let current = self.rules();
                if current.user(name.as_str()).map(|(_, h)| h) != Some(hash.as_str()) {
                    attempt.end(Outcome::Void, now);
                    tracing::warn!(target: "wirespeed::signin", user = %c.user, client = %client, "sign-in with a password changed meanwhile refused");
                    return SignIn::Wrong;
                }
                attempt.end(Outcome::Good, now);
                let stamp = stamp_of(&hash);
                let mut cache = lock(&self.cache);
                if cache.len() >= CACHE_MAX {
                    cache.retain(|_, (_, _, at)| now.duration_since(*at) < CACHE_FOR);
                    if cache.len() >= CACHE_MAX {
                        cache.clear();
                    }
                }
                cache.insert(key, (name, stamp, now));
                SignIn::User { name, stamp }
            }
            _ => {
                attempt.end(Outcome::Bad, now);
                let limiter = lock(&self.limiter);
                tracing::warn!(
                    target: "wirespeed::signin",
                    user = %c.user,
                    client = %client,
                    failures = limiter.source_failures(client),
                    account_failures = limiter.account_failures(&account),
                    known_user = user.is_some(),
                    "sign-in failed (wrong user name or password)"
                );
                SignIn::Wrong
            }
        }
    }

    fn cache_key(&self, c: &Credentials) -> [u8; 32] {
        let mut h = Sha256::new();
        h.update(self.salt);
        h.update(self.generation.load(Ordering::Relaxed).to_le_bytes());
        h.update((c.user.len() as u64).to_le_bytes());
        h.update(c.user.as_bytes());
        h.update(&c.password);
        h.finalize().into()
    }
}

/// A let-through attempt: counted as undecided if dropped unended (the
/// client left while it waited), so nothing stays in flight for ever.
struct Attempt<'a> {
    users: &'a Users,
    ticket: Option<Ticket>,
}

impl Attempt<'_> {
    fn end(&mut self, outcome: Outcome, now: Instant) {
        if let Some(t) = self.ticket.take() {
            lock(&self.users.limiter).finish(t, outcome, now);
        }
    }
}

impl Drop for Attempt<'_> {
    fn drop(&mut self) {
        self.end(Outcome::Void, Instant::now());
    }
}

/// At most 64 bytes of a name (on a character boundary).
fn clip(name: &str) -> String {
    let mut end = name.len().min(64);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    name[..end].to_string()
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn read(path: &Path) -> Result<Rules, UsersError> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| UsersError::Read {
        path: shown.clone(),
        source,
    })?;
    Rules::parse(&text).map_err(|source| UsersError::Rules {
        path: shown,
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users() -> Users {
        let hash = password::hash(b"pw-alice").unwrap();
        Users::from_text("test.toml", &format!("[users]\nalice = \"{hash}\"\n")).unwrap()
    }

    fn creds(user: &str, pw: &[u8]) -> Credentials {
        Credentials {
            user: user.into(),
            password: pw.to_vec(),
        }
    }

    fn name(r: SignIn) -> Option<&'static str> {
        r.user().map(|n| n.as_str())
    }

    #[tokio::test]
    async fn good_bad_unknown_and_remembered() {
        let u = users();
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let alice = u.sign_in(&creds("alice", b"pw-alice"), ip).await;
        assert_eq!(name(alice), Some("alice"));
        assert_eq!(
            u.sign_in(&creds("alice", b"wrong"), ip).await,
            SignIn::Wrong
        );
        assert_eq!(
            u.sign_in(&creds("mallory", b"pw-alice"), ip).await,
            SignIn::Wrong
        );
        assert_eq!(lock(&u.limiter).source_failures(ip), 2);
        assert_eq!(u.verifications.load(Ordering::Relaxed), 3);
        // Remembered: no argon2 this time.
        assert!(name(u.sign_in(&creds("alice", b"pw-alice"), ip).await).is_some());
        assert_eq!(u.verifications.load(Ordering::Relaxed), 4 - 1);
    }

    #[tokio::test]
    async fn a_burst_of_guesses_is_refused_without_checking() {
        let u = Arc::new(users());
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let mut tasks = Vec::new();
        for _ in 0..40 {
            let u = u.clone();
            tasks.push(tokio::spawn(async move {
                u.sign_in(&creds("alice", b"guess"), ip).await
            }));
        }
        let mut refused = 0;
        for t in tasks {
            match t.await.unwrap() {
                SignIn::TooMany { retry_after } => {
                    assert!(!retry_after.is_zero());
                    refused += 1;
                }
                other => assert_eq!(other, SignIn::Wrong),
            }
        }
        let checked = u.verifications.load(Ordering::Relaxed);
        assert_eq!(checked, 5, "only the free budget is checked");
        assert_eq!(refused, 40 - 5);
    }

    #[tokio::test]
    async fn a_sign_in_checked_across_a_reload_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("users.toml");
        let old = password::hash(b"old").unwrap();
        std::fs::write(&file, format!("[users]\nalice = \"{old}\"\n")).unwrap();
        let u = Users::load(&file).unwrap();
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        // The reload lands while the check runs (it holds every permit
        // of its lane until the file is swapped).
        let lane_full = u
            .clean
            .permits
            .acquire_many(u32::try_from(u.clean.permits.available_permits()).unwrap())
            .await
            .unwrap();
        let c = creds("alice", b"old");
        let signing = u.sign_in(&c, ip);
        tokio::pin!(signing);
        assert!(futures_poll_once(signing.as_mut()).await.is_none());
        let new = password::hash(b"new").unwrap();
        std::fs::write(&file, format!("[users]\nalice = \"{new}\"\n")).unwrap();
        u.reload().unwrap();
        drop(lane_full);
        assert_eq!(signing.await, SignIn::Wrong);
        // Not a failure of alice's.
        assert_eq!(lock(&u.limiter).account_failures("alice"), 0);
        match u.sign_in(&creds("alice", b"new"), ip).await {
            SignIn::User { stamp, .. } => assert_eq!(stamp, stamp_of(&new)),
            other => panic!("{other:?}"),
        }
    }

    /// Poll once: `Some` if the future finished.
    async fn futures_poll_once<F: std::future::Future + Unpin>(f: F) -> Option<F::Output> {
        let mut f = f;
        std::future::poll_fn(|cx| {
            std::task::Poll::Ready(match std::pin::Pin::new(&mut f).poll(cx) {
                std::task::Poll::Ready(v) => Some(v),
                std::task::Poll::Pending => None,
            })
        })
        .await
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = Users::from_text("users.toml", "[users]\nalice = \"secret\"\n").unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("users.toml, line 2: "), "{s}");
        // A pasted hash asking argon2 for 4 GiB a sign-in, on its line.
        let huge = "$argon2id$v=19$m=4194304,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$\
                    VuaC8hFvqDFUuVbpxxQnzrSUjkmqnzJQ6pM7IXvTnbA";
        let text = format!(
            "[users]\nbob = \"{}\"\nalice = \"{huge}\"\n",
            password::dummy_hash()
        );
        let s = Users::from_text("users.toml", &text)
            .unwrap_err()
            .to_string();
        assert!(s.starts_with("users.toml, line 3: "), "{s}");
        assert!(
            s.contains("m=4194304") && s.contains("wirespeed passwd"),
            "{s}"
        );
        // The token holder's name in a link's minter is no user's.
        let text = format!("[users]\n\"--token\" = \"{}\"\n", password::dummy_hash());
        let s = Users::from_text("users.toml", &text)
            .unwrap_err()
            .to_string();
        assert!(
            s.starts_with("users.toml, line 2: ") && s.contains("reserved"),
            "{s}"
        );
    }

    #[test]
    fn a_bad_reload_keeps_the_old_rules() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("users.toml");
        std::fs::write(&file, "[paths.\"/\"]\n\"*\" = \"r\"\n").unwrap();
        let u = Users::load(&file).unwrap();
        let root: Vec<String> = Vec::new();
        assert_eq!(u.rules().rights(None, &root).letters(), "r");
        std::fs::write(&file, "[paths.\"/\"]\n\"*\" = \"rq\"\n").unwrap();
        let e = u.reload().unwrap_err().to_string();
        assert!(e.contains("users.toml, line 2: unknown right 'q'"), "{e}");
        assert_eq!(u.rules().rights(None, &root).letters(), "r");
        std::fs::write(&file, "[paths.\"/\"]\n\"*\" = \"rw\"\n").unwrap();
        assert_eq!(u.reload().unwrap(), (0, 1));
        assert_eq!(u.rules().rights(None, &root).letters(), "rw");
    }
}
