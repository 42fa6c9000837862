//! Tool results: the one module that turns a call's [`Outcome`] into an MCP
//! `CallToolResult`.
//!
//! A call that ran returns its output as `structuredContent` (checked
//! against the tool's output schema before it is sent: real clients reject
//! a result that breaks it) plus text (a one-line summary and the serialized
//! output: some hosts show the model only the text, others only the
//! structured content). Invalid arguments, refusals and calls that could not
//! run are text results with `isError`.

use rmcp::model::{CallToolResult, ContentBlock as Content};
use serde_json::Value;

use crate::call::{CallOutput, Outcome, Ran};
use crate::completion::{self, Availability, CompletionAnswer};
use crate::policy::Refusal;
use crate::schema::ArgumentError;

/// Converts outcomes into tool results, checking structured content against
/// the output schemas.
pub struct Results {
    execution: jsonschema::Validator,
    answer: jsonschema::Validator,
    /// `--live-tools`: a change of conda or its plugins means "list the
    /// tools again", not "restart the server".
    live_tools: bool,
}

impl std::fmt::Debug for Results {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Results")
    }
}

fn compile(schema: &Value, what: &str) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .map_err(|e| format!("{what} does not compile: {}", e.kind().keyword()))
}

impl Results {
    /// Compiles the output schemas ([`super::tools::full_output_schema`] and
    /// `conda_cli_command`'s).
    ///
    /// Errors: a schema does not compile (a bug, reported at startup).
    pub fn new() -> Result<Self, String> {
        let execution = Value::Object(super::tools::full_output_schema().as_ref().clone());
        Ok(Self {
            execution: compile(&execution, "the output schema")?,
            answer: compile(
                &completion::output_schema(),
                "conda_cli_command's output schema",
            )?,
            live_tools: false,
        })
    }

    /// With `--live-tools` (`live`), the summary line of a result with
    /// `restart_required` says to list the tools again.
    pub fn with_live_tools(mut self, live: bool) -> Self {
        self.live_tools = live;
        self
    }

    /// The tool result of `outcome`.
    pub fn to_tool_result(&self, outcome: Outcome) -> CallToolResult {
        match outcome {
            Outcome::InvalidArguments { tool, errors } => invalid_arguments(&tool, &errors),
            Outcome::Refused(refusal) => refused(&refusal),
            Outcome::NotRun { what, reason } => not_run(&what, &reason),
            Outcome::Answered { value, .. } => CallToolResult::structured(value),
            Outcome::Ran {
                what,
                ran: Ran::Execution(output),
            } => self.execution(&what, &output),
            Outcome::Ran {
                ran: Ran::Answer(answer),
                ..
            } => self.answer(&answer),
        }
    }

    /// A conda execution. `isError` is set when the exit code is not 0, or
    /// on timeout or cancellation.
    fn execution(&self, what: &str, output: &CallOutput) -> CallToolResult {
        let structured = match serde_json::to_value(output) {
            Ok(v) => v,
            Err(e) => {
                tracing::error!("cannot serialize an execution result: {e}");
                return internal_error("the execution result could not be serialized");
            }
        };
        if !self.execution.is_valid(&structured) {
            tracing::error!("an execution result does not match the output schema");
            return internal_error("the execution result does not match the tool's output schema");
        }
        let text = format!("{}\n{}", summary(what, output, self.live_tools), structured);
        let mut r = CallToolResult::success(vec![Content::text(text)]);
        r.structured_content = Some(structured);
        r.is_error = Some(output.is_error());
        r
    }

    /// `conda_cli_command`'s answer: a line saying what it found, then the
    /// answer.
    fn answer(&self, answer: &CompletionAnswer) -> CallToolResult {
        let what = completion::TOOL_NAME;
        let structured = match serde_json::to_value(answer) {
            Ok(v) => v,
            Err(e) => return not_run(what, &e),
        };
        if !self.answer.is_valid(&structured) {
            tracing::error!("a conda_cli_command answer does not match its output schema");
            return not_run(what, &"the answer does not match the tool's output schema");
        }
        let path = if answer.resolved_path.is_empty() {
            "conda".to_owned()
        } else {
            format!("conda {}", answer.resolved_path.join(" "))
        };
        let line = match answer.availability {
            Availability::Available => {
                format!("{path}: described from conda-completion's manifest")
            }
            Availability::NotGenerated => format!(
                "{path}: conda-completion's manifest is not generated yet; {}",
                answer
                    .hint
                    .as_deref()
                    .unwrap_or("run `conda completion generate`")
            ),
            Availability::NotInstalled => {
                "conda-completion is not installed in the target".to_owned()
            }
            Availability::Unavailable => format!(
                "conda-completion's manifest is unavailable: {}",
                answer.message.as_deref().unwrap_or("unknown reason")
            ),
        };
        let mut r = CallToolResult::success(vec![Content::text(format!("{line}\n{structured}"))]);
        r.structured_content = Some(structured);
        r
    }
}

/// One line: what ran and how it ended (`live_tools`: the server rebuilds
/// its tools when conda or its plugins change).
pub fn summary(what: &str, output: &CallOutput, live_tools: bool) -> String {
    let r = &output.execution;
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
    if output.credentials_masked > 0 {
        s.push_str(&format!(
            " ({} credential(s) masked in the output)",
            output.credentials_masked
        ));
    }
    if output.restart_required {
        s.push_str(if live_tools {
            "; conda or its plugins changed: list the tools again to see the new ones"
        } else {
            "; restart the server to see the change in conda or its plugins"
        });
    }
    if output.confirmation_required {
        s = format!(
            "Nothing was changed: this ran as a dry run because the call did not set yes: true; repeat the call with yes: true to apply it. {s}"
        );
    }
    s
}

/// Invalid arguments: the tool name and every JSON path with its rule.
fn invalid_arguments(tool: &str, errors: &[ArgumentError]) -> CallToolResult {
    let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    CallToolResult::error(vec![Content::text(format!(
        "Invalid arguments for {tool}; nothing was run.\n{}",
        lines.join("\n")
    ))])
}

/// A policy refusal: its text names the missing startup option(s).
fn refused(refusal: &Refusal) -> CallToolResult {
    CallToolResult::error(vec![Content::text(format!(
        "Refused by the server's policy; nothing was run: {refusal}. The server must be restarted with that option to allow it."
    ))])
}

/// A call that could not run (worker unavailable or died, ...). The
/// reason may quote what the worker or conda said, so it goes through the
/// credential mask (always: it is the server's text, not conda's output).
fn not_run(what: &str, reason: &impl std::fmt::Display) -> CallToolResult {
    let text = format!("{what} could not be run: {reason}");
    CallToolResult::error(vec![Content::text(
        conda_mcp_shared::mask::mask(&text).into_owned(),
    )])
}

fn internal_error(msg: &str) -> CallToolResult {
    CallToolResult::error(vec![Content::text(format!("internal error: {msg}"))])
}
