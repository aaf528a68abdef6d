//! Where the bucket is: `s3://BUCKET[/PREFIX]` and the endpoint, region
//! and credentials beside it.

use object_store::path::Path as ObjPath;

/// Where the bucket is and how to reach it. Credentials come from the
/// environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_SESSION_TOKEN`), as every S3 tool reads them.
#[derive(Debug, Clone, Default)]
pub struct S3Config {
    pub bucket: String,
    /// Key prefix below which files live (no leading or trailing `/`).
    pub prefix: String,
    /// `http(s)://host:port` for anything but AWS.
    pub endpoint: Option<String>,
    pub region: Option<String>,
    /// Path-style URLs (`endpoint/bucket/key`); `None`: path-style with an
    /// endpoint, virtual-hosted on AWS.
    pub path_style: Option<bool>,
    /// Explicit credentials (tests); `None`: from the environment.
    pub credentials: Option<(String, String)>,
}

impl S3Config {
    /// Parse `s3://BUCKET[/PREFIX]`.
    pub fn from_url(url: &str) -> Result<S3Config, String> {
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| format!("{url}: an S3 location is s3://BUCKET[/PREFIX]"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(format!(
                "{url}: the bucket name is missing (s3://BUCKET[/PREFIX])"
            ));
        }
        let prefix = prefix.trim_matches('/');
        if ObjPath::parse(prefix).is_err()
            || prefix
                .split('/')
                .any(|s| s.is_empty() && !prefix.is_empty())
        {
            return Err(format!(
                "{url}: the prefix has an empty, '.' or '..' segment or a control character"
            ));
        }
        Ok(S3Config {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
            ..S3Config::default()
        })
    }
}
