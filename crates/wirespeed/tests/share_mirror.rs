//! A folder's share link mirrored by other people's tools: `wget -r -np`
//! on the link's URL (every href of the listing carries the link on),
//! `wget` and rclone's http backend with the link in the
//! `X-Wirespeed-Share` header (rclone drops any listed href with a `?` and
//! cannot keep a query on its `--http-url`), and what a listing shows a
//! link's holder and everyone else: hrefs with the link only for its
//! holder, no `../` above the link's own folder.
//! Outside CI a missing tool skips its check with a loud message; with
//! `CI=true` it fails (`.ci/run` installs both).

mod common;

use std::path::Path;
use std::process::Command;

use common::{files_below, run_bounded as run, Serve};

const TOKEN: &str = "mirror-token";

/// The shared folder's files: a name with spaces, one in UTF-8, a nested
/// sub-folder with a space in its name.
const FILES: [(&str, usize); 5] = [
    ("plain.txt", 5),
    ("name with spaces.txt", 3000),
    ("ünïcødé ✓.txt", 70_000),
    ("sub dir/inner file.bin", 200_000),
    ("sub dir/deeper/d.txt", 12),
];

fn content(name: &str, len: usize) -> Vec<u8> {
    let seed = name
        .bytes()
        .fold(3u8, |a, b| a.wrapping_mul(31).wrapping_add(b));
    (0..len)
        .map(|i| seed.wrapping_add((i % 251) as u8))
        .collect()
}

/// `/alice/photos/` with [`FILES`], and a sibling the link must not reach.
fn tree(root: &Path) {
    for (name, len) in FILES {
        let p = root.join("alice/photos").join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, content(name, len)).unwrap();
    }
    std::fs::write(root.join("alice/secret.txt"), "not shared").unwrap();
}

/// Whether `tool` can run; if not, skip (loudly) or, in CI, fail.
fn have(tool: &str) -> bool {
    let ok = Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{tool} is needed in CI (bash .ci/run installs it)");
        }
        eprintln!("\n!!!!!! SKIPPED: {tool} not found; bash .ci/run installs it !!!!!!\n");
    }
    ok
}

/// A private server (nothing without the token or a link) over `root`,
/// and a read link to `/alice/photos/` minted with the token.
fn serve_with_link(root: &Path, state: &Path) -> (Serve, String) {
    let s = Serve::start(
        root,
        &[
            "--token",
            TOKEN,
            "--private",
            "--state-dir",
            state.to_str().unwrap(),
        ],
    );
    let bearer = format!("Authorization: Bearer {TOKEN}");
    let (status, _, body) = s.req("POST", "/-/shares/alice/photos/", &[&bearer], b"");
    assert_eq!(status, 201, "{}", String::from_utf8_lossy(&body));
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let link = v["share"].as_str().unwrap().to_string();
    (s, link)
}

/// Every file below `dir` must be exactly [`FILES`] (read back equal),
/// once `rename` has mapped each saved name to the name it stands for
/// (`None`: not a file of the folder, such as a listing page).
fn assert_mirrored(dir: &Path, rename: impl Fn(&str) -> Option<String>) {
    let mut saved = Vec::new();
    for rel in files_below(dir) {
        let rel = rel.to_string_lossy().into_owned();
        if let Some(name) = rename(&rel) {
            let got = std::fs::read(dir.join(&rel)).unwrap();
            saved.push((name, got));
        }
    }
    saved.sort();
    let mut want: Vec<(String, Vec<u8>)> = FILES
        .iter()
        .map(|(n, len)| (n.to_string(), content(n, *len)))
        .collect();
    want.sort();
    let names = |v: &[(String, Vec<u8>)]| v.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(names(&saved), names(&want), "the mirrored tree");
    assert!(saved == want, "a mirrored file differs");
}

#[test]
fn wget_mirrors_a_folder_link_from_its_url() {
    if !have("wget") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    tree(&root);
    let (s, link) = serve_with_link(&root, &tmp.path().join("state"));
    let out = tmp.path().join("mirror");
    std::fs::create_dir(&out).unwrap();
    // wget exits non-zero on any refused file: every href must work.
    run(Command::new("wget")
        .args(["-q", "-r", "-np", "-nH", "--cut-dirs=2", "-e", "robots=off"])
        .arg(format!("{}/alice/photos/?share={link}", s.base()))
        .current_dir(&out));
    // wget keeps a URL's query in the name it saves under.
    let suffix = format!("?share={link}");
    assert_mirrored(&out, |rel| {
        let name = rel.strip_suffix(&suffix)?;
        (!name.ends_with("index.html")).then(|| name.to_string())
    });
}

#[test]
fn wget_mirrors_a_folder_link_in_a_header() {
    if !have("wget") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    tree(&root);
    let (s, link) = serve_with_link(&root, &tmp.path().join("state"));
    let out = tmp.path().join("mirror");
    std::fs::create_dir(&out).unwrap();
    run(Command::new("wget")
        .args(["-q", "-r", "-np", "-nH", "--cut-dirs=2", "-e", "robots=off"])
        .arg(format!("--header=X-Wirespeed-Share: {link}"))
        .arg(format!("{}/alice/photos/", s.base()))
        .current_dir(&out));
    // With the link in a header, the names are the files' own.
    assert_mirrored(&out, |rel| {
        (!rel.ends_with("index.html")).then(|| rel.to_string())
    });
}

#[test]
fn rclone_copies_a_folder_link_with_the_header() {
    if !have("rclone") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    tree(&root);
    let (s, link) = serve_with_link(&root, &tmp.path().join("state"));
    let config = tmp.path().join("rclone.conf");
    std::fs::write(&config, b"").unwrap();
    let dest = tmp.path().join("copy");
    run(Command::new("rclone")
        .args(["copy", ":http:"])
        .arg(&dest)
        .args(["--http-url", &format!("{}/alice/photos/", s.base())])
        .args(["--http-headers", &format!("X-Wirespeed-Share,{link}")])
        .arg("--config")
        .arg(&config));
    assert_mirrored(&dest, |rel| Some(rel.to_string()));
}

/// Hrefs of each form of listing: with the link for its holder (in the
/// URL), without it for the token holder and for a link in the header;
/// `../` offered below the link's folder only.
#[test]
fn listing_hrefs_carry_the_link_only_for_its_holder() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    tree(&root);
    let (s, link) = serve_with_link(&root, &tmp.path().join("state"));
    let get = |path: &str, headers: &[&str]| {
        let (status, _, body) = s.req("GET", path, headers, b"");
        assert_eq!(status, 200, "{path}: {}", String::from_utf8_lossy(&body));
        String::from_utf8(body).unwrap()
    };
    let q = format!("?share={link}");
    let html = get(&format!("/alice/photos/{q}"), &[]);
    assert!(
        html.contains(&format!("href=\"name%20with%20spaces.txt{q}\"")),
        "{html}"
    );
    assert!(
        html.contains(&format!(
            "href=\"%C3%BCn%C3%AFc%C3%B8d%C3%A9%20%E2%9C%93.txt{q}\""
        )),
        "{html}"
    );
    assert!(html.contains(&format!("href=\"sub%20dir/{q}\"")), "{html}");
    assert!(
        !html.contains("href=\"../"),
        "no parent above the link: {html}"
    );
    // Every row href of the page carries it (crumbs and rows alike).
    for href in html.split("href=\"").skip(1) {
        let href = &href[..href.find('"').unwrap()];
        if !href.starts_with("/-/") {
            assert!(href.ends_with(&q), "{href} lacks the link");
        }
    }
    let sub = get(&format!("/alice/photos/sub%20dir/{q}"), &[]);
    assert!(sub.contains(&format!("href=\"../{q}\"")), "{sub}");
    assert!(sub.contains(&format!("href=\"deeper/{q}\"")), "{sub}");
    let json = get(&format!("/alice/photos/{q}&format=json"), &[]);
    let rows: serde_json::Value = serde_json::from_str(&json).unwrap();
    let hrefs: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["href"].as_str().unwrap())
        .collect();
    assert!(hrefs.contains(&format!("sub%20dir/{q}").as_str()), "{json}");
    // Nobody else's listing names the link.
    let bearer = format!("Authorization: Bearer {TOKEN}");
    for (path, headers) in [
        ("/alice/photos/", vec![bearer.as_str()]),
        ("/alice/photos/?format=json", vec![bearer.as_str()]),
    ] {
        let body = get(path, &headers);
        assert!(!body.contains("?share="), "{path}: {body}");
    }
    let header = format!("X-Wirespeed-Share: {link}");
    let by_header = get("/alice/photos/", &[&header]);
    assert!(!by_header.contains("?share="), "{by_header}");
    assert!(by_header.contains("href=\"sub%20dir/\""), "{by_header}");
    // The header is a link like the query: nothing outside its folder.
    assert_eq!(s.req("GET", "/alice/secret.txt", &[&header], b"").0, 404);
    assert_eq!(s.req("GET", "/alice/photos/plain.txt", &[], b"").0, 401);
}
