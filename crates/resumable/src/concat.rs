//! tus 1.0 concatenation extension: an upload made of other uploads.
//!
//! A client sends pieces of one file as *partial* uploads (`Upload-Concat:
//! partial`), in parallel, then creates the *final* upload
//! (`Upload-Concat: final;URL URL…`) naming them in order. The final's
//! bytes are the partials' bytes one after the other; it is published under
//! its target, and the partials are consumed.
//!
//! Decided here: the field's syntax, which upload URLs name which ids
//! (absolute or relative, below the server's uploads path), and whether the
//! named partials may form a final upload (each exists, is complete, is a
//! partial, belongs to the asker and is not already used).

use serde::{Deserialize, Serialize};

use crate::{Reason, Refusal, UploadId, UploadState};

/// Most partial uploads one final upload may name (tus-js-client sends a
/// handful; each name is about 60 bytes of the request head).
pub const MAX_PARTS: usize = 256;

/// What an upload is in the concatenation extension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Concat {
    /// A piece of a future final upload: never published by itself.
    Partial {
        /// A final upload took it (it can no longer be appended to).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        used: bool,
    },
    /// Made of these partial uploads, in order.
    Final { parts: Vec<String> },
}

/// What a creation's `Upload-Concat` asks, its URLs still unresolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Partial,
    Final(Vec<String>),
}

/// Parses `Upload-Concat`: `partial`, or `final;` and space-separated URLs.
pub fn parse(raw: &[u8]) -> Result<Request, Refusal> {
    let text = std::str::from_utf8(raw).map_err(|_| bad("Upload-Concat is not ASCII"))?;
    let text = text.trim();
    if text == "partial" {
        return Ok(Request::Partial);
    }
    let Some(list) = text.strip_prefix("final;") else {
        return Err(bad(
            "Upload-Concat must be `partial` or `final;` followed by upload URLs",
        ));
    };
    let urls: Vec<String> = list.split_ascii_whitespace().map(str::to_string).collect();
    if urls.is_empty() {
        return Err(bad("Upload-Concat: final; names no partial upload"));
    }
    if urls.len() > MAX_PARTS {
        return Err(bad(format!(
            "a final upload may name at most {MAX_PARTS} partial uploads"
        )));
    }
    Ok(Request::Final(urls))
}

/// The upload id a URL names: `uploads` is the server's uploads path as
/// the client sees it (with any path prefix, ending in `/`). An absolute
/// URL (`http://host/…`, as tus-js-client sends) or an absolute path both
/// count; the host is not compared (the request reached this server, and
/// a proxy may rename it). `None`: not an upload of this server.
pub fn id_of_url(url: &str, uploads: &str) -> Option<UploadId> {
    let path = match url.find("://") {
        Some(i) => {
            let after = &url[i + 3..];
            &after[after.find('/')?..]
        }
        None => url,
    };
    let path = path.split(['?', '#']).next().unwrap_or(path);
    UploadId::parse(path.strip_prefix(uploads)?)
}

/// A partial upload named by a final one, as the service found it.
#[derive(Debug, Clone, Copy)]
pub struct Part<'a> {
    pub id: UploadId,
    /// `None`: no such upload (unknown, expired or already consumed).
    pub state: Option<&'a UploadState>,
}

/// Whether `parts` may form a final upload for `owner`; its length if so.
/// Refusals: 400 for a name that is not a complete, unused partial upload
/// (or named twice), 403 for another principal's, 409 for one already part
/// of a final upload, 413 over `max_size`.
pub fn check_final(parts: &[Part], owner: &str, max_size: u64) -> Result<u64, Refusal> {
    let mut total = 0u64;
    let mut seen = std::collections::HashSet::new();
    for part in parts {
        if !seen.insert(part.id) {
            return Err(bad(format!(
                "partial upload {} is named twice in Upload-Concat",
                part.id
            )));
        }
        let Some(state) = part.state else {
            return Err(bad(format!("partial upload {} does not exist", part.id)));
        };
        if state.owner.as_deref() != Some(owner) {
            return Err(Refusal::new(
                Reason::Forbidden,
                format!("partial upload {} belongs to someone else", part.id),
            ));
        }
        match state.concat {
            Some(Concat::Partial { used: false }) => {}
            Some(Concat::Partial { used: true }) => {
                return Err(Refusal::new(
                    Reason::Conflict,
                    format!(
                        "partial upload {} is already part of a final upload",
                        part.id
                    ),
                ))
            }
            _ => {
                return Err(bad(format!(
                    "upload {} was not created with Upload-Concat: partial",
                    part.id
                )))
            }
        }
        if !state.complete || state.length != Some(state.offset) {
            return Err(bad(format!(
                "partial upload {} is not complete ({} of {} bytes)",
                part.id,
                state.offset,
                state.length.map_or("unknown".into(), |l| l.to_string())
            )));
        }
        total = total.saturating_add(state.offset);
    }
    if total > max_size {
        return Err(Refusal::new(
            Reason::TooLarge,
            format!(
                "the final upload would have {total} bytes, over this server's limit of {max_size}"
            ),
        ));
    }
    Ok(total)
}

/// The `Upload-Concat` value HEAD answers for `state`, if it takes part.
pub fn field(state: &UploadState) -> Option<String> {
    match &state.concat {
        None => None,
        Some(Concat::Partial { .. }) => Some("partial".into()),
        Some(Concat::Final { parts }) => Some(format!("final;{}", parts.join(" "))),
    }
}

fn bad(message: impl Into<String>) -> Refusal {
    Refusal::new(Reason::BadField, message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Protocol;
    use proptest::prelude::*;

    fn id(n: u8) -> UploadId {
        UploadId::from_random([n; 16])
    }

    fn partial(len: u64, done: u64, owner: &str) -> UploadState {
        let mut s = UploadState::new(Protocol::Tus, "/d/".into(), Some(len), 0, 60);
        s.offset = done;
        s.complete = done == len;
        s.owner = Some(owner.into());
        s.concat = Some(Concat::Partial { used: false });
        s
    }

    #[test]
    fn parses_partial_and_final() {
        assert_eq!(parse(b"partial"), Ok(Request::Partial));
        assert_eq!(
            parse(b"final;/-/uploads/a http://h/-/uploads/b"),
            Ok(Request::Final(vec![
                "/-/uploads/a".into(),
                "http://h/-/uploads/b".into()
            ]))
        );
        for bad in [&b"final;"[..], b"final; ", b"whole", b"final", b"\xff"] {
            assert_eq!(parse(bad).unwrap_err().status(), 400, "{bad:?}");
        }
        let many = format!("final;{}", vec!["/u"; MAX_PARTS + 1].join(" "));
        assert_eq!(parse(many.as_bytes()).unwrap_err().status(), 400);
    }

    #[test]
    fn urls_name_ids_below_the_uploads_path() {
        let i = id(7).to_string();
        let up = "/p/-/uploads/";
        assert_eq!(id_of_url(&format!("/p/-/uploads/{i}"), up), Some(id(7)));
        assert_eq!(
            id_of_url(
                &format!("https://example.org:8443/p/-/uploads/{i}?share=x"),
                up
            ),
            Some(id(7))
        );
        // Without the prefix, another path, or not an id.
        assert_eq!(id_of_url(&format!("/-/uploads/{i}"), up), None);
        assert_eq!(id_of_url(&format!("/p/-/uploads/x/{i}"), up), None);
        assert_eq!(id_of_url("/p/-/uploads/../etc", up), None);
        assert_eq!(id_of_url("http://host", up), None);
    }

    #[test]
    fn a_final_needs_complete_unused_own_partials() {
        let a = partial(5, 5, "u:ann");
        let b = partial(7, 7, "u:ann");
        let parts = [
            Part {
                id: id(1),
                state: Some(&a),
            },
            Part {
                id: id(2),
                state: Some(&b),
            },
        ];
        assert_eq!(check_final(&parts, "u:ann", 100), Ok(12));
        assert_eq!(check_final(&parts, "u:bob", 100).unwrap_err().status(), 403);
        assert_eq!(check_final(&parts, "u:ann", 11).unwrap_err().status(), 413);

        let missing = [Part {
            id: id(3),
            state: None,
        }];
        assert_eq!(
            check_final(&missing, "u:ann", 100).unwrap_err().status(),
            400
        );
        let half = partial(5, 2, "u:ann");
        let r = check_final(
            &[Part {
                id: id(4),
                state: Some(&half),
            }],
            "u:ann",
            100,
        )
        .unwrap_err();
        assert!((r.status(), r.message.contains("not complete")) == (400, true));
        let mut used = partial(5, 5, "u:ann");
        used.concat = Some(Concat::Partial { used: true });
        let one = |s| {
            [Part {
                id: id(5),
                state: Some(s),
            }]
        };
        assert_eq!(
            check_final(&one(&used), "u:ann", 100).unwrap_err().status(),
            409
        );
        let mut plain = partial(5, 5, "u:ann");
        plain.concat = None;
        assert_eq!(
            check_final(&one(&plain), "u:ann", 100)
                .unwrap_err()
                .status(),
            400
        );
        let twice = [parts[0], parts[0]];
        assert_eq!(check_final(&twice, "u:ann", 100).unwrap_err().status(), 400);
    }

    #[test]
    fn head_says_what_an_upload_is() {
        let mut s = partial(1, 1, "x");
        assert_eq!(field(&s).as_deref(), Some("partial"));
        s.concat = Some(Concat::Final {
            parts: vec!["/-/uploads/a".into(), "/-/uploads/b".into()],
        });
        assert_eq!(
            field(&s).as_deref(),
            Some("final;/-/uploads/a /-/uploads/b")
        );
        s.concat = None;
        assert_eq!(field(&s), None);
    }

    proptest! {
        #[test]
        fn parse_never_panics(raw in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = parse(&raw);
        }

        #[test]
        fn url_resolution_never_panics(url in "\\PC{0,80}") {
            let _ = id_of_url(&url, "/-/uploads/");
        }

        /// The final's length is the sum of its parts, whatever their sizes;
        /// any incomplete one refuses the whole.
        #[test]
        fn final_length_is_the_sum(sizes in proptest::collection::vec((0u64..1 << 40, any::<bool>()), 1..20)) {
            let states: Vec<UploadState> = sizes.iter().map(|&(n, done)| partial(n, if done { n } else { n / 2 }, "o")).collect();
            let parts: Vec<Part> = states.iter().enumerate().map(|(i, s)| Part { id: id(i as u8), state: Some(s) }).collect();
            let r = check_final(&parts, "o", u64::MAX);
            if states.iter().all(|s| s.complete) {
                prop_assert_eq!(r, Ok(sizes.iter().map(|s| s.0).sum::<u64>()));
            } else {
                prop_assert_eq!(r.unwrap_err().status(), 400);
            }
        }
    }
}
