//! `wirespeed find URL TEXT`: names (or, with --content, files whose words
//! match) anywhere below a folder, from the server's search index, page
//! after page as they come.

use anyhow::Context;
use clap::Args;
use wirespeed_client::transfer::search::{next_url, search_page, search_url};

use super::{plain_client, printable, runtime, url, ConnOpts};

#[derive(Args, Debug)]
pub struct FindArgs {
    /// Folder URL to search below (a share link's URL too).
    pub url: String,
    /// What to find: fragments of names (each must occur), or words with
    /// --content.
    pub text: String,
    /// Search the words inside text files instead of names.
    #[arg(long)]
    pub content: bool,
    /// Print the results as one JSON array of {path, name, type, size,
    /// modified}.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub opts: ConnOpts,
}

pub fn find(args: FindArgs) -> anyhow::Result<()> {
    let client = plain_client(&args.opts, 1)?;
    let folder = url(&args.url)?;
    let first = search_url(&folder, &args.text, args.content)?;
    let rt = runtime()?;
    let mut at = Some(first.clone());
    let mut count = 0usize;
    if args.json {
        out!("[");
    } else {
        outln!("{:<4}  {:>12}  {:<20}  PATH", "TYPE", "SIZE", "MODIFIED");
    }
    while let Some(u) = at {
        let page = rt
            .block_on(search_page(&client, &u))
            .with_context(|| format!("searching {folder}"))?;
        for e in &page.entries {
            if args.json {
                let line = serde_json::to_string(e).unwrap_or_default();
                out!("{}\n{line}", if count > 0 { "," } else { "" });
            } else {
                let size = if e.kind == "dir" {
                    "-".to_string()
                } else {
                    e.size.to_string()
                };
                outln!(
                    "{:<4}  {size:>12}  {:<20}  {}",
                    e.kind,
                    printable(e.modified.as_deref().unwrap_or("-")),
                    printable(&e.path)
                );
            }
            count += 1;
        }
        at = next_url(&first, &page)?;
    }
    if args.json {
        outln!("\n]");
    }
    Ok(())
}
