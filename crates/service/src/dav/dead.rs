//! Dead properties (sans-IO): the stored set's encoding, and a PROPPATCH's
//! decisions over it (RFC 4918 §9.2: all instructions succeed or none).

use std::time::SystemTime;

use super::xml::{Patch, PropName, DAV};

/// Microsoft's namespace: Windows sets `Win32LastModifiedTime` and friends
/// around every save.
pub const MS_NS: &str = "urn:schemas-microsoft-com:";

/// The stored set: JSON `[[ns, local, value], …]` (readable with `getfattr`).
pub fn encode(props: &[(PropName, String)]) -> Vec<u8> {
    let rows: Vec<(&str, &str, &str)> = props
        .iter()
        .map(|(n, v)| (n.ns.as_str(), n.local.as_str(), v.as_str()))
        .collect();
    serde_json::to_vec(&rows).unwrap_or_default()
}

/// The set in a stored blob; an unreadable blob is an empty set.
pub fn decode(blob: Option<&[u8]>) -> Vec<(PropName, String)> {
    let Some(blob) = blob else {
        return Vec::new();
    };
    let rows: Vec<(String, String, String)> = serde_json::from_slice(blob).unwrap_or_default();
    rows.into_iter()
        .map(|(ns, local, v)| (PropName { ns, local }, v))
        .collect()
}

/// What a PROPPATCH does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Per instruction in order: its name and status (200, 403, 409, 424).
    pub statuses: Vec<(PropName, u16)>,
    /// The new set to store (`None`: nothing to store, or refused).
    pub store: Option<Vec<(PropName, String)>>,
    /// A modification time to set (`DAV:getlastmodified`,
    /// `Win32LastModifiedTime`).
    pub mtime: Option<SystemTime>,
}

/// Apply `patches` to `current`: a protected live property refuses the
/// whole request (403 for it, 424 for the others).
pub fn apply(current: Vec<(PropName, String)>, patches: &[Patch]) -> Outcome {
    let mut props = current;
    let mut statuses = Vec::new();
    let mut failed = false;
    let mut mtime = None;
    let mut changed = false;
    for p in patches {
        let (name, value) = match p {
            Patch::Set(n, v) => (n, Some(v)),
            Patch::Remove(n) => (n, None),
        };
        if name.ns == DAV {
            // Only the modification time is writable among the live ones:
            // `getlastmodified` as an HTTP date, or ownCloud's
            // `lastmodified` in Unix seconds (rclone's `touch` and mtime).
            let ok = match (name.local.as_str(), value) {
                ("getlastmodified", Some(v)) => {
                    mtime = parse_date(v);
                    mtime.is_some()
                }
                ("lastmodified", Some(v)) => {
                    mtime = v
                        .trim()
                        .parse::<u64>()
                        .ok()
                        .map(|s| SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(s));
                    mtime.is_some()
                }
                _ => false,
            };
            if ok {
                statuses.push((name.clone(), 200));
            } else {
                statuses.push((
                    name.clone(),
                    if value.is_some() && name.local == "getlastmodified" {
                        409
                    } else {
                        403
                    },
                ));
                failed = true;
            }
            continue;
        }
        if name.ns == MS_NS && name.local == "Win32LastModifiedTime" {
            if let Some(t) = value.and_then(|v| parse_date(v)) {
                mtime = Some(t);
            }
        }
        props.retain(|(n, _)| n != name);
        if let Some(v) = value {
            props.push((name.clone(), v.clone()));
        }
        changed = true;
        statuses.push((name.clone(), 200));
    }
    if failed {
        for s in statuses.iter_mut().filter(|s| s.1 == 200) {
            s.1 = 424;
        }
        return Outcome {
            statuses,
            store: None,
            mtime: None,
        };
    }
    Outcome {
        statuses,
        store: changed.then_some(props),
        mtime,
    }
}

/// An HTTP date (what Windows and `getlastmodified` carry), as text of a
/// property value.
fn parse_date(v: &str) -> Option<SystemTime> {
    httpdate::parse_http_date(v.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(l: &str) -> PropName {
        PropName {
            ns: "urn:t".into(),
            local: l.into(),
        }
    }

    #[test]
    fn round_trip_and_apply() {
        let set = vec![
            (n("a"), "1".to_string()),
            (
                PropName {
                    ns: String::new(),
                    local: "b".into(),
                },
                "<x xmlns=\"\"/>".into(),
            ),
        ];
        assert_eq!(decode(Some(&encode(&set))), set);
        assert!(decode(Some(b"junk")).is_empty());
        let o = apply(
            set.clone(),
            &[Patch::Set(n("a"), "2".into()), Patch::Remove(n("zz"))],
        );
        assert_eq!(o.statuses, vec![(n("a"), 200), (n("zz"), 200)]);
        assert_eq!(o.store.unwrap()[1], (n("a"), "2".to_string()));
        // A protected property fails the whole request.
        let o = apply(
            set.clone(),
            &[
                Patch::Set(n("a"), "2".into()),
                Patch::Set(PropName::dav("getetag"), "x".into()),
            ],
        );
        assert_eq!(
            o.statuses,
            vec![(n("a"), 424), (PropName::dav("getetag"), 403)]
        );
        assert!(o.store.is_none());
        // Windows' timestamp is kept and sets the modification time.
        let win = PropName {
            ns: MS_NS.into(),
            local: "Win32LastModifiedTime".into(),
        };
        let o = apply(
            vec![],
            &[Patch::Set(win, "Wed, 25 Nov 2026 03:00:00 GMT".into())],
        );
        assert!(o.mtime.is_some() && o.store.is_some());
        // ownCloud's Unix seconds (rclone's touch).
        let o = apply(
            vec![],
            &[Patch::Set(
                PropName::dav("lastmodified"),
                "978307200".into(),
            )],
        );
        assert_eq!(o.statuses[0].1, 200);
        assert_eq!(
            o.mtime,
            Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(978_307_200))
        );
    }
}
