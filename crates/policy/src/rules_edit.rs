//! A user's line added to or replaced in a rules file's text, every other
//! line (comments, order, the paths) kept as written: what
//! `wirespeed passwd NAME --file FILE` does instead of `>> FILE`, which
//! lands the line in whatever table ends the file.
//!
//! Sans-IO: text in, text out. The result is parsed and must be a valid
//! rules file naming `NAME` with the new hash, or nothing is returned to
//! write: a file broken before stays broken (and is reported as it was),
//! except one whose only fault was naming `NAME` in `[paths]` before
//! `[users]` held it, which this mends.

use crate::rules::{Rules, RulesError};

/// What the edit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edit {
    Added,
    Replaced,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    #[error("the file is not a valid rules file (line {}: {}); fix it first", .0.line, .0.reason)]
    Invalid(RulesError),
    /// The edit would not give a file that names the user with the hash
    /// (a layout this line-wise edit does not understand).
    #[error("could not place the line in this file's [users] table: add it by hand")]
    NotPlaced,
}

/// A TOML key for `name`: bare when it can be, else quoted.
pub fn toml_key(name: &str) -> String {
    let bare = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if bare {
        return name.to_string();
    }
    let mut out = String::with_capacity(name.len() + 2);
    out.push('"');
    for c in name.chars() {
        if matches!(c, '"' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// `text` with `name = "hash"` under `[users]`: the user's existing line
/// replaced, else the line added at the end of the table (or a `[users]`
/// table added before the first table).
pub fn set_user(text: &str, name: &str, hash: &str) -> Result<(String, Edit), EditError> {
    let before = Rules::parse(text).err();
    let key = toml_key(name);
    let line = format!("{key} = \"{hash}\"");
    let mut lines: Vec<&str> = text.lines().collect();
    let header_at = lines.iter().position(|l| header(l) == Some("users"));
    let edit = match header_at {
        None => {
            let first_table = lines.iter().position(|l| header(l).is_some());
            let at = first_table.unwrap_or(lines.len());
            let block = ["[users]", line.as_str(), ""];
            lines.splice(at..at, block);
            Edit::Added
        }
        Some(h) => {
            let end = lines[h + 1..]
                .iter()
                .position(|l| header(l).is_some())
                .map_or(lines.len(), |i| h + 1 + i);
            match (h + 1..end)
                .find(|&i| key_of(lines[i]).is_some_and(|k| k == key || unquote(k) == name))
            {
                Some(i) => {
                    lines[i] = line.as_str();
                    Edit::Replaced
                }
                None => {
                    // After the table's last line that says something.
                    let last = (h + 1..end)
                        .rev()
                        .find(|&i| !lines[i].trim().is_empty())
                        .unwrap_or(h);
                    lines.insert(last + 1, line.as_str());
                    Edit::Added
                }
            }
        }
    };
    let mut out = lines.join("\n");
    out.push('\n');
    match Rules::parse(&out) {
        Ok(r) if r.user(name).is_some_and(|(_, h)| h == hash) => Ok((out, edit)),
        Ok(_) => Err(EditError::NotPlaced),
        Err(after) => Err(EditError::Invalid(before.unwrap_or(after))),
    }
}

/// The table a `[name]` header line opens (`None`: not a header).
fn header(line: &str) -> Option<&str> {
    let t = line.trim_start();
    let rest = t.strip_prefix('[')?;
    if rest.starts_with('[') {
        return None;
    }
    let close = rest.find(']')?;
    let after = rest[close + 1..].trim_start();
    (after.is_empty() || after.starts_with('#')).then(|| rest[..close].trim())
}

/// The key of a `key = value` line, as written.
fn key_of(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if t.starts_with('#') {
        return None;
    }
    // A quoted key may hold '=': find the end of the key first.
    let end = if let Some(q) = t.strip_prefix('"') {
        let mut escaped = false;
        let close = q.char_indices().find(|&(_, c)| {
            let done = c == '"' && !escaped;
            escaped = c == '\\' && !escaped;
            done
        })?;
        close.0 + 2
    } else {
        t.find('=')?
    };
    let key = t[..end].trim_end();
    t[end..].trim_start().starts_with('=').then_some(key)
}

/// A quoted key's name (`"a b"` → `a b`); a bare key as it is.
fn unquote(key: &str) -> String {
    match key.strip_prefix('"').and_then(|k| k.strip_suffix('"')) {
        Some(inner) => inner.replace("\\\"", "\"").replace("\\\\", "\\"),
        None => key.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const H1: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$\
                      VuaC8hFvqDFUuVbpxxQnzrSUjkmqnzJQ6pM7IXvTnbA";
    const H2: &str = "$argon2id$v=19$m=19456,t=2,p=1$b3RoZXJzYWx0b3RoZXJzYQ$\
                      VuaC8hFvqDFUuVbpxxQnzrSUjkmqnzJQ6pM7IXvTnbA";

    const README: &str = "# /etc/wirespeed/users.toml\n\
        [users]                       # only argon2id hashes\n\
        alice = \"H1\"\n\
        \n\
        [paths.\"/\"]\n\
        \"*\" = \"r\"                     # anyone reads\n\
        [paths.\"/alice\"]\n\
        alice = \"rwd\"\n";

    fn readme() -> String {
        README.replace("H1", H1)
    }

    #[test]
    fn a_new_user_joins_the_users_table_and_every_other_line_stays() {
        let (out, edit) = set_user(&readme(), "bob", H2).unwrap();
        assert_eq!(edit, Edit::Added);
        let want = readme().replace(
            &format!("alice = \"{H1}\"\n"),
            &format!("alice = \"{H1}\"\nbob = \"{H2}\"\n"),
        );
        assert_eq!(out, want);
    }

    #[test]
    fn an_existing_user_is_replaced_in_place() {
        let (out, edit) = set_user(&readme(), "alice", H2).unwrap();
        assert_eq!(edit, Edit::Replaced);
        assert_eq!(out, readme().replace(H1, H2));
        // Where the name is quoted in the file, it is found too.
        let quoted = readme().replace("alice = \"$", "\"alice\" = \"$");
        assert_eq!(set_user(&quoted, "alice", H2).unwrap().1, Edit::Replaced);
    }

    #[test]
    fn a_file_without_users_gets_the_table_before_its_first_table() {
        let text = "# rules\n[paths.\"/\"]\n\"*\" = \"r\"\n";
        let (out, edit) = set_user(text, "a b", H1).unwrap();
        assert_eq!(edit, Edit::Added);
        assert_eq!(
            out,
            format!("# rules\n[users]\n\"a b\" = \"{H1}\"\n\n[paths.\"/\"]\n\"*\" = \"r\"\n")
        );
        assert_eq!(
            set_user("", "x", H1).unwrap().0,
            format!("[users]\nx = \"{H1}\"\n\n")
        );
    }

    #[test]
    fn a_broken_file_is_left_alone_unless_the_user_was_what_it_lacked() {
        let lacks_carol = "[paths.\"/\"]\ncarol = \"r\"\n";
        let e = set_user(lacks_carol, "bob", H1).unwrap_err();
        assert!(matches!(e, EditError::Invalid(_)), "{e}");
        assert!(e.to_string().contains("line 2"), "{e}");
        let (out, _) = set_user(lacks_carol, "carol", H1).unwrap();
        assert!(Rules::parse(&out).is_ok());
        let e = set_user("[paths.\"/\"]\n\"*\" = \"rq\"\n", "bob", H1).unwrap_err();
        assert!(e.to_string().contains("unknown right"), "{e}");
    }

    #[test]
    fn keys() {
        assert_eq!(toml_key("alice"), "alice");
        assert_eq!(toml_key("a b"), "\"a b\"");
        assert_eq!(toml_key("x\"y"), "\"x\\\"y\"");
    }

    proptest! {
        /// Whatever users a file holds and whoever is set: the result
        /// parses, names them with the new hash, and keeps every other
        /// user's hash.
        #[test]
        fn setting_a_user_keeps_the_others(
            others in proptest::collection::btree_set("[a-z][a-z0-9 _-]{0,6}", 0..5),
            name in "[a-z][a-z0-9 _-]{0,6}",
            blank_lines in 0usize..3,
        ) {
            let mut text = String::from("# users\n[users]\n");
            for o in &others {
                text.push_str(&format!("{} = \"{H1}\"\n", toml_key(o)));
            }
            text.push_str(&"\n".repeat(blank_lines));
            text.push_str("[paths.\"/\"]\n\"*\" = \"r\"\n");
            let (out, edit) = set_user(&text, &name, H2).unwrap();
            prop_assert_eq!(edit == Edit::Replaced, others.contains(&name));
            let rules = Rules::parse(&out).unwrap();
            prop_assert_eq!(rules.user(&name).map(|(_, h)| h), Some(H2));
            for o in others.iter().filter(|o| **o != name) {
                prop_assert_eq!(rules.user(o).map(|(_, h)| h), Some(H1));
            }
            prop_assert!(out.ends_with("\"*\" = \"r\"\n"));
        }
    }
}
