//! Bulk TLS throughput per crypto provider, in memory (no sockets): how fast
//! can one core encrypt + decrypt application data in full 16 KiB records?
//!
//! ```text
//! cargo run --release -p wirespeed-tls --features ring --example tls_bulk [MiB]
//! ```
//! Builds with both providers compiled in and measures each one available.

use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Instant;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::{PrivateKeyDer, ServerName};
use rustls::{
    ClientConfig, ClientConnection, Connection, RootCertStore, ServerConfig, ServerConnection,
};

#[allow(clippy::vec_init_then_push)]
fn providers() -> Vec<(&'static str, CryptoProvider)> {
    #[allow(unused_mut)]
    let mut v = Vec::new();
    #[cfg(feature = "aws-lc")]
    v.push(("aws-lc-rs", rustls::crypto::aws_lc_rs::default_provider()));
    #[cfg(feature = "ring")]
    v.push(("ring", rustls::crypto::ring::default_provider()));
    v
}

fn pump(from: &mut Connection, to: &mut Connection, wire: &mut Vec<u8>) {
    wire.clear();
    while from.wants_write() {
        from.write_tls(wire).unwrap();
    }
    let mut rd = wire.as_slice();
    while !rd.is_empty() {
        to.read_tls(&mut rd).unwrap();
        to.process_new_packets().unwrap();
    }
}

fn main() {
    let mib: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1024);
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let der = ck.cert.der().clone();
    let key = PrivateKeyDer::try_from(ck.key_pair.serialize_der()).unwrap();
    println!("| provider | suite | MiB | seconds | MB/s (encrypt+decrypt, one core) |");
    println!("|---|---|---|---|---|");
    // Interleaved rounds, best of each: the first pass over fresh buffers
    // pays page faults and frequency ramp-up, which would favour whichever
    // provider runs second.
    let mut best: Vec<(&str, String, f64)> = Vec::new();
    for _round in 0..3 {
        for (name, p) in providers() {
            let p = Arc::new(p);
            let scfg = ServerConfig::builder_with_provider(p.clone())
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_no_client_auth()
                .with_single_cert(vec![der.clone()], key.clone_key())
                .unwrap();
            let mut roots = RootCertStore::empty();
            roots.add(der.clone()).unwrap();
            let ccfg = ClientConfig::builder_with_provider(p.clone())
                .with_safe_default_protocol_versions()
                .unwrap()
                .with_root_certificates(roots)
                .with_no_client_auth();
            let mut client = Connection::Client(
                ClientConnection::new(Arc::new(ccfg), ServerName::try_from("localhost").unwrap())
                    .unwrap(),
            );
            let mut server = Connection::Server(ServerConnection::new(Arc::new(scfg)).unwrap());
            let mut wire = Vec::with_capacity(2 << 20);
            while client.is_handshaking() || server.is_handshaking() {
                pump(&mut client, &mut server, &mut wire);
                pump(&mut server, &mut client, &mut wire);
            }
            let suite = format!("{:?}", client.negotiated_cipher_suite().unwrap().suite());
            // Large writes: rustls caps buffered plaintext, so lift the limit and
            // write 1 MiB at a time (64 full records).
            client.set_buffer_limit(None);
            let block = vec![0x5au8; 1 << 20];
            let mut sink = vec![0u8; 1 << 20];
            let start = Instant::now();
            let mut got = 0usize;
            for _ in 0..mib {
                client.writer().write_all(&block).unwrap();
                wire.clear();
                while client.wants_write() {
                    client.write_tls(&mut wire).unwrap();
                }
                let mut rd = wire.as_slice();
                while !rd.is_empty() {
                    server.read_tls(&mut rd).unwrap();
                    server.process_new_packets().unwrap();
                    loop {
                        match server.reader().read(&mut sink) {
                            Ok(0) => break,
                            Ok(n) => got += n,
                            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                            Err(e) => panic!("{e}"),
                        }
                    }
                }
            }
            let secs = start.elapsed().as_secs_f64();
            assert_eq!(got, mib << 20);
            match best.iter_mut().find(|b| b.0 == name) {
                Some(b) => b.2 = b.2.min(secs),
                None => best.push((name, suite, secs)),
            }
        }
    }
    for (name, suite, secs) in best {
        println!(
            "| {name} | {suite} | {mib} | {secs:.2} | {:.0} |",
            (mib << 20) as f64 / secs / 1e6
        );
    }
}
