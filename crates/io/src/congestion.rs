//! TCP congestion control for the sockets we send on (TCP_CONGESTION).
//!
//! Whoever sends picks the algorithm. A loss-based one (CUBIC, the usual
//! system default) caps one flow at about MSS/RTT·1.22/√p, a few percent of
//! a long link with a little random loss; BBR paces at the measured
//! bottleneck rate and shrugs off random loss. So the server (the sender of
//! downloads) and the client (the sender of uploads) ask for BBR when the
//! kernel offers it, and otherwise keep the system default: a missing module
//! or a namespace that does not allow it is not an error (the start line
//! says what was passed over and why).
//!
//! [`settle`] is the decision (sans-IO, given the kernel's list and a probe);
//! [`Congestion::resolve`] reads the list once and probes one socket per
//! name, so a choice that cannot be set (EPERM/ENOENT) is passed over at
//! startup instead of failing per connection; [`Congestion::apply`] sets it
//! on a socket.

use std::io;
use std::os::fd::AsFd;
use std::sync::Arc;

use crate::clean_link::{CleanLink, PathVerdict};

/// What the operator asked for: algorithms to try in order, and whether the
/// system default may stand in when none of them can be had.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    names: Vec<String>,
    or_system: bool,
    /// `auto`: a connection on BBR moves to CUBIC on a clean link
    /// ([`crate::clean_link`]).
    clean_link: bool,
}

/// The algorithm the default request tries first.
pub const PREFERRED: &str = "bbr";

/// The loss-based algorithm a connection on BBR moves to on a clean link.
pub const LOSS_BASED: &str = "cubic";

/// At most this many names in one request (a typo-sized list, not a config).
const MAX_NAMES: usize = 8;

impl Default for Request {
    /// `auto`: BBR when the kernel offers and allows it, else the system
    /// default without a word; a connection on BBR moves to CUBIC once its
    /// link shows no random loss ([`crate::clean_link`]).
    fn default() -> Request {
        Request {
            names: vec![PREFERRED.to_string()],
            or_system: true,
            clean_link: true,
        }
    }
}

impl Request {
    /// Leave sockets alone: the system default (`net.ipv4.tcp_congestion_control`).
    pub fn system() -> Request {
        Request {
            names: Vec::new(),
            or_system: true,
            clean_link: false,
        }
    }

    /// This algorithm or an error at startup.
    pub fn named(name: &str) -> Request {
        Request {
            names: vec![name.to_ascii_lowercase()],
            or_system: false,
            clean_link: false,
        }
    }

    /// `auto` (the default), `system`, an algorithm's name (`bbr`, `cubic`,
    /// `reno`, …), or names to try in order separated by commas, ending in
    /// `system` when the system default may stand in (`bbr,system`: `auto`
    /// without the move to CUBIC on a clean link). Named algorithms are
    /// kept for a connection's life.
    pub fn parse(s: &str) -> Result<Request, String> {
        if s.trim().eq_ignore_ascii_case("auto") {
            return Ok(Request::default());
        }
        let mut names = Vec::new();
        let mut or_system = false;
        for part in s.split(',').map(str::trim) {
            if or_system {
                return Err(format!(
                    "{s:?}: \"system\" must come last (it is the fallback)"
                ));
            }
            if part.eq_ignore_ascii_case("system") {
                or_system = true;
                continue;
            }
            if part.eq_ignore_ascii_case("auto") {
                return Err(format!("{s:?}: \"auto\" stands alone"));
            }
            if part.is_empty()
                || part.len() > 15
                || !part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            {
                return Err(format!(
                    "{part:?} is not a congestion control name (or \"system\")"
                ));
            }
            names.push(part.to_ascii_lowercase());
        }
        if names.len() > MAX_NAMES {
            return Err(format!("{s:?}: at most {MAX_NAMES} names"));
        }
        Ok(Request {
            names,
            or_system,
            clean_link: false,
        })
    }
}

/// The decision: the name to set on sockets (`None`: the system default)
/// and the names passed over on the way, each with why (for the start line).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Settled<'a> {
    /// The algorithm to set; `None` keeps the system default.
    pub name: Option<&'a str>,
    /// The names tried before it and why each could not be had.
    pub passed_over: Vec<(&'a str, String)>,
}

/// Try the request's names in order: one the kernel does not list in
/// `available` (`/proc/sys/net/ipv4/tcp_available_congestion_control`) is
/// passed over without a probe; one it lists is `probe`d (set on one
/// socket), and a refusal (a user or namespace not allowed it: EPERM; a
/// module gone: ENOENT) passes it over too. When none is left the system
/// default stands in if the request ends in `system`; otherwise it is an
/// error, said once at startup instead of per connection.
pub fn settle<'a>(
    request: &'a Request,
    available: &str,
    mut probe: impl FnMut(&str) -> io::Result<()>,
) -> Result<Settled<'a>, Unavailable> {
    let offered = |name: &str| available.split_ascii_whitespace().any(|a| a == name);
    let mut passed_over = Vec::new();
    for name in &request.names {
        let why = if !offered(name) {
            format!(
                "the kernel offers {:?} (modprobe tcp_{name}?)",
                available.trim()
            )
        } else {
            match probe(name) {
                Ok(()) => {
                    return Ok(Settled {
                        name: Some(name),
                        passed_over,
                    })
                }
                Err(e) if is_not_allowed(&e) => {
                    "not allowed here (net.ipv4.tcp_allowed_congestion_control)".to_string()
                }
                Err(e) => e.to_string(),
            }
        };
        passed_over.push((name.as_str(), why));
    }
    if request.or_system {
        return Ok(Settled {
            name: None,
            passed_over,
        });
    }
    let (names, reasons): (Vec<&str>, Vec<String>) = passed_over.into_iter().unzip();
    Err(Unavailable {
        name: names.join(","),
        reason: reasons.join("; "),
    })
}

/// No algorithm of a request without the `system` fallback could be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("congestion control {name:?} is not available: {reason}")]
pub struct Unavailable {
    /// The algorithm(s) asked for.
    pub name: String,
    /// Why not (one reason per name).
    pub reason: String,
}

/// Whether a failed probe means "not allowed here" (or not loadable by us)
/// rather than something else going wrong.
pub fn is_not_allowed(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(code) if code == rustix::io::Errno::PERM.raw_os_error()
        || code == rustix::io::Errno::NOENT.raw_os_error()
        || code == rustix::io::Errno::ACCESS.raw_os_error())
}

/// The resolved choice, cheap to clone and apply per socket.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Congestion {
    name: Option<Arc<str>>,
    system: Arc<str>,
    /// `cubic: not allowed here …`, the names passed over on the way.
    passed_over: Option<Arc<str>>,
    /// The loss-based algorithm a connection on BBR moves to on a clean
    /// link (`auto`, when the kernel offers and allows it).
    clean_link: Option<Arc<str>>,
}

const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
const DEFAULT: &str = "/proc/sys/net/ipv4/tcp_congestion_control";

impl Congestion {
    /// Leave every socket with the system default.
    pub fn system() -> Congestion {
        Congestion::default()
    }

    /// Reads the kernel's list once and [`settle`]s the request, probing
    /// one socket per name the kernel lists.
    pub fn resolve(request: &Request) -> Result<Congestion, Unavailable> {
        let available = std::fs::read_to_string(AVAILABLE).unwrap_or_default();
        let system: Arc<str> = std::fs::read_to_string(DEFAULT)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
            .into();
        let settled = settle(request, &available, probe)?;
        let passed_over = (!settled.passed_over.is_empty()).then(|| {
            let each: Vec<String> = settled
                .passed_over
                .iter()
                .map(|(name, why)| format!("{name}: {why}"))
                .collect();
            each.join("; ").into()
        });
        let clean_link = (request.clean_link
            && settled.name == Some(PREFERRED)
            && available.split_ascii_whitespace().any(|a| a == LOSS_BASED)
            && probe(LOSS_BASED).is_ok())
        .then(|| LOSS_BASED.into());
        Ok(Congestion {
            name: settled.name.map(Into::into),
            system,
            passed_over,
            clean_link,
        })
    }

    /// The name set on sockets, `None` for the system default.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// For the start line: `bbr`, or `system (cubic)`, then what was
    /// passed over and why (`; passed over bbr: not allowed here …`).
    pub fn describe(&self) -> String {
        let chosen = match (&self.name, &self.clean_link) {
            (Some(n), Some(c)) => format!("{n}, {c} once a link shows no random loss"),
            (Some(n), None) => n.to_string(),
            (None, _) if self.system.is_empty() => "system".to_string(),
            (None, _) => format!("system ({})", self.system),
        };
        match &self.passed_over {
            Some(why) => format!("{chosen}; passed over {why}"),
            None => chosen,
        }
    }

    /// Sets the algorithm on a TCP socket. Failure leaves the socket with
    /// the system default: the probe at startup already told the operator.
    pub fn apply(&self, socket: &impl AsFd) {
        if let Some(name) = &self.name {
            let _ = socket2::SockRef::from(socket).set_tcp_congestion(name.as_bytes());
        }
    }

    /// Under `auto`, a [`CleanLink`] watch for a socket [`apply`](Self::apply)
    /// set to BBR (read back: a socket left on the system default is not
    /// watched), to be told as bytes go out on it; `path`: what the other
    /// connections to the same peer found (a client's, not a server's).
    pub fn watch(&self, socket: &impl AsFd, path: Option<&PathVerdict>) -> Option<CleanLink> {
        let (name, to) = (self.name.as_ref()?, self.clean_link.as_ref()?);
        (current(socket).ok()? == **name)
            .then(|| CleanLink::new(socket, name.clone(), to.clone(), path.cloned()))
    }
}

/// The algorithm a TCP socket uses (TCP_CONGESTION read back).
pub fn current(socket: &impl AsFd) -> io::Result<String> {
    let raw = socket2::SockRef::from(socket).tcp_congestion()?;
    let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
    Ok(String::from_utf8_lossy(&raw[..end]).into_owned())
}

fn probe(name: &str) -> io::Result<()> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.set_tcp_congestion(name.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errno(e: rustix::io::Errno) -> io::Error {
        io::Error::from_raw_os_error(e.raw_os_error())
    }

    /// A probe that must not be called.
    fn untouched(_: &str) -> io::Result<()> {
        panic!("probed")
    }

    fn ok(_: &str) -> io::Result<()> {
        Ok(())
    }

    #[test]
    fn the_default_is_bbr_when_offered_else_the_system_default() {
        let d = Request::default();
        assert_eq!(d, Request::parse("auto").unwrap());
        // Named, the algorithms are kept: no move on a clean link.
        assert!(d.clean_link && !Request::parse("bbr,system").unwrap().clean_link);
        assert_eq!(
            settle(&d, "reno cubic bbr\n", ok).unwrap().name,
            Some("bbr")
        );
        let without = settle(&d, "reno cubic\n", untouched).unwrap();
        assert_eq!(without.name, None);
        assert_eq!(without.passed_over.len(), 1);
        assert!(without.passed_over[0].1.contains("modprobe tcp_bbr"));
        assert_eq!(settle(&d, "", untouched).unwrap().name, None);
        // A name that merely contains "bbr" is not it.
        assert_eq!(settle(&d, "reno bbr2x", untouched).unwrap().name, None);
    }

    #[test]
    fn system_sets_nothing_and_a_single_name_must_be_had() {
        let system = Request::system();
        let sys = settle(&system, "reno bbr", untouched).unwrap();
        assert_eq!(sys, Settled::default());
        let reno = Request::named("reno");
        assert_eq!(settle(&reno, "reno cubic", ok).unwrap().name, Some("reno"));
        let err = settle(&Request::named("bbr"), "reno cubic", untouched).unwrap_err();
        assert_eq!(err.name, "bbr");
        assert!(err.to_string().contains("modprobe tcp_bbr"), "{err}");
    }

    #[test]
    fn a_refused_probe_passes_the_name_over() {
        let eperm = |_: &str| Err(errno(rustix::io::Errno::PERM));
        let enoent = |_: &str| Err(errno(rustix::io::Errno::NOENT));
        let d = Request::default();
        for refusal in [eperm, enoent] {
            let s = settle(&d, "reno cubic bbr", refusal).unwrap();
            assert_eq!(s.name, None);
            assert_eq!(s.passed_over[0].0, "bbr");
            assert!(s.passed_over[0].1.contains("not allowed here"), "{s:?}");
        }
        let err = settle(&Request::named("cubic"), "reno cubic bbr", eperm).unwrap_err();
        assert!(err.reason.contains("not allowed here"), "{err}");
        // Another failure is named as it is.
        let inval = |_: &str| Err(errno(rustix::io::Errno::INVAL));
        let err = settle(&Request::named("cubic"), "cubic", inval).unwrap_err();
        assert!(!err.reason.contains("not allowed"), "{err}");
    }

    #[test]
    fn names_are_tried_in_order_until_one_is_had() {
        let r = Request::parse("bbr2, BBR ,cubic").unwrap();
        // bbr2 not offered, bbr refused, cubic set.
        let probe = |n: &str| match n {
            "bbr" => Err(errno(rustix::io::Errno::PERM)),
            _ => Ok(()),
        };
        let s = settle(&r, "reno cubic bbr", probe).unwrap();
        assert_eq!(s.name, Some("cubic"));
        let over: Vec<&str> = s.passed_over.iter().map(|p| p.0).collect();
        assert_eq!(over, ["bbr2", "bbr"]);
        // Without `system` at the end, none had is an error naming each.
        let err = settle(&r, "reno", untouched).unwrap_err();
        assert_eq!(err.name, "bbr2,bbr,cubic");
        assert_eq!(err.reason.matches("modprobe").count(), 3, "{err}");
    }

    #[test]
    fn parse_names() {
        assert_eq!(Request::parse("system"), Ok(Request::system()));
        assert_eq!(Request::parse("BBR"), Ok(Request::named("bbr")));
        assert!(Request::parse("").is_err());
        assert!(Request::parse("bbr cubic").is_err());
        assert!(Request::parse("bbr,,system").is_err());
        assert!(Request::parse("averyveryverylongname").is_err());
        let err = Request::parse("system,bbr").unwrap_err();
        assert!(err.contains("must come last"), "{err}");
        assert!(Request::parse("a,b,c,d,e,f,g,h,i").is_err());
        assert_eq!(Request::parse(" AUTO "), Ok(Request::default()));
        assert!(Request::parse("auto,system").is_err());
    }

    proptest::proptest! {
        /// Whatever the kernel offers and refuses, the choice is the first
        /// name both offered and accepted, and every name before it is
        /// passed over with a reason.
        #[test]
        fn the_first_name_had_wins(
            names in proptest::collection::vec("[a-d]", 1..5),
            offered in proptest::collection::vec("[a-d]", 0..5),
            refused in proptest::collection::vec("[a-d]", 0..3),
            or_system: bool,
        ) {
            let request = Request { names: names.clone(), or_system, clean_link: false };
            let available = offered.join(" ");
            let probe = |n: &str| if refused.iter().any(|r| r == n) {
                Err(errno(rustix::io::Errno::PERM))
            } else {
                Ok(())
            };
            let had = |n: &String| offered.contains(n) && !refused.contains(n);
            let want = names.iter().position(had);
            match settle(&request, &available, probe) {
                Ok(s) => {
                    proptest::prop_assert_eq!(s.name, want.map(|i| names[i].as_str()));
                    proptest::prop_assert_eq!(s.passed_over.len(), want.unwrap_or(names.len()));
                    proptest::prop_assert!(want.is_some() || or_system);
                }
                Err(e) => {
                    proptest::prop_assert!(want.is_none() && !or_system);
                    proptest::prop_assert_eq!(e.name, names.join(","));
                }
            }
        }
    }

    #[test]
    fn not_allowed_errors_are_recognised() {
        let perm = io::Error::from_raw_os_error(rustix::io::Errno::PERM.raw_os_error());
        let noent = io::Error::from_raw_os_error(rustix::io::Errno::NOENT.raw_os_error());
        let other = io::Error::from_raw_os_error(rustix::io::Errno::INVAL.raw_os_error());
        assert!(is_not_allowed(&perm) && is_not_allowed(&noent));
        assert!(!is_not_allowed(&other));
    }

    #[test]
    fn describe_says_what_is_in_use() {
        let sys = Congestion {
            name: None,
            system: "cubic".into(),
            passed_over: None,
            clean_link: None,
        };
        assert_eq!(sys.describe(), "system (cubic)");
        let bbr = Congestion {
            name: Some("bbr".into()),
            system: "cubic".into(),
            passed_over: None,
            clean_link: None,
        };
        assert_eq!(bbr.describe(), "bbr");
        let auto = Congestion {
            clean_link: Some("cubic".into()),
            ..bbr
        };
        assert_eq!(
            auto.describe(),
            "bbr, cubic once a link shows no random loss"
        );
        let fell_back = Congestion {
            name: None,
            system: "cubic".into(),
            passed_over: Some("bbr: not allowed here".into()),
            clean_link: None,
        };
        assert_eq!(
            fell_back.describe(),
            "system (cubic); passed over bbr: not allowed here"
        );
    }

    /// The chosen algorithm is visible on both ends of a real connection
    /// (reno: always built in, never the system default we would see anyway
    /// where the default is bbr or cubic).
    #[test]
    fn applied_algorithm_reads_back_on_the_socket() {
        let cc = Congestion::resolve(&Request::named("reno")).expect("reno is always offered");
        assert_eq!(cc.name(), Some("reno"));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        cc.apply(&accepted);
        cc.apply(&client);
        assert_eq!(current(&accepted).unwrap(), "reno");
        assert_eq!(current(&client).unwrap(), "reno");
        // System leaves the socket with whatever the namespace's default is.
        let system = std::fs::read_to_string(DEFAULT).unwrap();
        let (fresh, _) = {
            let _c = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            listener.accept().unwrap()
        };
        Congestion::system().apply(&fresh);
        assert_eq!(current(&fresh).unwrap(), system.trim());
    }
}
