//! Modification times kept across transfers, as `wget` and `curl -R` do:
//! a download takes the server's `Last-Modified`, an upload sends the
//! file's own time as `X-OC-Mtime` (Unix seconds, what rclone and
//! ownCloud/WebDAV clients send), which a wirespeed server applies.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

/// The upload field carrying the file's modification time.
pub const FIELD: &str = "X-OC-Mtime";

/// The `X-OC-Mtime` value for a file's modification time: whole Unix
/// seconds (None before 1970 or when the filesystem keeps no time).
pub fn field_value(modified: Option<SystemTime>) -> Option<String> {
    let secs = modified?.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(secs.to_string())
}

/// The modification time a file of `path` has (None if unknown).
pub fn of_file(path: &Path) -> Option<SystemTime> {
    std::fs::metadata(path).ok()?.modified().ok()
}

/// A `Last-Modified` value (an HTTP date) as a time.
pub fn from_last_modified(value: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(value.trim()).ok()
}

/// Give `path` the modification time `t`. Failing to is not worth failing
/// a download for: the caller says so and goes on.
pub fn apply(path: &Path, t: SystemTime) -> std::io::Result<()> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)?
        .set_modified(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn field_values_and_dates() {
        let t = UNIX_EPOCH + Duration::new(1_600_000_000, 999_999_999);
        assert_eq!(field_value(Some(t)).as_deref(), Some("1600000000"));
        assert_eq!(field_value(None), None);
        assert_eq!(field_value(Some(UNIX_EPOCH - Duration::from_secs(1))), None);
        assert_eq!(
            from_last_modified(" Sun, 13 Sep 2020 12:26:40 GMT"),
            Some(UNIX_EPOCH + Duration::from_secs(1_600_000_000))
        );
        assert_eq!(from_last_modified("yesterday"), None);
    }

    #[test]
    fn applies_to_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"x").unwrap();
        let t = UNIX_EPOCH + Duration::from_secs(1_600_000_000);
        apply(&p, t).unwrap();
        assert_eq!(of_file(&p), Some(t));
    }
}
