//! A bare `wirespeed_net::Server` with a test handler on 127.0.0.1:0 (the
//! kit's `Spawned`), and the kit's raw client that parses responses
//! independently of wirespeed-proto.

#![allow(dead_code, unused_imports)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use wirespeed_net::{Handler, Server, ServerConfig};
use wirespeed_testkit::server::Spawned;

pub use wirespeed_testkit::http::{exchange_raw, parse_all, read_response, read_to_close, Resp};

pub struct TestServer {
    pub addr: SocketAddr,
    server: Spawned,
}

impl TestServer {
    pub async fn start<H: Handler>(cfg: ServerConfig, handler: H) -> TestServer {
        let server = Spawned::start(move |listener, stop| async move {
            Server::new(cfg)
                .serve(listener, Arc::new(handler), stop)
                .await
                .unwrap();
        })
        .await;
        TestServer {
            addr: server.addr,
            server,
        }
    }

    /// Signal shutdown and wait for the server to return.
    pub async fn shutdown(self) {
        self.server
            .stop(Duration::from_secs(20))
            .await
            .expect("server stops within its grace period");
    }
}
