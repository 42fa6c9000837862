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

use crate::limits::Limits;
use crate::result::ExecutionResult;

/// Version of this message set; bump on any change of the types below.
pub const PROTOCOL_VERSION: u32 = 2;

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
    /// Start a job (the worker runs one at a time).
    Run(RunRequest),
    /// Cancel a job: SIGTERM to its process group, SIGKILL after the grace,
    /// descendants reaped; the job ends with `cancelled = true`. Unknown or
    /// finished ids are ignored.
    Cancel {
        /// The job to cancel.
        job: JobId,
    },
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
    /// The job could not run at all (nonexistent cwd, spawn failure, stdin
    /// over the limit); nothing was spawned, or it was reaped.
    Failed {
        /// Human-readable reason; never contains stdin or argument values.
        reason: String,
    },
}
