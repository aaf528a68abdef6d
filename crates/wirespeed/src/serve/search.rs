//! `serve --search`: the folder's index, under the state folder (never in
//! the served tree), one file per served folder, named by a hash of its
//! real path so two servers of different folders never share one.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use sha2::Digest as _;
use wirespeed_service::search_index::{Search, Settings};

use super::flags::ServeArgs;

pub fn open(args: &ServeArgs, root: &Path) -> anyhow::Result<Arc<Search>> {
    let state = super::shares::state_dir(args.state_dir.as_deref())
        .context("--search keeps its index under the state folder: give --state-dir")?;
    let real = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let digest = sha2::Sha256::digest(real.as_os_str().as_encoded_bytes());
    let name: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    let mut settings = Settings::new(real, state.join("search").join(format!("{name}.db")));
    settings.max_text_size = args.search_max_text;
    let search = Search::open(settings).context("opening the search index")?;
    Ok(Arc::new(search))
}
