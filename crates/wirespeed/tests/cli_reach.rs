//! `serve` as reached over a LAN and behind a reverse proxy: every bind
//! answers only its own names and addresses (421 otherwise: a DNS-rebinding
//! guard), the start line on 0.0.0.0 lists the LAN URLs, `--trusted-proxy`
//! (X-Forwarded-For/-Proto, also through a real nginx), default ports in
//! the same-origin check, and the self-signed certificate's names, folder
//! and Ctrl-C (docs: "Serving" and "Behind a reverse proxy").

mod common;

use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream};
use std::time::Duration;

use common::Serve;

/// One request with these exact head lines; (status, whole answer).
fn raw(srv: &Serve, head: &str) -> (u16, String) {
    let mut c = TcpStream::connect(srv.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    c.write_all(head.as_bytes()).unwrap();
    let mut buf = Vec::new();
    let _ = c.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf).to_string();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status in {text:?}"));
    (status, text)
}

fn get_with_host(srv: &Serve, host: &str) -> (u16, String) {
    raw(
        srv,
        &format!("GET /f.txt HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"),
    )
}

/// The machine's IPv4 addresses other hosts can use (what the start line lists).
fn lan_v4() -> Vec<IpAddr> {
    if_addrs::get_if_addrs()
        .unwrap()
        .iter()
        .map(|i| i.ip())
        .filter(|ip| ip.is_ipv4() && !ip.is_loopback())
        .collect()
}

fn node_name() -> String {
    rustix::system::uname()
        .nodename()
        .to_string_lossy()
        .to_ascii_lowercase()
}

#[test]
fn a_wildcard_bind_answers_its_names_and_refuses_a_rebinding_host() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), b"hello").unwrap();
    let lan = lan_v4();
    let mut cmd = Serve::command(dir.path());
    cmd.args(["--no-fsync", "--listen", "0.0.0.0:0"]);
    let srv = Serve::spawn(cmd, lan.len());
    let port = srv.addr.port();
    // The start line hands out the LAN addresses.
    for ip in &lan {
        let line = format!("on your network: http://{ip}:{port}");
        assert!(srv.stdout.contains(&line), "{line} in {:?}", srv.stdout);
    }
    // A DNS-rebinding page: its own name, resolved to this machine.
    let (status, text) = get_with_host(&srv, &format!("rebind.evil.example:{port}"));
    assert_eq!(status, 421, "{text}");
    assert!(text.contains("--allow-host"), "{text}");
    assert!(text.contains("proxy_set_header Host $http_host"), "{text}");
    assert!(!text.contains("hello"));
    // What the server is reached by.
    let node = node_name();
    let mut ok = vec![
        format!("127.0.0.1:{port}"),
        "localhost".to_string(),
        node.clone(),
    ];
    if !node.contains('.') {
        ok.push(format!("{node}.local:{port}"));
    }
    ok.extend(lan.iter().map(|ip| format!("{ip}:{port}")));
    // An IPv4 bind is not reached over IPv6.
    assert_eq!(get_with_host(&srv, &format!("[::1]:{port}")).0, 421);
    for host in ok {
        let (status, text) = get_with_host(&srv, &host);
        assert_eq!(status, 200, "Host: {host}: {text}");
    }
    // Writes too (this bind is read-only without a token: 403, not 421, for
    // a name it answers; 421 for one it does not).
    let put = |host: &str| {
        raw(
            &srv,
            &format!("PUT /g.txt HTTP/1.1\r\nHost: {host}\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx"),
        )
        .0
    };
    assert_eq!(put("rebind.evil.example"), 421);
    assert_eq!(put("localhost"), 403);
}

#[test]
fn allow_host_adds_names_and_star_allows_any() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), b"hello").unwrap();
    let srv = Serve::start(
        dir.path(),
        &["--listen", "0.0.0.0:0", "--allow-host", "files.lan"],
    );
    assert_eq!(get_with_host(&srv, "files.lan:8080").0, 200);
    assert_eq!(get_with_host(&srv, "FILES.LAN.").0, 200);
    assert_eq!(get_with_host(&srv, "other.lan").0, 421);
    drop(srv);
    let srv = Serve::start(dir.path(), &["--listen", "0.0.0.0:0", "--allow-host", "*"]);
    assert_eq!(get_with_host(&srv, "rebind.evil.example").0, 200);
}

#[test]
fn an_https_origin_matches_a_host_with_its_default_port() {
    let dir = tempfile::tempdir().unwrap();
    let srv = Serve::start(dir.path(), &["--allow-host", "files.lan"]);
    let put = |origin: &str, host: &str, extra: &str| {
        raw(
            &srv,
            &format!(
                "PUT /g.txt HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\n{extra}\
                 Content-Length: 1\r\nConnection: close\r\n\r\nx"
            ),
        )
        .0
    };
    // A TLS proxy passing `Host: files.lan:443` (its default port spelled out): the same origin.
    assert!(matches!(
        put("https://files.lan", "files.lan:443", ""),
        201 | 204
    ));
    assert!(matches!(
        put("https://files.lan:443", "files.lan", ""),
        201 | 204
    ));
    assert_eq!(put("http://files.lan", "files.lan:443", ""), 403);
    // X-Forwarded-Proto counts only from a trusted proxy.
    assert!(matches!(
        put(
            "http://files.lan",
            "files.lan",
            "X-Forwarded-Proto: https\r\n"
        ),
        201 | 204
    ));
    drop(srv);
    let srv = Serve::start(
        dir.path(),
        &["--allow-host", "files.lan", "--trusted-proxy", "127.0.0.1"],
    );
    let put = |origin: &str, host: &str, extra: &str| {
        raw(
            &srv,
            &format!(
                "PUT /g.txt HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\n{extra}\
                 Content-Length: 1\r\nConnection: close\r\n\r\nx"
            ),
        )
        .0
    };
    assert_eq!(
        put(
            "http://files.lan",
            "files.lan",
            "X-Forwarded-Proto: https\r\n"
        ),
        403
    );
    assert!(matches!(
        put(
            "https://files.lan",
            "files.lan",
            "X-Forwarded-Proto: https\r\n"
        ),
        201 | 204
    ));
}

/// The access lines' JSON in `stderr`.
fn access_lines(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| l.contains(r#""target":"wirespeed::access""#))
        .map(str::to_string)
        .collect()
}

#[test]
fn forwarded_for_names_the_client_only_from_a_trusted_proxy() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), b"hello").unwrap();
    let head = "GET /f.txt HTTP/1.1\r\nHost: localhost\r\n\
                X-Forwarded-For: 6.6.6.6, 198.51.100.7\r\nConnection: close\r\n\r\n";
    let srv = Serve::start(dir.path(), &["--log-format", "json"]);
    assert_eq!(raw(&srv, head).0, 200);
    // The line is written within the log's 100 ms sweep; waiting for it
    // keeps this test about the client field, not about the stop.
    srv.wait_stderr(r#""target":"wirespeed::access""#);
    let lines = access_lines(&srv.stop());
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(!lines[0].contains("198.51.100.7"), "{}", lines[0]);
    assert!(!lines[0].contains(r#""client""#), "{}", lines[0]);

    let srv = Serve::start(
        dir.path(),
        &["--log-format", "json", "--trusted-proxy", "127.0.0.0/8"],
    );
    assert_eq!(raw(&srv, head).0, 200);
    srv.wait_stderr(r#""target":"wirespeed::access""#);
    let lines = access_lines(&srv.stop());
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(r#""client":"198.51.100.7""#),
        "{}",
        lines[0]
    );
    assert!(lines[0].contains(r#""peer":"127.0.0.1:"#), "{}", lines[0]);
}

#[test]
fn nginx_in_front_forwards_the_client_address() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), b"hello").unwrap();
    let srv = Serve::start(
        dir.path(),
        &["--log-format", "json", "--trusted-proxy", "127.0.0.1"],
    );
    let Some(nginx) = wirespeed_testkit::nginx::Nginx::proxy(
        srv.addr,
        "",
        "proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n\
         proxy_set_header X-Forwarded-Proto $scheme;",
    ) else {
        return;
    };
    // The client claims an address; nginx appends the one it saw (127.0.0.1,
    // a trusted proxy here too, so the walk goes on to the claim: in a real
    // deployment the client's address is not a trusted one).
    let (ok, body) = wirespeed_testkit::tools::curl(&[
        "-H",
        "X-Forwarded-For: 203.0.113.5",
        &format!("{}/f.txt", nginx.base()),
    ]);
    assert!(ok);
    assert_eq!(body, b"hello");
    let lines = access_lines(&srv.stop());
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(
        lines[0].contains(r#""client":"203.0.113.5""#),
        "{}",
        lines[0]
    );
}

#[test]
fn trusted_proxies_are_exempt_from_the_per_ip_cap() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), b"hello").unwrap();
    let hold = |srv: &Serve| {
        let c = TcpStream::connect(srv.addr).unwrap();
        // A byte of a head: admitted and busy, not yet a request.
        (&c).write_all(b"G").unwrap();
        c
    };
    let srv = Serve::start(dir.path(), &["--max-connections-per-ip", "1"]);
    let _held = hold(&srv);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(get_with_host(&srv, "localhost").0, 503);
    drop(srv);
    let srv = Serve::start(
        dir.path(),
        &[
            "--max-connections-per-ip",
            "1",
            "--trusted-proxy",
            "127.0.0.1",
        ],
    );
    let _held = hold(&srv);
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(get_with_host(&srv, "localhost").0, 200);
}

#[test]
fn self_signed_names_this_machine_and_leaves_no_folder() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = Serve::command(dir.path());
    cmd.env("TMPDIR", tmp.path()).args([
        "--no-fsync",
        "--listen",
        "0.0.0.0:0",
        "--tls-self-signed",
        "--tls-name",
        "files.example.net",
    ]);
    let srv = Serve::spawn(cmd, 2 + lan_v4().len());
    let cert = srv.stdout[1]
        .strip_prefix("certificate: ")
        .unwrap()
        .to_string();
    let folder = std::path::Path::new(&cert).parent().unwrap().to_path_buf();
    assert!(folder.starts_with(tmp.path()), "{cert}");
    assert!(
        !folder.ends_with(format!("wirespeed-tls-{}", srv.child.id())),
        "a predictable name: {cert}"
    );
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&folder).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700, "{folder:?}");
    }
    let text = Command::new("openssl")
        .args(["x509", "-noout", "-ext", "subjectAltName", "-in", &cert])
        .output()
        .expect("run openssl");
    let sans = String::from_utf8_lossy(&text.stdout).to_string();
    let node = node_name();
    let mut want = vec![
        "DNS:localhost".to_string(),
        "IP Address:127.0.0.1".to_string(),
        "DNS:files.example.net".to_string(),
        format!("DNS:{node}"),
    ];
    want.extend(lan_v4().iter().map(|ip| format!("IP Address:{ip}")));
    for w in want {
        assert!(sans.contains(&w), "{w} in {sans}");
    }
    // A client pinning the certificate reaches the server by those names
    // (verified by curl, and answered: --tls-name is a Host it accepts).
    let port = srv.addr.port();
    for name in ["files.example.net", node.as_str()] {
        let (ok, body) = wirespeed_testkit::tools::curl(&[
            "--cacert",
            &cert,
            "--resolve",
            &format!("{name}:{port}:127.0.0.1"),
            &format!("https://{name}:{port}/-/health"),
        ]);
        assert!(ok, "https://{name}");
        assert_eq!(body, b"ok\n");
    }
    // Stopped with SIGTERM: the folder goes with the server.
    let stderr = srv.stop();
    assert!(stderr.contains("stopping: "), "{stderr}");
    assert!(!folder.exists(), "left behind: {folder:?}");
}

#[test]
fn ctrl_c_says_what_it_finishes_and_a_second_stops_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let mut srv = Serve::start(dir.path(), &["--shutdown-grace", "60"]);
    // A PUT in progress: its head and half its body.
    let mut c = TcpStream::connect(srv.addr).unwrap();
    c.write_all(b"PUT /slow.bin HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100\r\n\r\n01234")
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let pid = rustix::process::Pid::from_child(&srv.child);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let said = srv.wait_stderr("stopping: ");
    assert!(
        said.contains("stopping: finishing 1 transfer (up to 60 s; Ctrl-C again to stop now)"),
        "{said}"
    );
    // Still waiting for the transfer; a second Ctrl-C ends it at once.
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        srv.child.try_wait().unwrap().is_none(),
        "stopped before the grace"
    );
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let until = std::time::Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(s) = srv.child.try_wait().unwrap() {
            break s;
        }
        assert!(
            std::time::Instant::now() < until,
            "a second Ctrl-C did not stop it"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(130));
    assert!(!dir.path().join("slow.bin").exists());
}

use std::process::Command;

/// The algorithms of the established TCP sockets whose local port is `port`
/// (`ss -ti` names each socket's congestion control).
fn congestion_of_sockets_on(port: u16) -> String {
    let out = Command::new("ss")
        .args([
            "-tinH",
            "state",
            "established",
            "sport",
            "=",
            &format!(":{port}"),
        ])
        .output()
        .expect("ss (iproute2) runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn congestion_control_is_set_on_accepted_sockets_and_said_at_start() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("f.txt"), b"hello").unwrap();
    // reno: always built in and never a distribution's default, so seeing it
    // on the socket proves the server set it.
    let srv = Serve::start(dir.path(), &["--congestion-control", "reno"]);
    srv.wait_stderr("congestion control: reno");
    let mut c = TcpStream::connect(srv.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    c.write_all(b"GET /f.txt HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .unwrap();
    let mut buf = [0u8; 512];
    let n = c.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).contains("hello"));
    let ss = congestion_of_sockets_on(srv.addr.port());
    assert!(ss.contains(" reno "), "the server's socket runs reno: {ss}");
    drop(c);
    drop(srv);
    // `system` leaves the namespace's default, and says which it is.
    let system = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control").unwrap();
    let srv = Serve::start(dir.path(), &["--congestion-control", "system"]);
    srv.wait_stderr(&format!("congestion control: system ({})", system.trim()));
    drop(srv);
    // A name the kernel does not offer stops the start with the reason.
    let out = Serve::command(dir.path())
        .args([
            "--listen",
            "127.0.0.1:0",
            "--congestion-control",
            "nosuchcc",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("\"nosuchcc\" is not available") && err.contains("modprobe tcp_nosuchcc"),
        "{err}"
    );
}

/// One of the kernel's congestion control lists, split.
fn kernel_list(name: &str) -> Vec<String> {
    std::fs::read_to_string(format!("/proc/sys/net/ipv4/{name}"))
        .unwrap_or_default()
        .split_ascii_whitespace()
        .map(str::to_string)
        .collect()
}

/// `serve` inside a network namespace of its own whose default algorithm is
/// reno (every kernel has it and allows it), as uid 65534 when `as_nobody`
/// (the kernel lets an unprivileged user set only the algorithms in
/// `net.ipv4.tcp_allowed_congestion_control`); the server's pid is the
/// namespace's handle.
fn serve_in_namespace(
    dir: &std::path::Path,
    bin: &std::path::Path,
    as_nobody: bool,
    cc: &[&str],
) -> Serve {
    let mut cmd = Command::new("unshare");
    cmd.args(["--net", "--", "sh", "-c"])
        .arg(
            "ip link set lo up && echo reno > /proc/sys/net/ipv4/tcp_congestion_control && exec \"$@\"",
        )
        .arg("sh");
    if as_nobody {
        cmd.args([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ]);
    }
    cmd.arg(bin)
        .arg("serve")
        .arg(dir)
        .args(["--no-fsync", "--listen", "127.0.0.1:0"])
        .args(cc)
        .env_remove("WIRESPEED_TOKEN")
        .env_remove("RUST_LOG");
    Serve::spawn(cmd, 0)
}

/// From inside the server's namespace: GET /f.txt on a connection held
/// open while `ss` names the algorithm of the server's socket; (status
/// line, `ss` output).
fn congestion_seen_in_namespace(srv: &Serve) -> (String, String) {
    let script = format!(
        "exec 3<>/dev/tcp/127.0.0.1/{port}\n\
         printf 'GET /f.txt HTTP/1.1\\r\\nHost: localhost\\r\\n\\r\\n' >&3\n\
         IFS= read -r -t 10 status <&3\n\
         echo \"$status\"\n\
         ss -tinH state established sport = :{port}\n",
        port = srv.addr.port()
    );
    let out = Command::new("timeout")
        .args(["20", "nsenter"])
        .arg(format!("--net=/proc/{}/ns/net", srv.child.id()))
        .args(["--", "bash", "-c", &script])
        .output()
        .expect("nsenter runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (status, ss) = text.split_once('\n').unwrap_or((&text, ""));
    (status.to_string(), ss.to_string())
}

#[test]
fn congestion_control_falls_back_in_a_namespace_that_does_not_allow_it() {
    use std::os::unix::fs::PermissionsExt;
    if !rustix::process::geteuid().is_root() {
        skip_without("root (a network namespace of the test's own, a server run as uid 65534)");
        return;
    }
    // Where this machine forbids new network namespaces (a container
    // without CAP_SYS_ADMIN), there is nothing to test here.
    let can_unshare = Command::new("unshare")
        .args(["--net", "true"])
        .status()
        .is_ok_and(|s| s.success());
    if !can_unshare {
        eprintln!(
            "\n!!!!!! SKIPPED: this machine makes no network namespaces (unshare --net) !!!!!!\n"
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.path().join("f.txt"), b"hello").unwrap();
    let Some((_bin_dir, bin)) =
        common::binary_for_other_users().filter(|_| common::others_can_reach(dir.path()))
    else {
        skip_without("a temp folder uid 65534 can reach");
        return;
    };
    let available = kernel_list("tcp_available_congestion_control");
    let allowed = kernel_list("tcp_allowed_congestion_control");
    let host_default = kernel_list("tcp_congestion_control");
    // What the kernel lets an ordinary user set: the allowed list and the
    // defaults (a default is always allowed).
    let unprivileged_may =
        |a: &str| allowed.iter().chain(&host_default).any(|x| x == a) || a == "reno";

    // Root, the default request: bbr where the kernel offers it, else the
    // namespace's default with the reason.
    let srv = serve_in_namespace(dir.path(), &bin, false, &[]);
    let bbr = available.iter().any(|a| a == "bbr");
    let (line, want) = if bbr {
        ("congestion control: bbr".to_string(), " bbr ")
    } else {
        (
            "congestion control: system (reno); passed over bbr".to_string(),
            " reno ",
        )
    };
    srv.wait_stderr(&line);
    let (status, ss) = congestion_seen_in_namespace(&srv);
    assert!(status.contains(" 200 "), "{status:?}");
    assert!(ss.contains(want), "the server's socket runs{want}: {ss}");
    drop(srv);

    // uid 65534 asking first for an algorithm the kernel offers but does not
    // allow to it: passed over (the kernel says EPERM), the start line says
    // why, and its sockets keep the namespace's default.
    let Some(refused) = available.iter().find(|a| !unprivileged_may(a)) else {
        eprintln!(
            "\n!!!!!! SKIPPED the refusal half: every algorithm this kernel offers ({available:?}) is \
             allowed to ordinary users !!!!!!\n"
        );
        return;
    };
    let request = format!("{refused},system");
    let srv = serve_in_namespace(dir.path(), &bin, true, &["--congestion-control", &request]);
    srv.wait_stderr(&format!(
        "congestion control: system (reno); passed over {refused}: not allowed here"
    ));
    let (status, ss) = congestion_seen_in_namespace(&srv);
    assert!(status.contains(" 200 "), "{status:?}");
    assert!(ss.contains(" reno "), "the fallback runs reno: {ss}");
    drop(srv);
    // Without the fallback the same refusal stops the start, saying why.
    let out = Command::new("timeout")
        .arg("20")
        .args([
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
        ])
        .arg(&bin)
        .arg("serve")
        .arg(dir.path())
        .args(["--listen", "127.0.0.1:0", "--congestion-control", refused])
        .env_remove("WIRESPEED_TOKEN")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("not allowed here"), "{err}");
    // And where bbr itself is what the kernel refuses ordinary users, the
    // default request falls back the same way.
    if bbr && !unprivileged_may("bbr") {
        let srv = serve_in_namespace(dir.path(), &bin, true, &[]);
        srv.wait_stderr("congestion control: system (reno); passed over bbr: not allowed here");
    }
}

/// Skip, loudly, where the machine lacks what the test needs (root, a
/// temp folder another user can reach): a limit of the place it runs in,
/// not a missing tool CI would install.
fn skip_without(what: &str) {
    eprintln!("\n!!!!!! SKIPPED: needs {what} !!!!!!\n");
}
