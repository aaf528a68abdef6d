//! The `[quota…]` tables of the rules file, and the one decision made with
//! them: does a write fit? Sans-IO: text in, [`Quotas`] out; usage and a
//! write's size in, [`Over`] (whose quota, used, left) or room out.
//!
//! ```toml
//! [quota."/team"]        # everything below /team
//! bytes = "50G"
//! files = 200000
//! [quota.user]           # each user's own files, across the server
//! alice = "10G"
//! ```
//!
//! Sizes are whole numbers with an optional binary unit (`K`, `M`, `G`,
//! `T`, with or without `B`/`iB`, any case): `"50G"` is 50 GiB; a bare
//! TOML integer is bytes. Anything else (`"1.5G"`, `"-1"`, `"5X"`, a size
//! past 16 EiB) is refused with its line, never guessed.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;
use wirespeed_units::{human_size, parse_size};

/// One limit: bytes, files, or both (`None`: that one is unlimited).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limit {
    pub bytes: Option<u64>,
    pub files: Option<u64>,
}

/// Whose quota a limit is.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Whose {
    /// A folder's (its segments, in NFC): everything below it.
    Folder(Vec<String>),
    /// A user's: the files they own, wherever they are.
    User(String),
}

impl std::fmt::Display for Whose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Whose::Folder(s) => write!(f, "the quota of /{}", s.join("/")),
            Whose::User(u) => write!(f, "{u}'s quota"),
        }
    }
}

/// What a quota holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    pub bytes: u64,
    pub files: u64,
}

/// The quotas a rules file sets; empty when it sets none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Quotas {
    folders: Vec<(Vec<String>, Limit)>,
    users: BTreeMap<String, u64>,
}

/// A write that does not fit: whose quota, its limit, what is used and
/// what the write needs. Its text is the 507's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Over {
    pub whose: Whose,
    /// Counting files (else bytes).
    pub files: bool,
    pub limit: u64,
    pub used: u64,
    pub needed: u64,
}

impl Over {
    /// What is left under the limit.
    pub fn left(&self) -> u64 {
        self.limit.saturating_sub(self.used)
    }
}

impl std::fmt::Display for Over {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.files {
            write!(
                f,
                "{} is full: {} of {} files used, {} left; nothing was stored",
                self.whose,
                self.used,
                self.limit,
                self.left()
            )
        } else {
            write!(
                f,
                "{} is full: {} of {} used, {} left, and this needs {}; nothing was stored",
                self.whose,
                human_size(self.used),
                human_size(self.limit),
                human_size(self.left()),
                human_size(self.needed)
            )
        }
    }
}

/// Why the `[quota…]` tables are refused: the line (1-based) and what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct QuotaError {
    pub line: usize,
    pub reason: String,
}

/// A request's segments in NFC, as folders are kept.
fn nfc_path(path: &[String]) -> std::borrow::Cow<'_, [String]> {
    use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};
    let nfc = |s: &str| s.is_ascii() || is_nfc_quick(s.chars()) == IsNormalized::Yes;
    if path.iter().all(|s| nfc(s)) {
        return std::borrow::Cow::Borrowed(path);
    }
    std::borrow::Cow::Owned(path.iter().map(|s| s.nfc().collect()).collect())
}

/// Whether `adding` more bytes and `new_files` more files fit `limit`
/// given `used`; else the first limit crossed. Reaching a limit exactly
/// fits.
pub fn check(
    whose: &Whose,
    limit: Limit,
    used: Usage,
    adding: u64,
    new_files: u64,
) -> Result<(), Over> {
    if let Some(max) = limit.bytes {
        if used.bytes.saturating_add(adding) > max {
            return Err(Over {
                whose: whose.clone(),
                files: false,
                limit: max,
                used: used.bytes,
                needed: adding,
            });
        }
    }
    if let Some(max) = limit.files {
        if new_files > 0 && used.files.saturating_add(new_files) > max {
            return Err(Over {
                whose: whose.clone(),
                files: true,
                limit: max,
                used: used.files,
                needed: new_files,
            });
        }
    }
    Ok(())
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawSize {
    Number(i64),
    Text(String),
}

#[derive(Deserialize)]
struct RawFile {
    #[serde(default)]
    quota: BTreeMap<Spanned<String>, BTreeMap<Spanned<String>, Spanned<RawSize>>>,
}

impl Quotas {
    /// The `[quota…]` tables of a rules file's text (other tables are the
    /// rules parser's); `path_segments` reads a folder as the rules do.
    pub fn parse(
        text: &str,
        path_segments: impl Fn(&str) -> Result<Vec<String>, String>,
    ) -> Result<Quotas, QuotaError> {
        let line = |offset: usize| text[..offset.min(text.len())].matches('\n').count() + 1;
        let err = |offset: usize, reason: String| QuotaError {
            line: line(offset),
            reason,
        };
        let raw: RawFile = toml::from_str(text).map_err(|e| {
            let at = e.span().map(|s| s.start).unwrap_or(0);
            err(at, e.message().trim_end().to_string())
        })?;
        let size = |v: &Spanned<RawSize>| {
            let at = v.span().start;
            match v.get_ref() {
                RawSize::Number(n) => u64::try_from(*n)
                    .map_err(|_| err(at, format!("a size cannot be negative: {n}"))),
                RawSize::Text(s) => parse_size(s).map_err(|e| err(at, e.to_string())),
            }
        };
        let mut quotas = Quotas::default();
        for (key, table) in &raw.quota {
            if key.get_ref() == "user" {
                for (name, v) in table {
                    if name.get_ref().is_empty() || name.get_ref() == "*" {
                        return Err(err(
                            name.span().start,
                            "[quota.user] names users (\"*\" is everyone, not a user)".into(),
                        ));
                    }
                    quotas.users.insert(name.get_ref().clone(), size(v)?);
                }
                continue;
            }
            if !key.get_ref().starts_with('/') {
                return Err(err(
                    key.span().start,
                    format!(
                        "[quota.{:?}]: a quota is for a folder (\"/team\") or [quota.user]",
                        key.get_ref()
                    ),
                ));
            }
            let segments = path_segments(key.get_ref()).map_err(|r| err(key.span().start, r))?;
            if quotas.folders.iter().any(|(s, _)| *s == segments) {
                return Err(err(
                    key.span().start,
                    format!(
                        "[quota.{:?}] names a folder twice: merge them",
                        key.get_ref()
                    ),
                ));
            }
            let mut limit = Limit::default();
            for (field, v) in table {
                match field.get_ref().as_str() {
                    "bytes" => limit.bytes = Some(size(v)?),
                    "files" => match v.get_ref() {
                        RawSize::Number(n) if *n >= 0 => limit.files = Some(*n as u64),
                        _ => {
                            return Err(err(
                                v.span().start,
                                "files is a count of files (a whole number, e.g. 200000)".into(),
                            ))
                        }
                    },
                    other => {
                        return Err(err(
                            field.span().start,
                            format!("unknown quota field {other:?} (use bytes and files)"),
                        ))
                    }
                }
            }
            quotas.folders.push((segments, limit));
        }
        Ok(quotas)
    }

    /// Whether there is any quota at all (none: nothing is counted).
    pub fn is_empty(&self) -> bool {
        self.folders.is_empty() && self.users.is_empty()
    }

    /// The folder quotas containing `path`, outermost first.
    pub fn folders_over(&self, path: &[String]) -> Vec<(Whose, Limit)> {
        let path = nfc_path(path);
        let mut found: Vec<_> = self
            .folders
            .iter()
            .filter(|(s, _)| path.starts_with(s))
            .map(|(s, l)| (Whose::Folder(s.clone()), *l))
            .collect();
        found.sort_by_key(|(w, _)| match w {
            Whose::Folder(s) => s.len(),
            Whose::User(_) => 0,
        });
        found
    }

    /// Every folder quota.
    pub fn folders(&self) -> impl Iterator<Item = (&[String], Limit)> {
        self.folders.iter().map(|(s, l)| (s.as_slice(), *l))
    }

    /// The byte limit of `user`'s own files, if the file sets one.
    pub fn user(&self, user: &str) -> Option<Limit> {
        self.users.get(user).map(|&b| Limit {
            bytes: Some(b),
            files: None,
        })
    }

    /// Every user with a quota.
    pub fn users(&self) -> impl Iterator<Item = &str> {
        self.users.keys().map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Result<Quotas, QuotaError> {
        Quotas::parse(text, |p| {
            Ok(p.split('/')
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect())
        })
    }

    #[test]
    fn the_interface_example() {
        let q = parse(
            "[users]\n[quota.\"/team\"]\nbytes = \"50G\"\nfiles = 200000\n\
             [quota.user]\nalice = \"10G\"\nbob = 4096\n",
        )
        .unwrap();
        let team = vec!["team".to_string()];
        assert_eq!(
            q.folders_over(&["team".into(), "x".into()]),
            vec![(
                Whose::Folder(team),
                Limit {
                    bytes: Some(50 << 30),
                    files: Some(200_000)
                }
            )]
        );
        assert!(q.folders_over(&["teams".into()]).is_empty());
        assert_eq!(q.user("alice").unwrap().bytes, Some(10 << 30));
        assert_eq!(q.user("bob").unwrap().bytes, Some(4096));
        assert_eq!(q.user("carol"), None);
        assert!(parse("[paths.\"/\"]\n\"*\" = \"r\"\n").unwrap().is_empty());
    }

    #[test]
    fn nested_folders_all_apply_outermost_first() {
        let q = parse("[quota.\"/a/b\"]\nfiles = 3\n[quota.\"/a\"]\nbytes = \"1K\"\n").unwrap();
        let over = q.folders_over(&["a".into(), "b".into(), "c".into()]);
        assert_eq!(over.len(), 2);
        assert_eq!(over[0].0, Whose::Folder(vec!["a".into()]));
    }

    #[test]
    fn refusals_name_the_line() {
        for (text, line) in [
            ("\n[quota.\"/t\"]\nbytes = \"1.5G\"\n", 3),
            ("[quota.\"/t\"]\nbytes = -1\n", 2),
            ("[quota.\"/t\"]\nfiles = \"10K\"\n", 2),
            ("[quota.\"/t\"]\nsize = 1\n", 2),
            ("[quota.t]\nbytes = 1\n", 1),
            ("[quota.user]\nalice = \"5X\"\n", 2),
            ("[quota.user]\n\"*\" = \"5G\"\n", 2),
            ("[quota.\"/t\"]\nbytes = \"99999999999T\"\n", 2),
        ] {
            let e = parse(text).unwrap_err();
            assert_eq!(e.line, line, "{text}: {e}");
        }
    }

    #[test]
    fn the_refusal_says_whose_used_and_left() {
        let whose = Whose::User("alice".into());
        let limit = Limit {
            bytes: Some(10 << 30),
            files: None,
        };
        let used = Usage {
            bytes: 9 << 30,
            files: 7,
        };
        assert!(check(&whose, limit, used, 1 << 30, 1).is_ok());
        let over = check(&whose, limit, used, (1 << 30) + 1, 1).unwrap_err();
        assert_eq!(
            over.to_string(),
            "alice's quota is full: 9 GiB of 10 GiB used, 1 GiB left, and this needs 1.0 GiB; \
             nothing was stored"
        );
        let folder = Whose::Folder(vec!["team".into()]);
        let files = Limit {
            bytes: None,
            files: Some(7),
        };
        let over = check(&folder, files, used, 0, 1).unwrap_err();
        assert!(over.files);
        assert_eq!(
            over.to_string(),
            "the quota of /team is full: 7 of 7 files used, 0 left; nothing was stored"
        );
        // Replacing a file adds no file.
        assert!(check(&folder, files, used, 10, 0).is_ok());
    }

    proptest! {
        #[test]
        fn check_matches_the_arithmetic(limit in 0u64..1000, used in 0u64..1000, adding in 0u64..1000,
                                        flimit in 0u64..10, fused in 0u64..10, new in 0u64..2) {
            let l = Limit { bytes: Some(limit), files: Some(flimit) };
            let u = Usage { bytes: used, files: fused };
            let r = check(&Whose::User("u".into()), l, u, adding, new);
            let fits = used + adding <= limit && (new == 0 || fused + new <= flimit);
            prop_assert_eq!(r.is_ok(), fits);
            if let Err(o) = r {
                prop_assert_eq!(o.left(), if o.files { flimit.saturating_sub(fused) } else { limit.saturating_sub(used) });
            }
        }
    }
}
