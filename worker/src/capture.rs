//! Draining one output stream of a child to EOF under a byte limit.
//!
//! Both streams are read concurrently until EOF so a chatty child never
//! blocks on a full pipe; bytes past the limit are counted and discarded, so
//! memory stays at the limit whatever the child writes. stdout is also
//! scanned line by line for conda's `--json` progress records (a JSON object
//! with a numeric `progress` or `fraction` in 0..=1; conda ends each record
//! with `\n\0`).

use std::sync::{Arc, Mutex, PoisonError};

use tokio::io::{AsyncRead, AsyncReadExt};

/// Longest stdout line examined for a progress record; longer lines are
/// skipped without being buffered.
const MAX_PROGRESS_LINE: usize = 4096;

/// What has been read from one stream so far.
#[derive(Debug, Default)]
pub struct Captured {
    /// The first `limit` bytes.
    pub kept: Vec<u8>,
    /// Every byte read, kept or not.
    pub total: u64,
    /// The last progress fraction seen (stdout only).
    pub progress: Option<f64>,
    /// Whether EOF was reached.
    pub eof: bool,
}

/// A [`Captured`] shared between the draining task and the job (which reads
/// the counters for `Output` events and takes the bytes at the end, even when
/// the drain had to be abandoned).
pub type SharedCapture = Arc<Mutex<Captured>>;

/// Locks a capture; a poisoned lock (a panicking reader) still yields the
/// bytes read so far.
pub fn lock(c: &SharedCapture) -> std::sync::MutexGuard<'_, Captured> {
    c.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Reads `reader` to EOF (or the first error) into `into`, keeping at most
/// `limit` bytes; `scan_progress` enables the progress-record scan.
pub async fn drain<R: AsyncRead + Unpin>(
    mut reader: R,
    into: SharedCapture,
    limit: usize,
    scan_progress: bool,
) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut lines = LineScanner::default();
    loop {
        let n = match reader.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let chunk = &buf[..n];
        let progress = if scan_progress {
            lines.feed(chunk)
        } else {
            None
        };
        let mut c = lock(&into);
        let room = limit.saturating_sub(c.kept.len());
        c.kept.extend_from_slice(&chunk[..room.min(n)]);
        c.total += n as u64;
        if progress.is_some() {
            c.progress = progress;
        }
    }
    lock(&into).eof = true;
}

/// Splits a byte stream into lines and recognises progress records.
#[derive(Debug, Default)]
struct LineScanner {
    line: Vec<u8>,
    overflow: bool,
}

impl LineScanner {
    /// Feeds a chunk; returns the fraction of the last progress record
    /// completed in it, if any.
    fn feed(&mut self, chunk: &[u8]) -> Option<f64> {
        let mut found = None;
        let mut rest = chunk;
        while !rest.is_empty() {
            match rest.iter().position(|b| *b == b'\n') {
                Some(i) => {
                    self.push(&rest[..i]);
                    if !self.overflow
                        && let Some(f) = progress_of(&self.line)
                    {
                        found = Some(f);
                    }
                    self.line.clear();
                    self.overflow = false;
                    rest = &rest[i + 1..];
                }
                None => {
                    self.push(rest);
                    rest = &[];
                }
            }
        }
        found
    }

    fn push(&mut self, bytes: &[u8]) {
        if self.overflow || self.line.len() + bytes.len() > MAX_PROGRESS_LINE {
            self.overflow = true;
            self.line.clear();
        } else {
            self.line.extend_from_slice(bytes);
        }
    }
}

/// The fraction of one line if it is a JSON object with a numeric
/// `progress` or `fraction` in 0..=1.
fn progress_of(line: &[u8]) -> Option<f64> {
    let trimmed = line
        .iter()
        .position(|b| *b != 0 && !b.is_ascii_whitespace())
        .map(|start| &line[start..])?;
    if trimmed.first() != Some(&b'{') {
        return None;
    }
    let obj: serde_json::Map<String, serde_json::Value> = serde_json::from_slice(trimmed).ok()?;
    ["progress", "fraction"]
        .iter()
        .filter_map(|k| obj.get(*k).and_then(serde_json::Value::as_f64))
        .find(|f| (0.0..=1.0).contains(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conda_progress_records_are_recognised_across_chunks() {
        let mut s = LineScanner::default();
        assert_eq!(
            s.feed(b"{\"fetch\":\"x\",\"finished\":false,\"maxval\":1,\"progr"),
            None
        );
        assert_eq!(s.feed(b"ess\":0.25}\n\0"), Some(0.25));
        assert_eq!(
            s.feed(b"{\"fraction\":0.5}\n\0{\"progress\":2}\n"),
            Some(0.5)
        );
        assert_eq!(s.feed(b"not json\n"), None);
        let long = vec![b'x'; MAX_PROGRESS_LINE + 10];
        assert_eq!(s.feed(&long), None);
        assert_eq!(
            s.feed(b"{\"progress\":1}\n"),
            None,
            "still the overlong line"
        );
        assert_eq!(s.feed(b"{\"progress\":1}\n"), Some(1.0));
    }
}
