//! `wirespeed trash ls URL` and `wirespeed trash restore URL`: what was
//! deleted or overwritten below a folder, and putting it back
//! (`GET /-/trash/PATH`, `POST /-/trash?restore=ID`), signed in as the
//! other commands are.

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use wirespeed_client::{terminal_safe, Body, Client, Request, Url};

use super::{plain_client, runtime, url, ConnOpts};

const AFTER_HELP: &str = "\
Examples:
  wirespeed trash ls http://files.lan:8080/team/
  wirespeed trash restore http://files.lan:8080/team/report.pdf
  wirespeed trash restore --as report-old.pdf http://files.lan:8080/team/report.pdf

ls prints one line per entry you could delete at its original place now:
its id, when it went, its size, who removed it, and where it was. restore
puts back the newest entry that was at URL (or --id ID), with its bytes and
modification time; if something is at that name now it is refused (409)
unless --as names a place beside it.";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct TrashArgs {
    #[command(subcommand)]
    pub action: TrashAction,
}

#[derive(Subcommand, Debug)]
pub enum TrashAction {
    /// List what was deleted or overwritten at or below URL.
    Ls {
        #[arg(value_name = "URL")]
        url: String,
        #[command(flatten)]
        opts: ConnOpts,
    },
    /// Put back what was at URL (the newest entry, or --id).
    Restore {
        #[arg(value_name = "URL")]
        url: String,
        /// The entry to restore (from `trash ls`).
        #[arg(long)]
        id: Option<String>,
        /// Restore beside the original, under this name.
        #[arg(long = "as", value_name = "NAME")]
        as_name: Option<String>,
        #[command(flatten)]
        opts: ConnOpts,
    },
}

/// The trash's entries at or below `target`, newest first.
async fn entries(client: &Client, target: &Url) -> anyhow::Result<Vec<serde_json::Value>> {
    let base = client.server_base(target).await?;
    let path = target
        .control_path(base, "/-/trash")
        .context("no place to ask for the trash")?;
    let api = target.resolve(&path)?;
    let resp = client
        .send(Request::new("GET", api).body(Body::empty()))
        .await?;
    let body = resp.error_for_status().await?.bytes(16 << 20).await?;
    let v: serde_json::Value =
        serde_json::from_slice(&body).context("the server's answer is not JSON")?;
    Ok(v["entries"].as_array().cloned().unwrap_or_default())
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

pub fn trash(args: TrashArgs) -> anyhow::Result<()> {
    let rt = runtime()?;
    match args.action {
        TrashAction::Ls { url: u, opts } => {
            let client = plain_client(&opts, 1)?;
            let target = url(&u)?;
            let list = rt
                .block_on(entries(&client, &target))
                .with_context(|| format!("listing the trash at {target}"))?;
            for e in list {
                let text = |k: &str| terminal_safe(e[k].as_str().unwrap_or(""), 200);
                outln!(
                    "{}\t{}\t{}\t{}\t{}",
                    text("id"),
                    e["deleted"].as_u64().unwrap_or(0),
                    e["size"].as_u64().unwrap_or(0),
                    text("by"),
                    text("path")
                );
            }
            Ok(())
        }
        TrashAction::Restore {
            url: u,
            id,
            as_name,
            opts,
        } => {
            let client = plain_client(&opts, 1)?;
            let target = url(&u)?;
            rt.block_on(async {
                let base = client.server_base(&target).await?;
                let id = match id {
                    Some(id) => id,
                    None => {
                        // The newest entry that was at exactly this path.
                        let below = target.path().strip_prefix(base).unwrap_or(target.path());
                        let list = entries(&client, &target).await?;
                        let found = list.iter().find(|e| {
                            e["path"].as_str().map(|p| p.trim_end_matches('/'))
                                == Some(below.trim_end_matches('/'))
                        });
                        match found.and_then(|e| e["id"].as_str()) {
                            Some(id) => id.to_owned(),
                            None => bail!("nothing in the trash was at {target}"),
                        }
                    }
                };
                let mut query = format!("?restore={}", encode(&id));
                if let Some(name) = &as_name {
                    query.push_str(&format!("&as={}", encode(name)));
                }
                let api = target.resolve(&format!("{base}/-/trash{query}"))?;
                let resp = client
                    .send(Request::new("POST", api).body(Body::empty()))
                    .await?;
                resp.error_for_status().await?;
                outln!("restored {target}");
                anyhow::Ok(())
            })
            .with_context(|| format!("restoring {target}"))
        }
    }
}
