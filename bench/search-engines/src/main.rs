//! SQLite FTS5 (the server's own store, `wirespeed-search`) against
//! tantivy on the same text corpus, one engine per process so each RSS is
//! its own:
//!
//!   search-engines fts5|tantivy CORPUS_DIR INDEX_DIR QUERIES_FILE
//!
//! Indexes every file below CORPUS_DIR on one thread, the way the
//! server's indexer does (files read one at a time, committed in batches),
//! then runs each line of QUERIES_FILE as "every word, the last one a
//! prefix" (what `?q=…&content=1` asks), first page of 100, twice (the
//! second pass is timed). Prints one tab-separated line.

use std::path::{Path, PathBuf};
use std::time::Instant;

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("corpus folder")
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn status(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib / 1024)
}

fn du(dir: &Path) -> u64 {
    let mut n = 0;
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let m = e.metadata().unwrap();
        n += if m.is_dir() { du(&e.path()) } else { m.len() };
    }
    n
}

fn pct(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1]
}

trait Engine {
    fn add(&mut self, id: u64, path: &str, body: &str);
    fn commit(&mut self);
    fn finish(&mut self);
    /// Hits on the first page (at most 100).
    fn query(&mut self, q: &str) -> usize;
}

struct Fts5 {
    store: wirespeed_search::Store,
    db: PathBuf,
    reader: Option<wirespeed_search::Store>,
    open: bool,
}

impl Engine for Fts5 {
    fn add(&mut self, _id: u64, path: &str, body: &str) {
        if !self.open {
            self.store.begin().unwrap();
            self.open = true;
        }
        let m = wirespeed_search::Meta {
            dir: false,
            size: body.len() as u64,
            mtime: Some(1),
        };
        self.store.upsert(path, m, 1).unwrap();
        // The row's id, as the indexer's text pass gets it.
        let (id, _) = self.store.untexted(1, u64::MAX).unwrap()[0].clone();
        self.store.set_text(id, Some(body)).unwrap();
    }
    fn commit(&mut self) {
        if self.open {
            self.store.commit().unwrap();
            self.open = false;
        }
    }
    fn finish(&mut self) {
        self.commit();
        self.reader = Some(wirespeed_search::Store::open_reader(&self.db).unwrap());
    }
    fn query(&mut self, q: &str) -> usize {
        let q = wirespeed_search::TextQuery::parse(q).unwrap();
        self.reader
            .as_ref()
            .unwrap()
            .texts("", &q, 0, 100)
            .unwrap()
            .len()
    }
}

struct Tantivy {
    index: tantivy::Index,
    writer: Option<tantivy::IndexWriter>,
    reader: Option<tantivy::IndexReader>,
    path: tantivy::schema::Field,
    body: tantivy::schema::Field,
}

impl Tantivy {
    fn new(dir: &Path) -> Tantivy {
        use tantivy::schema::*;
        let mut sb = Schema::builder();
        let path = sb.add_text_field("path", STRING | STORED);
        // Words only, positions not kept (the server asks for words, not
        // phrases), nothing stored: like FTS5's contentless table.
        let opts = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer("default")
                .set_index_option(IndexRecordOption::WithFreqs),
        );
        let body = sb.add_text_field("body", opts);
        let index = tantivy::Index::create_in_dir(dir, sb.build()).unwrap();
        // One indexing thread (the server's indexer is one thread), 64 MB.
        let writer = index.writer_with_num_threads(1, 64 << 20).unwrap();
        Tantivy {
            index,
            writer: Some(writer),
            reader: None,
            path,
            body,
        }
    }
}

impl Engine for Tantivy {
    fn add(&mut self, _id: u64, path: &str, body: &str) {
        let mut doc = tantivy::TantivyDocument::default();
        doc.add_text(self.path, path);
        doc.add_text(self.body, body);
        self.writer.as_mut().unwrap().add_document(doc).unwrap();
    }
    fn commit(&mut self) {}
    fn finish(&mut self) {
        let mut w = self.writer.take().unwrap();
        w.commit().unwrap();
        w.wait_merging_threads().unwrap();
        self.reader = Some(self.index.reader().unwrap());
    }
    fn query(&mut self, q: &str) -> usize {
        use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
        use tantivy::schema::IndexRecordOption;
        let words: Vec<String> = q
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| w.to_lowercase())
            .collect();
        let (last, rest) = words.split_last().unwrap();
        let mut parts: Vec<(Occur, Box<dyn Query>)> = rest
            .iter()
            .map(|w| {
                let t = tantivy::Term::from_field_text(self.body, w);
                (
                    Occur::Must,
                    Box::new(TermQuery::new(t, IndexRecordOption::Basic)) as Box<dyn Query>,
                )
            })
            .collect();
        // The last word as a prefix, as FTS5's `"word"*`.
        let t = tantivy::Term::from_field_text(self.body, last);
        parts.push((Occur::Must, Box::new(PrefixQuery::new(t))));
        let searcher = self.reader.as_ref().unwrap().searcher();
        let top = searcher
            .search(
                &BooleanQuery::new(parts),
                &tantivy::collector::TopDocs::with_limit(100),
            )
            .unwrap();
        // Each hit's path, as a result page needs it.
        for (_, addr) in &top {
            let _: tantivy::TantivyDocument = searcher.doc(*addr).unwrap();
        }
        top.len()
    }
}

/// A one-term prefix as a query: the terms of the field that start with
/// the word, any of them (tantivy's `PhrasePrefixQuery` wants two or more
/// terms; a regex query on the escaped word is its single-term prefix).
struct PrefixQuery;
impl PrefixQuery {
    #[allow(clippy::new_ret_no_self)]
    fn new(t: tantivy::Term) -> tantivy::query::RegexQuery {
        let word = t.value().as_str().unwrap().to_string();
        let escaped: String = word
            .chars()
            .flat_map(|c| {
                let special = !c.is_alphanumeric();
                special.then_some('\\').into_iter().chain(std::iter::once(c))
            })
            .collect();
        tantivy::query::RegexQuery::from_pattern(&format!("{escaped}.*"), t.field()).unwrap()
    }
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (engine, corpus, index, queries) = (&a[1], Path::new(&a[2]), Path::new(&a[3]), &a[4]);
    let _ = std::fs::remove_dir_all(index);
    std::fs::create_dir_all(index).unwrap();
    let mut e: Box<dyn Engine> = match engine.as_str() {
        "fts5" => {
            let db = index.join("text.db");
            Box::new(Fts5 {
                store: wirespeed_search::Store::open_writer(&db).unwrap(),
                db,
                reader: None,
                open: false,
            })
        }
        "tantivy" => Box::new(Tantivy::new(index)),
        other => panic!("fts5 or tantivy, not {other}"),
    };
    let mut list = Vec::new();
    files(corpus, &mut list);
    let t = Instant::now();
    let mut bytes = 0u64;
    for (i, p) in list.iter().enumerate() {
        let body = std::fs::read_to_string(p).unwrap();
        bytes += body.len() as u64;
        let rel = p.strip_prefix(corpus).unwrap().to_string_lossy();
        e.add(i as u64, &rel, &body);
        // The server's text pass commits every 32 files.
        if i % 32 == 31 {
            e.commit();
        }
    }
    e.finish();
    let built = t.elapsed().as_secs_f64();
    let size = du(index) >> 20;
    let hwm_index = status("VmHWM:");
    let qs: Vec<String> = std::fs::read_to_string(queries)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    for q in &qs {
        e.query(q);
    }
    let mut ms = Vec::new();
    let mut hits = 0;
    for q in &qs {
        let t = Instant::now();
        hits += e.query(q);
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "{engine}\tfiles\t{}\tmib\t{}\tindex_s\t{built:.0}\tsize_mib\t{size}\tpeak_rss_indexing_mib\t{hwm_index}\trss_after_queries_mib\t{}\tquery_ms_p50\t{:.2}\tp99\t{:.2}\tmean_hits\t{}",
        list.len(),
        bytes >> 20,
        status("VmRSS:"),
        pct(&mut ms, 0.5),
        pct(&mut ms, 0.99),
        hits / qs.len().max(1)
    );
}
