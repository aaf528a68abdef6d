//! PROPFIND answers: one `DAV:response` per resource (sans-IO here; the
//! route in `dav/mod.rs` streams a folder's in its listing's batches).

use std::time::{Instant, SystemTime};

use super::lock::Lock;
use super::xml::{escape_into, propstat, PropName, Propfind, DAV};
use crate::storage::{Kind, Meta};

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
    /// A live property's value as XML, `None` where it does not apply.
    fn live(&self, local: &str) -> Option<String> {
        let file = self.meta.kind == Kind::File;
        let mut out = String::new();
        match local {
            "resourcetype" => {
                if !file {
                    out.push_str("<D:collection/>");
                }
            }
            "getcontentlength" if file => out.push_str(&self.meta.size.to_string()),
            "getlastmodified" => out.push_str(&httpdate::fmt_http_date(self.meta.modified?)),
            "getetag" => escape_into(self.etag.as_deref()?, &mut out),
            "getcontenttype" if file => {
                let mime = mime_guess::from_path(self.name).first_or_octet_stream();
                escape_into(mime.essence_str(), &mut out);
            }
            "creationdate" => out.push_str(&crate::listing::rfc3339(
                self.meta.modified.unwrap_or(SystemTime::UNIX_EPOCH),
            )?),
            "displayname" => escape_into(self.name, &mut out),
            "supportedlock" => out.push_str(SUPPORTED_LOCK),
            "lockdiscovery" => {
                let now = Instant::now();
                for l in &self.locks {
                    l.write_active(now, &mut out);
                }
            }
            "quota-available-bytes" if !file => out.push_str(&self.quota.0?.to_string()),
            "quota-used-bytes" if !file => out.push_str(&self.quota.1?.to_string()),
            _ => return None,
        }
        Some(out)
    }

    fn value(&self, name: &PropName) -> Option<String> {
        if name.ns == DAV {
            if let Some(v) = self.live(&name.local) {
                return Some(v);
            }
        }
        self.dead
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    }

    /// The `DAV:response` for `want`.
    pub fn write(&self, want: &Propfind, out: &mut String) {
        out.push_str("<D:response><D:href>");
        escape_into(&self.href, out);
        out.push_str("</D:href>");
        match want {
            Propfind::AllProp | Propfind::PropName => {
                let names = want == &Propfind::PropName;
                let mut found: Vec<(PropName, Option<String>)> = Vec::new();
                for local in LIVE {
                    if let Some(v) = self.live(local) {
                        found.push((PropName::dav(local), (!names).then_some(v)));
                    }
                }
                for (n, v) in &self.dead {
                    found.push((n.clone(), (!names).then(|| v.clone())));
                }
                propstat(&found, 200, out);
            }
            Propfind::Prop(wanted) => {
                let mut found = Vec::new();
                let mut missing = Vec::new();
                for name in wanted {
                    match self.value(name) {
                        Some(v) => found.push((name.clone(), Some(v))),
                        None => missing.push((name.clone(), None)),
                    }
                }
                propstat(&found, 200, out);
                propstat(&missing, 404, out);
            }
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
