//! `serve --hook-before-upload CMD`: the publish gate (`storage::gate`) as a
//! command. Before an upload becomes visible, CMD runs (by `sh -c`) with a
//! JSON event on its standard input — `{"action":"upload.before","path":…,
//! "file":…,"size":…,"time":…}`, `file` being the complete temporary file,
//! readable, not yet published — and decides: exit 0 publishes; any other
//! exit, or no answer within the time limit, refuses: nothing is published
//! and the client gets 422 with the first line the command printed. On S3
//! there is no file: the event has `"s3":{"bucket":…,"key":…}`, the hidden
//! staging key the complete upload waits under, and `"url"`, a presigned
//! `GET` of it (valid 15 minutes) instead of `file`.
//!
//! `serve --hook-before-upload https://…` (or `http://`): [`UrlGate`], the
//! same event POSTed and signed like the other hooks; a 2xx answer
//! publishes, any other refuses with its body's first line, and no answer
//! (or a certificate that does not verify) refuses too: an upload check
//! that cannot be asked lets nothing through.

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::hook_post::{HookTls, HookUrl};
use crate::path::RelPath;
use crate::storage::gate::{PublishGate, Staged};

#[derive(Debug, Clone)]
pub struct CommandGate {
    pub command: String,
    pub timeout: Duration,
}

fn now() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let civil = crate::access_log::civil_time(secs);
    format!("{}Z", String::from_utf8_lossy(&civil))
}

/// The event for an upload waiting in a local temporary file.
fn file_event(key: &RelPath, file: &Path, size: u64) -> serde_json::Value {
    serde_json::json!({
        "action": "upload.before",
        "path": key.to_string(),
        "file": file.to_string_lossy(),
        "size": size,
        "time": now(),
    })
}

/// The event for an upload staged in the bucket.
fn staged_event(key: &RelPath, staged: &Staged, size: u64) -> serde_json::Value {
    serde_json::json!({
        "action": "upload.before",
        "path": key.to_string(),
        "s3": { "bucket": staged.bucket, "key": staged.key },
        "url": staged.url,
        "size": size,
        "time": now(),
    })
}

/// An event as the line a gate is given.
fn line(event: &serde_json::Value) -> Vec<u8> {
    let mut body = event.to_string().into_bytes();
    body.push(b'\n');
    body
}

/// `--hook-before-upload URL`.
#[derive(Debug, Clone)]
pub struct UrlGate {
    pub url: HookUrl,
    /// `--hook-secret`: signs the POST like the other hooks'.
    pub secret: Option<Vec<u8>>,
    pub tls: Option<HookTls>,
    /// Each step's limit (connecting, sending, the answer).
    pub timeout: Duration,
}

impl UrlGate {
    /// POSTs `event`: the answer's status decides.
    fn ask(&self, key: &RelPath, event: &serde_json::Value) -> Result<(), String> {
        let body = line(event);
        let (secret, tls) = (self.secret.as_deref(), self.tls.as_ref());
        let why = match super::hook_post::post(&self.url, &body, secret, self.timeout, tls) {
            Ok(a) if (200..300).contains(&a.status) => return Ok(()),
            Ok(a) if !a.first_line.is_empty() => a.first_line,
            Ok(a) => format!(
                "refused by the server's upload check (answered {})",
                a.status
            ),
            Err(e) => format!("the server's upload check could not be asked ({e})"),
        };
        tracing::info!(target: "wirespeed::hooks", path = %key, url = %self.url.show(), reason = %why, "upload refused by --hook-before-upload");
        Err(why)
    }
}

impl PublishGate for UrlGate {
    fn check(&self, key: &RelPath, file: &Path, size: u64) -> Result<(), String> {
        self.ask(key, &file_event(key, file, size))
    }

    fn check_staged(&self, key: &RelPath, staged: &Staged, size: u64) -> Result<(), String> {
        self.ask(key, &staged_event(key, staged, size))
    }
}

impl PublishGate for CommandGate {
    fn check(&self, key: &RelPath, file: &Path, size: u64) -> Result<(), String> {
        self.ask(key, &file_event(key, file, size))
    }

    fn check_staged(&self, key: &RelPath, staged: &Staged, size: u64) -> Result<(), String> {
        self.ask(key, &staged_event(key, staged, size))
    }
}

impl CommandGate {
    /// Runs the command with `event`: its exit status decides.
    fn ask(&self, key: &RelPath, event: &serde_json::Value) -> Result<(), String> {
        let body = line(event);
        let mut said = Vec::new();
        match super::hooks::run_command_saying(&self.command, &body, self.timeout, &mut said) {
            Ok(()) => Ok(()),
            Err(e) => {
                let said = String::from_utf8_lossy(&said);
                let first = said.lines().next().unwrap_or("").trim();
                tracing::info!(target: "wirespeed::hooks", path = %key, reason = %e, said = %first, "upload refused by --hook-before-upload");
                Err(if first.is_empty() {
                    format!("refused by the server's upload check ({e})")
                } else {
                    first.to_string()
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_status_decides_and_the_message_is_the_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t");
        std::fs::write(&f, b"EICAR").unwrap();
        let key = crate::path::parse_request_path("/a/b.txt").unwrap();
        let gate = |cmd: &str| CommandGate {
            command: cmd.into(),
            timeout: Duration::from_secs(5),
        };
        // The command sees the event and the file.
        let ok = gate(
            r#"e=$(cat); printf %s "$e" | grep -q '"action":"upload.before"' &&
               printf %s "$e" | grep -q '"path":"/a/b.txt"'"#,
        );
        assert_eq!(ok.check(&key, &f, 5), Ok(()));
        let scan = format!(
            "if grep -q EICAR {}; then echo 'virus found: EICAR'; echo more; exit 1; fi",
            f.display()
        );
        assert_eq!(
            gate(&scan).check(&key, &f, 5).unwrap_err(),
            "virus found: EICAR"
        );
        let silent = gate("exit 2").check(&key, &f, 5).unwrap_err();
        assert!(silent.contains("refused"), "{silent}");
        let slow = CommandGate {
            command: "sleep 5".into(),
            timeout: Duration::from_millis(100),
        };
        assert!(slow.check(&key, &f, 5).unwrap_err().contains("time limit"));
    }
}
