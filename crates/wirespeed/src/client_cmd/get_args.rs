//! What `wirespeed get` takes: its arguments and their help.

use std::path::PathBuf;

use clap::Args;

use super::{ClientOpts, ParallelOpts, RetryOpts, WalkOpts};

const AFTER_HELP: &str = "\
Examples:
  wirespeed get http://127.0.0.1:8080/isos/big.iso             # -> ./big.iso
  wirespeed get -c http://127.0.0.1:8080/isos/big.iso -o /tmp/big.iso
  wirespeed get 'http://127.0.0.1:8080/w/ünï 1.txt'            # encoded for you; %XX kept
  wirespeed get http://127.0.0.1:8080/a.txt http://127.0.0.1:8080/b.txt dl/
  wirespeed get http://127.0.0.1:8080/dir.tar -o - | tar x     # to stdout
  wirespeed get -r http://127.0.0.1:8080/photos/ backup        # -> backup/photos/..., every run
  wirespeed get -n -r http://127.0.0.1:8080/photos/            # -> ./photos/, keep existing files
  wirespeed get 127.0.0.1:8080/a.txt                           # no scheme: http:// (as curl)
  wirespeed get -r --archive zip http://127.0.0.1:8080/photos/ # -> ./photos.zip, one download

Every file arrives as .wirespeed-part-FILE (hidden, beside it; the
.wirespeed- prefix is reserved, so no remote file can take that name) and
is renamed to FILE only when complete (and verified, when the server sends
Repr-Digest); any non-2xx final answer leaves no file and exits 1. The
destination's folder must exist: it is checked before anything is
transferred. Ctrl-C keeps what arrived, prints the command that continues
and exits 130. The server's version of the bytes (its ETag, else
Last-Modified) is recorded on the file (extended attribute
user.wirespeed.validator): running the same command again continues a
partial file, with or without -c, when the server still has that version
(If-Range), and starts over when it changed.

Retries: a broken connection, a timeout or a 5xx is retried (--retries N,
default 10) from where FILE.part ends, with `Range: bytes=N-` and `If-Range`
(the ETag, else Last-Modified): if the file changed on the server meanwhile,
it answers the whole new file and the download starts again from byte 0.
Output to stdout (-o -) is not retried: bytes written cannot be taken back.

Folders: `get -r URL/NAME/ DEST` always writes DEST/NAME/ (DEST is created
if missing, like `wget -P DEST`); without DEST, ./NAME/. NAME is the last
name of the URL you typed: a redirect may change where the listing is read,
never where files are written. The server's root (no NAME) goes into DEST
itself. So the same command always writes the same tree, and a rerun
continues it: files whose size matches the listing and that are not older
than it are kept (a file fetched within the second it is listed with is
kept only if the server's version is still the recorded one: HEAD), files
whose size or version changed are downloaded again, partial files are
resumed (unless older than the listed file), partial files no longer listed are removed, and the exit status is 1 if any file failed. The listing is
read as JSON (`?format=json`), so -r needs a wirespeed server; a name that
is not one plain file name (`..`, `/etc/x`, `a/../b`) or starts with
.wirespeed- is skipped and said (`skipped URL: why`). A tree above
--max-entries entries or --max-names bytes of names fails before any
transfer.

--archive tar|zip: the folder arrives as one archive with an exact length,
so a cut download resumes (-c, retries) like a file; if the folder changed
meanwhile, the server answers the new archive whole.

Times: like `wget` and `curl -R`, each file gets the server's modification
time (`Last-Modified`), set before it is renamed into place; --no-mtime
leaves the time of the download.

--no-clobber: like `wget -nc` and `cp -n`, an existing local file is not
downloaded again (checked before transferring); this is reported on stderr and
is not an error. Without it, files are replaced.";

#[derive(Args, Debug)]
#[command(after_help = AFTER_HELP)]
pub struct GetArgs {
    /// What to download: one or more URLs, optionally followed by the
    /// destination (same as -o).
    #[arg(required = true, num_args = 1.., value_name = "URL")]
    pub args: Vec<String>,
    /// Destination file, or an existing folder (several URLs, -r: a folder).
    /// `-` writes to standard output. Default: the URL's last path segment in
    /// the current folder.
    #[arg(long, short = 'o', value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Resume: continue an existing `FILE.part` left by an earlier run with a
    /// Range request (starts over if the server cannot continue it). Within
    /// one run, failures are resumed anyway (--retries).
    #[arg(long = "continue", short = 'c')]
    pub resume: bool,
    /// Download folders and everything in them.
    #[arg(long, short = 'r')]
    pub recursive: bool,
    /// Never replace a local file: skip it and say so.
    #[arg(long, short = 'n')]
    pub no_clobber: bool,
    /// Download a folder as one archive the server builds
    /// (`?archive=tar|zip`): one file, resumable like any other (-c, retries
    /// with Range/If-Range). Default name: FOLDER.tar or FOLDER.zip.
    #[arg(long, value_name = "FORMAT", value_parser = ["tar", "zip"])]
    pub archive: Option<String>,
    /// Do not give files the server's modification time (`Last-Modified`,
    /// kept by default as `wget` and `curl -R` do): they get the time of
    /// the download instead.
    #[arg(long)]
    pub no_mtime: bool,
    /// Say what became of each file as JSON Lines on stdout, one line per
    /// file as it is done, then a summary line (docs/client.md); errors
    /// stay on stderr. Not with -o - (the file is stdout then).
    #[arg(long)]
    pub json: bool,
    /// At most N parallel connections (default: adaptive, up to 8): a file
    /// of 64 MiB or more is fetched by ranges, starting with one connection
    /// and adding one while the total keeps growing (none while a wirespeed
    /// server says the one fills the link); 1: one connection, one stream.
    /// A cut download continues with only the missing ranges, whatever N (those received whole are
    /// recorded every 30 s, on an error and on Ctrl-C: after a crash or a
    /// kill, at most the last 30 s come again).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64))]
    pub connections: Option<u16>,
    /// Files at least this large may take more than one connection (tests and benches).
    #[arg(long, value_name = "SIZE", hide = true, value_parser = wirespeed_units::parse_size)]
    pub ranged_from: Option<u64>,
    #[command(flatten)]
    pub parallel: ParallelOpts,
    #[command(flatten)]
    pub retry: RetryOpts,
    #[command(flatten)]
    pub walk: WalkOpts,
    #[command(flatten)]
    pub opts: ClientOpts,
}
