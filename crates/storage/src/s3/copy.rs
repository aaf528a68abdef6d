//! Server-side copies the object_store client does not make:
//! `UploadPartCopy` (a part of a multipart upload copied from a range of
//! another object, inside the bucket) and `CopyObject` with new metadata.
//! object_store 0.14 has neither, but exposes its SigV4 signer
//! (`AwsAuthorizer`) and its credentials: each request here is built,
//! signed with them, and sent on a reqwest client of its own. Multipart
//! uploads themselves are created and completed through object_store's
//! `MultipartStore`.

use std::time::Duration;

use object_store::aws::AwsAuthorizer;
use object_store::client::{HttpRequest, HttpRequestBody};
use object_store::multipart::{MultipartStore, PartId};
use object_store::path::Path as ObjPath;
use object_store::{Attribute, Attributes, ObjectStore as _, ObjectStoreExt, PutMultipartOptions};
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::config::S3Config;
use super::S3Storage;
use crate::StorageError;

/// Largest object (and part) one copy request copies.
pub(super) const MAX_COPY: u64 = 5 << 30;
/// S3's smallest part but the last.
pub(super) const MIN_PART: u64 = 5 << 20;
/// The range each part of a big copy takes.
const COPY_PART: u64 = 1 << 30;

/// What a key keeps unescaped in a URL: RFC 3986's unreserved and `/`.
const KEY: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// How to address the bucket outside object_store.
#[derive(Debug)]
pub(crate) struct Raw {
    http: reqwest::Client,
    /// `scheme://host[:port][/bucket]`: a key's URL is this, `/`, the key.
    base: String,
    pub(super) bucket: String,
    region: String,
}

impl Raw {
    pub(super) fn new(cfg: &S3Config) -> Result<Raw, StorageError> {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let region = cfg
            .region
            .clone()
            .or_else(|| env("AWS_REGION"))
            .or_else(|| env("AWS_DEFAULT_REGION"))
            .unwrap_or_else(|| "us-east-1".into());
        let endpoint = cfg
            .endpoint
            .clone()
            .or_else(|| env("AWS_ENDPOINT_URL"))
            .or_else(|| env("AWS_ENDPOINT"));
        let path_style = cfg.path_style.unwrap_or(endpoint.is_some());
        let endpoint = endpoint
            .unwrap_or_else(|| format!("https://s3.{region}.amazonaws.com"))
            .trim_end_matches('/')
            .to_string();
        let base = if path_style {
            format!("{endpoint}/{}", cfg.bucket)
        } else {
            match endpoint.split_once("://") {
                Some((scheme, host)) => format!("{scheme}://{}.{host}", cfg.bucket),
                None => format!("https://{}.{endpoint}", cfg.bucket),
            }
        };
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            // A copy of a big part takes the server a while.
            .timeout(Duration::from_secs(600))
            .build()
            .map_err(|e| StorageError::Backend(format!("S3 client: {e}")))?;
        Ok(Raw {
            http,
            base,
            bucket: cfg.bucket.clone(),
            region,
        })
    }
}

/// The value of `<Tag>` in an S3 XML answer.
fn xml_value<'a>(body: &'a str, tag: &str) -> Option<&'a str> {
    let open = format!("<{tag}>");
    let close = format!("</{tag}>");
    let (_, rest) = body.split_once(open.as_str())?;
    Some(rest.split_once(close.as_str())?.0)
}

impl S3Storage {
    /// One signed request to `path` (`query`: already encoded), its body.
    async fn raw_request(
        &self,
        method: http::Method,
        path: &ObjPath,
        query: &str,
        headers: &[(&str, String)],
    ) -> Result<String, StorageError> {
        let raw = &self.raw;
        let mut url = format!("{}/{}", raw.base, utf8_percent_encode(path.as_ref(), KEY));
        if !query.is_empty() {
            url.push('?');
            url.push_str(query);
        }
        let mut req = HttpRequest::new(HttpRequestBody::empty());
        *req.method_mut() = method.clone();
        *req.uri_mut() = url
            .parse()
            .map_err(|_| StorageError::Backend(format!("{}: a bad S3 URL", self.place)))?;
        for (name, value) in headers {
            let value = http::HeaderValue::from_str(value).map_err(|_| StorageError::Forbidden)?;
            let name = http::HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| StorageError::Forbidden)?;
            req.headers_mut().insert(name, value);
        }
        let cred = self
            .store
            .credentials()
            .get_credential()
            .await
            .map_err(|e| self.error(e))?;
        AwsAuthorizer::new(&cred, "s3", &raw.region)
            .try_authorize(&mut req, None)
            .map_err(|e| self.error(e))?;
        let sent = raw
            .http
            .request(method, url)
            .headers(req.headers().clone())
            .send()
            .await
            .map_err(|e| {
                tracing::warn!(error = %e, "S3 copy request failed");
                StorageError::Unavailable(format!(
                    "{}: the S3 endpoint cannot be reached",
                    self.place
                ))
            })?;
        let status = sent.status();
        let body = sent.text().await.unwrap_or_default();
        // A copy may answer 200 and fail in its body.
        if !status.is_success() || body.contains("<Error>") {
            let code = xml_value(&body, "Code").unwrap_or("no code");
            return Err(match code {
                "NoSuchKey" | "NoSuchUpload" => StorageError::NotFound,
                "PreconditionFailed" => StorageError::PreconditionFailed,
                _ => {
                    tracing::error!(%status, body, "S3 copy request refused");
                    StorageError::Backend(format!(
                        "{}: the S3 copy request failed ({code})",
                        self.place
                    ))
                }
            });
        }
        Ok(body)
    }

    /// `x-amz-copy-source` for `src`.
    fn copy_source(&self, src: &ObjPath) -> String {
        format!(
            "/{}/{}",
            self.raw.bucket,
            utf8_percent_encode(src.as_ref(), KEY)
        )
    }

    /// The user metadata of `path` (`x-amz-meta-*`: name, value).
    pub(super) async fn metadata_of(
        &self,
        path: &ObjPath,
    ) -> Result<Vec<(String, String)>, StorageError> {
        let got = self
            .store
            .get_opts(
                path,
                object_store::GetOptions {
                    head: true,
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| self.error(e))?;
        Ok(got
            .attributes
            .iter()
            .filter_map(|(k, v)| match k {
                Attribute::Metadata(name) => Some((name.to_string(), v.as_ref().to_string())),
                _ => None,
            })
            .collect())
    }

    /// Gives `path` the user metadata `meta` by a `CopyObject` onto itself
    /// (`REPLACE`): S3 keeps the bytes, nothing passes through here.
    pub(super) async fn replace_metadata(
        &self,
        path: &ObjPath,
        meta: &[(String, String)],
    ) -> Result<(), StorageError> {
        let mut headers = vec![
            ("x-amz-copy-source".to_string(), self.copy_source(path)),
            (
                "x-amz-metadata-directive".to_string(),
                "REPLACE".to_string(),
            ),
        ];
        for (k, v) in meta {
            headers.push((format!("x-amz-meta-{k}"), v.clone()));
        }
        let headers: Vec<(&str, String)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        self.raw_request(http::Method::PUT, path, "", &headers)
            .await
            .map(drop)
    }

    /// Part `n` of multipart upload `id` on `dst`, copied from
    /// `src[start..end)` inside the bucket: its ETag.
    pub(super) async fn copy_part(
        &self,
        dst: &ObjPath,
        id: &str,
        n: usize,
        src: &ObjPath,
        range: std::ops::Range<u64>,
    ) -> Result<PartId, StorageError> {
        let query = format!(
            "partNumber={}&uploadId={}",
            n + 1,
            utf8_percent_encode(id, NON_ALPHANUMERIC)
        );
        let headers = [
            ("x-amz-copy-source", self.copy_source(src)),
            (
                "x-amz-copy-source-range",
                format!("bytes={}-{}", range.start, range.end - 1),
            ),
        ];
        let body = self
            .raw_request(http::Method::PUT, dst, &query, &headers)
            .await?;
        let etag = xml_value(&body, "ETag").ok_or_else(|| {
            StorageError::Backend(format!(
                "{}: S3 answered a part copy without an ETag",
                self.place
            ))
        })?;
        Ok(PartId {
            content_id: etag.replace("&quot;", "\"").replace("&#34;", "\""),
        })
    }

    /// Copies `src` (of `size` bytes) to `dst` inside the bucket, its
    /// metadata with it: one `CopyObject`, or past 5 GiB a multipart
    /// upload of copied parts.
    pub(super) async fn copy_object(
        &self,
        src: &ObjPath,
        dst: &ObjPath,
        size: u64,
    ) -> Result<(), StorageError> {
        if size <= MAX_COPY {
            return self.store.copy(src, dst).await.map_err(|e| self.error(e));
        }
        let got = self
            .store
            .get_opts(
                src,
                object_store::GetOptions {
                    head: true,
                    ..Default::default()
                },
            )
            .await
            .map_err(|e| self.error(e))?;
        let mut attributes = Attributes::new();
        for (k, v) in got.attributes.iter() {
            if let Attribute::Metadata(_) = k {
                attributes.insert(k.clone(), v.clone());
            }
        }
        let opts = PutMultipartOptions {
            attributes,
            ..PutMultipartOptions::default()
        };
        let id = self
            .store
            .create_multipart_opts(dst, opts)
            .await
            .map_err(|e| self.error(e))?;
        let mut parts = Vec::new();
        let mut start = 0;
        let copied = async {
            while start < size {
                let end = (start + COPY_PART).min(size);
                parts.push(
                    self.copy_part(dst, &id, parts.len(), src, start..end)
                        .await?,
                );
                start = end;
            }
            self.store
                .complete_multipart(dst, &id, parts)
                .await
                .map_err(|e| self.error(e))
        }
        .await;
        if copied.is_err() {
            let _ = self.store.abort_multipart(dst, &id).await;
        }
        copied.map(drop)
    }
}
