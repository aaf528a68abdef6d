//! `put --json` and `get --json`: what happened to each file, as JSON
//! Lines on stdout. One line per file, written when that file is done
//! (sent, saved, found unchanged, kept, skipped or failed), then one
//! summary line last. Lines rather than one object holding every file: a
//! tree of a million files is a stream a reader can take line by line
//! (`jq -c`, `tail -n 1` for the summary) and that this side never holds
//! in memory, and a run cut short still leaves every finished file said.
//! Errors stay on stderr and the exit status is the command's own.

use std::path::Path;
use std::time::Instant;

use serde_json::Value;

/// What became of one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// `put`: stored on the server.
    Sent,
    /// `get`: written locally.
    Saved,
    /// Not transferred: the other side has it already (`put -r`'s quick
    /// check, `get -r`'s up-to-date file, `get -c` of a whole file).
    Unchanged,
    /// Not transferred: `--no-clobber` kept the existing file.
    Exists,
    /// Not transferred: a link, special file or reserved name, or a name a
    /// listing gave that is not one plain file name.
    Skipped,
    /// The transfer failed (the error is on stderr too).
    Failed,
}

impl Status {
    fn name(self) -> &'static str {
        match self {
            Status::Sent => "sent",
            Status::Saved => "saved",
            Status::Unchanged => "unchanged",
            Status::Exists => "exists",
            Status::Skipped => "skipped",
            Status::Failed => "failed",
        }
    }
}

/// One file's line: its local path, its URL, its size, what became of it
/// and, for a skip or a failure, why.
pub struct FileLine<'a> {
    pub path: Option<&'a Path>,
    pub url: Option<&'a str>,
    pub bytes: u64,
    pub status: Status,
    pub verified: Option<bool>,
    pub why: Option<String>,
}

impl<'a> FileLine<'a> {
    pub fn new(path: &'a Path, url: &'a str, bytes: u64, status: Status) -> FileLine<'a> {
        FileLine {
            path: Some(path),
            url: Some(url),
            bytes,
            status,
            verified: None,
            why: None,
        }
    }
}

/// The lines of one command, and the counts its summary says.
pub struct JsonLines {
    on: bool,
    /// `sent` for `put`, `saved` for `get`: the summary's name for done.
    done_name: &'static str,
    started: Instant,
    /// Counts by [`Status`], in its order.
    counts: [u64; 6],
    bytes: u64,
}

impl JsonLines {
    /// Lines for `put` (`done` = [`Status::Sent`]) or `get` ([`Status::Saved`]),
    /// written only when `on`.
    pub fn new(on: bool, done: Status) -> JsonLines {
        JsonLines {
            on,
            done_name: done.name(),
            started: Instant::now(),
            counts: [0; 6],
            bytes: 0,
        }
    }

    pub fn on(&self) -> bool {
        self.on
    }

    /// Files said so far.
    pub fn said(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// Count a file and write its line.
    pub fn file(&mut self, f: FileLine<'_>) {
        self.counts[f.status as usize] += 1;
        if matches!(f.status, Status::Sent | Status::Saved) {
            self.bytes += f.bytes;
        }
        if !self.on {
            return;
        }
        let mut v = vec![("type", "file".into())];
        if let Some(path) = f.path {
            v.push(("path", path.to_string_lossy().into()));
        }
        if let Some(url) = f.url {
            v.push(("url", url.into()));
        }
        v.push(("bytes", f.bytes.into()));
        v.push(("status", f.status.name().into()));
        if let Some(verified) = f.verified {
            v.push(("verified", verified.into()));
        }
        if let Some(why) = f.why {
            let key = if f.status == Status::Skipped {
                "reason"
            } else {
                "error"
            };
            v.push((key, why.into()));
        }
        super::progress::print_above(&object(&v));
    }

    /// The summary line: `files` planned (those a stop after a fatal error
    /// never started are `not_started`), then the counts.
    pub fn finish(&self, target: &str, files: u64) {
        if !self.on {
            return;
        }
        let c = &self.counts;
        let (done, unchanged, exists, skipped, failed) = (c[0] + c[1], c[2], c[3], c[4], c[5]);
        let said = done + unchanged + exists + skipped + failed;
        let seconds = (self.started.elapsed().as_secs_f64() * 1000.0).round() / 1000.0;
        let v: [(&str, Value); 11] = [
            ("type", "summary".into()),
            ("target", target.into()),
            ("files", files.max(said).into()),
            (self.done_name, done.into()),
            ("unchanged", unchanged.into()),
            ("exists", exists.into()),
            ("skipped", skipped.into()),
            ("failed", failed.into()),
            ("not_started", files.saturating_sub(said).into()),
            ("bytes", self.bytes.into()),
            ("seconds", seconds.into()),
        ];
        super::progress::print_above(&object(&v));
    }
}

/// A JSON object with its keys in the order given (the order people read
/// them in; serde_json's map would sort them).
fn object(pairs: &[(&str, Value)]) -> String {
    let mut out = String::from("{");
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::from(*k).to_string());
        out.push(':');
        out.push_str(&v.to_string());
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_status_and_bytes_of_what_moved() {
        let mut j = JsonLines::new(false, Status::Sent);
        for (status, bytes) in [
            (Status::Sent, 10),
            (Status::Unchanged, 5),
            (Status::Failed, 7),
            (Status::Sent, 1),
        ] {
            j.file(FileLine {
                path: Some(Path::new("a")),
                url: None,
                bytes,
                status,
                verified: None,
                why: None,
            });
        }
        assert_eq!(j.bytes, 11);
        assert_eq!(j.counts, [2, 0, 1, 0, 0, 1]);
        assert!(!j.on());
    }

    #[test]
    fn objects_keep_their_order_and_escape_what_they_hold() {
        let v = [
            ("type", Value::from("file")),
            ("path", "a\"b\n".into()),
            ("bytes", 3.into()),
        ];
        let text = object(&v);
        assert_eq!(text, r#"{"type":"file","path":"a\"b\n","bytes":3}"#);
        let parsed: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(parsed["path"], "a\"b\n");
    }
}
