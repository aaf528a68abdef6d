//! The index alone, in release (bench/search.sh runs it): N names made
//! like bench/search_tree.py's, written in walk-sized transactions; the
//! first page (≤ 100) for random 4-letter fragments, p50/p99; the file's
//! size and this process's RSS; then TEXT_MB of 100 KiB documents' words
//! and word queries.
//!
//!   cargo run --release -p wirespeed-search --example index_bench -- N TEXT_MB DIR

use std::time::Instant;

use wirespeed_search::{Meta, NameQuery, Store, TextQuery};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn words(rng: &mut Rng) -> Vec<String> {
    (0..2000)
        .map(|_| {
            let len = 5 + rng.below(5);
            (0..len)
                .map(|_| (b'a' + rng.below(26) as u8) as char)
                .collect()
        })
        .collect()
}

fn pct(mut v: Vec<f64>, q: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((v.len() as f64 * q).ceil() as usize).clamp(1, v.len()) - 1]
}

fn rss_mib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kib| kib / 1024)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).map_or(Ok(1_000_000), |s| s.parse())?;
    let text_mb: usize = args.get(2).map_or(Ok(0), |s| s.parse())?;
    let dir = std::path::PathBuf::from(args.get(3).map_or("/tmp/index-bench", |s| s.as_str()));
    std::fs::create_dir_all(&dir)?;
    let mut rng = Rng(39);
    let words = words(&mut rng);

    let db = dir.join("names.db");
    let _ = std::fs::remove_file(&db);
    let store = Store::open_writer(&db)?;
    let t = Instant::now();
    store.begin()?;
    for i in 0..n {
        let d = i / 1000;
        let path = format!(
            "{}-{d:04}/{}-{}-{i:06}.txt",
            words[d % words.len()],
            words[rng.below(words.len())],
            words[rng.below(words.len())]
        );
        let m = Meta {
            dir: false,
            size: i as u64,
            mtime: Some(1_700_000_000),
        };
        store.upsert(&path, m, 1)?;
        if i % 20_000 == 19_999 {
            store.commit()?;
            store.begin()?;
        }
    }
    store.commit()?;
    let built = t.elapsed().as_secs_f64();
    drop(store);
    let size = std::fs::metadata(&db)?.len() / (1 << 20);
    let reader = Store::open_reader(&db)?;
    let mut ms = Vec::new();
    let mut found = 0;
    for _ in 0..400 {
        let w = &words[rng.below(words.len())];
        let at = rng.below(w.len() - 3);
        let q = NameQuery::parse(&w[at..at + 4]).ok_or("no query")?;
        let t = Instant::now();
        found += reader.names("", &q, 0, 100)?.len();
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "names\t{n}\tbuild_s\t{built:.1}\tsize_mib\t{size}\trss_mib\t{}",
        rss_mib()
    );
    println!(
        "names_query_ms\tp50\t{:.2}\tp99\t{:.2}\tmean_results\t{}",
        pct(ms.clone(), 0.5),
        pct(ms, 0.99),
        found / 400
    );
    if text_mb == 0 {
        return Ok(());
    }
    let db = dir.join("text.db");
    let _ = std::fs::remove_file(&db);
    let store = Store::open_writer(&db)?;
    let files = text_mb * 1024 / 100;
    store.begin()?;
    for f in 0..files {
        let m = Meta {
            dir: false,
            size: 100 * 1024,
            mtime: Some(1),
        };
        store.upsert(&format!("d{:03}/doc-{f:06}.txt", f / 1000), m, 1)?;
    }
    store.commit()?;
    let t = Instant::now();
    let mut body = String::with_capacity(110 * 1024);
    loop {
        let todo = store.untexted(32, u64::MAX)?;
        if todo.is_empty() {
            break;
        }
        store.begin()?;
        for (id, _) in todo {
            body.clear();
            while body.len() < 100 * 1024 {
                body.push_str(&words[rng.below(words.len())]);
                body.push(' ');
            }
            store.set_text(id, Some(&body))?;
        }
        store.commit()?;
    }
    let built = t.elapsed().as_secs_f64();
    drop(store);
    let size = std::fs::metadata(&db)?.len() / (1 << 20);
    let reader = Store::open_reader(&db)?;
    let mut ms = Vec::new();
    for _ in 0..200 {
        let q = TextQuery::parse(&words[rng.below(words.len())]).ok_or("no query")?;
        let t = Instant::now();
        reader.texts("", &q, 0, 100)?;
        ms.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    println!(
        "text_mb\t{text_mb}\tfiles\t{files}\tbuild_s\t{built:.1}\tsize_mib\t{size}\trss_mib\t{}",
        rss_mib()
    );
    println!(
        "text_query_ms\tp50\t{:.2}\tp99\t{:.2}",
        pct(ms.clone(), 0.5),
        pct(ms, 0.99)
    );
    Ok(())
}
