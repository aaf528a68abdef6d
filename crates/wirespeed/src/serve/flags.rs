//! `wirespeed serve`'s flags: what each one means, its default, and the
//! checks clap makes on its value.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::listen::{parse_listen, ListenAddr};
use wirespeed_units::parse_size;

/// `--path-prefix`: a prefix, never the root (leave the flag out for that).
fn parse_path_prefix(s: &str) -> Result<wirespeed_net::PathPrefix, String> {
    match wirespeed_net::PathPrefix::parse(s) {
        Ok(Some(p)) => Ok(p),
        Ok(None) => Err("that is the root: leave --path-prefix out to serve there".to_string()),
        Err(e) => Err(e.to_string()),
    }
}

/// `serve --help`: the routes at a glance.
pub const LONG_ABOUT: &str = "Serve DIR (default: the current folder; it must exist unless --create) \
over HTTP/1.1.\n\n\
Routes:\n  \
GET/HEAD /path     a file (sendfile; ETag, Last-Modified, single byte ranges, If-None-Match, If-Range);\n                     \
Repr-Digest when one is recorded, or computed on Want-Repr-Digest\n  \
GET /dir/          a listing sorted by name: HTML, or JSON with ?format=json or an Accept that prefers application/json\n  \
PUT /path          upload (atomic: temp file, fsync, rename); 201 new, 204 replaced;\n                     \
507 at once if the Content-Length exceeds the free space; with Want-Repr-Digest: sha-256=N\n                     \
(or a Repr-Digest/Content-Digest to check) hashes the body and answers Repr-Digest;\n                     \
If-None-Match: * creates only, If-Match: ETAG replaces only that version (412)\n  \
DELETE /path       a file, or a folder with everything in it (207 lists what could not go)\n  \
WebDAV class 1, 2  OPTIONS (DAV: 1, 2), PROPFIND (Depth 0 and 1), PROPPATCH, MKCOL, COPY, MOVE, \
LOCK, UNLOCK: mount the server as a drive (docs/mounting.md)\n  \
GET /-/health      200 while serving\n  \
GET /-/metrics     Prometheus metrics (needs the token on a server with --token; --metrics off)\n  \
POST /dir/         multipart/form-data upload of one or more files\n  \
POST /path?element=NAME   base64 in an XML/SOAP element (text/xml, application/soap+xml) or MTOM/XOP\n  \
POST /path?field=NAME     base64 in a top-level JSON string field (application/json)\n  \
OPTIONS, POST /-/uploads/…, HEAD/PATCH/DELETE /-/uploads/ID   resumable uploads: tus 1.0 \
(creation, creation-with-upload, creation-defer-length, termination, expiration, checksum)\n  \
PUT/POST /path with Upload-Complete   resumable upload, IETF draft interop version 8 \
(104 with the upload's Location first)\n\n\
Writes: on a loopback address anyone may write; with --token, writes need the token; on any \
other address without --token the server is read-only unless --allow-upload/--allow-delete \
say otherwise; --read-only refuses every write anywhere. With --auth FILE, a rules file \
gives users (HTTP Basic sign-in) rights per folder; `kill -HUP` reloads it.\n\n\
On start, prints one line `listening on http://ADDR` to stdout (the real address, useful with \
port 0); with TLS, `listening on https://ADDR` followed by the certificate lines of \
--tls-self-signed; on 0.0.0.0 or :: then one `on your network: URL` line per address to \
hand out. The write mode (`mode: …`) and other notes go to stderr. SIGINT/SIGTERM \
stop accepting and let requests in flight finish (a second Ctrl-C stops at once).\n\n\
Behind a reverse proxy under a path (every route above then sits below it):\n  \
wirespeed serve --path-prefix /files ~/share\n  \
nginx: location /files/ { proxy_pass http://127.0.0.1:8080; proxy_set_header Host $http_host; }\n\
($http_host, not $host: WebDAV's COPY and MOVE compare the Destination with the Host, port and \
all.) See docs/serving.md.";

/// `serve --help`: the common setups, ready to copy.
pub const AFTER_HELP: &str = "\
Examples:
  wirespeed serve                                        # the current folder on http://127.0.0.1:8080
  wirespeed serve ~/shared -l 0.0.0.0:8080               # the LAN may read; prints the URLs to hand out
  wirespeed serve ~/shared -l 0.0.0.0:8080 --allow-upload   # ... and add new files
  wirespeed serve /srv/files -l 0.0.0.0:8080 --auth users.toml   # users and rights per folder
  wirespeed passwd alice                                 # alice's line for that file's [users] (docs/users-and-sharing.md)
  wirespeed serve ~/shared -l 0.0.0.0:8443 --tls-self-signed --tls-cert-dir ~/.wirespeed-tls --token SECRET
  wirespeed serve s3://files/team --s3-endpoint http://127.0.0.1:9000   # a bucket (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)
  wirespeed serve /srv/files --trusted-proxy 127.0.0.1 --allow-host files.example.net   # behind nginx on the same machine
  wirespeed serve site/ --index --allow-scripts          # preview a static site

Behind a reverse proxy: the proxy forwards to 127.0.0.1:8080 and keeps the
Host with its port (nginx: proxy_set_header Host $http_host); --trusted-proxy
lets wirespeed believe its X-Forwarded-For and X-Forwarded-Proto,
--allow-host answers the public name (docs/serving.md has the nginx block).";

#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Folder to serve (default: the current folder). It must exist unless
    /// --create is given; `s3://BUCKET[/PREFIX]` here serves that bucket
    /// (as --storage does).
    #[arg(value_name = "DIR")]
    pub dir: Option<PathBuf>,

    /// What is served and how (boxed, like the S3 settings, to keep the
    /// command enum small).
    #[command(flatten)]
    pub content: Box<ContentArgs>,

    /// Address to listen on: PORT (on 127.0.0.1), IP:PORT, [IPv6]:PORT or
    /// HOST:PORT (resolved once at start; its first IPv4 address, else its
    /// first address). Port 0 picks a free port (printed at start).
    #[arg(
        long,
        short = 'l',
        default_value = "127.0.0.1:8080",
        value_name = "ADDR",
        value_parser = parse_listen
    )]
    pub listen: ListenAddr,

    /// Refuse every write (PUT/POST/DELETE answer 403), on any address.
    #[arg(long, conflicts_with_all = ["allow_upload", "allow_delete"])]
    pub read_only: bool,

    /// Users and rights per folder from a TOML rules file: `[users]` name =
    /// argon2id hash (from `wirespeed passwd`), `[paths."/folder"]` name or
    /// "*" (everyone) = letters r (read), w (write new names), d (delete and
    /// replace); the longest configured path decides. Users sign in with
    /// HTTP Basic, or in the browser page's sign-in form (a session cookie).
    /// A bad file stops the start with its line; SIGHUP reloads
    /// it (a bad reload keeps the old rules). See docs/users-and-sharing.md.
    #[arg(
        long = "auth",
        value_name = "FILE",
        conflicts_with_all = ["allow_upload", "allow_delete"]
    )]
    pub auth: Option<PathBuf>,

    /// Longest a share link may live (`wirespeed share --expires`): e.g.
    /// 30d, 12h. Links are on when users (--auth) or a --token can sign in.
    #[arg(long, value_name = "DURATION", default_value = "30d", value_parser = super::shares::parse_duration)]
    pub share_max_expiry: u64,

    /// How long a browser stays signed in after the page's sign-in form
    /// (--auth): e.g. 12h, 7d. The server refuses the session afterwards,
    /// whatever the browser keeps; Sign out ends it at once.
    #[arg(long, value_name = "DURATION", default_value = "12h", value_parser = super::shares::parse_duration)]
    pub session_expiry: u64,

    /// On S3 storage, how often this node reads the sign-outs and link
    /// revocations other nodes on the bucket made (kept in the bucket under
    /// PREFIX/.wirespeed-state/revoked/): e.g. 30s, 1m. Its own are written
    /// there at once.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = super::shares::parse_duration)]
    pub revocation_sync: u64,

    /// Where serve keeps its state: the share links' key (share.key, mode
    /// 0600), their table (shares.json) and the signed-out browser sessions
    /// (sessions.json). Default: $XDG_STATE_HOME/wirespeed
    /// or ~/.local/state/wirespeed. WIRESPEED_SHARE_KEY (64 hex digits)
    /// gives the key instead, the same on every node of a shared bucket.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,

    /// Keep a search index of the folder: names (GET /PATH/?q=TEXT,
    /// `wirespeed find`) and the words of text-like files (&content=1).
    /// Kept under the state folder (search/), current as files change
    /// through the server or on the host; a restart answers from it at once.
    #[arg(long)]
    pub search: bool,

    /// With --search, index the words of text-like files up to this size
    /// (0: names only).
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "10M")]
    pub search_max_text: u64,

    /// With --search on S3, list the whole bucket again this often, in
    /// seconds (changes made through this server show at once; others,
    /// such as another node's, at the next listing).
    #[arg(long, value_name = "SECS", default_value_t = 600)]
    pub search_rescan: u64,

    /// On an address beyond loopback without --token, let anyone upload
    /// (PUT/POST); without it such a server refuses uploads.
    #[arg(long)]
    pub allow_upload: bool,

    /// On an address beyond loopback without --token, let anyone delete;
    /// without it such a server refuses deletes.
    #[arg(long)]
    pub allow_delete: bool,

    /// Access token; writes (PUT/POST/DELETE) then need `Authorization: Bearer TOKEN`.
    /// Repeat for several tokens. Prefer the environment variable: command lines are
    /// visible to other local users.
    #[arg(
        long = "token",
        value_name = "TOKEN",
        env = "WIRESPEED_TOKEN",
        hide_env_values = true
    )]
    pub tokens: Vec<String>,

    /// The server answers only the names and addresses it is reached by (any
    /// port): the addresses of the bound interface(s), `localhost` when it covers
    /// loopback, the machine's host names (NAME, NAME.local), the --listen and
    /// --tls-name names. Other `Host` values get 421, which stops DNS-rebinding
    /// pages. Add a name here to allow it too (repeatable); `*` allows any (behind a
    /// reverse proxy that routes by name, or pass the Host on:
    /// `proxy_set_header Host $http_host`).
    /// Also from the environment: WIRESPEED_ALLOW_HOST=a,b (containers, which
    /// cannot see the host's names).
    #[arg(
        long = "allow-host",
        value_name = "NAME",
        env = "WIRESPEED_ALLOW_HOST",
        value_delimiter = ','
    )]
    pub allow_hosts: Vec<String>,

    /// A reverse proxy's address or range (CIDR, e.g. 10.0.0.0/8; repeatable):
    /// from such peers only, X-Forwarded-For (its rightmost hop that is not a
    /// trusted proxy) is the client in the access log, and X-Forwarded-Proto the
    /// scheme for the same-origin check. Trusted proxies are exempt from
    /// --max-connections-per-ip (limit clients at the proxy).
    #[arg(long = "trusted-proxy", value_name = "CIDR", value_parser = wirespeed_net::TrustedProxies::parse_one)]
    pub trusted_proxies: Vec<ipnet::IpNet>,

    /// Serve under PATH instead of the root, behind a reverse proxy that
    /// passes the path on unchanged, e.g. `--path-prefix /files` behind
    /// nginx's `location /files/ { proxy_pass http://127.0.0.1:8080; }`.
    /// Requests outside it get 404 (`/files` redirects to `/files/`); every
    /// URL the server makes carries it: the page, redirects, WebDAV hrefs,
    /// upload Locations, share links, the session cookie's Path. Letters,
    /// digits and - . _ ~ between slashes. See docs/serving.md.
    #[arg(long, value_name = "PATH", value_parser = parse_path_prefix)]
    pub path_prefix: Option<wirespeed_net::PathPrefix>,

    /// Reads need a token too (everything but /-/health). Requires --token.
    #[arg(long, requires = "tokens")]
    pub private: bool,

    /// Largest accepted upload body, in bytes; suffixes K, M, G, T (powers of 1024),
    /// e.g. 10G. Bigger uploads get 413. Default: unlimited.
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub max_body: Option<u64>,

    /// Largest resumable upload (tus and IETF, under /-/uploads/), in bytes;
    /// suffixes as for --max-body. Bigger announced lengths get 413 before any
    /// byte is read. Default: the --max-body value if set, else unlimited.
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub upload_max_size: Option<u64>,

    /// Most entries (files and folders) one folder archive may hold
    /// (`GET /dir/?archive=tar|zip`); a bigger folder is answered 413. The
    /// plan of an archive holds about 100 bytes per entry in memory.
    #[arg(long, default_value_t = wirespeed_service::ARCHIVE_MAX_ENTRIES, value_name = "N")]
    pub archive_max_entries: usize,

    /// Days a deleted or overwritten file (or deleted folder) is kept in the
    /// trash (`.wirespeed-trash` in the folder, renamed there: no copy),
    /// restorable with `wirespeed trash restore`; it counts in folder
    /// quotas. 0: no trash, deletes are final.
    #[arg(long, default_value_t = 30, value_name = "N")]
    pub trash_days: u32,

    /// Most unfinished resumable uploads kept at once; a creation beyond gets
    /// 503 with Retry-After until some finish, are cancelled or expire.
    #[arg(long, default_value_t = 1000, value_name = "N")]
    pub max_partial_uploads: usize,

    /// Most unfinished resumable uploads one client address may hold
    /// (clients with a token are not limited); a creation beyond gets 503.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub max_partial_uploads_per_client: usize,

    /// Seconds an unfinished resumable upload that never received a byte is
    /// kept (empty creations cannot hold --max-partial-uploads for long).
    #[arg(long, default_value_t = 600, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub upload_empty_expiry: u64,

    /// Seconds an unfinished resumable upload is kept after its creation;
    /// then it is removed (checked at start and every expiry/4, at most every
    /// 10 minutes).
    #[arg(long, default_value_t = 24 * 3600, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub upload_expiry: u64,

    /// Do not fsync uploads before renaming them into place: faster, but after a
    /// power loss an upload that was acknowledged may be empty or short.
    #[arg(long)]
    pub no_fsync: bool,

    /// How upload bodies reach the disk: `splice` (zero-copy socket→pipe→file on
    /// plain TCP with a Content-Length; the measured faster one) or `copy` (read
    /// into the connection buffer, then write). Chunked and TLS bodies always copy.
    #[arg(long, value_enum, default_value_t = UploadArg::Splice, value_name = "PATH")]
    pub upload_path: UploadArg,

    /// Where upload sha-256 digests are computed: `concurrent` (a helper thread
    /// hashes the stored bytes right behind the writer) or `inline` (on the
    /// connection's task).
    #[arg(long, value_enum, default_value_t = HashArg::Concurrent, value_name = "MODE")]
    pub upload_hash: HashArg,

    /// When uploads are hashed (sha-256): `on-request` (when the client sends
    /// `Want-Repr-Digest: sha-256=N` or a Repr-Digest/Content-Digest to check; costs
    /// ~0.7 CPU-s/GiB) or `always`. A computed digest is recorded with the file
    /// (extended attribute) and answered as Repr-Digest by later GETs.
    #[arg(long, value_enum, default_value_t = DigestArg::OnRequest, value_name = "WHEN")]
    pub digest: DigestArg,

    /// How file downloads leave on plain TCP: `auto` (a 1 MiB read/write loop
    /// for loopback clients, sendfile(2) for everyone else), `sendfile`, or
    /// `copy`.
    // Why auto copies on loopback, and how that depends on the host:
    // bench/RESULTS.md, "File sends on loopback".
    #[arg(long, value_enum, default_value_t = FileSendArg::Auto, value_name = "MODE")]
    pub file_send: FileSendArg,

    /// Read buffer per connection while a request body streams in (copy path);
    /// suffixes K, M (powers of 1024). Bigger means fewer read/write calls.
    #[arg(long, value_name = "BYTES", value_parser = parse_size, default_value = "256K")]
    pub body_buffer: u64,

    /// Worker threads of the async runtime (default: one per CPU).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,

    /// Close a kept-alive connection after this many idle seconds.
    #[arg(long, default_value_t = 60, value_name = "SECS")]
    pub idle_timeout: u64,

    /// Close a connection whose request head is not complete this many seconds
    /// after its first byte (and a new connection that sends nothing for as long).
    #[arg(long, default_value_t = 10, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    pub head_timeout: u64,

    /// Open connections at most; the next is answered 503 with Retry-After: 1
    /// and closed. Default: half the open-file limit, which is raised to its
    /// hard limit at start.
    #[arg(long, value_name = "N", value_parser = parse_connection_cap)]
    pub max_connections: Option<usize>,

    /// Open connections at most from one IP address (503 beyond). Default: no cap.
    #[arg(long, value_name = "N", value_parser = parse_connection_cap)]
    pub max_connections_per_ip: Option<usize>,

    /// TCP congestion control for the connections we send on. Default: auto —
    /// bbr when the kernel offers it and allows it to this user (else the
    /// system default), and a transfer on bbr moves to cubic once its link
    /// shows 2 s without random loss (bbr gives up ~2% of a clean link to its
    /// round-trip probe; cubic then fills it), back to bbr if loss then costs
    /// it the rate. Or: a name the kernel offers (bbr, cubic, reno, …), kept
    /// for the connection's life; `system` for the system default; names to
    /// try in order ending in `system` as the fallback. A list without
    /// `system` must be had or `serve` does not start. The start line says
    /// which is in use and what was passed over.
    #[arg(long, value_name = "auto|NAME[,NAME…][,system]", value_parser = wirespeed_io::congestion::Request::parse)]
    pub congestion_control: Option<wirespeed_io::congestion::Request>,

    /// Give up on a request body (or a slow reader of a response) after this many
    /// seconds without progress.
    #[arg(long, default_value_t = 30, value_name = "SECS")]
    pub io_timeout: u64,

    /// On SIGINT/SIGTERM, how long requests in flight may take to finish.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    pub shutdown_grace: u64,

    /// Serve HTTPS with this certificate chain (PEM). Needs --tls-key.
    #[arg(
        long,
        value_name = "FILE",
        requires = "tls_key",
        conflicts_with = "tls_self_signed"
    )]
    pub tls_cert: Option<PathBuf>,

    /// Private key (PEM) for --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// Serve HTTPS with a certificate generated at start for localhost, 127.0.0.1,
    /// ::1, the bound addresses (every interface's on 0.0.0.0/::), the machine's
    /// host names and --tls-name names. Its path and SHA-256 fingerprint are
    /// printed after the listening line; give the file to clients with --cacert.
    /// Without --tls-cert-dir it lives in a new private folder in the system temp
    /// dir, removed when the server stops.
    #[arg(long)]
    pub tls_self_signed: bool,

    /// Another name (or address) for the --tls-self-signed certificate, e.g. the
    /// name clients use behind port forwarding (repeatable); also answered as a
    /// Host (see --allow-host).
    #[arg(long = "tls-name", value_name = "NAME", requires = "tls_self_signed")]
    pub tls_names: Vec<String>,

    /// Where --tls-self-signed keeps its certificate and key (mode 0600): they
    /// are reused while valid, so clients pin the certificate once; a new pair
    /// is made when they are missing, expire within a week, or name other
    /// hosts (stderr says which). Default: a new certificate per start in a
    /// folder in the system temp dir, key in memory only. Never the served folder.
    #[arg(long, value_name = "DIR", requires = "tls_self_signed")]
    pub tls_cert_dir: Option<PathBuf>,

    /// Prometheus metrics at GET /-/metrics (OpenMetrics text). On a server
    /// with --token the page needs a token; otherwise it is public.
    #[arg(long, value_enum, default_value_t = Switch::On, value_name = "on|off")]
    pub metrics: Switch,

    /// One line per request on stderr (target `wirespeed::access`, INFO):
    /// method, path without query, status, body bytes in and out, duration,
    /// peer, user agent; never the Authorization header. Lines are written
    /// in batches (64 KiB, or every 100 ms): all of them at a clean stop, up
    /// to the last 100 ms lost if the process is killed.
    #[arg(long, value_enum, default_value_t = Switch::On, value_name = "on|off")]
    pub access_log: Switch,

    /// Log line format on stderr: `text`, or `json` (one object per line).
    #[arg(long, value_enum, default_value_t = LogFormat::Text, value_name = "FORMAT")]
    pub log_format: LogFormat,

    /// S3 storage (`--storage s3://…`); boxed, being rarely used.
    #[command(flatten)]
    pub s3: Box<S3Args>,

    /// Sign-in by an identity proxy, the audit trail and event hooks.
    #[command(flatten)]
    pub identity: Box<super::identity::IdentityArgs>,
}

/// `serve`'s folder options: creating it, hidden names, symlinks, static sites.
#[derive(Args, Debug)]
pub struct ContentArgs {
    /// Create the folder to serve (and its parents) if it does not exist.
    #[arg(long)]
    pub create: bool,

    /// Hide names matching PATTERN (a glob for one name: `*`, `?`), e.g.
    /// `.git`, `.env*`, or '.*' for every dotfile: left out of listings and
    /// answered 404 for any read or write, as if absent. Repeatable.
    /// Default: nothing hidden (what is in the folder is served).
    #[arg(long = "hidden", value_name = "PATTERN")]
    pub hidden: Vec<String>,

    /// Follow symlinks that lead outside the served folder. Off by default:
    /// such a link is refused (403, saying so), so a link cannot expose
    /// files beyond the folder by accident. Links inside it always work.
    #[arg(long)]
    pub allow_symlink: bool,

    /// A folder that has an `index.html` answers with it instead of the
    /// listing (a static site's folders).
    #[arg(long)]
    pub index: bool,

    /// Let served HTML run its scripts. Off by default: every served file
    /// gets `Content-Security-Policy: sandbox`, because a page anyone
    /// uploaded would otherwise run as this origin (and could act on the
    /// server with the visitor's token). Turn it on to preview your own
    /// static site (with --index), on a server whose uploads you trust.
    #[arg(long)]
    pub allow_scripts: bool,
}

/// `serve --storage s3://…` and its S3 settings.
#[derive(Args, Debug)]
pub struct S3Args {
    /// Serve an S3 bucket instead of DIR: `s3://BUCKET[/PREFIX]`. Credentials from
    /// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN); the
    /// bucket is checked at start (a failure says why and exits 1).
    #[arg(long, value_name = "s3://BUCKET[/PREFIX]")]
    pub storage: Option<String>,

    /// S3 endpoint for anything but AWS (MinIO, Ceph RGW, Garage, R2), e.g.
    /// http://127.0.0.1:9000.
    #[arg(long, value_name = "URL", env = "AWS_ENDPOINT_URL")]
    pub s3_endpoint: Option<String>,

    /// S3 region (default: AWS_DEFAULT_REGION, else us-east-1).
    #[arg(long, value_name = "REGION", env = "AWS_REGION")]
    pub s3_region: Option<String>,

    /// Path-style S3 URLs (ENDPOINT/BUCKET/KEY) or, with false, virtual-hosted
    /// (BUCKET.ENDPOINT/KEY). Default: path-style with --s3-endpoint, virtual-hosted on AWS.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, default_missing_value = "true", requires = "storage")]
    pub s3_path_style: Option<bool>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Switch {
    On,
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

impl ServeArgs {
    /// The log filter when RUST_LOG is unset: warnings, and the operator's
    /// notices (access lines do not go through the filter: `--access-log`).
    pub fn default_log_filter(&self) -> &'static str {
        "warn,wirespeed::notice=info"
    }

    pub fn json_logs(&self) -> bool {
        self.log_format == LogFormat::Json
    }
}

/// `--max-connections` and `--max-connections-per-ip`: a positive count.
fn parse_connection_cap(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1 (0 would refuse every connection)".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("{s:?} is not a whole number of connections")),
    }
}

/// A `--listen` address, and the host name it was given as, if any.

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FileSendArg {
    Auto,
    Sendfile,
    Copy,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum HashArg {
    Inline,
    Concurrent,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DigestArg {
    OnRequest,
    Always,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum UploadArg {
    Copy,
    Splice,
}
