//! BBR on a clean link, then CUBIC. BBR is chosen because random loss does
//! not slow it (a loss-based flow across a long link with 0.1% loss carries
//! a few percent of it). Its price is a probe of the round trip every 10 s:
//! 200 ms with four packets in flight, about 2% of a link it would
//! otherwise fill. Where the link loses nothing but what overflows the
//! router's buffer, CUBIC fills it with no such pause (on the emulated
//! 200 Mbit/s, 20 ms link: 24.1 MB/s under BBR, 24.5 under CUBIC, one flow
//! each). So a connection sending on BBR is watched, and moved:
//!
//! - **to CUBIC** once, past BBR's start-up (3 s), it has sent for 2 s at a
//!   steady rate with at least half of those half seconds free of any
//!   segment sent again. Random loss is spread evenly: at 0.1% and 200
//!   Mbit/s about 8 segments of each half second are lost, so a clean half
//!   second is rarer than 1 in 3,000 (two of four: never). BBR's own
//!   overshoot into a full router buffer comes in bursts, with clean half
//!   seconds between them (our uploads across the emulated link see 1,000–
//!   3,500 such retransmissions in 12 s, iperf3 900, nearly all in bursts);
//! - **back to BBR** when random loss costs CUBIC the rate: 2 s below 0.9
//!   of BBR's rate (0.8 once past the first 2 s) with losses in three half
//!   seconds of four. A rate that falls with losses in bursts, or none, is
//!   another flow taking its share (a second connection of ours starting
//!   up, someone else's), which BBR would not get back either.
//!
//! After a move back, the connection rests on BBR, then is watched again:
//! 10 s, then 20, 40, at most 80 (a second connection of ours starting up
//! beside it looks like loss to a flow on CUBIC; a link with a little loss
//! costs a try now and then, never more). Linux lets an established socket change its
//! algorithm; the window it has is kept. [`Judge`] is the decision,
//! sans-IO (counter samples in, moves out); [`CleanLink`] reads TCP_INFO
//! and sets TCP_CONGESTION while a body is sent.

use std::collections::VecDeque;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::tcp_info::{counters, Counters};

/// How often the counters are sampled while sending.
pub const TICK: Duration = Duration::from_millis(500);
/// BBR's start-up and drain, never judged.
const START_UP: Duration = Duration::from_secs(3);
/// Samples judged together (2 s).
const WINDOW: usize = 4;
/// A gap longer than this between samples: the connection was idle, the
/// rate across it means nothing.
const IDLE: Duration = Duration::from_secs(1);
/// On BBR after a move back, before the next watch; doubled each time.
const REST: Duration = Duration::from_secs(10);
const MAX_REST: Duration = Duration::from_secs(80);

/// What to do with the socket's congestion control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    /// The link looks clean: the loss-based algorithm.
    ToLossBased,
    /// The loss-based algorithm lost rate to loss: BBR again (for a rest).
    BackToBbr,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum State {
    Watching,
    Resting { until: Duration },
    Trying { bbr_rate: f64, good: usize },
    LossBased { bbr_rate: f64 },
    Done,
}

/// The decision for one connection, fed a sample every [`TICK`] while it sends.
#[derive(Clone, Debug)]
pub struct Judge {
    state: State,
    /// The next rest after a move back.
    rest: Duration,
    first: Option<Duration>,
    last: Option<(Duration, Counters)>,
    /// (bytes acknowledged per second, segments sent again) per interval.
    window: VecDeque<(f64, u32)>,
    /// (busy, held back by a buffer) microseconds per interval, over the
    /// same window; and their share over the last full window, kept across
    /// a move (when the window starts again).
    held: VecDeque<(u64, u64)>,
    held_share: Option<f64>,
}

impl Default for Judge {
    fn default() -> Judge {
        Judge {
            state: State::Watching,
            rest: REST,
            first: None,
            last: None,
            window: VecDeque::with_capacity(WINDOW + 1),
            held: VecDeque::with_capacity(WINDOW + 1),
            held_share: None,
        }
    }
}

impl Judge {
    /// Whether a sample taken at `at` (since the connection's start) is due.
    pub fn due(&self, at: Duration) -> bool {
        self.state != State::Done && self.last.is_none_or(|(t, _)| at >= t + TICK)
    }

    /// A connection started on the loss-based algorithm because a sibling
    /// found the path clean: with no BBR rate of its own to compare, random
    /// loss alone (three lossy half seconds of four) sends it back.
    pub fn on_loss_based() -> Judge {
        Judge {
            state: State::LossBased {
                bbr_rate: f64::INFINITY,
            },
            ..Judge::default()
        }
    }

    /// Whether it holds the loss-based algorithm past its try.
    pub fn holds_loss_based(&self) -> bool {
        matches!(self.state, State::LossBased { .. })
    }

    /// Whether it is on the loss-based algorithm, trying it or past that.
    pub fn on_loss_based_now(&self) -> bool {
        matches!(self.state, State::Trying { .. } | State::LossBased { .. })
    }

    /// Whether this one flow fills its link: the link is clean (it is on
    /// the loss-based algorithm) and over its last full window the flow
    /// was held back by the peer's window or its send buffer less than a
    /// tenth of the time, so only its congestion window, the network,
    /// limits it. Another connection beside it would only share the link
    /// (and the two would overflow the router's buffer in turn). Unknown
    /// (a kernel without the counters): false.
    pub fn fills_link(&self) -> bool {
        self.on_loss_based_now() && self.held_share.is_some_and(|h| h < 0.1)
    }

    /// What this connection's sender tells the receiver of a ranged
    /// download ([`LINK_HEADER`]), at `at`: that its one flow fills the
    /// link ([`Judge::fills_link`]), or that the judge has sampled and not
    /// yet had its chance to say so (BBR's start-up and one window, at
    /// most 5 s, cut short by random loss: a window with losses in three
    /// half seconds of four, which BBR's start-up, one burst of overshoot,
    /// does not make). Nothing
    /// otherwise: a lossy link, a kernel without the counters, a body not
    /// yet sampled.
    pub fn report(&self, at: Duration) -> Option<LinkReport> {
        if self.fills_link() {
            return Some(LinkReport::Fills);
        }
        let judged = at.saturating_sub(self.first?);
        let lossy = self.window.len() == WINDOW
            && 4 * self.window.iter().filter(|w| w.1 > 0).count() >= 3 * WINDOW;
        let undecided = judged < START_UP + TICK * WINDOW as u32;
        (self.state == State::Watching && undecided && !lossy).then_some(LinkReport::Judging)
    }

    /// A sibling connection found the path clean. One still watching on
    /// BBR (opened before that, idle while it was found) follows at once,
    /// as [`Judge::on_loss_based`]: its own BBR start-up would overshoot
    /// the router's buffer beside the sibling's CUBIC flow, and the losses
    /// would send the sibling back. One resting or trying keeps its course.
    pub fn follow_sibling(&mut self) -> Option<Move> {
        (self.state == State::Watching).then(|| {
            let rest = self.rest;
            *self = Judge::on_loss_based();
            self.rest = rest;
            Move::ToLossBased
        })
    }

    /// Whether it has stopped judging (given up).
    pub fn done(&self) -> bool {
        self.state == State::Done
    }

    /// Stop judging (the socket could not be read or changed).
    pub fn give_up(&mut self) {
        self.state = State::Done;
    }

    /// A sample of the counters at `at`; the move to make, if any.
    pub fn sample(&mut self, at: Duration, c: Counters) -> Option<Move> {
        let first = *self.first.get_or_insert(at);
        let (t, last) = self.last.replace((at, c))?;
        let dt = at.saturating_sub(t);
        if dt.is_zero() || dt > IDLE || c.acked < last.acked || c.retransmitted < last.retransmitted
        {
            self.window.clear();
            self.held.clear();
            return None;
        }
        self.held.push_back((
            c.busy_us.saturating_sub(last.busy_us),
            c.buffer_limited_us.saturating_sub(last.buffer_limited_us),
        ));
        if self.held.len() > WINDOW {
            self.held.pop_front();
        }
        let busy: u64 = self.held.iter().map(|h| h.0).sum();
        if self.held.len() == WINDOW && busy > 0 {
            let limited: u64 = self.held.iter().map(|h| h.1).sum();
            self.held_share = Some(limited as f64 / busy as f64);
        }
        let rate = (c.acked - last.acked) as f64 / dt.as_secs_f64();
        let lost_now = c.retransmitted - last.retransmitted;
        self.window.push_back((rate, lost_now));
        if self.window.len() > WINDOW {
            self.window.pop_front();
        }
        let full = self.window.len() == WINDOW;
        let mean = self.window.iter().map(|w| w.0).sum::<f64>() / self.window.len() as f64;
        // Half seconds with a segment sent again.
        let lossy = self.window.iter().filter(|w| w.1 > 0).count();
        match self.state {
            State::Watching => {
                let (lo, hi) = self
                    .window
                    .iter()
                    .fold((f64::MAX, 0f64), |(lo, hi), w| (lo.min(w.0), hi.max(w.0)));
                let steady = hi > 0.0 && lo >= 0.8 * hi;
                if at.saturating_sub(first) >= START_UP && full && 2 * lossy <= WINDOW && steady {
                    self.state = State::Trying {
                        bbr_rate: mean,
                        good: 0,
                    };
                    self.window.clear();
                    return Some(Move::ToLossBased);
                }
                None
            }
            State::Trying { bbr_rate, good } => {
                if full && mean < 0.9 * bbr_rate && 4 * lossy >= 3 * WINDOW {
                    return Some(self.back(at));
                }
                self.state = if good + 1 >= WINDOW {
                    State::LossBased { bbr_rate }
                } else {
                    State::Trying {
                        bbr_rate,
                        good: good + 1,
                    }
                };
                None
            }
            State::LossBased { bbr_rate } => {
                if full && 4 * lossy >= 3 * WINDOW && mean < 0.8 * bbr_rate {
                    return Some(self.back(at));
                }
                None
            }
            State::Resting { until } => {
                if at >= until {
                    self.state = State::Watching;
                    self.window.clear();
                }
                None
            }
            State::Done => None,
        }
    }
}

impl Judge {
    /// Back to BBR, to rest before the next watch.
    fn back(&mut self, at: Duration) -> Move {
        self.state = State::Resting {
            until: at + self.rest,
        };
        self.rest = (self.rest * 2).min(MAX_REST);
        self.window.clear();
        Move::BackToBbr
    }
}

/// The response header by which a server sending a range on a watched
/// connection tells the client whether to hold back a second connection
/// ([`Judge::report`]): a download's own counters say how fast bytes
/// arrive, not whether the link has room for more, and two CUBIC flows on
/// a link one fills carry less than one.
pub const LINK_HEADER: &str = "Wirespeed-Link";

/// The values of [`LINK_HEADER`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkReport {
    /// No verdict yet: the first seconds of the connection's sending.
    Judging,
    /// One flow fills a clean link.
    Fills,
}

impl LinkReport {
    pub fn as_str(self) -> &'static str {
        match self {
            LinkReport::Judging => "judging",
            LinkReport::Fills => "fills",
        }
    }

    /// A header's value; anything else is no report.
    pub fn parse(v: &str) -> Option<LinkReport> {
        match v.trim() {
            "judging" => Some(LinkReport::Judging),
            "fills" => Some(LinkReport::Fills),
            _ => None,
        }
    }
}

/// What the connections of one client found of the path to its server:
/// once one of them tries CUBIC, the others still watching on BBR move to
/// it as they send (no BBR start-up overshooting beside a CUBIC flow, no
/// 3 s on BBR each); once one goes back, the next start on BBR again. A server's connections (each to
/// its own peer) share nothing.
///
/// It also says whether the connection that last judged found its one flow
/// filling the link ([`Judge::fills_link`]): a transfer that would open a
/// second connection to go faster asks it first.
#[derive(Clone, Debug, Default)]
pub struct PathVerdict(Arc<[AtomicBool; 2]>);

impl PathVerdict {
    fn clean(&self) -> bool {
        self.0[0].load(Ordering::Relaxed)
    }

    /// Whether one flow fills this path (clean, and held back only by the
    /// network), as the connection that last judged found.
    pub fn one_flow_fills(&self) -> bool {
        self.clean() && self.0[1].load(Ordering::Relaxed)
    }

    fn set(&self, clean: bool, fills: bool) {
        self.0[0].store(clean, Ordering::Relaxed);
        self.0[1].store(clean && fills, Ordering::Relaxed);
    }
}

/// A connection's [`Judge`] with the two algorithms' names; call
/// [`CleanLink::sending`] as bytes go out.
#[derive(Debug)]
pub struct CleanLink {
    judge: Judge,
    since: Instant,
    bbr: Arc<str>,
    loss_based: Arc<str>,
    path: Option<PathVerdict>,
}

impl CleanLink {
    /// A watch for a socket on BBR; with a `path` found clean by a sibling
    /// connection, the socket moves to the loss-based algorithm at once.
    pub(crate) fn new(
        socket: &impl AsFd,
        bbr: Arc<str>,
        loss_based: Arc<str>,
        path: Option<PathVerdict>,
    ) -> CleanLink {
        let mut link = CleanLink {
            judge: Judge::default(),
            since: Instant::now(),
            bbr,
            loss_based,
            path,
        };
        link.follow_path(socket);
        link
    }

    /// Moves a socket still watching on BBR to the loss-based algorithm
    /// when a sibling has found the path clean.
    fn follow_path(&mut self, socket: &impl AsFd) {
        if self.path.as_ref().is_some_and(PathVerdict::clean) {
            if let Some(m) = self.judge.follow_sibling() {
                tracing::debug!(
                    "congestion control follows a sibling connection to the clean-link algorithm"
                );
                self.apply(socket, m);
            }
        }
    }

    fn apply(&mut self, socket: &impl AsFd, m: Move) {
        let to = match m {
            Move::ToLossBased => &self.loss_based,
            Move::BackToBbr => &self.bbr,
        };
        if socket2::SockRef::from(socket)
            .set_tcp_congestion(to.as_bytes())
            .is_err()
        {
            self.judge.give_up();
        }
    }

    /// What to tell the receiver now ([`Judge::report`]).
    pub fn report(&self) -> Option<LinkReport> {
        self.judge.report(self.since.elapsed())
    }

    /// Bytes are going out on `socket`: samples its counters when due and
    /// moves its algorithm as the judge says. A socket that cannot be read
    /// or changed ends the judging, leaving the algorithm it has.
    pub fn sending(&mut self, socket: &impl AsFd) {
        let at = self.since.elapsed();
        if !self.judge.due(at) {
            return;
        }
        self.follow_path(socket);
        let Ok(c) = counters(socket) else {
            return self.judge.give_up();
        };
        let moved = self.judge.sample(at, c);
        if let Some(p) = &self.path {
            match moved {
                Some(Move::BackToBbr) => p.set(false, false),
                // Said while trying, not only once held: a second
                // connection is opened about when a first one's try
                // begins, and it must not start on BBR beside it.
                _ if self.judge.on_loss_based_now() => p.set(true, self.judge.fills_link()),
                _ => {}
            }
        }
        if let Some(m) = moved {
            tracing::debug!(
                ?m,
                at_ms = at.as_millis() as u64,
                fills_link = self.judge.fills_link(),
                "congestion control moves"
            );
            self.apply(socket, m);
        }
    }
}

#[cfg(test)]
mod tests;
