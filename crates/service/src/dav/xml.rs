//! WebDAV request bodies in, multi-status text out (sans-IO).
//!
//! Bodies are read by quick-xml's namespace-aware reader into a small tree,
//! bounded in size ([`MAX_BODY`], checked by the caller), depth
//! ([`MAX_DEPTH`]) and element count ([`MAX_NODES`]). A `DOCTYPE`, an entity
//! other than the five predefined ones, an unknown prefix or any
//! well-formedness error is [`XmlError`] (400): nothing is ever expanded.

use quick_xml::events::Event;
use quick_xml::name::ResolveResult;
use quick_xml::NsReader;

/// The largest request body read (PROPPATCH values included).
pub const MAX_BODY: usize = 1 << 20;
/// The deepest element nesting taken.
pub const MAX_DEPTH: usize = 64;
/// The most elements and text nodes in one body.
pub const MAX_NODES: usize = 20_000;
/// The most attributes on one element (quick-xml checks each against the
/// ones before it for duplicates).
pub const MAX_ATTRIBUTES: usize = 256;
/// The most namespace declarations in scope at once: quick-xml resolves
/// each prefix by a scan of those in scope, so many of them over many
/// elements cost a product (a 400 KB body took 0.27 CPU-s on an async
/// worker). Clients declare a handful.
pub const MAX_BINDINGS: usize = 256;

/// The DAV: namespace.
pub const DAV: &str = "DAV:";

/// Why a body was refused (always 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad XML body: {0}")]
pub struct XmlError(pub String);

fn bad(why: impl Into<String>) -> XmlError {
    XmlError(why.into())
}

/// A property's name: namespace URI (empty: none) and local name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PropName {
    pub ns: String,
    pub local: String,
}

impl PropName {
    pub fn dav(local: &str) -> PropName {
        PropName {
            ns: DAV.to_string(),
            local: local.to_string(),
        }
    }

    pub fn is_dav(&self) -> bool {
        self.ns == DAV
    }
}

/// One node of a parsed body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    Element(Element),
    Text(String),
}

/// An element, its name resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Element {
    pub name: PropName,
    /// Attributes other than namespace declarations (`xml:lang` kept as
    /// written, other prefixed ones dropped).
    pub attrs: Vec<(String, String)>,
    pub children: Vec<Node>,
}

impl Element {
    /// Child elements.
    pub fn elements(&self) -> impl Iterator<Item = &Element> {
        self.children.iter().filter_map(|n| match n {
            Node::Element(e) => Some(e),
            Node::Text(_) => None,
        })
    }

    /// The first child element in DAV: called `local`.
    pub fn dav_child(&self, local: &str) -> Option<&Element> {
        self.elements()
            .find(|e| e.name.is_dav() && e.name.local == local)
    }

    /// The element's text (its text children joined).
    pub fn text(&self) -> String {
        self.children
            .iter()
            .filter_map(|n| match n {
                Node::Text(t) => Some(t.as_str()),
                Node::Element(_) => None,
            })
            .collect()
    }

    /// The content as well-formed XML that stands alone: every element
    /// declares its own namespace, so the value means the same wherever it
    /// is written back.
    pub fn inner_xml(&self) -> String {
        let mut out = String::new();
        // An explicit stack: the content's depth is bounded by MAX_DEPTH
        // anyway, but the writer needs no recursion.
        enum Step<'a> {
            Open(&'a Node),
            Close(&'a Element),
        }
        let mut stack: Vec<Step> = self.children.iter().rev().map(Step::Open).collect();
        while let Some(step) = stack.pop() {
            match step {
                Step::Open(Node::Text(t)) => escape_into(t, &mut out),
                Step::Open(Node::Element(e)) => {
                    out.push('<');
                    out.push_str(&e.name.local);
                    out.push_str(" xmlns=\"");
                    escape_into(&e.name.ns, &mut out);
                    out.push('"');
                    for (k, v) in &e.attrs {
                        out.push(' ');
                        out.push_str(k);
                        out.push_str("=\"");
                        escape_into(v, &mut out);
                        out.push('"');
                    }
                    if e.children.is_empty() {
                        out.push_str("/>");
                    } else {
                        out.push('>');
                        stack.push(Step::Close(e));
                        stack.extend(e.children.iter().rev().map(Step::Open));
                    }
                }
                Step::Close(e) => {
                    out.push_str("</");
                    out.push_str(&e.name.local);
                    out.push('>');
                }
            }
        }
        out
    }
}

/// Parse a whole body into its root element.
pub fn parse(body: &[u8]) -> Result<Element, XmlError> {
    if body.len() > MAX_BODY {
        return Err(bad("the body is larger than 1 MiB"));
    }
    let text = std::str::from_utf8(body).map_err(|_| bad("not UTF-8"))?;
    let mut reader = NsReader::from_str(text);
    reader.config_mut().check_end_names = true;
    let mut stack: Vec<Element> = Vec::new();
    // The declarations each open element made, and their sum.
    let mut declared: Vec<usize> = Vec::new();
    let mut in_scope = 0usize;
    let mut root: Option<Element> = None;
    let mut nodes = 0usize;
    loop {
        let (ns, event) = reader
            .read_resolved_event()
            .map_err(|e| bad(e.to_string()))?;
        let ns = resolved(ns)?;
        match event {
            Event::Start(start) | Event::Empty(start) if root.is_some() => {
                let _ = start;
                return Err(bad("content after the root element"));
            }
            Event::Start(ref start) | Event::Empty(ref start) => {
                nodes += 1;
                if nodes > MAX_NODES {
                    return Err(bad("too many elements"));
                }
                if stack.len() >= MAX_DEPTH {
                    return Err(bad("nested too deeply"));
                }
                let local = std::str::from_utf8(start.local_name().into_inner())
                    .map_err(|_| bad("not UTF-8"))?
                    .to_string();
                let mut attrs = Vec::new();
                let mut bindings = 0usize;
                for (n, a) in start.attributes().enumerate() {
                    if n >= MAX_ATTRIBUTES {
                        return Err(bad("too many attributes on one element"));
                    }
                    let a = a.map_err(|e| bad(e.to_string()))?;
                    let key =
                        std::str::from_utf8(a.key.into_inner()).map_err(|_| bad("not UTF-8"))?;
                    if key == "xmlns" || key.starts_with("xmlns:") {
                        // An empty binding of a prefix is not allowed in
                        // XML 1.0 namespaces.
                        if key.starts_with("xmlns:") && a.value.is_empty() {
                            return Err(bad("a namespace prefix bound to nothing"));
                        }
                        bindings += 1;
                        if in_scope + bindings > MAX_BINDINGS {
                            return Err(bad("too many namespace declarations in scope"));
                        }
                        continue;
                    }
                    if key.contains(':') && !key.starts_with("xml:") {
                        continue;
                    }
                    let value = a
                        .normalized_value(quick_xml::XmlVersion::Implicit1_0)
                        .map_err(|e| bad(e.to_string()))?;
                    attrs.push((key.to_string(), value.into_owned()));
                }
                let el = Element {
                    name: PropName { ns, local },
                    attrs,
                    children: Vec::new(),
                };
                if matches!(event, Event::Empty(_)) {
                    close(el, &mut stack, &mut root);
                } else {
                    stack.push(el);
                    declared.push(bindings);
                    in_scope += bindings;
                }
            }
            Event::End(_) => {
                let el = stack.pop().ok_or_else(|| bad("an end tag without start"))?;
                in_scope -= declared.pop().unwrap_or(0);
                close(el, &mut stack, &mut root);
            }
            Event::Text(t) => {
                let s = t.decode().map_err(|e| bad(e.to_string()))?;
                push_text(&mut stack, &s, &mut nodes)?;
            }
            Event::CData(t) => {
                let s = t.decode().map_err(|e| bad(e.to_string()))?;
                push_text(&mut stack, &s, &mut nodes)?;
            }
            Event::GeneralRef(r) => {
                let s = if r.is_char_ref() {
                    r.resolve_char_ref()
                        .map_err(|e| bad(e.to_string()))?
                        .ok_or_else(|| bad("a bad character reference"))?
                        .to_string()
                } else {
                    match &*r.decode().map_err(|e| bad(e.to_string()))? {
                        "amp" => "&",
                        "lt" => "<",
                        "gt" => ">",
                        "quot" => "\"",
                        "apos" => "'",
                        _ => return Err(bad("entities other than the predefined five")),
                    }
                    .to_string()
                };
                push_text(&mut stack, &s, &mut nodes)?;
            }
            Event::DocType(_) => return Err(bad("a DOCTYPE (entities are not expanded)")),
            Event::Comment(_) | Event::Decl(_) | Event::PI(_) => {}
            Event::Eof => break,
        }
    }
    if !stack.is_empty() {
        return Err(bad("the body ends inside an element"));
    }
    root.ok_or_else(|| bad("no root element"))
}

fn resolved(ns: ResolveResult<'_>) -> Result<String, XmlError> {
    match ns {
        ResolveResult::Unbound => Ok(String::new()),
        ResolveResult::Bound(ns) => std::str::from_utf8(ns.into_inner())
            .map(str::to_string)
            .map_err(|_| bad("not UTF-8")),
        ResolveResult::Unknown(p) => Err(bad(format!(
            "the prefix {:?} is not declared",
            String::from_utf8_lossy(&p)
        ))),
    }
}

fn close(el: Element, stack: &mut [Element], root: &mut Option<Element>) {
    match stack.last_mut() {
        Some(parent) => parent.children.push(Node::Element(el)),
        None => *root = Some(el),
    }
}

fn push_text(stack: &mut [Element], s: &str, nodes: &mut usize) -> Result<(), XmlError> {
    match stack.last_mut() {
        Some(parent) => {
            if let Some(Node::Text(prev)) = parent.children.last_mut() {
                prev.push_str(s);
            } else {
                *nodes += 1;
                if *nodes > MAX_NODES {
                    return Err(bad("too many nodes"));
                }
                parent.children.push(Node::Text(s.to_string()));
            }
            Ok(())
        }
        None if s.trim().is_empty() => Ok(()),
        None => Err(bad("text outside the root element")),
    }
}

/// What a PROPFIND asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Propfind {
    /// Every property (an empty body too); `include` names more.
    AllProp,
    /// The names only.
    PropName,
    /// These properties.
    Prop(Vec<PropName>),
}

/// A PROPFIND body; an empty one is `allprop` (RFC 4918 §9.1).
pub fn parse_propfind(body: &[u8]) -> Result<Propfind, XmlError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Propfind::AllProp);
    }
    let root = parse(body)?;
    if !(root.name.is_dav() && root.name.local == "propfind") {
        return Err(bad("the root element is not DAV:propfind"));
    }
    for e in root.elements() {
        if !e.name.is_dav() {
            continue;
        }
        match e.name.local.as_str() {
            "allprop" => return Ok(Propfind::AllProp),
            "propname" => return Ok(Propfind::PropName),
            "prop" => {
                return Ok(Propfind::Prop(
                    e.elements().map(|p| p.name.clone()).collect(),
                ))
            }
            _ => {}
        }
    }
    Err(bad("propfind names none of allprop, propname, prop"))
}

/// One PROPPATCH instruction, in document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Patch {
    /// Set to this value (standalone XML, see [`Element::inner_xml`]).
    Set(PropName, String),
    Remove(PropName),
}

/// A PROPPATCH body (`DAV:propertyupdate` of `set`/`remove`).
pub fn parse_proppatch(body: &[u8]) -> Result<Vec<Patch>, XmlError> {
    let root = parse(body)?;
    if !(root.name.is_dav() && root.name.local == "propertyupdate") {
        return Err(bad("the root element is not DAV:propertyupdate"));
    }
    let mut out = Vec::new();
    for op in root.elements().filter(|e| e.name.is_dav()) {
        let set = match op.name.local.as_str() {
            "set" => true,
            "remove" => false,
            _ => continue,
        };
        for prop in op
            .elements()
            .filter(|e| e.name.is_dav() && e.name.local == "prop")
        {
            for p in prop.elements() {
                out.push(if set {
                    Patch::Set(p.name.clone(), p.inner_xml())
                } else {
                    Patch::Remove(p.name.clone())
                });
            }
        }
    }
    if out.is_empty() {
        return Err(bad("propertyupdate changes nothing"));
    }
    Ok(out)
}

/// A LOCK request body (`DAV:lockinfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockInfo {
    pub exclusive: bool,
    /// The `DAV:owner` content, as standalone XML.
    pub owner: Option<String>,
}

/// A LOCK body; only write locks exist.
pub fn parse_lockinfo(body: &[u8]) -> Result<LockInfo, XmlError> {
    let root = parse(body)?;
    if !(root.name.is_dav() && root.name.local == "lockinfo") {
        return Err(bad("the root element is not DAV:lockinfo"));
    }
    let scope = root
        .dav_child("lockscope")
        .and_then(|s| s.elements().next())
        .ok_or_else(|| bad("lockinfo without lockscope"))?;
    let exclusive = match (scope.name.is_dav(), scope.name.local.as_str()) {
        (true, "exclusive") => true,
        (true, "shared") => false,
        _ => return Err(bad("lockscope is neither exclusive nor shared")),
    };
    let kind = root
        .dav_child("locktype")
        .and_then(|s| s.elements().next())
        .ok_or_else(|| bad("lockinfo without locktype"))?;
    if !(kind.name.is_dav() && kind.name.local == "write") {
        return Err(bad("only write locks exist"));
    }
    let owner = root.dav_child("owner").map(Element::inner_xml);
    Ok(LockInfo { exclusive, owner })
}

/// `s` escaped for XML text and attribute values.
pub fn escape_into(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
}

/// The start of a multi-status document.
pub const MULTISTATUS_START: &str =
    "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:multistatus xmlns:D=\"DAV:\">\n";
/// Its end.
pub const MULTISTATUS_END: &str = "</D:multistatus>\n";

/// The reason phrase written in `DAV:status`.
pub fn status_line(status: u16) -> String {
    let reason = match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        403 => "Forbidden",
        404 => "Not Found",
        409 => "Conflict",
        412 => "Precondition Failed",
        423 => "Locked",
        424 => "Failed Dependency",
        507 => "Insufficient Storage",
        508 => "Loop Detected",
        _ => "Error",
    };
    format!("HTTP/1.1 {status} {reason}")
}

/// `<D:response>` with one status for `href` (COPY, MOVE, DELETE failures).
pub fn status_response(href: &str, status: u16, out: &mut String) {
    out.push_str("<D:response><D:href>");
    escape_into(href, out);
    out.push_str("</D:href><D:status>");
    out.push_str(&status_line(status));
    out.push_str("</D:status></D:response>\n");
}

/// A property element: `value` (already XML) inside, or empty.
pub fn prop_element(name: &PropName, value: Option<&str>, out: &mut String) {
    let (open, close) = if name.is_dav() {
        (format!("D:{}", name.local), format!("D:{}", name.local))
    } else if name.ns.is_empty() {
        (format!("{} xmlns=\"\"", name.local), name.local.clone())
    } else {
        let mut ns = String::new();
        escape_into(&name.ns, &mut ns);
        (
            format!("P:{} xmlns:P=\"{ns}\"", name.local),
            format!("P:{}", name.local),
        )
    };
    match value {
        Some(v) if !v.is_empty() => {
            out.push('<');
            out.push_str(&open);
            out.push('>');
            out.push_str(v);
            out.push_str("</");
            out.push_str(&close);
            out.push('>');
        }
        _ => {
            out.push('<');
            out.push_str(&open);
            out.push_str("/>");
        }
    }
}

/// One `propstat`: the properties (name, value) with one status.
pub fn propstat(props: &[(PropName, Option<String>)], status: u16, out: &mut String) {
    if props.is_empty() {
        return;
    }
    out.push_str("<D:propstat><D:prop>");
    for (name, value) in props {
        prop_element(name, value.as_deref(), out);
    }
    out.push_str("</D:prop><D:status>");
    out.push_str(&status_line(status));
    out.push_str("</D:status></D:propstat>");
}

/// A precondition error body (RFC 4918 §16), e.g. `propfind-finite-depth`.
pub fn error_body(condition: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<D:error xmlns:D=\"DAV:\"><D:{condition}/></D:error>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A propfind of `elements` properties under `levels` nested
    /// elements, each declaring `per_level` prefixes (each property uses
    /// the outermost one, found last by a scan from the innermost).
    fn many_bindings(levels: usize, per_level: usize, elements: usize) -> String {
        let mut body = String::from("<D:propfind xmlns:D=\"DAV:\"><D:prop>");
        for l in 0..levels {
            body.push_str("<D:x");
            for i in 0..per_level {
                body.push_str(&format!(" xmlns:p{l}x{i}=\"urn:{i}\""));
            }
            body.push('>');
        }
        for _ in 0..elements {
            body.push_str("<p0x0:a/>");
        }
        body.push_str(&"</D:x>".repeat(levels));
        body.push_str("</D:prop></D:propfind>");
        body
    }

    #[test]
    fn namespace_declarations_and_attributes_are_bounded() {
        // What clients send parses: a few declarations, also nested, and
        // any number over a body as long as few are in scope at once.
        assert!(parse(many_bindings(4, 5, 100).as_bytes()).is_ok());
        let siblings = format!(
            "<D:propfind xmlns:D=\"DAV:\"><D:prop>{}</D:prop></D:propfind>",
            "<x:a xmlns:x=\"urn:x\"/>".repeat(MAX_BINDINGS * 2)
        );
        assert!(parse(siblings.as_bytes()).is_ok(), "out of scope again");
        // A 400 KB body of declarations nested 63 deep (quick-xml takes 256
        // on one element) is refused before the elements whose prefixes
        // would each be looked up among all of them.
        let body = many_bindings(63, 255, 10_000);
        assert!(body.len() > 400_000, "{}", body.len());
        let e = parse(body.as_bytes()).unwrap_err();
        assert!(e.0.contains("namespace declarations in scope"), "{e}");
        let attrs: String = (0..=MAX_ATTRIBUTES)
            .map(|i| format!(" a{i}=\"v\""))
            .collect();
        let e = parse(format!("<r{attrs}/>").as_bytes()).unwrap_err();
        assert!(e.0.contains("attributes"), "{e}");
    }

    #[test]
    fn propfind_forms() {
        assert_eq!(parse_propfind(b"").unwrap(), Propfind::AllProp);
        assert_eq!(
            parse_propfind(b"<D:propfind xmlns:D='DAV:'><D:propname/></D:propfind>").unwrap(),
            Propfind::PropName
        );
        let p = parse_propfind(
            b"<?xml version='1.0'?><propfind xmlns='DAV:'><prop><getetag/><x:a xmlns:x='urn:x'/><b xmlns=''/></prop></propfind>",
        )
        .unwrap();
        assert_eq!(
            p,
            Propfind::Prop(vec![
                PropName::dav("getetag"),
                PropName {
                    ns: "urn:x".into(),
                    local: "a".into()
                },
                PropName {
                    ns: "".into(),
                    local: "b".into()
                },
            ])
        );
    }

    #[test]
    fn refuses_malformed_and_entities() {
        for body in [
            &b"<D:propfind xmlns:D='DAV:'><D:prop>"[..],
            b"<propfind xmlns='DAV:'></propfinx>",
            b"<D:propfind xmlns:D='DAV:'><D:prop><bar:foo xmlns:bar=''/></D:prop></D:propfind>",
            b"<x:propfind><x:allprop/></x:propfind>",
            b"<!DOCTYPE d [<!ENTITY a 'aaaa'>]><propfind xmlns='DAV:'><prop>&a;</prop></propfind>",
            b"<propfind xmlns='DAV:'><prop>&a;</prop></propfind>",
            b"<propfind xmlns='DAV:'/><propfind xmlns='DAV:'/>",
            b"\xff\xfe",
        ] {
            assert!(
                parse_propfind(body).is_err(),
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        let deep = format!(
            "{}{}",
            "<a>".repeat(MAX_DEPTH + 1),
            "</a>".repeat(MAX_DEPTH + 1)
        );
        assert!(parse(deep.as_bytes()).is_err());
    }

    #[test]
    fn proppatch_values_stand_alone() {
        let p = parse_proppatch(
            "<D:propertyupdate xmlns:D='DAV:' xmlns:t='urn:t'><D:set><D:prop>\
             <t:a>x &amp; &#x10000;<t:b attr='1'>in</t:b></t:a><t:c/></D:prop></D:set>\
             <D:remove><D:prop><t:d/></D:prop></D:remove></D:propertyupdate>"
                .as_bytes(),
        )
        .unwrap();
        let t = |l: &str| PropName {
            ns: "urn:t".into(),
            local: l.into(),
        };
        assert_eq!(
            p,
            vec![
                Patch::Set(
                    t("a"),
                    "x &amp; \u{10000}<b xmlns=\"urn:t\" attr=\"1\">in</b>".into()
                ),
                Patch::Set(t("c"), String::new()),
                Patch::Remove(t("d")),
            ]
        );
    }

    #[test]
    fn lockinfo() {
        let l = parse_lockinfo(
            b"<D:lockinfo xmlns:D='DAV:'><D:lockscope><D:shared/></D:lockscope>\
              <D:locktype><D:write/></D:locktype><D:owner><D:href>me</D:href></D:owner></D:lockinfo>",
        )
        .unwrap();
        assert!(!l.exclusive);
        assert_eq!(l.owner.as_deref(), Some("<href xmlns=\"DAV:\">me</href>"));
    }

    proptest! {
        // Any bytes: an answer, never a panic, and a value that parses again.
        #[test]
        fn never_panics(body in proptest::collection::vec(any::<u8>(), 0..400)) {
            let _ = parse_propfind(&body);
            if let Ok(patches) = parse_proppatch(&body) {
                for p in patches {
                    if let Patch::Set(_, v) = p {
                        let doc = format!("<r>{v}</r>");
                        prop_assert!(parse(doc.as_bytes()).is_ok(), "{doc}");
                    }
                }
            }
            let _ = parse_lockinfo(&body);
        }

        #[test]
        fn values_round_trip(text in "[a-z<>&\"' \u{e9}\u{10000}]{0,40}") {
            let mut esc = String::new();
            escape_into(&text, &mut esc);
            let doc = format!("<D:propertyupdate xmlns:D='DAV:'><D:set><D:prop><a xmlns='urn:a'>{esc}</a></D:prop></D:set></D:propertyupdate>");
            let p = parse_proppatch(doc.as_bytes()).unwrap();
            prop_assert_eq!(&p[0], &Patch::Set(PropName { ns: "urn:a".into(), local: "a".into() }, esc));
        }
    }
}
