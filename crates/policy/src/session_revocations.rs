//! The signed-out sessions a server refuses, bounded in memory without
//! ever letting one come back, and kept in an append-only file.
//!
//! Each sign-out is a row (session id, expiry, and its owner: a digest of
//! the user's name). Rows go when their session would have expired
//! anyway. Should the table still fill (a user signing in and out in a
//! loop), rows are never dropped: the users with the most rows have them
//! collapsed into one *floor* each — "this user's sessions expiring at or
//! before T are revoked", T the latest expiry among the collapsed rows.
//! That ends only that user's sessions signed in before their last
//! sign-out (sessions expire a fixed time after they begin), never anyone
//! else's, and takes one entry per user.
//!
//! The file is one JSON object a line, appended per sign-out (O(1)); it
//! is rewritten from the table (compacted) once it holds twice as many
//! lines as the table has entries, and after a collapse: amortised O(1)
//! per sign-out. A table file of the older format (one JSON array) is
//! read too, and rewritten at the first compaction.

use std::collections::HashMap;
use std::path::PathBuf;

use super::table_file::{self, TableError};

/// Rows at most before collapsing.
pub const MAX_ROWS: usize = 100_000;
/// Lines the file may hold beyond twice the table before a rewrite.
const SLACK_LINES: usize = 1024;

/// The owner digest of `user`'s sessions (never 0, which stands for a
/// row whose owner is not known: the older file format, other nodes of
/// an older version).
pub fn owner_of(user: &str) -> u64 {
    use sha2::Digest as _;
    let d = sha2::Sha256::digest([b"session-owner\0", user.as_bytes()].concat());
    u64::from_be_bytes(d[..8].try_into().unwrap_or_default()).max(1)
}

/// One line of the file: a row, or a floor.
#[derive(serde::Serialize, serde::Deserialize)]
struct Line {
    #[serde(default)]
    id: u64,
    expires: u64,
    #[serde(default)]
    owner: u64,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    floor: bool,
}

/// The rows, the floors, and the file.
#[derive(Debug)]
pub struct Revocations {
    /// id → (expires, owner).
    rows: HashMap<u64, (u64, u64)>,
    /// owner → latest expiry revoked.
    floors: HashMap<u64, u64>,
    max_rows: usize,
    file: Option<PathBuf>,
    /// Lines in the file now.
    lines: usize,
}

impl Revocations {
    /// An empty table kept in memory only.
    pub fn in_memory(max_rows: usize) -> Revocations {
        Revocations {
            rows: HashMap::new(),
            floors: HashMap::new(),
            max_rows: max_rows.max(10),
            file: None,
            lines: 0,
        }
    }

    /// The table kept in `file`, read now (a missing file is an empty
    /// table), collapsing past `max_rows` rows. A line that does not parse
    /// is an error (a forgotten sign-out would let its session in again),
    /// except a last line cut short by a crash mid-append: that sign-out
    /// was never acknowledged, and the file is rewritten at the next one.
    pub fn load(file: PathBuf, max_rows: usize) -> Result<Revocations, TableError> {
        let mut r = Revocations::in_memory(max_rows);
        let text = table_file::read(&file)?.unwrap_or_default();
        let text = String::from_utf8(text).map_err(|e| table_file::damaged(&file, e))?;
        let legacy = text.trim_start().starts_with('[');
        let mut torn = false;
        let lines: Vec<Line> = if legacy {
            serde_json::from_str(&text).map_err(|e| table_file::damaged(&file, e))?
        } else {
            let mut lines = Vec::new();
            let all: Vec<&str> = text.split_inclusive('\n').collect();
            for (n, l) in all.iter().enumerate() {
                match serde_json::from_str(l) {
                    Ok(line) => lines.push(line),
                    Err(_) if l.trim().is_empty() => {}
                    Err(_) if n + 1 == all.len() && !l.ends_with('\n') => torn = true,
                    Err(e) => {
                        return Err(table_file::damaged(&file, format!("line {}: {e}", n + 1)))
                    }
                }
            }
            lines
        };
        // A file of the older format, or one with a torn last line, is
        // rewritten at the first sign-out (appending after a torn line
        // would glue the new line to it).
        r.lines = if legacy || torn {
            usize::MAX / 4
        } else {
            lines.len()
        };
        r.file = Some(file);
        for l in lines {
            if l.floor {
                let f = r.floors.entry(l.owner).or_insert(0);
                *f = (*f).max(l.expires);
            } else {
                r.rows.insert(l.id, (l.expires, l.owner));
            }
        }
        Ok(r)
    }

    /// Whether the session `id` of `owner`, expiring at `expires`, is
    /// signed out.
    pub fn is_revoked(&self, id: u64, owner: u64, expires: u64) -> bool {
        self.rows.contains_key(&id) || self.floors.get(&owner).is_some_and(|&f| expires <= f)
    }

    /// Sign out session `id` (expiring at `expires`, of `owner`) at `now`;
    /// kept in the file when `persist` (a sign-out made here: those of
    /// other nodes are read again from the bucket at start).
    pub fn insert(&mut self, id: u64, expires: u64, owner: u64, now: u64, persist: bool) {
        if expires <= now || self.is_revoked(id, owner, expires) {
            return;
        }
        let mut rewrite = false;
        if self.rows.len() >= self.max_rows {
            // Full: the expired go, then (so that the next tenth of the
            // table is room again, not one row) the largest owners'
            // rows collapse.
            self.rows.retain(|_, (e, _)| *e > now);
            self.floors.retain(|_, f| *f > now);
            if self.rows.len() > self.goal() {
                self.collapse();
            }
            rewrite = true;
        }
        self.rows.insert(id, (expires, owner));
        if self.file.is_none() {
            return;
        }
        if rewrite || self.lines > 2 * self.entries() + SLACK_LINES {
            self.compact();
        } else if persist {
            self.append(&Line {
                id,
                expires,
                owner,
                floor: false,
            });
        }
    }

    /// Rows and floors held.
    pub fn entries(&self) -> usize {
        self.rows.len() + self.floors.len()
    }

    /// Rows (floors apart).
    #[cfg(test)]
    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// Room for a tenth of the table: the owners with the most rows have
    /// them collapsed into their floor. Rows of no known owner are the
    /// only ones ever dropped (soonest expiry first), and only when no
    /// owner's rows are left to collapse.
    fn goal(&self) -> usize {
        self.max_rows - self.max_rows / 10
    }

    fn collapse(&mut self) {
        let goal = self.goal();
        let mut by_owner: HashMap<u64, (usize, u64)> = HashMap::new();
        for &(expires, owner) in self.rows.values() {
            if owner != 0 {
                let e = by_owner.entry(owner).or_insert((0, 0));
                e.0 += 1;
                e.1 = e.1.max(expires);
            }
        }
        let mut owners: Vec<(usize, u64, u64)> =
            by_owner.into_iter().map(|(o, (n, e))| (n, o, e)).collect();
        owners.sort_unstable_by(|a, b| b.cmp(a));
        let mut left = self.rows.len();
        let mut collapsed = std::collections::HashSet::new();
        for (n, owner, latest) in owners {
            if left <= goal {
                break;
            }
            let f = self.floors.entry(owner).or_insert(0);
            *f = (*f).max(latest);
            collapsed.insert(owner);
            left -= n;
        }
        self.rows.retain(|_, (_, o)| !collapsed.contains(o));
        if self.rows.len() > goal {
            let mut unowned: Vec<(u64, u64)> = self
                .rows
                .iter()
                .filter(|(_, (_, o))| *o == 0)
                .map(|(id, (e, _))| (*e, *id))
                .collect();
            unowned.sort_unstable();
            let excess = self.rows.len() - goal;
            for (_, id) in unowned.into_iter().take(excess) {
                self.rows.remove(&id);
            }
        }
    }

    fn append(&mut self, line: &Line) {
        let Some(file) = &self.file else {
            return;
        };
        let Ok(mut text) = serde_json::to_vec(line) else {
            return;
        };
        text.push(b'\n');
        match table_file::append(file, &text) {
            Ok(()) => self.lines += 1,
            Err(e) => {
                tracing::warn!(target: "wirespeed::signin", error = %e, file = %file.display(), "cannot save a sign-out")
            }
        }
    }

    /// Rewrite the file from the table (a temp file renamed over it).
    fn compact(&mut self) {
        let Some(file) = &self.file else {
            return;
        };
        let mut text = Vec::with_capacity(self.entries() * 64);
        let rows = self.rows.iter().map(|(&id, &(expires, owner))| Line {
            id,
            expires,
            owner,
            floor: false,
        });
        let floors = self.floors.iter().map(|(&owner, &expires)| Line {
            id: 0,
            expires,
            owner,
            floor: true,
        });
        for line in rows.chain(floors) {
            if serde_json::to_writer(&mut text, &line).is_ok() {
                text.push(b'\n');
            }
        }
        match table_file::replace(file, &text) {
            Ok(()) => self.lines = self.entries(),
            Err(e) => {
                tracing::warn!(target: "wirespeed::signin", error = %e, file = %file.display(), "cannot save the sign-out table")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn a_full_table_collapses_the_largest_owner_and_drops_nothing() {
        let mut r = Revocations::in_memory(100);
        let (alice, bob) = (owner_of("alice"), owner_of("bob"));
        // Bob signed out of one session; alice signs in and out in a loop.
        r.insert(1, 5_000, bob, 0, true);
        for i in 0..1_000u64 {
            r.insert(100 + i, 1_000 + i, alice, i, true);
            assert!(r.rows() <= 100 && r.floors.len() <= 2);
        }
        // Every one of alice's signed-out sessions stays out, bob's too.
        for i in 0..1_000u64 {
            assert!(r.is_revoked(100 + i, alice, 1_000 + i), "{i}");
        }
        assert!(r.is_revoked(1, bob, 5_000));
        // Alice's later sessions live; nobody else's session is touched.
        assert!(!r.is_revoked(9, alice, 2_000));
        assert!(!r.is_revoked(9, bob, 1_500));
        assert!(!r.is_revoked(9, owner_of("carol"), 1_000));
    }

    #[test]
    fn sign_outs_are_appended_and_a_restart_keeps_them() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sessions.json");
        let mut r = Revocations::load(file.clone(), 100_000).unwrap();
        let alice = owner_of("alice");
        r.insert(1, 1_000, alice, 0, true);
        let before = std::fs::read(&file).unwrap();
        for i in 2..50 {
            r.insert(i, 1_000, alice, 0, true);
            let now = std::fs::read(&file).unwrap();
            // Appended to, never rewritten: what was there is still first.
            assert!(now.starts_with(&before) && now.len() > before.len());
            assert_eq!(now.iter().filter(|&&b| b == b'\n').count() as u64, i);
        }
        // A row another node sent is not written here.
        r.insert(77, 1_000, alice, 0, false);
        assert_eq!(
            std::fs::read(&file)
                .unwrap()
                .iter()
                .filter(|&&b| b == b'\n')
                .count(),
            49
        );
        let again = Revocations::load(file.clone(), 100_000).unwrap();
        assert!((1..50).all(|i| again.is_revoked(i, alice, 1_000)));
        // A torn last line is skipped; the rest holds.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&file)
            .unwrap()
            .write_all(b"{\"id\":5")
            .unwrap();
        let mut torn = Revocations::load(file.clone(), 100_000).unwrap();
        assert_eq!(torn.rows(), 49);
        // The next sign-out rewrites the file rather than gluing its line
        // to the torn one.
        torn.insert(60, 1_000, alice, 0, true);
        let again = Revocations::load(file.clone(), 100_000).unwrap();
        assert!(again.is_revoked(60, alice, 1_000) && again.is_revoked(49, alice, 1_000));
        // A damaged line before the last is an error: its sign-out would be
        // forgotten and the session let in again.
        let text = std::fs::read_to_string(&file).unwrap();
        std::fs::write(&file, format!("{{\"id\":5\n{text}")).unwrap();
        let err = Revocations::load(file.clone(), 100_000).unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
    }

    #[test]
    fn collapsed_floors_are_kept_in_the_file_and_it_stays_small() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sessions.json");
        let mut r = Revocations::load(file.clone(), 1_000).unwrap();
        let alice = owner_of("alice");
        for i in 0..20_000u64 {
            r.insert(i + 1, 100_000 + i, alice, 0, true);
        }
        let lines = std::fs::read_to_string(&file).unwrap().lines().count();
        assert!(lines <= 2 * 1_000 + SLACK_LINES + 1, "{lines} lines");
        let again = Revocations::load(file, 1_000).unwrap();
        assert!((0..20_000u64).all(|i| again.is_revoked(i + 1, alice, 100_000 + i)));
        assert!(!again.is_revoked(0, alice, 200_000));
    }

    #[test]
    fn the_older_file_format_is_read_and_rewritten() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("sessions.json");
        std::fs::write(
            &file,
            r#"[{"id":5,"expires":1000},{"id":6,"expires":1000}]"#,
        )
        .unwrap();
        let mut r = Revocations::load(file.clone(), 1_000).unwrap();
        assert!(r.is_revoked(5, owner_of("x"), 1_000));
        r.insert(7, 1_000, owner_of("x"), 0, true);
        let text = std::fs::read_to_string(&file).unwrap();
        assert_eq!(text.lines().count(), 3, "{text}");
        let again = Revocations::load(file, 1_000).unwrap();
        assert!([5, 6, 7].iter().all(|&id| again.is_revoked(id, 1, 1_000)));
    }
}
