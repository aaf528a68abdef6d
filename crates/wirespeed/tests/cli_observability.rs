//! What an operator sees of `wirespeed serve`: `GET /-/metrics` read by the
//! Prometheus project's own Python parser after a known traffic pattern, the
//! token it needs on a token server, the access log (`--log-format json`),
//! and the hooks and audit trail as their flags set them up.
//! Each test runs the real binary and talks raw HTTP to it.

use std::collections::HashMap;
use std::io::Write;
use std::process::{Command, Stdio};

mod common;
use common::Serve;

/// Parse an exposition with the Prometheus Python client's OpenMetrics
/// parser (what the page's Content-Type says it is), check that its classic
/// text-format parser reads the same samples, and return every sample as
/// `name{k="v",…}` (labels sorted) → value.
fn parse_with_prometheus_client(text: &[u8]) -> HashMap<String, f64> {
    const SCRIPT: &str = r#"
import sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics
from prometheus_client.parser import text_string_to_metric_families as classic
page = sys.stdin.read()
def samples(parse):
    return sorted(
        (s.name, ",".join('%s="%s"' % kv for kv in sorted(s.labels.items())), float(s.value))
        for family in parse(page) for s in family.samples)
om = samples(openmetrics)
assert om == samples(classic), "the classic parser reads other samples"
for name, labels, value in om:
    print("%s{%s} %r" % (name, labels, value))
"#;
    let mut py = Command::new("python3")
        .args(["-c", SCRIPT])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 (with prometheus_client: pip install prometheus_client)");
    py.stdin.take().unwrap().write_all(text).unwrap();
    let out = py.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the Prometheus parser refused the page: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(text)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

#[test]
fn metrics_count_a_known_traffic_pattern_exactly() {
    let tmp = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(tmp.path().join("f.bin"), &data).unwrap();
    let s = Serve::start(tmp.path(), &[]);

    for _ in 0..3 {
        let (status, _, body) = s.req("GET", "/f.bin", &[], b"");
        assert_eq!((status, body.as_slice()), (200, data.as_slice()));
    }
    let upload = vec![b'u'; 5000];
    assert_eq!(s.req("PUT", "/up.bin", &[], &upload).0, 201);
    assert_eq!(std::fs::read(tmp.path().join("up.bin")).unwrap(), upload);
    let (status, _, not_found) = s.req("GET", "/missing", &[], b"");
    assert_eq!(status, 404);
    // A body that does not match its digest: refused, counted, not stored.
    let wrong = "Repr-Digest: sha-256=:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=:";
    assert_eq!(s.req("PUT", "/bad.bin", &[wrong], &[b'b'; 100]).0, 400);
    assert!(!tmp.path().join("bad.bin").exists());

    let (status, head, page) = s.req("GET", "/-/metrics", &[], b"");
    assert_eq!(status, 200);
    assert!(
        head.contains("content-type: application/openmetrics-text; version=1.0.0; charset=utf-8"),
        "{head}"
    );
    let m = parse_with_prometheus_client(&page);
    let get = |k: &str| {
        *m.get(k)
            .unwrap_or_else(|| panic!("no sample {k} in {}", String::from_utf8_lossy(&page)))
    };
    assert_eq!(
        get(r#"wirespeed_http_requests_total{class="files",code="200"}"#),
        3.0
    );
    assert_eq!(
        get(r#"wirespeed_http_requests_total{class="files",code="404"}"#),
        1.0
    );
    assert_eq!(
        get(r#"wirespeed_http_requests_total{class="upload",code="201"}"#),
        1.0
    );
    assert_eq!(
        get(r#"wirespeed_http_requests_total{class="upload",code="400"}"#),
        1.0
    );
    let requests: f64 = m
        .iter()
        .filter(|(k, _)| k.starts_with("wirespeed_http_requests_total{"))
        .map(|(_, v)| v)
        .sum();
    assert_eq!(requests, 6.0, "the scrape itself is counted after it");
    assert_eq!(
        get(r#"wirespeed_http_request_body_bytes_total{class="upload"}"#),
        5100.0
    );
    assert_eq!(
        get(r#"wirespeed_http_request_body_bytes_total{class="files"}"#),
        0.0
    );
    assert_eq!(
        get(r#"wirespeed_http_response_body_bytes_total{class="files"}"#),
        (3 * data.len() + not_found.len()) as f64
    );
    assert_eq!(
        get(r#"wirespeed_http_request_duration_seconds_count{class="files"}"#),
        4.0
    );
    assert_eq!(
        get(r#"wirespeed_http_request_duration_seconds_bucket{class="upload",le="+Inf"}"#),
        2.0
    );
    assert_eq!(get("wirespeed_digest_mismatches_total{}"), 1.0);
    assert_eq!(get("wirespeed_uploads_in_progress{}"), 0.0);
    assert!(
        get("wirespeed_connections_active{}") >= 1.0,
        "the scrape's own"
    );
    assert_eq!(get("wirespeed_flush_storms_total{}"), 0.0);
    assert_eq!(get(r#"wirespeed_timeouts_total{kind="head"}"#), 0.0);
}

#[test]
fn metrics_need_the_token_on_a_token_server_and_can_be_switched_off() {
    let tmp = tempfile::tempdir().unwrap();
    let s = Serve::start(tmp.path(), &["--token", "s3cret"]);
    let (status, head, _) = s.req("GET", "/-/metrics", &[], b"");
    assert_eq!(status, 401);
    assert!(head.contains("www-authenticate: bearer"), "{head}");
    assert_eq!(
        s.req("GET", "/-/metrics", &["Authorization: Bearer wrong"], b"")
            .0,
        401
    );
    let (status, _, page) = s.req("GET", "/-/metrics", &["Authorization: Bearer s3cret"], b"");
    assert_eq!(status, 200);
    let m = parse_with_prometheus_client(&page);
    assert_eq!(
        m[r#"wirespeed_http_requests_total{class="metrics",code="401"}"#],
        2.0
    );
    drop(s);

    let s = Serve::start(tmp.path(), &["--metrics", "off"]);
    assert_eq!(s.req("GET", "/-/metrics", &[], b"").0, 404);
}

#[test]
fn access_log_json_is_one_line_per_request_without_secrets() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("f.txt"), b"hello").unwrap();
    let s = Serve::start(tmp.path(), &["--log-format", "json"]);
    let (status, _, body) = s.req(
        "GET",
        "/f.txt?token=query-secret",
        &[
            "Authorization: Bearer header-secret",
            "User-Agent: probe/1.0 \"x\"",
        ],
        b"",
    );
    assert_eq!((status, body.as_slice()), (200, &b"hello"[..]));
    let stderr = s.stop();
    assert!(!stderr.contains("secret"), "{stderr}");
    let access: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains(r#""target":"wirespeed::access""#))
        .collect();
    assert_eq!(access.len(), 1, "{stderr}");
    let line = access[0];
    assert!(line.starts_with('{') && line.ends_with('}'), "{line}");
    for field in [
        r#""level":"INFO""#,
        r#""method":"GET""#,
        r#""path":"/f.txt""#,
        r#""status":200"#,
        r#""bytes_in":0"#,
        r#""bytes_out":5"#,
        r#""peer":"127.0.0.1:"#,
        r#""user_agent":"probe/1.0 \"x\"""#,
        r#""duration_ms":"#,
    ] {
        assert!(line.contains(field), "{field} missing in {line}");
    }

    let s = Serve::start(tmp.path(), &["--access-log", "off"]);
    assert_eq!(s.req("GET", "/f.txt", &[], b"").0, 200);
    let stderr = s.stop();
    assert!(!stderr.contains("wirespeed::access"), "{stderr}");
}

/// The access log is written in batches off the request path, and a clean
/// stop (SIGTERM) still writes every line: N requests, N lines, each whole.
#[test]
fn access_log_keeps_every_line_through_a_clean_stop() {
    use std::io::Read;
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("hello.txt"), b"hello, world\n").unwrap();
    let s = Serve::start(tmp.path(), &[]);
    const CONNS: usize = 4;
    const PER_CONN: usize = 750;
    let threads: Vec<_> = (0..CONNS)
        .map(|_| {
            let addr = s.addr;
            std::thread::spawn(move || {
                let mut c = std::net::TcpStream::connect(addr).unwrap();
                c.set_read_timeout(Some(std::time::Duration::from_secs(20)))
                    .unwrap();
                let req = b"GET /hello.txt HTTP/1.1\r\nHost: localhost\r\n\r\n";
                let mut buf = [0u8; 4096];
                for _ in 0..PER_CONN {
                    c.write_all(req).unwrap();
                    let mut got = Vec::new();
                    while !got.ends_with(b"hello, world\n") {
                        let n = c.read(&mut buf).unwrap();
                        assert!(n > 0, "server closed");
                        got.extend_from_slice(&buf[..n]);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let stderr = s.stop();
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("wirespeed::access:"))
        .collect();
    assert_eq!(
        lines.len(),
        CONNS * PER_CONN,
        "{}",
        &stderr[..stderr.len().min(2000)]
    );
    assert!(lines.iter().all(|l| l.contains(
        r#"method="GET" path="/hello.txt" status=200 bytes_in=0 bytes_out=13 duration_ms="#
    ) && l.ends_with(r#"user_agent="-""#)));
}

/// A download the client cuts short is logged, and counted in
/// `wirespeed_http_response_body_bytes_total`, with the bytes that were sent
/// (a cut download was logged as `bytes_out=0` and not counted), on both file
/// paths (the copy loop a loopback peer gets, and sendfile).
#[test]
fn a_cut_download_is_logged_and_counted_with_the_bytes_sent() {
    use std::io::Read;
    let tmp = tempfile::tempdir().unwrap();
    let size: u64 = 64 << 20;
    let f = std::fs::File::create(tmp.path().join("big.bin")).unwrap();
    f.set_len(size).unwrap();
    for send in ["auto", "sendfile"] {
        let s = Serve::start(tmp.path(), &["--file-send", send]);
        let mut c = std::net::TcpStream::connect(s.addr).unwrap();
        c.set_read_timeout(Some(std::time::Duration::from_secs(20)))
            .unwrap();
        c.write_all(b"GET /big.bin HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .unwrap();
        let mut buf = vec![0u8; 64 << 10];
        let mut read = 0;
        while read < 1 << 20 {
            let n = c.read(&mut buf).unwrap();
            assert!(n > 0);
            read += n;
        }
        drop(c); // unread bytes in the socket: a reset, the server's write fails
        let stderr = s.wait_stderr("path=\"/big.bin\"");
        let line = stderr
            .lines()
            .find(|l| l.contains("path=\"/big.bin\""))
            .unwrap();
        let bytes_out: u64 = line
            .split_once("bytes_out=")
            .and_then(|(_, rest)| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no bytes_out in {line}"));
        // At least what the client read (less its head), less than the file.
        assert!(
            bytes_out >= (1 << 20) - 1024 && bytes_out < size,
            "--file-send {send}: {line}"
        );
        let (status, _, page) = s.req("GET", "/-/metrics", &[], b"");
        assert_eq!(status, 200);
        let m = parse_with_prometheus_client(&page);
        assert_eq!(
            m[r#"wirespeed_http_response_body_bytes_total{class="files"}"#], bytes_out as f64,
            "--file-send {send}: {line}"
        );
    }
}

/// The team's flags through the binary: `--hook-before-upload` refuses an
/// upload before it is published (422 with the command's first line, no
/// file), `--hook-command` and `--audit-log` each get one JSON line per
/// upload, refused or not, with what happened.
#[test]
fn hooks_and_the_audit_trail_through_the_binary() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let events = tmp.path().join("events.jsonl");
    let audit = tmp.path().join("audit.jsonl");
    let hook = format!(
        "cat >> '{}'; echo >> '{}'",
        events.display(),
        events.display()
    );
    let before = r#"grep -q '\.exe"' && { echo "no programs here"; exit 1; }; exit 0"#;
    let s = Serve::start(
        &root,
        &[
            "--hook-command",
            &hook,
            "--audit-log",
            audit.to_str().unwrap(),
            "--hook-before-upload",
            before,
        ],
    );
    let (status, _, body) = s.req("PUT", "/setup.exe", &[], b"MZ");
    let body = String::from_utf8_lossy(&body);
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("no programs here"), "{body}");
    assert!(!root.join("setup.exe").exists(), "nothing published");
    assert_eq!(s.req("PUT", "/notes.txt", &[], b"plain").0, 201);
    assert_eq!(std::fs::read(root.join("notes.txt")).unwrap(), b"plain");
    s.stop();
    let lines = |f: &std::path::Path| -> Vec<serde_json::Value> {
        std::fs::read_to_string(f)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    };
    for (what, got) in [("hook", lines(&events)), ("audit", lines(&audit))] {
        let seen: Vec<(String, String, u64)> = got
            .iter()
            .map(|v| {
                (
                    v["action"].as_str().unwrap_or("").to_string(),
                    v["path"].as_str().unwrap_or("").to_string(),
                    v["status"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("upload".to_string(), "/setup.exe".to_string(), 422),
                ("upload".to_string(), "/notes.txt".to_string(), 201),
            ],
            "{what}: {got:?}"
        );
    }
}

/// An https receiver for hook POSTs with a self-signed certificate made by
/// openssl: its port; each body it gets is a line of `log`.
fn https_receiver(
    dir: &std::path::Path,
    log: &std::path::Path,
) -> (std::process::Child, u16, std::path::PathBuf) {
    use std::io::BufRead;
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1", "-keyout"])
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    const RECEIVER: &str = r#"
import http.server, ssl, sys
out = open(sys.argv[1], "ab", buffering=0)
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        n = int(self.headers.get("Content-Length", 0))
        out.write(self.rfile.read(n) + b"\n")
        self.send_response(204)
        self.end_headers()
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[2], sys.argv[3])
s.socket = ctx.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;
    let mut child = Command::new("python3")
        .args(["-c", RECEIVER])
        .arg(log)
        .arg(&cert)
        .arg(&key)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().parse().expect("the receiver's port");
    (child, port, cert)
}

/// An https hook to a receiver with a self-signed certificate: refused
/// until `--hook-cacert` names it, the refusal said at the first event
/// with the flag that fixes it; with it, the event arrives.
#[test]
fn an_https_hook_trusts_what_hook_cacert_names_and_says_why_not() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    let log = tmp.path().join("received.jsonl");
    let (mut receiver, port, cert) = https_receiver(tmp.path(), &log);
    let url = format!("https://127.0.0.1:{port}/events");

    let s = Serve::start(&root, &["--hook", &url]);
    assert_eq!(s.req("PUT", "/one.txt", &[], b"1").0, 201);
    let err = s.wait_stderr("hook POST failed");
    assert!(
        err.contains("certificate") && err.contains("--hook-cacert"),
        "{err}"
    );
    drop(s);
    assert!(
        std::fs::read(&log).unwrap_or_default().is_empty(),
        "nothing delivered"
    );

    let s = Serve::start(
        &root,
        &["--hook", &url, "--hook-cacert", cert.to_str().unwrap()],
    );
    assert_eq!(s.req("PUT", "/two.txt", &[], b"2").0, 201);
    let stderr = s.stop();
    let _ = receiver.kill();
    let _ = receiver.wait();
    let got = std::fs::read_to_string(&log).unwrap_or_default();
    let events: Vec<serde_json::Value> = got
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(events.len(), 1, "{got}\n{stderr}");
    assert_eq!(events[0]["path"], "/two.txt");
    assert!(!stderr.contains("hook POST failed"), "{stderr}");
}
