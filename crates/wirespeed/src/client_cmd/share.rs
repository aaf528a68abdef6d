//! `wirespeed share`: ask the server for a share link (`POST /-/shares/…`),
//! list the live ones (`--list`), or revoke one (`--revoke`).

use anyhow::Context;
use clap::Args;
use wirespeed_client::url::encode_target;
use wirespeed_client::{terminal_safe, Body, Request, Url};
use wirespeed_service::policy::shares::human_duration;

use super::{plain_client, runtime, url, ConnOpts};

const AFTER_HELP: &str = "\
Examples:
  wirespeed share --user alice http://files.lan:8080/alice/report.pdf
  wirespeed share --user alice --expires 1d http://files.lan:8080/alice/photos/
  wirespeed share --user alice --upload http://files.lan:8080/alice/inbox/
  wirespeed share --user alice --list http://files.lan:8080/alice/
  wirespeed share --user alice --revoke 'http://files.lan:8080/alice/report.pdf?share=…'

A file link reads that file; a folder link (URL ending in /) reads the folder
and everything below; --upload makes a folder's drop-box link (new names only,
nothing read back). You can only share what you may do there yourself. The
link is printed on stdout, one line; anyone holding it has its rights until
it expires (default 7 days, or the server's --share-max-expiry when shorter;
a longer --expires is refused with the server's limit) or is revoked. A URL
that names nothing is refused (404), and a folder needs its trailing /.";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct ShareArgs {
    /// The file or folder URL to share; with --list, the folder whose links
    /// to list; with --revoke, the link to revoke.
    #[arg(value_name = "URL")]
    pub url: String,
    /// How long the link lives: e.g. 7d, 1w, 12h, 2h30m, 90s. Default: 7
    /// days, or the server's --share-max-expiry when that is shorter.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub expires: Option<u64>,
    /// A drop-box link for a folder: its holder may upload new names only.
    #[arg(long, conflicts_with_all = ["list", "revoke"])]
    pub upload: bool,
    /// List your live links at or below URL (all links with the token).
    #[arg(long, conflicts_with = "revoke")]
    pub list: bool,
    /// Revoke the link given as URL.
    #[arg(long)]
    pub revoke: bool,
    #[command(flatten)]
    pub opts: ConnOpts,
}

/// A duration as seconds: numbers each followed by a unit (`w`, `d`, `h`,
/// `m`, `s`), added up (`2h30m`, `1w`); a bare number is seconds.
fn parse_duration(s: &str) -> Result<u64, String> {
    let bad = || format!("{s:?}: expected a duration like 7d, 1w, 12h, 2h30m, 90s");
    let t = s.trim();
    if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
        return t.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(bad);
    }
    let (mut total, mut num) = (0u64, None::<u64>);
    for c in t.chars() {
        if let Some(d) = c.to_digit(10) {
            num = Some(
                num.unwrap_or(0)
                    .checked_mul(10)
                    .and_then(|n| n.checked_add(u64::from(d)))
                    .ok_or_else(bad)?,
            );
            continue;
        }
        let unit = match c {
            'w' => 604_800,
            'd' => 86_400,
            'h' => 3_600,
            'm' => 60,
            's' => 1,
            _ => return Err(bad()),
        };
        let n = num.take().ok_or_else(bad)?;
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(bad)?;
    }
    if num.is_some() || total == 0 {
        return Err(bad());
    }
    Ok(total)
}

/// `share=` of a link's query.
fn token_of(link: &str) -> Option<&str> {
    let (_, query) = link.split_once('?')?;
    let query = query.split('#').next()?;
    query.split('&').find_map(|kv| kv.strip_prefix("share="))
}

pub fn share(args: ShareArgs) -> anyhow::Result<()> {
    let client = plain_client(&args.opts, 1)?;
    let target = url(&args.url)?;
    let rt = runtime()?;
    let (method, query) = if args.revoke {
        let token = token_of(&args.url)
            .context("--revoke needs the link itself (the URL with ?share=…)")?;
        ("DELETE", format!("?link={token}"))
    } else if args.list {
        ("GET", String::new())
    } else {
        // Without --expires the server picks (7 days, or its limit).
        let mut query = args.expires.map(|s| format!("expires={s}"));
        if args.upload {
            query = Some(query.map_or("upload".into(), |q| format!("{q}&upload")));
        }
        let query = query.map(|q| format!("?{q}")).unwrap_or_default();
        ("POST", query)
    };
    let body = rt.block_on(async {
        // The links' routes sit below the server's path prefix, if it has
        // one.
        let base = client.server_base(&target).await?;
        let path = target
            .control_path(base, "/-/shares")
            .context("no place to ask for links")?;
        let api = target.resolve(&format!("{path}{query}"))?;
        let resp = client
            .send(Request::new(method, api).body(Body::empty()))
            .await?;
        anyhow::Ok(resp.error_for_status().await?.bytes(4 << 20).await?)
    });
    let body = body.with_context(|| match method {
        "DELETE" => format!("revoking {}", args.url),
        "GET" => format!("listing the links at {target}"),
        _ => match args.expires {
            Some(secs) => format!("sharing {target} for {}", human_duration(secs)),
            None => format!("sharing {target}"),
        },
    })?;
    if args.revoke {
        eprintln!("revoked");
        return Ok(());
    }
    let v: serde_json::Value =
        serde_json::from_slice(&body).context("the server's answer is not JSON")?;
    let link = |v: &serde_json::Value| link_of(&target, v);
    if args.list {
        for l in v.as_array().into_iter().flatten() {
            let when = l["expires"].as_u64().map_or(String::new(), expiry_text);
            // Server text, shown on a terminal: escape codes escaped.
            let text = |k: &str| terminal_safe(l[k].as_str().unwrap_or(""), 200);
            outln!("{}\t{}\t{when}\t{}", link(l)?, text("rights"), text("by"));
        }
    } else {
        outln!("{}", link(&v)?);
    }
    Ok(())
}

/// The link to print: the URL the user gave (its scheme, host and port:
/// the name they reach the server by) with the server's path and token.
/// Only a path is taken from the answer, never another host; the token
/// is one query value.
fn link_of(target: &Url, v: &serde_json::Value) -> anyhow::Result<Url> {
    let (Some(p), Some(t)) = (v["path"].as_str(), v["share"].as_str()) else {
        anyhow::bail!("the server's answer has no link");
    };
    if !p.starts_with('/') || p.starts_with("//") {
        anyhow::bail!(
            "the server's answer names no path on this server: {}",
            terminal_safe(p, 200)
        );
    }
    if t.is_empty()
        || !t
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.~=".contains(&b))
    {
        anyhow::bail!("the server's answer has no usable token");
    }
    let mut u = target.clone();
    u.target = format!(
        "{}?share={t}",
        encode_target(p.split(['?', '#']).next().unwrap_or(p))
    );
    Ok(u)
}

/// A link's expiry as UTC date and time.
fn expiry_text(secs: u64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    format!("expires {}", httpdate::fmt_http_date(t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        assert_eq!(parse_duration("7d"), Ok(604_800));
        assert_eq!(parse_duration("30m"), Ok(1_800));
        assert_eq!(parse_duration("1w"), Ok(604_800));
        assert_eq!(parse_duration("2h30m"), Ok(9_000));
        assert_eq!(parse_duration(" 1d12h "), Ok(129_600));
        assert_eq!(parse_duration("90"), Ok(90));
        for bad in [
            "x",
            "",
            "0",
            "0d",
            "2h30",
            "h",
            "1y",
            "1d-2h",
            "99999999999999999999w",
        ] {
            assert!(parse_duration(bad).is_err(), "{bad:?}");
        }
        assert_eq!(token_of("http://h/a?share=abc.def"), Some("abc.def"));
        assert_eq!(token_of("http://h/a?format=json&share=t#x"), Some("t"));
        assert_eq!(token_of("http://h/a"), None);
    }
}

#[cfg(test)]
mod link_tests {
    use super::*;

    #[test]
    fn links_keep_the_typed_origin() {
        let typed = Url::parse("https://files.lan:8443/a/b.txt").unwrap();
        let v = serde_json::json!({"path": "/a/b c.txt", "share": "abc.d-e_f"});
        assert_eq!(
            link_of(&typed, &v).unwrap().to_string(),
            "https://files.lan:8443/a/b%20c.txt?share=abc.d-e_f"
        );
        for path in ["http://evil.example/a", "//evil.example/a", "a"] {
            let v = serde_json::json!({"path": path, "share": "t"});
            assert!(link_of(&typed, &v).is_err(), "{path}");
        }
        let v = serde_json::json!({"path": "/a", "share": "t&x=\u{1b}[2J"});
        assert!(link_of(&typed, &v).is_err());
    }
}
