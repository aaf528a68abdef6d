//! A hand-written HTTP/1.1 server on 127.0.0.1:0 (std threads, keep-alive)
//! whose answers a test scripts per request: what a hostile or foreign
//! server might say that `wirespeed serve` never does (redirects to `/`,
//! listings naming `../x`, escape codes in error bodies, 507, a stall).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One request as the script sees it.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: String,
    /// The request target (path and query).
    pub target: String,
    /// The head's fields, lowercased names, as `name: value` lines.
    pub head: String,
}

impl Req {
    /// The target without its query.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }
}

/// What to answer.
pub enum Reply {
    /// Status, extra fields, body (Content-Length is added).
    Full(u16, Vec<(String, String)>, Vec<u8>),
    /// A 200 announcing `len` bytes that sends `first` and then stalls for
    /// 30 s (a transfer in progress, for Ctrl-C).
    Stall { len: u64, first: Vec<u8> },
}

impl Reply {
    pub fn status(status: u16, body: &str) -> Reply {
        Reply::Full(status, Vec::new(), body.as_bytes().to_vec())
    }
    pub fn json(body: &str) -> Reply {
        Reply::Full(
            200,
            vec![("Content-Type".into(), "application/json".into())],
            body.as_bytes().to_vec(),
        )
    }
    pub fn redirect(location: &str) -> Reply {
        Reply::Full(
            301,
            vec![("Location".into(), location.to_string())],
            Vec::new(),
        )
    }
    pub fn bytes(body: &[u8]) -> Reply {
        Reply::Full(200, Vec::new(), body.to_vec())
    }
}

type Script = dyn Fn(&Req) -> Reply + Send + Sync;

/// The server; it stops accepting when the test process ends.
pub struct Routes {
    pub addr: SocketAddr,
    /// Every request seen, as `METHOD TARGET`.
    pub seen: Arc<Mutex<Vec<String>>>,
}

impl Routes {
    pub fn start(script: impl Fn(&Req) -> Reply + Send + Sync + 'static) -> Routes {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Script> = Arc::new(script);
        let s = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(conn) = conn else { return };
                let (script, seen) = (script.clone(), s.clone());
                std::thread::spawn(move || serve(conn, &*script, &seen));
            }
        });
        Routes { addr, seen }
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }
}

fn serve(mut c: TcpStream, script: &Script, seen: &Mutex<Vec<String>>) {
    let _ = c.set_read_timeout(Some(Duration::from_secs(30)));
    let mut buf = Vec::new();
    loop {
        let end = loop {
            if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            let mut chunk = [0u8; 8192];
            match c.read(&mut chunk) {
                Ok(0) | Err(_) => return,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buf[..end]).to_string();
        buf.drain(..end + 4);
        let mut lines = head.split("\r\n");
        let mut start = lines.next().unwrap_or("").split(' ');
        let req = Req {
            method: start.next().unwrap_or("").to_string(),
            target: start.next().unwrap_or("").to_string(),
            head: lines
                .map(|l| match l.split_once(':') {
                    Some((n, v)) => format!("{}: {}\n", n.to_ascii_lowercase(), v.trim()),
                    None => String::new(),
                })
                .collect(),
        };
        seen.lock()
            .unwrap()
            .push(format!("{} {}", req.method, req.target));
        let body_len: usize = req
            .head
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0);
        // A body behind `Expect: 100-continue` is never asked for: answer
        // and close.
        let expect = req.head.contains("expect: 100-continue");
        if body_len > 0 && !expect {
            while buf.len() < body_len {
                let mut chunk = [0u8; 65536];
                match c.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
            buf.drain(..body_len);
        }
        match script(&req) {
            Reply::Full(status, fields, body) => {
                let mut out = format!("HTTP/1.1 {status} X\r\n");
                for (n, v) in fields {
                    out.push_str(&format!("{n}: {v}\r\n"));
                }
                let close = expect && body_len > 0;
                if close {
                    out.push_str("Connection: close\r\n");
                }
                out.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
                let mut bytes = out.into_bytes();
                if req.method != "HEAD" {
                    bytes.extend_from_slice(&body);
                }
                if c.write_all(&bytes).is_err() || close {
                    return;
                }
            }
            Reply::Stall { len, first } => {
                let head = format!("HTTP/1.1 200 OK\r\nContent-Length: {len}\r\n\r\n");
                let _ = c.write_all(head.as_bytes());
                let _ = c.write_all(&first);
                std::thread::sleep(Duration::from_secs(30));
                return;
            }
        }
    }
}
