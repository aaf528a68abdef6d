//! What an operator sees: Prometheus metrics (`GET /-/metrics`) and one
//! access-log line per request (`access_log`, target `wirespeed::access`).
//!
//! [`Metrics`] implements the server's [`Observer`]: the server reports
//! connections, finished requests, flush storms and timeouts; the file
//! routes add the request class, uploads in progress and digest mismatches.
//! Every count is a relaxed atomic in a fixed array indexed by enums, so the
//! request path takes no lock and allocates nothing; prometheus-client's
//! `Histogram` takes a write lock per observation, hence the atomic one here,
//! encoded through the crate's own encoder at scrape time (a [`Collector`]).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeLabelSet, EncodeLabelValue, EncodeMetric, LabelValueEncoder,
    NoLabelSet,
};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::exemplar::Exemplar;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use wirespeed_net::{Completed, Error, Exchange, Handler, Observer, Response, Timeout};

use crate::access_log::{AccessLog, Entry};
use crate::policy::origin::AllowedHosts;

/// The kind of work a request asked for (the `class` label).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RouteClass {
    /// GET/HEAD of a file.
    Files,
    /// PUT, or a multipart/form-data POST.
    Upload,
    Delete,
    /// GET/HEAD of a folder listing.
    Listing,
    /// POST of base64 inside XML/SOAP, JSON or MTOM.
    Encoded,
    /// `GET /-/metrics`.
    Metrics,
    /// Resumable uploads: tus and IETF creation, offset, append, cancel.
    Resumable,
    /// Anything else: health, refused heads, unknown routes.
    Other,
}

const CLASSES: [RouteClass; 8] = [
    RouteClass::Files,
    RouteClass::Upload,
    RouteClass::Delete,
    RouteClass::Listing,
    RouteClass::Encoded,
    RouteClass::Metrics,
    RouteClass::Resumable,
    RouteClass::Other,
];

impl RouteClass {
    pub fn as_str(self) -> &'static str {
        match self {
            RouteClass::Files => "files",
            RouteClass::Upload => "upload",
            RouteClass::Delete => "delete",
            RouteClass::Listing => "listing",
            RouteClass::Encoded => "encoded",
            RouteClass::Metrics => "metrics",
            RouteClass::Resumable => "resumable",
            RouteClass::Other => "other",
        }
    }

    /// The class of a label set with [`Exchange::set_class`]; unknown → `Other`.
    fn from_label(label: &str) -> Self {
        CLASSES
            .into_iter()
            .find(|c| c.as_str() == label)
            .unwrap_or(RouteClass::Other)
    }

    /// Label this exchange.
    pub fn set(self, ex: &mut Exchange) {
        ex.set_class(self.as_str());
    }
}

impl EncodeLabelValue for RouteClass {
    fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
        EncodeLabelValue::encode(&self.as_str(), encoder)
    }
}

/// Status codes counted one by one; any other code is counted under its
/// class (`1xx` … `5xx`), which bounds the series count.
const CODES: [(u16, &str); 27] = [
    (101, "101"),
    (200, "200"),
    (201, "201"),
    (204, "204"),
    (206, "206"),
    (301, "301"),
    (304, "304"),
    (400, "400"),
    (401, "401"),
    (403, "403"),
    (404, "404"),
    (405, "405"),
    (408, "408"),
    (411, "411"),
    (412, "412"),
    (413, "413"),
    (414, "414"),
    (415, "415"),
    (416, "416"),
    (421, "421"),
    (431, "431"),
    (499, "499"),
    (500, "500"),
    (501, "501"),
    (503, "503"),
    (505, "505"),
    (507, "507"),
];
const CODE_CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];
const N_CODES: usize = CODES.len() + CODE_CLASSES.len();

fn code_index(status: u16) -> usize {
    match CODES.binary_search_by_key(&status, |(c, _)| *c) {
        Ok(i) => i,
        Err(_) => CODES.len() + usize::from(status / 100).clamp(1, 5) - 1,
    }
}

fn code_label(i: usize) -> &'static str {
    match CODES.get(i) {
        Some((_, s)) => s,
        None => CODE_CLASSES[i - CODES.len()],
    }
}

/// Upper bounds of the request duration buckets, in seconds: 1 ms to 5 min
/// (a multi-GiB transfer is a request too), then +Inf.
const BUCKETS: [f64; 16] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0,
];

/// A histogram of durations on atomics (no lock per observation).
#[derive(Debug, Default)]
struct DurationHistogram {
    /// Per bucket (not cumulative), the last one is +Inf.
    buckets: [AtomicU64; BUCKETS.len() + 1],
    count: AtomicU64,
    sum_nanos: AtomicU64,
}

impl DurationHistogram {
    fn observe(&self, d: Duration) {
        let secs = d.as_secs_f64();
        let i = BUCKETS
            .iter()
            .position(|b| secs <= *b)
            .unwrap_or(BUCKETS.len());
        self.buckets[i].fetch_add(1, Relaxed);
        self.count.fetch_add(1, Relaxed);
        let nanos = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Relaxed);
    }
}

#[derive(Debug, Default)]
struct PerClass {
    requests: [AtomicU64; N_CODES],
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
    duration: DurationHistogram,
}

#[derive(Debug)]
struct Counts {
    class: [PerClass; CLASSES.len()],
    connections: AtomicI64,
    uploads: AtomicI64,
    flush_storms: AtomicU64,
    digest_mismatches: AtomicU64,
    timeouts: [AtomicU64; 4],
}

const TIMEOUTS: [Timeout; 4] = [Timeout::Head, Timeout::Body, Timeout::Write, Timeout::Idle];

fn timeout_index(t: Timeout) -> usize {
    match t {
        Timeout::Head => 0,
        Timeout::Body => 1,
        Timeout::Write => 2,
        Timeout::Idle => 3,
    }
}

#[derive(EncodeLabelSet, Debug, Clone, PartialEq, Eq, Hash)]
struct RequestLabels {
    class: RouteClass,
    code: &'static str,
}

#[derive(EncodeLabelSet, Debug, Clone, PartialEq, Eq, Hash)]
struct ClassLabels {
    class: RouteClass,
}

#[derive(EncodeLabelSet, Debug, Clone, PartialEq, Eq, Hash)]
struct KindLabels {
    kind: &'static str,
}

/// The scrape-time view of [`Counts`].
#[derive(Debug)]
struct CountsCollector(Arc<Counts>);

impl Collector for CountsCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let c = &self.0;
        // A family appears once it has a sample, so a fresh server shows
        // no zero-filled series.
        let mut requests = encoder.encode_descriptor(
            "wirespeed_http_requests",
            "HTTP requests answered, by route class and status code (codes not listed individually count as 1xx..5xx)",
            None,
            MetricType::Counter,
        )?;
        for (class, per) in CLASSES.iter().zip(&c.class) {
            for (i, n) in per.requests.iter().enumerate() {
                let v = n.load(Relaxed);
                if v > 0 {
                    let labels = RequestLabels {
                        class: *class,
                        code: code_label(i),
                    };
                    ConstCounter::new(v).encode(requests.encode_family(&labels)?)?;
                }
            }
        }
        for (name, help, pick) in [
            (
                "wirespeed_http_request_body_bytes",
                "Request body bytes received, by route class",
                (|p: &PerClass| p.bytes_in.load(Relaxed)) as fn(&PerClass) -> u64,
            ),
            (
                "wirespeed_http_response_body_bytes",
                "Response body bytes sent (without heads and chunk framing), by route class",
                |p: &PerClass| p.bytes_out.load(Relaxed),
            ),
        ] {
            let mut m = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            for (class, per) in CLASSES.iter().zip(&c.class) {
                if per.requests.iter().any(|n| n.load(Relaxed) > 0) {
                    let labels = ClassLabels { class: *class };
                    ConstCounter::new(pick(per)).encode(m.encode_family(&labels)?)?;
                }
            }
        }
        let mut m = encoder.encode_descriptor(
            "wirespeed_http_request_duration_seconds",
            "Time from the parsed request head to the end of the response, by route class",
            None,
            MetricType::Histogram,
        )?;
        for (class, per) in CLASSES.iter().zip(&c.class) {
            let h = &per.duration;
            let count = h.count.load(Relaxed);
            if count == 0 {
                continue;
            }
            let mut buckets = [(0.0, 0); BUCKETS.len() + 1];
            for (i, slot) in buckets.iter_mut().enumerate() {
                *slot = (
                    BUCKETS.get(i).copied().unwrap_or(f64::MAX),
                    h.buckets[i].load(Relaxed),
                );
            }
            // The bucket loads and the count are not one snapshot: use their
            // sum so +Inf always equals _count.
            let count = buckets.iter().map(|(_, n)| n).sum();
            let sum = h.sum_nanos.load(Relaxed) as f64 / 1e9;
            let labels = ClassLabels { class: *class };
            m.encode_family(&labels)?.encode_histogram(
                sum,
                count,
                &buckets,
                None::<&std::collections::HashMap<usize, Exemplar<NoLabelSet, f64>>>,
            )?;
        }
        for (name, help, v) in [
            (
                "wirespeed_connections_active",
                "Connections open now (after any TLS handshake)",
                c.connections.load(Relaxed),
            ),
            (
                "wirespeed_uploads_in_progress",
                "PUT and POST requests being received now",
                c.uploads.load(Relaxed),
            ),
        ] {
            let m = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            ConstGauge::new(v).encode(m)?;
        }
        for (name, help, v) in [
            (
                "wirespeed_flush_storms",
                "Streamed responses sent as many tiny writes (an unbuffered body)",
                c.flush_storms.load(Relaxed),
            ),
            (
                "wirespeed_digest_mismatches",
                "Uploads refused because their body did not match the Repr-Digest/Content-Digest sent",
                c.digest_mismatches.load(Relaxed),
            ),
        ] {
            let m = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
            ConstCounter::new(v).encode(m)?;
        }
        let mut m = encoder.encode_descriptor(
            "wirespeed_timeouts",
            "Expired deadlines by kind: head (slowloris), body, write, idle (keep-alive)",
            None,
            MetricType::Counter,
        )?;
        for (t, n) in TIMEOUTS.iter().zip(&c.timeouts) {
            let labels = KindLabels { kind: t.as_str() };
            ConstCounter::new(n.load(Relaxed)).encode(m.encode_family(&labels)?)?;
        }
        Ok(())
    }
}

/// The server's counters, its `/-/metrics` page and its access log.
pub struct Metrics {
    counts: Arc<Counts>,
    registry: Registry,
    access_log: Option<AccessLog>,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics")
            .field("access_log", &self.access_log.is_some())
            .finish_non_exhaustive()
    }
}

impl Metrics {
    /// `access_log`: one text line per request on stderr
    /// ([`with_access_log`](Self::with_access_log) chooses the format and
    /// the output).
    pub fn new(access_log: bool) -> Self {
        let log = access_log
            .then(|| AccessLog::stderr(Default::default()))
            .and_then(|r| {
                r.map_err(|e| tracing::error!(error = %e, "cannot start the access log"))
                    .ok()
            });
        Self::with_access_log(log)
    }

    /// Counters, and `log` (if any) for one line per request.
    pub fn with_access_log(access_log: Option<AccessLog>) -> Self {
        let counts = Arc::new(Counts {
            class: Default::default(),
            connections: AtomicI64::new(0),
            uploads: AtomicI64::new(0),
            flush_storms: AtomicU64::new(0),
            digest_mismatches: AtomicU64::new(0),
            timeouts: Default::default(),
        });
        let mut registry = Registry::default();
        registry.register_collector(Box::new(CountsCollector(counts.clone())));
        Metrics {
            counts,
            registry,
            access_log,
        }
    }

    /// The text exposition (OpenMetrics 1.0, ending in `# EOF`).
    pub fn encode(&self) -> String {
        let mut out = String::with_capacity(8 * 1024);
        // Writing into a String cannot fail; an error would mean a bug in
        // an encoder, and a partial page is still better than none.
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &self.registry) {
            tracing::error!(error = %e, "encoding metrics failed");
        }
        out
    }

    /// Write every access-log line recorded so far (at a clean stop).
    pub fn flush_access_log(&self) {
        if let Some(log) = &self.access_log {
            log.flush();
        }
    }

    /// Count an upload until the returned guard drops.
    pub fn upload_started(&self) -> UploadGuard {
        self.counts.uploads.fetch_add(1, Relaxed);
        UploadGuard(self.counts.clone())
    }

    pub fn digest_mismatch(&self) {
        self.counts.digest_mismatches.fetch_add(1, Relaxed);
    }
}

/// Decrements the uploads-in-progress gauge when dropped.
pub struct UploadGuard(Arc<Counts>);

impl Drop for UploadGuard {
    fn drop(&mut self) {
        self.0.uploads.fetch_sub(1, Relaxed);
    }
}

impl Observer for Metrics {
    fn connection_opened(&self) {
        self.counts.connections.fetch_add(1, Relaxed);
    }

    fn connection_closed(&self) {
        self.counts.connections.fetch_sub(1, Relaxed);
    }

    fn exchange_done(&self, done: &Completed<'_>) {
        let class = RouteClass::from_label(done.class);
        let per = &self.counts.class[class as usize];
        per.requests[code_index(done.status)].fetch_add(1, Relaxed);
        per.bytes_in.fetch_add(done.bytes_in, Relaxed);
        per.bytes_out.fetch_add(done.bytes_out, Relaxed);
        per.duration.observe(done.duration);
        if let Some(log) = &self.access_log {
            // Strings are quoted and escaped in both formats, so a path or
            // user agent cannot forge log lines; the query (which may carry a
            // token) and the Authorization header are never logged.
            log.record(&Entry {
                at: std::time::SystemTime::now(),
                method: done.method,
                path: done.path,
                status: done.status,
                bytes_in: done.bytes_in,
                bytes_out: done.bytes_out,
                duration: done.duration,
                peer: done.peer,
                // The client behind a --trusted-proxy (absent otherwise).
                client: done.forwarded_for,
                user_agent: done.user_agent,
            });
        }
    }

    fn flush_storm(&self) {
        self.counts.flush_storms.fetch_add(1, Relaxed);
    }

    fn timeout(&self, kind: Timeout) {
        self.counts.timeouts[timeout_index(kind)].fetch_add(1, Relaxed);
    }
}

/// `GET /-/metrics`. On a server with tokens it needs one (the counts tell
/// who uses the server how); on an open server it is public, like the files.
pub struct MetricsPage {
    pub(crate) metrics: Arc<Metrics>,
    pub(crate) policy: crate::policy::Policy,
    pub(crate) allowed_hosts: Option<AllowedHosts>,
}

impl Handler for MetricsPage {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        RouteClass::Metrics.set(ex);
        if let Some(hosts) = &self.allowed_hosts {
            crate::answers::refuse_misdirected(hosts, ex.header_str("host"))?;
        }
        let authorization = ex.header("authorization").map(<[u8]>::to_vec);
        let https = ex.forwarded_proto() == Some("https");
        let session = self.policy.sessions().and_then(|s| {
            let presented = s.presented(ex.header_str("host"), ex.header_str("cookie"), https);
            presented.map(str::to_owned)
        });
        let who = self
            .policy
            .authenticate(authorization.as_deref(), session.as_deref(), ex.client_ip())
            .await;
        let root = crate::path::RelPath::root();
        let decision = who.map(|who| {
            self.policy
                .decide(who, crate::policy::Action::Metrics, &root)
        });
        match decision {
            Ok(crate::policy::Decision::Allow) => {}
            Ok(crate::policy::Decision::Forbidden(why)) => {
                let resp = Response::new(403).header("Content-Type", "text/plain; charset=utf-8");
                return ex.send(resp, format!("{why}\n").as_bytes()).await;
            }
            _ => {
                let mut resp =
                    Response::new(401).header("Content-Type", "text/plain; charset=utf-8");
                for challenge in self.policy.challenges() {
                    resp = resp.header("WWW-Authenticate", challenge);
                }
                let says = format!("{}\n", self.policy.sign_in_hint());
                return ex.send(resp, says.as_bytes()).await;
            }
        }
        let body = self.metrics.encode();
        let resp = Response::new(200)
            .header(
                "Content-Type",
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )
            .header("Cache-Control", "no-store");
        ex.send(resp, body.as_bytes()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_sorted_and_fold_into_classes() {
        assert!(CODES.windows(2).all(|w| w[0].0 < w[1].0));
        assert_eq!(code_label(code_index(404)), "404");
        assert_eq!(code_label(code_index(418)), "4xx");
        assert_eq!(code_label(code_index(599)), "5xx");
        assert_eq!(code_label(code_index(0)), "1xx");
        assert_eq!(code_label(code_index(999)), "5xx");
    }

    #[test]
    fn classes_index_their_own_slot() {
        for (i, c) in CLASSES.iter().enumerate() {
            assert_eq!(*c as usize, i);
            assert_eq!(RouteClass::from_label(c.as_str()), *c);
        }
        assert_eq!(RouteClass::from_label("nonsense"), RouteClass::Other);
    }

    #[test]
    fn histogram_buckets_and_sum() {
        let h = DurationHistogram::default();
        h.observe(Duration::from_micros(500));
        h.observe(Duration::from_millis(7));
        h.observe(Duration::from_secs(1000));
        assert_eq!(h.buckets[0].load(Relaxed), 1);
        assert_eq!(h.buckets[3].load(Relaxed), 1);
        assert_eq!(h.buckets[BUCKETS.len()].load(Relaxed), 1);
        assert_eq!(h.count.load(Relaxed), 3);
        assert_eq!(h.sum_nanos.load(Relaxed), 1_000_007_500_000);
    }
}
