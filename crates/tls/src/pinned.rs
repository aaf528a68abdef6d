//! `--cacert` as curl reads it: a certificate in the file is trusted as a
//! root *and*, when the server presents exactly that certificate, as a pinned
//! end-entity certificate.
//!
//! The second half matters for `openssl req -x509 …`: OpenSSL marks such a
//! certificate `CA:TRUE`, and webpki refuses a CA certificate as the server's
//! own (`CaUsedAsEndEntity`). A byte-identical match needs no chain building
//! (the user vouched for these exact bytes), so [`PinnedOrWebPki`] accepts it
//! after the checks that still mean something for a pinned certificate: the
//! validity period and the host name. Handshake signatures are always
//! verified with the provider's algorithms, and every other certificate goes
//! to the normal [`WebPkiServerVerifier`] built from the same roots.
//!
//! # Parsing
//!
//! The name check is webpki's own (`EndEntityCert::verify_is_valid_for_subject_name`).
//! webpki does not expose the validity period, so [`validity`] reads the two
//! timestamps with a minimal DER walk rather than pulling a full X.509
//! parser (x509-parser brings nom, asn1-rs, der-parser and oid-registry) for
//! two fields. It only ever sees a certificate that webpki has already
//! parsed successfully, follows fixed positions in `TBSCertificate`, checks
//! every length against the input and returns an error instead of panicking.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::CryptoProvider;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// Why a pinned certificate (one byte-identical to a `--cacert` certificate)
/// was refused. Carried in `CertificateError::Other`, so its `Display` is
/// what the user reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PinnedCertError {
    #[error("the server's certificate matches --cacert but expired on {}", format_time(*.not_after))]
    Expired { not_after: i64 },
    #[error("the server's certificate matches --cacert but is not valid before {}", format_time(*.not_before))]
    NotYetValid { not_before: i64 },
    #[error("the server's certificate (pinned via --cacert) is not valid for host {host}")]
    WrongHost { host: String },
    #[error("the server's certificate matches --cacert but cannot be read: {0}")]
    Unreadable(String),
}

/// `2026-01-31 12:00:00 UTC`, or the raw number if out of `time`'s range.
pub(crate) fn format_time(unix: i64) -> String {
    match time::OffsetDateTime::from_unix_timestamp(unix) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02}:{:02} UTC",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second()
        ),
        Err(_) => format!("{unix} (UNIX time)"),
    }
}

fn refuse(e: PinnedCertError) -> rustls::Error {
    rustls::Error::InvalidCertificate(CertificateError::Other(rustls::OtherError(Arc::new(e))))
}

/// The text a person should read for a handshake error: our pinned-cert
/// messages as they are, other certificate errors without rustls' Debug
/// wrapping (`Other(OtherError(CaUsedAsEndEntity))` becomes `CaUsedAsEndEntity`).
pub fn describe_tls_error(e: &rustls::Error) -> String {
    if let rustls::Error::InvalidCertificate(CertificateError::Other(other)) = e {
        if let Some(pinned) = other.0.downcast_ref::<PinnedCertError>() {
            return pinned.to_string();
        }
        if let Some(webpki::Error::CaUsedAsEndEntity) = other.0.downcast_ref::<webpki::Error>() {
            return "invalid peer certificate: the server presented a CA certificate as its own \
                    (CaUsedAsEndEntity); to trust it, give exactly that certificate with --cacert"
                .to_string();
        }
        return format!("invalid peer certificate: {other}");
    }
    e.to_string()
}

/// A server verifier that accepts a certificate byte-identical to one in
/// `pinned` (after validity and host checks) and hands every other one to
/// webpki.
#[derive(Debug)]
pub struct PinnedOrWebPki {
    pinned: Vec<CertificateDer<'static>>,
    webpki: Arc<WebPkiServerVerifier>,
    provider: Arc<CryptoProvider>,
}

impl PinnedOrWebPki {
    /// `roots` should already contain `pinned` (as trust anchors), so a chain
    /// issued by a pinned CA certificate still verifies the normal way.
    pub fn new(
        pinned: Vec<CertificateDer<'static>>,
        roots: Arc<RootCertStore>,
        provider: Arc<CryptoProvider>,
    ) -> Result<Self, rustls::Error> {
        let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider.clone())
            .build()
            .map_err(|e| rustls::Error::General(format!("certificate verifier: {e}")))?;
        Ok(PinnedOrWebPki {
            pinned,
            webpki,
            provider,
        })
    }

    fn verify_pinned(
        end_entity: &CertificateDer<'_>,
        server_name: &ServerName<'_>,
        now: UnixTime,
    ) -> Result<(), PinnedCertError> {
        let (not_before, not_after) = validity(end_entity)?;
        let now = i64::try_from(now.as_secs()).unwrap_or(i64::MAX);
        if now < not_before {
            return Err(PinnedCertError::NotYetValid { not_before });
        }
        if now > not_after {
            return Err(PinnedCertError::Expired { not_after });
        }
        let cert = webpki::EndEntityCert::try_from(end_entity)
            .map_err(|e| PinnedCertError::Unreadable(format!("{e:?}")))?;
        cert.verify_is_valid_for_subject_name(server_name)
            .map_err(|_| PinnedCertError::WrongHost {
                host: server_name.to_str().into_owned(),
            })
    }
}

impl ServerCertVerifier for PinnedOrWebPki {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self
            .pinned
            .iter()
            .any(|p| p.as_ref() == end_entity.as_ref())
        {
            Self::verify_pinned(end_entity, server_name, now).map_err(refuse)?;
            return Ok(ServerCertVerified::assertion());
        }
        self.webpki
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

// ---- validity ---------------------------------------------------------------

/// One DER TLV from the front of `input`: (tag, contents, rest).
fn tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        // Long form: the low bits say how many length bytes follow.
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, &b| (acc << 8) | usize::from(b));
        rest = &rest[n..];
        len
    };
    if rest.len() < len {
        return None;
    }
    let (value, rest) = rest.split_at(len);
    Some((tag, value, rest))
}

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const VERSION: u8 = 0xa0;
const UTC_TIME: u8 = 0x17;
const GENERALIZED_TIME: u8 = 0x18;

/// `notBefore` and `notAfter` of a DER certificate, as UNIX seconds.
///
/// `Certificate ::= SEQUENCE { tbsCertificate SEQUENCE { [0] version OPTIONAL,
/// serialNumber INTEGER, signature AlgorithmIdentifier, issuer Name,
/// validity SEQUENCE { notBefore Time, notAfter Time }, … }, … }` (RFC 5280 §4.1).
pub fn validity(der: &[u8]) -> Result<(i64, i64), PinnedCertError> {
    let bad = |what: &str| PinnedCertError::Unreadable(format!("no valid {what}"));
    let walk = || -> Option<(&[u8], &[u8])> {
        let (tag, cert, _) = tlv(der)?;
        (tag == SEQUENCE).then_some(())?;
        let (tag, tbs, _) = tlv(cert)?;
        (tag == SEQUENCE).then_some(())?;
        let (mut tag, _, mut rest) = tlv(tbs)?;
        if tag == VERSION {
            (tag, _, rest) = tlv(rest)?;
        }
        // serialNumber, then the signature AlgorithmIdentifier.
        (tag == INTEGER).then_some(())?;
        let (tag, _, rest) = tlv(rest)?;
        (tag == SEQUENCE).then_some(())?;
        let (tag, _, rest) = tlv(rest)?;
        (tag == SEQUENCE).then_some(())?;
        let (tag, validity, _) = tlv(rest)?;
        (tag == SEQUENCE).then_some(())?;
        let (t1, not_before, rest) = tlv(validity)?;
        let (t2, not_after, _) = tlv(rest)?;
        let is_time = |t| t == UTC_TIME || t == GENERALIZED_TIME;
        (is_time(t1) && is_time(t2)).then_some((not_before, not_after))
    };
    let (nb, na) = walk().ok_or_else(|| bad("validity period"))?;
    let not_before = parse_time(nb).ok_or_else(|| bad("notBefore time"))?;
    let not_after = parse_time(na).ok_or_else(|| bad("notAfter time"))?;
    Ok((not_before, not_after))
}

/// RFC 5280 §4.1.2.5: UTCTime `YYMMDDHHMMSSZ` (YY < 50 is 20YY) or
/// GeneralizedTime `YYYYMMDDHHMMSSZ`, always in UTC with seconds.
fn parse_time(s: &[u8]) -> Option<i64> {
    let digits = s.strip_suffix(b"Z")?;
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        digits
            .get(r)?
            .iter()
            .try_fold(0u32, |acc, &d| Some(acc * 10 + u32::from(d - b'0')))
    };
    let (year, rest) = match digits.len() {
        12 => {
            let yy = num(0..2)?;
            (if yy < 50 { 2000 + yy } else { 1900 + yy }, 2)
        }
        14 => (num(0..4)?, 4),
        _ => return None,
    };
    let month = u8::try_from(num(rest..rest + 2)?).ok()?;
    let day = u8::try_from(num(rest + 2..rest + 4)?).ok()?;
    let hour = u8::try_from(num(rest + 4..rest + 6)?).ok()?;
    let minute = u8::try_from(num(rest + 6..rest + 8)?).ok()?;
    let second = u8::try_from(num(rest + 8..rest + 10)?).ok()?;
    let date = time::Date::from_calendar_date(
        i32::try_from(year).ok()?,
        time::Month::try_from(month).ok()?,
        day,
    )
    .ok()?;
    let t = time::Time::from_hms(hour, minute, second).ok()?;
    Some(
        time::PrimitiveDateTime::new(date, t)
            .assume_utc()
            .unix_timestamp(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(parse_time(b"700101000000Z"), Some(0));
        assert_eq!(parse_time(b"19700101000000Z"), Some(0));
        assert_eq!(parse_time(b"491231235959Z"), Some(2_524_607_999));
        assert_eq!(parse_time(b"20491231235959Z"), Some(2_524_607_999));
        assert_eq!(parse_time(b"500101000000Z"), Some(-631_152_000));
        for bad in [
            &b""[..],
            b"Z",
            b"700101000000",
            b"7001010000Z",
            b"700101000000+0100",
            b"701301000000Z",
            b"700230000000Z",
            b"700101240000Z",
            b"700101006000Z",
            b"7001010000-0Z",
            b"99991231235959.5Z",
        ] {
            assert_eq!(parse_time(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn validity_of_generated_certificates() {
        for (nb, na) in [
            ((2001, 2, 3), (2030, 4, 5)),
            // From 2050 on, RFC 5280 switches to GeneralizedTime.
            ((1999, 12, 31), (2061, 1, 1)),
        ] {
            let mut params = rcgen::CertificateParams::new(vec!["localhost".into()]).unwrap();
            params.not_before = rcgen::date_time_ymd(nb.0, nb.1, nb.2);
            params.not_after = rcgen::date_time_ymd(na.0, na.1, na.2);
            let want = (
                params.not_before.unix_timestamp(),
                params.not_after.unix_timestamp(),
            );
            let key = rcgen::KeyPair::generate().unwrap();
            let cert = params.self_signed(&key).unwrap();
            assert_eq!(validity(cert.der()).unwrap(), want);
        }
    }

    #[test]
    fn truncated_or_garbage_input_is_an_error() {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let der = cert.der().as_ref();
        for n in 0..der.len() {
            // The validity sits in the first ~200 bytes; any cut before its
            // end must be refused, any cut after may still read it.
            let _ = validity(&der[..n]);
        }
        for n in 0..60 {
            assert!(validity(&der[..n]).is_err(), "cut at {n}");
        }
        assert!(validity(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]).is_err());
        assert!(validity(&[0x30, 0x80]).is_err());
        assert!(validity(b"not a certificate").is_err());
    }

    #[test]
    fn messages_are_readable() {
        let e = refuse(PinnedCertError::Expired {
            not_after: 1_767_225_600,
        });
        assert_eq!(
            describe_tls_error(&e),
            "the server's certificate matches --cacert but expired on 2026-01-01 00:00:00 UTC"
        );
        let e = refuse(PinnedCertError::WrongHost {
            host: "example.org".into(),
        });
        assert_eq!(
            describe_tls_error(&e),
            "the server's certificate (pinned via --cacert) is not valid for host example.org"
        );
        let e = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        assert_eq!(
            describe_tls_error(&e),
            "invalid peer certificate: UnknownIssuer"
        );
    }
}
