//! Syntax of the Host header field value (RFC 9110 §7.2, RFC 9112 §3.2):
//! `uri-host [ ":" port ]` with the RFC 3986 §3.2.2 grammar
//!
//! ```text
//! uri-host    = IP-literal / IPv4address / reg-name
//! IP-literal  = "[" ( IPv6address / IPvFuture ) "]"
//! IPvFuture   = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )
//! reg-name    = *( unreserved / pct-encoded / sub-delims )
//! port        = *DIGIT
//! ```
//!
//! Every IPv4address is also a reg-name, so no separate IPv4 check is needed.
//! The empty value is a valid (empty) reg-name: RFC 9112 §3.2 has clients
//! send it when the target has no authority, so it is accepted here. A port
//! is only checked for being digits (the grammar sets no range); whether
//! the host is ours is the application's business, not the parser's.

use std::net::Ipv6Addr;

/// `unreserved` and `sub-delims` of RFC 3986: the bytes a reg-name may carry
/// literally (everything else must be percent-encoded).
fn is_reg_name_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'-' | b'.'
                | b'_'
                | b'~'
                | b'!'
                | b'$'
                | b'&'
                | b'\''
                | b'('
                | b')'
                | b'*'
                | b'+'
                | b','
                | b';'
                | b'='
        )
}

fn is_reg_name(s: &[u8]) -> bool {
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'%' => {
                let hex = s.get(i + 1..i + 3);
                if !hex.is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit)) {
                    return false;
                }
                i += 3;
            }
            b if is_reg_name_byte(b) => i += 1,
            _ => return false,
        }
    }
    true
}

fn is_ip_future(s: &[u8]) -> bool {
    let Some(rest) = s.strip_prefix(b"v").or_else(|| s.strip_prefix(b"V")) else {
        return false;
    };
    let Some(dot) = rest.iter().position(|&b| b == b'.') else {
        return false;
    };
    let (hex, tail) = (&rest[..dot], &rest[dot + 1..]);
    !hex.is_empty()
        && hex.iter().all(u8::is_ascii_hexdigit)
        && !tail.is_empty()
        && tail.iter().all(|&b| is_reg_name_byte(b) || b == b':')
}

fn is_ip_literal_body(s: &[u8]) -> bool {
    // std's parser takes exactly the RFC 4291 text forms (no zone id), which
    // is what RFC 3986's IPv6address allows.
    let ipv6 = std::str::from_utf8(s)
        .ok()
        .is_some_and(|t| t.parse::<Ipv6Addr>().is_ok());
    ipv6 || is_ip_future(s)
}

/// Whether `value` (already stripped of surrounding whitespace) is a valid
/// Host field value. Anything else must be answered with 400.
pub fn is_valid_host(value: &[u8]) -> bool {
    let (host_ok, after) = if let Some(inner) = value.strip_prefix(b"[") {
        let Some(close) = inner.iter().position(|&b| b == b']') else {
            return false;
        };
        (is_ip_literal_body(&inner[..close]), &inner[close + 1..])
    } else {
        // A reg-name cannot contain ':', so the first one starts the port.
        let colon = value.iter().position(|&b| b == b':').unwrap_or(value.len());
        (is_reg_name(&value[..colon]), &value[colon..])
    };
    let port_ok = match after.split_first() {
        None => true,
        Some((b':', port)) => port.iter().all(u8::is_ascii_digit),
        Some(_) => false,
    };
    host_ok && port_ok
}

#[cfg(test)]
mod tests {
    use super::is_valid_host;
    use proptest::prelude::*;

    #[test]
    fn accepts_the_grammar() {
        for h in [
            "",
            "example.com",
            "example.com:8080",
            "example.com:",
            "localhost:0",
            "127.0.0.1",
            "127.0.0.1:80",
            "999.1.1.1",
            "[::1]",
            "[::1]:443",
            "[2001:db8::8:800:200c:417a]",
            "[::ffff:192.0.2.1]:1",
            "[v1.fe80::a+en1]",
            "[V7.x:y]:9",
            "xn--bcher-kva.example",
            "a_b~c!$&'()*+,;=",
            "%41%62",
            "EXAMPLE.COM",
        ] {
            assert!(is_valid_host(h.as_bytes()), "{h:?}");
        }
    }

    #[test]
    fn rejects_everything_else() {
        for h in [
            "exa mple.com",
            "example.com ",
            " example.com",
            "example.com\t",
            "example.com:80:80",
            "example.com:8o",
            "example.com:-1",
            "user@example.com",
            "example.com/path",
            "example.com?q",
            "example.com#f",
            "exa\"mple",
            "exa<mple>",
            "%4",
            "%zz",
            "a%",
            "[::1",
            "::1",
            "[::1]x",
            "[::1]:x",
            "[]",
            "[fe80::1%25eth0]",
            "[1.2.3.4]",
            "[v.x]",
            "[v1.]",
            "[vg.x]",
            "[v1.x/y]",
            "ex\u{e4}mple.com",
            "a\x00b",
            "a\x7fb",
        ] {
            assert!(!is_valid_host(h.as_bytes()), "{h:?}");
        }
    }

    fn reg_name() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                "[A-Za-z0-9._~!$&'()*+,;=-]",
                "%[0-9A-Fa-f]{2}".prop_map(|s| s),
            ],
            0..24,
        )
        .prop_map(|parts| parts.concat())
    }

    fn valid_host() -> impl Strategy<Value = String> {
        let host = prop_oneof![
            reg_name(),
            any::<std::net::Ipv4Addr>().prop_map(|a| a.to_string()),
            any::<std::net::Ipv6Addr>().prop_map(|a| format!("[{a}]")),
            "[vV][0-9a-fA-F]{1,4}\\.[A-Za-z0-9:._~!$&'()*+,;=-]{1,12}"
                .prop_map(|s| format!("[{s}]")),
        ];
        (host, proptest::option::of("[0-9]{0,6}"))
            .prop_map(|(h, port)| port.map_or(h.clone(), |p| format!("{h}:{p}")))
    }

    /// Bytes no Host value may carry anywhere (outside an IPvFuture, where
    /// ':' is allowed; none of these are).
    fn forbidden_byte() -> impl Strategy<Value = u8> {
        prop_oneof![
            0x00u8..=0x20,
            Just(b'"'),
            Just(b'#'),
            Just(b'/'),
            Just(b'<'),
            Just(b'>'),
            Just(b'?'),
            Just(b'@'),
            Just(b'\\'),
            Just(b'^'),
            Just(b'`'),
            Just(b'{'),
            Just(b'|'),
            Just(b'}'),
            0x7fu8..=0xff,
        ]
    }

    proptest! {
        #[test]
        fn grammar_values_are_accepted(h in valid_host()) {
            prop_assert!(is_valid_host(h.as_bytes()), "{:?}", h);
        }

        #[test]
        fn a_forbidden_byte_anywhere_is_rejected(
            h in valid_host(),
            b in forbidden_byte(),
            at in any::<prop::sample::Index>(),
        ) {
            let mut v = h.into_bytes();
            let i = at.index(v.len() + 1);
            v.insert(i, b);
            prop_assert!(!is_valid_host(&v), "{:?}", String::from_utf8_lossy(&v));
        }
    }
}
