//! `wirespeed bench load URL`: the command-line face of `wirespeed-load`
//! (parsing, printing, the exit status); the engine is in that crate.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use wirespeed_load::{Bound, Config, Mix, SizeRange, Target};

use wirespeed_units::parse_size;

#[derive(Args, Debug)]
pub struct LoadArgs {
    /// Folder URL the objects go under: http://HOST:PORT/prefix/ (needs PUT
    /// allowed there, e.g. `wirespeed serve DIR --allow-upload`).
    pub url: String,
    /// Keep-alive connections, each running requests back to back.
    #[arg(long, short = 'c', default_value_t = 16)]
    pub connections: usize,
    /// How long to run (e.g. 60s, 2m, 500ms; a plain number is seconds).
    /// Requests under way at the end are stopped: their bytes count, they
    /// do not. Default 10s unless --requests.
    #[arg(long, short = 'd', value_parser = parse_duration, conflicts_with = "requests")]
    pub duration: Option<Duration>,
    /// Run exactly N requests (over all connections) instead of a duration.
    #[arg(long, short = 'n')]
    pub requests: Option<u64>,
    /// Request mix as KIND=WEIGHT: get (whole object), put, range (a 206
    /// of up to 4 MiB at a random offset).
    #[arg(long, default_value = "get=50,put=50", value_parser = parse_mix)]
    pub mix: Mix,
    /// Object size, fixed (1MiB) or uniform in MIN-MAX (64KiB-1MiB); each
    /// object name keeps one size and one content for the whole run.
    #[arg(long, default_value = "1MiB", value_parser = parse_size_range)]
    pub size: SizeRange,
    /// Seed of object contents, sizes and request choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Distinct object names the load cycles through (load-SEED-ID.bin).
    #[arg(long, default_value_t = 64)]
    pub objects: u64,
    /// Skip the untimed setup PUT of every object (they are there already,
    /// from an earlier run with the same --seed, --objects and --size).
    #[arg(long)]
    pub no_setup: bool,
    /// Longest wait for a connect, or for any read or write to progress.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Bearer token sent as `Authorization: Bearer TOKEN`.
    #[arg(
        long,
        env = "WIRESPEED_TOKEN",
        hide_env_values = true,
        value_name = "TOKEN"
    )]
    pub token: Option<String>,
}

fn parse_mix(s: &str) -> Result<Mix, String> {
    s.parse()
        .map_err(|e: wirespeed_load::SpecError| e.to_string())
}

/// `1MiB` (fixed) or `64KiB-1MiB` (uniform).
pub fn parse_size_range(s: &str) -> Result<SizeRange, String> {
    let size = |t: &str| parse_size(t).map_err(|e| e.to_string());
    let (min, max) = match s.split_once('-') {
        Some((a, b)) => (size(a)?, size(b)?),
        None => {
            let n = size(s)?;
            (n, n)
        }
    };
    SizeRange::new(min, max).map_err(|e| e.to_string())
}

/// `60s`, `2m`, `500ms`, `1h`, or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("not a duration: {s:?} (e.g. 60s, 2m, 500ms)"))?;
    let ms = match unit.trim() {
        "" | "s" => 1000,
        "ms" => 1,
        "m" => 60_000,
        "h" => 3_600_000,
        other => {
            return Err(format!(
                "unknown duration unit {other:?} (use ms, s, m or h)"
            ))
        }
    };
    n.checked_mul(ms)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("duration too long: {s}"))
}

pub fn run(args: LoadArgs) -> anyhow::Result<ExitCode> {
    let target = Target::parse(&args.url)?;
    let mut cfg = Config::new(target);
    cfg.connections = args.connections;
    cfg.bound = match (args.requests, args.duration) {
        (Some(n), _) => Bound::Requests(n),
        (None, d) => Bound::Duration(d.unwrap_or(Duration::from_secs(10))),
    };
    cfg.mix = args.mix;
    cfg.sizes = args.size;
    cfg.seed = args.seed;
    cfg.objects = args.objects;
    cfg.token = args.token.filter(|t| !t.is_empty());
    cfg.setup = !args.no_setup;
    cfg.io_timeout = args.timeout;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let summary = rt
        .block_on(wirespeed_load::run(cfg))
        .context("bench load")?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        out!("{}", summary.text());
    }
    if summary.clean() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "error: {} failed requests, {} corrupt bytes",
            summary.error_total, summary.errors.corrupt_bytes
        );
        Ok(ExitCode::FAILURE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_ranges() {
        assert_eq!(
            parse_size_range("64KiB-1MiB"),
            Ok(SizeRange {
                min: 64 << 10,
                max: 1 << 20
            })
        );
        assert_eq!(
            parse_size_range("1M").map(|r| (r.min, r.max)),
            Ok((1 << 20, 1 << 20))
        );
        let err = |s: &str| parse_size_range(s).unwrap_err();
        assert!(
            err("2M-1M").contains("larger than the largest"),
            "{}",
            err("2M-1M")
        );
        assert!(err("0").contains("at least 1 byte"));
        assert!(err("1X-2M").contains("unknown size unit"));
        assert!(err("-1M").contains("not a size"));
        assert!(err("1M-").contains("not a size"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("20"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(parse_duration("1.5s")
            .unwrap_err()
            .contains("unknown duration unit"));
        assert!(parse_duration("s").unwrap_err().contains("not a duration"));
    }
}
