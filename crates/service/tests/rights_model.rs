//! Rights that hold across whole trees, end to end. A reference model of
//! per-path rights (`rights_model/model.rs`: the longest rules entry
//! decides, own letters plus `"*"`'s; a share link holds its grant
//! intersected with its minter's rights at that moment; a path through a
//! symlink needs the rights where it is named and where it leads) is
//! compared with the real server over generated rules files, a tree with
//! symlinks inside the root, every kind of principal (links presented in
//! the query or in their header), half the cases under a path prefix, and
//! the operations
//! that act on whole trees (listings, PROPFIND, archives, DELETE, MOVE,
//! COPY, LOCK, trash listings and restores) as well as single names
//! (thumbnails, MKCOL, and writes by PUT, by an IETF draft upload completed by a
//! PATCH, by tus creation and by a tus final joining parts created at the
//! same name). Then one named test per way the
//! rules were found to leak, each its own reproduction.
//!
//! The model test runs `RIGHTS_MODEL_CASES` generated rules files (default
//! 10) from `RIGHTS_MODEL_SEED` (default fixed), `RIGHTS_MODEL_OPS`
//! operations per principal (default 25); a failure prints the seed, the
//! rules file, the principal, the operation and what differed, and how to
//! run that case alone (`RIGHTS_MODEL_ONLY`).

mod common;

#[path = "rights_model/drive.rs"]
mod drive;
#[path = "rights_model/model.rs"]
mod model;
#[path = "rights_model/ops.rs"]
mod ops;
#[path = "rights_model/regressions.rs"]
mod regressions;
#[path = "rights_model/run.rs"]
mod run;
#[path = "rights_model/trash.rs"]
mod trash;

use drive::{As, Site};
use model::{Judge, Link, Rules, Who, R, USERS, W};
use wirespeed_service::S3Config;
use wirespeed_testkit::minio::Minio;
use wirespeed_testkit::Rng;

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const LINK_FOLDERS: [&str; 5] = ["/", "/a/", "/a/sub/", "/a/b/", "/c/"];
const LINK_FILES: [&str; 4] = ["/f0.txt", "/a/f1.txt", "/a/b/f3.txt", "/c/f4.txt"];

/// The principals of one case and how to send as each.
fn principals(
    site: &Site,
    rules: &Rules,
    rng: &mut Rng,
    failures: &mut Vec<String>,
) -> Vec<(Who, As, String)> {
    let mut out = vec![
        (Who::Anyone, As::Anyone, "anyone".to_string()),
        (Who::Token, As::Token, "the --token holder".to_string()),
    ];
    for u in USERS {
        out.push((Who::User(u), As::User(u.into()), format!("user {u}")));
    }
    for _ in 0..2 {
        // One link in five is the token holder's.
        let minter = [USERS[0], USERS[1], USERS[0], USERS[1], model::TOKEN_MINTER][rng.below(5)];
        let asker = if minter == model::TOKEN_MINTER {
            As::Token
        } else {
            As::User(minter.into())
        };
        let (path, rights) = match rng.below(3) {
            0 => (LINK_FOLDERS[rng.below(5)], R),
            1 => (LINK_FOLDERS[rng.below(5)], W),
            _ => (LINK_FILES[rng.below(4)], R),
        };
        let (r, token) = site.mint_as(&asker, path, rights == W);
        let held = match asker {
            As::Token => Who::Token.rights(rules, path),
            _ => Who::User(minter).rights(rules, &ops::trim(path)),
        };
        // Publishing is a right of its own: `s`, or `d` (an owner's); the
        // generated files give no `s`, so a user mints where they hold `d`.
        let may = held & rights == rights && (matches!(asker, As::Token) || held & model::D != 0);
        if may != token.is_some() {
            failures.push(format!(
                "minting a {} link for {path} as {minter} (holding {:?} there): expected {}, got {} {}",
                model::letters(rights),
                model::letters(held),
                if may { "201" } else { "a refusal" },
                r.status,
                drive::snippet(&r)
            ));
        }
        if let Some(t) = token {
            let link = Link {
                minter,
                path,
                rights,
            };
            let what = format!(
                "{} link for {path} minted by {minter}",
                model::letters(rights)
            );
            // Half the holders present the link in its header instead of
            // the query: both must grant exactly the same.
            let (asks, how) = if rng.below(2) == 0 {
                (As::Link(t), "")
            } else {
                (As::LinkHeader(t), ", sent in X-Wirespeed-Share")
            };
            out.push((Who::Link(link), asks, format!("{what}{how}")));
        }
    }
    out
}

/// Every operation's answer and the storage afterwards, per model class.
#[derive(Default, Debug)]
struct Tally {
    sent: usize,
    allowed: usize,
    refused: usize,
    either: usize,
}

/// Run `cases` generated rules files, `per` operations per principal, on
/// the folder backend or on `s3` (no symlinks there: the tree has none and
/// the operations through them are left out). The failures, described.
fn run_cases(s3: Option<S3Config>, seed: u64, cases: u64, per: usize) -> (Vec<String>, Tally) {
    let ops_var = if s3.is_some() {
        "RIGHTS_MODEL_S3_OPS"
    } else {
        "RIGHTS_MODEL_OPS"
    };
    let mut tree = model::initial_tree();
    let mut catalogue = ops::catalogue();
    if s3.is_some() {
        tree.retain(|_, n| !matches!(n, model::Node::Link(_)));
        catalogue.retain(|op| !op.paths().iter().any(|p| p.starts_with("/a/l")));
    }
    let mut failures: Vec<String> = Vec::new();
    let mut tally = Tally::default();
    // One case alone, to reproduce it: its choices depend on the seed and
    // its number only.
    let only = std::env::var("RIGHTS_MODEL_ONLY")
        .ok()
        .and_then(|v| v.parse::<u64>().ok());
    for case in (0..cases).filter(|c| only.is_none_or(|o| o == *c)) {
        let mut rng = Rng(seed.wrapping_add(case.wrapping_mul(0x9E37_79B9_7F4A_7C15)) | 1);
        let first = Rules::generate(&mut rng);
        // Every other case is served under a path prefix (a proxy's
        // `/files/...`): the same rights must hold at every path the
        // client names there, Destination headers included.
        let prefix = (case % 2 == 1).then_some("/files");
        let mut site = Site::start_under(&first.text(&drive::hash_of), s3.clone(), prefix);
        // Links are minted only for what is there.
        site.reset(&tree);
        let mut case_failures = Vec::new();
        let who = principals(&site, &first, &mut rng, &mut case_failures);
        // Some minters then lose rights, or their account.
        let links: Vec<&Link> = who
            .iter()
            .filter_map(|(w, _, _)| match w {
                Who::Link(l) => Some(l),
                _ => None,
            })
            .collect();
        let mut rules = first.clone();
        let mut change = "";
        if let Some(l) = links.iter().find(|l| l.minter != model::TOKEN_MINTER) {
            match rng.below(3) {
                1 => {
                    rules = first.lowered(&mut rng, l.minter, false);
                    change = "lowered";
                }
                2 => {
                    rules = first.lowered(&mut rng, l.minter, true);
                    change = "removed";
                }
                _ => {}
            }
        }
        if rules != first {
            site.reload(&rules.text(&drive::hash_of));
        }
        for (w, a, name) in &who {
            let removed = matches!(w, Who::User(u) if !rules.users.contains(u));
            // A removed user's sign-ins fail: a few, not to meet the back-off.
            let n = if removed { 2 } else { per };
            let judge = Judge {
                rules: &rules,
                who: w,
            };
            for _ in 0..n {
                let op = &catalogue[rng.below(catalogue.len())];
                let exp = ops::expect(&judge, &tree, op);
                tally.sent += 1;
                match exp.class {
                    model::Exp::Yes => tally.allowed += 1,
                    model::Exp::No => tally.refused += 1,
                    model::Exp::Either => tally.either += 1,
                }
                let problems = run::run(&mut site, a, op, &exp, &tree);
                if !problems.is_empty() {
                    case_failures.push(format!(
                        "  as {name}: {op:?} (model: {:?}; {})\n    {}",
                        exp.class,
                        ops::explain(&judge, op),
                        problems.join("\n    ")
                    ));
                }
            }
        }
        if !case_failures.is_empty() {
            let then = if change.is_empty() {
                String::new()
            } else {
                format!(
                    "\nthen the first user-minted link's minter {change}, reloaded:\n{}",
                    rules.show()
                )
            };
            failures.push(format!(
                "case {case}{} (alone: RIGHTS_MODEL_SEED={seed} RIGHTS_MODEL_ONLY={case} RIGHTS_MODEL_CASES={} {ops_var}={per}): rules file\n{}{then}\n{}",
                prefix.map_or(String::new(), |p| format!(", served under {p}/")),
                case + 1,
                first.show(),
                case_failures.join("\n")
            ));
        }
    }
    if !failures.is_empty() {
        failures.insert(
            0,
            format!(
                "the server and the per-path rights model disagree in {} of {cases} cases ({tally:?}).\n\
                 Tree every operation starts from: {tree:?}",
                failures.len()
            ),
        );
    }
    (failures, tally)
}

fn seed() -> u64 {
    env_or("RIGHTS_MODEL_SEED", 0x5EED_0035)
}

#[test]
fn the_server_grants_exactly_what_the_per_path_model_allows() {
    let cases = env_or("RIGHTS_MODEL_CASES", 10);
    let per = env_or("RIGHTS_MODEL_OPS", 25) as usize;
    let (failures, tally) = run_cases(None, seed(), cases, per);
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    eprintln!("rights model: {cases} cases, {tally:?}");
}

/// The same on S3 (MinIO), fewer cases (each reset is requests there):
/// `RIGHTS_MODEL_S3_CASES` (default 2) and `RIGHTS_MODEL_S3_OPS` per
/// principal (default 8).
#[test]
fn the_model_holds_on_s3_too() {
    let Some(m) = Minio::start() else {
        return;
    };
    m.create_bucket("rights");
    let cfg = drive::s3_config(&m, "rights", "model");
    let cases = env_or("RIGHTS_MODEL_S3_CASES", 2);
    let per = env_or("RIGHTS_MODEL_S3_OPS", 8) as usize;
    let (failures, tally) = run_cases(Some(cfg), seed(), cases, per);
    assert!(failures.is_empty(), "on S3: {}", failures.join("\n\n"));
    eprintln!("rights model on S3: {cases} cases, {tally:?}");
}
