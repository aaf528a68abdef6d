//! `serve --tls-self-signed --tls-cert-dir DIR`: the certificate and key kept
//! in DIR are reused while valid and naming the right hosts, and replaced
//! (saying why) when missing, expired, for other names, or unusable.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use wirespeed_tls::{
    self_signed_kept, KeptCert, Renewal, SELF_SIGNED_CERT_FILE, SELF_SIGNED_KEY_FILE,
};

/// Store a certificate for `names` valid from `from` to `to` (days from
/// now), with its key, as a previous run would have.
fn store(dir: &Path, names: &[&str], from: i64, to: i64) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap();
    let now = time::OffsetDateTime::now_utc();
    params.not_before = now + time::Duration::days(from);
    params.not_after = now + time::Duration::days(to);
    let cert = params.self_signed(&key).unwrap();
    std::fs::write(dir.join(SELF_SIGNED_CERT_FILE), cert.pem()).unwrap();
    let key_path = dir.join(SELF_SIGNED_KEY_FILE);
    std::fs::write(&key_path, key.serialize_pem()).unwrap();
    std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

const NAMES: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

#[test]
fn made_once_then_reused() {
    let tmp = tempfile::tempdir().unwrap();
    let (first, kept) = self_signed_kept(tmp.path()).unwrap();
    assert_eq!(kept, KeptCert::Created(Renewal::Missing));
    let mode = std::fs::metadata(tmp.path().join(SELF_SIGNED_KEY_FILE))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the key is private to its owner");
    let (second, kept) = self_signed_kept(tmp.path()).unwrap();
    assert!(matches!(kept, KeptCert::Reused { .. }), "{kept:?}");
    assert!(kept
        .to_string()
        .starts_with("reused the stored certificate"));
    assert_eq!(first.fingerprint, second.fingerprint);
    assert_eq!(second.cert_path, tmp.path().join(SELF_SIGNED_CERT_FILE));
    // No temporary files left in the folder.
    let mut names: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, [SELF_SIGNED_KEY_FILE, SELF_SIGNED_CERT_FILE]);
}

#[test]
fn a_valid_stored_certificate_from_elsewhere_is_reused() {
    let tmp = tempfile::tempdir().unwrap();
    store(tmp.path(), &NAMES, -1, 365);
    let (_, kept) = self_signed_kept(tmp.path()).unwrap();
    assert!(matches!(kept, KeptCert::Reused { .. }), "{kept:?}");
}

#[test]
fn expired_or_ending_soon_is_replaced() {
    for (from, to) in [(-30, -1), (-30, 3), (10, 400)] {
        let tmp = tempfile::tempdir().unwrap();
        store(tmp.path(), &NAMES, from, to);
        let before = std::fs::read(tmp.path().join(SELF_SIGNED_CERT_FILE)).unwrap();
        let (_, kept) = self_signed_kept(tmp.path()).unwrap();
        assert!(
            matches!(kept, KeptCert::Created(Renewal::Expired { .. })),
            "{from}..{to}: {kept:?}"
        );
        assert!(kept.to_string().contains("clients must trust the new one"));
        let after = std::fs::read(tmp.path().join(SELF_SIGNED_CERT_FILE)).unwrap();
        assert_ne!(before, after, "a new certificate was stored");
        let (_, again) = self_signed_kept(tmp.path()).unwrap();
        assert!(matches!(again, KeptCert::Reused { .. }), "{again:?}");
    }
}

#[test]
fn other_names_are_replaced() {
    let tmp = tempfile::tempdir().unwrap();
    store(tmp.path(), &["files.example", "localhost"], -1, 365);
    let (_, kept) = self_signed_kept(tmp.path()).unwrap();
    assert_eq!(kept, KeptCert::Created(Renewal::OtherNames));
}

#[test]
fn unusable_pairs_are_replaced() {
    // A key that belongs to another certificate.
    let tmp = tempfile::tempdir().unwrap();
    store(tmp.path(), &NAMES, -1, 365);
    let other = tempfile::tempdir().unwrap();
    store(other.path(), &NAMES, -1, 365);
    std::fs::copy(
        other.path().join(SELF_SIGNED_KEY_FILE),
        tmp.path().join(SELF_SIGNED_KEY_FILE),
    )
    .unwrap();
    let (_, kept) = self_signed_kept(tmp.path()).unwrap();
    assert!(
        matches!(&kept, KeptCert::Created(Renewal::Unusable(why)) if why.contains("key does not fit")),
        "{kept:?}"
    );
    // A key file other users may read is not trusted.
    let tmp = tempfile::tempdir().unwrap();
    store(tmp.path(), &NAMES, -1, 365);
    let key_path = tmp.path().join(SELF_SIGNED_KEY_FILE);
    std::fs::set_permissions(&key_path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (_, kept) = self_signed_kept(tmp.path()).unwrap();
    assert!(
        matches!(&kept, KeptCert::Created(Renewal::Unusable(why)) if why.contains("other users")),
        "{kept:?}"
    );
    let mode = std::fs::metadata(&key_path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // Garbage in the certificate file.
    let tmp = tempfile::tempdir().unwrap();
    store(tmp.path(), &NAMES, -1, 365);
    std::fs::write(tmp.path().join(SELF_SIGNED_CERT_FILE), b"not a pem").unwrap();
    let (_, kept) = self_signed_kept(tmp.path()).unwrap();
    assert!(
        matches!(kept, KeptCert::Created(Renewal::Unusable(_))),
        "{kept:?}"
    );
}
