//! TCP congestion control for the sockets we send on (TCP_CONGESTION).
//!
//! Whoever sends picks the algorithm. A loss-based one (CUBIC, the usual
//! system default) caps one flow at about MSS/RTT·1.22/√p, a few percent of
//! a long link with a little random loss; BBR paces at the measured
//! bottleneck rate and shrugs off random loss. So the server (the sender of
//! downloads) and the client (the sender of uploads) ask for BBR when the
//! kernel offers it, and otherwise keep the system default without a word:
//! a missing module or a namespace that does not allow it is not an error.
//!
//! [`choose`] is the decision (sans-IO, given the kernel's list);
//! [`Congestion::resolve`] reads the list once and probes one socket, so a
//! choice that cannot be set (EPERM/ENOENT) falls back at startup instead of
//! failing per connection; [`Congestion::apply`] sets it on a socket.

use std::io;
use std::os::fd::AsFd;
use std::sync::Arc;

/// What the operator asked for.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Request {
    /// BBR when the kernel offers it, else the system default.
    #[default]
    Preferred,
    /// Leave sockets alone: the system default (`net.ipv4.tcp_congestion_control`).
    System,
    /// This algorithm; an error at startup when it cannot be had.
    Named(String),
}

/// The algorithm [`Request::Preferred`] picks when it is available.
pub const PREFERRED: &str = "bbr";

impl Request {
    /// `system` or an algorithm's name (`bbr`, `cubic`, `reno`, …).
    pub fn parse(s: &str) -> Result<Request, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("system") {
            return Ok(Request::System);
        }
        if s.is_empty()
            || s.len() > 15
            || !s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err(format!(
                "{s:?} is not a congestion control name (or \"system\")"
            ));
        }
        Ok(Request::Named(s.to_ascii_lowercase()))
    }
}

/// The decision: which name to set on sockets (`None`: the system default).
/// `available` is the kernel's space-separated list
/// (`/proc/sys/net/ipv4/tcp_available_congestion_control`).
pub fn choose<'a>(request: &'a Request, available: &str) -> Result<Option<&'a str>, Unavailable> {
    let offered = |name: &str| available.split_ascii_whitespace().any(|a| a == name);
    match request {
        Request::System => Ok(None),
        Request::Preferred => Ok(offered(PREFERRED).then_some(PREFERRED)),
        Request::Named(name) if offered(name) => Ok(Some(name)),
        Request::Named(name) => Err(Unavailable {
            name: name.clone(),
            reason: format!(
                "the kernel offers {:?} (modprobe tcp_{name}?)",
                available.trim()
            ),
        }),
    }
}

/// [`choose`], then `probe` (setting it on one socket): the preferred
/// choice falls back to the system default when the probe fails (a
/// namespace or user not allowed it: EPERM; a module gone: ENOENT); a named
/// one is an error then, said once at startup.
pub fn settle<'a>(
    request: &'a Request,
    available: &str,
    probe: impl FnOnce(&str) -> io::Result<()>,
) -> Result<Option<&'a str>, Unavailable> {
    let Some(name) = choose(request, available)? else {
        return Ok(None);
    };
    match probe(name) {
        Ok(()) => Ok(Some(name)),
        Err(_) if *request == Request::Preferred => Ok(None),
        Err(e) => Err(Unavailable {
            name: name.to_string(),
            reason: if is_not_allowed(&e) {
                "not allowed here (net.ipv4.tcp_allowed_congestion_control)".to_string()
            } else {
                e.to_string()
            },
        }),
    }
}

/// A named algorithm that cannot be used here.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("congestion control {name:?} is not available: {reason}")]
pub struct Unavailable {
    /// The algorithm asked for.
    pub name: String,
    /// Why not.
    pub reason: String,
}

/// Whether a failed probe means "not allowed here" (quiet fallback for the
/// preferred choice) rather than something else going wrong.
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
}

const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
const DEFAULT: &str = "/proc/sys/net/ipv4/tcp_congestion_control";

impl Congestion {
    /// Leave every socket with the system default.
    pub fn system() -> Congestion {
        Congestion::default()
    }

    /// Reads the kernel's list once and probes one socket: the preferred
    /// choice falls back to the system default when it is missing or not
    /// allowed; a named one is an error then.
    pub fn resolve(request: &Request) -> Result<Congestion, Unavailable> {
        let available = std::fs::read_to_string(AVAILABLE).unwrap_or_default();
        let system: Arc<str> = std::fs::read_to_string(DEFAULT)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
            .into();
        let name = settle(request, &available, probe)?;
        Ok(Congestion {
            name: name.map(Into::into),
            system,
        })
    }

    /// The name set on sockets, `None` for the system default.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// For the start line: `bbr`, or `system (cubic)`.
    pub fn describe(&self) -> String {
        match &self.name {
            Some(n) => n.to_string(),
            None if self.system.is_empty() => "system".to_string(),
            None => format!("system ({})", self.system),
        }
    }

    /// Sets the algorithm on a TCP socket. Failure leaves the socket with
    /// the system default: the probe at startup already told the operator.
    pub fn apply(&self, socket: &impl AsFd) {
        if let Some(name) = &self.name {
            let _ = socket2::SockRef::from(socket).set_tcp_congestion(name.as_bytes());
        }
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

    #[test]
    fn preferred_is_bbr_when_offered_else_system() {
        assert_eq!(
            choose(&Request::Preferred, "reno cubic bbr\n"),
            Ok(Some("bbr"))
        );
        assert_eq!(choose(&Request::Preferred, "reno cubic\n"), Ok(None));
        assert_eq!(choose(&Request::Preferred, ""), Ok(None));
        // A name that merely contains "bbr" is not it.
        assert_eq!(choose(&Request::Preferred, "reno bbr2x"), Ok(None));
    }

    #[test]
    fn system_sets_nothing_and_named_must_be_offered() {
        assert_eq!(choose(&Request::System, "reno bbr"), Ok(None));
        let reno = Request::Named("reno".into());
        assert_eq!(choose(&reno, "reno cubic"), Ok(Some("reno")));
        let err = choose(&Request::Named("bbr".into()), "reno cubic").unwrap_err();
        assert_eq!(err.name, "bbr");
        assert!(err.to_string().contains("modprobe tcp_bbr"), "{err}");
    }

    #[test]
    fn a_refused_probe_falls_back_quietly_unless_named() {
        let eperm = |_: &str| {
            Err(io::Error::from_raw_os_error(
                rustix::io::Errno::PERM.raw_os_error(),
            ))
        };
        let enoent = |_: &str| {
            Err(io::Error::from_raw_os_error(
                rustix::io::Errno::NOENT.raw_os_error(),
            ))
        };
        assert_eq!(
            settle(&Request::Preferred, "reno cubic bbr", eperm),
            Ok(None)
        );
        assert_eq!(
            settle(&Request::Preferred, "reno cubic bbr", enoent),
            Ok(None)
        );
        assert_eq!(
            settle(&Request::Preferred, "reno cubic bbr", |_| Ok(())),
            Ok(Some("bbr"))
        );
        let cubic = Request::Named("cubic".into());
        let err = settle(&cubic, "reno cubic bbr", eperm).unwrap_err();
        assert!(err.reason.contains("not allowed here"), "{err}");
        // Nothing to probe when the system default is kept.
        let untouched = |_: &str| -> io::Result<()> { panic!("probed") };
        assert_eq!(settle(&Request::System, "bbr", untouched), Ok(None));
        assert_eq!(
            settle(&Request::Preferred, "reno cubic", untouched),
            Ok(None)
        );
    }

    #[test]
    fn parse_names() {
        assert_eq!(Request::parse("system"), Ok(Request::System));
        assert_eq!(Request::parse("BBR"), Ok(Request::Named("bbr".into())));
        assert!(Request::parse("").is_err());
        assert!(Request::parse("bbr cubic").is_err());
        assert!(Request::parse("averyveryverylongname").is_err());
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
        };
        assert_eq!(sys.describe(), "system (cubic)");
        let bbr = Congestion {
            name: Some("bbr".into()),
            system: "cubic".into(),
        };
        assert_eq!(bbr.describe(), "bbr");
    }

    /// The chosen algorithm is visible on both ends of a real connection
    /// (reno: always built in, never the system default we would see anyway
    /// where the default is bbr or cubic).
    #[test]
    fn applied_algorithm_reads_back_on_the_socket() {
        let cc =
            Congestion::resolve(&Request::Named("reno".into())).expect("reno is always offered");
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
