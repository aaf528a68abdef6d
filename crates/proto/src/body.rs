//! The one body decoder, for both roles: the server reads request bodies
//! with it, the client response bodies. Sans-IO: the caller hands in the
//! bytes it has buffered and gets back which of them are body data and how
//! many it may drop; what the transport does with them is its business.

use crate::chunked::{ChunkedDecoder, Decoded};
use crate::framing::BodyFraming;
use crate::{Limits, ProtoError};

/// Where a reader is inside one message body.
#[derive(Debug)]
pub enum BodyDecoder {
    /// `remaining` bytes of a Content-Length body are still to come.
    Length { remaining: u64 },
    /// A chunked body; the chunked decoder keeps the framing state.
    Chunked(Box<ChunkedDecoder>),
    /// A response body that ends when the server closes the connection.
    UntilClose,
    /// The body has been read completely (or there was none).
    Done,
}

impl BodyDecoder {
    /// The decoder for a body framed as `framing` (from
    /// [`request_framing`](crate::request_framing) or
    /// [`response_framing`](crate::response_framing)).
    pub fn new(framing: BodyFraming, limits: &Limits) -> Self {
        match framing {
            BodyFraming::Empty | BodyFraming::Length(0) => BodyDecoder::Done,
            BodyFraming::Length(n) => BodyDecoder::Length { remaining: n },
            BodyFraming::Chunked => BodyDecoder::Chunked(Box::new(ChunkedDecoder::new(limits))),
            BodyFraming::UntilClose => BodyDecoder::UntilClose,
        }
    }

    /// Take body data from `input` (the start of what is buffered): the
    /// result's `data` is the range of `input` holding body bytes, `consumed`
    /// how many bytes of `input` are used up (framing included), `done`
    /// whether the body ended here. Bytes after `consumed` belong to what
    /// follows (the next pipelined message) or to a later call.
    pub fn decode(&mut self, input: &[u8]) -> Result<Decoded, ProtoError> {
        match self {
            BodyDecoder::Done => Ok(Decoded {
                consumed: 0,
                data: 0..0,
                done: true,
            }),
            BodyDecoder::Length { remaining } => {
                let n = (*remaining).min(input.len() as u64) as usize;
                *remaining -= n as u64;
                let done = *remaining == 0;
                if done {
                    *self = BodyDecoder::Done;
                }
                Ok(Decoded {
                    consumed: n,
                    data: 0..n,
                    done,
                })
            }
            BodyDecoder::Chunked(dec) => {
                let d = dec.decode(input)?;
                if d.done {
                    *self = BodyDecoder::Done;
                }
                Ok(d)
            }
            BodyDecoder::UntilClose => Ok(Decoded {
                consumed: input.len(),
                data: 0..input.len(),
                done: false,
            }),
        }
    }

    /// How many body bytes may be read straight from the transport into the
    /// caller's memory or a file, bypassing the buffer and [`decode`]
    /// (zero-copy receive, direct reads): all that remains of a
    /// Content-Length or close-delimited body; `None` for chunked bodies,
    /// whose framing must be seen.
    ///
    /// [`decode`]: Self::decode
    pub fn direct_limit(&self) -> Option<u64> {
        match self {
            BodyDecoder::Length { remaining } => Some(*remaining),
            BodyDecoder::UntilClose => Some(u64::MAX),
            BodyDecoder::Done => Some(0),
            BodyDecoder::Chunked(_) => None,
        }
    }

    /// Account for `n` body bytes that went around [`decode`](Self::decode)
    /// (at most [`direct_limit`](Self::direct_limit)). Returns false, and
    /// changes nothing, if the decoder cannot have done so.
    pub fn advance_direct(&mut self, n: u64) -> bool {
        match self {
            BodyDecoder::Length { remaining } if n <= *remaining => {
                *remaining -= n;
                if *remaining == 0 {
                    *self = BodyDecoder::Done;
                }
                true
            }
            BodyDecoder::UntilClose => true,
            BodyDecoder::Done => n == 0,
            _ => false,
        }
    }

    /// The peer closed the connection: true if that ends the body properly
    /// (a close-delimited body, or one already complete), false if the body
    /// was cut short.
    pub fn end_of_input(&mut self) -> bool {
        match self {
            BodyDecoder::UntilClose | BodyDecoder::Done => {
                *self = BodyDecoder::Done;
                true
            }
            _ => false,
        }
    }

    /// Bytes still announced by a Content-Length body (`Some(0)` when done).
    pub fn remaining(&self) -> Option<u64> {
        match self {
            BodyDecoder::Length { remaining } => Some(*remaining),
            BodyDecoder::Done => Some(0),
            _ => None,
        }
    }

    pub fn is_done(&self) -> bool {
        matches!(self, BodyDecoder::Done)
    }
}

#[cfg(test)]
mod tests {
    //! Every row of RFC 9112 §6.3 for both roles, read from plain byte
    //! slices: head → framing → body decoder → body bytes and what is left
    //! for the next message.
    use super::*;
    use crate::{parse_request_head, parse_response_head, request_framing, response_framing};

    /// A message read off `wire` the way a connection does, feeding the
    /// decoder in `step`-byte pieces.
    #[derive(Debug, PartialEq, Eq)]
    enum Read {
        /// Body bytes and the bytes left after the message.
        Message(Vec<u8>, Vec<u8>),
        /// The head's framing was refused.
        Refused(ProtoError),
        /// The input ended before the body did.
        Truncated(Vec<u8>),
    }

    fn read_body(mut dec: BodyDecoder, rest: &[u8], step: usize) -> Read {
        let mut body = Vec::new();
        let mut pos = 0;
        let mut pending: Vec<u8> = Vec::new();
        loop {
            if dec.is_done() {
                let mut left = pending.clone();
                left.extend_from_slice(&rest[pos..]);
                return Read::Message(body, left);
            }
            if pending.is_empty() {
                if pos == rest.len() {
                    return if dec.end_of_input() {
                        Read::Message(body, Vec::new())
                    } else {
                        Read::Truncated(body)
                    };
                }
                let end = (pos + step).min(rest.len());
                pending.extend_from_slice(&rest[pos..end]);
                pos = end;
            }
            let d = match dec.decode(&pending) {
                Ok(d) => d,
                Err(e) => return Read::Refused(e),
            };
            body.extend_from_slice(&pending[d.data.clone()]);
            pending.drain(..d.consumed);
        }
    }

    fn server_reads(wire: &[u8], step: usize) -> Read {
        let (head, n) = parse_request_head(wire, &Limits::default())
            .expect("valid head")
            .expect("complete head");
        match request_framing(&head) {
            Ok(f) => read_body(BodyDecoder::new(f, &Limits::default()), &wire[n..], step),
            Err(e) => Read::Refused(e),
        }
    }

    fn client_reads(method: &str, wire: &[u8], step: usize) -> Read {
        let (head, n) = parse_response_head(wire, &Limits::default())
            .expect("valid head")
            .expect("complete head");
        match response_framing(method, &head) {
            Ok(f) => read_body(BodyDecoder::new(f, &Limits::default()), &wire[n..], step),
            Err(e) => Read::Refused(e),
        }
    }

    fn msg(body: &[u8], left: &[u8]) -> Read {
        Read::Message(body.to_vec(), left.to_vec())
    }

    const STEPS: [usize; 4] = [1, 3, 7, 4096];

    // Rule 1: HEAD responses, 1xx, 204 and 304 end at the head, whatever
    // their fields say.
    #[test]
    fn rule1_no_body_statuses_and_head_end_at_the_head() {
        for step in STEPS {
            for (method, wire) in [
                (
                    "HEAD",
                    &b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nNEXT"[..],
                ),
                (
                    "GET",
                    b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nNEXT",
                ),
                (
                    "GET",
                    b"HTTP/1.1 304 Not Modified\r\nContent-Length: 5\r\n\r\nNEXT",
                ),
                ("GET", b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nNEXT"),
                (
                    "GET",
                    b"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\nNEXT",
                ),
            ] {
                assert_eq!(
                    client_reads(method, wire, step),
                    msg(b"", b"NEXT"),
                    "{method}"
                );
            }
        }
    }

    // Rule 2: a 2xx answer to CONNECT is a tunnel, not a body.
    #[test]
    fn rule2_connect_success_has_no_body() {
        let wire = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nTUNNEL";
        assert_eq!(client_reads("CONNECT", wire, 4096), msg(b"", b"TUNNEL"));
        let refused = b"HTTP/1.1 407 Proxy Auth\r\nContent-Length: 2\r\n\r\nnoX";
        assert_eq!(client_reads("CONNECT", refused, 4096), msg(b"no", b"X"));
    }

    // Rule 3: Transfer-Encoding with Content-Length is refused in both roles
    // (a server MAY process it as chunked; refusing closes the smuggling door).
    #[test]
    fn rule3_te_with_cl_is_refused_both_ways() {
        let req = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n";
        assert_eq!(
            server_reads(req, 4096),
            Read::Refused(ProtoError::TransferEncodingWithContentLength)
        );
        let resp =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n";
        assert_eq!(
            client_reads("GET", resp, 4096),
            Read::Refused(ProtoError::TransferEncodingWithContentLength)
        );
    }

    // Rule 4: chunked as the final coding → chunked body. A request with
    // another final coding → 400; a response with one would be read until
    // close by the RFC, but we cannot decode it, so it is refused too.
    #[test]
    fn rule4_chunked_final_coding_is_decoded_and_others_refused() {
        for step in STEPS {
            let req = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\nT: v\r\n\r\nNEXT";
            assert_eq!(server_reads(req, step), msg(b"hello world", b"NEXT"));
            let resp =
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\nNEXT";
            assert_eq!(client_reads("GET", resp, step), msg(b"abc", b"NEXT"));
        }
        let req = b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n";
        assert_eq!(
            server_reads(req, 4096),
            Read::Refused(ProtoError::ChunkedNotLast)
        );
        let req =
            b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n";
        assert_eq!(
            server_reads(req, 4096),
            Read::Refused(ProtoError::UnknownTransferCoding)
        );
        let resp = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nxx";
        assert_eq!(
            client_reads("GET", resp, 4096),
            Read::Refused(ProtoError::ChunkedNotLast)
        );
        // A chunked body cut short is not a message.
        let cut = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel";
        assert_eq!(
            client_reads("GET", cut, 2),
            Read::Truncated(b"hel".to_vec())
        );
    }

    // Rule 5: an invalid or conflicting Content-Length is refused, both roles.
    #[test]
    fn rule5_invalid_content_length_is_refused_both_ways() {
        for cl in ["-1", "1 2", "0x5", "5, 6", ""] {
            let req = format!("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: {cl}\r\n\r\n");
            assert!(
                matches!(server_reads(req.as_bytes(), 4096), Read::Refused(_)),
                "request Content-Length {cl:?}"
            );
            let resp = format!("HTTP/1.1 200 OK\r\nContent-Length: {cl}\r\n\r\n");
            assert!(
                matches!(client_reads("GET", resp.as_bytes(), 4096), Read::Refused(_)),
                "response Content-Length {cl:?}"
            );
        }
    }

    // Rule 6: a valid Content-Length is the body length; what follows is the
    // next message; fewer bytes than announced is a truncation.
    #[test]
    fn rule6_content_length_delimits_the_body() {
        for step in STEPS {
            let req = b"PUT /f HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\nhelloGET";
            assert_eq!(server_reads(req, step), msg(b"hello", b"GET"));
            let resp = b"HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nabcXYZ";
            assert_eq!(client_reads("GET", resp, step), msg(b"abc", b"XYZ"));
            let short = b"PUT /f HTTP/1.1\r\nHost: a\r\nContent-Length: 9\r\n\r\nhello";
            assert_eq!(
                server_reads(short, step),
                Read::Truncated(b"hello".to_vec())
            );
        }
    }

    // Rule 7: a request with neither field has no body.
    #[test]
    fn rule7_request_without_framing_fields_has_no_body() {
        let req = b"POST / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\n";
        assert_eq!(server_reads(req, 4096), msg(b"", b"GET / HTTP/1.1\r\n"));
    }

    // Rule 8: a response with neither field is read until the server closes.
    #[test]
    fn rule8_response_without_framing_fields_ends_at_close() {
        for step in STEPS {
            let resp = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of this";
            assert_eq!(client_reads("GET", resp, step), msg(b"all of this", b""));
        }
    }

    #[test]
    fn direct_reads_are_accounted_like_decoded_ones() {
        let mut dec = BodyDecoder::new(BodyFraming::Length(10), &Limits::default());
        assert_eq!(dec.direct_limit(), Some(10));
        assert!(!dec.advance_direct(11), "more than announced is refused");
        assert!(dec.advance_direct(4));
        assert_eq!(dec.remaining(), Some(6));
        let d = dec.decode(b"abcdefNEXT").unwrap();
        assert_eq!((d.consumed, d.data, d.done), (6, 0..6, true));
        assert!(dec.is_done());

        let mut chunked = BodyDecoder::new(BodyFraming::Chunked, &Limits::default());
        assert_eq!(chunked.direct_limit(), None);
        assert!(!chunked.advance_direct(1));
        assert!(
            !chunked.end_of_input(),
            "a chunked body needs its last chunk"
        );

        let mut close = BodyDecoder::new(BodyFraming::UntilClose, &Limits::default());
        assert!(close.advance_direct(1 << 40));
        assert!(close.end_of_input());
        assert!(close.is_done());
    }
}
