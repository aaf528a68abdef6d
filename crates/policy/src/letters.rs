//! Rights as the rules file and share links write them: `r`, `w`, `d`, `s`
//! ([`Rights::letters`] writes them back). Shared by the rules file
//! (`rules.rs`) and the links (`shares.rs`), which otherwise need nothing
//! of each other's parsing.

use super::Rights;

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
