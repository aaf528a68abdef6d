//! Counting what happened: per-kind latency histograms (HdrHistogram) and
//! byte counts, errors by kind, and the summary printed as a table or JSON.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::workload::Kind;

/// Why one request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The TCP connection could not be opened.
    Connect,
    /// An answer with an unexpected status.
    Status(u16),
    /// No progress within the I/O timeout.
    Timeout,
    /// The connection ended inside a response.
    Truncated,
    /// The body arrived whole but this many bytes differ from the object.
    Corrupt(u64),
    /// An answer that breaks HTTP or does not fit the request (bad head,
    /// wrong Content-Range, a body longer than the object).
    Protocol,
    /// Any other socket error (reset, refused write).
    Io,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Connect => f.write_str("could not connect"),
            Failure::Status(c) => write!(f, "answered status {c}"),
            Failure::Timeout => f.write_str("timed out"),
            Failure::Truncated => f.write_str("the connection ended inside the response"),
            Failure::Corrupt(n) => write!(f, "{n} bytes differ from the object"),
            Failure::Protocol => {
                f.write_str("an answer that breaks HTTP or does not fit the request")
            }
            Failure::Io => f.write_str("connection error"),
        }
    }
}

/// Latencies are recorded in microseconds, up to an hour, 3 significant digits.
fn histogram() -> Histogram<u64> {
    // Constant, valid bounds: this cannot fail at run time.
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid histogram bounds")
}

#[derive(Debug, Clone)]
struct KindStats {
    ok: u64,
    failed: u64,
    bytes_up: u64,
    bytes_down: u64,
    verified: u64,
    latency: Histogram<u64>,
}

impl KindStats {
    fn new() -> KindStats {
        KindStats {
            ok: 0,
            failed: 0,
            bytes_up: 0,
            bytes_down: 0,
            verified: 0,
            latency: histogram(),
        }
    }
}

/// Error counts by kind; `corrupt_bytes` sums the differing bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Errors {
    pub connect: u64,
    pub timeout: u64,
    pub truncated: u64,
    pub corrupt_responses: u64,
    pub corrupt_bytes: u64,
    pub protocol: u64,
    pub io: u64,
    /// Unexpected statuses: code → count.
    pub status: BTreeMap<u16, u64>,
}

impl Errors {
    /// Failed requests, all kinds together.
    pub fn total(&self) -> u64 {
        self.connect
            + self.timeout
            + self.truncated
            + self.corrupt_responses
            + self.protocol
            + self.io
            + self.status.values().sum::<u64>()
    }

    fn add(&mut self, f: Failure) {
        match f {
            Failure::Connect => self.connect += 1,
            Failure::Status(c) => *self.status.entry(c).or_default() += 1,
            Failure::Timeout => self.timeout += 1,
            Failure::Truncated => self.truncated += 1,
            Failure::Corrupt(n) => {
                self.corrupt_responses += 1;
                self.corrupt_bytes += n;
            }
            Failure::Protocol => self.protocol += 1,
            Failure::Io => self.io += 1,
        }
    }

    fn merge(&mut self, o: &Errors) {
        self.connect += o.connect;
        self.timeout += o.timeout;
        self.truncated += o.truncated;
        self.corrupt_responses += o.corrupt_responses;
        self.corrupt_bytes += o.corrupt_bytes;
        self.protocol += o.protocol;
        self.io += o.io;
        for (c, n) in &o.status {
            *self.status.entry(*c).or_default() += n;
        }
    }
}

/// One request's outcome as the engine reports it.
#[derive(Debug, Clone, Copy)]
pub struct Done {
    pub kind: Kind,
    pub latency: Duration,
    /// Body bytes sent and received (framing and heads excluded).
    pub up: u64,
    pub down: u64,
    /// Received bytes compared against the generator.
    pub verified: u64,
    pub result: Result<(), Failure>,
}

/// What one connection (or all, merged) counted.
#[derive(Debug, Clone)]
pub struct Stats {
    kinds: [KindStats; 3],
    errors: Errors,
    cut: u64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            kinds: [KindStats::new(), KindStats::new(), KindStats::new()],
            errors: Errors::default(),
            cut: 0,
        }
    }
}

impl Stats {
    pub fn record(&mut self, d: Done) {
        let k = &mut self.kinds[d.kind.index()];
        k.bytes_up += d.up;
        k.bytes_down += d.down;
        k.verified += d.verified;
        match d.result {
            Ok(()) => {
                k.ok += 1;
                // Only successful requests have a meaningful latency.
                k.latency
                    .saturating_record(d.latency.as_micros().max(1) as u64);
            }
            Err(f) => {
                k.failed += 1;
                self.errors.add(f);
            }
        }
    }

    /// A request stopped at the end of a timed run: its bytes count (they
    /// moved within the time), the request does not.
    pub fn record_cut(&mut self, kind: Kind, up: u64, down: u64, verified: u64) {
        let k = &mut self.kinds[kind.index()];
        k.bytes_up += up;
        k.bytes_down += down;
        k.verified += verified;
        self.cut += 1;
    }

    pub fn merge(&mut self, o: &Stats) {
        self.cut += o.cut;
        for (a, b) in self.kinds.iter_mut().zip(&o.kinds) {
            a.ok += b.ok;
            a.failed += b.failed;
            a.bytes_up += b.bytes_up;
            a.bytes_down += b.bytes_down;
            a.verified += b.verified;
            // Same bounds everywhere, so adding cannot fail; a failure would
            // only lose latency samples, never counts.
            let _ = a.latency.add(&b.latency);
        }
        self.errors.merge(&o.errors);
    }

    pub fn errors(&self) -> &Errors {
        &self.errors
    }

    /// The summary of a run that took `elapsed`.
    pub fn summarize(&self, elapsed: Duration, run: RunInfo) -> Summary {
        let secs = elapsed.as_secs_f64().max(1e-9);
        let mut kinds = BTreeMap::new();
        let (mut up, mut down, mut requests) = (0u64, 0u64, 0u64);
        for kind in Kind::ALL {
            let k = &self.kinds[kind.index()];
            up += k.bytes_up;
            down += k.bytes_down;
            requests += k.ok + k.failed;
            if k.ok + k.failed == 0 {
                continue;
            }
            kinds.insert(
                kind.name().to_string(),
                KindSummary {
                    requests: k.ok + k.failed,
                    ok: k.ok,
                    failed: k.failed,
                    bytes_up: k.bytes_up,
                    bytes_down: k.bytes_down,
                    verified_bytes: k.verified,
                    requests_per_s: (k.ok + k.failed) as f64 / secs,
                    latency_ms: Latency::of(&k.latency),
                },
            );
        }
        Summary {
            run,
            seconds: secs,
            requests,
            requests_per_s: requests as f64 / secs,
            bytes_up: up,
            bytes_down: down,
            mb_per_s_up: up as f64 / 1e6 / secs,
            mb_per_s_down: down as f64 / 1e6 / secs,
            kinds,
            cut_at_end: self.cut,
            errors: self.errors.clone(),
            error_total: self.errors.total(),
            peak_rss_kib: peak_rss_kib(),
        }
    }
}

/// Latency percentiles in milliseconds (of successful requests).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

impl Latency {
    fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        Latency {
            p50: ms(h.value_at_quantile(0.5)),
            p90: ms(h.value_at_quantile(0.9)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
            mean: h.mean() / 1000.0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KindSummary {
    pub requests: u64,
    pub ok: u64,
    pub failed: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
    /// Bytes compared against the generator (equals `bytes_down` for reads
    /// whose answers had the expected status).
    pub verified_bytes: u64,
    pub requests_per_s: f64,
    pub latency_ms: Latency,
}

/// How the run was set up, echoed in the summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    pub url: String,
    pub connections: usize,
    pub mix: String,
    pub size_min: u64,
    pub size_max: u64,
    pub objects: u64,
    pub seed: u64,
    /// The untimed setup PUTs: objects written and bytes sent.
    pub setup_objects: u64,
    pub setup_bytes: u64,
    pub setup_seconds: f64,
}

/// The result of a run: what `--json` prints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub run: RunInfo,
    pub seconds: f64,
    pub requests: u64,
    pub requests_per_s: f64,
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub mb_per_s_up: f64,
    pub mb_per_s_down: f64,
    /// By kind (`get`, `put`, `range`), only kinds that ran.
    pub kinds: BTreeMap<String, KindSummary>,
    /// Requests under way when a timed run ended, stopped there: their bytes
    /// are in the byte counts, they are not in `requests`.
    pub cut_at_end: u64,
    pub errors: Errors,
    pub error_total: u64,
    /// The load generator's own peak resident memory (VmHWM), if known.
    pub peak_rss_kib: Option<u64>,
}

impl Summary {
    /// Whether the run saw no error and no corrupt byte.
    pub fn clean(&self) -> bool {
        self.error_total == 0 && self.errors.corrupt_bytes == 0
    }

    /// The human-readable report.
    pub fn text(&self) -> String {
        let r = &self.run;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "bench load {}: {} connections, mix {}, sizes {}-{} bytes, {} objects, seed {}",
            r.url, r.connections, r.mix, r.size_min, r.size_max, r.objects, r.seed
        );
        if r.setup_objects > 0 {
            let _ = writeln!(
                s,
                "setup (untimed): {} objects PUT, {:.1} MB in {:.1} s",
                r.setup_objects,
                r.setup_bytes as f64 / 1e6,
                r.setup_seconds
            );
        }
        let _ = writeln!(
            s,
            "{:.1} s, {} requests, {:.1} req/s, {:.1} MB/s up, {:.1} MB/s down (MB = 10^6 bytes); {} stopped at the end\n",
            self.seconds, self.requests, self.requests_per_s, self.mb_per_s_up, self.mb_per_s_down, self.cut_at_end
        );
        let _ = writeln!(
            s,
            "{:<6} {:>9} {:>7} {:>8} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}",
            "kind",
            "requests",
            "failed",
            "req/s",
            "MB up",
            "MB down",
            "p50 ms",
            "p90 ms",
            "p99 ms",
            "p99.9 ms",
            "max ms"
        );
        for (name, k) in &self.kinds {
            let l = &k.latency_ms;
            let _ = writeln!(
                s,
                "{:<6} {:>9} {:>7} {:>8.1} {:>10.1} {:>10.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1}",
                name,
                k.requests,
                k.failed,
                k.requests_per_s,
                k.bytes_up as f64 / 1e6,
                k.bytes_down as f64 / 1e6,
                l.p50,
                l.p90,
                l.p99,
                l.p999,
                l.max
            );
        }
        let e = &self.errors;
        let status = if e.status.is_empty() {
            "none".to_string()
        } else {
            e.status
                .iter()
                .map(|(c, n)| format!("{c}×{n}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let _ = writeln!(
            s,
            "\nerrors: {} (connect {}, timeout {}, truncated {}, corrupt {} responses / {} bytes, protocol {}, io {}, status: {})",
            self.error_total, e.connect, e.timeout, e.truncated, e.corrupt_responses, e.corrupt_bytes, e.protocol, e.io, status
        );
        if let Some(kib) = self.peak_rss_kib {
            let _ = writeln!(s, "load generator peak RSS: {:.1} MiB", kib as f64 / 1024.0);
        }
        s
    }
}

/// This process's peak resident set (VmHWM in /proc/self/status), in KiB.
pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(kind: Kind, ms: u64, up: u64, down: u64, result: Result<(), Failure>) -> Done {
        Done {
            kind,
            latency: Duration::from_millis(ms),
            up,
            down,
            verified: down,
            result,
        }
    }

    fn info() -> RunInfo {
        RunInfo {
            url: "http://x/".into(),
            connections: 2,
            mix: "get=1".into(),
            size_min: 1,
            size_max: 1,
            objects: 1,
            seed: 0,
            setup_objects: 0,
            setup_bytes: 0,
            setup_seconds: 0.0,
        }
    }

    #[test]
    fn percentiles_counts_and_rates_add_up() {
        let (mut a, mut b) = (Stats::default(), Stats::default());
        for ms in 1..=100 {
            let s = if ms % 2 == 0 { &mut a } else { &mut b };
            s.record(done(Kind::Get, ms, 0, 1_000_000, Ok(())));
        }
        a.record(done(Kind::Put, 5, 2_000_000, 0, Ok(())));
        b.record(done(Kind::Put, 0, 0, 0, Err(Failure::Status(507))));
        b.record(done(Kind::Get, 0, 0, 10, Err(Failure::Corrupt(3))));
        b.record(done(Kind::Get, 0, 0, 0, Err(Failure::Corrupt(2))));
        a.record(done(Kind::Range, 0, 0, 0, Err(Failure::Truncated)));
        a.merge(&b);
        let s = a.summarize(Duration::from_secs(2), info());
        let get = &s.kinds["get"];
        assert_eq!((get.requests, get.ok, get.failed), (102, 100, 2));
        assert_eq!(get.bytes_down, 100_000_010);
        assert!(
            (get.latency_ms.p50 - 50.0).abs() < 0.1,
            "{:?}",
            get.latency_ms
        );
        assert!((get.latency_ms.p99 - 99.0).abs() < 0.1);
        assert!((get.latency_ms.max - 100.0).abs() < 0.1);
        assert!((get.latency_ms.mean - 50.5).abs() < 0.1);
        assert_eq!(s.kinds["put"].bytes_up, 2_000_000);
        assert_eq!(s.requests, 102 + 2 + 1);
        assert!((s.requests_per_s - 52.5).abs() < 1e-9);
        assert!((s.mb_per_s_down - 50.000005).abs() < 1e-6);
        assert!((s.mb_per_s_up - 1.0).abs() < 1e-9);
        assert_eq!(s.errors.corrupt_responses, 2);
        assert_eq!(s.errors.corrupt_bytes, 5);
        assert_eq!(s.errors.status.get(&507), Some(&1));
        assert_eq!(s.errors.truncated, 1);
        assert_eq!(s.error_total, 4);
        assert!(!s.clean());
        let back: Summary = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
        assert_eq!(back, s);
        let text = s.text();
        assert!(text.contains("corrupt 2 responses / 5 bytes"), "{text}");
        assert!(text.contains("507×1"), "{text}");
    }

    #[test]
    fn an_empty_run_is_clean_and_has_no_kinds() {
        let s = Stats::default().summarize(Duration::ZERO, info());
        assert!(s.clean());
        assert!(s.kinds.is_empty());
        assert_eq!(s.requests, 0);
    }

    #[test]
    fn reads_own_peak_rss() {
        assert!(peak_rss_kib().unwrap_or(0) > 0);
    }
}
