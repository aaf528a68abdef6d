//! External programs used as independent peers (installed by `.ci/run`).

/// Run curl (`-sS`, 30 s limit); returns (exit ok, stdout).
pub fn curl(args: &[&str]) -> (bool, Vec<u8>) {
    let out = std::process::Command::new("curl")
        .args(["-sS", "--max-time", "30"])
        .args(args)
        .output()
        .expect("run curl");
    if !out.status.success() {
        eprintln!("curl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    (out.status.success(), out.stdout)
}

/// A tool a test needs is missing: under `CI=true` that is a failure (CI
/// installs every one), elsewhere a loud SKIPPED and `None`.
pub fn missing<T>(msg: &str) -> Option<T> {
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{msg}");
    }
    eprintln!("\n!!!!!! SKIPPED: {msg} !!!!!!\n");
    None
}
