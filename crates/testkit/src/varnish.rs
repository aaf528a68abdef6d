//! Varnish Cache in front of a server under test, with its built-in
//! configuration (`-b`: one backend, the default VCL): a caching proxy
//! nobody here wrote, on a free loopback port, stopped on drop.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `varnishd -F` (foreground, no jail: one process tree as this
/// user, its working folder a temp folder).
pub struct Varnish {
    child: Child,
    /// Where it listens (127.0.0.1).
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Drop for Varnish {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Varnish {
    /// Varnish caching `upstream`, or `None` with a loud SKIPPED where it
    /// is absent outside CI (`bash .ci/run` installs it; with `CI=true`
    /// its absence fails).
    pub fn cache(upstream: SocketAddr) -> Option<Varnish> {
        let Some(bin) = binary() else {
            let msg = "varnishd not found (`bash .ci/run` installs it)";
            return crate::tools::missing(msg);
        };
        let dir = crate::fs::tempdir();
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("bind 127.0.0.1:0")
                .port();
            let addr: SocketAddr = ([127, 0, 0, 1], port).into();
            let mut child = Command::new(&bin)
                .args(["-F", "-j", "none", "-s", "malloc,64m"])
                .arg("-n")
                .arg(dir.path().join("work"))
                .arg("-a")
                .arg(addr.to_string())
                .arg("-b")
                .arg(upstream.to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start varnishd");
            // Its child process compiles the VCL first: give it time.
            let until = Instant::now() + Duration::from_secs(30);
            while Instant::now() < until {
                if let Ok(Some(_)) = child.try_wait() {
                    break; // the port was taken meanwhile: another one
                }
                if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                    return Some(Varnish {
                        child,
                        addr,
                        _dir: dir,
                    });
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!("varnishd did not start");
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }
}

fn binary() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
        .map(|d| d.join("varnishd"))
        .find(|p| p.is_file())
}
