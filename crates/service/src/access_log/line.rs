//! One access-log line, formatted into a byte buffer (sans-IO): the text
//! and JSON layouts the server has always written (tracing's `fmt` and
//! `json` layouts, target `wirespeed::access`), without going through
//! tracing, so a line costs a few hundred nanoseconds and no allocation.

use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The layout of a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// `TIME  INFO wirespeed::access: method="GET" path="/a" status=200 …`
    #[default]
    Text,
    /// One JSON object per line: `{"timestamp":…,"level":"INFO",…,"target":"wirespeed::access"}`.
    Json,
}

/// What one finished request puts in its line.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    pub at: SystemTime,
    pub method: &'a str,
    pub path: &'a str,
    pub status: u16,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub duration: Duration,
    pub peer: SocketAddr,
    /// The client a `--trusted-proxy` forwarded for (no field when absent).
    pub client: Option<IpAddr>,
    pub user_agent: Option<&'a str>,
}

/// `YYYY-MM-DDTHH:MM:SS` of the last second formatted: every line of a
/// second shares it, so only the microseconds are formatted per line.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    secs: u64,
    text: [u8; 19],
}

impl Default for Clock {
    fn default() -> Self {
        Clock {
            secs: u64::MAX,
            text: [b'0'; 19],
        }
    }
}

impl Clock {
    /// RFC 3339 UTC with microseconds, as tracing writes it.
    fn write(&mut self, at: SystemTime, out: &mut Vec<u8>) {
        let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = since.as_secs();
        if secs != self.secs {
            self.secs = secs;
            self.text = civil_time(secs);
        }
        out.extend_from_slice(&self.text);
        out.push(b'.');
        push_padded(out, u64::from(since.subsec_micros()), 6);
        out.push(b'Z');
    }
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SS` (proleptic Gregorian,
/// Howard Hinnant's days-to-civil).
pub(crate) fn civil_time(secs: u64) -> [u8; 19] {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let mut out = Vec::with_capacity(19);
    push_padded(&mut out, year.clamp(0, 9999) as u64, 4);
    out.push(b'-');
    push_padded(&mut out, month as u64, 2);
    out.push(b'-');
    push_padded(&mut out, day as u64, 2);
    out.push(b'T');
    push_padded(&mut out, rem / 3600, 2);
    out.push(b':');
    push_padded(&mut out, rem / 60 % 60, 2);
    out.push(b':');
    push_padded(&mut out, rem % 60, 2);
    let mut text = [b'0'; 19];
    text.copy_from_slice(&out[..19]);
    text
}

/// `n` in decimal, left-padded with zeros to `width` digits.
fn push_padded(out: &mut Vec<u8>, n: u64, width: usize) {
    let mut b = itoa::Buffer::new();
    let s = b.format(n).as_bytes();
    for _ in s.len()..width {
        out.push(b'0');
    }
    out.extend_from_slice(s);
}

fn push_num(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// Milliseconds with microsecond precision: `12.345`.
fn push_millis(out: &mut Vec<u8>, d: Duration) {
    let micros = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
    push_num(out, micros / 1000);
    out.push(b'.');
    push_padded(out, micros % 1000, 3);
}

fn push_peer(out: &mut Vec<u8>, peer: SocketAddr) {
    match peer {
        SocketAddr::V4(a) => {
            for (i, o) in a.ip().octets().iter().enumerate() {
                if i > 0 {
                    out.push(b'.');
                }
                push_num(out, u64::from(*o));
            }
            out.push(b':');
            push_num(out, u64::from(a.port()));
        }
        v6 => {
            use std::io::Write as _;
            // Writing into a Vec cannot fail.
            let _ = write!(out, "{v6}");
        }
    }
}

/// Whether `s` can be written between quotes as it is, in both layouts.
fn plain(s: &str, ascii_only: bool) -> bool {
    s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' || (!ascii_only && b >= 0x80))
}

/// A quoted string as Rust's `{:?}` writes it (what tracing's text layout
/// does for `&str` fields): quotes, backslashes and control characters
/// escaped, so a path or user agent cannot forge a line.
fn push_debug_str(out: &mut Vec<u8>, s: &str) {
    if plain(s, true) {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        use std::io::Write as _;
        let _ = write!(out, "{s:?}");
    }
}

/// A JSON string literal.
fn push_json_str(out: &mut Vec<u8>, s: &str) {
    if plain(s, false) {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
    } else {
        // Serializing a &str into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

/// Append `e`'s line, newline included, to `out`.
pub fn write_line(format: Format, clock: &mut Clock, e: &Entry<'_>, out: &mut Vec<u8>) {
    let ua = e.user_agent.unwrap_or("-");
    match format {
        Format::Text => {
            clock.write(e.at, out);
            out.extend_from_slice(b"  INFO wirespeed::access: method=");
            push_debug_str(out, e.method);
            out.extend_from_slice(b" path=");
            push_debug_str(out, e.path);
            out.extend_from_slice(b" status=");
            push_num(out, u64::from(e.status));
            out.extend_from_slice(b" bytes_in=");
            push_num(out, e.bytes_in);
            out.extend_from_slice(b" bytes_out=");
            push_num(out, e.bytes_out);
            out.extend_from_slice(b" duration_ms=");
            push_millis(out, e.duration);
            out.extend_from_slice(b" peer=");
            push_peer(out, e.peer);
            if let Some(client) = e.client {
                use std::io::Write as _;
                let _ = write!(out, " client={client}");
            }
            out.extend_from_slice(b" user_agent=");
            push_debug_str(out, ua);
        }
        Format::Json => {
            out.extend_from_slice(b"{\"timestamp\":\"");
            clock.write(e.at, out);
            out.extend_from_slice(b"\",\"level\":\"INFO\",\"method\":");
            push_json_str(out, e.method);
            out.extend_from_slice(b",\"path\":");
            push_json_str(out, e.path);
            out.extend_from_slice(b",\"status\":");
            push_num(out, u64::from(e.status));
            out.extend_from_slice(b",\"bytes_in\":");
            push_num(out, e.bytes_in);
            out.extend_from_slice(b",\"bytes_out\":");
            push_num(out, e.bytes_out);
            out.extend_from_slice(b",\"duration_ms\":");
            push_millis(out, e.duration);
            out.extend_from_slice(b",\"peer\":\"");
            push_peer(out, e.peer);
            if let Some(client) = e.client {
                use std::io::Write as _;
                let _ = write!(out, "\",\"client\":\"{client}");
            }
            out.extend_from_slice(b"\",\"user_agent\":");
            push_json_str(out, ua);
            out.extend_from_slice(b",\"target\":\"wirespeed::access\"}");
        }
    }
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry<'a>(path: &'a str, ua: Option<&'a str>) -> Entry<'a> {
        Entry {
            // 2026-11-25T00:20:03.000042Z
            at: UNIX_EPOCH + Duration::new(1_795_566_003, 42_000),
            method: "GET",
            path,
            status: 200,
            bytes_in: 0,
            bytes_out: 13,
            duration: Duration::from_micros(1_234),
            peer: "127.0.0.1:5555".parse().unwrap(),
            client: None,
            user_agent: ua,
        }
    }

    fn line(format: Format, e: &Entry<'_>) -> String {
        let mut out = Vec::new();
        write_line(format, &mut Clock::default(), e, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn text_line() {
        assert_eq!(
            line(Format::Text, &entry("/hello.txt", Some("wrk"))),
            "2026-11-25T00:20:03.000042Z  INFO wirespeed::access: method=\"GET\" path=\"/hello.txt\" \
             status=200 bytes_in=0 bytes_out=13 duration_ms=1.234 peer=127.0.0.1:5555 user_agent=\"wrk\"\n"
        );
    }

    #[test]
    fn json_line_parses_with_every_field() {
        let l = line(Format::Json, &entry("/a \"b\"\n", None));
        assert!(l.ends_with("}\n") && l.matches('\n').count() == 1, "{l}");
        let v: serde_json::Value = serde_json::from_str(&l).unwrap();
        assert_eq!(v["timestamp"], "2026-11-25T00:20:03.000042Z");
        assert_eq!(v["level"], "INFO");
        assert_eq!(v["path"], "/a \"b\"\n");
        assert_eq!(v["status"], 200);
        assert_eq!(v["bytes_out"], 13);
        assert_eq!(v["duration_ms"], 1.234);
        assert_eq!(v["peer"], "127.0.0.1:5555");
        assert_eq!(v["user_agent"], "-");
        assert!(v.get("client").is_none(), "{l}");
        let forwarded = Entry {
            client: Some("198.51.100.7".parse().unwrap()),
            ..entry("/a", None)
        };
        let v: serde_json::Value = serde_json::from_str(&line(Format::Json, &forwarded)).unwrap();
        assert_eq!(v["client"], "198.51.100.7");
        assert!(line(Format::Text, &forwarded)
            .contains(" peer=127.0.0.1:5555 client=198.51.100.7 user_agent=\"-\""));
        assert_eq!(v["target"], "wirespeed::access");
    }

    #[test]
    fn text_escapes_what_could_forge_a_line() {
        let l = line(
            Format::Text,
            &entry("/x\n2026 INFO fake", Some("a\"b\\c\u{1b}[2J")),
        );
        assert_eq!(l.matches('\n').count(), 1, "{l}");
        assert!(l.contains(r#"path="/x\n2026 INFO fake""#), "{l}");
        assert!(l.contains(r#"user_agent="a\"b\\c\u{1b}[2J""#), "{l}");
        let v6 = Entry {
            peer: "[::1]:80".parse().unwrap(),
            ..entry("/caf\u{e9}", None)
        };
        let l = line(Format::Text, &v6);
        assert!(
            l.contains("path=\"/caf\u{e9}\" ") && l.contains("peer=[::1]:80 "),
            "{l}"
        );
    }

    #[test]
    fn civil_time_matches_known_dates() {
        assert_eq!(&civil_time(0), b"1970-01-01T00:00:00");
        assert_eq!(&civil_time(951_782_400), b"2000-02-29T00:00:00");
        assert_eq!(&civil_time(1_795_566_003), b"2026-11-25T00:20:03");
        assert_eq!(&civil_time(4_102_444_799), b"2099-12-31T23:59:59");
    }
}
