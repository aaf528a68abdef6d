//! One event as the audit trail writes it and the hooks send it: a JSON
//! object on one line (sans-IO).

use std::net::IpAddr;
use std::time::{SystemTime, UNIX_EPOCH};

/// One request that changed or revealed content, as answered.
#[derive(Debug, Clone)]
pub struct Event<'a> {
    /// Numbered from 1 in the order answered, per server.
    pub seq: u64,
    pub at: SystemTime,
    /// `upload`, `download`, `list`, `delete`, `move`, `copy`, `mkdir`,
    /// `lock`, `unlock`, `share.mint`, `share.revoke`, `signin`, …
    pub action: &'static str,
    /// The principal's label (`Policy::label`): a user's name, `--token`,
    /// `anyone`, `link N of NAME`; `None` before the policy named one.
    pub by: Option<&'a str>,
    /// The client's address; `None` for what the server did by itself
    /// (the trash's expiry).
    pub address: Option<IpAddr>,
    /// The request's path (as sent, percent-encoded, below any prefix).
    pub path: &'a str,
    /// A MOVE's or COPY's `Destination`.
    pub to: Option<&'a str>,
    pub status: u16,
    pub bytes_in: u64,
    pub bytes_out: u64,
    /// One more field where an action has more to say (a trash entry, a
    /// user header that was ignored).
    pub extra: Option<(&'static str, serde_json::Value)>,
}

impl Event<'_> {
    /// The JSON object and its newline.
    pub fn to_json_line(&self) -> Vec<u8> {
        let since = self.at.duration_since(UNIX_EPOCH).unwrap_or_default();
        let civil = crate::access_log::civil_time(since.as_secs());
        let time = format!(
            "{}.{:06}Z",
            String::from_utf8_lossy(&civil),
            since.subsec_micros()
        );
        let mut o = serde_json::Map::new();
        o.insert("time".into(), time.into());
        o.insert("seq".into(), self.seq.into());
        o.insert("action".into(), self.action.into());
        // Who: a user, the token, anyone, or a link and the one it acts for.
        match self.by {
            None | Some("anyone") => {
                o.insert("user".into(), serde_json::Value::Null);
            }
            Some(crate::policy::shares::TOKEN_MINTER) => {
                o.insert("user".into(), serde_json::Value::Null);
                o.insert("token".into(), true.into());
            }
            Some(label) => match link_of(label) {
                Some((id, minter)) => {
                    o.insert("user".into(), serde_json::Value::Null);
                    o.insert("link".into(), id.into());
                    o.insert("minter".into(), minter.into());
                }
                None => {
                    o.insert("user".into(), label.into());
                }
            },
        }
        let address = self.address.map(|a| a.to_string());
        o.insert("address".into(), address.into());
        o.insert("path".into(), self.path.into());
        if let Some(to) = self.to {
            o.insert("to".into(), to.into());
        }
        o.insert("status".into(), self.status.into());
        o.insert("bytes_in".into(), self.bytes_in.into());
        o.insert("bytes_out".into(), self.bytes_out.into());
        if let Some((k, v)) = &self.extra {
            o.insert((*k).into(), v.clone());
        }
        let mut line = serde_json::to_vec(&serde_json::Value::Object(o)).unwrap_or_default();
        line.push(b'\n');
        line
    }
}

/// `link N of NAME` → (N, NAME); `link N` → (N, "").
fn link_of(label: &str) -> Option<(&str, &str)> {
    let rest = label.strip_prefix("link ")?;
    Some(match rest.split_once(" of ") {
        Some((id, minter)) => (id, minter),
        None => (rest, ""),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(by: Option<&'static str>) -> serde_json::Value {
        let e = Event {
            seq: 7,
            at: UNIX_EPOCH + std::time::Duration::from_micros(1_700_000_000_000_042),
            action: "move",
            by,
            address: "192.0.2.1".parse().ok(),
            path: "/a%20b",
            to: Some("http://h/c\"d"),
            status: 201,
            bytes_in: 3,
            bytes_out: 0,
            extra: Some(("entry", serde_json::json!({"id": "1-ab"}))),
        };
        let line = e.to_json_line();
        assert_eq!(line.last(), Some(&b'\n'));
        assert_eq!(line.iter().filter(|b| **b == b'\n').count(), 1);
        serde_json::from_slice(&line).unwrap()
    }

    #[test]
    fn fields_and_who() {
        let v = event(Some("alice"));
        assert_eq!(v["time"], "2023-11-14T22:13:20.000042Z");
        assert_eq!(v["seq"], 7);
        assert_eq!(v["action"], "move");
        assert_eq!(v["user"], "alice");
        assert_eq!(v["address"], "192.0.2.1");
        assert_eq!(v["path"], "/a%20b");
        assert_eq!(v["to"], "http://h/c\"d");
        assert_eq!(v["status"], 201);
        assert_eq!(v["bytes_in"], 3);
        assert_eq!(v["entry"]["id"], "1-ab");
        let v = event(Some("link 12 of bob"));
        assert_eq!(
            (v["link"].as_str(), v["minter"].as_str()),
            (Some("12"), Some("bob"))
        );
        assert!(v["user"].is_null());
        let v = event(Some("--token"));
        assert_eq!(v["token"], true);
        assert!(event(Some("anyone"))["user"].is_null());
        assert!(event(None)["user"].is_null());
        // A name with a newline or quote cannot break the line.
        let v = event(Some("x\n\"y"));
        assert_eq!(v["user"], "x\n\"y");
    }
}
