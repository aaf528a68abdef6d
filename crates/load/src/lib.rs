//! `wirespeed bench load`: a load generator that moves big bodies and checks
//! every byte. N keep-alive connections send a mix of PUTs (bodies generated
//! while sent), GETs and range GETs (bodies verified while received) against
//! objects whose contents are a pure function of (seed, name), so nothing is
//! ever held whole in memory and a GET racing a PUT of the same name still
//! verifies.
//!
//! The pure parts are sans-IO and unit-tested: [`gen`] (the seeded body
//! generator and verifier), [`workload`] (mix, sizes, names, ranges),
//! [`stats`] (HdrHistogram latencies, error counts, the summary). The
//! connection loop is [`engine`].

pub mod engine;
pub mod gen;
pub mod stats;
pub mod target;
pub mod workload;

use std::time::Duration;

pub use engine::run;
pub use stats::{Errors, Failure, Summary};
pub use target::Target;
pub use workload::{Kind, Mix, SizeRange, SpecError};

/// When the timed phase ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// Run this long; requests under way then are stopped (their bytes count).
    Duration(Duration),
    /// Exactly this many requests, over all connections.
    Requests(u64),
}

/// One load run.
#[derive(Debug, Clone)]
pub struct Config {
    pub target: Target,
    pub connections: usize,
    pub bound: Bound,
    pub mix: Mix,
    pub sizes: SizeRange,
    pub seed: u64,
    /// Distinct object names the load cycles through.
    pub objects: u64,
    /// Sent as `Authorization: Bearer …`.
    pub token: Option<String>,
    /// PUT every object before the timed phase (reads need them there).
    pub setup: bool,
    /// Longest wait for any single connect, read or write.
    pub io_timeout: Duration,
    /// Per-connection read and write buffer.
    pub buffer: usize,
}

impl Config {
    /// Defaults for everything but where to send the load.
    pub fn new(target: Target) -> Config {
        Config {
            target,
            connections: 16,
            bound: Bound::Duration(Duration::from_secs(10)),
            mix: Mix::default(),
            sizes: SizeRange {
                min: 1 << 20,
                max: 1 << 20,
            },
            seed: 1,
            objects: 64,
            token: None,
            setup: true,
            io_timeout: Duration::from_secs(30),
            buffer: 128 * 1024,
        }
    }
}

/// Why a run could not be done at all (failed requests are counted, not errors).
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{0}")]
    Url(String),
    #[error("cannot resolve {host}: {source}")]
    Resolve {
        host: String,
        #[source]
        source: std::io::Error,
    },
    #[error("setup: PUT {name}: {failure}")]
    Setup { name: String, failure: Failure },
    #[error("--connections and --objects must be at least 1")]
    Zero,
}
