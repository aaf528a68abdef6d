//! `--cacert` pinning through real handshakes: the client config that
//! `client_config` builds against a server config from `server_config`,
//! connected in memory.

use std::path::Path;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConnection, ServerConnection};
use wirespeed_tls::{client_config, describe_tls_error, server_config, ClientTls};

struct Generated {
    der: CertificateDer<'static>,
    pem: String,
    key: PrivateKeyDer<'static>,
}

fn generate(params: CertificateParams) -> Generated {
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    Generated {
        der: cert.der().clone(),
        pem: cert.pem(),
        key: PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
    }
}

/// What `openssl req -x509 -subj /CN=localhost -addext subjectAltName=…` makes:
/// self-signed, CA:TRUE, names localhost and 127.0.0.1.
fn ca_true_params() -> CertificateParams {
    let mut p = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name
        .push(rcgen::DnType::CommonName, "localhost");
    p
}

fn write_pem(dir: &Path, name: &str, pem: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, pem).unwrap();
    path
}

/// Handshake in memory; the client's error if it refuses.
fn handshake(
    cacert: &Path,
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
    host: &str,
) -> Result<(), rustls::Error> {
    let ccfg = client_config(&ClientTls {
        cacert: Some(cacert.to_path_buf()),
        insecure_accept_anything: false,
    })
    .unwrap();
    let scfg = Arc::new(server_config(chain, key).unwrap());
    let mut client = ClientConnection::new(ccfg, ServerName::try_from(host.to_string()).unwrap())?;
    let mut server = ServerConnection::new(scfg).unwrap();
    for _ in 0..16 {
        let mut wire = Vec::new();
        while client.wants_write() {
            client.write_tls(&mut wire).unwrap();
        }
        let mut rd = &wire[..];
        while !rd.is_empty() {
            server.read_tls(&mut rd).unwrap();
            // A server-side failure here is only the echo of the client's alert.
            if server.process_new_packets().is_err() {
                break;
            }
        }
        let mut wire = Vec::new();
        while server.wants_write() {
            server.write_tls(&mut wire).unwrap();
        }
        let mut rd = &wire[..];
        while !rd.is_empty() {
            client.read_tls(&mut rd).unwrap();
            client.process_new_packets()?;
        }
        if !client.is_handshaking() && !server.is_handshaking() {
            return Ok(());
        }
    }
    panic!("handshake did not finish");
}

#[test]
fn ca_true_self_signed_certificate_is_accepted_when_pinned() {
    let dir = tempfile::tempdir().unwrap();
    let g = generate(ca_true_params());
    let cacert = write_pem(dir.path(), "c.pem", &g.pem);
    for host in ["localhost", "127.0.0.1"] {
        handshake(&cacert, vec![g.der.clone()], g.key.clone_key(), host)
            .unwrap_or_else(|e| panic!("{host}: {}", describe_tls_error(&e)));
    }
}

#[test]
fn pinned_certificate_for_another_host_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let g = generate(ca_true_params());
    let cacert = write_pem(dir.path(), "c.pem", &g.pem);
    for host in ["example.org", "::1", "10.0.0.1"] {
        let err = handshake(&cacert, vec![g.der.clone()], g.key.clone_key(), host).unwrap_err();
        let msg = describe_tls_error(&err);
        assert_eq!(
            msg,
            format!("the server's certificate (pinned via --cacert) is not valid for host {host}")
        );
    }
}

#[test]
fn expired_or_future_pinned_certificate_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let mut p = ca_true_params();
    p.not_before = rcgen::date_time_ymd(2020, 1, 1);
    p.not_after = rcgen::date_time_ymd(2021, 6, 30);
    let g = generate(p);
    let cacert = write_pem(dir.path(), "old.pem", &g.pem);
    let err = handshake(&cacert, vec![g.der.clone()], g.key, "localhost").unwrap_err();
    assert_eq!(
        describe_tls_error(&err),
        "the server's certificate matches --cacert but expired on 2021-06-30 00:00:00 UTC"
    );

    let mut p = ca_true_params();
    p.not_before = rcgen::date_time_ymd(2300, 1, 1);
    p.not_after = rcgen::date_time_ymd(2301, 1, 1);
    let g = generate(p);
    let cacert = write_pem(dir.path(), "future.pem", &g.pem);
    let err = handshake(&cacert, vec![g.der.clone()], g.key, "localhost").unwrap_err();
    assert_eq!(
        describe_tls_error(&err),
        "the server's certificate matches --cacert but is not valid before 2300-01-01 00:00:00 UTC"
    );
}

#[test]
fn unrelated_certificate_in_cacert_is_refused_by_webpki() {
    let dir = tempfile::tempdir().unwrap();
    let other = generate(ca_true_params());
    let cacert = write_pem(dir.path(), "other.pem", &other.pem);
    // A plain end-entity certificate nobody vouched for.
    let server = generate(CertificateParams::new(vec!["localhost".into()]).unwrap());
    let err = handshake(&cacert, vec![server.der], server.key, "localhost").unwrap_err();
    assert_eq!(
        err,
        rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer)
    );
    assert_eq!(
        describe_tls_error(&err),
        "invalid peer certificate: UnknownIssuer"
    );
    // A CA:TRUE one that is not the pinned one: webpki's verdict, readable.
    let server = generate(ca_true_params());
    let err = handshake(&cacert, vec![server.der], server.key, "localhost").unwrap_err();
    assert_eq!(
        describe_tls_error(&err),
        "invalid peer certificate: the server presented a CA certificate as its own \
         (CaUsedAsEndEntity); to trust it, give exactly that certificate with --cacert"
    );
}

#[test]
fn leaf_issued_by_a_cacert_ca_still_verifies_as_a_chain() {
    let dir = tempfile::tempdir().unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "test CA");
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".into()])
        .unwrap()
        .signed_by(&leaf_key, &ca, &ca_key)
        .unwrap();
    let cacert = write_pem(dir.path(), "ca.pem", &ca.pem());
    let key = PrivateKeyDer::try_from(leaf_key.serialize_der()).unwrap();
    handshake(
        &cacert,
        vec![leaf.der().clone()],
        key.clone_key(),
        "localhost",
    )
    .unwrap();
    // The normal path still checks names too.
    let err = handshake(&cacert, vec![leaf.der().clone()], key, "example.org").unwrap_err();
    assert!(
        matches!(
            err,
            rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForNameContext { .. }
            )
        ),
        "{err:?}"
    );
}

#[test]
fn certificate_from_openssl_req_x509_is_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let run = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
        ])
        .args(["-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output();
    let out = match run {
        Ok(out) => out,
        Err(e) => {
            println!("skipped: openssl is not available ({e})");
            return;
        }
    };
    assert!(
        out.status.success(),
        "openssl failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let chain = wirespeed_tls::load_certs(&cert).unwrap();
    let key = wirespeed_tls::load_key(&key).unwrap();
    for host in ["localhost", "127.0.0.1"] {
        handshake(&cert, chain.clone(), key.clone_key(), host)
            .unwrap_or_else(|e| panic!("{host}: {}", describe_tls_error(&e)));
    }
    let err = handshake(&cert, chain, key, "example.org").unwrap_err();
    assert!(describe_tls_error(&err).contains("not valid for host example.org"));
}
