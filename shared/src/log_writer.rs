//! The log writer of both binaries: stderr written by a thread of its own
//! behind a bounded queue, so that logging never waits for the host.
//!
//! Why: a host starts conda-mcp with stderr on a pipe. A host that never
//! reads that pipe fills it (64 KiB on Linux, less where the host shrank
//! it), and from then on every `write(2)` to stderr blocks. Written from the
//! server's one-thread runtime, a blocked log line stops the protocol
//! itself: no call is answered, not even `ping`. In the worker it stops the
//! job loop.
//!
//! How: a log line (one `write` of tracing-subscriber's formatted event,
//! which always holds whole lines) goes on a queue of at most
//! [`QUEUE_BYTES`] bytes and the write returns at once. A thread of its own
//! ([`THREAD_NAME`]) takes the lines in order, masks them
//! ([`crate::mask::mask`]: every line goes through the credential mask,
//! whatever logged it) and writes them to stderr, blocking only itself.
//! A line that does not fit in the queue is dropped and counted, never
//! waited for. When the thread has written the whole backlog again (the
//! pipe drained), it reports the lines dropped since the last report
//! through the `drained` callback of [`spawn`] (both binaries log a warning
//! with the count: `log lines dropped`). [`dropped_lines`] is the total of
//! the installed writer, which `conda-mcp check` prints.
//!
//! At exit, [`LogGuard`] waits at most [`FLUSH_TIMEOUT`] for the queue to be
//! written, so the last lines (a startup error) reach a host that reads,
//! and a host that does not read delays the exit by that much at most.
//!
//! A queue of our own rather than tracing-appender's non-blocking writer:
//! its guard prints on stdout when its queue is full at exit ("Failed to
//! send shutdown signal"), and stdout carries only MCP frames
//! (ARCHITECTURE.md, invariant 2).

use std::io::Write;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::mask::mask;

/// Bytes of log lines that may wait for stderr at once (64 KiB, as much
/// again as a default Linux pipe holds): about 440 request lines of the
/// server's default log (150 bytes each). A line that would pass this bound
/// is dropped (a single line longer than the bound is still queued when
/// the queue is empty).
pub const QUEUE_BYTES: usize = 64 * 1024;

/// The longest an exit waits for queued lines to reach stderr.
pub const FLUSH_TIMEOUT: Duration = Duration::from_millis(500);

/// The name of the thread that writes stderr.
pub const THREAD_NAME: &str = "conda-mcp-log";

/// Counters of one writer.
#[derive(Debug, Default)]
struct Counters {
    /// Bytes on the queue, not yet written.
    queued: AtomicUsize,
    /// Lines dropped since the writer started.
    dropped: AtomicU64,
}

/// The counters of the writer [`install_stderr`] started, for
/// [`dropped_lines`].
static INSTALLED: OnceLock<Arc<Counters>> = OnceLock::new();

enum Msg {
    Line(Vec<u8>),
    /// Answer on the sender once every line before it was written.
    Flush(mpsc::SyncSender<()>),
}

/// The writing end: cheap to clone, never blocks. Give it to
/// tracing-subscriber as `with_writer(move || writer.clone())`.
#[derive(Debug, Clone)]
pub struct LogWriter {
    tx: mpsc::Sender<Msg>,
    counters: Arc<Counters>,
    limit: usize,
}

impl LogWriter {
    /// Lines dropped so far because the queue was full.
    pub fn dropped_lines(&self) -> u64 {
        self.counters.dropped.load(Ordering::Acquire)
    }
}

impl std::fmt::Debug for Msg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Msg::Line(l) => write!(f, "Line({} bytes)", l.len()),
            Msg::Flush(_) => f.write_str("Flush"),
        }
    }
}

impl Write for LogWriter {
    /// Queues `buf` (one or more whole lines) or drops it when the queue
    /// holds [`QUEUE_BYTES`] already; always reports `buf` as written.
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let len = buf.len();
        let before = self.counters.queued.fetch_add(len, Ordering::AcqRel);
        let fits = before == 0 || before + len <= self.limit;
        if !fits || self.tx.send(Msg::Line(buf.to_vec())).is_err() {
            self.counters.queued.fetch_sub(len, Ordering::AcqRel);
            self.counters.dropped.fetch_add(1, Ordering::AcqRel);
        }
        Ok(len)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Held by `main` until the process ends: dropping it waits at most
/// [`FLUSH_TIMEOUT`] for the queued lines to be written.
#[derive(Debug)]
pub struct LogGuard {
    tx: mpsc::Sender<Msg>,
    timeout: Duration,
}

impl LogGuard {
    /// Waits at most `timeout` until every line queued before this call was
    /// written; `true` when it was.
    pub fn flush(&self, timeout: Duration) -> bool {
        let (ack, done) = mpsc::sync_channel(1);
        self.tx.send(Msg::Flush(ack)).is_ok() && done.recv_timeout(timeout).is_ok()
    }
}

impl Drop for LogGuard {
    fn drop(&mut self) {
        self.flush(self.timeout);
    }
}

/// Starts a writer of `sink` whose queue holds at most `limit` bytes.
/// `drained(since, total)` runs on the writing thread whenever it has
/// written the whole backlog after lines were dropped: `since` lines were
/// dropped since the last call, `total` since the start.
///
/// Errors: only the thread's spawn (the system's limit on threads).
pub fn spawn<W, F>(
    mut sink: W,
    limit: usize,
    mut drained: F,
) -> std::io::Result<(LogWriter, LogGuard)>
where
    W: Write + Send + 'static,
    F: FnMut(u64, u64) + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<Msg>();
    let counters = Arc::new(Counters::default());
    let theirs = Arc::clone(&counters);
    std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .spawn(move || {
            let mut reported = 0u64;
            for msg in rx {
                match msg {
                    Msg::Line(bytes) => {
                        let text = String::from_utf8_lossy(&bytes);
                        // A failed write (the host closed stderr) loses
                        // the line as a dropped one would; nothing to do.
                        let written = sink.write_all(mask(&text).as_bytes()).is_ok();
                        let _ = sink.flush();
                        let left = theirs.queued.fetch_sub(bytes.len(), Ordering::AcqRel);
                        let total = theirs.dropped.load(Ordering::Acquire);
                        if written && left == bytes.len() && total > reported {
                            drained(total - reported, total);
                            reported = total;
                        }
                    }
                    Msg::Flush(ack) => {
                        let _ = sink.flush();
                        let _ = ack.try_send(());
                    }
                }
            }
        })?;
    let guard = LogGuard {
        tx: tx.clone(),
        timeout: FLUSH_TIMEOUT,
    };
    Ok((
        LogWriter {
            tx,
            counters,
            limit,
        },
        guard,
    ))
}

/// [`spawn`] on the process's stderr with [`QUEUE_BYTES`], made the
/// process's writer for [`dropped_lines`]. Call it once, before the
/// subscriber is installed; a second call starts a second writer that
/// [`dropped_lines`] does not count.
pub fn install_stderr<F>(drained: F) -> std::io::Result<(LogWriter, LogGuard)>
where
    F: FnMut(u64, u64) + Send + 'static,
{
    let (writer, guard) = spawn(std::io::stderr(), QUEUE_BYTES, drained)?;
    let _ = INSTALLED.set(Arc::clone(&writer.counters));
    Ok((writer, guard))
}

/// Lines the process's stderr writer ([`install_stderr`]) dropped so far;
/// 0 when none was installed.
pub fn dropped_lines() -> u64 {
    INSTALLED
        .get()
        .map_or(0, |c| c.dropped.load(Ordering::Acquire))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A sink that blocks every write until the test opens it, like a pipe
    /// nobody reads, and keeps what it was given.
    #[derive(Clone)]
    struct Gate {
        open: Arc<(Mutex<bool>, std::sync::Condvar)>,
        got: Arc<Mutex<Vec<u8>>>,
    }

    impl Gate {
        fn new() -> Gate {
            Gate {
                open: Arc::new((Mutex::new(false), std::sync::Condvar::new())),
                got: Arc::default(),
            }
        }
        fn open(&self) {
            let (m, c) = &*self.open;
            *m.lock().expect("gate lock") = true;
            c.notify_all();
        }
        fn text(&self) -> String {
            String::from_utf8(self.got.lock().expect("sink lock").clone()).expect("UTF-8")
        }
    }

    impl Write for Gate {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let (m, c) = &*self.open;
            let mut open = m.lock().expect("gate lock");
            while !*open {
                open = c.wait(open).expect("gate wait");
            }
            self.got.lock().expect("sink lock").extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Runs `f` on a thread and fails when it has not returned in 10 s (a
    /// write that blocks would hang the test instead of failing it).
    fn returns<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the writes returned while nothing read the sink")
    }

    #[test]
    fn a_sink_nobody_reads_drops_lines_and_reports_them_once_drained() {
        let gate = Gate::new();
        let reports = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&reports);
        // Each line is 10 bytes: the queue holds 10 of them.
        let (writer, guard) = spawn(gate.clone(), 100, move |since, total| {
            seen.lock().expect("reports lock").push((since, total));
        })
        .expect("in test");
        let mut w = writer.clone();
        returns(move || {
            for i in 0..1000 {
                w.write_all(format!("line {i:04}\n").as_bytes())
                    .expect("write");
            }
        });
        // Ten lines fit (the one in the blocked write counts until it is
        // written); everything else was dropped.
        let dropped = writer.dropped_lines();
        assert_eq!(dropped, 990);
        assert!(
            reports.lock().expect("reports lock").is_empty(),
            "reported before the drain"
        );
        gate.open();
        assert!(
            guard.flush(Duration::from_secs(10)),
            "the backlog was written"
        );
        let text = gate.text();
        let kept = text.lines().count() as u64;
        assert_eq!(kept + dropped, 1000, "every line kept or counted: {text}");
        assert!(
            text.starts_with("line 0000\n"),
            "in order from the first: {text}"
        );
        assert_eq!(
            *reports.lock().expect("reports lock"),
            vec![(dropped, dropped)]
        );
        // A later line after a drain: no new drop, no new report.
        let mut w = writer.clone();
        w.write_all(b"after\n").expect("in test");
        assert!(guard.flush(Duration::from_secs(10)));
        assert!(gate.text().ends_with("after\n"));
        assert_eq!(reports.lock().expect("reports lock").len(), 1);
    }

    #[test]
    fn lines_are_masked_by_the_writing_thread() {
        let gate = Gate::new();
        gate.open();
        let (mut writer, guard) = spawn(gate.clone(), QUEUE_BYTES, |_, _| {}).expect("in test");
        writer
            .write_all(b"channel https://alice:s3cret@host/x added\n")
            .expect("in test");
        assert!(guard.flush(Duration::from_secs(10)));
        assert_eq!(gate.text(), "channel https://alice:***@host/x added\n");
        assert_eq!(writer.dropped_lines(), 0);
    }

    #[test]
    fn a_line_longer_than_the_queue_is_written_when_the_queue_is_empty() {
        let gate = Gate::new();
        gate.open();
        let (mut writer, guard) = spawn(gate.clone(), 8, |_, _| {}).expect("in test");
        writer
            .write_all(b"a line of 22 bytes ..\n")
            .expect("in test");
        assert!(guard.flush(Duration::from_secs(10)));
        assert_eq!(gate.text(), "a line of 22 bytes ..\n");
    }

    #[test]
    fn a_guard_that_cannot_flush_gives_up() {
        let gate = Gate::new();
        let (mut writer, guard) = spawn(gate.clone(), QUEUE_BYTES, |_, _| {}).expect("in test");
        writer.write_all(b"stuck\n").expect("in test");
        assert!(!guard.flush(Duration::from_millis(50)));
        gate.open();
        assert!(guard.flush(Duration::from_secs(10)));
        assert_eq!(gate.text(), "stuck\n");
    }
}
