//! One connection of a ranged download: the pieces it asks (pipelined,
//! two at a time), the answers it checks against the file's version, the
//! bytes it writes at their offsets.

use std::collections::VecDeque;
use std::os::unix::fs::FileExt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use wirespeed_io::clean_link::{LinkReport, LINK_HEADER};

use super::{record, PieceError, Shared};
use crate::transfer::download::range_validator;
use crate::transfer::parse_sha256;
use crate::transfer::ranges::Crew;
use crate::{Error, Pipeline, Request, Response};

/// Bytes `start..end` of piece `piece`, asked on a connection: all of it,
/// or (for the first answer, asked before the size was known) its start
/// or the rest of it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ask {
    pub(super) piece: usize,
    pub(super) start: u64,
    pub(super) end: u64,
}

/// The next missing piece, taken from the queue, whole.
fn take_next(s: &Shared) -> Option<Ask> {
    let mut st = s.state.lock().ok()?;
    let piece = st.queue.pop_front()?;
    let (start, end) = st.pieces.range(piece);
    Some(Ask { piece, start, end })
}

/// A piece taken and not asked goes back to the front of the queue.
fn give_back(s: &Shared, piece: usize) {
    if let Ok(mut st) = s.state.lock() {
        st.queue.push_front(piece);
    }
}

/// The first request's answer, being read, and the rest of its piece.
pub(super) struct Opened {
    pub(super) resp: Response,
    pub(super) ask: Ask,
    pub(super) rest: Option<Ask>,
}

/// One connection: takes missing pieces until none is left. The next
/// piece's request goes out before this one's bytes are read (pipelined),
/// so the server sends it right after, without a round trip between.
/// `first`: the first request's answer, which this connection reads first.
pub(super) async fn worker(
    s: Arc<Shared>,
    crew: &Crew,
    first: Option<Opened>,
) -> Result<(), PieceError> {
    let mut buf = vec![0u8; s.client.config().read_buffer.max(16 * 1024)];
    // Ranges asked on `pipe`, oldest first.
    let mut asked: VecDeque<Ask> = VecDeque::new();
    let mut pipe: Option<Pipeline> = None;
    let mut pending: Option<Response> = None;
    if let Some(mut o) = first {
        asked.push_back(o.ask);
        pipe = Pipeline::behind(&mut o.resp);
        ask_behind(&s, pipe.as_mut(), &mut o.resp, &mut asked, o.rest).await;
        pending = Some(o.resp);
    }
    // Answers read on the pipe now in use.
    let mut answered = 0usize;
    let outcome = loop {
        if pending.is_none() {
            if let Err(e) = ask_ahead(&s, &mut pipe, &mut asked).await {
                break Err(e);
            }
        }
        let Some(a) = asked.pop_front() else {
            break Ok(());
        };
        let next = match (pending.take(), pipe.as_mut()) {
            (Some(resp), _) => Ok(resp),
            (None, Some(p)) => p.response().await,
            (None, None) => Err(Error::NoResponse),
        };
        let taken = match next {
            Ok(resp) => piece(&s, a, resp, &mut buf).await,
            // The server closed the connection after an answer (its
            // limit of requests, `Connection: close`): what was asked
            // after it is asked again on a new one.
            Err(Error::NoResponse) if answered > 0 => {
                requeue(&s, &mut asked, Some(a));
                (pipe, answered) = (None, 0);
                continue;
            }
            Err(e) => Err(e.into()),
        };
        match taken {
            Ok(resp) => {
                answered += 1;
                if let Some(p) = pipe.as_mut() {
                    p.resume(resp);
                }
            }
            Err(e) => {
                asked.push_front(a);
                break Err(e);
            }
        }
    };
    requeue(&s, &mut asked, None);
    crew.quit();
    outcome
}

/// Pieces asked and not taken (`first`, then `asked`) go back to the front
/// of the queue, in order, each once (the first piece may have been asked
/// in two ranges). A piece asked in part is fetched again whole.
fn requeue(s: &Shared, asked: &mut VecDeque<Ask>, first: Option<Ask>) {
    if let Ok(mut st) = s.state.lock() {
        let pieces = first.into_iter().chain(asked.drain(..)).map(|a| a.piece);
        let mut back: Vec<usize> = Vec::new();
        for i in pieces {
            if back.last() != Some(&i) {
                back.push(i);
            }
        }
        for i in back.into_iter().rev() {
            st.queue.push_front(i);
        }
    }
}

/// The request for `a`, held by `If-Range` to the version of the others.
fn range_request(s: &Shared, a: Ask) -> Request {
    Request::get(s.url.clone())
        .header("Range", format!("bytes={}-{}", a.start, a.end - 1))
        .header("If-Range", s.validator.clone())
}

/// Asks, on the connection of the first answer `resp` while its body
/// arrives, for the rest of its piece (`rest`), or the next piece: its
/// bytes follow the first answer's without a round trip between. A
/// request not written leaves its piece to be asked again.
async fn ask_behind(
    s: &Shared,
    pipe: Option<&mut Pipeline>,
    resp: &mut Response,
    asked: &mut VecDeque<Ask>,
    rest: Option<Ask>,
) {
    let Some(p) = pipe else {
        // The first piece's rest is asked again with the whole piece.
        if let Some(r) = rest {
            give_back(s, r.piece);
        }
        return;
    };
    let Some(a) = rest.or_else(|| take_next(s)) else {
        return;
    };
    match p.write_behind(resp, range_request(s, a)).await {
        Ok(()) => asked.push_back(a),
        Err(_) => give_back(s, a.piece),
    }
}

/// Requests pieces on `pipe` until two are asked (the one to read and the
/// next) or none is left; a closed pipe is replaced once nothing waits on it.
async fn ask_ahead(
    s: &Shared,
    pipe: &mut Option<Pipeline>,
    asked: &mut VecDeque<Ask>,
) -> Result<(), PieceError> {
    while asked.len() < 2 {
        if !pipe.as_ref().is_some_and(Pipeline::open) {
            if !asked.is_empty() {
                return Ok(());
            }
            *pipe = Some(s.client.pipeline(&s.url).await?);
        }
        let Some(a) = take_next(s) else {
            return Ok(());
        };
        let req = || range_request(s, a);
        let mut written = match pipe.as_mut() {
            Some(p) => p.write(req()).await,
            None => Err(Error::NoResponse),
        };
        if written.is_err() && asked.is_empty() {
            // An idle connection that died as it was taken: once more on a
            // new one (nothing of this request reached a server).
            written = match s.client.new_pipeline(&s.url).await {
                Ok(mut fresh) => {
                    let w = fresh.write(req()).await;
                    *pipe = Some(fresh);
                    w
                }
                Err(e) => Err(e),
            };
        }
        match written {
            Ok(()) => asked.push_back(a),
            Err(e) => {
                give_back(s, a.piece);
                if asked.is_empty() {
                    return Err(e.into());
                }
                // The pieces asked before it are still read.
                return Ok(());
            }
        }
    }
    Ok(())
}

/// The answer `resp` to `a`: checked against the file's version, its bytes
/// written at their offset; the response, read to its end, back. The
/// piece is received once its last byte is.
async fn piece(
    s: &Arc<Shared>,
    a: Ask,
    mut resp: Response,
    buf: &mut [u8],
) -> Result<Response, PieceError> {
    let Ask { start, end, .. } = a;
    match resp.status() {
        206 => {}
        // If-Range did not match: another version.
        200 => return Err(PieceError::Changed),
        _ => {
            return Err(resp
                .error_for_status()
                .await
                .err()
                .unwrap_or(Error::NoResponse)
                .into())
        }
    }
    let cr = resp
        .header("Content-Range")
        .and_then(crate::transfer::download::parse_content_range);
    if cr != Some((start, end - 1, Some(s.size)))
        || range_validator(&resp).is_some_and(|v| v != s.validator)
    {
        return Err(PieceError::Changed);
    }
    let holds = resp
        .header(LINK_HEADER)
        .and_then(LinkReport::parse)
        .is_some();
    s.sender_holds.store(holds, Ordering::Relaxed);
    if let Some(d) = resp.header("Repr-Digest").and_then(parse_sha256) {
        let mut have = s.digest.lock().unwrap_or_else(|e| e.into_inner());
        match *have {
            Some(h) if h != d => return Err(PieceError::Changed),
            _ => *have = Some(d),
        }
    }
    let mut at = start;
    while at < end {
        let n = resp.read(buf).await?;
        if n == 0 {
            return Err(Error::Truncated {
                received: at - start,
                expected: Some(end - start),
            }
            .into());
        }
        let n = n.min((end - at) as usize);
        s.file
            .write_all_at(&buf[..n], at)
            .map_err(|source| Error::File {
                path: s.part.clone(),
                source,
            })?;
        at += n as u64;
        s.moved.fetch_add(n as u64, Ordering::Relaxed);
        if let Some(p) = &s.opts.progress {
            p.advance(n as u64);
        }
    }
    let (from, to) = s
        .state
        .lock()
        .map_or((0, u64::MAX), |st| st.pieces.range(a.piece));
    if end == to {
        s.whole.fetch_add(to - from, Ordering::Relaxed);
        record::received(s, a.piece);
    }
    Ok(resp)
}
