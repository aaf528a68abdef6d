//! The rules file as the server holds it: loaded at start, replaced whole
//! by a good reload (`SIGHUP`), and the sign-in checks against its users
//! (argon2id on blocking threads, a short cache of good sign-ins, a
//! back-off per address after repeated failures).

use std::collections::HashMap;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::basic::{self, Credentials};
use super::password;
use super::rules::{Rules, RulesError, UserName};

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
/// A quiet address's failures are forgotten after this.
const FAILURES_FOR: Duration = Duration::from_secs(15 * 60);
/// Addresses with failures remembered at most.
const FAILURES_MAX: usize = 65_536;

/// The loaded rules file and its sign-in state, shared by every route.
pub struct Users {
    path: PathBuf,
    rules: RwLock<Arc<Rules>>,
    /// Bumped by each reload: remembered sign-ins of older files lapse.
    generation: AtomicU64,
    /// Keys the sign-in cache (credentials are never kept, only this hash).
    salt: [u8; 32],
    dummy: &'static str,
    cache: Mutex<HashMap<[u8; 32], (UserName, Instant)>>,
    failures: Mutex<HashMap<IpAddr, (u32, Instant)>>,
    /// argon2 runs at most this many at once (each takes 19 MiB).
    verifying: tokio::sync::Semaphore,
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
            failures: Mutex::new(HashMap::new()),
            verifying: tokio::sync::Semaphore::new(cores * 2),
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

    /// The user these Basic credentials sign in, if they do. Slow when not
    /// remembered (argon2id, on a blocking thread); an unknown user costs
    /// the same as a wrong password; an address with repeated failures
    /// waits first ([`basic::backoff`]). Failures are logged without the
    /// password.
    pub async fn sign_in(&self, c: &Credentials, client: IpAddr) -> Option<UserName> {
        let key = self.cache_key(c);
        let now = Instant::now();
        if let Some((user, at)) = lock(&self.cache).get(&key) {
            if now.duration_since(*at) < CACHE_FOR {
                return Some(*user);
            }
        }
        let failures = self.failures_of(client, now);
        let wait = basic::backoff(failures);
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        let rules = self.rules();
        let (user, hash) = match rules.user(&c.user) {
            Some((u, h)) => (Some(u), h.to_string()),
            None => (None, self.dummy.to_string()),
        };
        let ok = {
            let _permit = self.verifying.acquire().await.ok()?;
            self.verifications.fetch_add(1, Ordering::Relaxed);
            let pw = c.password.clone();
            tokio::task::spawn_blocking(move || password::verify(&pw, &hash))
                .await
                .unwrap_or(false)
        };
        match (ok, user) {
            (true, Some(user)) => {
                lock(&self.failures).remove(&client);
                let mut cache = lock(&self.cache);
                if cache.len() >= CACHE_MAX {
                    cache.retain(|_, (_, at)| now.duration_since(*at) < CACHE_FOR);
                    if cache.len() >= CACHE_MAX {
                        cache.clear();
                    }
                }
                cache.insert(key, (user, now));
                Some(user)
            }
            _ => {
                let n = self.count_failure(client, now);
                tracing::warn!(
                    target: "wirespeed::signin",
                    user = %c.user,
                    client = %client,
                    failures = n,
                    known_user = user.is_some(),
                    "sign-in failed (wrong user name or password)"
                );
                None
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

    fn failures_of(&self, client: IpAddr, now: Instant) -> u32 {
        match lock(&self.failures).get(&client) {
            Some((n, at)) if now.duration_since(*at) < FAILURES_FOR => *n,
            _ => 0,
        }
    }

    fn count_failure(&self, client: IpAddr, now: Instant) -> u32 {
        let mut failures = lock(&self.failures);
        if failures.len() >= FAILURES_MAX {
            failures.retain(|_, (_, at)| now.duration_since(*at) < FAILURES_FOR);
            if failures.len() >= FAILURES_MAX {
                failures.clear();
            }
        }
        let e = failures.entry(client).or_insert((0, now));
        if now.duration_since(e.1) >= FAILURES_FOR {
            e.0 = 0;
        }
        e.0 = e.0.saturating_add(1);
        e.1 = now;
        e.0
    }
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

    #[tokio::test]
    async fn good_bad_unknown_and_remembered() {
        let u = users();
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let alice = u.sign_in(&creds("alice", b"pw-alice"), ip).await;
        assert_eq!(alice.map(|n| n.as_str()), Some("alice"));
        assert!(u.sign_in(&creds("alice", b"wrong"), ip).await.is_none());
        assert!(u
            .sign_in(&creds("mallory", b"pw-alice"), ip)
            .await
            .is_none());
        assert_eq!(u.failures_of(ip, Instant::now()), 2);
        assert_eq!(u.verifications.load(Ordering::Relaxed), 3);
        // Remembered: no argon2 this time.
        assert!(u.sign_in(&creds("alice", b"pw-alice"), ip).await.is_some());
        assert_eq!(u.verifications.load(Ordering::Relaxed), 4 - 1);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = Users::from_text("users.toml", "[users]\nalice = \"secret\"\n").unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("users.toml, line 2: "), "{s}");
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
