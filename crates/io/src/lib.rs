//! The byte-moving primitives the server (`wirespeed-net`) and the client
//! share, so each exists once:
//!
//! - [`ReadBuf`]: a connection's read buffer (starts small, grows to a cap
//!   chosen per use, shrinks back when idle).
//! - [`send_file`]: sendfile(2), page cache → socket.
//! - [`receive_to_file`]: splice(2), socket → pipe → file.
//! - [`copy_file`]: the user-space fallback for streams that must see the
//!   bytes (TLS encrypts them).
//! - [`Cork`]: TCP_CORK while a head and a file body go out.
//! - [`congestion`]: TCP_CONGESTION (BBR where we send, when offered).
//! - [`clean_link`]: a connection on BBR moved to CUBIC once its link shows
//!   no random loss (and back if that costs it), read from TCP_INFO.
//! - [`Pace`]: body bytes paced to rates shared across connections (token
//!   buckets a principal's connections and the server share).
//! - [`open_file_limit`], [`raise_open_file_limit`], [`is_resource_exhaustion`]:
//!   RLIMIT_NOFILE, which bounds a server's connections.
//!
//! The system calls go through `rustix`, except TCP_INFO, which neither
//! rustix nor socket2 reads: `tcp_info` holds the crate's only `unsafe`.

#![deny(unsafe_code)]

pub mod clean_link;
pub mod congestion;
mod fd_limit;
mod file;
mod pace;
mod read_buf;
#[allow(unsafe_code)]
mod tcp_info;

pub use fd_limit::{is_resource_exhaustion, open_file_limit, raise_open_file_limit};
pub use file::{
    copy_file, copy_file_with, receive_to_file, send_file, Cork, ReceiveError, Received,
};
pub use pace::{Bucket, Pace, SharedBucket};
pub use read_buf::ReadBuf;
pub use tcp_info::{counters as tcp_counters, Counters as TcpCounters};
