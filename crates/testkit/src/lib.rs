//! Helpers shared by the workspace's integration tests (dev-only).
//!
//! - [`http`]: request bytes, an independent response parser (status,
//!   headers, body by Content-Length, chunked or close) and blocking and
//!   tokio raw clients;
//! - [`server`]: a server bound to 127.0.0.1 with an ephemeral port, run
//!   on the caller's runtime or on its own thread, stopped on drop; and a
//!   scripted raw-socket server;
//! - [`fs`]: temp dirs, directory listings, polling for a condition;
//! - [`corpus`]: the vendored corpora in `tests/corpora`, base64 fields;
//! - [`data`]: deterministic pseudo-random bytes and split points;
//! - [`tools`]: external peers (curl);
//! - [`minio`]: a real MinIO for the S3 backend (boto3 to inspect it).
//! - [`nginx`]: nginx as a reverse proxy or cache in front of a server.
//! - [`proxy`]: a TCP proxy that cuts (or stalls) connections after N bytes.
//!
//! Helpers panic with a message on failure: they are test code.

pub mod corpus;
pub mod data;
pub mod fs;
pub mod http;
pub mod minio;
pub mod nginx;
pub mod proxy;
pub mod server;
pub mod tools;
pub mod varnish;

pub use data::{bytes, Rng};
pub use http::{find, Resp};
pub use tempfile;
