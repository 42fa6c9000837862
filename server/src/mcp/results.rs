//! Tool results: an [`ExecutionResult`] as `structuredContent` (checked
//! against the output schema before it is sent: real clients reject a
//! result that breaks it) plus text (a one-line summary and the serialized
//! result: some hosts show the model only the text, others only the
//! structured content); and the error results for invalid arguments and
//! refusals.

use rmcp::model::{CallToolResult, ContentBlock as Content};
use serde_json::Value;

use conda_mcp_shared::ExecutionResult;

use crate::schema::ArgumentError;

/// Validates results against the output schema.
pub struct ResultChecker {
    validator: jsonschema::Validator,
}

impl std::fmt::Debug for ResultChecker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResultChecker")
    }
}

impl ResultChecker {
    /// Compiles the output schema ([`super::tools::output_schema`]).
    ///
    /// Errors: the schema does not compile (a bug, reported at startup).
    pub fn new() -> Result<Self, String> {
        let schema = Value::Object(super::tools::full_output_schema().as_ref().clone());
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&schema)
            .map_err(|e| format!("the output schema does not compile: {}", e.kind().keyword()))?;
        Ok(Self { validator })
    }

    /// The tool result for an execution of `what` (`conda env list`).
    /// `isError` is set when the exit code is not 0, or on timeout or
    /// cancellation.
    pub fn to_tool_result(&self, what: &str, result: &ExecutionResult) -> CallToolResult {
        let structured = match serde_json::to_value(result) {
            Ok(v) => v,
            Err(e) => {
                tracing::error!("cannot serialize an execution result: {e}");
                return internal_error("the execution result could not be serialized");
            }
        };
        if !self.validator.is_valid(&structured) {
            tracing::error!("an execution result does not match the output schema");
            return internal_error("the execution result does not match the tool's output schema");
        }
        let text = format!("{}\n{}", summary(what, result), structured);
        let mut r = CallToolResult::success(vec![Content::text(text)]);
        r.structured_content = Some(structured);
        r.is_error = Some(result.is_error());
        r
    }
}

/// One line: what ran and how it ended.
pub fn summary(what: &str, r: &ExecutionResult) -> String {
    let secs = r.duration_ms as f64 / 1000.0;
    let mut s = if r.timed_out {
        format!("{what}: timed out after {secs:.1} s")
    } else if r.cancelled {
        format!("{what}: cancelled after {secs:.1} s")
    } else {
        match r.exit_code {
            Some(0) => format!("{what}: succeeded in {secs:.1} s"),
            Some(c) if c < 0 => format!("{what}: killed by signal {} after {secs:.1} s", -c),
            Some(c) => format!("{what}: failed with exit code {c} after {secs:.1} s"),
            None => format!("{what}: ended without an exit code after {secs:.1} s"),
        }
    };
    if r.stdout_truncated || r.stderr_truncated {
        s.push_str(" (output truncated)");
    }
    if r.credentials_masked > 0 {
        s.push_str(&format!(
            " ({} credential(s) masked in the output)",
            r.credentials_masked
        ));
    }
    if r.restart_required {
        s.push_str("; restart the server to see the change in conda or its plugins");
    }
    s
}

/// Invalid arguments: the tool name and every JSON path with its rule.
pub fn invalid_arguments(tool: &str, errors: &[ArgumentError]) -> CallToolResult {
    let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    CallToolResult::error(vec![Content::text(format!(
        "Invalid arguments for {tool}; nothing was run.\n{}",
        lines.join("\n")
    ))])
}

/// A policy refusal: its text names the missing startup option(s).
pub fn refused(refusal: &impl std::fmt::Display) -> CallToolResult {
    CallToolResult::error(vec![Content::text(format!(
        "Refused by the server's policy; nothing was run: {refusal}. The server must be restarted with that option to allow it."
    ))])
}

/// A call that could not run (worker unavailable or died, ...).
pub fn not_run(what: &str, reason: &impl std::fmt::Display) -> CallToolResult {
    CallToolResult::error(vec![Content::text(format!(
        "{what} could not be run: {reason}"
    ))])
}

fn internal_error(msg: &str) -> CallToolResult {
    CallToolResult::error(vec![Content::text(format!("internal error: {msg}"))])
}
