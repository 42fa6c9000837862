//! The guard's report channel on Windows: a named pipe that only the
//! worker's user can open and that takes one client.
//!
//! Unix hands the conda process a descriptor; Windows could only pass an
//! inheritable handle, which every process conda starts would inherit too.
//! So the worker listens on `\\.\pipe\conda-mcp-guard-<pid>-<n>` with the
//! private pipe of the worker's own channel
//! ([`conda_mcp_shared::private_pipe`]: a protected DACL naming the user
//! alone, the first instance or nothing, remote clients rejected), and the
//! name travels in the checks (`report_pipe`). The guard opens it only to
//! write its report, before the command acts, and the listener is gone once
//! one client connected: whatever conda starts later finds no instance to
//! open.
//!
//! The accept is issued before conda starts ([`ReportPipe::new`] polls it
//! once), so a guard that connects, writes and exits at once is never
//! missed. A conda that ends without reporting (an argparse error, a crash
//! before the command) leaves the accept waiting: [`ReportPipe::outcome`],
//! called once every process of the job is gone, connects to the pipe
//! itself, which completes that accept with an empty stream, so the answer
//! is [`GuardOutcome::NoReport`] at once, without a timeout.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use conda_mcp_shared::guard::{GuardOutcome, InProcessChecks};
use conda_mcp_shared::private_pipe;
use interprocess::local_socket::GenericNamespaced;
use interprocess::local_socket::tokio::{Stream, prelude::*};

/// The checks' key the guard reads the pipe's path from (`guard.py`).
pub const REPORT_PIPE_KEY: &str = "report_pipe";

/// How long a report already connected may take to arrive once the job's
/// processes are gone (it is in the pipe's buffer by then).
const FINISH_BOUND: Duration = Duration::from_secs(2);

/// One job's report pipe: its name and the task reading it.
#[derive(Debug)]
pub struct ReportPipe {
    name: String,
    reader: tokio::task::JoinHandle<GuardOutcome>,
}

impl ReportPipe {
    /// Listens on a new private pipe and issues its accept; the task reads
    /// one report (at most `MAX_REPORT_BYTES`, shared/src/guard.rs). Must be
    /// called within the tokio runtime.
    ///
    /// Errors: the pipe cannot be created (the user's SID unreadable, or a
    /// pipe of that name exists: made by someone else first).
    pub fn new() -> std::io::Result<ReportPipe> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "conda-mcp-guard-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let listener = private_pipe::listen(&name)?;
        let mut read: Pin<Box<dyn Future<Output = GuardOutcome> + Send>> = Box::pin(async move {
            match private_pipe::accept_one(listener).await {
                Ok(stream) => super::read_report(stream).await,
                Err(_) => GuardOutcome::NoReport,
            }
        });
        // The first poll issues the accept (ConnectNamedPipe) now, before
        // conda starts; the task polls it again with its own waker.
        let waker = std::task::Waker::noop();
        let reader = match read.as_mut().poll(&mut Context::from_waker(waker)) {
            Poll::Ready(outcome) => tokio::spawn(async move { outcome }),
            Poll::Pending => tokio::spawn(read),
        };
        Ok(ReportPipe { name, reader })
    }

    /// The pipe's path, `\\.\pipe\<name>`, as the guard opens it.
    pub fn path(&self) -> String {
        format!(r"\\.\pipe\{}", self.name)
    }

    /// The checks' JSON with the pipe's path added (what the guard reads).
    pub fn checks_json(&self, checks: &InProcessChecks) -> String {
        let mut value = serde_json::to_value(checks).unwrap_or_default();
        if let Some(map) = value.as_object_mut() {
            map.insert(REPORT_PIPE_KEY.into(), self.path().into());
        }
        value.to_string()
    }

    /// The outcome, once every process of the job is gone: the report, or
    /// [`GuardOutcome::NoReport`] when the guard never connected (this
    /// connects in its place: module docs).
    pub async fn outcome(self) -> GuardOutcome {
        let ReportPipe { name, mut reader } = self;
        if !reader.is_finished()
            && let Ok(pipe) = name.as_str().to_ns_name::<GenericNamespaced>()
        {
            // Refused (no instance left) when the guard connected: then
            // its report is the reader's.
            if let Ok(stream) = Stream::connect(pipe).await {
                drop(stream);
            }
        }
        let outcome = tokio::time::timeout(FINISH_BOUND, &mut reader).await;
        reader.abort();
        match outcome {
            Ok(Ok(outcome)) => outcome,
            _ => GuardOutcome::NoReport,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::time::Instant;

    use super::*;

    fn open(pipe: &ReportPipe) -> std::io::Result<std::fs::File> {
        std::fs::OpenOptions::new().write(true).open(pipe.path())
    }

    /// A guard that connects, writes and closes before the reading task
    /// ever ran is not missed: the accept was issued at creation.
    #[tokio::test]
    async fn a_report_written_before_the_reader_ran_is_read() {
        let pipe = ReportPipe::new().expect("the report pipe");
        let mut f = open(&pipe).expect("the guard opens it");
        f.write_all(br#"{"prefix": "C:\\envs\\x", "dry_run": true}"#)
            .expect("write");
        drop(f);
        let GuardOutcome::Report(r) = pipe.outcome().await else {
            panic!("a report")
        };
        assert_eq!(r.prefix.as_deref(), Some(r"C:\envs\x"));
        assert!(r.dry_run);
    }

    /// One client only: while the guard holds the pipe, a second open is
    /// refused, and after it closed the pipe there is nothing left to open.
    #[tokio::test]
    async fn a_second_client_is_refused() {
        let pipe = ReportPipe::new().expect("the report pipe");
        let mut first = open(&pipe).expect("the guard opens it");
        // the accept completes and drops the listener
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(open(&pipe).is_err(), "a second client opened the pipe");
        first.write_all(b"{}").expect("write");
        drop(first);
        let path = pipe.path();
        assert!(matches!(pipe.outcome().await, GuardOutcome::Report(_)));
        assert!(
            std::fs::OpenOptions::new().write(true).open(path).is_err(),
            "the pipe can be opened after its report"
        );
    }

    /// A conda that never reports (no client): no report, at once rather
    /// than after a timeout.
    #[tokio::test]
    async fn no_client_is_no_report_at_once() {
        let pipe = ReportPipe::new().expect("the report pipe");
        let t = Instant::now();
        assert_eq!(pipe.outcome().await, GuardOutcome::NoReport);
        assert!(t.elapsed() < FINISH_BOUND, "{:?}", t.elapsed());
    }

    /// The checks the guard reads carry the pipe's path.
    #[tokio::test]
    async fn the_checks_name_the_pipe() {
        let pipe = ReportPipe::new().expect("the report pipe");
        let json: serde_json::Value =
            serde_json::from_str(&pipe.checks_json(&InProcessChecks::default())).expect("json");
        assert_eq!(json[REPORT_PIPE_KEY], pipe.path());
        assert!(pipe.path().starts_with(r"\\.\pipe\conda-mcp-guard-"));
        let _ = pipe.outcome().await;
    }
}
