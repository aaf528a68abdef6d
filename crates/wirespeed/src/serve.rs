//! `wirespeed serve`: argument parsing and start-up; the routes live in
//! `wirespeed-service`.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Folder to serve (created if missing).
    #[arg(default_value = "./data")]
    pub dir: PathBuf,
    /// Address to listen on; port 0 picks a free port (printed at start).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
}

pub fn run(args: ServeArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("creating the folder to serve, {}", args.dir.display()))?;
    let _ = args.listen;
    anyhow::bail!("serve: not wired yet")
}
