//! One listing pass's names: the smallest names after a bound that fit in a
//! fixed byte budget, packed in one buffer.
//!
//! A `String` per name costs its 24-byte header and a heap block (about 56
//! bytes for a 16-byte name); packed, a name costs its bytes and 8. The
//! same budget therefore holds two to three times the names, so a folder of
//! 100,000 entries is read once instead of four times.

/// Bytes one pass's names may take, the spans included. The peak is this
/// budget: a compaction moves names within the buffer, it never copies it.
pub const PASS_BYTES: usize = 3 << 20;

/// Per name: its offset and length in the buffer.
const SPAN_BYTES: usize = std::mem::size_of::<(u32, u32)>();

/// Names offered to one pass, kept when among the smallest greater than
/// `after` that fit in the budget.
pub struct PassNames {
    bytes: Vec<u8>,
    spans: Vec<(u32, u32)>,
    budget: usize,
    /// Names at or above this were dropped by a compaction: they belong to
    /// a later pass.
    cutoff: Option<Vec<u8>>,
    /// Some name offered was left for a later pass.
    left_out: bool,
}

impl PassNames {
    pub fn new(budget: usize) -> Self {
        PassNames {
            bytes: Vec::new(),
            spans: Vec::new(),
            budget,
            cutoff: None,
            left_out: false,
        }
    }

    /// Offer one name (greater than the previous pass's last, which the
    /// caller checks). Amortised O(log n): a full buffer drops its larger
    /// half at once.
    pub fn offer(&mut self, name: &str) {
        let name = name.as_bytes();
        if self.cutoff.as_deref().is_some_and(|c| name >= c) {
            self.left_out = true;
            return;
        }
        self.bytes.extend_from_slice(name);
        let end = self.bytes.len();
        self.spans
            .push(((end - name.len()) as u32, name.len() as u32));
        // Halving by count may keep the longer names: halve again until
        // the budget holds (one name alone always stays, so passes progress).
        while self.used() > self.budget && self.spans.len() > 1 {
            self.drop_larger_half();
        }
    }

    /// Bytes held: the names and their spans (capacity aside, which
    /// `drop_larger_half` keeps at the budget's order).
    fn used(&self) -> usize {
        self.bytes.len() + self.spans.len() * SPAN_BYTES
    }

    fn name(&self, (at, len): (u32, u32)) -> &[u8] {
        &self.bytes[at as usize..(at + len) as usize]
    }

    /// Keep the smaller half of the names (of two or more), packed again
    /// in place; the smallest dropped name becomes the cutoff.
    fn drop_larger_half(&mut self) {
        let mut spans = std::mem::take(&mut self.spans);
        let keep = spans.len() / 2;
        spans.select_nth_unstable_by(keep, |a, b| self.name(*a).cmp(self.name(*b)));
        self.cutoff = Some(self.name(spans[keep]).to_vec());
        self.left_out = true;
        spans.truncate(keep);
        // In buffer order every kept name moves down (or stays): packing
        // them left one by one never overwrites a name not yet moved.
        spans.sort_unstable_by_key(|s| s.0);
        let mut to = 0u32;
        for span in &mut spans {
            let (at, len) = *span;
            self.bytes
                .copy_within(at as usize..(at + len) as usize, to as usize);
            *span = (to, len);
            to += len;
        }
        self.bytes.truncate(to as usize);
        self.spans = spans;
    }

    /// Whether some name was left for a later pass.
    pub fn left_out(&self) -> bool {
        self.left_out
    }

    /// The kept names in byte order, consumed one at a time.
    pub fn into_sorted(mut self) -> SortedNames {
        let mut spans = std::mem::take(&mut self.spans);
        spans.sort_unstable_by(|a, b| self.name(*a).cmp(self.name(*b)));
        SortedNames {
            bytes: self.bytes,
            spans,
            next: 0,
        }
    }
}

/// A pass's names in order.
#[derive(Default)]
pub struct SortedNames {
    bytes: Vec<u8>,
    spans: Vec<(u32, u32)>,
    next: usize,
}

impl SortedNames {
    pub fn is_done(&self) -> bool {
        self.next >= self.spans.len()
    }

    /// Whether the name `next` returns now is the last.
    pub fn at_last(&self) -> bool {
        self.next + 1 == self.spans.len()
    }

    pub fn remaining(&self) -> usize {
        self.spans.len() - self.next
    }
}

impl Iterator for SortedNames {
    type Item = String;

    fn next(&mut self) -> Option<String> {
        let (at, len) = *self.spans.get(self.next)?;
        self.next += 1;
        let name = &self.bytes[at as usize..(at + len) as usize];
        // Only `&str` names were packed, and spans cut at their ends.
        Some(String::from_utf8_lossy(name).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every pass, run as the listing does (later passes keep names greater
    /// than the previous pass's last), together hand out every name once,
    /// in order, each pass within its budget.
    fn passes(names: &[String], budget: usize) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        loop {
            let mut pass = PassNames::new(budget);
            for n in names {
                if out.last().is_some_and(|a| n <= a) {
                    continue;
                }
                pass.offer(n);
                assert!(pass.used() <= budget, "over the budget");
            }
            let more = pass.left_out();
            let sorted = pass.into_sorted();
            let before = out.len();
            out.extend(sorted);
            assert!(out.len() > before || !more, "a pass made no progress");
            if !more {
                return out;
            }
        }
    }

    #[test]
    fn one_pass_when_the_names_fit() {
        let names: Vec<String> = (0..100_000).map(|i| format!("entry-{i:06}.dat")).collect();
        let mut pass = PassNames::new(PASS_BYTES);
        for n in names.iter().rev() {
            pass.offer(n);
        }
        assert!(!pass.left_out(), "100,000 short names fit in one pass");
        let sorted: Vec<String> = pass.into_sorted().collect();
        assert_eq!(sorted, names);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn passes_hand_out_every_name_once_in_order(
            set in proptest::collection::btree_set("[a-zé]{1,12}", 0..300),
            seed in any::<u64>(),
            budget in 40usize..1200,
        ) {
            let mut names: Vec<String> = set.iter().cloned().collect();
            // Any directory order.
            let mut s = seed | 1;
            for i in (1..names.len()).rev() {
                s ^= s << 13; s ^= s >> 7; s ^= s << 17;
                names.swap(i, (s % (i as u64 + 1)) as usize);
            }
            let expected: Vec<String> = set.into_iter().collect();
            prop_assert_eq!(passes(&names, budget), expected);
        }
    }
}
