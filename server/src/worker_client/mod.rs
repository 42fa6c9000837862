//! The server's client for the worker process.
//!
//! The server never spawns conda itself (only the worker spawns:
//! ARCHITECTURE.md "Invariants"): each call is
//! a [`Job`] handed to an [`Executor`], which sends it to a
//! `conda-mcp-worker` over a local socket and streams back [`JobUpdate`]s and
//! one [`ExecutionResult`].
//!
//! * One executor = one lane = one worker process (or one connection to a
//!   listening worker): jobs run one at a time in arrival (FIFO) order; a
//!   waiting job is told its position ([`JobUpdate::Queued`]) whenever it
//!   changes.
//! * The worker is started lazily by the first call (or eagerly with
//!   [`Executor::connect`], which reports a missing or refusing worker at
//!   startup). A worker that dies fails the in-flight call with
//!   [`ExecError::WorkerDied`]; the next call starts a fresh one.
//! * [`Executor::shutdown`] kills the running job and the worker; the
//!   worker also exits on its own when the server's end of the socket
//!   closes (EOF), so it never outlives the server.
//!
//! Modules: [`config`] (what to start or connect to), [`connection`] (one
//! worker process or socket connection: spawn, handshake, events),
//! [`lane`] (the FIFO queue and its positions), [`executor`] (running jobs).

pub mod config;
pub mod connection;
pub mod executor;
pub mod lane;
pub mod pool;

use std::path::PathBuf;
use std::time::Duration;

pub use conda_mcp_shared::ExecutionResult;
pub use conda_mcp_shared::LogFormat;
pub use conda_mcp_shared::limits::Limits;
pub use conda_mcp_shared::protocol::{JobRefusal, Program};
pub use config::WorkerConfig;
pub use executor::Executor;
pub use pool::{Lease, PoolFull, Workers};
use tokio_util::sync::CancellationToken;

/// One execution: an authorized, compiled argv for the worker to run.
#[derive(Debug, Clone)]
pub struct Job {
    /// Which of the worker's two fixed programs to run.
    pub program: Program,
    /// Arguments after the program, passed as separate items (no shell).
    pub argv: Vec<String>,
    /// Working directory; `None` = the worker's. A missing directory is
    /// refused ([`ExecError::Rejected`]) and nothing runs.
    pub cwd: Option<PathBuf>,
    /// Bytes for the program's stdin; `None` = `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// Time limit (a running job's limit counts from spawn; it bounds the
    /// queue wait too, see [`Job::start_by`]), bytes kept per output stream
    /// (cut at a UTF-8 boundary), most stdin bytes
    /// ([`ExecError::StdinTooLarge`] above it).
    pub limits: Limits,
    /// The latest moment the job may still leave the queue (a job still
    /// queued then ends as a queue timeout, nothing run); `None`: its time
    /// limit after it joined the queue. The call runner sets it to the
    /// limit after the call arrived, so the wait for the writer lock and
    /// the wait in the queue share one bound and never shorten the run's.
    pub start_by: Option<tokio::time::Instant>,
    /// Short label for log lines (e.g. `conda env list`); never values.
    pub label: String,
    /// Cancels the job: a queued job never runs (`Err(Cancelled)`), a running
    /// one is killed with its process tree (`Ok` with `cancelled = true`).
    pub cancel: CancellationToken,
    /// Checks enforced inside the conda process before the command acts
    /// (`conda_mcp_shared::guard`); the outcome is the result's `guard`.
    pub checks: Option<conda_mcp_shared::guard::InProcessChecks>,
}

impl Job {
    /// A job with the default limits (900 s, 1 MiB per stream, 1 MiB
    /// stdin), no stdin, no cwd, a label naming the program and the number
    /// of arguments (never their values: they are what the caller
    /// submitted), and a fresh cancellation token.
    pub fn new(program: Program, argv: Vec<String>) -> Self {
        let label = match program {
            Program::Conda => format!("conda ({} arguments)", argv.len()),
            Program::Python => "python helper".to_string(),
        };
        Job {
            program,
            argv,
            cwd: None,
            stdin: None,
            limits: Limits::DEFAULT,
            start_by: None,
            label,
            cancel: CancellationToken::new(),
            checks: None,
        }
    }
}

/// What happens to a job before its result.
#[derive(Debug, Clone, PartialEq)]
pub enum JobUpdate {
    /// The call waits for another conda-mcp process writing to the same
    /// installation (sent once, by the call runner before the job is
    /// queued: `crate::call::run::install_lock`).
    WaitingForWriter,
    /// The job waits; `position` jobs are ahead of it (the running one
    /// included). Sent when a job has to wait and whenever the number
    /// changes; a job that starts at once gets none.
    Queued {
        /// Jobs ahead of this one.
        position: usize,
    },
    /// The process was spawned (its pid is also its process group id).
    Started {
        /// Process id.
        pid: u32,
    },
    /// Counters while it runs, about once a second.
    Output {
        /// Bytes read from stdout so far (kept or not).
        stdout_bytes: u64,
        /// Bytes read from stderr so far (kept or not).
        stderr_bytes: u64,
        /// Time since spawn.
        elapsed: Duration,
        /// Fraction done from conda's `--json` progress records, if any.
        progress_fraction: Option<f64>,
    },
}

/// Why a job produced no [`ExecutionResult`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExecError {
    /// The job was cancelled while it waited in the queue; it never ran.
    #[error("the call was cancelled before it started")]
    Cancelled,
    /// The executor was shut down (the server is exiting: its stdin
    /// closed, or it was told to stop); the job never ran. Retryable on a
    /// new connection.
    #[error(
        "the server is shutting down (its input closed or it was told to stop): the call did not run"
    )]
    ShutDown,
    /// stdin larger than the job's `stdin_limit_bytes`; nothing ran.
    #[error("stdin of {len} bytes exceeds the limit of {limit} bytes")]
    StdinTooLarge {
        /// Bytes supplied.
        len: u64,
        /// The limit.
        limit: u64,
    },
    /// The worker could not be started or reached (missing binary, socket
    /// not there, no connection within the time allowed).
    #[error("cannot start or reach the conda-mcp worker: {0}")]
    WorkerUnavailable(String),
    /// The worker answered the handshake with a refusal (different build or
    /// protocol version, uid not allowed, another server connected).
    #[error("the conda-mcp worker refused the connection: {0}")]
    HandshakeRefused(String),
    /// The worker died or the connection broke while the job was in flight;
    /// the job's process group was killed. The next call starts (or
    /// reconnects to) a fresh worker.
    #[error(
        "the conda-mcp worker went away during the call ({0}); the call did not complete; the next call starts (or reconnects to) a fresh worker"
    )]
    WorkerDied(String),
    /// The worker refused the job before spawning anything (missing working
    /// directory, no interpreter configured, spawn failure, limits).
    #[error("the call could not be started: {0}")]
    Rejected(JobRefusal),
}
