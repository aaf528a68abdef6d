//! One test per way the rules were found to leak: each sets up the
//! reproduction as an operator would (a rules file, a tree, users, links)
//! and says every difference it finds, not only the first.

use super::drive::{self, As, Site};
use crate::common::Resp;

/// Differences found so far; `done` fails with all of them.
#[derive(Default)]
struct Checks(Vec<String>);

impl Checks {
    fn ok(&mut self, what: &str, r: &Resp) {
        if !(200..300).contains(&r.status) {
            self.0.push(format!(
                "{what}: expected a success, got {} {}",
                r.status,
                drive::snippet(r)
            ));
        }
    }

    fn refused(&mut self, what: &str, r: &Resp) {
        if !(400..500).contains(&r.status) {
            self.0.push(format!(
                "{what}: expected a refusal, got {} {}",
                r.status,
                drive::snippet(r)
            ));
        }
    }

    fn body(&mut self, what: &str, r: &Resp, want: &str) {
        self.ok(what, r);
        if r.status == 200 && r.body != want.as_bytes() {
            self.0
                .push(format!("{what}: body {:?}, expected {want:?}", r.text()));
        }
    }

    fn that(&mut self, what: &str, holds: bool) {
        if !holds {
            self.0.push(what.to_string());
        }
    }

    fn file(&mut self, site: &Site, rel: &str, want: Option<&str>) {
        let got = site.read_file(rel);
        if got.as_deref() != want {
            self.0
                .push(format!("on disk {rel}: {got:?}, expected {want:?}"));
        }
    }

    /// [`Checks::done`] for the same scenario on each backend.
    fn all_done(runs: Vec<(&str, Checks)>) {
        let mut all = Checks::default();
        for (backend, c) in runs {
            all.0
                .extend(c.0.into_iter().map(|d| format!("[{backend}] {d}")));
        }
        all.done()
    }

    fn done(self) {
        assert!(
            self.0.is_empty(),
            "{} difference(s):\n  {}",
            self.0.len(),
            self.0.join("\n  ")
        );
    }
}

/// A rules file: `[users]` with each of `users` (password `NAME-pw`), then `paths`.
fn rules(users: &[&str], paths: &str) -> String {
    let mut t = String::from("[users]\n");
    for u in users {
        t.push_str(&format!("{u} = \"{}\"\n", drive::hash_of(u)));
    }
    t.push_str(paths);
    t
}

fn write(site: &Site, files: &[(&str, &str)]) {
    for (rel, body) in files {
        site.put_file(rel, body);
    }
}

/// `scenario` on a server over a folder and, where MinIO is, over a bucket
/// (skipped loudly without it outside CI, as the S3 tests are).
fn on_both(text: &str, scenario: impl Fn(&Site) -> Checks) {
    let mut runs = vec![("folder", scenario(&Site::start(text)))];
    if let Some(m) = wirespeed_testkit::minio::Minio::start() {
        m.create_bucket("regress");
        let site = Site::start_on(text, Some(drive::s3_config(&m, "regress", "r")));
        runs.push(("S3", scenario(&site)));
    }
    Checks::all_done(runs);
}

fn symlink(site: &Site, rel: &str, target: &str) {
    std::os::unix::fs::symlink(target, site.root().join(rel)).unwrap();
}

fn user(u: &str) -> As {
    As::User(u.into())
}

/// A link minted as `u` for `path`, which must be minted.
fn link(site: &Site, u: &str, path: &str, upload: bool) -> As {
    let (r, token) = site.mint(u, path, upload);
    As::Link(token.unwrap_or_else(|| {
        panic!(
            "{u} could not mint a link for {path}: {} {}",
            r.status,
            r.text()
        )
    }))
}

/// The README's own example rules file, its hashes made for real.
fn readme_rules() -> String {
    let readme = include_str!("../../../../README.md");
    let start = readme
        .find("# /etc/wirespeed/users.toml")
        .expect("the README's example rules file");
    let text = &readme[start..];
    let text = &text[..text.find("```").expect("the example's end")];
    text.lines()
        .map(|l| match l.split_once(" = \"$argon2id$") {
            Some((name, _)) => format!("{name} = \"{}\"", drive::hash_of(name.trim())),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names in the archive at `path`.
fn archived(site: &Site, who: &As, path: &str) -> (Resp, Vec<String>) {
    let r = site.send(who, "GET", &format!("{path}?archive=tar"), &[], b"");
    let names = if r.status == 200 {
        drive::tar_entries(&r.body)
            .into_iter()
            .map(|e| e.0)
            .collect()
    } else {
        Vec::new()
    };
    (r, names)
}

#[test]
fn the_readme_example_a_link_bob_mints_for_the_root_reads_only_what_bob_may() {
    // As the README has it, bob only reads the root: he may not publish it.
    let site = Site::start(&readme_rules());
    let (r, token) = site.mint("bob", "/", false);
    assert!(
        token.is_none() && r.status == 403,
        "a reader minted a link for / without s: {} {}",
        r.status,
        r.text()
    );
    drop(site);
    // Given s there, his link still reads only what he may.
    let rules = readme_rules().replacen("[paths.\"/\"]", "[paths.\"/\"]\nbob = \"rs\"", 1);
    let site = Site::start(&rules);
    write(
        &site,
        &[
            ("alice/tax-return.pdf", "alice's taxes"),
            ("team/t.txt", "team's"),
            ("pub.txt", "public"),
        ],
    );
    let mut c = Checks::default();
    let bob = user("bob");
    c.refused(
        "bob GET /alice/tax-return.pdf",
        &site.send(&bob, "GET", "/alice/tax-return.pdf", &[], b""),
    );
    let l = link(&site, "bob", "/", false);
    c.refused(
        "bob's link for / GET /alice/tax-return.pdf",
        &site.send(&l, "GET", "/alice/tax-return.pdf", &[], b""),
    );
    let r = site.send(&l, "GET", "/alice/", &[("Accept", "application/json")], b"");
    if r.status == 200 {
        c.that(
            &format!("bob's link lists /alice/: {:?}", drive::listed(&r)),
            !drive::listed(&r).contains("tax-return.pdf"),
        );
    }
    let r = site.send(&l, "GET", "/", &[("Accept", "application/json")], b"");
    c.ok("bob's link lists /", &r);
    if r.status == 200 {
        let names = drive::listed(&r);
        c.that(
            &format!("bob's link's listing of / names alice's folder: {names:?}"),
            !names.contains("alice"),
        );
        c.that(
            &format!("bob's link's listing of / leaves out what bob reads: {names:?}"),
            names.contains("pub.txt") && names.contains("team"),
        );
    }
    let (r, names) = archived(&site, &l, "/");
    c.ok("bob's link GET /?archive=tar", &r);
    c.that(
        &format!("bob's link's archive of / holds alice's files: {names:?}"),
        !names.iter().any(|n| n.starts_with("alice")),
    );
    c.that(
        &format!("bob's link's archive of / leaves out what bob reads: {names:?}"),
        names.contains(&"pub.txt".to_string()) && names.contains(&"team/t.txt".to_string()),
    );
    // What bob may read, the link still reads.
    c.body(
        "bob's link GET /pub.txt",
        &site.send(&l, "GET", "/pub.txt", &[], b""),
        "public",
    );
    c.body(
        "bob's link GET /team/t.txt",
        &site.send(&l, "GET", "/team/t.txt", &[], b""),
        "team's",
    );
    c.done();
}

const TEAM_RECORDS: &str = r#"
[paths."/"]
"*" = "r"
[paths."/alice"]
alice = "rwd"
[paths."/team"]
alice = "rwd"
bob = "rw"
[paths."/team/records"]
alice = "r"
bob = "rw"
"#;

#[test]
fn an_upload_link_writes_nothing_into_a_read_only_folder_below_it() {
    let site = Site::start(&rules(&["alice", "bob"], TEAM_RECORDS));
    write(&site, &[("team/records/2025.txt", "kept")]);
    let mut c = Checks::default();
    let l = link(&site, "alice", "/team/", true);
    let r = site.send(&l, "PUT", "/team/records/x", &[], b"through the link");
    c.refused("alice's upload link for /team/ PUT /team/records/x", &r);
    c.file(&site, "team/records/x", None);
    c.file(&site, "team/records/2025.txt", Some("kept"));
    // Where alice may write, the link still writes.
    c.ok(
        "alice's upload link PUT /team/new.txt",
        &site.send(&l, "PUT", "/team/new.txt", &[], b"new"),
    );
    c.file(&site, "team/new.txt", Some("new"));
    c.done();
}

#[test]
fn a_link_reads_and_writes_nothing_once_its_minter_is_removed() {
    let paths = "[paths.\"/alice\"]\nalice = \"rwd\"\n[paths.\"/bob\"]\nbob = \"rwd\"\n";
    let site = Site::start(&rules(&["alice", "bob"], paths));
    write(
        &site,
        &[("alice/a.txt", "alice's"), ("alice/inbox/i.txt", "in")],
    );
    let mut c = Checks::default();
    let read = link(&site, "alice", "/alice/", false);
    let upload = link(&site, "alice", "/alice/inbox/", true);
    c.body(
        "the read link before",
        &site.send(&read, "GET", "/alice/a.txt", &[], b""),
        "alice's",
    );
    site.reload(&rules(&["bob"], "[paths.\"/bob\"]\nbob = \"rwd\"\n"));
    c.refused(
        "alice's read link once alice is removed: GET /alice/a.txt",
        &site.send(&read, "GET", "/alice/a.txt", &[], b""),
    );
    c.refused(
        "alice's read link once alice is removed: listing /alice/",
        &site.send(
            &read,
            "GET",
            "/alice/",
            &[("Accept", "application/json")],
            b"",
        ),
    );
    c.refused(
        "alice's read link once alice is removed: /alice/?archive=tar",
        &site.send(&read, "GET", "/alice/?archive=tar", &[], b""),
    );
    c.refused(
        "alice's upload link once alice is removed: PUT /alice/inbox/n.txt",
        &site.send(&upload, "PUT", "/alice/inbox/n.txt", &[], b"late"),
    );
    c.file(&site, "alice/inbox/n.txt", None);
    c.done();
}

#[test]
fn a_folder_moves_only_with_delete_on_everything_in_it() {
    let paths = r#"
[paths."/home"]
alice = "rwd"
[paths."/home/bob"]
bob = "rwd"
[paths."/alice"]
alice = "rwd"
[paths."/team"]
alice = "rwd"
[paths."/team/records"]
alice = "r"
"#;
    on_both(&rules(&["alice", "bob"], paths), |site| {
        write(
            site,
            &[
                ("home/h.txt", "home"),
                ("home/bob/secret.txt", "bob's"),
                ("team/t.txt", "team's"),
                ("team/records/2025.txt", "kept"),
            ],
        );
        site.mkdir("alice");
        let before = site.walk();
        let mut c = Checks::default();
        let alice = user("alice");
        let mv =
            |from: &str, to: &str| site.send(&alice, "MOVE", from, &[("Destination", to)], b"");
        c.refused(
            "alice MOVE /home/ to /alice/home/",
            &mv("/home/", "/alice/home/"),
        );
        c.refused(
            "alice MOVE /team/ to /alice/team/",
            &mv("/team/", "/alice/team/"),
        );
        let after = site.walk();
        c.that(
            &format!(
                "refused moves changed the disk:\n{}",
                drive::diff(&before, &after)
            ),
            after == before,
        );
        c.refused(
            "alice reading bob's file after the move",
            &site.send(&alice, "GET", "/alice/home/bob/secret.txt", &[], b""),
        );
        // A move back cannot follow: nothing was moved. A file she may delete
        // still moves.
        c.ok("alice MOVE /home/h.txt", &mv("/home/h.txt", "/alice/h.txt"));
        c.file(site, "alice/h.txt", Some("home"));
        c
    });
}

#[test]
fn a_depth_infinity_lock_needs_delete_on_every_member() {
    on_both(&rules(&["alice", "bob"], TEAM_RECORDS), |site| {
        write(
            site,
            &[("team/t.txt", "team's"), ("team/records/2025.txt", "kept")],
        );
        let mut c = Checks::default();
        let alice = user("alice");
        let h = [("Depth", "infinity"), ("Timeout", "Second-600")];
        let r = site.send(&alice, "LOCK", "/team/", &h, drive::LOCKINFO);
        c.refused(
            "alice LOCK /team/ Depth: infinity (records/ is read-only to her)",
            &r,
        );
        // Bob still writes where he could.
        let r = site.send(&user("bob"), "PUT", "/team/records/2026.txt", &[], b"bob's");
        c.ok("bob PUT /team/records/2026.txt after alice's LOCK", &r);
        c.file(site, "team/records/2026.txt", Some("bob's"));
        // A lock on what she may delete is hers to take.
        let r = site.send(
            &alice,
            "LOCK",
            "/team/t.txt",
            &[("Depth", "0")],
            drive::LOCKINFO,
        );
        c.ok("alice LOCK /team/t.txt", &r);
        c
    });
}

#[test]
fn a_symlink_carries_no_read_past_the_rules_entry_of_its_target() {
    let paths = r#"
[paths."/pub"]
bob = "r"
[paths."/priv"]
alice = "rwd"
"#;
    let site = Site::start(&rules(&["alice", "bob"], paths));
    write(
        &site,
        &[("priv/secret.txt", "secret"), ("pub/p.txt", "public")],
    );
    symlink(&site, "pub/link", "../priv");
    let mut c = Checks::default();
    let bob = user("bob");
    c.body(
        "bob GET /pub/p.txt",
        &site.send(&bob, "GET", "/pub/p.txt", &[], b""),
        "public",
    );
    c.refused(
        "bob GET /pub/link/secret.txt (link -> ../priv)",
        &site.send(&bob, "GET", "/pub/link/secret.txt", &[], b""),
    );
    c.refused(
        "bob lists /pub/link/",
        &site.send(
            &bob,
            "GET",
            "/pub/link/",
            &[("Accept", "application/json")],
            b"",
        ),
    );
    let (r, names) = archived(&site, &bob, "/pub/");
    c.ok("bob GET /pub/?archive=tar", &r);
    c.that(
        &format!("bob's archive of /pub/ holds /priv's file: {names:?}"),
        !names.iter().any(|n| n.ends_with("secret.txt")),
    );
    c.done();
}

#[test]
fn a_folder_link_does_not_climb_out_through_a_symlink() {
    let paths = "[paths.\"/alice\"]\nalice = \"rwd\"\n";
    let site = Site::start(&rules(&["alice"], paths));
    write(
        &site,
        &[
            ("alice/other.txt", "not shared"),
            ("alice/sub/s.txt", "shared"),
        ],
    );
    symlink(&site, "alice/sub/escape", "..");
    let mut c = Checks::default();
    let l = link(&site, "alice", "/alice/sub/", false);
    c.body(
        "the link for /alice/sub/ GET s.txt",
        &site.send(&l, "GET", "/alice/sub/s.txt", &[], b""),
        "shared",
    );
    c.refused(
        "the link for /alice/sub/ GET /alice/sub/escape/other.txt (escape -> ..)",
        &site.send(&l, "GET", "/alice/sub/escape/other.txt", &[], b""),
    );
    c.refused(
        "the link for /alice/sub/ lists /alice/sub/escape/",
        &site.send(
            &l,
            "GET",
            "/alice/sub/escape/",
            &[("Accept", "application/json")],
            b"",
        ),
    );
    let (r, names) = archived(&site, &l, "/alice/sub/");
    c.ok("the link's archive of /alice/sub/", &r);
    c.that(
        &format!("the link's archive of /alice/sub/ holds /alice/other.txt: {names:?}"),
        !names.iter().any(|n| n.ends_with("other.txt")),
    );
    c.done();
}

#[test]
fn a_symlink_within_one_rules_entry_keeps_working() {
    let paths = "[paths.\"/alice\"]\nalice = \"rwd\"\n";
    let site = Site::start(&rules(&["alice"], paths));
    write(&site, &[("alice/b/x.txt", "through")]);
    symlink(&site, "alice/a", "b");
    symlink(&site, "alice/f", "b/x.txt");
    let mut c = Checks::default();
    let alice = user("alice");
    c.body(
        "alice GET /alice/a/x.txt (a -> b)",
        &site.send(&alice, "GET", "/alice/a/x.txt", &[], b""),
        "through",
    );
    c.body(
        "alice GET /alice/f (f -> b/x.txt)",
        &site.send(&alice, "GET", "/alice/f", &[], b""),
        "through",
    );
    let json = [("Accept", "application/json")];
    let r = site.send(&alice, "GET", "/alice/a/", &json, b"");
    c.ok("alice lists /alice/a/", &r);
    if r.status == 200 {
        c.that(
            "the listing of /alice/a/ shows x.txt",
            drive::listed(&r).contains("x.txt"),
        );
    }
    let r = site.send(&alice, "GET", "/alice/", &json, b"");
    c.ok("alice lists /alice/", &r);
    if r.status == 200 {
        let names = drive::listed(&r);
        c.that(
            &format!("the listing of /alice/ shows both links: {names:?}"),
            names.contains("a") && names.contains("f"),
        );
    }
    let l = link(&site, "alice", "/alice/", false);
    c.body(
        "alice's link GET /alice/a/x.txt",
        &site.send(&l, "GET", "/alice/a/x.txt", &[], b""),
        "through",
    );
    c.done();
}

const DROP: &str = r#"
[paths."/"]
"*" = "r"
[paths."/drop"]
"*" = "w"
carol = "rwd"
[paths."/team"]
alice = "rws"
carol = "rwd"
"#;

#[test]
fn write_alone_neither_locks_nor_proppatches_a_name_that_exists() {
    let site = Site::start(&rules(&["alice", "bob", "carol"], DROP));
    write(
        &site,
        &[("drop/d.txt", "dropped"), ("team/t.txt", "team's")],
    );
    let mut c = Checks::default();
    let lock0 = [("Depth", "0"), ("Timeout", "Second-600")];
    let xml = [("Content-Type", "application/xml")];
    let upload = link(&site, "alice", "/team/", true);
    let askers = [
        (As::Anyone, "anyone (w only)", ["/drop/d.txt", "/drop/"]),
        (user("bob"), "bob (w only)", ["/drop/d.txt", "/drop/"]),
        (
            upload,
            "an upload link for /team/",
            ["/team/t.txt", "/team/"],
        ),
    ];
    // PROPPATCH first: a lock taken by mistake would refuse it for
    // another reason (423).
    for (who, name, paths) in &askers {
        for p in paths {
            let r = site.send(who, "PROPPATCH", p, &xml, drive::PROPPATCH);
            c.refused(&format!("{name} PROPPATCH {p}"), &r);
        }
    }
    for (who, name, paths) in &askers {
        for p in paths {
            let r = site.send(who, "LOCK", p, &lock0, drive::LOCKINFO);
            c.refused(&format!("{name} LOCK {p}"), &r);
        }
    }
    // No lock was left behind: the owners still write.
    let carol = user("carol");
    c.ok(
        "carol PUT over /drop/d.txt",
        &site.send(&carol, "PUT", "/drop/d.txt", &[], b"carol's"),
    );
    c.ok(
        "carol PUT over /team/t.txt",
        &site.send(&carol, "PUT", "/team/t.txt", &[], b"carol's"),
    );
    c.file(&site, "drop/d.txt", Some("carol's"));
    c.file(&site, "team/t.txt", Some("carol's"));
    c.done();
}

#[test]
fn write_alone_saves_a_new_file_by_lock_then_put_and_nothing_more() {
    let site = Site::start(&rules(&["alice", "bob", "carol"], DROP));
    write(&site, &[("drop/d.txt", "dropped")]);
    let mut c = Checks::default();
    let bob = user("bob");
    let h = [("Depth", "0"), ("Timeout", "Second-600")];
    let r = site.send(&bob, "LOCK", "/drop/new.txt", &h, drive::LOCKINFO);
    c.ok("bob (w only) LOCK /drop/new.txt, a new name", &r);
    let token = drive::lock_token(&r).unwrap_or_default();
    let tagged = format!("(<{token}>)");
    // Someone else, without the token: refused.
    let r = site.send(&user("alice"), "PUT", "/drop/new.txt", &[], b"alice's");
    c.refused("alice PUT /drop/new.txt locked by bob", &r);
    // The lock holder saves, as davfs2 and Finder do: LOCK, then PUT.
    let r = site.send(&bob, "PUT", "/drop/new.txt", &[("If", &tagged)], b"saved");
    c.ok("bob PUT /drop/new.txt with his lock token", &r);
    c.file(&site, "drop/new.txt", Some("saved"));
    // Once it holds bytes, w alone replaces nothing, lock or not.
    let r = site.send(&bob, "PUT", "/drop/new.txt", &[("If", &tagged)], b"again");
    c.refused("bob PUT over his now non-empty /drop/new.txt", &r);
    c.file(&site, "drop/new.txt", Some("saved"));
    let r = site.send(&bob, "PUT", "/drop/d.txt", &[], b"over");
    c.refused("bob PUT over /drop/d.txt", &r);
    c.file(&site, "drop/d.txt", Some("dropped"));
    c.done();
}

#[test]
fn a_symlink_carries_no_lock_or_proppatch_past_the_rules_entry_of_its_target() {
    // alice may delete in /pub, not in /priv: what she may not do to
    // /priv/p.txt by its own name she may not do through /pub/link either.
    let paths = r#"
[paths."/pub"]
alice = "rwd"
[paths."/priv"]
alice = "rw"
bob = "rwd"
"#;
    let site = Site::start(&rules(&["alice", "bob"], paths));
    write(&site, &[("priv/p.txt", "private"), ("pub/own.txt", "hers")]);
    symlink(&site, "pub/link", "../priv");
    let real = site.root().join("priv/p.txt");
    let mtime = || std::fs::metadata(&real).unwrap().modified().unwrap();
    let before = mtime();
    let mut c = Checks::default();
    let alice = user("alice");
    let xml = [("Content-Type", "application/xml")];
    let touch = b"<?xml version=\"1.0\" encoding=\"utf-8\"?>\
<D:propertyupdate xmlns:D=\"DAV:\" xmlns:Z=\"urn:schemas-microsoft-com:\"><D:set><D:prop>\
<Z:Win32LastModifiedTime>Wed, 01 Jan 2020 00:00:00 GMT</Z:Win32LastModifiedTime>\
</D:prop></D:set></D:propertyupdate>";
    c.refused(
        "alice PROPPATCH /pub/link/p.txt (link -> ../priv)",
        &site.send(&alice, "PROPPATCH", "/pub/link/p.txt", &xml, touch),
    );
    c.that(
        "a PROPPATCH through the link set /priv/p.txt's time",
        mtime() == before,
    );
    c.refused(
        "alice PROPPATCH /priv/p.txt by its name",
        &site.send(&alice, "PROPPATCH", "/priv/p.txt", &xml, touch),
    );
    let lock0 = [("Depth", "0"), ("Timeout", "Second-600")];
    c.refused(
        "alice LOCK /pub/link/p.txt (link -> ../priv)",
        &site.send(&alice, "LOCK", "/pub/link/p.txt", &lock0, drive::LOCKINFO),
    );
    // Where she holds d, both are hers.
    c.ok(
        "alice PROPPATCH /pub/own.txt",
        &site.send(&alice, "PROPPATCH", "/pub/own.txt", &xml, touch),
    );
    c.ok(
        "alice LOCK /pub/own.txt",
        &site.send(&alice, "LOCK", "/pub/own.txt", &lock0, drive::LOCKINFO),
    );
    c.done();
}
