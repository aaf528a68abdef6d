//! A response: its head, and its body streamed off the connection.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use tokio::io::{AsyncWrite, AsyncWriteExt};
use wirespeed_proto::{response_framing, BodyDecoder, BodyFraming, ResponseHead};

use crate::conn::Conn;
use crate::Observer;
use crate::{Client, Error};

/// The most of an error body read for the error's message.
const MAX_ERROR_MESSAGE: usize = 4096;
/// The most of it shown (characters): one readable line, not a page.
const MAX_SHOWN_MESSAGE: usize = 300;

/// Text from the network made safe to print on one terminal line: runs of
/// whitespace (newlines included) become one space, other control
/// characters (ESC, BEL, DEL, C1) are shown escaped (`\u{1b}`) so they
/// cannot retitle, clear or recolour the terminal, and the result is cut
/// to `max` characters (`…` marks the cut).
pub fn terminal_safe(text: &str, max: usize) -> String {
    let mut out = String::new();
    let mut shown = 0usize;
    let mut space = false;
    for c in text.trim().chars() {
        if shown >= max {
            out.push('…');
            break;
        }
        if c.is_whitespace() {
            space = true;
            continue;
        }
        if space {
            out.push(' ');
            shown += 1;
            space = false;
        }
        if c.is_control() {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
        shown += 1;
    }
    out
}

/// What an HTML error page says: its `<title>` when it has one, else its
/// text without the tags.
fn html_summary(page: &str) -> String {
    let lower = page.to_ascii_lowercase();
    if let Some(start) = lower.find("<title>").map(|i| i + "<title>".len()) {
        if let Some(len) = lower[start..].find("</title>") {
            let title = page[start..start + len].trim();
            if !title.is_empty() {
                return title.to_string();
            }
        }
    }
    let mut out = String::with_capacity(page.len());
    let mut in_tag = false;
    for c in page.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// A response whose head has arrived. Read the body with [`read`](Self::read),
/// [`copy_to`](Self::copy_to), [`write_to_file`](Self::write_to_file) or
/// [`bytes`](Self::bytes). Once the body has been read to its end the
/// connection goes back to the client's pool; dropping a response early
/// closes it.
pub struct Response {
    client: Client,
    conn: Option<Conn>,
    head: ResponseHead,
    body: BodyDecoder,
    received: u64,
    expected: Option<u64>,
    /// A pipelined connection: kept here when the body ends (its next
    /// answer is already on the way), not given to the pool.
    hold: bool,
}

impl std::fmt::Debug for Response {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Response")
            .field("head", &self.head)
            .finish()
    }
}

impl Response {
    pub(crate) fn new(
        client: Client,
        conn: Conn,
        head: ResponseHead,
        method: &str,
    ) -> Result<Response, Error> {
        Response::build(client, conn, head, method, false)
    }

    fn build(
        client: Client,
        mut conn: Conn,
        head: ResponseHead,
        method: &str,
        hold: bool,
    ) -> Result<Response, Error> {
        let framing = response_framing(method, &head)?;
        if !head.keep_alive() || head.status == 101 {
            conn.reusable = false;
        }
        let expected = match framing {
            BodyFraming::Empty => Some(0),
            BodyFraming::Length(n) => Some(n),
            BodyFraming::Chunked => None,
            BodyFraming::UntilClose => {
                conn.reusable = false;
                None
            }
        };
        let body = BodyDecoder::new(framing, &client.config().limits);
        let mut r = Response {
            client,
            conn: Some(conn),
            head,
            body,
            received: 0,
            expected,
            hold,
        };
        if r.body.is_done() {
            r.finish();
        }
        Ok(r)
    }

    /// A response on a pipelined connection ([`crate::Pipeline`]): the
    /// connection stays with it when its body ends.
    pub(crate) fn held(
        client: Client,
        conn: Conn,
        head: ResponseHead,
        method: &str,
    ) -> Result<Response, Error> {
        Response::build(client, conn, head, method, true)
    }

    /// Holds this response's connection when its body ends (as a
    /// pipelined one's), for requests written on it meanwhile; the
    /// connection, if it can carry another request.
    pub(crate) fn hold_conn(&mut self) -> Option<&mut Conn> {
        if self.body.is_done() {
            return None;
        }
        self.hold = true;
        self.conn.as_mut().filter(|c| c.reusable)
    }

    /// A held response whose body has been read to its end: its
    /// connection, if it can carry more.
    pub(crate) fn into_held_conn(mut self) -> Option<Conn> {
        if !self.body.is_done() {
            return None;
        }
        self.conn.take().filter(|c| c.reusable)
    }

    /// A held response's body read to its end (at most `max` bytes, dropped);
    /// its connection back, if it can carry more.
    pub(crate) async fn drain_held(mut self, max: usize) -> Result<Option<Conn>, Error> {
        self.bytes_kept(max).await?;
        Ok(self.conn.take().filter(|c| c.reusable))
    }

    pub(crate) fn client(&self) -> &Client {
        &self.client
    }

    pub fn status(&self) -> u16 {
        self.head.status
    }

    pub fn head(&self) -> &ResponseHead {
        &self.head
    }

    /// A header as text (None if absent or not UTF-8).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.head
            .header(name)
            .and_then(|v| std::str::from_utf8(v).ok())
    }

    /// The body length when the server announced one.
    pub fn content_length(&self) -> Option<u64> {
        self.expected
    }

    /// Body bytes read so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Turn a status >= 400 into [`Error::Status`] carrying the server's
    /// message (the start of its body).
    pub async fn error_for_status(self) -> Result<Response, Error> {
        if (200..300).contains(&self.head.status) {
            return Ok(self);
        }
        let status = self.head.status;
        if (300..400).contains(&status) {
            // Not followed here: say where it pointed.
            let location = self
                .header("Location")
                .unwrap_or("(no Location)")
                .to_string();
            return Err(Error::Status {
                status,
                reason: wirespeed_proto::reason_phrase(status).to_string(),
                message: format!(
                    "redirected to {}",
                    terminal_safe(&location, MAX_SHOWN_MESSAGE)
                ),
            });
        }
        let reason = if self.head.reason.is_empty() {
            wirespeed_proto::reason_phrase(status).to_string()
        } else {
            terminal_safe(&self.head.reason, 80)
        };
        let html = self
            .header("Content-Type")
            .is_some_and(|t| t.trim().to_ascii_lowercase().starts_with("text/html"));
        let body = self.bytes_lossy(MAX_ERROR_MESSAGE).await;
        let text = String::from_utf8_lossy(&body);
        // A proxy's error page: its title (or its text), not its markup.
        let text = if html {
            html_summary(&text)
        } else {
            text.into_owned()
        };
        let message = terminal_safe(&text, MAX_SHOWN_MESSAGE);
        Err(Error::Status {
            status,
            reason,
            message,
        })
    }

    /// Read up to `max` body bytes, ignoring errors (for error messages).
    async fn bytes_lossy(mut self, max: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 16 * 1024];
        while out.len() < max {
            match self.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n.min(max - out.len())]),
            }
        }
        out
    }

    /// The whole body, refusing more than `max` bytes.
    pub async fn bytes(mut self, max: usize) -> Result<Vec<u8>, Error> {
        self.bytes_kept(max).await
    }

    async fn bytes_kept(&mut self, max: usize) -> Result<Vec<u8>, Error> {
        let mut out = Vec::new();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = self.read(&mut buf).await?;
            if n == 0 {
                return Ok(out);
            }
            if out.len() + n > max {
                return Err(Error::Io {
                    context: "reading the response",
                    source: io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("body larger than {max} bytes"),
                    ),
                });
            }
            out.extend_from_slice(&buf[..n]);
        }
    }

    /// Read body bytes into `out`; `Ok(0)` at the end of the body. A body
    /// cut short by the server is [`Error::Truncated`].
    pub async fn read(&mut self, out: &mut [u8]) -> Result<usize, Error> {
        if out.is_empty() {
            return Ok(0);
        }
        let timeout = self.client.config().io_timeout;
        let Some(conn) = self.conn.as_mut() else {
            return Ok(0);
        };
        let n = loop {
            if self.body.is_done() {
                return Ok(0);
            }
            if !conn.buffered().is_empty() {
                // Feed at most `out.len()` bytes so the data range always
                // fits `out`; the decoder keeps partial framing.
                let input = &conn.buffered()[..conn.buffered().len().min(out.len())];
                let d = self.body.decode(input)?;
                let n = d.data.len();
                out[..n].copy_from_slice(&input[d.data.clone()]);
                conn.consume(d.consumed);
                if n > 0 {
                    break n;
                }
                if d.done {
                    self.finish();
                    return Ok(0);
                }
                if d.consumed > 0 {
                    continue;
                }
            }
            // Nothing buffered: a length- or close-delimited body is read
            // straight into `out` (no copy through the connection buffer);
            // chunked framing goes through the buffer.
            let got = match self.body.direct_limit() {
                Some(limit) => {
                    let want = limit.min(out.len() as u64) as usize;
                    let n = conn
                        .read_direct(&mut out[..want], timeout, "reading the response body")
                        .await?;
                    if n > 0 {
                        self.body.advance_direct(n as u64);
                        break n;
                    }
                    0
                }
                None => conn.fill(timeout, "reading the response body").await?,
            };
            if got == 0 {
                if self.body.end_of_input() {
                    self.close();
                    return Ok(0);
                }
                let (received, expected) = (self.received, self.expected);
                self.close();
                return Err(Error::Truncated { received, expected });
            }
        };
        self.received += n as u64;
        if self.body.is_done() {
            self.finish();
        }
        Ok(n)
    }

    /// Copy the body into `w`; returns the byte count.
    pub async fn copy_to<W: AsyncWrite + Unpin + ?Sized>(
        &mut self,
        w: &mut W,
    ) -> Result<u64, Error> {
        let mut buf = vec![0u8; self.client.config().read_buffer.max(4096)];
        let mut total = 0;
        loop {
            let n = self.read(&mut buf).await?;
            if n == 0 {
                w.flush().await.map_err(Error::io("writing the body"))?;
                return Ok(total);
            }
            w.write_all(&buf[..n])
                .await
                .map_err(Error::io("writing the body"))?;
            total += n as u64;
        }
    }

    /// Stream the body into `file` (at its current position): this task
    /// receives into full buffers, a writer thread writes them and shows each
    /// to `observer` (hashing), so disk, hash and socket overlap.
    /// `progress` is called with each received amount. Returns bytes written.
    pub async fn write_to_file(
        &mut self,
        file: File,
        path: &Path,
        mut observer: Option<Observer>,
        progress: Option<&(dyn Fn(u64) + Send + Sync)>,
    ) -> Result<u64, Error> {
        let bufsize = self.client.config().read_buffer.max(4096);
        // Buffers travel with their filled length and come back whole, so a
        // recycled one is reused as is (no re-zeroing of its tail per round).
        // Async on the receiving side (a slow disk must park this task, not
        // block a runtime worker), blocking on the writer thread's side.
        let (tx, mut rx) = tokio::sync::mpsc::channel::<(Vec<u8>, usize)>(2);
        let (recycle_tx, mut recycle_rx) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
        let writer = tokio::task::spawn_blocking(move || -> io::Result<u64> {
            let mut file = file;
            let mut total = 0u64;
            while let Some((buf, filled)) = rx.blocking_recv() {
                let data = &buf[..filled];
                file.write_all(data)?;
                if let Some(o) = observer.as_mut() {
                    o(data);
                }
                total += filled as u64;
                let _ = recycle_tx.send(buf);
            }
            file.flush()?;
            Ok(total)
        });
        let received = async {
            loop {
                let mut buf = recycle_rx.try_recv().unwrap_or_else(|_| vec![0u8; bufsize]);
                // Fill most of the buffer before handing it over: fewer, larger
                // disk writes and channel hops.
                let mut filled = 0;
                let mut end = false;
                while filled < bufsize * 3 / 4 {
                    let n = self.read(&mut buf[filled..]).await?;
                    if n == 0 {
                        end = true;
                        break;
                    }
                    filled += n;
                    if let Some(p) = progress {
                        p(n as u64);
                    }
                }
                if filled > 0 && tx.send((buf, filled)).await.is_err() {
                    // The writer died; its error is reported below.
                    return Ok::<bool, Error>(false);
                }
                if end {
                    return Ok(true);
                }
            }
        }
        .await;
        drop(tx);
        let written = writer.await.map_err(|e| Error::Io {
            context: "writing the download",
            source: io::Error::other(e.to_string()),
        })?;
        let file_err = |source| Error::File {
            path: path.to_path_buf(),
            source,
        };
        match received {
            Ok(true) => written.map_err(file_err),
            Ok(false) => Err(file_err(
                written
                    .err()
                    .unwrap_or_else(|| io::Error::other("writer stopped")),
            )),
            Err(e) => Err(e),
        }
    }

    /// Body complete: the connection may carry the next request.
    fn finish(&mut self) {
        if self.hold {
            return;
        }
        if let Some(conn) = self.conn.take() {
            if conn.reusable {
                self.client.put_idle(conn);
            }
        }
    }

    fn close(&mut self) {
        self.conn = None;
    }
}

#[cfg(test)]
mod tests {
    use super::terminal_safe;

    #[test]
    fn error_bodies_are_one_safe_line() {
        assert_eq!(terminal_safe("  plain  text \n", 100), "plain text");
        let evil = "\u{1b}]0;pwned\u{7}\u{1b}[2J denied\r\n\u{9b}31m\u{7f}";
        let shown = terminal_safe(evil, 100);
        assert!(!shown.chars().any(char::is_control), "{shown}");
        assert_eq!(
            shown,
            "\\u{1b}]0;pwned\\u{7}\\u{1b}[2J denied \\u{9b}31m\\u{7f}"
        );
        let long = terminal_safe(&"ab ".repeat(1000), 10);
        assert_eq!(long, "ab ab ab a…");
    }

    #[test]
    fn html_error_pages_are_their_title_or_text() {
        use super::html_summary;
        let nginx = "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n\
                     <center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n\
                     </body>\r\n</html>\r\n";
        assert_eq!(html_summary(nginx), "502 Bad Gateway");
        let untitled = "<html><body><h1>Service\nUnavailable</h1><p>try later</p></body></html>";
        assert_eq!(
            terminal_safe(&html_summary(untitled), 100),
            "Service Unavailable try later"
        );
        assert_eq!(terminal_safe(&html_summary("<title></title>x"), 9), "x");
    }
}
