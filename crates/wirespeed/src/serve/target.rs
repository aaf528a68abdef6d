//! What `serve` serves: the folder argument (the current folder when none
//! is given; a missing one is an error unless `--create`), or an S3 bucket
//! (`--storage s3://…`, or the same URL given as the folder), and the
//! start-up checks that say in one line what is wrong.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// Where the files live.
#[derive(Debug, PartialEq, Eq)]
pub enum Target {
    Folder(PathBuf),
    /// An `s3://BUCKET[/PREFIX]` URL.
    S3(String),
}

/// The target from the folder argument and `--storage`. An `s3://` folder
/// argument is the bucket (never a local folder named `s3:`); any other
/// `SCHEME://` is refused. With `--storage`, a folder argument is unused.
pub fn choose(dir: Option<&Path>, storage: Option<&str>, create: bool) -> anyhow::Result<Target> {
    let as_url = dir.and_then(Path::to_str).filter(|d| d.contains("://"));
    if let Some(url) = as_url {
        if !url.starts_with("s3://") {
            anyhow::bail!(
                "{url} is not a folder: serve takes a folder, or a bucket as s3://BUCKET[/PREFIX]"
            );
        }
        if let Some(other) = storage.filter(|s| *s != url) {
            anyhow::bail!("two buckets given ({url} and --storage {other}): give one");
        }
        return Ok(Target::S3(url.to_string()));
    }
    if let Some(url) = storage {
        return Ok(Target::S3(url.to_string()));
    }
    let dir = dir.map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    prepare_dir(&dir, create)?;
    Ok(Target::Folder(dir))
}

/// The folder to serve must exist (a mistyped name would otherwise be
/// served empty), unless `create`; a file there is an error that says so.
fn prepare_dir(dir: &Path, create: bool) -> anyhow::Result<()> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => anyhow::bail!("{} is a file, not a folder", dir.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("creating the folder to serve, {}", dir.display()))?;
            crate::notice::say(&format!("created empty folder {}", dir.display()));
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => anyhow::bail!(
            "{} does not exist; create it, or pass --create",
            dir.display()
        ),
        Err(e) => Err(e).with_context(|| format!("opening the folder to serve, {}", dir.display())),
    }
}

/// The environment variables through which the S3 client finds credentials
/// (object_store's `from_env`); with none set it would fall back to the EC2
/// metadata endpoint and fail with a long trace.
const S3_CREDENTIAL_VARS: [&str; 5] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_METADATA_ENDPOINT",
];

/// One line saying how to give S3 credentials, when the environment has
/// none (`get` reads a variable).
pub fn missing_s3_credentials(get: impl Fn(&str) -> Option<String>) -> Option<&'static str> {
    let set = |name: &str| get(name).is_some_and(|v| !v.is_empty());
    if S3_CREDENTIAL_VARS.iter().any(|v| set(v)) {
        if set("AWS_ACCESS_KEY_ID") && !set("AWS_SECRET_ACCESS_KEY") {
            return Some("AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not: set both");
        }
        return None;
    }
    Some(
        "no S3 credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or \
         AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN, AWS_CONTAINER_CREDENTIALS_RELATIVE_URI, \
         or AWS_METADATA_ENDPOINT=http://169.254.169.254 for an EC2 instance role)",
    )
}

/// The error of a busy (or forbidden) listening address, naming the fix.
pub fn bind_error(listen: std::net::SocketAddr, e: std::io::Error) -> anyhow::Error {
    match e.kind() {
        std::io::ErrorKind::AddrInUse => anyhow::anyhow!(
            "cannot listen on {listen}: the address is in use (another server?); pick another \
             with -l/--listen, e.g. -l {} (or -l 0 for any free port)",
            listen.port().wrapping_add(1).max(1)
        ),
        std::io::ErrorKind::PermissionDenied => anyhow::anyhow!(
            "cannot listen on {listen}: permission denied (ports below 1024 need privileges); \
             pick another with -l/--listen, e.g. -l 8080"
        ),
        _ => anyhow::Error::new(e).context(format!("listening on {listen}")),
    }
}

/// The bucket's settings from its URL and the `--s3-*` flags, refused at
/// once when no credentials are configured.
pub fn s3_config(
    url: &str,
    flags: &super::flags::S3Args,
) -> anyhow::Result<wirespeed_service::S3Config> {
    if let Some(line) = missing_s3_credentials(|v| std::env::var(v).ok()) {
        anyhow::bail!("{line}");
    }
    let mut c = wirespeed_service::S3Config::from_url(url).map_err(anyhow::Error::msg)?;
    c.endpoint = flags.s3_endpoint.clone().filter(|e| !e.is_empty());
    c.region = flags.s3_region.clone().filter(|r| !r.is_empty());
    c.path_style = flags.s3_path_style;
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets() {
        let tmp = tempfile::tempdir().unwrap();
        let here = tmp.path();
        assert_eq!(
            choose(Some(Path::new("s3://b/p")), None, false).unwrap(),
            Target::S3("s3://b/p".into())
        );
        assert_eq!(
            choose(Some(here), Some("s3://b"), false).unwrap(),
            Target::S3("s3://b".into())
        );
        let e = choose(Some(Path::new("s3://a")), Some("s3://b"), false).unwrap_err();
        assert!(e.to_string().contains("give one"), "{e}");
        let e = choose(Some(Path::new("http://x/")), None, false).unwrap_err();
        assert!(e.to_string().contains("not a folder"), "{e}");
        assert_eq!(
            choose(None, None, false).unwrap(),
            Target::Folder(".".into())
        );
        let typo = here.join("Downlaods");
        let e = choose(Some(&typo), None, false).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "{} does not exist; create it, or pass --create",
                typo.display()
            )
        );
        assert!(!typo.exists());
        assert_eq!(
            choose(Some(&typo), None, true).unwrap(),
            Target::Folder(typo.clone())
        );
        assert!(typo.is_dir());
    }

    #[test]
    fn s3_credentials() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let none = missing_s3_credentials(env(&[])).unwrap();
        assert!(
            none.contains("set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"),
            "{none}"
        );
        assert!(!none.contains('\n'));
        assert_eq!(
            missing_s3_credentials(env(&[
                ("AWS_ACCESS_KEY_ID", "a"),
                ("AWS_SECRET_ACCESS_KEY", "b")
            ])),
            None
        );
        assert!(missing_s3_credentials(env(&[("AWS_ACCESS_KEY_ID", "a")]))
            .unwrap()
            .contains("AWS_SECRET_ACCESS_KEY is not"));
        assert_eq!(
            missing_s3_credentials(env(&[("AWS_WEB_IDENTITY_TOKEN_FILE", "/t")])),
            None
        );
        assert!(missing_s3_credentials(env(&[("AWS_ACCESS_KEY_ID", "")])).is_some());
    }
}
