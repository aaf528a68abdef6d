//! A worker's appends written back to back on one connection
//! ([`Pipeline`]), so the link does not idle a round trip between parts.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use wirespeed_resumable::tus;

use super::{give_back, save, say, Shared};
use crate::{Body, Error, FileBody, Pipeline, Request, Url};

/// A worker's appends written back to back on one connection: the part
/// whose append went out whole and whose answer is not read yet.
#[derive(Default)]
pub(super) struct Line {
    pipe: Option<Pipeline>,
    waiting: Option<usize>,
}

impl Line {
    /// Part `i` (created empty at `url`) appended whole; then the answer
    /// to the part before it read. An error: `i` is given back to the
    /// queue by the caller.
    pub(super) async fn send(&mut self, s: &Shared, i: usize, url: Url) -> Result<(), Error> {
        if !self.pipe.as_ref().is_some_and(Pipeline::open) {
            self.settle(s).await?;
            self.pipe = Some(s.client.pipeline(&url).await?);
        }
        let (start, end) = s.plan.lock().map_or((0, 0), |p| p.pieces.range(i));
        let req = append_request(s, &url, start, 0, end - start)?;
        let Some(pipe) = self.pipe.as_mut() else {
            return Err(Error::NoResponse);
        };
        let mut wrote = pipe.write(req).await;
        let settled = self.settle(s).await;
        if wrote.is_err() && settled.is_ok() {
            // The answer before it ended the connection (a part the server
            // lost, `Connection: close`): part `i` goes out on a new one.
            // Had the server kept some of its bytes, the append meets 409
            // and the part's turn asks its offset.
            let mut pipe = s.client.pipeline(&url).await?;
            wrote = pipe
                .write(append_request(s, &url, start, 0, end - start)?)
                .await;
            self.pipe = Some(pipe);
        }
        wrote?;
        self.waiting = Some(i);
        settled
    }

    /// Reads the answer to the part waiting, if one is: recorded as sent,
    /// or given back to the queue. A part the server lost (404, 410) is no
    /// failure the first time: its next turn creates it again.
    pub(super) async fn settle(&mut self, s: &Shared) -> Result<(), Error> {
        let Some(b) = self.waiting.take() else {
            return Ok(());
        };
        let answer = match self.pipe.as_mut() {
            Some(pipe) => pipe.answer().await,
            None => Err(Error::NoResponse),
        };
        match answer {
            Ok(_) => {
                let mut p = s.plan.lock().unwrap_or_else(|e| e.into_inner());
                p.pieces.mark(b);
                save(s, &p);
                Ok(())
            }
            Err(e) => {
                // Whatever came after it on this connection is not trusted.
                self.pipe = None;
                let mut p = s.plan.lock().unwrap_or_else(|e| e.into_inner());
                let first_loss = matches!(e.status(), Some(404 | 410)) && !p.lost.contains(&b);
                if first_loss {
                    // Lost between its creation and the append (expired,
                    // removed under it): created and sent again, once.
                    p.lost.push(b);
                    if let Some(u) = p.urls.get_mut(b) {
                        *u = None;
                    }
                    save(s, &p);
                }
                p.queue.push_front(b);
                drop(p);
                if first_loss {
                    say(
                        s,
                        &format!(
                            "the server lost part {} while it was sent; sending it again",
                            b + 1
                        ),
                    );
                    Ok(())
                } else {
                    Err(e)
                }
            }
        }
    }

    /// The worker stops on an error: the part waiting goes back to the
    /// queue (its turn asks the server how much of it arrived).
    pub(super) fn abandon(&mut self, s: &Shared) {
        self.pipe = None;
        if let Some(b) = self.waiting.take() {
            give_back(s, b);
        }
    }
}

/// The `PATCH` of `n` bytes of the file from `at` into a part at its
/// `offset`, its bytes counted as they go.
pub(super) fn append_request(
    s: &Shared,
    loc: &Url,
    at: u64,
    offset: u64,
    n: u64,
) -> Result<Request, Error> {
    let req = Request::new("PATCH", loc.clone())
        .header("Tus-Resumable", tus::VERSION)
        .header("Upload-Offset", offset.to_string())
        .header("Content-Type", tus::CONTENT_TYPE);
    let progress = s.opts.progress.clone();
    let (moved, pace) = (s.moved.clone(), s.pace.clone());
    let body = Body::file(FileBody::open(&s.path)?.range(at, n)).progress(Arc::new(move |k| {
        moved.fetch_add(k, Ordering::Relaxed);
        pace.sent(k);
        if let Some(p) = &progress {
            p.advance(k);
        }
    }));
    // No `Expect: 100-continue`: the part's creation (or its offset, on a
    // rerun) was just answered, so a refusal is already ruled out, and its
    // round trip would idle the link once per part (3% of the rate at
    // 200 Mbit/s, 20 ms, with 32 MiB parts).
    Ok(req.body(body).without_expect_continue())
}
