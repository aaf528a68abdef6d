use super::*;
use proptest::prelude::*;

const MB: f64 = 1e6;

/// Feeds `ticks` samples every TICK from `at`, each interval carrying
/// `rate` bytes/s and `lost` retransmissions; the moves made, with when.
fn feed(
    j: &mut Judge,
    at: &mut Duration,
    c: &mut Counters,
    ticks: usize,
    rate: f64,
    lost: u32,
) -> Vec<(Duration, Move)> {
    let mut moves = Vec::new();
    for _ in 0..ticks {
        *at += TICK;
        c.acked += (rate * TICK.as_secs_f64()) as u64;
        c.retransmitted += lost;
        if let Some(m) = j.sample(*at, *c) {
            moves.push((*at, m));
        }
    }
    moves
}

fn start() -> (Judge, Duration, Counters) {
    let mut j = Judge::default();
    let c = Counters {
        acked: 0,
        retransmitted: 0,
        busy_us: 0,
        buffer_limited_us: 0,
    };
    assert_eq!(j.sample(Duration::ZERO, c), None);
    (j, Duration::ZERO, c)
}

#[test]
fn a_clean_link_moves_to_cubic_after_start_up_and_stays() {
    let (mut j, mut at, mut c) = start();
    // Start-up overshoots the router's buffer: a burst of losses.
    assert!(feed(&mut j, &mut at, &mut c, 2, 20.0 * MB, 400).is_empty());
    let moves = feed(&mut j, &mut at, &mut c, 6, 24.0 * MB, 0);
    // The first 2 s without loss end 3 s in.
    assert_eq!(moves, vec![(Duration::from_secs(3), Move::ToLossBased)]);
    // CUBIC holds the rate (a loss now and then at the buffer): no move.
    assert!(feed(&mut j, &mut at, &mut c, 60, 24.5 * MB, 1).is_empty());
    assert!(!j.done());
}

#[test]
fn random_loss_keeps_bbr() {
    let (mut j, mut at, mut c) = start();
    // 0.1% of 16,000 segments a second: about 8 per half second.
    assert!(feed(&mut j, &mut at, &mut c, 120, 22.0 * MB, 8).is_empty());
    // One clean half second in two seconds is not enough.
    for _ in 0..30 {
        assert!(feed(&mut j, &mut at, &mut c, 3, 22.0 * MB, 3).is_empty());
        assert!(feed(&mut j, &mut at, &mut c, 1, 22.0 * MB, 0).is_empty());
    }
}

#[test]
fn bursts_of_overshoot_between_clean_half_seconds_still_move() {
    let (mut j, mut at, mut c) = start();
    assert!(feed(&mut j, &mut at, &mut c, 2, 20.0 * MB, 400).is_empty());
    let mut moves = Vec::new();
    for _ in 0..3 {
        moves.extend(feed(&mut j, &mut at, &mut c, 1, 24.0 * MB, 120));
        moves.extend(feed(&mut j, &mut at, &mut c, 1, 24.0 * MB, 0));
    }
    assert_eq!(moves, vec![(Duration::from_secs(3), Move::ToLossBased)]);
}

#[test]
fn a_try_that_loses_rate_goes_back_to_bbr_and_rests() {
    let (mut j, mut at, mut c) = start();
    // Moved 3 s in; under CUBIC random loss halves the rate: back after 2 s.
    let moves = feed(&mut j, &mut at, &mut c, 6, 10.0 * MB, 0);
    assert_eq!(moves.len(), 1);
    let back = feed(&mut j, &mut at, &mut c, 4, 5.0 * MB, 40);
    assert_eq!(back, vec![(at, Move::BackToBbr)]);
    // 10 s on BBR, then 2 s watched: the next try; after it fails, 20 s.
    let back_at = at;
    let again = feed(&mut j, &mut at, &mut c, 24, 10.0 * MB, 0);
    assert_eq!(
        again,
        vec![(back_at + Duration::from_secs(12), Move::ToLossBased)]
    );
    let back = feed(&mut j, &mut at, &mut c, 4, 5.0 * MB, 40);
    assert_eq!(back, vec![(at, Move::BackToBbr)]);
    let back_at = at;
    let again = feed(&mut j, &mut at, &mut c, 44, 10.0 * MB, 0);
    assert_eq!(
        again,
        vec![(back_at + Duration::from_secs(22), Move::ToLossBased)]
    );
    j.give_up();
    assert!(j.done() && !j.due(at + Duration::from_secs(600)));
}

#[test]
fn a_connection_starting_on_cubic_goes_back_only_on_random_loss() {
    let mut j = Judge::on_loss_based();
    assert!(j.holds_loss_based());
    let (mut at, mut c) = (
        Duration::ZERO,
        Counters {
            acked: 0,
            retransmitted: 0,
            busy_us: 0,
            buffer_limited_us: 0,
        },
    );
    assert_eq!(j.sample(at, c), None);
    // Bursts as the buffer fills beside a sibling: it stays.
    for _ in 0..10 {
        assert!(feed(&mut j, &mut at, &mut c, 3, 12.0 * MB, 0).is_empty());
        assert!(feed(&mut j, &mut at, &mut c, 1, 12.0 * MB, 50).is_empty());
    }
    // Loss in every half second: back to BBR.
    let back = feed(&mut j, &mut at, &mut c, 4, 12.0 * MB, 5);
    assert_eq!(
        back.iter().map(|m| m.1).collect::<Vec<_>>(),
        [Move::BackToBbr]
    );
    assert!(!j.holds_loss_based());
}

#[test]
fn another_flow_taking_its_share_is_not_loss() {
    let (mut j, mut at, mut c) = start();
    assert_eq!(feed(&mut j, &mut at, &mut c, 6, 24.0 * MB, 0).len(), 1);
    // A second connection joins: the rate halves, a burst of losses as the
    // buffer fills, then clean half seconds.
    let mut moves = feed(&mut j, &mut at, &mut c, 1, 14.0 * MB, 60);
    for _ in 0..20 {
        moves.extend(feed(&mut j, &mut at, &mut c, 3, 12.0 * MB, 0));
        moves.extend(feed(&mut j, &mut at, &mut c, 1, 12.0 * MB, 30));
    }
    assert!(moves.is_empty(), "{moves:?}");
}

#[test]
fn loss_that_later_costs_cubic_its_rate_goes_back_but_a_slower_sender_does_not() {
    let (mut j, mut at, mut c) = start();
    assert_eq!(feed(&mut j, &mut at, &mut c, 10, 10.0 * MB, 0).len(), 1);
    assert!(feed(&mut j, &mut at, &mut c, 8, 10.0 * MB, 0).is_empty());
    // The sender slows (a slow disk, a receiver's window): no loss, no move.
    assert!(feed(&mut j, &mut at, &mut c, 20, 3.0 * MB, 0).is_empty());
    // Loss appears and the rate falls with it.
    let back = feed(&mut j, &mut at, &mut c, 4, 6.0 * MB, 5);
    assert_eq!(
        back.iter().map(|m| m.1).collect::<Vec<_>>(),
        [Move::BackToBbr]
    );
}

#[test]
fn an_idle_gap_is_not_a_rate() {
    // 2.5 s of clean samples, then the connection idles 5 s: the window
    // starts again after the gap.
    let (mut j, mut at, mut c) = start();
    assert!(feed(&mut j, &mut at, &mut c, 5, 10.0 * MB, 0).is_empty());
    at += Duration::from_secs(5);
    assert_eq!(j.sample(at, c), None);
    assert!(feed(&mut j, &mut at, &mut c, 3, 10.0 * MB, 0).is_empty());
    assert_eq!(feed(&mut j, &mut at, &mut c, 1, 10.0 * MB, 0).len(), 1);
}

#[test]
fn an_unsteady_rate_is_not_judged() {
    let (mut j, mut at, mut c) = start();
    for _ in 0..20 {
        assert!(feed(&mut j, &mut at, &mut c, 1, 10.0 * MB, 0).is_empty());
        assert!(feed(&mut j, &mut at, &mut c, 1, 2.0 * MB, 0).is_empty());
    }
}

proptest! {
    /// Over any samples: no move in start-up; a move to the loss-based
    /// algorithm only after a 2 s window half free of loss; moves alternate.
    #[test]
    fn moves_are_few_and_in_order(
        steps in prop::collection::vec((0u64..1500, 0u64..40_000_000, 0u32..20, any::<bool>()), 1..200)
    ) {
        let mut j = Judge::default();
        let (mut at, mut c) = (Duration::ZERO, Counters { acked: 0, retransmitted: 0, busy_us: 0, buffer_limited_us: 0 });
        let mut moves = Vec::new();
        let mut recent: VecDeque<u32> = VecDeque::new();
        for (gap_ms, bytes, lost, clean) in steps {
            at += Duration::from_millis(gap_ms);
            c.acked += bytes;
            let lost = if clean { 0 } else { lost };
            c.retransmitted += lost;
            recent.push_back(lost);
            if let Some(m) = j.sample(at, c) {
                if m == Move::ToLossBased {
                    prop_assert!(at >= START_UP);
                    let clean = recent.iter().rev().take(WINDOW).filter(|l| **l == 0).count();
                    prop_assert!(2 * clean >= WINDOW);
                }
                moves.push(m);
            }
        }
        // Moves alternate, starting with the move to the loss-based one.
        for (i, m) in moves.iter().enumerate() {
            let want = if i % 2 == 0 { Move::ToLossBased } else { Move::BackToBbr };
            prop_assert_eq!(*m, want, "{:?}", moves);
        }
    }
}

#[test]
fn a_connection_watching_follows_a_sibling_that_found_the_path_clean() {
    let (mut j, mut at, mut c) = start();
    // Opened beside the first, its bytes so far on BBR.
    assert!(feed(&mut j, &mut at, &mut c, 2, 3.0 * MB, 0).is_empty());
    assert_eq!(j.follow_sibling(), Some(Move::ToLossBased));
    assert!(j.on_loss_based_now() && j.holds_loss_based());
    // Following is said once; then it is judged as one started on CUBIC
    // (afresh: the first sample after is only a start).
    assert_eq!(j.follow_sibling(), None);
    assert_eq!(
        feed(&mut j, &mut at, &mut c, 5, 12.0 * MB, 5)
            .iter()
            .map(|m| m.1)
            .collect::<Vec<_>>(),
        [Move::BackToBbr]
    );
    // Resting after a move back (the path was lossy for it): it does not
    // follow, and its rest is not shortened by the sibling's verdict.
    assert_eq!(j.follow_sibling(), None);
    assert!(!j.on_loss_based_now());
}

#[test]
fn a_connection_trying_cubic_says_so_to_its_siblings() {
    let (mut j, mut at, mut c) = start();
    assert!(!j.on_loss_based_now());
    let moves = feed(&mut j, &mut at, &mut c, 6, 24.0 * MB, 0);
    assert_eq!(moves.len(), 1);
    // Trying, not yet held: siblings already follow.
    assert!(j.on_loss_based_now() && !j.holds_loss_based());
    assert_eq!(j.follow_sibling(), None);
}

/// Feeds `ticks` samples of a clean 24 MB/s flow that spends `held` of
/// each interval's busy time held back by a buffer; whether it was moved.
fn feed_held(j: &mut Judge, at: &mut Duration, c: &mut Counters, ticks: usize, held: f64) -> bool {
    let mut moved = false;
    for _ in 0..ticks {
        *at += TICK;
        c.acked += (24.0 * MB * TICK.as_secs_f64()) as u64;
        let busy = TICK.as_micros() as u64;
        c.busy_us += busy;
        c.buffer_limited_us += (busy as f64 * held) as u64;
        moved |= j.sample(*at, *c).is_some();
    }
    moved
}

#[test]
fn one_flow_fills_a_clean_link_only_when_no_buffer_holds_it_back() {
    for (held, fills) in [(0.0, true), (0.05, true), (0.5, false)] {
        let (mut j, mut at, mut c) = start();
        assert!(!j.fills_link(), "not before a verdict");
        assert!(feed_held(&mut j, &mut at, &mut c, 8, held));
        assert_eq!(j.fills_link(), fills, "held back {held} of the time");
    }
    // A kernel without the counters (busy time 0): not known to fill.
    let (mut j, mut at, mut c) = start();
    assert_eq!(feed(&mut j, &mut at, &mut c, 8, 24.0 * MB, 0).len(), 1);
    assert!(j.on_loss_based_now() && !j.fills_link());
    // Random loss: BBR stays, and it is not said to fill (a second flow
    // may add its share).
    let (mut j, mut at, mut c) = start();
    for _ in 0..40 {
        c.retransmitted += 8;
        feed_held(&mut j, &mut at, &mut c, 1, 0.0);
    }
    assert!(!j.on_loss_based_now() && !j.fills_link());
}

#[test]
fn the_receiver_is_told_judging_then_fills_on_a_clean_link() {
    assert_eq!(Judge::default().report(TICK), None, "nothing sampled");
    let (mut j, mut at, mut c) = start();
    assert_eq!(j.report(at), Some(LinkReport::Judging));
    // BBR's start-up, its overshoot's burst of losses included.
    c.retransmitted += 400;
    feed_held(&mut j, &mut at, &mut c, 4, 0.0);
    assert_eq!(j.report(at), Some(LinkReport::Judging));
    assert!(feed_held(&mut j, &mut at, &mut c, 2, 0.0), "moved at 3 s");
    assert_eq!(j.report(at), Some(LinkReport::Fills));
    // Held back by a buffer: no longer said to fill, and past judging.
    feed_held(&mut j, &mut at, &mut c, 8, 0.5);
    assert_eq!(j.report(at), None);
}

#[test]
fn the_receiver_is_told_nothing_once_the_link_shows_random_loss() {
    let (mut j, mut at, mut c) = start();
    for i in 1..=6 {
        c.retransmitted += 8;
        feed_held(&mut j, &mut at, &mut c, 1, 0.0);
        // A window of random loss, 2 s in: said at once, not at 5 s.
        let want = (i < 4).then_some(LinkReport::Judging);
        assert_eq!(j.report(at), want, "at {at:?}");
    }

    // An unsteady rate, no loss: judging, at most 5 s from the first sample.
    let (mut j, mut at, mut c) = start();
    for i in 0..12 {
        let rate = if i % 2 == 0 { 5.0 } else { 24.0 } * MB;
        feed(&mut j, &mut at, &mut c, 1, rate, 0);
        let want = (at < Duration::from_secs(5)).then_some(LinkReport::Judging);
        assert_eq!(j.report(at), want, "at {at:?}");
    }
}

#[test]
fn link_reports_read_back() {
    for r in [LinkReport::Judging, LinkReport::Fills] {
        assert_eq!(LinkReport::parse(r.as_str()), Some(r));
        assert_eq!(LinkReport::parse(&format!(" {} ", r.as_str())), Some(r));
    }
    assert_eq!(LinkReport::parse("FILLS"), None);
    assert_eq!(LinkReport::parse(""), None);
}
