//! One operation against the real server, compared with the model: the
//! answer's class, what a read showed, and the disk afterwards.

use super::drive::{self, As, Site};
use super::model::{self, Exp, Node, Tree};
use super::ops::{self, Expected, Op};
use super::trash;

/// Send `op` as `who` on a freshly made `initial` tree; the differences
/// from `exp` (empty: the server did what the model allows).
pub fn run(site: &mut Site, who: &As, op: &Op, exp: &Expected, initial: &Tree) -> Vec<String> {
    // A trash operation starts from what the token holder threw away.
    let thrown = trash::thrown(op);
    if thrown.is_some() && site.on_s3() {
        // The bucket's trash keeps what earlier operations and resets
        // deleted; a new prefix starts it empty.
        site.restart();
    }
    if !site.clean || thrown.is_some() {
        site.reset(initial);
    }
    let start = match &thrown {
        Some(t) => {
            for p in t {
                let r = site.send(&As::Token, "DELETE", p, &[], b"");
                assert_eq!(r.status, 204, "throwing {p} away: {}", r.text());
            }
            trash::without(initial, t)
        }
        None => initial.clone(),
    };
    if let Op::Search(..) = op {
        // The tree was made behind the server's back: the index catches
        // up before it is asked (no race with the host watch).
        match &site.search {
            Some(s) => assert!(s.walk_and_wait(std::time::Duration::from_secs(20))),
            None => return Vec::new(),
        }
    }
    let send = |m: &str, p: &str, h: &[(&str, &str)], b: &[u8]| site.send(who, m, p, h, b);
    let send_owned = |m: &str, p: &str, h: &[(&str, String)], b: &[u8]| {
        let h: Vec<(&str, &str)> = h.iter().map(|(n, v)| (*n, v.as_str())).collect();
        site.send(who, m, p, &h, b)
    };
    let r = match op {
        Op::GetFile(p) => send("GET", p, &[], b""),
        Op::List(p) => send("GET", p, &[("Accept", "application/json")], b""),
        Op::Propfind(p) => send("PROPFIND", p, &[("Depth", "1")], b""),
        Op::Archive(p) => send("GET", &format!("{p}?archive=tar"), &[], b""),
        Op::Search(p, q) => send("GET", &format!("{p}?q={q}&format=json"), &[], b""),
        Op::PutNew(p) => send("PUT", p, &[], b"new"),
        Op::PutOver(p) => send("PUT", p, &[], b"over"),
        Op::TusNew(p) => send_owned(
            "POST",
            &format!("/-/uploads{p}"),
            &tus_creation(3, None),
            b"new",
        ),
        Op::TusOver(p) => send_owned(
            "POST",
            &format!("/-/uploads{p}"),
            &tus_creation(4, None),
            b"over",
        ),
        Op::ConcatNew(p) => {
            // The parts are created where the file will land (admitted
            // there); a refused part is the answer.
            let place = format!("/-/uploads{p}");
            let mut parts = Vec::new();
            let mut refused = None;
            for piece in [&b"ne"[..], b"w"] {
                let h = tus_creation(piece.len(), Some("partial"));
                let r = send_owned("POST", &place, &h, piece);
                match r.header("location") {
                    Some(l) if r.status == 201 => parts.push(l.to_string()),
                    _ => {
                        refused = Some(r);
                        break;
                    }
                }
            }
            match refused {
                Some(r) => r,
                None => {
                    let fin = format!("final;{}", parts.join(" "));
                    let h = [("Tus-Resumable", "1.0.0"), ("Upload-Concat", fin.as_str())];
                    send("POST", &place, &h, b"")
                }
            }
        }
        Op::IetfNew(p) => {
            let first = [
                ("Upload-Complete", "?0"),
                ("Upload-Draft-Interop-Version", "8"),
            ];
            let r = send("PUT", p, &first, b"ne");
            match r.header("location") {
                Some(at) if r.status == 201 => {
                    // The Location is the server's own path, prefix and all.
                    let at = at.to_string();
                    let at = site
                        .prefix
                        .map_or(at.as_str(), |x| at.strip_prefix(x).unwrap_or(&at));
                    let rest = [
                        ("Upload-Complete", "?1"),
                        ("Upload-Offset", "2"),
                        ("Upload-Draft-Interop-Version", "8"),
                        ("Content-Type", "application/partial-upload"),
                    ];
                    send("PATCH", at, &rest, b"w")
                }
                _ => r,
            }
        }
        Op::Mkcol(p) => send("MKCOL", p, &[], b""),
        Op::Delete(p) => send("DELETE", p, &[], b""),
        Op::Move(a, b) => send("MOVE", a, &[("Destination", b)], b""),
        Op::Copy(a, b) => send("COPY", a, &[("Destination", b)], b""),
        Op::Lock(p, deep) => {
            let depth = if *deep { "infinity" } else { "0" };
            let h = [
                ("Depth", depth),
                ("Timeout", "Second-60"),
                ("Content-Type", "application/xml"),
            ];
            send("LOCK", p, &h, drive::LOCKINFO)
        }
        Op::Proppatch(p) => send(
            "PROPPATCH",
            p,
            &[("Content-Type", "application/xml")],
            drive::PROPPATCH,
        ),
        Op::Thumbnail(p) => send("GET", &format!("{p}?thumbnail"), &[], b""),
        Op::TrashList(p) => send("GET", &format!("/-/trash{p}"), &[], b""),
        Op::TrashRestore(p) => {
            let listed = site.send(&As::Token, "GET", "/-/trash/", &[], b"");
            let v: serde_json::Value = serde_json::from_slice(&listed.body).unwrap_or_default();
            let id = v["entries"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|e| e["path"].as_str().map(ops::trim) == Some(ops::trim(p)))
                .and_then(|e| e["id"].as_str())
                .unwrap_or_else(|| panic!("{p} is not in the trash: {}", listed.text()))
                .to_string();
            send("POST", &format!("/-/trash?restore={id}"), &[], b"")
        }
    };
    let mut problems = Vec::new();
    // Admitted, a thumbnail of a text file is a 415.
    let ok = match op {
        Op::Thumbnail(_) => r.status == 415,
        _ => (200..300).contains(&r.status),
    };
    let refused = !ok && (400..500).contains(&r.status);
    let got = format!("{} {}", r.status, drive::snippet(&r));
    if !ok && !refused {
        problems.push(format!("neither a success nor a refusal: {got}"));
    }
    match (exp.class, ok) {
        (Exp::Yes, false) => problems.push(format!("expected a success, got {got}")),
        (Exp::No, true) => problems.push(format!("expected a refusal, got {got}")),
        _ => {}
    }
    let disk = site.walk();
    site.clean = disk == *initial;
    let want = if ok { &exp.after } else { &start };
    if disk != *want {
        let what = if ok {
            "after the success"
        } else {
            "after the refusal"
        };
        problems.push(format!(
            "disk {what} is not the model's:\n{}",
            drive::diff(want, &disk)
        ));
    }
    if ok {
        problems.extend(check_read(site, op, exp, &r, initial));
    }
    if let (Op::Lock(p, _), true) = (op, ok) {
        let token = drive::lock_token(&r).unwrap_or_default();
        let u = site.send(
            who,
            "UNLOCK",
            p,
            &[("Lock-Token", &format!("<{token}>"))],
            b"",
        );
        if u.status != 204 {
            problems.push(format!(
                "UNLOCK of the granted lock: {} {} (server restarted)",
                u.status,
                drive::snippet(&u)
            ));
            site.restart();
        }
    }
    problems
}

/// What a successful read showed, against the model's bounds.
fn check_read(
    site: &Site,
    op: &Op,
    exp: &Expected,
    r: &wirespeed_testkit::Resp,
    tree: &Tree,
) -> Vec<String> {
    let mut problems = Vec::new();
    let shown = match op {
        Op::GetFile(_) => {
            if let Some(body) = &exp.body {
                if r.body != body.as_bytes() {
                    problems.push(format!("GET body {:?}, expected {body:?}", r.text()));
                }
            }
            return problems;
        }
        Op::List(_) => drive::listed(r),
        Op::TrashList(_) => trash::listed(r),
        Op::Search(p, _) => drive::searched(r, p),
        Op::Propfind(p) => drive::propfound(r, &site.url_path(p)),
        Op::Archive(p) => {
            let entries = drive::tar_entries(&r.body);
            for (rel, bytes) in &entries {
                let named = format!("{}/{rel}", ops::trim(p).trim_end_matches('/'));
                let real = ops::key(&model::target(&named));
                if let (Some(b), Some(Node::File(c))) = (bytes, tree.get(&real)) {
                    if b != c.as_bytes() {
                        problems.push(format!("archive entry {rel}: wrong bytes"));
                    }
                }
            }
            entries.into_iter().map(|(n, _)| n).collect()
        }
        _ => return problems,
    };
    let extra: Vec<_> = shown.difference(&exp.may_show).collect();
    if !extra.is_empty() {
        problems.push(format!(
            "shows names it holds no right to see: {extra:?} (shown {shown:?})"
        ));
    }
    let missing: Vec<_> = exp.must_show.difference(&shown).collect();
    if !missing.is_empty() {
        problems.push(format!(
            "leaves out readable names: {missing:?} (shown {shown:?})"
        ));
    }
    problems
}

/// The fields of a tus creation carrying all `len` bytes of the upload.
fn tus_creation(len: usize, concat: Option<&'static str>) -> Vec<(&'static str, String)> {
    let mut h = vec![
        ("Tus-Resumable", "1.0.0".to_string()),
        ("Upload-Length", len.to_string()),
        (
            "Content-Type",
            "application/offset+octet-stream".to_string(),
        ),
    ];
    if let Some(c) = concat {
        h.push(("Upload-Concat", c.to_string()));
    }
    h
}
