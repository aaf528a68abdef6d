//! The SQLite tables: one row per name, an FTS5 trigram index over names
//! (external content: the names are stored once), and a contentless FTS5
//! index over the words of text-like files (the text is not stored).

use std::path::Path;

use rusqlite::types::Value;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};

use crate::query::{below_range, NameQuery, TextQuery};
use crate::Result;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS entries(
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    dir INTEGER NOT NULL,
    size INTEGER NOT NULL,
    mtime INTEGER,
    seen INTEGER NOT NULL DEFAULT 0,
    texted INTEGER NOT NULL DEFAULT 0
);
CREATE VIRTUAL TABLE IF NOT EXISTS names USING fts5(
    name, content='entries', content_rowid='id', tokenize='trigram'
);
CREATE VIRTUAL TABLE IF NOT EXISTS texts USING fts5(
    body, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS entries_ai AFTER INSERT ON entries BEGIN
    INSERT INTO names(rowid, name) VALUES (new.id, new.name);
END;
CREATE TRIGGER IF NOT EXISTS entries_ad AFTER DELETE ON entries BEGIN
    INSERT INTO names(names, rowid, name) VALUES ('delete', old.id, old.name);
    DELETE FROM texts WHERE rowid = old.id;
END;
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS entries_untexted ON entries(id) WHERE texted = 0 AND dir = 0;
";

/// `entries.texted`: the file's words are not read yet (0), read (1), or
/// the file is over the size limit in force (2: read again if it rises).
const TOO_BIG: i64 = 2;

/// SQLite's page cache per connection, in KiB (negative: KiB, not pages):
/// what bounds the index's memory, whatever the tree's size.
const CACHE_KIB: i64 = 8 * 1024;

/// One name the index holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hit {
    /// The continuation: results come in increasing `id`.
    pub id: i64,
    /// Below the served root, `/`-separated, no leading or trailing `/`.
    pub path: String,
    pub name: String,
    pub dir: bool,
    pub size: u64,
    /// Seconds since the epoch.
    pub modified: Option<i64>,
}

/// What a name holds now, as the indexer stats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub dir: bool,
    pub size: u64,
    pub mtime: Option<i64>,
}

/// One connection to the index file.
pub struct Store {
    conn: Connection,
}

impl Store {
    /// The indexer's connection: creates the tables.
    pub fn open_writer(file: &Path) -> Result<Store> {
        let conn = Connection::open(file)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "cache_size", -CACHE_KIB)?;
        conn.execute_batch(SCHEMA)?;
        Ok(Store { conn })
    }

    /// A reader's connection (the writer created the tables).
    pub fn open_reader(file: &Path) -> Result<Store> {
        let flags = OpenFlags::SQLITE_OPEN_READ_ONLY
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_URI;
        let conn = Connection::open_with_flags(file, flags)?;
        conn.pragma_update(None, "cache_size", -CACHE_KIB)?;
        Ok(Store { conn })
    }

    pub fn begin(&self) -> Result<()> {
        self.conn.execute_batch("BEGIN")?;
        Ok(())
    }

    pub fn commit(&self) -> Result<()> {
        self.conn.execute_batch("COMMIT")?;
        Ok(())
    }

    pub fn meta(&self, key: &str) -> Result<Option<i64>> {
        let v = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?;
        Ok(v)
    }

    pub fn set_meta(&self, key: &str, value: i64) -> Result<()> {
        self.conn.execute(
            "INSERT INTO meta(key, value) VALUES (?1, ?2)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            params![key, value],
        )?;
        Ok(())
    }

    /// Records `path` as holding `m`, seen in walk `seen`. A file whose
    /// size or time changed loses its indexed words (the text pass reads
    /// it again). Whether the row is new or changed.
    pub fn upsert(&self, path: &str, m: Meta, seen: i64) -> Result<bool> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let size = i64::try_from(m.size).unwrap_or(i64::MAX);
        let old: Option<(i64, bool, i64, Option<i64>)> = self
            .conn
            .prepare_cached("SELECT id, dir, size, mtime FROM entries WHERE path = ?1")?
            .query_row([path], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .optional()?;
        match old {
            Some((id, dir, s, t)) if dir == m.dir && s == size && t == m.mtime => {
                self.conn
                    .prepare_cached("UPDATE entries SET seen = ?2 WHERE id = ?1")?
                    .execute(params![id, seen])?;
                Ok(false)
            }
            Some((id, ..)) => {
                self.conn
                    .prepare_cached(
                        "UPDATE entries SET dir = ?2, size = ?3, mtime = ?4, seen = ?5, texted = 0
                         WHERE id = ?1",
                    )?
                    .execute(params![id, m.dir, size, m.mtime, seen])?;
                self.conn
                    .prepare_cached("DELETE FROM texts WHERE rowid = ?1")?
                    .execute([id])?;
                Ok(true)
            }
            None => {
                self.conn
                    .prepare_cached(
                        "INSERT INTO entries(path, name, dir, size, mtime, seen)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    )?
                    .execute(params![path, name, m.dir, size, m.mtime, seen])?;
                Ok(true)
            }
        }
    }

    /// Forgets `path` and everything below it (`""`: everything).
    pub fn remove_tree(&self, path: &str) -> Result<usize> {
        let n = match below_range(path) {
            None => self.conn.execute("DELETE FROM entries", [])?,
            Some((lo, hi)) => self
                .conn
                .prepare_cached(
                    "DELETE FROM entries WHERE path = ?1 OR (path >= ?2 AND path < ?3)",
                )?
                .execute(params![path.trim_matches('/'), lo, hi])?,
        };
        Ok(n)
    }

    /// Forgets the rows below `path` (`""`: all) that walk `seen` did not
    /// reach: what a completed walk found gone.
    pub fn remove_unseen(&self, path: &str, seen: i64) -> Result<usize> {
        let n = match below_range(path) {
            None => self
                .conn
                .execute("DELETE FROM entries WHERE seen < ?1", [seen])?,
            Some((lo, hi)) => self.conn.execute(
                "DELETE FROM entries WHERE path >= ?1 AND path < ?2 AND seen < ?3",
                params![lo, hi, seen],
            )?,
        };
        Ok(n)
    }

    /// Up to `limit` files whose words are not indexed yet and that are
    /// at most `max_size` bytes. Each call reads the partial index of
    /// unread files from its start, so files done leave it: the files over
    /// `max_size` met on the way are marked so (a scan of the table from
    /// its first row made a text pass over a million names quadratic).
    pub fn untexted(&self, limit: usize, max_size: u64) -> Result<Vec<(i64, String)>> {
        let max = i64::try_from(max_size).unwrap_or(i64::MAX);
        loop {
            let rows: Vec<(i64, String, i64)> = self
                .conn
                .prepare_cached(
                    "SELECT id, path, size FROM entries WHERE texted = 0 AND dir = 0
                     ORDER BY id LIMIT ?1",
                )?
                .query_map([limit as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
                .collect::<std::result::Result<_, _>>()?;
            let last = rows.len() < limit;
            let mut fit = Vec::with_capacity(rows.len());
            for (id, path, size) in rows {
                if size <= max {
                    fit.push((id, path));
                } else {
                    self.conn
                        .prepare_cached("UPDATE entries SET texted = ?2 WHERE id = ?1")?
                        .execute(params![id, TOO_BIG])?;
                }
            }
            if !fit.is_empty() || last {
                return Ok(fit);
            }
        }
    }

    /// The size limit in force is `max_size`: if it changed since the last
    /// run, the files marked over the old one are looked at again.
    pub fn set_max_text(&self, max_size: u64) -> Result<()> {
        let max = i64::try_from(max_size).unwrap_or(i64::MAX);
        if self.meta("max_text")? != Some(max) {
            self.conn
                .execute("UPDATE entries SET texted = 0 WHERE texted = ?1", [TOO_BIG])?;
            self.set_meta("max_text", max)?;
        }
        Ok(())
    }

    /// Marks file `id` as done: with `body` its words are indexed.
    pub fn set_text(&self, id: i64, body: Option<&str>) -> Result<()> {
        self.conn
            .prepare_cached("DELETE FROM texts WHERE rowid = ?1")?
            .execute([id])?;
        if let Some(body) = body {
            self.conn
                .prepare_cached("INSERT INTO texts(rowid, body) VALUES (?1, ?2)")?
                .execute(params![id, body])?;
        }
        self.conn
            .prepare_cached("UPDATE entries SET texted = 1 WHERE id = ?1")?
            .execute([id])?;
        Ok(())
    }

    /// Up to `limit` names below `below` matching `q`, after `after`.
    pub fn names(&self, below: &str, q: &NameQuery, after: i64, limit: usize) -> Result<Vec<Hit>> {
        let (sql, args) = names_sql(below, q, after, limit);
        self.run(&sql, args)
    }

    /// Up to `limit` files below `below` whose words match `q`, after `after`.
    pub fn texts(&self, below: &str, q: &TextQuery, after: i64, limit: usize) -> Result<Vec<Hit>> {
        let (sql, args) = texts_sql(below, q, after, limit);
        self.run(&sql, args)
    }

    fn run(&self, sql: &str, args: Vec<Value>) -> Result<Vec<Hit>> {
        let mut st = self.conn.prepare_cached(sql)?;
        let rows = st.query_map(rusqlite::params_from_iter(args), |r| {
            Ok(Hit {
                id: r.get(0)?,
                path: r.get(1)?,
                name: r.get(2)?,
                dir: r.get(3)?,
                size: u64::try_from(r.get::<_, i64>(4)?).unwrap_or(0),
                modified: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<std::result::Result<_, _>>()?)
    }

    /// How many names the index holds.
    pub fn count(&self) -> Result<u64> {
        let n: i64 = self
            .conn
            .query_row("SELECT count(*) FROM entries", [], |r| r.get(0))?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}

fn names_sql(below: &str, q: &NameQuery, after: i64, limit: usize) -> (String, Vec<Value>) {
    let mut sql = String::from("SELECT e.id, e.path, e.name, e.dir, e.size, e.mtime FROM ");
    let mut args: Vec<Value> = Vec::new();
    let order = match &q.fts {
        Some(m) => {
            sql.push_str(
                "names JOIN entries e ON e.id = names.rowid \
                 WHERE names MATCH ? AND names.rowid > ?",
            );
            args.push(m.clone().into());
            "names.rowid"
        }
        None => {
            sql.push_str("entries e WHERE e.id > ?");
            "e.id"
        }
    };
    args.push(after.into());
    for like in &q.like {
        sql.push_str(" AND e.name LIKE ? ESCAPE '\\'");
        args.push(like.clone().into());
    }
    page_sql(sql, args, below, limit, order)
}

fn texts_sql(below: &str, q: &TextQuery, after: i64, limit: usize) -> (String, Vec<Value>) {
    let sql = String::from(
        "SELECT e.id, e.path, e.name, e.dir, e.size, e.mtime FROM texts \
         JOIN entries e ON e.id = texts.rowid WHERE texts MATCH ? AND texts.rowid > ?",
    );
    let args = vec![q.fts.clone().into(), after.into()];
    page_sql(sql, args, below, limit, "texts.rowid")
}

/// The folder's range, the order and the page's bound.
fn page_sql(
    mut sql: String,
    mut args: Vec<Value>,
    below: &str,
    limit: usize,
    order: &str,
) -> (String, Vec<Value>) {
    if let Some((lo, hi)) = below_range(below) {
        sql.push_str(" AND e.path >= ? AND e.path < ?");
        args.push(lo.into());
        args.push(hi.into());
    }
    // Ordered by the FTS5 table's own rowid (the same number as `e.id`):
    // FTS5 then hands its matches out in that order and the LIMIT stops
    // it early. `ORDER BY e.id` made SQLite collect and sort every match
    // first (4 s for a fragment in every name of a million, 50 ms so).
    sql.push_str(" ORDER BY ");
    sql.push_str(order);
    sql.push_str(" LIMIT ?");
    args.push((limit as i64).into());
    (sql, args)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(size: u64) -> Meta {
        Meta {
            dir: false,
            size,
            mtime: Some(1),
        }
    }

    #[test]
    fn names_below_a_folder_by_fragment_with_continuation() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open_writer(&dir.path().join("i.db")).unwrap();
        for p in [
            "a/report-1.txt",
            "a/b/report-2.txt",
            "ab/report-3.txt",
            "a/other",
        ] {
            s.upsert(p, file(1), 1).unwrap();
        }
        let q = NameQuery::parse("PORT").unwrap();
        let all: Vec<String> = s
            .names("", &q, 0, 10)
            .unwrap()
            .into_iter()
            .map(|h| h.path)
            .collect();
        assert_eq!(
            all,
            ["a/report-1.txt", "a/b/report-2.txt", "ab/report-3.txt"]
        );
        let below = s.names("a", &q, 0, 1).unwrap();
        assert_eq!(below[0].path, "a/report-1.txt");
        let next = s.names("a", &q, below[0].id, 10).unwrap();
        assert_eq!(next.len(), 1);
        assert_eq!(next[0].path, "a/b/report-2.txt");
        // Short fragments scan.
        let short = NameQuery::parse("-2").unwrap();
        assert_eq!(
            s.names("", &short, 0, 10).unwrap()[0].path,
            "a/b/report-2.txt"
        );
        // A subtree removed, its names gone.
        s.remove_tree("a").unwrap();
        let left: Vec<String> = s
            .names("", &q, 0, 10)
            .unwrap()
            .into_iter()
            .map(|h| h.path)
            .collect();
        assert_eq!(left, ["ab/report-3.txt"]);
    }

    #[test]
    fn words_of_files_and_their_replacement() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open_writer(&dir.path().join("i.db")).unwrap();
        s.upsert("n.md", file(5), 1).unwrap();
        let (id, _) = s.untexted(10, 100).unwrap()[0].clone();
        s.set_text(id, Some("the quick brown fox")).unwrap();
        assert!(s.untexted(10, 100).unwrap().is_empty());
        let q = TextQuery::parse("quick bro").unwrap();
        assert_eq!(s.texts("", &q, 0, 10).unwrap().len(), 1);
        // Replaced (size changed): its words are forgotten until read again.
        assert!(s.upsert("n.md", file(6), 2).unwrap());
        assert!(s.texts("", &q, 0, 10).unwrap().is_empty());
        assert_eq!(s.untexted(10, 100).unwrap().len(), 1);
        // Unseen by walk 3: gone, words and all.
        s.remove_unseen("", 3).unwrap();
        assert_eq!(s.count().unwrap(), 0);
    }

    /// A page never sorts every match: SQLite's plan reads the FTS5
    /// index in rowid order and stops at the LIMIT (no temporary B-tree),
    /// for names and words, at the root and below a folder.
    #[test]
    fn pages_stop_at_the_limit_without_sorting_every_match() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open_writer(&dir.path().join("i.db")).unwrap();
        let name = NameQuery::parse("report x").unwrap();
        let words = TextQuery::parse("quick bro").unwrap();
        for below in ["", "a/b"] {
            for (sql, args) in [
                names_sql(below, &name, 0, 100),
                texts_sql(below, &words, 0, 100),
            ] {
                let mut st = s
                    .conn
                    .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                    .unwrap();
                let plan: Vec<String> = st
                    .query_map(rusqlite::params_from_iter(args), |r| r.get(3))
                    .unwrap()
                    .collect::<std::result::Result<_, _>>()
                    .unwrap();
                assert!(
                    !plan.iter().any(|step| step.contains("TEMP B-TREE")),
                    "{sql}: {plan:?}"
                );
            }
        }
    }

    /// The text pass's question is answered from the partial index of
    /// unread files, never a scan of every row; files over the limit leave
    /// it and come back when the limit rises.
    #[test]
    fn unread_files_come_from_their_own_index() {
        let dir = tempfile::tempdir().unwrap();
        let s = Store::open_writer(&dir.path().join("i.db")).unwrap();
        let plan: Vec<String> = s
            .conn
            .prepare(
                "EXPLAIN QUERY PLAN SELECT id, path, size FROM entries \
                 WHERE texted = 0 AND dir = 0 ORDER BY id LIMIT 32",
            )
            .unwrap()
            .query_map([], |r| r.get(3))
            .unwrap()
            .collect::<std::result::Result<_, _>>()
            .unwrap();
        assert!(
            plan.iter().any(|p| p.contains("entries_untexted")),
            "{plan:?}"
        );
        s.set_max_text(10).unwrap();
        for i in 0..5 {
            s.upsert(&format!("big-{i}.txt"), file(100), 1).unwrap();
        }
        s.upsert("small.txt", file(5), 1).unwrap();
        let todo = s.untexted(2, 10).unwrap();
        assert_eq!(todo.len(), 1);
        assert_eq!(todo[0].1, "small.txt");
        s.set_text(todo[0].0, None).unwrap();
        assert!(s.untexted(2, 10).unwrap().is_empty());
        // A higher limit: the big ones are read after all.
        s.set_max_text(1000).unwrap();
        assert_eq!(s.untexted(10, 1000).unwrap().len(), 5);
    }
}
