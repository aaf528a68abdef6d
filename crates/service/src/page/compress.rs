//! gzip for what the server generates or embeds (listings, the page's
//! assets) when the client accepts it; never for stored files, whose bytes
//! leave by sendfile with exact ranges. Deciding is sans-IO; the encoder
//! is flate2's (miniz_oxide, pure Rust).

use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;

/// Whether an `Accept-Encoding` value accepts gzip: its own q-value, else
/// `*`'s, above zero (RFC 9110 §12.5.3).
pub fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    let Some(v) = accept_encoding else {
        return false;
    };
    let (mut gzip, mut any) = (None, None);
    for part in v.split(',') {
        let mut it = part.split(';');
        let coding = it.next().unwrap_or("").trim();
        let mut ok = true;
        for param in it {
            if let Some((k, q)) = param.split_once('=') {
                if k.trim().eq_ignore_ascii_case("q") {
                    ok = q.trim().parse::<f32>().is_ok_and(|q| q > 0.0);
                }
            }
        }
        if coding.eq_ignore_ascii_case("gzip") || coding.eq_ignore_ascii_case("x-gzip") {
            gzip = Some(ok);
        } else if coding == "*" {
            any = Some(ok);
        }
    }
    gzip.or(any).unwrap_or(false)
}

/// Level for listings, compressed as they are generated: fast (a 10,000
/// entry listing shrinks about 12x; see bench/RESULTS.md, "Listing gzip").
const LISTING_LEVEL: u32 = 1;

/// A gzip stream over generated text: `push` text, `take` what is ready.
pub struct Gzip {
    enc: GzEncoder<Vec<u8>>,
}

impl Default for Gzip {
    fn default() -> Self {
        Self::new()
    }
}

impl Gzip {
    pub fn new() -> Self {
        Gzip {
            enc: GzEncoder::new(
                Vec::with_capacity(16 * 1024),
                Compression::new(LISTING_LEVEL),
            ),
        }
    }

    /// Compress `text`; the output so far is in [`Gzip::ready`].
    pub fn push(&mut self, text: &[u8]) -> std::io::Result<()> {
        self.enc.write_all(text)
    }

    /// The compressed bytes produced so far (take them, then `clear`).
    pub fn ready(&mut self) -> &mut Vec<u8> {
        self.enc.get_mut()
    }

    /// The rest of the stream (the last block and the gzip trailer).
    pub fn finish(self) -> std::io::Result<Vec<u8>> {
        self.enc.finish()
    }
}

/// `bytes` gzipped whole, at the best level (embedded assets, done once).
pub fn gzip_all(bytes: &[u8]) -> Vec<u8> {
    let mut enc = GzEncoder::new(Vec::new(), Compression::best());
    // Writing to a Vec cannot fail.
    let _ = enc.write_all(bytes);
    enc.finish().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn accept_encoding() {
        for (v, want) in [
            (None, false),
            (Some(""), false),
            (Some("gzip"), true),
            (Some("GZIP"), true),
            (Some("gzip, deflate, br"), true),
            (Some("br;q=1.0, gzip;q=0.8, *;q=0.1"), true),
            (Some("gzip;q=0"), false),
            (Some("gzip;q=0, *"), false),
            (Some("*"), true),
            (Some("*;q=0"), false),
            (Some("identity"), false),
            (Some("br"), false),
            (Some("x-gzip"), true),
        ] {
            assert_eq!(accepts_gzip(v), want, "{v:?}");
        }
    }

    #[test]
    fn streams_round_trip() {
        let mut g = Gzip::new();
        let mut out = Vec::new();
        for i in 0..5000 {
            g.push(format!("<tr><td>entry {i}</td></tr>\n").as_bytes())
                .unwrap();
            out.append(g.ready());
        }
        out.extend(g.finish().unwrap());
        let mut back = String::new();
        flate2::read::GzDecoder::new(&out[..])
            .read_to_string(&mut back)
            .unwrap();
        assert_eq!(back.lines().count(), 5000);
        assert!(
            out.len() * 5 < back.len(),
            "{} vs {}",
            out.len(),
            back.len()
        );
        let whole = gzip_all(back.as_bytes());
        let mut again = String::new();
        flate2::read::GzDecoder::new(&whole[..])
            .read_to_string(&mut again)
            .unwrap();
        assert_eq!(again, back);
    }
}
