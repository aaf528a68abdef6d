//! One hook POST, `http://` or `https://`: a plain HTTP/1.1 request over a
//! blocking socket (the hooks' own thread, or the publish gate's blocking
//! thread), without a client library. https goes through rustls with the
//! config `serve` gives ([`HookTls`]: the Mozilla roots of `webpki-roots`,
//! plus `--hook-cacert`'s certificates); verification is never turned off.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};

/// The signature's header: `sha256=` and the HMAC-SHA256 of the body, hex.
pub const SIGNATURE_HEADER: &str = "X-Wirespeed-Signature";
/// The time the POST was made (Unix seconds), also signed into the body's
/// `time`.
pub const TIMESTAMP_HEADER: &str = "X-Wirespeed-Timestamp";

/// `sha256=HEX`: the HMAC-SHA256 of `body` under `secret`.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut mac = <Hmac<sha2::Sha256> as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC takes a key of any length"));
    mac.update(body);
    let d = mac.finalize().into_bytes();
    let mut out = String::with_capacity(7 + 64);
    out.push_str("sha256=");
    for b in d {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// The TLS client config https hook URLs are reached with.
pub type HookTls = Arc<rustls::ClientConfig>;

/// The most of an answer read (its status line, head and first line).
const ANSWER_MAX: usize = 8 * 1024;

/// One hook URL, parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookUrl {
    /// `host:port`, for the socket.
    pub addr: String,
    /// `host[:port]` as the `Host` field says it.
    pub host: String,
    pub path: String,
    /// `https://`: spoken over TLS, the certificate checked for `host`.
    pub https: bool,
}

impl HookUrl {
    /// `http://HOST[:PORT][/PATH]` or `https://…`.
    pub fn parse(url: &str) -> Result<HookUrl, String> {
        let (rest, https, port) = if let Some(r) = url.strip_prefix("http://") {
            (r, false, 80)
        } else if let Some(r) = url.strip_prefix("https://") {
            (r, true, 443)
        } else {
            return Err(format!(
                "{url:?}: a hook URL is http://HOST[:PORT]/PATH or https://HOST[:PORT]/PATH"
            ));
        };
        let (host, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let bad = |b: u8| b <= b' ' || b == 0x7f;
        if host.is_empty() || host.bytes().any(bad) || path.bytes().any(bad) {
            return Err(format!("{url:?} is not a usable hook URL"));
        }
        let addr = if host
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
            && !host.ends_with(']')
        {
            host.to_string()
        } else {
            format!("{host}:{port}")
        };
        Ok(HookUrl {
            addr,
            host: host.to_string(),
            path: path.to_string(),
            https,
        })
    }

    /// The name the certificate must carry: the host without its port or
    /// an IPv6 address's brackets.
    fn tls_name(&self) -> &str {
        let h = match self.host.rsplit_once(':') {
            Some((h, p)) if p.parse::<u16>().is_ok() && !self.host.ends_with(']') => h,
            _ => self.host.as_str(),
        };
        h.trim_start_matches('[').trim_end_matches(']')
    }

    /// As given, for messages.
    pub fn show(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}{}", self.host, self.path)
    }
}

/// What a hook answered: its status and its body's first line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub first_line: String,
}

/// One signed POST of `body` to `url`, bounded by `timeout` per step.
pub fn post(
    url: &HookUrl,
    body: &[u8],
    secret: Option<&[u8]>,
    timeout: Duration,
    tls: Option<&HookTls>,
) -> std::io::Result<Answer> {
    let addr = url
        .addr
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| std::io::Error::other("the hook's host has no address"))?;
    let tcp = TcpStream::connect_timeout(&addr, timeout)?;
    tcp.set_read_timeout(Some(timeout))?;
    tcp.set_write_timeout(Some(timeout))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut head = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\nUser-Agent: wirespeed-hooks\r\n\
         {TIMESTAMP_HEADER}: {now}\r\n",
        url.path,
        url.host,
        body.len()
    );
    if let Some(k) = secret {
        head.push_str(&format!("{SIGNATURE_HEADER}: {}\r\n", sign(k, body)));
    }
    head.push_str("\r\n");
    if !url.https {
        return exchange(tcp, head.as_bytes(), body);
    }
    let tls = tls.ok_or_else(|| std::io::Error::other("https hooks need a TLS config"))?;
    let name = rustls::pki_types::ServerName::try_from(url.tls_name().to_owned())
        .map_err(|e| std::io::Error::other(format!("{}: {e}", url.tls_name())))?;
    let conn = rustls::ClientConnection::new(tls.clone(), name).map_err(std::io::Error::other)?;
    exchange(rustls::StreamOwned::new(conn, tcp), head.as_bytes(), body).map_err(|e| {
        // The operator's likely fix, beside rustls's words for it.
        if e.to_string().contains("certificate") {
            std::io::Error::other(format!(
                "{e} (a receiver with a private CA or a self-signed certificate: \
                 --hook-cacert FILE trusts it)"
            ))
        } else {
            e
        }
    })
}

/// Writes the request, reads the answer (bounded) until the peer closes.
fn exchange(mut s: impl Read + Write, head: &[u8], body: &[u8]) -> std::io::Result<Answer> {
    s.write_all(head)?;
    s.write_all(body)?;
    s.flush()?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while buf.len() < ANSWER_MAX {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            // A peer that closes without TLS's close_notify, or a slow
            // rest of the body: what came is enough once the head is in.
            Err(_) if find(&buf, b"\r\n\r\n").is_some() => break,
            Err(e) => return Err(e),
        }
    }
    parse_answer(&buf)
        .ok_or_else(|| std::io::Error::other("no HTTP status line in the hook's answer"))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The status and the body's first line (a chunked body's first chunk
/// size skipped), from the first bytes of an answer.
pub(super) fn parse_answer(buf: &[u8]) -> Option<Answer> {
    let status = std::str::from_utf8(buf.get(..12)?)
        .ok()?
        .strip_prefix("HTTP/1.")?
        .get(2..5)?
        .parse()
        .ok()?;
    let Some(end) = find(buf, b"\r\n\r\n") else {
        return Some(Answer {
            status,
            first_line: String::new(),
        });
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let chunked = head
        .lines()
        .any(|l| l.starts_with("transfer-encoding:") && l.contains("chunked"));
    let mut lines = buf[end + 4..].split(|&b| b == b'\n');
    if chunked {
        lines.next();
    }
    let first = lines.next().unwrap_or(b"");
    let first = String::from_utf8_lossy(first);
    let first: String = first.trim().chars().filter(|c| !c.is_control()).collect();
    Some(Answer {
        status,
        first_line: first.chars().take(200).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signature_is_rfc_4231_hmac_sha256() {
        // RFC 4231, test case 2.
        assert_eq!(
            sign(b"Jefe", b"what do ya want for nothing?"),
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn urls() {
        let u = HookUrl::parse("http://127.0.0.1:9000/in").unwrap();
        assert_eq!(
            (u.addr.as_str(), u.path.as_str(), u.https),
            ("127.0.0.1:9000", "/in", false)
        );
        let u = HookUrl::parse("http://hooks.lan").unwrap();
        assert_eq!(
            (u.addr.as_str(), u.host.as_str(), u.path.as_str()),
            ("hooks.lan:80", "hooks.lan", "/")
        );
        let u = HookUrl::parse("https://hooks.example.org/in?x=1").unwrap();
        assert_eq!(
            (u.addr.as_str(), u.tls_name(), u.https),
            ("hooks.example.org:443", "hooks.example.org", true)
        );
        let u = HookUrl::parse("https://[::1]:8443/").unwrap();
        assert_eq!((u.addr.as_str(), u.tls_name()), ("[::1]:8443", "::1"));
        assert_eq!(u.show(), "https://[::1]:8443/");
        assert!(HookUrl::parse("ftp://x/").is_err());
        assert!(HookUrl::parse("http:///x").is_err());
        assert!(HookUrl::parse("http://x/a b").is_err());
    }

    #[test]
    fn answers_give_their_status_and_first_line() {
        let a = parse_answer(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 9\r\n\r\nno.exe\nmore")
            .unwrap();
        assert_eq!((a.status, a.first_line.as_str()), (403, "no.exe"));
        let a = parse_answer(
            b"HTTP/1.1 422 X\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nvirus found: X\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(a.first_line, "virus found: X");
        let a = parse_answer(b"HTTP/1.0 204 No Content\r\n\r\n").unwrap();
        assert_eq!((a.status, a.first_line.as_str()), (204, ""));
        assert_eq!(parse_answer(b"HTTP/1.1 2"), None);
        assert_eq!(parse_answer(b"garbage and more garbage"), None);
    }
}
