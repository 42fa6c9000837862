//! The execution result: what every conda execution returns.
//!
//! One type for every path (generated tools, `conda_execute`, discovery):
//! README.md "Results" documents its fields. It is also the `outputSchema`
//! of every tool, generated with schemars, so the schema and the value can
//! never drift apart.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The outcome of one conda execution, as streamed back by the worker in
/// `Event::Finished` and returned to the MCP host as `structuredContent`.
///
/// Invariants kept by the worker:
/// * `exit_code` is `None` exactly when the job timed out or was cancelled;
///   a death by signal N is `-N`.
/// * `stdout`/`stderr` hold at most the configured byte limit each, cut at a
///   UTF-8 character boundary, invalid UTF-8 replaced by U+FFFD.
/// * `parsed_json` is present only when the untruncated stdout is exactly one
///   JSON document (no NaN/Infinity).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecutionResult {
    /// Process exit status; `-N` after death by signal `N`; `null` after a
    /// timeout or a cancellation.
    pub exit_code: Option<i32>,
    /// Standard output, at most the output limit in bytes, cut at a UTF-8
    /// character boundary; invalid UTF-8 is replaced by U+FFFD.
    pub stdout: String,
    /// Standard error, with the same limit and cut rules as `stdout`.
    pub stderr: String,
    /// Wall-clock run time of the process in milliseconds, from spawn to reap.
    pub duration_ms: u64,
    /// stdout parsed as JSON when it is exactly one complete JSON document and
    /// was not truncated; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parsed_json: Option<serde_json::Value>,
    /// True when the time limit ended the process (then `exit_code` is null).
    pub timed_out: bool,
    /// True when the call was cancelled by the client (then `exit_code` is
    /// null).
    pub cancelled: bool,
    /// True when stdout produced more bytes than were kept.
    pub stdout_truncated: bool,
    /// True when stderr produced more bytes than were kept.
    pub stderr_truncated: bool,
}

/// The wire form of [`ExecutionResult`] inside bincode frames.
///
/// bincode is not self-describing: it cannot decode a `serde_json::Value`
/// (which needs `deserialize_any`) and it cannot skip absent fields
/// (`skip_serializing_if`). The JSON shape above is what MCP hosts see, so it
/// stays; on the wire `parsed_json` travels as its JSON text instead. Used by
/// `protocol::JobEvent::Finished` through `#[serde(with = "...")]`.
pub mod wire {
    use super::ExecutionResult;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Serialize, Deserialize)]
    struct Wire {
        exit_code: Option<i32>,
        stdout: String,
        stderr: String,
        duration_ms: u64,
        parsed_json: Option<String>,
        timed_out: bool,
        cancelled: bool,
        stdout_truncated: bool,
        stderr_truncated: bool,
    }

    /// Serializes `r` in its wire form (`parsed_json` as JSON text).
    pub fn serialize<S: Serializer>(r: &ExecutionResult, s: S) -> Result<S::Ok, S::Error> {
        Wire {
            exit_code: r.exit_code,
            stdout: r.stdout.clone(),
            stderr: r.stderr.clone(),
            duration_ms: r.duration_ms,
            parsed_json: r.parsed_json.as_ref().map(|v| v.to_string()),
            timed_out: r.timed_out,
            cancelled: r.cancelled,
            stdout_truncated: r.stdout_truncated,
            stderr_truncated: r.stderr_truncated,
        }
        .serialize(s)
    }

    /// Deserializes the wire form; a `parsed_json` text that is not valid
    /// JSON is a decode error.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ExecutionResult, D::Error> {
        let w = Wire::deserialize(d)?;
        let parsed_json = match w.parsed_json {
            Some(text) => Some(serde_json::from_str(&text).map_err(serde::de::Error::custom)?),
            None => None,
        };
        Ok(ExecutionResult {
            exit_code: w.exit_code,
            stdout: w.stdout,
            stderr: w.stderr,
            duration_ms: w.duration_ms,
            parsed_json,
            timed_out: w.timed_out,
            cancelled: w.cancelled,
            stdout_truncated: w.stdout_truncated,
            stderr_truncated: w.stderr_truncated,
        })
    }
}

impl ExecutionResult {
    /// Masks every credential in `stdout`, `stderr` and the string values
    /// (and keys) of `parsed_json` with [`crate::mask`], keeping
    /// `parsed_json` valid JSON of the same shape. Returns how many were
    /// masked.
    pub fn mask_credentials(&mut self) -> u32 {
        let mut n = crate::mask::mask_string(&mut self.stdout);
        n += crate::mask::mask_string(&mut self.stderr);
        if let Some(v) = &mut self.parsed_json {
            n += crate::mask::mask_json(v);
        }
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// Whether an MCP tool result carrying this execution sets `isError`:
    /// a non-zero (or missing) exit code, or a timeout.
    pub fn is_error(&self) -> bool {
        self.timed_out || self.cancelled || self.exit_code != Some(0)
    }
}
