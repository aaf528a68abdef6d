//! `wirespeed share` against a real `serve`: what the server refuses to
//! mint (nothing there, a folder without its `/`, longer than its limit)
//! and how the refusal reads.

mod common;
use common::{run_client, Serve};

/// A link is minted only for what is there: a missing file or folder is
/// 404 (also for an upload link), a folder named without its `/` is a
/// conflict saying to add it, and a file still gets its link.
#[test]
fn links_are_minted_only_for_what_is_there() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(root.join("dir")).unwrap();
    std::fs::write(root.join("a.txt"), b"a").unwrap();
    let serve = Serve::start(&root, &["--token", "sesame"]);
    let base = serve.base();
    let share = |args: &[&str]| {
        let mut all = vec!["share", "--token", "sesame"];
        all.extend_from_slice(args);
        run_client(&all)
    };
    for (url, upload) in [
        ("/missing.txt", false),
        ("/missing/", false),
        ("/dir/missing.txt", false),
        ("/missing/", true),
    ] {
        let url = format!("{base}{url}");
        let args: Vec<&str> = if upload {
            vec!["--upload", &url]
        } else {
            vec![&url]
        };
        let (code, out, err) = share(&args);
        assert_eq!(code, Some(1), "{url}: {out}");
        assert!(out.is_empty(), "{url}: no link: {out}");
        assert!(
            err.contains("404") && err.contains("nothing at"),
            "{url}: {err}"
        );
    }
    let (code, _, err) = share(&[&format!("{base}/dir")]);
    assert_eq!(code, Some(1));
    assert!(err.contains("is a folder: end the URL with /"), "{err}");
    let (code, _, err) = share(&[&format!("{base}/a.txt/")]);
    assert_eq!(code, Some(1));
    assert!(err.contains("404"), "{err}");

    for url in ["/a.txt", "/dir/"] {
        let (code, out, err) = share(&[&format!("{base}{url}")]);
        assert_eq!(code, Some(0), "{url}: {err}");
        assert!(out.starts_with(&format!("{base}{url}?share=")), "{out}");
    }
    let (code, out, err) = share(&["--upload", &format!("{base}/dir/")]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.starts_with(&format!("{base}/dir/?share=")), "{out}");
}

/// A longer `--expires` than the server allows is refused with the limit
/// in days, not seconds; without `--expires` the server's shorter limit
/// is taken instead of the 7-day default being refused.
#[test]
fn the_expiry_limit_reads_in_days_and_the_default_fits_under_it() {
    let tmp = wirespeed_testkit::fs::tempdir();
    let root = tmp.path().join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("a.txt"), b"a").unwrap();
    let url = |serve: &Serve| format!("{}/a.txt", serve.base());

    let serve = Serve::start(&root, &["--token", "sesame"]);
    let (code, out, err) = run_client(&[
        "share",
        "--token",
        "sesame",
        "--expires",
        "60d",
        &url(&serve),
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(err.contains("at most 30 days"), "{err}");
    assert!(err.contains("for 60 days"), "what was asked: {err}");
    assert!(!err.contains("2592000"), "{err}");
    for ok in ["30d", "1w", "2h30m"] {
        let (code, out, err) =
            run_client(&["share", "--token", "sesame", "--expires", ok, &url(&serve)]);
        assert_eq!(code, Some(0), "{ok}: {err}");
        assert!(out.contains("?share="), "{out}");
    }
    drop(serve);

    let serve = Serve::start(&root, &["--token", "sesame", "--share-max-expiry", "1d"]);
    let (code, out, err) = run_client(&["share", "--token", "sesame", &url(&serve)]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("?share="), "{out}");
    let (code, _, err) = run_client(&[
        "share",
        "--token",
        "sesame",
        "--expires",
        "36h",
        &url(&serve),
    ]);
    assert_eq!(code, Some(1));
    assert!(err.contains("at most 1 day"), "{err}");
}
