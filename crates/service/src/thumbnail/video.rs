//! A video's thumbnail: one frame about a tenth of the way in, taken by
//! `ffmpeg` when it is installed (as copyparty does), then made a thumbnail
//! like any picture. The file goes to ffmpeg as its standard input and is
//! opened again as `/dev/stdin`, so it stays seekable and no path of the
//! served tree is handed to another program.

use std::fs::File;
use std::io::Read as _;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use super::make::MakeError;

/// How long ffmpeg (or ffprobe) may take for one frame.
const DEADLINE: Duration = Duration::from_secs(20);

/// Whether `ffmpeg` and `ffprobe` are on the PATH (looked up once).
pub fn available() -> bool {
    static FOUND: OnceLock<bool> = OnceLock::new();
    *FOUND.get_or_init(|| on_path("ffmpeg") && on_path("ffprobe"))
}

fn on_path(program: &str) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(program))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// A PNG of the frame a tenth of the way into the video in `file`.
pub fn frame(file: &File) -> Result<Vec<u8>, MakeError> {
    if !available() {
        return Err(MakeError::Unsupported);
    }
    let duration = run(
        file,
        Command::new("ffprobe").args([
            "-v",
            "error",
            "-show_entries",
            "format=duration",
            "-of",
            "csv=p=0",
            "-i",
            "/dev/stdin",
        ]),
    )?;
    let seconds: f64 = std::str::from_utf8(&duration)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|s: &f64| s.is_finite() && *s > 0.0)
        .unwrap_or(0.0);
    let at = format!("{:.3}", seconds / 10.0);
    let png = run(
        file,
        Command::new("ffmpeg").args([
            "-v",
            "error",
            "-nostdin",
            "-ss",
            &at,
            "-i",
            "/dev/stdin",
            "-frames:v",
            "1",
            "-vf",
            "scale=512:512:force_original_aspect_ratio=decrease",
            "-f",
            "image2pipe",
            "-c:v",
            "png",
            "pipe:1",
        ]),
    )?;
    if png.is_empty() {
        return Err(MakeError::Corrupt("ffmpeg gave no frame".into()));
    }
    Ok(png)
}

/// Runs `cmd` with `file` as its input and returns what it printed; killed
/// past [`DEADLINE`].
fn run(file: &File, cmd: &mut Command) -> Result<Vec<u8>, MakeError> {
    let input = file
        .try_clone()
        .map_err(|e| MakeError::Corrupt(e.to_string()))?;
    let mut child = cmd
        .stdin(Stdio::from(input))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|_| MakeError::Unsupported)?;
    let Some(mut out) = child.stdout.take() else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(MakeError::Unsupported);
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        // A frame of 512 px as PNG is well under this.
        let r = (&mut out).take(16 << 20).read_to_end(&mut bytes);
        let _ = tx.send(r.map(|_| bytes));
    });
    let got = rx.recv_timeout(DEADLINE);
    if got.is_err() {
        let _ = child.kill();
    }
    let status = child.wait();
    match (got, status) {
        (Ok(Ok(bytes)), Ok(s)) if s.success() => Ok(bytes),
        _ => Err(MakeError::Corrupt(
            "ffmpeg could not read this video".into(),
        )),
    }
}
