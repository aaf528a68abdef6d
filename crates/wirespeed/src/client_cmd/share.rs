//! `wirespeed share`: ask the server for a share link (`POST /-/shares/…`),
//! list the live ones (`--list`), or revoke one (`--revoke`).

use anyhow::Context;
use clap::Args;
use wirespeed_client::{Body, Request, Url};

use super::{client, runtime, url, ClientOpts};

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
it expires (default 7 days; the server's --share-max-expiry caps it) or is
revoked.";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct ShareArgs {
    /// The file or folder URL to share; with --list, the folder whose links
    /// to list; with --revoke, the link to revoke.
    #[arg(value_name = "URL")]
    pub url: String,
    /// How long the link lives: e.g. 7d, 12h, 30m.
    #[arg(long, value_name = "DURATION", default_value = "7d", value_parser = parse_duration)]
    pub expires: u64,
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
    pub opts: ClientOpts,
}

fn parse_duration(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let (num, mult) = match s.chars().last() {
        Some('d') => (&s[..s.len() - 1], 86_400),
        Some('h') => (&s[..s.len() - 1], 3_600),
        Some('m') => (&s[..s.len() - 1], 60),
        Some('s') => (&s[..s.len() - 1], 1),
        _ => (s, 1),
    };
    num.parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{s:?}: expected a duration like 7d, 12h, 30m"))
}

/// `share=` of a link's query.
fn token_of(link: &str) -> Option<&str> {
    let (_, query) = link.split_once('?')?;
    let query = query.split('#').next()?;
    query.split('&').find_map(|kv| kv.strip_prefix("share="))
}

pub fn share(args: ShareArgs) -> anyhow::Result<()> {
    let client = client(&args.opts, 1)?;
    let target = url(&args.url)?;
    let path = target.path().to_string();
    let rt = runtime()?;
    let (method, api) = if args.revoke {
        let token = token_of(&args.url)
            .context("--revoke needs the link itself (the URL with ?share=…)")?;
        ("DELETE", format!("/-/shares{path}?link={token}"))
    } else if args.list {
        ("GET", format!("/-/shares{path}"))
    } else {
        let upload = if args.upload { "&upload" } else { "" };
        (
            "POST",
            format!("/-/shares{path}?expires={}{upload}", args.expires),
        )
    };
    let api = target.resolve(&api)?;
    let body = rt.block_on(async {
        let resp = client
            .send(Request::new(method, api).body(Body::empty()))
            .await?
            .error_for_status()
            .await?;
        resp.bytes(4 << 20).await
    });
    let body = body.with_context(|| match method {
        "DELETE" => format!("revoking {}", args.url),
        "GET" => format!("listing the links at {target}"),
        _ => format!("sharing {target}"),
    })?;
    if args.revoke {
        eprintln!("revoked");
        return Ok(());
    }
    let v: serde_json::Value =
        serde_json::from_slice(&body).context("the server's answer is not JSON")?;
    let link = |v: &serde_json::Value| -> anyhow::Result<Url> {
        let (Some(p), Some(t)) = (v["path"].as_str(), v["share"].as_str()) else {
            anyhow::bail!("the server's answer has no link");
        };
        Ok(target.resolve(&format!("{p}?share={t}"))?)
    };
    if args.list {
        for l in v.as_array().into_iter().flatten() {
            let when = l["expires"].as_u64().map_or(String::new(), expiry_text);
            outln!(
                "{}\t{}\t{when}\t{}",
                link(l)?,
                l["rights"].as_str().unwrap_or(""),
                l["by"].as_str().unwrap_or("")
            );
        }
    } else {
        outln!("{}", link(&v)?);
    }
    Ok(())
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
        assert!(parse_duration("x").is_err());
        assert_eq!(token_of("http://h/a?share=abc.def"), Some("abc.def"));
        assert_eq!(token_of("http://h/a?format=json&share=t#x"), Some("t"));
        assert_eq!(token_of("http://h/a"), None);
    }
}
