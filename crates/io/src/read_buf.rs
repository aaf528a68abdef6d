//! The read buffer of a connection, server or client side.

use std::io;

use tokio::io::{AsyncRead, AsyncReadExt};

/// The connection's read buffer: `buf[start..end]` holds received, unconsumed
/// bytes. It starts small and grows on demand up to a cap chosen per use (head
/// limit for heads, body buffer size for bodies).
pub struct ReadBuf {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl ReadBuf {
    pub fn new(initial: usize) -> Self {
        ReadBuf {
            buf: vec![0; initial],
            start: 0,
            end: 0,
        }
    }

    pub fn data(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    pub fn len(&self) -> usize {
        self.end - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    pub fn start(&self) -> usize {
        self.start
    }

    /// Bytes at absolute positions of the storage (valid until the next fill).
    pub fn slice(&self, from: usize, to: usize) -> &[u8] {
        &self.buf[from..to]
    }

    pub fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.len());
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Make room for a read: compact, then grow up to `cap` if still full.
    /// Returns false when the buffer already holds `cap` unconsumed bytes.
    fn make_room(&mut self, cap: usize) -> bool {
        if self.end < self.buf.len() {
            return true;
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            return true;
        }
        if self.buf.len() < cap {
            let new_len = (self.buf.len() * 2).clamp(self.buf.len() + 1, cap);
            self.buf.resize(new_len, 0);
            return true;
        }
        false
    }

    /// Size of the storage.
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Give back a large body buffer once it holds nothing, so idle
    /// keep-alive connections cost `initial` bytes, not the body buffer size.
    pub fn shrink_when_empty(&mut self, initial: usize) {
        if self.is_empty() && self.buf.len() > initial {
            self.buf = vec![0; initial];
            self.start = 0;
            self.end = 0;
        }
    }

    /// Grow the storage to at least `size` bytes (for large body reads).
    pub fn ensure_capacity(&mut self, size: usize) {
        if self.buf.len() < size {
            self.buf.resize(size, 0);
        }
    }

    /// Read once from `io` into the free space. `Ok(0)` means EOF; `Ok(None)`
    /// that the buffer is full at `cap`.
    pub async fn fill<R: AsyncRead + Unpin + ?Sized>(
        &mut self,
        io: &mut R,
        cap: usize,
    ) -> io::Result<Option<usize>> {
        if !self.make_room(cap) {
            return Ok(None);
        }
        let n = io.read(&mut self.buf[self.end..]).await?;
        self.end += n;
        Ok(Some(n))
    }
}

#[cfg(test)]
mod tests {
    use super::ReadBuf;

    #[tokio::test]
    async fn grows_to_the_cap_then_shrinks_when_empty() {
        let mut rb = ReadBuf::new(8);
        let data = vec![7u8; 100];
        let mut src: &[u8] = &data;
        while rb.fill(&mut src, 64).await.unwrap() != Some(0) {
            if rb.len() == 64 {
                break;
            }
        }
        assert_eq!(rb.len(), 64, "fills up to the cap");
        assert_eq!(
            rb.fill(&mut src, 64).await.unwrap(),
            None,
            "full at the cap"
        );
        rb.shrink_when_empty(8);
        assert_eq!(rb.capacity(), 64, "never drops unconsumed bytes");
        rb.consume(64);
        rb.shrink_when_empty(8);
        assert_eq!(rb.capacity(), 8);
        assert!(rb.is_empty());
    }
}
