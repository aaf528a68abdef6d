//! Sign-in by a trusted identity proxy: the user its header names, in the
//! groups its groups header names that the rules file knows (`groups.rs`).

use std::sync::{Mutex, OnceLock};

use super::groups::{check_name, GroupSet};
use super::rules::{Rules, UserName};

/// The most distinct names signed in by the proxy that the rules file
/// does not list: each is kept for the process's life (names are interned
/// so that a principal stays `Copy`), so a proxy sending ever new names
/// cannot grow memory without bound. Past it, such names are refused.
pub const MAX_PROXY_ONLY_NAMES: usize = 10_000;

/// The interned names of users the proxy signed in whom the rules file
/// does not list, counted against [`MAX_PROXY_ONLY_NAMES`].
fn proxy_only_name(name: &str) -> Option<UserName> {
    static SEEN: OnceLock<Mutex<usize>> = OnceLock::new();
    let mut seen = SEEN
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(u) = UserName::interned(name) {
        return Some(u);
    }
    if *seen >= MAX_PROXY_ONLY_NAMES {
        return None;
    }
    *seen += 1;
    Some(UserName::intern(name))
}

/// Why a proxy's sign-in is not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProxySignInError {
    #[error("the user header's name is not one a user may have: {0}")]
    BadName(String),
    #[error("no rules file (serve --auth) names what a proxy's user may do")]
    NoRules,
    #[error("too many distinct names from the proxy that the rules file does not list")]
    TooManyNames,
}

/// The user the proxy names (with the groups it names, those the rules
/// file knows): a listed user keeps its name; another gets one, bounded.
pub(crate) fn signed_in(
    rules: &Rules,
    name: &str,
    groups_header: Option<&str>,
) -> Result<UserName, ProxySignInError> {
    let name = name.trim();
    check_name(name).map_err(ProxySignInError::BadName)?;
    let user = match rules.known(name) {
        Some(u) => u,
        None => proxy_only_name(name).ok_or(ProxySignInError::TooManyNames)?,
    };
    let groups = groups_header.map_or(GroupSet::EMPTY, |h| rules.groups().from_header(h));
    Ok(user.with_groups(groups))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$\
                        VuaC8hFvqDFUuVbpxxQnzrSUjkmqnzJQ6pM7IXvTnbA";

    fn rules() -> Rules {
        let text = format!(
            "[users]\nalice = \"{HASH}\"\n[groups]\nteam = [\"alice\", \"carol\"]\n\
             [paths.\"/team\"]\n\"@team\" = \"rw\"\ncarol = \"d\"\n\
             [paths.\"/ops\"]\n\"@ops\" = \"r\"\n"
        );
        Rules::parse(&text).unwrap()
    }

    fn segs(p: &str) -> Vec<String> {
        p.split('/')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect()
    }

    #[test]
    fn group_rights_reach_listed_members_and_the_proxys_groups() {
        let r = rules();
        let alice = r.known("alice");
        let carol = r.known("carol");
        assert!(
            carol.is_some() && r.user("carol").is_none(),
            "carol has no password"
        );
        assert_eq!(r.rights(alice, &segs("/team/x")).letters(), "rw");
        assert_eq!(r.rights(carol, &segs("/team/x")).letters(), "rwd");
        assert_eq!(r.rights(alice, &segs("/ops")).letters(), "");
        // Someone the file does not list: only what the proxy's groups give.
        let dave = signed_in(&r, "dave", Some("ops, elsewhere")).unwrap();
        assert_eq!(r.rights(Some(dave), &segs("/ops/a")).letters(), "r");
        assert_eq!(r.rights(Some(dave), &segs("/team")).letters(), "");
        let dave = signed_in(&r, "dave", Some("team")).unwrap();
        assert_eq!(r.rights(Some(dave), &segs("/team")).letters(), "rw");
        assert_eq!(r.rights_below(Some(dave), &[]).letters(), "");
        assert!(r.some_user_has(crate::Rights::READ, &segs("/ops")));
        // A listed user keeps its own groups and adds the proxy's.
        let alice = signed_in(&r, "alice", Some("ops")).unwrap();
        assert_eq!(r.rights(Some(alice), &segs("/ops")).letters(), "r");
        assert_eq!(r.rights(Some(alice), &segs("/team")).letters(), "rw");
        assert!(matches!(
            signed_in(&r, "a:b", None),
            Err(ProxySignInError::BadName(_))
        ));
    }
}
