//! Requests written one after another on one connection before their
//! answers are read (HTTP/1.1 pipelining, RFC 9112 §9.3.2).
//!
//! Why: a sender that waits for each answer before the next request
//! leaves the link idle for a round trip per request. For a file sent as
//! tus parts of 32 MiB over one connection at 200 Mbit/s and 20 ms, that
//! is 1.5% of the time; across an ocean, 7%. Written back to back, the
//! next part's bytes fill that round trip.
//!
//! Only what can recover from a partial failure belongs here (RFC 9112
//! asks that of anyone pipelining a request that is not idempotent): a tus
//! append says where it starts, and the server's offset tells afterwards
//! what arrived. Answers are read in order; the first one a server gives
//! while a later request's body is still going out (a refusal the early
//! watch sees) is the oldest request's, and the later one is not sent.

use std::collections::VecDeque;

use crate::conn::Conn;
use crate::response::Response;
use crate::{send_body, Client, Error, Request, ResponseHead, Url};

/// A connection carrying requests whose answers are not read yet.
pub struct Pipeline {
    client: Client,
    conn: Option<Conn>,
    /// The methods of the requests written and not yet answered, oldest
    /// first.
    waiting: VecDeque<String>,
    /// An answer that came while a later body was going out: the oldest's.
    early: Option<ResponseHead>,
}

/// The most of an answer's body read on a pipelined connection (a tus
/// append's answer has none; an error's message is read by
/// [`Response::error_for_status`] instead).
const MAX_ANSWER_BODY: usize = 64 * 1024;

impl Client {
    /// A pipeline to `url`'s server, on an idle connection or a new one.
    pub async fn pipeline(&self, url: &Url) -> Result<Pipeline, Error> {
        match self.take_idle(&crate::conn::PoolKey::of(url)).await {
            Some(c) => Ok(self.pipeline_on(c)),
            None => self.new_pipeline(url).await,
        }
    }

    /// A pipeline to `url`'s server on a new connection.
    pub async fn new_pipeline(&self, url: &Url) -> Result<Pipeline, Error> {
        Ok(self.pipeline_on(self.connect(url).await?))
    }

    fn pipeline_on(&self, conn: Conn) -> Pipeline {
        Pipeline {
            client: self.clone(),
            conn: Some(conn),
            waiting: VecDeque::new(),
            early: None,
        }
    }
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("waiting", &self.waiting)
            .field("open", &self.open())
            .finish()
    }
}

impl Pipeline {
    /// Whether another request may be written (the connection is open and
    /// no answer ended it).
    pub fn open(&self) -> bool {
        self.early.is_none() && self.conn.as_ref().is_some_and(|c| c.reusable)
    }

    /// Requests written whose answers are not read yet.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Writes `req`, head and body, without reading any answer (never with
    /// `Expect: 100-continue`: an interim answer would sit among the final
    /// ones). An error: `req` was not sent whole; the answers waiting may
    /// still be read.
    pub async fn write(&mut self, mut req: Request) -> Result<(), Error> {
        if !self.open() {
            return Err(Error::NoResponse);
        }
        let Some(conn) = self.conn.as_mut() else {
            return Err(Error::NoResponse);
        };
        let cfg = self.client.config();
        let head = self.client.request_head(&req, false);
        if let Err(e) = conn
            .write_all(&head, cfg.io_timeout, "sending the request head")
            .await
        {
            conn.reusable = false;
            return Err(e);
        }
        if req.body.is_empty() {
            self.waiting.push_back(req.method);
            return Ok(());
        }
        match send_body::send_body(conn, &mut req.body, cfg).await {
            Ok(None) => {
                self.waiting.push_back(req.method);
                Ok(())
            }
            Ok(Some(answer)) => {
                // The server answered before this body was sent whole and
                // will not read the rest: the answer is the oldest's.
                conn.reusable = false;
                self.early = Some(answer);
                if self.waiting.is_empty() {
                    self.waiting.push_back(req.method);
                    Ok(())
                } else {
                    Err(Error::NoResponse)
                }
            }
            Err(e) => {
                conn.reusable = false;
                Err(e)
            }
        }
    }

    /// A pipeline behind `resp`: requests are written on its connection
    /// ([`Pipeline::write_behind`]) while its body still arrives, so their
    /// answers follow it without a round trip between. The connection
    /// passes to the pipeline once the body is read to its end
    /// ([`Pipeline::resume`]). `None`: the connection cannot carry another
    /// request (the server ends it after this answer, or the body is over).
    pub fn behind(resp: &mut Response) -> Option<Pipeline> {
        let client = resp.client().clone();
        resp.hold_conn()?;
        Some(Pipeline {
            client,
            conn: None,
            waiting: VecDeque::new(),
            early: None,
        })
    }

    /// Writes `req`, which has no body, on the connection of `resp`, the
    /// answer this pipeline is behind (see [`Pipeline::behind`]); its
    /// answer is read after `resp`'s.
    pub async fn write_behind(&mut self, resp: &mut Response, req: Request) -> Result<(), Error> {
        if !req.body.is_empty() || self.conn.is_some() {
            return Err(Error::NoResponse);
        }
        let head = self.client.request_head(&req, false);
        let io_timeout = self.client.config().io_timeout;
        let conn = resp.hold_conn().ok_or(Error::NoResponse)?;
        if let Err(e) = conn
            .write_all(&head, io_timeout, "sending the request head")
            .await
        {
            conn.reusable = false;
            return Err(e);
        }
        self.waiting.push_back(req.method);
        Ok(())
    }

    /// The answer to the oldest request waiting: `Ok` for a 2xx (its body
    /// read and dropped), the server's error otherwise ([`Error::Status`],
    /// after which the connection carries nothing more).
    pub async fn answer(&mut self) -> Result<ResponseHead, Error> {
        let resp = self.response().await?;
        if !(200..300).contains(&resp.status()) {
            // Its message is read through the usual path; the connection
            // goes with it (the answers after it are not trusted).
            return Err(resp
                .error_for_status()
                .await
                .err()
                .unwrap_or(Error::NoResponse));
        }
        let head = resp.head().clone();
        // `None` once the server closes after this answer: the later
        // requests then read as unanswered.
        self.conn = resp.drain_held(MAX_ANSWER_BODY).await?;
        Ok(head)
    }

    /// The answer to the oldest request waiting, whatever its status, its
    /// body to be read (a range of a file). Once that body is read to its
    /// end, [`Pipeline::resume`] takes the connection back for the answers
    /// after it; a response dropped before its end takes the connection
    /// with it.
    pub async fn response(&mut self) -> Result<Response, Error> {
        let method = self.waiting.pop_front().ok_or(Error::NoResponse)?;
        let cfg = self.client.config();
        let mut conn = self.conn.take().ok_or(Error::NoResponse)?;
        let head = match self.early.take() {
            Some(h) => h,
            None => conn.read_head(cfg, cfg.io_timeout).await?,
        };
        Response::held(self.client.clone(), conn, head, &method)
    }

    /// A response from [`Pipeline::response`], its body read to its end:
    /// the connection carries on (unless the server ends it).
    pub fn resume(&mut self, resp: Response) {
        self.conn = resp.into_held_conn();
    }
}

impl Drop for Pipeline {
    /// A connection with nothing waiting goes back to the pool; one with
    /// answers unread is closed (they would be read as another request's).
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take() {
            if self.waiting.is_empty() && self.early.is_none() && conn.reusable {
                self.client.put_idle(conn);
            }
        }
    }
}
