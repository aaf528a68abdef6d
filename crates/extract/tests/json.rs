mod common;

use common::{bytewise, extract_cuts, whole};
use proptest::prelude::*;
use wirespeed_extract::{ExtractError, FieldExtractor, JsonFieldExtractor};

fn j() -> JsonFieldExtractor {
    JsonFieldExtractor::new("data")
}

fn both(doc: &[u8]) -> Result<Vec<u8>, ExtractError> {
    let a = whole(j(), doc);
    let b = bytewise(j(), doc);
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

#[test]
fn escaped_line_breaks_are_decoded() {
    let doc = br#" { "name" : "a.bin", "other": {"data": 5, "x": [1, -0.5e+3, true, false, null, "s\"", {}, []]},
        "data" : "QUJD\r\nREVG\u000d\u000aR0hJ\/Sg==" , "after": [[[]]] } "#;
    assert_eq!(both(doc).unwrap(), b"QUJD\r\nREVG\r\nR0hJ/Sg==");
}

#[test]
fn all_escapes_and_surrogate_pairs_are_decoded() {
    let doc = br#"{"data":"\"\\\/\b\f\n\r\t\u0041\u00e9\u20AC\ud83d\ude00x"}"#;
    assert_eq!(both(doc).unwrap(), "\"\\/\u{8}\u{c}\n\r\tAé€😀x".as_bytes());
}

#[test]
fn only_the_exact_top_level_key_matches() {
    // Escaped key equal to the name matches; prefixes/extensions do not;
    // nested "data" keys do not.
    assert_eq!(
        both(br#"{"dat":"1","datax":"2","d\u0061ta":"3"}"#).unwrap(),
        b"3"
    );
    assert_eq!(both(br#"{"x":{"data":"1"},"data":"2"}"#).unwrap(), b"2");
    assert_eq!(both(br#"{"data":""}"#).unwrap(), b"");
    let x = JsonFieldExtractor::new("");
    assert_eq!(whole(x, br#"{"a":"1","":"2"}"#).unwrap(), b"2");
}

#[test]
fn sink_error_poisons_the_extractor() {
    let mut x = j();
    let mut sink = |_: &[u8]| Err(ExtractError::sink("nope"));
    assert!(matches!(
        x.feed(br#"{"data":"AA"}"#, &mut sink),
        Err(ExtractError::Sink(_))
    ));
    assert!(matches!(x.finish(), Err(ExtractError::Poisoned)));
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
    assert_err!(br#"{"data":"A"} x"#, Json { .. });
    assert_err!(br#"{"data":"A"}{}"#, Json { .. });
    assert_err!(br#"{"other":"A"}"#, FieldNotFound { .. });
    assert_err!(br#"{}"#, FieldNotFound { .. });
    assert_err!(br#"{"data":5}"#, NotAString { .. });
    assert_err!(br#"{"data":null}"#, NotAString { .. });
    assert_err!(br#"{"data":["A"]}"#, NotAString { .. });
    assert_err!(br#"{"data":"A","data":"B"}"#, DuplicateField { .. });
    assert_err!(br#"{"data":"AAAA"#, UnexpectedEof { .. });
    assert_err!(br#"{"data":"AAAA""#, UnexpectedEof { .. });
    assert_err!(br#"{"data":"AA\"#, UnexpectedEof { .. });
    assert_err!(br#"{"data":"AA\u00"#, UnexpectedEof { .. });
    assert_err!(b"", UnexpectedEof { .. });
    assert_err!(br#"{"data":"A\x"}"#, Json { .. });
    assert_err!(br#"{"data":"A\u12G4"}"#, Json { .. });
    assert_err!(br#"{"data":"A\ud800"}"#, Json { .. });
    assert_err!(br#"{"data":"A\ud800\u0041"}"#, Json { .. });
    assert_err!(br#"{"data":"A\udc00"}"#, Json { .. });
    assert_err!(b"{\"data\":\"A\nB\"}", Json { .. });
    assert_err!(br#"["data"]"#, Json { .. });
    assert_err!(br#""data""#, Json { .. });
    assert_err!(br#"{"data":"A",}"#, Json { .. });
    assert_err!(br#"{"data":"A" "x":1}"#, Json { .. });
    assert_err!(br#"{"data" "A"}"#, Json { .. });
    assert_err!(br#"{data:"A"}"#, Json { .. });
    assert_err!(br#"{"data":"A","x":[1,]}"#, Json { .. });
    assert_err!(br#"{"data":"A","x":[1}"#, Json { .. });
    assert_err!(br#"{"data":"A","x":01}"#, Json { .. });
    assert_err!(br#"{"data":"A","x":1.}"#, Json { .. });
    assert_err!(br#"{"data":"A","x":-}"#, Json { .. });
    assert_err!(br#"{"data":"A","x":1e}"#, Json { .. });
    assert_err!(br#"{"data":"A","x":+1}"#, Json { .. });
    assert_err!(br#"{"data":"A","x":tru}"#, Json { .. });
    assert_err!(br#"{"data":"A","x":truex}"#, Json { .. });
    assert_err!(br#"{"data":"A","x":'s'}"#, Json { .. });
    // Depth bomb: refused at the limit, never recursing.
    let bomb = format!(
        r#"{{"data":"A","x":{}{}}}"#,
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    assert_err!(bomb.as_bytes(), LimitExceeded { .. });
    let ok = format!(
        r#"{{"data":"A","x":{}{}}}"#,
        "[".repeat(127),
        "]".repeat(127)
    );
    assert_eq!(both(ok.as_bytes()).unwrap(), b"A");
    let shallow = JsonFieldExtractor::new("data").with_max_depth(2);
    assert!(matches!(
        whole(shallow, br#"{"x":[[1]],"data":"A"}"#),
        Err(LimitExceeded { .. })
    ));
}

fn arb_json() -> impl Strategy<Value = serde_json::Value> {
    use serde_json::Value;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1e300f64..1e300).prop_map(Value::from),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z]{0,6}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// serde_json as the oracle: any string survives an encode/extract round trip
    /// whatever the surrounding members and however the input is split.
    #[test]
    fn roundtrip_any_split(text in "(\\PC|\r|\n|\t|\u{0}|\u{1F}){0,64}", other in arb_json(), ascii in any::<bool>(),
                           cuts in proptest::collection::vec(0usize..4000, 0..12)) {
        let mut obj = serde_json::Map::new();
        obj.insert("before".into(), other.clone());
        obj.insert("data".into(), serde_json::Value::String(text.clone()));
        obj.insert("zafter".into(), other);
        let mut doc = serde_json::to_string_pretty(&serde_json::Value::Object(obj)).unwrap();
        if ascii {
            // Encoders that escape everything non-ASCII as \uXXXX (incl. surrogate pairs).
            doc = doc.chars().map(|c| if c.is_ascii() { c.to_string() } else {
                c.encode_utf16(&mut [0; 2]).iter().map(|u| format!("\\u{u:04x}")).collect()
            }).collect();
        }
        let mut cuts = cuts;
        cuts.sort_unstable();
        let got = extract_cuts(j(), doc.as_bytes(), &cuts).unwrap();
        prop_assert_eq!(got, text.as_bytes());
    }

    /// Random byte soup: never panics; accepted iff serde_json accepts it as
    /// an object with a string "data" (modulo duplicate keys, which we reject).
    #[test]
    fn agrees_with_serde_json(doc in proptest::collection::vec(proptest::sample::select(b"{}[]\":,\\ud0-1e.+tnl \r\nxa".to_vec()), 0..60), cut in 0usize..60) {
        let ours = whole(j(), &doc);
        let split = extract_cuts(j(), &doc, &[cut]);
        prop_assert_eq!(ours.is_ok(), split.is_ok());
        if let Ok(text) = &ours {
            let v: serde_json::Value = serde_json::from_slice(&doc).expect("we accepted what serde_json rejects");
            prop_assert_eq!(v["data"].as_str().unwrap().as_bytes(), text.as_slice());
        }
    }
}
