//! Messages between the server and the worker.
//!
//! A connection starts with a handshake: the client (server side) sends
//! [`ClientMessage::Hello`], the worker answers [`WorkerMessage::Welcome`] or
//! [`WorkerMessage::Refused`] and closes. Protocol version *and* build id must
//! match: both binaries come from the same build, and a mismatch is refused
//! with a message naming both sides' values.
//!
//! After the handshake the client sends [`ClientMessage::Run`] and
//! [`ClientMessage::Cancel`]; the worker runs one job at a time and streams
//! [`WorkerMessage::Event`]s for it, ending with exactly one
//! [`JobEvent::Finished`] or [`JobEvent::Failed`].

use serde::{Deserialize, Serialize};

use crate::guard::InProcessChecks;
use crate::limits::Limits;
use crate::result::ExecutionResult;

/// Version of this message set; bump on any change of the types below.
pub const PROTOCOL_VERSION: u32 = 8;

/// Identifies the build of both binaries: crate version + protocol version.
/// Server and worker refuse each other when it differs.
pub fn build_id() -> String {
    format!(
        "conda-mcp {} proto {}",
        env!("CARGO_PKG_VERSION"),
        PROTOCOL_VERSION
    )
}

/// Identifier of one job, chosen by the client, unique per connection.
pub type JobId = u64;

/// Which program a job runs. The worker maps these to the paths fixed on its
/// own command line; nothing the client sends can name another program.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Program {
    /// The target conda executable (`--conda-exe` of the worker).
    Conda,
    /// The target installation's Python (`--python` of the worker), used only
    /// for the embedded discovery and completion helpers.
    Python,
}

/// One job: an authorized, compiled argv to run under limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    /// Client-chosen id, echoed in every event of this job.
    pub job: JobId,
    /// The program to run (see [`Program`]).
    pub program: Program,
    /// Arguments after the program (argv[1..]); passed as separate items,
    /// never through a shell.
    pub argv: Vec<String>,
    /// Working directory; `None` = the worker's own. Must exist.
    pub cwd: Option<String>,
    /// Bytes for the child's stdin; `None` = `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    /// Time limit (whole milliseconds on the wire), bytes kept per output
    /// stream, most stdin bytes; the worker clamps them to its own
    /// ceilings.
    pub limits: Limits,
    /// A short label for the worker's log line (e.g. the command path
    /// `conda env list`); never contains argument values.
    pub label: String,
    /// Checks the guard enforces inside the conda process before the
    /// command acts (conda jobs only; [`crate::guard`]). The outcome comes
    /// back as [`ExecutionResult::guard`]. A worker that cannot run them
    /// (conda is not a Python entry-point script) refuses the job with
    /// [`JobRefusal::ChecksUnsupported`].
    pub checks: Option<InProcessChecks>,
    /// Run the job only if the worker can fork it from its warm conda at
    /// once (a helper program, `Program::Python` with `-I -c SOURCE
    /// ARGS...`, while the warm conda is ready and idle); otherwise it is
    /// refused with [`JobRefusal::NotWarm`] and nothing ran. The server
    /// sets it for a helper it sends to an idle call lane, so that the lane
    /// is never held by a fresh interpreter's start.
    pub warm_only: bool,
}

/// Client → worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ClientMessage {
    /// First message of a connection.
    Hello {
        /// [`PROTOCOL_VERSION`] of the client.
        protocol_version: u32,
        /// [`build_id`] of the client.
        build_id: String,
    },
    /// Start a job (the worker runs one at a time). Boxed: a request with
    /// its checks is much larger than the other messages (the encoding is
    /// the request's own).
    Run(Box<RunRequest>),
    /// Cancel a job: SIGTERM to its process group, SIGKILL after the grace,
    /// descendants reaped; the job ends with `cancelled = true`. Unknown or
    /// finished ids are ignored.
    Cancel {
        /// The job to cancel.
        job: JobId,
    },
    /// Start the warm conda now, in the background, unless it is off, ready
    /// or starting (the server sends it when discovery has finished, so
    /// the first call can run warm). No answer; ignored while a job runs.
    WarmUp,
}

/// Worker → client.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum WorkerMessage {
    /// Handshake accepted.
    Welcome {
        /// [`PROTOCOL_VERSION`] of the worker.
        protocol_version: u32,
        /// [`build_id`] of the worker.
        build_id: String,
        /// Worker process id (for logs and tests).
        pid: u32,
    },
    /// Handshake refused; the worker closes the connection after this.
    Refused {
        /// Human-readable reason naming both sides' values.
        reason: String,
    },
    /// An event of a job.
    Event {
        /// The job this event belongs to.
        job: JobId,
        /// What happened.
        event: JobEvent,
    },
}

/// What happens to a job, in order: `Started`, any number of `Output`, then
/// exactly one of `Finished` or `Failed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum JobEvent {
    /// The process was spawned.
    Started {
        /// Its pid (also its process group id).
        pid: u32,
    },
    /// Periodic counters while the job runs (about once a second, and only
    /// when something changed or a second passed).
    Output {
        /// Bytes read from stdout so far (kept or not).
        stdout_bytes: u64,
        /// Bytes read from stderr so far (kept or not).
        stderr_bytes: u64,
        /// Milliseconds since spawn.
        elapsed_ms: u64,
        /// The last complete line of stdout seen so far that parsed as a JSON
        /// object with a numeric `progress` or `fraction` field in 0..=1
        /// (conda's `--json` progress records), if any.
        progress_fraction: Option<f64>,
    },
    /// The job ended (including timeout and cancellation). On the wire the
    /// result travels in the form of [`crate::result::wire`].
    Finished(#[serde(with = "crate::result::wire")] ExecutionResult),
    /// The worker refused the job: nothing was spawned, or what was
    /// spawned was reaped.
    Failed(JobRefusal),
}

/// Why the worker did not run a job. Its `Display` is the sentence the
/// server shows (after "the call could not be started: "); it never
/// contains argument or stdin values, only the worker's own numbers and the
/// operating system's error text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
pub enum JobRefusal {
    /// A `Python` job on a worker started without `--python`.
    #[error("this worker has no interpreter configured (--python); Python jobs cannot run")]
    NoInterpreter,
    /// The working directory is missing or not a directory.
    #[error("the working directory does not exist or is not a directory")]
    BadCwd,
    /// More stdin than the (clamped) limit allows.
    #[error("stdin of {len_bytes} bytes exceeds the limit of {limit_bytes} bytes")]
    StdinTooLarge {
        /// Bytes supplied.
        len_bytes: u64,
        /// The limit in force (after the worker's clamp).
        limit_bytes: u64,
    },
    /// The operating system refused to start the program (or it came up
    /// without its pipes).
    #[error("could not start the program: {error}")]
    Spawn {
        /// The operating system's error text.
        error: String,
    },
    /// A second `Run` while a job runs (the worker runs one at a time; the
    /// server's lane never sends one).
    #[error("the worker is already running a job (one at a time)")]
    Busy,
    /// The job carries in-process checks and this worker cannot run them:
    /// conda is not a Python entry-point script (the guard runs in conda's
    /// own interpreter), or the job is not a conda job. Nothing ran.
    #[error("the in-process checks cannot run here: {reason}")]
    ChecksUnsupported {
        /// Why (the worker's own words, no argument values).
        reason: String,
    },
    /// A [`RunRequest::warm_only`] job that could not be forked from the
    /// warm conda at once (none ready or idle, another interpreter, or not
    /// a helper's argv). Nothing ran.
    #[error("the warm conda cannot run this job now")]
    NotWarm,
    /// The worker's task running the job ended without a result (it
    /// panicked or was cancelled).
    #[error("the job task failed: {error}")]
    TaskFailed {
        /// What the runtime said.
        error: String,
    },
}

impl JobRefusal {
    /// [`JobRefusal::Spawn`] from the operating system's error.
    pub fn spawn(e: &std::io::Error) -> Self {
        JobRefusal::Spawn {
            error: e.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sentences of the worker's refusals (the server shows them after
    /// "the call could not be started: ").
    #[test]
    fn refusals_read_as_before_they_were_typed() {
        for (refusal, text) in [
            (
                JobRefusal::NoInterpreter,
                "this worker has no interpreter configured (--python); Python jobs cannot run",
            ),
            (
                JobRefusal::BadCwd,
                "the working directory does not exist or is not a directory",
            ),
            (
                JobRefusal::StdinTooLarge {
                    len_bytes: 10,
                    limit_bytes: 5,
                },
                "stdin of 10 bytes exceeds the limit of 5 bytes",
            ),
            (
                JobRefusal::spawn(&std::io::Error::from(std::io::ErrorKind::NotFound)),
                "could not start the program: entity not found",
            ),
            (
                JobRefusal::ChecksUnsupported {
                    reason: "x is not a script".into(),
                },
                "the in-process checks cannot run here: x is not a script",
            ),
            (
                JobRefusal::Busy,
                "the worker is already running a job (one at a time)",
            ),
            (
                JobRefusal::TaskFailed {
                    error: "task 3 panicked".into(),
                },
                "the job task failed: task 3 panicked",
            ),
        ] {
            assert_eq!(refusal.to_string(), text);
        }
    }
}
