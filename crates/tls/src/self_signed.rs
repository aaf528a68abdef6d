//! Self-signed certificates for `localhost`, `127.0.0.1` and `::1` (plus
//! any names and addresses the caller adds, e.g. the machine's): made
//! fresh ([`self_signed`]) or kept in a folder and reused while valid
//! ([`self_signed_kept`]), and their SHA-256 [`fingerprint`].

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::ServerConfig;
use sha2::{Digest, Sha256};

use crate::acceptor::Acceptor;
use crate::config::{load_certs, load_key, server_config};
use crate::pinned::{self, validity};
use crate::TlsError;

/// File name of the certificate written by [`server_self_signed`].
pub const SELF_SIGNED_CERT_FILE: &str = "wirespeed-self-signed.pem";

/// File name of the private key kept by [`server_self_signed_kept`] (mode 0600).
pub const SELF_SIGNED_KEY_FILE: &str = "wirespeed-self-signed-key.pem";

/// The names every self-signed certificate is made for.
const SELF_SIGNED_NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// [`SELF_SIGNED_NAMES`] and `extra` (host names or IP addresses), each once.
fn all_names(extra: &[String]) -> Vec<String> {
    let mut names: Vec<String> = SELF_SIGNED_NAMES.iter().map(|n| n.to_string()).collect();
    for n in extra {
        let n = n.trim().to_ascii_lowercase();
        if !n.is_empty() && !names.contains(&n) {
            names.push(n);
        }
    }
    names
}

/// A kept certificate this close to its end is replaced at start, so a
/// server started today does not stop working tomorrow.
const RENEW_BEFORE_SECS: i64 = 7 * 24 * 3600;

/// A freshly generated self-signed certificate.
pub struct SelfSigned {
    pub config: ServerConfig,
    /// Where the certificate (PEM) was written; pass it to clients as `--cacert`.
    pub cert_path: PathBuf,
    /// SHA-256 of the certificate (DER), `AB:CD:…` as `openssl x509 -fingerprint -sha256` prints it.
    pub fingerprint: String,
}

/// Generate a certificate for `localhost`, `127.0.0.1` and `::1`, write it
/// (not the key, which stays in memory) to `dir/wirespeed-self-signed.pem`.
pub fn self_signed(dir: &Path) -> Result<SelfSigned, TlsError> {
    self_signed_for(dir, &[])
}

/// [`self_signed`], also naming `extra` host names and IP addresses.
pub fn self_signed_for(dir: &Path, extra: &[String]) -> Result<SelfSigned, TlsError> {
    let (cert, key) = generate(&all_names(extra))?;
    let cert_path = dir.join(SELF_SIGNED_CERT_FILE);
    write_atomically(dir, SELF_SIGNED_CERT_FILE, cert.pem().as_bytes(), 0o644)?;
    finish(cert.der().clone(), key.serialize_der(), cert_path)
}

/// A certificate naming `names` (IP addresses become IP subject alternative names).
fn generate(names: &[String]) -> Result<(rcgen::Certificate, rcgen::KeyPair), TlsError> {
    let rcgen::CertifiedKey { cert, key_pair } =
        rcgen::generate_simple_self_signed(names.to_vec())?;
    Ok((cert, key_pair))
}

fn finish(
    der: CertificateDer<'static>,
    key_der: Vec<u8>,
    cert_path: PathBuf,
) -> Result<SelfSigned, TlsError> {
    let fingerprint = fingerprint(&der);
    let key = PrivateKeyDer::try_from(key_der)
        .map_err(|e| TlsError::Rustls(rustls::Error::General(e.to_string())))?;
    let config = server_config(vec![der], key)?;
    Ok(SelfSigned {
        config,
        cert_path,
        fingerprint,
    })
}

/// Write `dir/name` through a temporary file and a rename, so a reader never
/// sees half a file; `mode` applies from the first byte (keys: 0600).
fn write_atomically(dir: &Path, name: &str, data: &[u8], mode: u32) -> Result<(), TlsError> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let path = dir.join(name);
    let write_err = |source| TlsError::Write {
        path: path.clone(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(write_err)?;
    let tmp = dir.join(format!(".{name}.tmp"));
    let _ = std::fs::remove_file(&tmp);
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    opts.mode(mode);
    #[cfg(not(unix))]
    let _ = mode;
    let mut f = opts.open(&tmp).map_err(write_err)?;
    f.write_all(data).map_err(write_err)?;
    f.sync_all().map_err(write_err)?;
    drop(f);
    std::fs::rename(&tmp, &path).map_err(write_err)
}

/// What [`server_self_signed_kept`] did with the folder's certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeptCert {
    /// The stored one was valid and is used again; valid until (UNIX seconds).
    Reused { not_after: i64 },
    /// A new one was made and stored, for this reason.
    Created(Renewal),
}

/// Why a new certificate was made instead of reusing the stored one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Renewal {
    /// No certificate and key in the folder yet.
    Missing,
    /// Expired, not yet valid, or ending within a week (end, UNIX seconds).
    Expired { not_after: i64 },
    /// It does not name every name and address asked for (localhost,
    /// 127.0.0.1, ::1 and the caller's).
    OtherNames,
    /// Unreadable, a key that does not match it, or a key others may read.
    Unusable(String),
}

impl std::fmt::Display for KeptCert {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeptCert::Reused { not_after } => write!(
                f,
                "reused the stored certificate (valid until {})",
                pinned::format_time(*not_after)
            ),
            KeptCert::Created(Renewal::Missing) => {
                f.write_str("made a new certificate (none stored yet)")
            }
            KeptCert::Created(Renewal::Expired { not_after }) => write!(
                f,
                "made a new certificate (the stored one ends {}); clients must trust the new one",
                pinned::format_time(*not_after)
            ),
            KeptCert::Created(Renewal::OtherNames) => f.write_str(
                "made a new certificate (the stored one does not name all of this server's \
                 names and addresses); clients must trust the new one",
            ),
            KeptCert::Created(Renewal::Unusable(why)) => write!(
                f,
                "made a new certificate (the stored one is unusable: {why}); clients must trust the new one"
            ),
        }
    }
}

/// The certificate and key stored in `dir`, if they can serve now.
fn stored(dir: &Path, now: i64, names: &[String]) -> Result<(SelfSigned, i64), Renewal> {
    let cert_path = dir.join(SELF_SIGNED_CERT_FILE);
    let key_path = dir.join(SELF_SIGNED_KEY_FILE);
    if !cert_path.exists() || !key_path.exists() {
        return Err(Renewal::Missing);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_path)
            .map_err(|e| Renewal::Unusable(e.to_string()))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(Renewal::Unusable(format!(
                "its key file is open to other users (mode {:o})",
                mode & 0o777
            )));
        }
    }
    let der = load_certs(&cert_path)
        .map_err(|e| Renewal::Unusable(e.to_string()))?
        .swap_remove(0);
    let (not_before, not_after) = validity(&der).map_err(|e| Renewal::Unusable(e.to_string()))?;
    if now < not_before || now + RENEW_BEFORE_SECS >= not_after {
        return Err(Renewal::Expired { not_after });
    }
    let cert =
        webpki::EndEntityCert::try_from(&der).map_err(|e| Renewal::Unusable(format!("{e:?}")))?;
    for name in names {
        let name =
            ServerName::try_from(name.as_str()).map_err(|e| Renewal::Unusable(e.to_string()))?;
        if cert.verify_is_valid_for_subject_name(&name).is_err() {
            return Err(Renewal::OtherNames);
        }
    }
    let key = load_key(&key_path).map_err(|e| Renewal::Unusable(e.to_string()))?;
    let fp = fingerprint(&der);
    // rustls refuses a key that does not belong to the certificate.
    let config = server_config(vec![der], key)
        .map_err(|e| Renewal::Unusable(format!("the key does not fit the certificate ({e})")))?;
    Ok((
        SelfSigned {
            config,
            cert_path,
            fingerprint: fp,
        },
        not_after,
    ))
}

/// Like [`self_signed`], but the certificate and its key (mode 0600) are
/// kept in `dir` and reused while valid for at least a week and naming
/// `localhost`, `127.0.0.1` and `::1`; otherwise a new pair replaces them.
/// Says which happened. Give it only a folder that only this user can write.
pub fn self_signed_kept(dir: &Path) -> Result<(SelfSigned, KeptCert), TlsError> {
    self_signed_kept_for(dir, &[])
}

/// [`self_signed_kept`], also naming `extra`: a stored certificate missing
/// one of them is replaced.
pub fn self_signed_kept_for(
    dir: &Path,
    extra: &[String],
) -> Result<(SelfSigned, KeptCert), TlsError> {
    let now = UnixTime::now().as_secs() as i64;
    let names = all_names(extra);
    let why = match stored(dir, now, &names) {
        Ok((s, not_after)) => return Ok((s, KeptCert::Reused { not_after })),
        Err(why) => why,
    };
    let (cert, key) = generate(&names)?;
    let key_der = key.serialize_der();
    // The key first: a crash between the two writes leaves a pair that does
    // not match, which the next start replaces.
    write_atomically(
        dir,
        SELF_SIGNED_KEY_FILE,
        key.serialize_pem().as_bytes(),
        0o600,
    )?;
    write_atomically(dir, SELF_SIGNED_CERT_FILE, cert.pem().as_bytes(), 0o644)?;
    let s = finish(cert.der().clone(), key_der, dir.join(SELF_SIGNED_CERT_FILE))?;
    Ok((s, KeptCert::Created(why)))
}

/// `serve --tls-self-signed`: an acceptor, the certificate's path and its
/// SHA-256 fingerprint (print both so users can `--cacert` or compare).
pub fn server_self_signed(dir: &Path) -> Result<(Acceptor, PathBuf, String), TlsError> {
    server_self_signed_for(dir, &[])
}

/// [`server_self_signed`], also naming `extra` host names and addresses.
pub fn server_self_signed_for(
    dir: &Path,
    extra: &[String],
) -> Result<(Acceptor, PathBuf, String), TlsError> {
    let s = self_signed_for(dir, extra)?;
    Ok((Acceptor::new(s.config), s.cert_path, s.fingerprint))
}

/// `serve --tls-self-signed --tls-cert-dir DIR`: [`self_signed_kept`] as an
/// acceptor, with the certificate's path, fingerprint and what was done.
pub fn server_self_signed_kept(
    dir: &Path,
    extra: &[String],
) -> Result<(Acceptor, PathBuf, String, KeptCert), TlsError> {
    let (s, kept) = self_signed_kept_for(dir, extra)?;
    Ok((Acceptor::new(s.config), s.cert_path, s.fingerprint, kept))
}

/// SHA-256 fingerprint of a DER certificate, uppercase hex pairs joined by `:`.
pub fn fingerprint(der: &[u8]) -> String {
    let digest = Sha256::digest(der);
    let mut out = String::with_capacity(95);
    for (i, b) in digest.iter().enumerate() {
        if i > 0 {
            out.push(':');
        }
        let _ = write!(out, "{b:02X}");
    }
    out
}
