//! Ctrl-C during a transfer: what was done is kept (the partial download,
//! the recorded upload), the command that continues is printed, exit 130.

use std::future::Future;

/// Exit status after Ctrl-C (128 + SIGINT, as shells report it).
pub const INTERRUPTED: i32 = 130;

/// Run `fut` on `rt`; on Ctrl-C record what arrived, print `again` (the
/// command that continues) and exit 130.
pub(super) fn block_on<F: Future>(rt: &tokio::runtime::Runtime, fut: F, again: &str) -> F::Output {
    rt.block_on(async {
        // Borrowed by the select, so it is still alive (not dropped, its
        // downloads' pieces reachable) while Ctrl-C is handled.
        let mut fut = std::pin::pin!(fut);
        tokio::select! {
            r = &mut fut => r,
            _ = tokio::signal::ctrl_c() => {
                // Syncing what arrived may take a while on a slow disk: a
                // second Ctrl-C stops waiting for it.
                tokio::select! {
                    _ = wirespeed_client::transfer::record_received() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
                eprintln!("\ninterrupted; what arrived is kept, and this continues: {again}");
                std::process::exit(INTERRUPTED);
            }
        }
    })
}

/// This process's own command line, shell-quoted, with `flag` added after
/// the subcommand unless it (or `short`) is already there.
pub(super) fn rerun_command(flag: Option<(&str, &str)>) -> String {
    let args: Vec<String> = std::env::args().collect();
    command_line(&args, flag)
}

fn command_line(args: &[String], flag: Option<(&str, &str)>) -> String {
    let mut out: Vec<String> = Vec::with_capacity(args.len() + 1);
    for (i, a) in args.iter().enumerate() {
        out.push(if i == 0 {
            "wirespeed".to_string()
        } else {
            quote(a)
        });
        if i == 1 {
            if let Some((long, short)) = flag {
                if !args.iter().any(|x| x == long || x == short) {
                    out.push(long.to_string());
                }
            }
        }
    }
    out.join(" ")
}

/// `s` as one shell word: plain when it is only safe characters, else in
/// single quotes.
fn quote(s: &str) -> String {
    let plain = !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./:=@%+,".contains(&b));
    if plain {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_that_continues() {
        let a = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            command_line(
                &a(&["/x/wirespeed", "get", "http://h/a b", "-o", "it's"]),
                Some(("--continue", "-c"))
            ),
            "wirespeed get --continue 'http://h/a b' -o 'it'\\''s'"
        );
        assert_eq!(
            command_line(
                &a(&["wirespeed", "get", "-c", "http://h/x"]),
                Some(("--continue", "-c"))
            ),
            "wirespeed get -c http://h/x"
        );
        assert_eq!(
            command_line(&a(&["wirespeed", "put", "f", "http://h/"]), None),
            "wirespeed put f http://h/"
        );
    }
}
