//! `serve --search`: the index, under the state folder (never in the
//! served tree), one file per served place, named by a hash of the
//! folder's real path or the bucket's place, so two servers of different
//! trees never share one.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use sha2::Digest as _;
use wirespeed_service::search::StorageSource;
use wirespeed_service::search_index::{Search, Settings};
use wirespeed_service::Storage;

use super::flags::ServeArgs;

fn index_file(args: &ServeArgs, place: &[u8]) -> anyhow::Result<PathBuf> {
    let state = super::shares::state_dir(args.state_dir.as_deref())
        .context("--search keeps its index under the state folder: give --state-dir")?;
    let digest = sha2::Sha256::digest(place);
    let name: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
    Ok(state.join("search").join(format!("{name}.db")))
}

/// The index of a served folder, watched on the host.
pub fn open(args: &ServeArgs, root: &Path) -> anyhow::Result<Arc<Search>> {
    let real = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let db = index_file(args, real.as_os_str().as_encoded_bytes())?;
    let mut settings = Settings::new(real, db);
    settings.max_text_size = args.search_max_text;
    let search = Search::open(settings).context("opening the search index")?;
    Ok(Arc::new(search))
}

/// The index of a bucket (`place`: its endpoint, bucket and prefix), fed
/// from its listings at start and every `--search-rescan`, and from the
/// server's own changes. Called on the runtime.
pub fn open_storage<S: Storage>(
    args: &ServeArgs,
    place: &str,
    storage: S,
) -> anyhow::Result<Arc<Search>> {
    let db = index_file(args, place.as_bytes())?;
    let mut settings = Settings::new(PathBuf::new(), db);
    settings.max_text_size = args.search_max_text;
    settings.reconcile_every = std::time::Duration::from_secs(args.search_rescan.max(1));
    let source = StorageSource::new(storage, tokio::runtime::Handle::current());
    let search =
        Search::open_with(settings, Box::new(source)).context("opening the search index")?;
    Ok(Arc::new(search))
}
