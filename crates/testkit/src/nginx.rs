//! nginx as a reverse proxy (or cache) in front of a server under test: a
//! peer nobody here wrote, started from a temporary config on a free
//! loopback port and stopped on drop.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running nginx (`daemon off`, no master: one process as this user, so
/// killing it leaves nothing behind).
pub struct Nginx {
    child: Child,
    /// Where it listens (127.0.0.1).
    pub addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Nginx {
    /// nginx proxying to `upstream` with `location` directives added to its
    /// `location /` block (and `http` directives to its `http` block; `@DIR@`
    /// in either is nginx's own temp folder, e.g. for `proxy_cache_path`), or
    /// `None` with a loud SKIPPED where nginx is absent outside CI
    /// (`bash .ci/run` installs it; with `CI=true` its absence fails).
    pub fn proxy(upstream: SocketAddr, http: &str, location: &str) -> Option<Nginx> {
        let location = format!(
            "location / {{
      proxy_pass http://{upstream};
      proxy_http_version 1.1;
      proxy_set_header Connection \"\";
      proxy_set_header Host $http_host;
      {location}
    }}"
        );
        Self::serving(http, &location)
    }

    /// nginx whose `server` block holds `server` as written (its
    /// `location` blocks, e.g. one copied from the docs), and `http`
    /// directives in its `http` block; `@DIR@` as in [`Nginx::proxy`].
    pub fn serving(http: &str, server: &str) -> Option<Nginx> {
        let Some(bin) = binary() else {
            let msg = "nginx not found (`bash .ci/run` installs it)";
            return crate::tools::missing(msg);
        };
        let dir = crate::fs::tempdir();
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("bind 127.0.0.1:0")
                .port();
            let addr: SocketAddr = ([127, 0, 0, 1], port).into();
            let here = dir.path().display().to_string();
            let conf = config(
                dir.path(),
                addr,
                &http.replace("@DIR@", &here),
                &server.replace("@DIR@", &here),
            );
            std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
            let mut child = Command::new(&bin)
                .arg("-p")
                .arg(dir.path())
                .arg("-c")
                .arg(dir.path().join("nginx.conf"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start nginx");
            let until = Instant::now() + Duration::from_secs(10);
            while Instant::now() < until {
                if let Ok(Some(_)) = child.try_wait() {
                    break; // the port was taken meanwhile: another one
                }
                if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                    return Some(Nginx { child, addr, dir });
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!(
            "nginx did not start: {}",
            std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default()
        );
    }

    /// `http://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// nginx's error log so far (for failure messages).
    pub fn error_log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("error.log")).unwrap_or_default()
    }
}

fn binary() -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into()])
        .map(|d| d.join("nginx"))
        .find(|p| p.is_file())
}

fn config(dir: &Path, addr: SocketAddr, http: &str, server: &str) -> String {
    let d = dir.display();
    format!(
        "worker_processes 1;
daemon off;
master_process off;
error_log {d}/error.log info;
pid {d}/nginx.pid;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {d}/body;
  proxy_temp_path {d}/proxy;
  fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi;
  scgi_temp_path {d}/scgi;
  client_max_body_size 0;
  {http}
  server {{
    listen {addr};
    {server}
  }}
}}
"
    )
}
