//! `serve --audit-log FILE` (`-`: stderr): the events as JSON lines,
//! written off the request's path by the access log's machinery (a buffer
//! per worker thread, a writer thread; bounded, with counted loss when the
//! output stalls). A file is opened for appending, and reopened by
//! [`Audit::reopen`] (`serve` calls it on SIGHUP): logrotate moves the
//! file and signals, and the lines go on in a new file of the same name.

use std::path::{Path, PathBuf};

use crate::access_log::{AccessLog, Format};

#[derive(Debug)]
pub struct Audit {
    log: AccessLog,
    /// The file (`None`: stderr).
    path: Option<PathBuf>,
}

fn open(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
}

impl Audit {
    /// Lines to `path`, appended; `-` is stderr.
    pub fn open(path: &Path) -> std::io::Result<Audit> {
        if path == Path::new("-") {
            return Ok(Audit {
                log: AccessLog::stderr(Format::Json)?,
                path: None,
            });
        }
        let file = open(path)?;
        Ok(Audit {
            log: AccessLog::new(Format::Json, Box::new(file))?,
            path: Some(path.to_path_buf()),
        })
    }

    /// Lines written to the sink the caller gives (tests, journald's
    /// stream).
    pub fn to_sink(sink: crate::access_log::Sink) -> std::io::Result<Audit> {
        Ok(Audit {
            log: AccessLog::new(Format::Json, sink)?,
            path: None,
        })
    }

    pub(super) fn record(&self, line: &[u8]) {
        self.log.record_raw(line);
    }

    /// Finish the lines in the old file and go on in a new one of the same
    /// name (after a rotation moved it). Stderr is never reopened.
    pub fn reopen(&self) -> std::io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let file = open(path)?;
        self.log.replace_sink(Box::new(file));
        Ok(())
    }

    pub fn flush(&self) {
        self.log.flush();
    }
}
