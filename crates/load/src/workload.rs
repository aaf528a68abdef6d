//! What the load is made of: the request mix, object sizes and names, the
//! ranges asked for. Pure functions of the seed and a [`Rng`](crate::gen::Rng).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::gen::{object_key, wymix, Rng};

/// The kinds of request the load sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// GET of a whole object, every byte verified.
    Get,
    /// PUT of a whole object, generated while sent.
    Put,
    /// GET with `Range: bytes=a-b`, the 206 answer verified at its offset.
    Range,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Get, Kind::Put, Kind::Range];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Get => "get",
            Kind::Put => "put",
            Kind::Range => "range",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }
}

/// Why a `--mix` or `--size` value was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("mix entry {0:?} is not KIND=WEIGHT (e.g. get=50,put=50,range=10)")]
    MixEntry(String),
    #[error("unknown request kind {0:?} in the mix (use get, put, range)")]
    MixKind(String),
    #[error("weight {0:?} in the mix is not a whole number")]
    MixWeight(String),
    #[error("{0} appears twice in the mix")]
    MixRepeated(&'static str),
    #[error("the mix has no weight above 0")]
    MixEmpty,
    #[error("size range {min}-{max}: the smallest size is larger than the largest")]
    SizeOrder { min: u64, max: u64 },
    #[error("object sizes must be at least 1 byte")]
    SizeZero,
}

/// Relative weights of the request kinds (`get=50,put=50,range=10`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mix {
    weights: [u32; 3],
}

impl Mix {
    pub fn weight(&self, k: Kind) -> u32 {
        self.weights[k.index()]
    }

    /// The kind for a uniform random number `r`.
    pub fn pick(&self, r: u64) -> Kind {
        let total: u64 = self.weights.iter().map(|&w| w as u64).sum();
        let mut x = r % total.max(1);
        for k in Kind::ALL {
            let w = self.weight(k) as u64;
            if x < w {
                return k;
            }
            x -= w;
        }
        Kind::Get
    }

    /// Whether any request reads (GET or range) and so needs objects in place.
    pub fn reads(&self) -> bool {
        self.weight(Kind::Get) > 0 || self.weight(Kind::Range) > 0
    }
}

impl Default for Mix {
    fn default() -> Mix {
        Mix {
            weights: [50, 50, 0],
        }
    }
}

impl FromStr for Mix {
    type Err = SpecError;
    fn from_str(s: &str) -> Result<Mix, SpecError> {
        let mut weights = [0u32; 3];
        let mut given = [false; 3];
        for entry in s.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (k, w) = entry
                .split_once('=')
                .ok_or_else(|| SpecError::MixEntry(entry.to_string()))?;
            let kind = match k.trim().to_ascii_lowercase().as_str() {
                "get" => Kind::Get,
                "put" => Kind::Put,
                "range" => Kind::Range,
                _ => return Err(SpecError::MixKind(k.trim().to_string())),
            };
            let w: u32 = w
                .trim()
                .parse()
                .map_err(|_| SpecError::MixWeight(w.trim().to_string()))?;
            if std::mem::replace(&mut given[kind.index()], true) {
                return Err(SpecError::MixRepeated(kind.name()));
            }
            weights[kind.index()] = w;
        }
        if weights.iter().all(|&w| w == 0) {
            return Err(SpecError::MixEmpty);
        }
        Ok(Mix { weights })
    }
}

impl fmt::Display for Mix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = Kind::ALL
            .iter()
            .filter(|k| self.weight(**k) > 0)
            .map(|k| format!("{}={}", k.name(), self.weight(*k)))
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// Object sizes: uniform in `min..=max` (a fixed size when equal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeRange {
    pub min: u64,
    pub max: u64,
}

impl SizeRange {
    pub fn new(min: u64, max: u64) -> Result<SizeRange, SpecError> {
        if min == 0 {
            return Err(SpecError::SizeZero);
        }
        if min > max {
            return Err(SpecError::SizeOrder { min, max });
        }
        Ok(SizeRange { min, max })
    }

    /// The size of object `id`: fixed per (seed, id), so every PUT of a name
    /// writes the same bytes and a GET racing a PUT still verifies.
    pub fn size_of(&self, seed: u64, id: u64) -> u64 {
        let span = self.max - self.min;
        if span == 0 {
            return self.min;
        }
        let r = wymix(object_key(seed, id), 0x2d35_8dcc_aa6c_78a5);
        self.min + r % (span + 1)
    }
}

/// The name of object `id` under `seed` (appended to the URL's prefix).
pub fn object_name(seed: u64, id: u64) -> String {
    format!("load-{seed}-{id}.bin")
}

/// Longest range asked for: big enough to stream, small enough that ranges
/// stay a different workload from whole GETs.
pub const MAX_RANGE: u64 = 4 << 20;

/// A random `start..end` inside an object of `size > 0` bytes.
pub fn pick_range(rng: &mut Rng, size: u64) -> (u64, u64) {
    let start = rng.below(size);
    let len = 1 + rng.below((size - start).min(MAX_RANGE));
    (start, start + len)
}

/// Parse `Content-Range: bytes a-b/total` into (a, b + 1, total).
pub fn parse_content_range(v: &[u8]) -> Option<(u64, u64, u64)> {
    let s = std::str::from_utf8(v).ok()?.trim();
    let rest = s.strip_prefix("bytes ")?;
    let (span, total) = rest.split_once('/')?;
    let (a, b) = span.split_once('-')?;
    let (a, b, total): (u64, u64, u64) = (a.parse().ok()?, b.parse().ok()?, total.parse().ok()?);
    (a <= b && b < total).then_some((a, b + 1, total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mix_parses_and_picks_by_weight() {
        let m: Mix = "get=50, put=30,range=20".parse().unwrap();
        assert_eq!(
            [
                m.weight(Kind::Get),
                m.weight(Kind::Put),
                m.weight(Kind::Range)
            ],
            [50, 30, 20]
        );
        assert_eq!(m.to_string(), "get=50,put=30,range=20");
        let mut n = [0u32; 3];
        for r in 0..100u64 {
            n[m.pick(r).index()] += 1;
        }
        assert_eq!(n, [50, 30, 20]);
        let only_put: Mix = "PUT=1".parse().unwrap();
        assert!((0..50).all(|r| only_put.pick(r) == Kind::Put));
        assert!(!only_put.reads());
        assert!("range=1".parse::<Mix>().unwrap().reads());
    }

    #[test]
    fn mix_errors_say_what_is_wrong() {
        let e = |s: &str| s.parse::<Mix>().unwrap_err();
        assert_eq!(e("get"), SpecError::MixEntry("get".into()));
        assert_eq!(e("post=5"), SpecError::MixKind("post".into()));
        assert_eq!(e("get=half"), SpecError::MixWeight("half".into()));
        assert_eq!(e("get=-1"), SpecError::MixWeight("-1".into()));
        assert_eq!(e("get=1,get=2"), SpecError::MixRepeated("get"));
        assert_eq!(e("get=0,put=0"), SpecError::MixEmpty);
        assert_eq!(e(""), SpecError::MixEmpty);
        assert!(e("post=5").to_string().contains("use get, put, range"));
    }

    #[test]
    fn sizes_are_fixed_per_object_and_in_range() {
        let r = SizeRange::new(100, 200).unwrap();
        let sizes: Vec<u64> = (0..1000).map(|id| r.size_of(7, id)).collect();
        assert!(sizes.iter().all(|s| (100..=200).contains(s)));
        assert!(sizes.contains(&100) && sizes.contains(&200));
        assert_eq!(
            sizes,
            (0..1000).map(|id| r.size_of(7, id)).collect::<Vec<_>>()
        );
        assert_eq!(SizeRange::new(5, 5).unwrap().size_of(1, 2), 5);
        assert_eq!(SizeRange::new(0, 5), Err(SpecError::SizeZero));
        assert_eq!(
            SizeRange::new(6, 5),
            Err(SpecError::SizeOrder { min: 6, max: 5 })
        );
    }

    #[test]
    fn ranges_stay_inside_the_object() {
        let mut rng = Rng::new(1, 1);
        for size in [1u64, 2, 7, 1000, 10 << 20] {
            for _ in 0..500 {
                let (a, b) = pick_range(&mut rng, size);
                assert!(a < b && b <= size && b - a <= MAX_RANGE);
            }
        }
    }

    #[test]
    fn content_range() {
        assert_eq!(parse_content_range(b"bytes 0-9/10"), Some((0, 10, 10)));
        assert_eq!(parse_content_range(b"bytes 5-5/6"), Some((5, 6, 6)));
        assert_eq!(parse_content_range(b"bytes 5-4/6"), None);
        assert_eq!(parse_content_range(b"bytes 0-9/9"), None);
        assert_eq!(parse_content_range(b"bytes */10"), None);
        assert_eq!(parse_content_range(b"items 0-1/2"), None);
    }
}
