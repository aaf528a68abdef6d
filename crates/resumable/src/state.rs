//! One upload's state, the same for both protocols, and its durable record.

use serde::{Deserialize, Serialize};

use crate::concat::Concat;
use crate::{Append, Reason, Refusal};

/// Which protocol created an upload (its resource answers in that protocol).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    Tus,
    Ietf,
}

/// The state of one partial upload; the service keeps it next to the data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadState {
    pub protocol: Protocol,
    /// Where the finished file goes: a path below the served root.
    pub target: String,
    /// Bytes received and kept, from the start of the representation.
    pub offset: u64,
    /// The representation's length once the client made it known.
    pub length: Option<u64>,
    /// No more bytes may come; the file is (or is being) published.
    pub complete: bool,
    /// Unix seconds of creation and of expiry.
    pub created: u64,
    pub expires: u64,
    /// tus `Upload-Metadata` as given at creation, echoed on HEAD.
    pub metadata: Option<String>,
    /// Publish only onto a free name: the creation carried
    /// `If-None-Match: *` (a taken name then fails with 412).
    #[serde(default, skip_serializing_if = "is_false")]
    pub if_none_match: bool,
    /// Publish only onto a free name: the creator may not replace files.
    #[serde(default, skip_serializing_if = "is_false")]
    pub no_replace: bool,
    /// The representation's sha-256 (hex) announced by `Repr-Digest`:
    /// checked before the upload is published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// Who created it, as the service names principals (a share link
    /// under its minter's name): a final upload may only use its
    /// creator's partial uploads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Its part in the tus concatenation extension, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concat: Option<Concat>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// What an append left behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// More bytes are expected; this is the new offset.
    Partial { offset: u64 },
    /// The last byte arrived: publish the file under its final name.
    Complete { length: u64 },
}

/// A durable record that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StateError {
    #[error("upload record is not valid: {0}")]
    Malformed(String),
    #[error("upload record format {0} is not known to this version")]
    UnknownFormat(u64),
    #[error("upload data is shorter ({data} bytes) than its recorded offset ({offset}); the upload cannot continue")]
    DataLost { data: u64, offset: u64 },
    #[error("upload data ({data} bytes) is longer than the upload's length ({length})")]
    DataTooLong { data: u64, length: u64 },
}

const RECORD_FORMAT: u64 = 1;

#[derive(Serialize, Deserialize)]
struct Record {
    format: u64,
    #[serde(flatten)]
    state: UploadState,
}

#[derive(Deserialize)]
struct FormatOnly {
    format: u64,
}

impl UploadState {
    /// A new, empty upload.
    pub fn new(
        protocol: Protocol,
        target: String,
        length: Option<u64>,
        now: u64,
        lifetime_secs: u64,
    ) -> Self {
        UploadState {
            protocol,
            target,
            offset: 0,
            length,
            complete: false,
            created: now,
            expires: now.saturating_add(lifetime_secs),
            metadata: None,
            if_none_match: false,
            no_replace: false,
            sha256: None,
            owner: None,
            concat: None,
        }
    }

    /// A partial upload of the concatenation extension (published only as
    /// part of a final upload).
    pub fn is_partial(&self) -> bool {
        matches!(self.concat, Some(Concat::Partial { .. }))
    }

    /// Whether the sweep may remove this upload: a complete one is
    /// published and gone, except a partial upload no final one took.
    pub fn expired(&self, now: u64) -> bool {
        (!self.complete || self.is_partial()) && now >= self.expires
    }

    /// Bytes still allowed before the upload reaches its length or `max_size`.
    pub fn room(&self, max_size: u64) -> u64 {
        self.length
            .unwrap_or(max_size)
            .min(max_size)
            .saturating_sub(self.offset)
    }

    /// Counts `received` bytes of an accepted append; `whole` says the
    /// request's content arrived to its end (not cut off).
    pub fn record(
        &mut self,
        plan: &Append,
        received: u64,
        whole: bool,
    ) -> Result<Progress, Refusal> {
        if plan.offset != self.offset {
            // Another append moved the offset since this one was planned.
            return Err(Refusal::new(
                Reason::OffsetMismatch,
                "the upload's offset moved during this request",
            )
            .with("Upload-Offset", self.offset.to_string()));
        }
        if received > plan.max_bytes {
            return Err(Refusal::new(
                Reason::TooLarge,
                "more bytes than this upload allows",
            ));
        }
        let offset = self.offset + received;
        let mut length = self.length;
        if let Some(l) = plan.set_length {
            match length {
                Some(known) if known != l => return Err(inconsistent(known, l)),
                _ => length = Some(l),
            }
        }
        let mut complete = false;
        if plan.completes && whole {
            if let Some(known) = length {
                if known != offset {
                    return Err(inconsistent(known, offset));
                }
            }
            length = Some(offset);
            complete = true;
        }
        if let Some(known) = length {
            if offset > known {
                return Err(Refusal::new(
                    Reason::TooLarge,
                    format!("the upload would exceed its length of {known} bytes"),
                ));
            }
            if self.protocol == Protocol::Tus && offset == known {
                complete = true;
            }
        }
        self.offset = offset;
        self.length = length;
        self.complete = complete;
        Ok(if complete {
            Progress::Complete { length: offset }
        } else {
            Progress::Partial { offset }
        })
    }

    /// After a restart: the data file's length is the offset, because bytes
    /// reach the file only in order. Less data than recorded means part of
    /// the upload is gone, and the draft then requires the upload to end.
    pub fn reconcile(&mut self, data_len: u64) -> Result<(), StateError> {
        if data_len < self.offset {
            return Err(StateError::DataLost {
                data: data_len,
                offset: self.offset,
            });
        }
        if let Some(length) = self.length {
            if data_len > length {
                return Err(StateError::DataTooLong {
                    data: data_len,
                    length,
                });
            }
        }
        self.offset = data_len;
        Ok(())
    }

    /// The durable record (JSON with a format number).
    pub fn to_record(&self) -> Vec<u8> {
        let record = Record {
            format: RECORD_FORMAT,
            state: self.clone(),
        };
        // Serializing plain strings and integers cannot fail.
        serde_json::to_vec(&record).unwrap_or_default()
    }

    /// Reads a durable record back, refusing anything inconsistent.
    pub fn from_record(bytes: &[u8]) -> Result<Self, StateError> {
        let format: FormatOnly =
            serde_json::from_slice(bytes).map_err(|e| StateError::Malformed(e.to_string()))?;
        if format.format != RECORD_FORMAT {
            return Err(StateError::UnknownFormat(format.format));
        }
        let record: Record =
            serde_json::from_slice(bytes).map_err(|e| StateError::Malformed(e.to_string()))?;
        let state = record.state;
        if state.target.is_empty() {
            return Err(StateError::Malformed("empty target".into()));
        }
        if let Some(length) = state.length {
            if state.offset > length {
                return Err(StateError::Malformed(format!(
                    "offset {} beyond length {length}",
                    state.offset
                )));
            }
        }
        Ok(state)
    }
}

fn inconsistent(known: u64, other: u64) -> Refusal {
    Refusal::new(
        Reason::InconsistentLength,
        format!("the upload's length is {known} bytes, this request implies {other}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn plan(offset: u64, max: u64) -> Append {
        Append {
            offset,
            max_bytes: max,
            set_length: None,
            completes: false,
            checksum: None,
        }
    }

    fn tus(length: Option<u64>) -> UploadState {
        UploadState::new(Protocol::Tus, "a/b.bin".into(), length, 1000, 60)
    }

    #[test]
    fn tus_completes_when_offset_reaches_length() {
        let mut s = tus(Some(10));
        assert_eq!(
            s.record(&plan(0, 10), 4, true),
            Ok(Progress::Partial { offset: 4 })
        );
        assert_eq!(
            s.record(&plan(4, 6), 6, true),
            Ok(Progress::Complete { length: 10 })
        );
        assert!(s.complete);
    }

    #[test]
    fn ietf_needs_upload_complete_even_at_length() {
        let mut s = UploadState::new(Protocol::Ietf, "f".into(), Some(10), 0, 60);
        assert_eq!(
            s.record(&plan(0, 10), 10, true),
            Ok(Progress::Partial { offset: 10 })
        );
        let done = Append {
            completes: true,
            ..plan(10, 0)
        };
        assert_eq!(
            s.record(&done, 0, true),
            Ok(Progress::Complete { length: 10 })
        );
    }

    #[test]
    fn a_cut_completing_append_stays_partial() {
        let mut s = UploadState::new(Protocol::Ietf, "f".into(), None, 0, 60);
        let last = Append {
            completes: true,
            ..plan(0, 100)
        };
        assert_eq!(
            s.record(&last, 40, false),
            Ok(Progress::Partial { offset: 40 })
        );
        assert!(!s.complete);
    }

    #[test]
    fn completing_short_of_a_known_length_is_inconsistent() {
        let mut s = UploadState::new(Protocol::Ietf, "f".into(), Some(10), 0, 60);
        let last = Append {
            completes: true,
            ..plan(0, 10)
        };
        let err = s.record(&last, 9, true).unwrap_err();
        assert_eq!(err.reason, Reason::InconsistentLength);
        assert_eq!(s.offset, 0, "a refused append changes nothing");
    }

    #[test]
    fn a_stale_plan_is_refused_with_the_current_offset() {
        let mut s = tus(None);
        s.record(&plan(0, 100), 5, true).unwrap();
        let err = s.record(&plan(0, 100), 5, true).unwrap_err();
        assert_eq!(err.reason, Reason::OffsetMismatch);
        assert_eq!(err.headers, vec![("Upload-Offset", "5".to_string())]);
    }

    #[test]
    fn a_deferred_length_is_set_once() {
        let mut s = tus(None);
        let with_len = Append {
            set_length: Some(8),
            ..plan(0, 8)
        };
        assert_eq!(
            s.record(&with_len, 3, true),
            Ok(Progress::Partial { offset: 3 })
        );
        let other = Append {
            set_length: Some(9),
            ..plan(3, 6)
        };
        assert_eq!(
            s.record(&other, 1, true).unwrap_err().reason,
            Reason::InconsistentLength
        );
    }

    #[test]
    fn reconcile_takes_the_data_length_and_refuses_loss() {
        let mut s = tus(Some(100));
        s.offset = 40;
        s.reconcile(64).unwrap();
        assert_eq!(s.offset, 64);
        assert_eq!(
            s.reconcile(10),
            Err(StateError::DataLost {
                data: 10,
                offset: 64
            })
        );
        assert_eq!(
            s.reconcile(101),
            Err(StateError::DataTooLong {
                data: 101,
                length: 100
            })
        );
    }

    #[test]
    fn expiry_spares_complete_uploads() {
        let mut s = tus(Some(1));
        assert!(!s.expired(1059));
        assert!(s.expired(1060));
        s.complete = true;
        assert!(!s.expired(5000));
        // A complete partial upload no final one took is not published:
        // it expires like an unfinished one.
        s.concat = Some(Concat::Partial { used: false });
        assert!(!s.expired(1059));
        assert!(s.expired(1060));
    }

    #[test]
    fn records_refuse_garbage_and_other_formats() {
        assert!(matches!(
            UploadState::from_record(b"not json"),
            Err(StateError::Malformed(_))
        ));
        assert!(matches!(
            UploadState::from_record(b"{}"),
            Err(StateError::Malformed(_))
        ));
        let mut other = tus(Some(3)).to_record();
        let text = String::from_utf8(other.clone())
            .unwrap()
            .replace("\"format\":1", "\"format\":2");
        other = text.into_bytes();
        assert_eq!(
            UploadState::from_record(&other),
            Err(StateError::UnknownFormat(2))
        );
        let mut s = tus(Some(3));
        s.offset = 4;
        assert!(matches!(
            UploadState::from_record(&s.to_record()),
            Err(StateError::Malformed(_))
        ));
    }

    proptest! {
        #[test]
        fn record_round_trips(offset in 0u64..1000, extra in 0u64..1000, known in any::<bool>(),
                              complete in any::<bool>(), meta in proptest::option::of("[ -~]{0,40}")) {
            let mut s = tus(known.then_some(offset + extra));
            s.offset = offset;
            s.complete = complete;
            s.metadata = meta;
            prop_assert_eq!(UploadState::from_record(&s.to_record()), Ok(s));
        }

        #[test]
        fn from_record_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = UploadState::from_record(&bytes);
        }

        #[test]
        fn offset_only_grows_by_what_arrived(pieces in proptest::collection::vec(0u64..50, 1..20)) {
            let total: u64 = pieces.iter().sum();
            let mut s = tus(Some(total));
            for p in &pieces {
                let before = s.offset;
                let room = s.room(u64::MAX);
                s.record(&plan(before, room), *p, true).unwrap();
                prop_assert_eq!(s.offset, before + p);
            }
            prop_assert!(s.complete);
        }
    }
}
