//! The transfer service over TLS with a fresh self-signed certificate: a
//! stand-in for `wirespeed serve --tls-self-signed` used by bench/client.sh.
//!
//! ```text
//! cargo run --release -p wirespeed-tls --example serve_tls -- DIR [ADDR]
//! ```
//! Prints `listening on https://ADDR`, then `cert PATH` and `sha256 FP`.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let dir = PathBuf::from(args.next().ok_or("usage: serve_tls DIR [ADDR]")?);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:0".to_string());
    std::fs::create_dir_all(&dir)?;
    let certdir = dir.with_extension("tls");
    let (acceptor, cert, fp) = wirespeed_tls::server_self_signed(&certdir)?;
    let storage = wirespeed_service::LocalStorage::new(&dir)?.with_fsync(false);
    let router = wirespeed_service::router(storage, wirespeed_service::ServiceConfig::default());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&addr).await?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on https://{}", listener.local_addr()?)?;
        writeln!(out, "cert {}", cert.display())?;
        writeln!(out, "sha256 {fp}")?;
        out.flush()?;
        drop(out);
        wirespeed_net::Server::new(wirespeed_net::ServerConfig::default())
            .serve_with(listener, Arc::new(acceptor), Arc::new(router), async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(())
    })
}
