use wirespeed_extract::{find_xop_include, normalize_content_id, ExtractError};

const MTOM: &str = r#"<?xml version="1.0" encoding="utf-8"?>
<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body>
<tns:Upload xmlns:tns="urn:x"><tns:name>a.bin</tns:name>
<tns:data><xop:Include xmlns:xop="http://www.w3.org/2004/08/xop/include" href="cid:1.urn%3Auuid%3A4a3b@apache.org"/></tns:data>
</tns:Upload></s:Body></s:Envelope>"#;

#[test]
fn finds_include_with_prefixes() {
    assert_eq!(
        find_xop_include(MTOM.as_bytes(), "data").unwrap(),
        "1.urn:uuid:4a3b@apache.org"
    );
}

#[test]
fn namespace_declared_on_ancestor_and_other_prefixes() {
    let doc = r#"<e xmlns:inc="http://www.w3.org/2004/08/xop/include"><b><data>
        <inc:Include href='CID:%3Cpart1%40example.org%3E'></inc:Include></data></b></e>"#;
    assert_eq!(
        find_xop_include(doc.as_bytes(), "data").unwrap(),
        "part1@example.org"
    );
    // Default namespace binding.
    let doc = r#"<e><d:data xmlns:d="u"><Include xmlns="http://www.w3.org/2004/08/xop/include" href="cid:abc"/></d:data></e>"#;
    assert_eq!(find_xop_include(doc.as_bytes(), "data").unwrap(), "abc");
}

#[test]
fn include_in_a_wrong_namespace_or_outside_the_field_is_an_error() {
    let doc = r#"<e><data><x:Include xmlns:x="urn:not-xop" href="cid:abc"/></data></e>"#;
    assert!(matches!(
        find_xop_include(doc.as_bytes(), "data"),
        Err(ExtractError::Xop(_))
    ));
    // Include outside the field does not count.
    let doc = r#"<e xmlns:xop="http://www.w3.org/2004/08/xop/include"><data/><xop:Include href="cid:a"/></e>"#;
    assert!(matches!(
        find_xop_include(doc.as_bytes(), "data"),
        Err(ExtractError::Xop(_))
    ));
    assert!(matches!(
        find_xop_include(MTOM.as_bytes(), "nope"),
        Err(ExtractError::FieldNotFound { .. })
    ));
    let doc = r#"<e xmlns:xop="http://www.w3.org/2004/08/xop/include"><data><xop:Include href="http://x/a"/></data></e>"#;
    assert!(matches!(
        find_xop_include(doc.as_bytes(), "data"),
        Err(ExtractError::Xop(_))
    ));
    let doc = r#"<e xmlns:xop="http://www.w3.org/2004/08/xop/include"><data><xop:Include href="cid:%zz"/></data></e>"#;
    assert!(matches!(
        find_xop_include(doc.as_bytes(), "data"),
        Err(ExtractError::Xop(_))
    ));
    let doc =
        r#"<e xmlns:xop="http://www.w3.org/2004/08/xop/include"><data><xop:Include/></data></e>"#;
    assert!(matches!(
        find_xop_include(doc.as_bytes(), "data"),
        Err(ExtractError::Xop(_))
    ));
}

#[test]
fn malformed_root_part_is_rejected() {
    let truncated = &MTOM[..MTOM.len() - 5];
    assert!(matches!(
        find_xop_include(truncated.as_bytes(), "data"),
        Err(ExtractError::UnexpectedEof { .. })
    ));
    let doc = format!("<!DOCTYPE x>{MTOM}");
    assert!(matches!(
        find_xop_include(doc.as_bytes(), "data"),
        Err(ExtractError::DoctypeRefused { .. })
    ));
}

#[test]
fn content_ids_lose_angle_brackets_and_whitespace() {
    assert_eq!(
        normalize_content_id("<1.urn:uuid:4a3b@apache.org>"),
        "1.urn:uuid:4a3b@apache.org"
    );
    assert_eq!(normalize_content_id("  <abc> "), "abc");
    assert_eq!(normalize_content_id("abc"), "abc");
    assert_eq!(normalize_content_id(""), "");
    assert_eq!(normalize_content_id("<>"), "");
}

/// A root part with tens of thousands of namespace bindings in scope and as
/// many `Include` elements outside the XOP namespace: resolving each prefix
/// used to scan every binding (~8 s of CPU for a 1 MB part). Now it costs
/// about what a plain document of the same size costs; compared in the same
/// process, best of 3, with a wide margin.
#[test]
fn many_bindings_and_includes_stay_linear() {
    const WRAPPERS: usize = 12;
    const PER_WRAPPER: usize = 2500;
    const INCLUDES: usize = 30_000;
    let mut evil = String::new();
    for w in 0..WRAPPERS {
        evil.push_str("<w");
        for i in 0..PER_WRAPPER {
            evil.push_str(&format!(" xmlns:p{}=\"u\"", w * PER_WRAPPER + i));
        }
        evil.push('>');
    }
    evil.push_str("<data>");
    for _ in 0..INCLUDES {
        // p0 is bound first, so a scan from the innermost binding is longest.
        evil.push_str("<p0:Include/>");
    }
    evil.push_str(
        "<xop:Include xmlns:xop=\"http://www.w3.org/2004/08/xop/include\" href=\"cid:x\"/>",
    );
    evil.push_str("</data>");
    for _ in 0..WRAPPERS {
        evil.push_str("</w>");
    }
    // The same size without bindings or includes.
    let mut plain = String::from("<w><data>");
    while plain.len() + 200 < evil.len() {
        plain.push_str("<x a=\"1\">text</x>");
    }
    plain.push_str("<xop:Include xmlns:xop=\"http://www.w3.org/2004/08/xop/include\" href=\"cid:x\"/></data></w>");

    let best = |doc: &str| {
        (0..3)
            .map(|_| {
                let t = std::time::Instant::now();
                assert_eq!(find_xop_include(doc.as_bytes(), "data").unwrap(), "x");
                t.elapsed()
            })
            .min()
            .unwrap()
    };
    let (e, p) = (best(&evil), best(&plain));
    assert!(
        e < p * 5 + std::time::Duration::from_millis(50),
        "pathological {e:?} vs plain {p:?} ({} bytes)",
        evil.len()
    );
}
