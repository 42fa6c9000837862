//! The execution result: what the worker reports of one process.
//!
//! One type for every execution (generated tools, `conda_execute`,
//! discovery, helpers). The server embeds it in the tool output it returns
//! (with the fields only the server knows: `parsed_json`, the typed error,
//! `restart_required`, …), so its JSON shape is part of every tool's
//! `outputSchema`, generated with schemars: the schema and the value can
//! never drift apart. docs/reference.md "Results" documents the fields.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::guard::GuardOutcome;

/// The signal that ended a process the worker stopped (time limit or
/// cancellation): SIGTERM when the process exited within the grace after
/// it, SIGKILL when the grace ran out (or the connection dropped, which
/// skips the grace).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum StopSignal {
    /// The process exited after SIGTERM, within the grace.
    #[serde(rename = "SIGTERM")]
    Term,
    /// The process was killed with SIGKILL.
    #[serde(rename = "SIGKILL")]
    Kill,
}

impl StopSignal {
    /// The POSIX name (`SIGTERM`, `SIGKILL`).
    pub fn name(self) -> &'static str {
        match self {
            StopSignal::Term => "SIGTERM",
            StopSignal::Kill => "SIGKILL",
        }
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The outcome of one execution, as streamed back by the worker in
/// `Event::Finished`.
///
/// Invariants kept by the worker:
/// * `exit_code` is `None` exactly when the job timed out or was cancelled;
///   a death by signal N is `-N`.
/// * `stdout`/`stderr` hold at most the configured byte limit each, cut at a
///   UTF-8 character boundary, invalid UTF-8 replaced by U+FFFD.
/// * `stopped_by` is set exactly when the worker stopped the process (time
///   limit, cancellation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecutionResult {
    /// Process exit status; `-N` after death by signal `N`; `null` after a
    /// timeout or a cancellation, or when nothing ran.
    pub exit_code: Option<i32>,
    /// Standard output, at most the output limit in bytes, cut at a UTF-8
    /// character boundary; invalid UTF-8 is replaced by U+FFFD.
    pub stdout: String,
    /// Standard error, with the same limit and cut rules as `stdout`.
    pub stderr: String,
    /// Wall-clock run time of the process in milliseconds, from spawn to reap.
    pub duration_ms: u64,
    /// True when the time limit ended the process (then `exit_code` is null).
    pub timed_out: bool,
    /// True when the call was cancelled by the client (then `exit_code` is
    /// null).
    pub cancelled: bool,
    /// True when stdout produced more bytes than were kept.
    pub stdout_truncated: bool,
    /// True when stderr produced more bytes than were kept.
    pub stderr_truncated: bool,
    /// True when stdout was not clean text: invalid UTF-8 was replaced by
    /// U+FFFD, or it holds NUL characters (kept, as `\u0000` in JSON).
    /// Absent when false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stdout_lossy: bool,
    /// The same for stderr. Absent when false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stderr_lossy: bool,
    /// How a process the worker stopped (time limit, cancellation) ended:
    /// `SIGTERM` (it exited within the grace) or `SIGKILL`. Absent when the
    /// process ended by itself, or when nothing ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<StopSignal>,
    /// What the in-process guard reported (`None` when the job carried no
    /// checks). Travels between worker and server only: the server turns
    /// it into its own result fields and typed errors, so it is never part
    /// of a tool's output.
    #[serde(skip)]
    #[schemars(skip)]
    pub guard: Option<GuardOutcome>,
}

/// The wire form of [`ExecutionResult`] inside bincode frames.
///
/// bincode is not self-describing: it cannot skip absent fields
/// (`skip_serializing_if`), so on the wire every field is present. Used by
/// `protocol::JobEvent::Finished` through `#[serde(with = "...")]`.
pub mod wire {
    use super::{ExecutionResult, GuardOutcome, StopSignal};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Wire {
        exit_code: Option<i32>,
        stdout: String,
        stderr: String,
        duration_ms: u64,
        timed_out: bool,
        cancelled: bool,
        stdout_truncated: bool,
        stderr_truncated: bool,
        stdout_lossy: bool,
        stderr_lossy: bool,
        stopped_by: Option<StopSignal>,
        guard: Option<GuardOutcome>,
    }

    /// Serializes `r` in its wire form.
    pub fn serialize<S: Serializer>(r: &ExecutionResult, s: S) -> Result<S::Ok, S::Error> {
        Wire {
            exit_code: r.exit_code,
            stdout: r.stdout.clone(),
            stderr: r.stderr.clone(),
            duration_ms: r.duration_ms,
            timed_out: r.timed_out,
            cancelled: r.cancelled,
            stdout_truncated: r.stdout_truncated,
            stderr_truncated: r.stderr_truncated,
            stdout_lossy: r.stdout_lossy,
            stderr_lossy: r.stderr_lossy,
            stopped_by: r.stopped_by,
            guard: r.guard.clone(),
        }
        .serialize(s)
    }

    /// Deserializes the wire form.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ExecutionResult, D::Error> {
        let w = Wire::deserialize(d)?;
        Ok(ExecutionResult {
            exit_code: w.exit_code,
            stdout: w.stdout,
            stderr: w.stderr,
            duration_ms: w.duration_ms,
            timed_out: w.timed_out,
            cancelled: w.cancelled,
            stdout_truncated: w.stdout_truncated,
            stderr_truncated: w.stderr_truncated,
            stdout_lossy: w.stdout_lossy,
            stderr_lossy: w.stderr_lossy,
            stopped_by: w.stopped_by,
            guard: w.guard,
        })
    }
}

impl ExecutionResult {
    /// Masks every credential in `stdout` and `stderr` with
    /// [`crate::mask`]. Returns how many were masked. (The server masks the
    /// JSON it parses from stdout as well, with
    /// [`crate::mask::mask_json`].)
    pub fn mask_credentials(&mut self) -> u32 {
        let n =
            crate::mask::mask_string(&mut self.stdout) + crate::mask::mask_string(&mut self.stderr);
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// A result for a job that never ran (no process, no output): every
    /// flag false, `exit_code` null.
    pub fn nothing_ran() -> Self {
        ExecutionResult {
            exit_code: None,
            stdout: String::new(),
            stderr: String::new(),
            duration_ms: 0,
            timed_out: false,
            cancelled: false,
            stdout_truncated: false,
            stderr_truncated: false,
            stdout_lossy: false,
            stderr_lossy: false,
            stopped_by: None,
            guard: None,
        }
    }

    /// Whether an MCP tool result carrying this execution sets `isError`:
    /// a non-zero (or missing) exit code, or a timeout.
    pub fn is_error(&self) -> bool {
        self.timed_out || self.cancelled || self.exit_code != Some(0)
    }

    /// The JSON text of `stdout` as one document, when it is exactly one
    /// (whitespace around it allowed) and was not truncated. Helpers that
    /// print one answer document read it with this.
    pub fn stdout_document(&self) -> Option<serde_json::Value> {
        if self.stdout_truncated || self.stdout.trim().is_empty() {
            return None;
        }
        serde_json::from_str(&self.stdout).ok()
    }

    /// The answer document a helper program printed ([`Self::stdout_document`]
    /// of a run that exited with 0), read as `T`.
    ///
    /// Errors: [`NoAnswer::TimedOut`]; [`NoAnswer::NoDocument`] for any other
    /// exit or no single JSON document, with the exit code and the last
    /// non-blank stderr line (at most 300 characters: a Python traceback's
    /// last line, conda's import error); [`NoAnswer::Malformed`] when the
    /// document is not a `T`.
    pub fn helper_answer<T: serde::de::DeserializeOwned>(&self) -> Result<T, NoAnswer> {
        if self.timed_out {
            return Err(NoAnswer::TimedOut);
        }
        let Some(doc) = self.stdout_document().filter(|_| self.exit_code == Some(0)) else {
            let last = self
                .stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            return Err(NoAnswer::NoDocument {
                exit_code: self.exit_code,
                last_stderr_line: last.chars().take(300).collect(),
            });
        };
        serde_json::from_value(doc).map_err(|e| NoAnswer::Malformed(e.to_string()))
    }
}

/// Why a helper program's run gave no answer
/// ([`ExecutionResult::helper_answer`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoAnswer {
    /// The run reached its time limit.
    #[error("it timed out")]
    TimedOut,
    /// It exited otherwise than with 0, or printed no single JSON document.
    #[error("exit code {exit_code:?}, no answer document; last stderr line: {last_stderr_line}")]
    NoDocument {
        /// The exit code (`None`: killed by a signal, or never ran).
        exit_code: Option<i32>,
        /// The last non-blank stderr line, at most 300 characters.
        last_stderr_line: String,
    },
    /// The document is not the answer's shape: serde's message.
    #[error("malformed answer: {0}")]
    Malformed(String),
}
