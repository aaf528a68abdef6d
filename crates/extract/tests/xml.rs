mod common;

use common::{bytewise, extract_cuts, whole};
use proptest::prelude::*;
use wirespeed_extract::{ExtractError, FieldExtractor, XmlFieldExtractor};

fn x() -> XmlFieldExtractor {
    XmlFieldExtractor::new("data")
}

/// Extracts whole and byte-at-a-time; both must agree (text or error kind).
fn both(doc: &[u8]) -> Result<Vec<u8>, ExtractError> {
    let a = whole(x(), doc);
    let b = bytewise(x(), doc);
    match (&a, &b) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "whole vs bytewise text differ"),
        (Err(ea), Err(eb)) => assert_eq!(
            std::mem::discriminant(ea),
            std::mem::discriminant(eb),
            "whole: {ea}, bytewise: {eb}"
        ),
        _ => panic!("whole {a:?} vs bytewise {b:?}"),
    }
    a
}

fn b64_lines(lines: usize, eol: &str) -> String {
    let alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for l in 0..lines {
        for i in 0..76 {
            s.push(alpha.as_bytes()[(l * 7 + i) % 64] as char);
        }
        s.push_str(eol);
    }
    s.push_str("QUJD");
    s
}

fn soap(prefix: &str, field: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\r\n\
<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\" \
xmlns:xsi='http://www.w3.org/2001/XMLSchema-instance'>\
<soap:Header/><soap:Body><ns1:Upload xmlns:ns1=\"urn:x\">\
<ns1:name>a &amp; b.bin</ns1:name>\
<{prefix}data xsi:type=\"xsd:base64Binary\">{field}</{prefix}data>\
<ns1:after>x</ns1:after></ns1:Upload></soap:Body></soap:Envelope>\n"
    )
}

#[test]
fn soap_base64_with_crlf_is_extracted_under_any_prefix() {
    let field = b64_lines(20, "\r\n");
    for prefix in ["", "ns1:", "tns:", "a:"] {
        let doc = soap(prefix, &field);
        assert_eq!(both(doc.as_bytes()).unwrap(), field.as_bytes(), "{prefix}");
    }
}

#[test]
fn dotnet_cr_char_refs_decode_to_crlf() {
    // .NET's XmlWriter escapes CR as &#xD; / &#13; and keeps the LF.
    let raw = b64_lines(10, "&#13;\n") + &b64_lines(2, "&#xD;&#xA;");
    let want = b64_lines(10, "\r\n") + &b64_lines(2, "\r\n");
    let doc = soap("ns1:", &raw);
    assert_eq!(both(doc.as_bytes()).unwrap(), want.as_bytes());
}

#[test]
fn entities_and_char_refs_are_decoded() {
    let doc = "<a><data>&lt;&gt;&amp;&quot;&apos;&#65;&#x42;&#x1F600;&#0013;</data></a>";
    assert_eq!(
        both(doc.as_bytes()).unwrap(),
        "<>&\"'AB\u{1F600}\r".as_bytes()
    );
}

#[test]
fn cdata_is_text_and_comments_and_pis_are_skipped() {
    let doc =
        "<a><data>AB<!-- c -- no? -->CD<![CDATA[E<F&G]H]]I]]]>J<?pi x?>K<![CDATA[]]></data></a>";
    // Comment with "--" inside is malformed; fix it and check the rest.
    assert!(both(doc.as_bytes()).is_err());
    let doc = "<a><data>AB<!-- c - x -->CD<![CDATA[E<F&G]H]]I]]]>J<?pi x?>K<![CDATA[]]></data></a>";
    assert_eq!(both(doc.as_bytes()).unwrap(), b"ABCDE<F&G]H]]I]JK");
}

#[test]
fn first_element_with_the_local_name_wins_even_when_empty() {
    assert_eq!(both(b"<r><data/><data>X</data></r>").unwrap(), b"");
    assert_eq!(both(b"<r><data></data></r>").unwrap(), b"");
    assert_eq!(
        both(b"<r><x:data xmlns:x='u'>1</x:data><data>2</data></r>").unwrap(),
        b"1"
    );
    assert_eq!(both(b"<data>root</data>").unwrap(), b"root");
    // Only the local name counts: `datax`, `xdata` do not match.
    assert_eq!(
        both(b"<r><datax>1</datax><y:xdata>2</y:xdata><data>3</data></r>").unwrap(),
        b"3"
    );
}

#[test]
fn bom_prolog_and_epilog_are_accepted() {
    let mut doc = vec![0xEF, 0xBB, 0xBF];
    doc.extend_from_slice(
        b"<?xml version='1.0'?>\n<!-- hi -->\n<r><data>A</data></r>\n<!-- bye --><?pi?>\n",
    );
    assert_eq!(both(&doc).unwrap(), b"A");
}

#[test]
fn sink_error_propagates_and_poisons() {
    let mut x = x();
    let mut sink = |_: &[u8]| Err(ExtractError::sink(std::io::Error::other("disk full")));
    let err = x.feed(b"<r><data>AAAA</data></r>", &mut sink).unwrap_err();
    assert!(matches!(err, ExtractError::Sink(_)), "{err}");
    assert!(matches!(
        x.feed(b"", &mut sink),
        Err(ExtractError::Poisoned)
    ));
    assert!(matches!(x.finish(), Err(ExtractError::Poisoned)));
}

#[test]
fn zero_copy_pieces_are_borrowed_runs() {
    // A plain text run arrives as one piece per feed, not byte by byte.
    let field = "A".repeat(100_000);
    let doc = format!("<r><data>{field}</data></r>");
    let mut pieces = 0;
    let mut x = x();
    x.feed(doc.as_bytes(), &mut |_p: &[u8]| {
        pieces += 1;
        Ok(())
    })
    .unwrap();
    x.finish().unwrap();
    assert_eq!(pieces, 1);
}

macro_rules! assert_err {
    ($doc:expr, $pat:pat) => {{
        let e = both($doc.as_ref()).expect_err("expected an error");
        assert!(
            matches!(e, $pat),
            "{:?}: got {e}",
            String::from_utf8_lossy($doc.as_ref())
        );
    }};
}

#[test]
fn malformed_documents_are_rejected_with_the_right_error() {
    use ExtractError::*;
    assert_err!(
        b"<!DOCTYPE r [<!ENTITY x 'y'>]><r><data>&x;</data></r>",
        DoctypeRefused { offset: 0 }
    );
    assert_err!(
        b"<?xml version='1.0'?><!DOCTYPE r><r/>",
        DoctypeRefused { offset: 21 }
    );
    assert_err!(b"<r><data>A</data></s>", MismatchedTag { .. });
    assert_err!(b"<r><data>A</dat></r>", MismatchedTag { .. });
    assert_err!(b"<r><data>A</data>", UnexpectedEof { .. });
    assert_err!(b"<r><data>AAAA", UnexpectedEof { .. });
    assert_err!(b"<r><data>A</data></r", UnexpectedEof { .. });
    assert_err!(b"<r><data>A&#13", UnexpectedEof { .. });
    assert_err!(b"", UnexpectedEof { .. });
    assert_err!(b"  \n", UnexpectedEof { .. });
    assert_err!(b"<r><other>A</other></r>", FieldNotFound { .. });
    assert_err!(b"<r><data>A<b>x</b></data></r>", NestedElement { .. });
    assert_err!(b"<r><data>A<b/></data></r>", NestedElement { .. });
    assert_err!(b"<r><data>&nbsp;</data></r>", UnknownEntity { .. });
    assert_err!(b"<r><data>&#0;</data></r>", BadCharRef { .. });
    assert_err!(b"<r><data>&#xD800;</data></r>", BadCharRef { .. });
    assert_err!(b"<r><data>&#x110000;</data></r>", BadCharRef { .. });
    assert_err!(b"<r><data>&#9999999999999;</data></r>", BadCharRef { .. });
    assert_err!(b"<r><data>&#00000000000000013;</data></r>", Xml { .. });
    assert_err!(b"<r><data>&#;</data></r>", BadCharRef { .. });
    assert_err!(b"<r><data>& x;</data></r>", Xml { .. });
    assert_err!(b"<r><data>A</data></r>junk", Xml { .. });
    assert_err!(b"junk<r><data>A</data></r>", Xml { .. });
    assert_err!(b"<r><data>A</data></r><r/>", Xml { .. });
    assert_err!(b"<r><1data>A</1data></r>", Xml { .. });
    assert_err!(b"<r><a:b:data>A</a:b:data></r>", Xml { .. });
    assert_err!(b"<r><data a=1>A</data></r>", Xml { .. });
    assert_err!(b"<r><data a='1'b='2'>A</data></r>", Xml { .. });
    assert_err!(b"<r><data a='<'>A</data></r>", Xml { .. });
    assert_err!(b"<r><data a>A</data></r>", Xml { .. });
    assert_err!(b"<r><data>A < B</data></r>", Xml { .. });
    assert_err!(b"<r><data>A</data></r>&amp;", Xml { .. });
    assert_err!(b"<r><data>A</data><!-- a -- b --></r>", Xml { .. });
    assert_err!(b"<r><data>A</data><!ELEMENT x></r>", Xml { .. });
    assert_err!(b"<![CDATA[x]]><r><data>A</data></r>", Xml { .. });
    assert_err!(b"<r><data>A</data><?xml version='1.0'?></r>", Xml { .. });
    assert_err!(b"\n<?xml version='1.0'?><r><data>A</data></r>", Xml { .. });
    assert_err!(b"</r>", Xml { .. });
    assert_err!(b"<r><data/ ></r>", Xml { .. });
    // Malformed after the field: still rejected.
    assert_err!(b"<r><data>AAAA</data><x></y></r>", MismatchedTag { .. });
}

#[test]
fn depth_and_name_length_limits_are_enforced() {
    let deep = "<a>".repeat(300) + &"</a>".repeat(300);
    assert!(matches!(
        both(deep.as_bytes()),
        Err(ExtractError::LimitExceeded { .. })
    ));
    let long = format!("<{0}></{0}>", "n".repeat(2000));
    assert!(matches!(
        both(long.as_bytes()),
        Err(ExtractError::LimitExceeded { .. })
    ));
    let x = XmlFieldExtractor::new("data").with_max_depth(2);
    assert!(whole(x, b"<a><b><data>A</data></b></a>").is_err());
    let x = XmlFieldExtractor::new("data").with_max_depth(3);
    assert_eq!(whole(x, b"<a><b><data>A</data></b></a>").unwrap(), b"A");
}

/// Escapes arbitrary text for XML content in one of several styles.
fn escape(text: &str, style: u8) -> String {
    if style == 3 && !text.contains("]]>") {
        return format!("<![CDATA[{text}]]>");
    }
    let mut s = String::new();
    for c in text.chars() {
        match (c, style) {
            ('<', _) => s.push_str("&lt;"),
            ('&', _) => s.push_str("&amp;"),
            ('>', 1) => s.push_str("&gt;"),
            ('\r', 0) => s.push_str("&#13;"),
            ('\r', _) => s.push_str("&#xD;"),
            (c, 2) if c.is_ascii_alphabetic() => s.push_str(&format!("&#{};", c as u32)),
            (c, 1) if !c.is_ascii() => s.push_str(&format!("&#x{:X};", c as u32)),
            (c, _) => s.push(c),
        }
    }
    s
}

fn xml_text() -> impl Strategy<Value = String> {
    // XML Chars only (no NUL and friends), biased towards base64 and breaks.
    proptest::string::string_regex(
        "([A-Za-z0-9+/=]{0,80}(\r\n|\n|\r| |<|&|>|\\]\\]>|\\]|é|\u{1F600}|\t)?){0,8}",
    )
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn roundtrip_any_split(text in xml_text(), style in 0u8..4, cuts in proptest::collection::vec(0usize..2000, 0..12)) {
        let doc = format!("<s:E xmlns:s='u'><s:B><x:data>{}</x:data><t>z</t></s:B></s:E>", escape(&text, style));
        let mut cuts = cuts;
        cuts.sort_unstable();
        let got = extract_cuts(x(), doc.as_bytes(), &cuts).unwrap();
        prop_assert_eq!(got, text.as_bytes());
    }

    #[test]
    fn never_panics_and_split_invariant(doc in proptest::collection::vec(proptest::sample::select(b"<>/=&;#x:ad '\"![]-?CDATA\r\n0AB".to_vec()), 0..80), cut in 0usize..80) {
        let a = whole(x(), &doc);
        let b = extract_cuts(x(), &doc, &[cut]);
        prop_assert_eq!(a.is_ok(), b.is_ok());
        if let (Ok(a), Ok(b)) = (a, b) { prop_assert_eq!(a, b); }
    }

    #[test]
    fn truncation_is_rejected(cut in 0usize..200) {
        let doc = soap("ns1:", "QUJD&#13;\nREVG");
        let cut = cut.min(doc.len() - 2);
        // Every proper prefix that stops before the root closes is an error.
        prop_assert!(whole(x(), &doc.as_bytes()[..cut]).is_err());
    }
}
