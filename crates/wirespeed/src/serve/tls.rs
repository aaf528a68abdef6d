//! `serve`'s TLS options: a certificate from files, or a self-signed one
//! naming every address and name the server is reached by.

use std::path::PathBuf;

use anyhow::Context;

use super::ServeArgs;

/// The acceptor asked for on the command line.
pub struct Tls {
    pub acceptor: wirespeed_tls::Acceptor,
    /// `--tls-self-signed`: the certificate's path and SHA-256 fingerprint.
    pub cert: Option<(PathBuf, String)>,
    /// The fresh folder holding a per-start certificate (0700, a random
    /// name, never reused); removed when dropped, i.e. when `serve` ends.
    pub temp_dir: Option<tempfile::TempDir>,
}

/// `names`: what a self-signed certificate names beyond localhost,
/// 127.0.0.1 and ::1 (the bind's addresses, the host names, --tls-name).
pub fn acceptor(args: &ServeArgs, names: &[String]) -> anyhow::Result<Option<Tls>> {
    if let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) {
        let acceptor = wirespeed_tls::server_from_files(cert, key).with_context(|| {
            format!(
                "loading TLS certificate {} and key {}",
                cert.display(),
                key.display()
            )
        })?;
        return Ok(Some(Tls {
            acceptor,
            cert: None,
            temp_dir: None,
        }));
    }
    if !args.tls_self_signed {
        return Ok(None);
    }
    if let Some(dir) = &args.tls_cert_dir {
        let (acceptor, cert, fingerprint, kept) =
            wirespeed_tls::server_self_signed_kept(dir, names).with_context(|| {
                format!("preparing a self-signed certificate in {}", dir.display())
            })?;
        crate::notice::say(&format!("certificate: {kept}"));
        return Ok(Some(Tls {
            acceptor,
            cert: Some((cert, fingerprint)),
            temp_dir: None,
        }));
    }
    // A predictable `$TMPDIR/wirespeed-tls-<pid>` could be made beforehand
    // by another user (and was reused if it existed): a fresh private one.
    let mut folder = tempfile::Builder::new();
    folder.prefix("wirespeed-tls-");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        folder.permissions(std::fs::Permissions::from_mode(0o700));
    }
    let dir = folder
        .tempdir()
        .context("creating a folder for the certificate in the system temp dir")?;
    let (acceptor, cert, fingerprint) = wirespeed_tls::server_self_signed_for(dir.path(), names)
        .with_context(|| {
            format!(
                "generating a self-signed certificate in {}",
                dir.path().display()
            )
        })?;
    Ok(Some(Tls {
        acceptor,
        cert: Some((cert, fingerprint)),
        temp_dir: Some(dir),
    }))
}
