//! `serve --hidden PATTERN`: names the server neither lists nor serves nor
//! takes (a 404, as if absent), matched per path segment by a small glob
//! (`*` any run of characters, `?` one character), e.g. `.git`, `.env*`,
//! `.*` for every dotfile. Sans-IO.

use wirespeed_path::RelPath;

/// The patterns of hidden names (none by default: every name is served).
#[derive(Debug, Clone, Default)]
pub struct Hidden {
    patterns: Vec<String>,
}

impl Hidden {
    /// Patterns as given on the command line; a trailing `/` (`.git/`) is
    /// dropped. Refused: an empty pattern, or one with a `/` inside (it
    /// matches one name, not a path).
    pub fn new<I, S>(patterns: I) -> Result<Hidden, String>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut out = Vec::new();
        for p in patterns {
            let p = p.as_ref();
            let name = p.strip_suffix('/').unwrap_or(p);
            if name.is_empty() || name.contains('/') {
                return Err(format!(
                    "--hidden {p:?}: give a name or a glob for one name (e.g. .git, .env*, '.*'), \
                     not a path"
                ));
            }
            out.push(name.to_string());
        }
        Ok(Hidden { patterns: out })
    }

    /// Whether no name is hidden.
    pub fn is_empty(&self) -> bool {
        self.patterns.is_empty()
    }

    /// Whether the name `name` is hidden.
    pub fn hides_name(&self, name: &str) -> bool {
        self.patterns
            .iter()
            .any(|p| glob(p.as_bytes(), name.as_bytes()))
    }

    /// Whether any segment of `key` is hidden.
    pub fn hides(&self, key: &RelPath) -> bool {
        !self.is_empty() && key.segments().iter().any(|s| self.hides_name(s))
    }
}

/// `*` and `?` glob over bytes (a `?` is one byte; names are matched as
/// written), iterative with one backtrack point: linear in practice.
fn glob(pat: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while i < s.len() {
        if p < pat.len() && (pat[p] == b'?' || pat[p] == s[i]) {
            p += 1;
            i += 1;
        } else if p < pat.len() && pat[p] == b'*' {
            star = Some((p, i));
            p += 1;
        } else if let Some((sp, si)) = star {
            p = sp + 1;
            i = si + 1;
            star = Some((sp, si + 1));
        } else {
            return false;
        }
    }
    pat[p..].iter().all(|&c| c == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirespeed_path::parse_request_path;

    #[test]
    fn globs() {
        for (p, s, want) in [
            (".git", ".git", true),
            (".git", ".gitignore", false),
            (".env*", ".env", true),
            (".env*", ".env.local", true),
            (".env*", "x.env", false),
            (".*", ".hidden", true),
            (".*", "visible", false),
            ("*.bak", "a.bak", true),
            ("*.bak", "a.bak.txt", false),
            ("a?c", "abc", true),
            ("a?c", "ac", false),
            ("*", "", true),
            ("*a*b*", "xxaxxbxx", true),
            ("*a*b*", "xxbxxaxx", false),
        ] {
            assert_eq!(glob(p.as_bytes(), s.as_bytes()), want, "{p} vs {s}");
        }
    }

    #[test]
    fn paths_and_patterns() {
        let h = Hidden::new([".git/", ".env*"]).unwrap();
        let key = |p| parse_request_path(p).unwrap();
        assert!(h.hides(&key("/.git/")));
        assert!(h.hides(&key("/proj/.git/config")));
        assert!(h.hides(&key("/proj/.env.local")));
        assert!(!h.hides(&key("/proj/src/main.rs")));
        assert!(!h.hides(&key("/")));
        assert!(Hidden::new(["a/b"]).is_err());
        assert!(Hidden::new([""]).is_err());
        assert!(!Hidden::default().hides(&key("/.git/")));
    }
}
