//! Where a partial request head was last searched: the head is parsed again
//! only when a line end arrived since the last look, and each buffered byte
//! is searched for one once. A head trickled a byte per segment then costs
//! one search per byte and one parse per line, never a search of the whole
//! line (or head) per byte.

/// The search position in the connection's buffered bytes (they only grow
/// while a head is read, and the buffer is consumed only once it is parsed).
#[derive(Debug, Default)]
pub(crate) struct HeadScan {
    scanned: usize,
    /// Bytes searched so far (tests count work with it, not time).
    #[cfg(test)]
    searched: usize,
}

impl HeadScan {
    /// Whether `data`, the buffered head so far, holds a line end not seen
    /// by an earlier call.
    pub fn new_line_end(&mut self, data: &[u8]) -> bool {
        let from = self.scanned.min(data.len());
        self.scanned = data.len();
        #[cfg(test)]
        {
            self.searched += data.len() - from;
        }
        memchr::memchr(b'\n', &data[from..]).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::HeadScan;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// However the head is cut into reads (one byte each, or any
        /// sizes), each byte is searched once and the head is parsed once
        /// per read that brought a line end: linear work, not a search of
        /// the whole buffered line per byte.
        #[test]
        fn each_byte_is_searched_once(
            lines in proptest::collection::vec("[a-z]{0,300}", 1..60),
            cuts in proptest::collection::vec(1usize..40, 1..200),
        ) {
            let head: Vec<u8> = lines.iter().flat_map(|l| format!("{l}\r\n").into_bytes()).collect();
            let mut scan = HeadScan::default();
            let (mut have, mut parses, mut reads_with_lf) = (0, 0, 0);
            for step in cuts.iter().cycle() {
                if have == head.len() {
                    break;
                }
                let end = (have + step).min(head.len());
                if head[have..end].contains(&b'\n') {
                    reads_with_lf += 1;
                }
                have = end;
                if scan.new_line_end(&head[..have]) {
                    parses += 1;
                }
            }
            prop_assert_eq!(scan.searched, head.len());
            prop_assert_eq!(parses, reads_with_lf);
            prop_assert!(parses <= lines.len());
        }
    }

    #[test]
    fn a_long_line_trickled_is_searched_once() {
        let mut scan = HeadScan::default();
        let line = vec![b'v'; 15_000];
        for n in 1..=line.len() {
            assert!(!scan.new_line_end(&line[..n]));
        }
        assert_eq!(scan.searched, 15_000, "not 15,000²/2");
    }
}
