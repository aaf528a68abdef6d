//! Progress for people: one [`Meter`] per command counts the bytes that
//! went by on one clock, and both the bar (when stderr is a terminal) and
//! the summary line read their rate from it, so they agree. Sizes and
//! rates are in binary units everywhere (`human_size`, the server's too).
//!
//! The bar's states: a spinner while connecting (no `0 B/0 B` full bar
//! before the size is known); a bar once the size is known; a spinner with
//! bytes and rate when it never is (stdin); `finishing…` after the last
//! byte until the server's answer (it syncs the file to disk then).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressState, ProgressStyle};
use wirespeed_client::transfer::TransferProgress;
pub use wirespeed_units::human_size;

/// Bytes per second for people: `12.5 MiB/s` (sans-IO, for tests).
pub fn rate_text(bytes: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64();
    if secs <= 0.0 {
        return "- /s".to_string();
    }
    format!("{}/s", human_size((bytes as f64 / secs) as u64))
}

/// What the bar's size column shows: `1.5 MiB/10 MiB`, or `1.5 MiB` when
/// the total is not known.
pub fn sizes_text(pos: u64, len: Option<u64>) -> String {
    match len {
        Some(len) => format!("{}/{}", human_size(pos), human_size(len)),
        None => human_size(pos),
    }
}

/// Bytes moved by this run and the clock they are measured on (started by
/// the first transfer's start, so connecting is not counted).
#[derive(Default)]
pub struct Meter {
    bytes: AtomicU64,
    since: Mutex<Option<Instant>>,
}

impl Meter {
    fn begin(&self) {
        let mut since = self.since.lock().unwrap_or_else(|e| e.into_inner());
        since.get_or_insert_with(Instant::now);
    }

    fn elapsed(&self) -> Duration {
        let since = *self.since.lock().unwrap_or_else(|e| e.into_inner());
        since.map_or(Duration::ZERO, |s| s.elapsed())
    }

    /// Bytes moved so far (a resumed part not included).
    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// The average rate so far, as the bar shows it.
    pub fn rate(&self) -> String {
        rate_text(self.bytes(), self.elapsed())
    }
}

/// The bar on screen, if any, so that notices print above it.
static SHOWN: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Print `msg` on stderr, above the bar if one is drawn (a line printed
/// under it would be overwritten, or tear it).
pub fn say(msg: &str) {
    let shown = SHOWN.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match shown {
        Some(bar) => bar.suspend(|| eprintln!("{msg}")),
        None => eprintln!("{msg}"),
    }
}

/// Print `line` on stdout, above the bar if one is drawn (stdout and
/// stderr are often the same terminal).
pub fn print_above(line: &str) {
    let shown = SHOWN.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match shown {
        Some(bar) => bar.suspend(|| outln!("{line}")),
        None => outln!("{line}"),
    }
}

/// One command's progress: the meter, and the bar if there is a terminal.
#[derive(Clone)]
pub struct Progress {
    meter: Arc<Meter>,
    bar: Option<ProgressBar>,
    verb: &'static str,
    /// Many transfers on one bar: their own starts and sizes are ignored.
    shared: bool,
}

impl Progress {
    /// A meter, with a bar on stderr when `show` (a terminal, not -q).
    pub fn new(show: bool, verb: &'static str) -> Progress {
        let meter = Arc::new(Meter::default());
        let bar = show.then(|| {
            let bar = ProgressBar::new_spinner();
            bar.set_style(connecting_style());
            bar.set_message(format!("{verb}: connecting…"));
            bar.enable_steady_tick(Duration::from_millis(120));
            *SHOWN.lock().unwrap_or_else(|e| e.into_inner()) = Some(bar.clone());
            bar
        });
        Progress {
            meter,
            bar,
            verb,
            shared: false,
        }
    }

    /// One bar over `total` bytes for many transfers (a spinner if the
    /// total is not known, 0).
    pub fn shared(show: bool, verb: &'static str, total: u64) -> Progress {
        let mut p = Progress::new(show, verb);
        p.shared = true;
        p.meter.begin();
        if let Some(bar) = &p.bar {
            if total > 0 {
                bar.set_length(total);
                bar.set_style(bar_style(&p.meter));
            } else {
                bar.set_style(spinner_style(&p.meter));
            }
            bar.set_message(verb);
        }
        p
    }

    /// The sink the transfer library reports to.
    pub fn sink(&self) -> Arc<dyn TransferProgress> {
        Arc::new(self.clone())
    }

    pub fn meter(&self) -> &Meter {
        &self.meter
    }

    /// Remove the bar (before the summary is printed).
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
            SHOWN.lock().unwrap_or_else(|e| e.into_inner()).take();
        }
    }
}

impl TransferProgress for Progress {
    fn start(&self, total: Option<u64>, already: u64) {
        self.meter.begin();
        if self.shared {
            return;
        }
        let Some(bar) = &self.bar else { return };
        // Style and size first: each change may draw a frame.
        match total {
            Some(t) => {
                bar.set_style(bar_style(&self.meter));
                bar.set_length(t);
            }
            None => bar.set_style(spinner_style(&self.meter)),
        }
        bar.set_position(already);
        bar.reset_eta();
        bar.set_message(self.verb);
    }

    fn advance(&self, n: u64) {
        self.meter.bytes.fetch_add(n, Ordering::Relaxed);
        let Some(bar) = &self.bar else { return };
        bar.inc(n);
        if bar
            .length()
            .is_some_and(|len| len > 0 && bar.position() >= len)
        {
            self.finishing();
        }
    }

    fn finishing(&self) {
        // The server answers once the file is synced and renamed.
        if let Some(bar) = &self.bar {
            bar.set_message("finishing…");
        }
    }
}

/// `{sizes}` and `{rate}`, read from the meter the summary reads too.
fn with_keys(style: ProgressStyle, meter: &Arc<Meter>) -> ProgressStyle {
    let m = meter.clone();
    style
        .with_key("sizes", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = w.write_str(&sizes_text(s.pos(), s.len()));
        })
        .with_key(
            "rate",
            move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = w.write_str(&m.rate());
            },
        )
}

fn bar_style(meter: &Arc<Meter>) -> ProgressStyle {
    // At most 79 columns up to 999.9 GiB, "finishing…" included.
    let style = ProgressStyle::with_template("{msg} [{bar:24}] {sizes} {rate} ETA {eta}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    with_keys(style, meter)
}

/// Before the transfer starts: no sizes yet, so none are shown.
fn connecting_style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} {msg} {elapsed}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
}

fn spinner_style(meter: &Arc<Meter>) -> ProgressStyle {
    let style = ProgressStyle::with_template("{spinner} {msg} {sizes} {rate} {elapsed}")
        .unwrap_or_else(|_| ProgressStyle::default_spinner());
    with_keys(style, meter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_unit_system() {
        assert_eq!(sizes_text(0, None), "0 bytes");
        assert_eq!(sizes_text(3 << 20, Some(10 << 20)), "3 MiB/10 MiB");
        assert_eq!(sizes_text(1536, None), "1.5 KiB");
        assert_eq!(rate_text(100 << 20, Duration::from_secs(4)), "25 MiB/s");
        assert_eq!(rate_text(5, Duration::ZERO), "- /s");
    }

    /// The summary's rate is the meter's: bytes this run over its clock,
    /// whatever was resumed.
    #[test]
    fn the_meter_counts_this_runs_bytes_from_the_first_start() {
        let p = Progress::new(false, "get");
        assert_eq!(p.meter().elapsed(), Duration::ZERO);
        p.start(Some(1000), 400);
        p.advance(250);
        p.advance(350);
        assert_eq!(p.meter().bytes(), 600);
        let first = p.meter().elapsed();
        std::thread::sleep(Duration::from_millis(5));
        // A retry's start does not restart the clock.
        p.start(Some(1000), 1000);
        assert!(p.meter().elapsed() > first);
        let shown = rate_text(600, p.meter().elapsed());
        assert!(shown.ends_with("/s") && shown != "- /s", "{shown}");
    }

    fn hidden(verb: &'static str) -> (Progress, ProgressBar) {
        let bar = ProgressBar::with_draw_target(None, indicatif::ProgressDrawTarget::hidden());
        let p = Progress {
            meter: Arc::default(),
            bar: Some(bar.clone()),
            verb,
            shared: false,
        };
        (p, bar)
    }

    /// No full `0 bytes/0 bytes` bar before the size is known; a bar once
    /// it is; `finishing…` after the last byte until the answer.
    #[test]
    fn the_bars_states() {
        let fresh = Progress::new(true, "put");
        assert_eq!(fresh.bar.as_ref().and_then(|b| b.length()), None);
        fresh.finish();

        let (p, bar) = hidden("put");
        p.start(Some(100), 0);
        assert_eq!((bar.length(), bar.message().as_str()), (Some(100), "put"));
        p.advance(99);
        assert_eq!(bar.message(), "put");
        p.advance(1);
        assert_eq!(bar.message(), "finishing…");

        // stdin: the size never comes, so no bar (and no end) is drawn.
        let (p, bar) = hidden("put");
        p.start(None, 0);
        p.advance(1 << 20);
        assert_eq!((bar.length(), bar.position()), (None, 1 << 20));
        assert_eq!(bar.message(), "put");
        p.finishing();
        assert_eq!(bar.message(), "finishing…");
        assert_eq!(p.meter().bytes(), 1 << 20);
    }
}
