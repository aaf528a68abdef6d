//! PROPFIND answers: one `DAV:response` per resource (sans-IO here; the
//! route in `dav/mod.rs` streams a folder's in its listing's batches).

use std::fmt::Write as _;
use std::time::SystemTime;

use super::xml::{escape_into, prop_element, PropName, Propfind, DAV};
use crate::locks::Lock;
use crate::storage::{Kind, Meta};

/// `DAV:activelock` text of `l`; a lock whose token was blanked (another
/// principal's, RFC 4918 §15.8) shows without `DAV:locktoken`.
pub fn write_active(l: &Lock, now: SystemTime, out: &mut String) {
    out.push_str("<D:activelock><D:locktype><D:write/></D:locktype><D:lockscope>");
    out.push_str(if l.exclusive {
        "<D:exclusive/>"
    } else {
        "<D:shared/>"
    });
    out.push_str("</D:lockscope><D:depth>");
    out.push_str(if l.infinite { "infinity" } else { "0" });
    out.push_str("</D:depth>");
    if let Some(owner) = &l.owner {
        out.push_str("<D:owner>");
        out.push_str(owner);
        out.push_str("</D:owner>");
    }
    let left = l.expires.duration_since(now).map_or(0, |d| d.as_secs());
    let _ = write!(out, "<D:timeout>Second-{left}</D:timeout>");
    if !l.token.is_empty() {
        out.push_str("<D:locktoken><D:href>");
        escape_into(&l.token, out);
        out.push_str("</D:href></D:locktoken>");
    }
    out.push_str("<D:lockroot><D:href>");
    escape_into(&l.root_url, out);
    out.push_str("</D:href></D:lockroot></D:activelock>");
}

/// The live properties `allprop` and `propname` answer, in that order.
pub const LIVE: [&str; 9] = [
    "resourcetype",
    "getcontentlength",
    "getlastmodified",
    "getetag",
    "getcontenttype",
    "creationdate",
    "displayname",
    "supportedlock",
    "lockdiscovery",
];

/// RFC 4331's properties: answered when named, never in `allprop`.
pub const QUOTA: [&str; 2] = ["quota-available-bytes", "quota-used-bytes"];

/// What `DAV:supportedlock` says: exclusive and shared write locks.
const SUPPORTED_LOCK: &str = "<D:lockentry><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry><D:lockentry><D:lockscope><D:shared/></D:lockscope><D:locktype><D:write/></D:locktype></D:lockentry>";

/// One resource, as PROPFIND describes it.
pub struct Resource<'a> {
    /// Its URL path, percent-encoded (collections end in `/`).
    pub href: String,
    /// Its name (empty for the root).
    pub name: &'a str,
    pub meta: Meta,
    /// The ETag GET answers (files only).
    pub etag: Option<String>,
    /// Dead properties (name, value as XML).
    pub dead: Vec<(PropName, String)>,
    /// Locks covering it.
    pub locks: Vec<Lock>,
    /// Free and used bytes of the storage, when asked and known.
    pub quota: (Option<u64>, Option<u64>),
}

impl Resource<'_> {
    /// Write a live property's value as XML into `out`; `false` (nothing
    /// written) where it does not apply.
    fn live(&self, local: &str, out: &mut String) -> bool {
        let file = self.meta.kind == Kind::File;
        match local {
            "resourcetype" => {
                if !file {
                    out.push_str("<D:collection/>");
                }
            }
            "getcontentlength" if file => {
                let _ = write!(out, "{}", self.meta.size);
            }
            "getlastmodified" => match self.meta.modified {
                Some(m) => out.push_str(&httpdate::fmt_http_date(m)),
                None => return false,
            },
            "getetag" => match &self.etag {
                Some(tag) => escape_into(tag, out),
                None => return false,
            },
            "getcontenttype" if file => {
                let mime = mime_guess::from_path(self.name).first_or_octet_stream();
                escape_into(mime.essence_str(), out);
            }
            "creationdate" => {
                match crate::page::listing::rfc3339(
                    self.meta.modified.unwrap_or(SystemTime::UNIX_EPOCH),
                ) {
                    Some(t) => out.push_str(&t),
                    None => return false,
                }
            }
            "displayname" => escape_into(self.name, out),
            "supportedlock" => out.push_str(SUPPORTED_LOCK),
            "lockdiscovery" => {
                let now = SystemTime::now();
                for l in &self.locks {
                    write_active(l, now, out);
                }
            }
            "quota-available-bytes" if !file => match self.quota.0 {
                Some(n) => {
                    let _ = write!(out, "{n}");
                }
                None => return false,
            },
            "quota-used-bytes" if !file => match self.quota.1 {
                Some(n) => {
                    let _ = write!(out, "{n}");
                }
                None => return false,
            },
            _ => return false,
        }
        true
    }

    /// A property's value into `out`, live or dead; `false` if it has none.
    fn value(&self, name: &PropName, out: &mut String) -> bool {
        if name.ns == DAV && self.live(&name.local, out) {
            return true;
        }
        match self.dead.iter().find(|(n, _)| n == name) {
            Some((_, v)) => {
                out.push_str(v);
                true
            }
            None => false,
        }
    }

    /// The `DAV:response` for `want`, written without a buffer per property
    /// (a Depth 1 answer writes one of these per entry).
    pub fn write(&self, want: &Propfind, out: &mut String) {
        out.push_str("<D:response><D:href>");
        escape_into(&self.href, out);
        out.push_str("</D:href>");
        let open_at = out.len();
        out.push_str("<D:propstat><D:prop>");
        let props_at = out.len();
        let mut value = String::new();
        let names = want == &Propfind::PropName;
        let mut missing: Vec<&PropName> = Vec::new();
        match want {
            Propfind::AllProp | Propfind::PropName => {
                for local in LIVE {
                    value.clear();
                    if self.live(local, &mut value) {
                        let v = (!names).then_some(value.as_str());
                        prop_element(&PropName::dav(local), v, out);
                    }
                }
                for (n, v) in &self.dead {
                    prop_element(n, (!names).then_some(v.as_str()), out);
                }
            }
            Propfind::Prop(wanted) => {
                for name in wanted {
                    value.clear();
                    if self.value(name, &mut value) {
                        prop_element(name, Some(&value), out);
                    } else {
                        missing.push(name);
                    }
                }
            }
        }
        if out.len() == props_at {
            out.truncate(open_at); // nothing found: no empty 200 propstat
        } else {
            out.push_str("</D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>");
        }
        if !missing.is_empty() {
            out.push_str("<D:propstat><D:prop>");
            for name in missing {
                prop_element(name, None, out);
            }
            out.push_str("</D:prop><D:status>HTTP/1.1 404 Not Found</D:status></D:propstat>");
        }
        out.push_str("</D:response>\n");
    }
}

/// Whether answering `want` needs the dead properties.
pub fn needs_dead(want: &Propfind) -> bool {
    match want {
        Propfind::AllProp | Propfind::PropName => true,
        Propfind::Prop(names) => names
            .iter()
            .any(|n| !(n.ns == DAV && (LIVE.contains(&n.local.as_str())))),
    }
}

/// Whether answering `want` needs the quota.
pub fn needs_quota(want: &Propfind) -> bool {
    matches!(want, Propfind::Prop(names) if names.iter().any(|n| n.ns == DAV && QUOTA.contains(&n.local.as_str())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file() -> Resource<'static> {
        Resource {
            href: "/a%20b.txt".into(),
            name: "a b.txt",
            meta: Meta {
                kind: Kind::File,
                size: 5,
                modified: Some(SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1)),
            },
            etag: Some("\"5-1\"".into()),
            dead: vec![(
                PropName {
                    ns: "urn:x".into(),
                    local: "p".into(),
                },
                "v&amp;".into(),
            )],
            locks: vec![],
            quota: (None, None),
        }
    }

    #[test]
    fn allprop_and_named() {
        let mut out = String::new();
        file().write(&Propfind::AllProp, &mut out);
        assert!(out.contains("<D:href>/a%20b.txt</D:href>"), "{out}");
        assert!(out.contains("<D:getcontentlength>5</D:getcontentlength>"));
        assert!(out.contains("<D:getetag>&quot;5-1&quot;</D:getetag>"));
        assert!(out.contains("<D:getcontenttype>text/plain</D:getcontenttype>"));
        assert!(out.contains("<D:resourcetype/>"));
        assert!(out.contains("<P:p xmlns:P=\"urn:x\">v&amp;</P:p>"));
        assert!(out.contains("Thu, 01 Jan 1970 00:00:01 GMT"));
        let mut out = String::new();
        let want = Propfind::Prop(vec![
            PropName::dav("getetag"),
            PropName::dav("nope"),
            PropName::dav("quota-used-bytes"),
        ]);
        file().write(&want, &mut out);
        assert!(
            out.contains(
                "<D:prop><D:nope/><D:quota-used-bytes/></D:prop><D:status>HTTP/1.1 404 Not Found"
            ),
            "{out}"
        );
        assert!(needs_quota(&want) && !needs_dead(&Propfind::Prop(vec![PropName::dav("getetag")])));
        // The whole document parses.
        let doc = format!(
            "{}{out}{}",
            super::super::xml::MULTISTATUS_START,
            super::super::xml::MULTISTATUS_END
        );
        assert!(super::super::xml::parse(doc.as_bytes()).is_ok());
    }
}
