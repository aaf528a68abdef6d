//! A set of rights: the letters of the rules file (`r`, `w`, `d`, and `s`).

/// A set of rights (`r`, `w`, `d`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Rights(u8);

impl Rights {
    pub const NONE: Rights = Rights(0);
    /// Read files and listings.
    pub const READ: Rights = Rights(1);
    /// Write new names.
    pub const WRITE: Rights = Rights(2);
    /// Delete, and replace existing names.
    pub const DELETE: Rights = Rights(4);
    /// `r`, `w` and `d`: everything a path's content can be asked for.
    pub const ALL: Rights = Rights(7);
    /// Mint share links (`s`, in the rules file only): a reader who may
    /// publish what they read. `d` implies it (an owner shares their own).
    pub const SHARE: Rights = Rights(8);

    /// Whether every right of `other` is in `self`.
    pub fn contains(self, other: Rights) -> bool {
        self.0 & other.0 == other.0
    }

    pub fn union(self, other: Rights) -> Rights {
        Rights(self.0 | other.0)
    }

    pub fn intersect(self, other: Rights) -> Rights {
        Rights(self.0 & other.0)
    }

    /// The set as one byte (`r` 1, `w` 2, `d` 4).
    pub fn bits(self) -> u8 {
        self.0
    }

    /// The set of a byte, if it names only `r`, `w` and `d`.
    pub fn from_bits(bits: u8) -> Option<Rights> {
        (bits & !Rights::ALL.0 == 0).then_some(Rights(bits))
    }

    /// `r`, `w`, `d`, `s` as the rules file writes them.
    pub fn letters(self) -> String {
        [
            (Rights::READ, 'r'),
            (Rights::WRITE, 'w'),
            (Rights::DELETE, 'd'),
            (Rights::SHARE, 's'),
        ]
        .iter()
        .filter(|(r, _)| self.contains(*r))
        .map(|(_, c)| *c)
        .collect()
    }

    pub fn may_read(self) -> bool {
        self.contains(Rights::READ)
    }

    pub fn may_write(self) -> bool {
        self.contains(Rights::WRITE)
    }

    /// Delete, and write over an existing name.
    pub fn may_delete(self) -> bool {
        self.contains(Rights::DELETE)
    }
}

/// `"rwd"` → rights; anything but `r`, `w`, `d`, `s` is refused.
pub fn parse_letters(s: &str) -> Result<Rights, String> {
    let mut rights = Rights::NONE;
    for c in s.chars() {
        rights = rights.union(match c {
            'r' => Rights::READ,
            'w' => Rights::WRITE,
            'd' => Rights::DELETE,
            's' => Rights::SHARE,
            other => {
                return Err(format!(
                    "unknown right {other:?} in {s:?}: rights are r (read), w (write new names), \
                     d (delete and replace) and s (share links to what one reads or writes; \
                     d includes it)"
                ))
            }
        });
    }
    Ok(rights)
}
