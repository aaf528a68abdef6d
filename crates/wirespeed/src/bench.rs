//! `wirespeed bench`: end-to-end measurements. `load` is the byte-verifying
//! load generator (`bench_load.rs`); `json-stream` (also what a bare
//! `wirespeed bench` runs) compares two servers side by side in one run.
//!
//! `json-stream` is seed 000: a handler serializes a JSON array one token at a
//! time into the response. With the engine's buffered writer (the default) the
//! tokens leave in 64 KiB chunks; with `FlushPolicy::PerWrite` (what the seed's
//! unbuffered stream did) every token is its own socket write and chunk. Both
//! servers run in this process on loopback, interleaved, and the client counts
//! the chunks that really crossed the wire.

use std::io::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use clap::{Args, Subcommand};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use wirespeed_net::{Error, Exchange, FlushPolicy, Handler, Response, Server, ServerConfig};

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: Option<BenchCommand>,
    /// Options of `json-stream`, which runs when no subcommand is given.
    #[command(flatten)]
    pub json_stream: JsonStreamArgs,
}

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Seed 000: a JSON array written token by token, buffered vs flushed per write.
    JsonStream(JsonStreamArgs),
    /// Load a server with N connections of big PUTs, GETs and ranges,
    /// verifying every byte; exits non-zero on any error or corrupt byte.
    Load(crate::bench_load::LoadArgs),
}

#[derive(Args, Debug)]
pub struct JsonStreamArgs {
    /// Number of JSON objects in the streamed array.
    #[arg(long, default_value_t = 200_000)]
    pub items: usize,
    /// Rounds per variant (interleaved); the best and median are reported.
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
}

/// Writes `[{"id":0,"name":"item-0","ok":true},…]` one token per `write`.
struct JsonTokens {
    items: usize,
}

impl Handler for JsonTokens {
    async fn handle(&self, ex: &mut Exchange) -> Result<(), Error> {
        let mut w = ex.writer(Response::new(200).header("Content-Type", "application/json"))?;
        let mut num = Vec::with_capacity(24);
        w.write(b"[").await?;
        for i in 0..self.items {
            if i > 0 {
                w.write(b",").await?;
            }
            w.write(b"{").await?;
            w.write(b"\"id\"").await?;
            w.write(b":").await?;
            num.clear();
            let _ = write!(num, "{i}");
            w.write(&num).await?;
            w.write(b",").await?;
            w.write(b"\"name\"").await?;
            w.write(b":").await?;
            num.clear();
            let _ = write!(num, "\"item-{i}\"");
            w.write(&num).await?;
            w.write(b",").await?;
            w.write(b"\"ok\"").await?;
            w.write(b":").await?;
            w.write(b"true").await?;
            w.write(b"}").await?;
        }
        w.write(b"]").await?;
        w.finish().await
    }
}

struct Measured {
    elapsed: Duration,
    body_bytes: u64,
    chunks: u64,
}

/// GET / and read the chunked response, counting chunks as they arrive.
async fn fetch(addr: std::net::SocketAddr) -> anyhow::Result<Measured> {
    let started = Instant::now();
    let mut s = TcpStream::connect(addr).await?;
    s.write_all(b"GET / HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        .await?;
    let mut raw = Vec::with_capacity(8 << 20);
    s.read_to_end(&mut raw).await?;
    let elapsed = started.elapsed();
    let (body_bytes, chunks) = count_chunks(&raw)?;
    Ok(Measured {
        elapsed,
        body_bytes,
        chunks,
    })
}

/// Walk the chunked framing of a complete response: (body bytes, chunks).
fn count_chunks(raw: &[u8]) -> anyhow::Result<(u64, u64)> {
    let head_end = memfind(raw, b"\r\n\r\n").context("no response head")? + 4;
    let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
    if !head.contains("transfer-encoding: chunked") {
        return Ok(((raw.len() - head_end) as u64, 1));
    }
    let (mut pos, mut bytes, mut chunks) = (head_end, 0u64, 0u64);
    loop {
        let line_end = pos + memfind(&raw[pos..], b"\r\n").context("truncated chunk size")?;
        let size = usize::from_str_radix(std::str::from_utf8(&raw[pos..line_end])?, 16)?;
        if size == 0 {
            return Ok((bytes, chunks));
        }
        pos = line_end + 2 + size + 2;
        if pos > raw.len() {
            bail!("truncated chunk");
        }
        bytes += size as u64;
        chunks += 1;
    }
}

fn memfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

async fn start(policy: FlushPolicy, items: usize) -> anyhow::Result<std::net::SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let cfg = ServerConfig {
        flush_policy: policy,
        ..ServerConfig::default()
    };
    tokio::spawn(async move {
        let _ = Server::new(cfg)
            .serve(
                listener,
                Arc::new(JsonTokens { items }),
                std::future::pending(),
            )
            .await;
    });
    Ok(addr)
}

pub fn run(args: BenchArgs) -> anyhow::Result<std::process::ExitCode> {
    let js = match args.command {
        Some(BenchCommand::Load(load)) => return crate::bench_load::run(load),
        Some(BenchCommand::JsonStream(js)) => js,
        None => args.json_stream,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(json_stream(&js))?;
    Ok(std::process::ExitCode::SUCCESS)
}

async fn json_stream(args: &JsonStreamArgs) -> anyhow::Result<()> {
    let variants = [
        ("buffered (default, 64 KiB)", FlushPolicy::Buffered),
        ("flush per write (seed 000)", FlushPolicy::PerWrite),
    ];
    let mut addrs = Vec::new();
    for (_, policy) in variants {
        addrs.push(start(policy, args.items).await?);
    }
    let mut results: Vec<Vec<Measured>> = variants.iter().map(|_| Vec::new()).collect();
    for _ in 0..args.rounds.max(1) {
        for (i, addr) in addrs.iter().enumerate() {
            results[i].push(fetch(*addr).await?);
        }
    }
    outln!(
        "json-stream: {} objects, one `write` per JSON token, {} rounds interleaved\n",
        args.items,
        args.rounds
    );
    outln!("| writer | median | best | MB/s (median) | chunks on the wire | bytes |");
    outln!("|---|---|---|---|---|---|");
    let mut medians = Vec::new();
    for ((name, _), runs) in variants.iter().zip(results.iter_mut()) {
        runs.sort_by_key(|m| m.elapsed);
        let med = &runs[runs.len() / 2];
        let best = &runs[0];
        medians.push(med.elapsed);
        outln!(
            "| {name} | {:.1} ms | {:.1} ms | {:.0} | {} | {} |",
            ms(med.elapsed),
            ms(best.elapsed),
            med.body_bytes as f64 / 1e6 / med.elapsed.as_secs_f64(),
            med.chunks,
            med.body_bytes
        );
    }
    outln!(
        "\nbuffered is {:.1}x faster than flushing per write (median vs median)",
        medians[1].as_secs_f64() / medians[0].as_secs_f64()
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::count_chunks;

    #[test]
    fn counts_chunks() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(count_chunks(raw).unwrap(), (5, 2));
        let raw = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
        assert_eq!(count_chunks(raw).unwrap(), (3, 1));
        assert!(
            count_chunks(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab").is_err()
        );
    }
}
