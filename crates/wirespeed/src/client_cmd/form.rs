//! `put --form`: the server's JSON answer to a form upload turned into the
//! same report as a PUT's (where the file landed, its size, and the
//! sha-256 the server computed checked against the file's).

use std::path::Path;

use anyhow::{bail, Context};
use sha2::Digest;
use wirespeed_client::transfer::{self, UploadReport};
use wirespeed_client::Url;

/// What the server's form answer says about the one file sent.
#[derive(Debug, PartialEq, Eq)]
pub struct Stored {
    /// The stored file's path on the server (`/photos/a.jpg`).
    pub path: String,
    pub size: u64,
    /// The server's sha-256 of what it stored, when it computed one.
    pub sha256: Option<[u8; 32]>,
}

/// Parse `{"files": [{"name", "path", "size", "sha256"?}, …]}` for the one file.
pub fn parse_answer(text: &str) -> anyhow::Result<Stored> {
    let v: serde_json::Value =
        serde_json::from_str(text).context("the server's answer is not a form upload's JSON")?;
    let Some(f) = v["files"].as_array().and_then(|a| a.first()) else {
        bail!("the server's answer lists no stored file");
    };
    let (Some(path), Some(size)) = (f["path"].as_str(), f["size"].as_u64()) else {
        bail!("the server's answer has no path or size for the file");
    };
    let sha256 = match f["sha256"].as_str() {
        None => None,
        Some(h) => Some(unhex(h).context("the server's sha256 is not 64 hex digits")?),
    };
    Ok(Stored {
        path: path.to_string(),
        size,
        sha256,
    })
}

fn unhex(h: &str) -> Option<[u8; 32]> {
    if h.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(h.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The report of a form upload of `file` to `target` answered `status` + `text`:
/// the file is hashed here (unless `no_verify`) and must match the server's sum.
pub async fn report(
    target: &Url,
    file: &Path,
    status: u16,
    text: &str,
    no_verify: bool,
) -> anyhow::Result<UploadReport> {
    let stored = parse_answer(text)?;
    let url = target.resolve(&stored.path)?;
    let ours: Option<[u8; 32]> = if no_verify {
        None
    } else {
        Some(
            transfer::hash_file(file, None, None)
                .await?
                .finalize()
                .into(),
        )
    };
    if let (Some(o), Some(s)) = (ours, stored.sha256) {
        if o != s {
            bail!(
                "the server stored different bytes: sha-256 {} here, {} on the server",
                transfer::hex(&o),
                transfer::hex(&s)
            );
        }
    }
    Ok(UploadReport {
        parallel: None,
        url,
        status,
        bytes: stored.size,
        sha256: ours,
        server_sha256: stored.sha256,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers() {
        let hex = "ab".repeat(32);
        let s = parse_answer(&format!(
            r#"{{"files":[{{"name":"a b.txt","path":"/d/a%20b.txt","size":5,"sha256":"{hex}","created":true}}],"fields":{{}}}}"#
        ))
        .unwrap();
        assert_eq!(
            s,
            Stored {
                path: "/d/a%20b.txt".into(),
                size: 5,
                sha256: Some([0xab; 32])
            }
        );
        let s = parse_answer(r#"{"files":[{"path":"/x","size":0}]}"#).unwrap();
        assert_eq!(s.sha256, None);
        assert!(parse_answer("stored").is_err());
        assert!(parse_answer(r#"{"files":[]}"#).is_err());
        assert!(parse_answer(r#"{"files":[{"path":"/x","size":1,"sha256":"zz"}]}"#).is_err());
    }
}
