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
fn wrong_namespace_or_missing() {
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
fn normalize() {
    assert_eq!(
        normalize_content_id("<1.urn:uuid:4a3b@apache.org>"),
        "1.urn:uuid:4a3b@apache.org"
    );
    assert_eq!(normalize_content_id("  <abc> "), "abc");
    assert_eq!(normalize_content_id("abc"), "abc");
    assert_eq!(normalize_content_id(""), "");
    assert_eq!(normalize_content_id("<>"), "");
}
