//! Tool results: the one module that turns a call's [`Outcome`] into an MCP
//! `CallToolResult`.
//!
//! Every result carries `structuredContent` valid against its tool's output
//! schema (checked before it is sent: real clients reject a result that
//! breaks it) and a text block: a one-line summary, then the structured
//! content serialized compactly (some hosts show the model only the text,
//! others only the structured content). Every result with `isError` carries
//! a typed `error`; a call that ran nothing (invalid arguments, refused, not
//! run) has the same shape with `exit_code: null`, empty streams and
//! `duration_ms: 0` (an approval that was not given: the milliseconds of
//! its dry run and of the wait for the person), so it stays valid against
//! the output schema.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock as Content, JsonObject};
use serde_json::{Value, json};

use conda_mcp_shared::mask::mask;

use crate::call::plan::restrict::Restriction;
use crate::call::run::install_lock::LockError;
use crate::call::shape::error::{ErrorCode, ToolError};
use crate::call::{CallOutput, NotRun, Outcome, Ran};
use crate::completion::{self, Availability, CompletionAnswer};
use crate::policy::Refusal;
use crate::schema::ArgumentError;
use crate::worker_client::{ExecError, JobRefusal};

/// Converts outcomes into tool results, checking structured content against
/// the output schemas.
pub struct Results {
    execution: jsonschema::Validator,
    answer: jsonschema::Validator,
    inventory: jsonschema::Validator,
    /// `--live-tools`: a change of conda or its plugins means "list the
    /// tools again", not "restart the server".
    live_tools: bool,
}

impl std::fmt::Debug for Results {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Results")
    }
}

/// An output schema of the tool results that does not compile (a bug,
/// reported at startup): which schema, and the JSON Schema keyword at fault.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} does not compile: {keyword}")]
pub struct SchemaCompileError {
    /// Which schema (`the output schema`).
    pub what: &'static str,
    /// The keyword the validator could not build.
    pub keyword: String,
}

fn compile(
    schema: &Value,
    what: &'static str,
) -> Result<jsonschema::Validator, SchemaCompileError> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .map_err(|e| SchemaCompileError {
            what,
            keyword: e.kind().keyword().to_string(),
        })
}

/// The typed error of a call that could not run.
fn not_run_error(reason: &NotRun) -> ToolError {
    let code = match reason {
        NotRun::Unavailable(_) => ErrorCode::Unavailable,
        NotRun::Exec(ExecError::Cancelled) => ErrorCode::Cancelled,
        NotRun::Exec(ExecError::StdinTooLarge { .. }) => ErrorCode::InvalidArguments,
        NotRun::Exec(
            ExecError::WorkerUnavailable(_)
            | ExecError::HandshakeRefused(_)
            | ExecError::WorkerDied(_)
            | ExecError::ShutDown,
        ) => ErrorCode::WorkerUnavailable,
        NotRun::Exec(ExecError::Rejected(
            JobRefusal::BadCwd | JobRefusal::StdinTooLarge { .. },
        )) => ErrorCode::InvalidArguments,
        // The worker could not start the program, or broke its own rules.
        NotRun::Exec(ExecError::Rejected(_)) => ErrorCode::Internal,
        NotRun::Helper(_) | NotRun::Inventory(_) => ErrorCode::HelperFailed,
        NotRun::InstallLock(LockError::TimedOut) => ErrorCode::QueueTimeout,
        NotRun::InstallLock(LockError::Cancelled) => ErrorCode::Cancelled,
        NotRun::InstallLock(LockError::Io { .. }) => ErrorCode::Internal,
        NotRun::Internal(_) => ErrorCode::Internal,
        NotRun::Declined { .. } => ErrorCode::Declined,
        NotRun::PlanChanged { .. } => ErrorCode::PlanChanged,
        NotRun::ApprovalUnavailable { .. } => ErrorCode::ApprovalUnavailable,
        NotRun::AwaitingApproval(card) => {
            return ToolError::new(ErrorCode::ApprovalPending, reason.to_string()).with(
                "approval",
                json!({
                    "id": card.id,
                    "expires_in_seconds": card.expires_in_seconds,
                    "decide_tool": crate::tools::approval_card::DECIDE_TOOL,
                    "status_tool": crate::tools::approval_card::STATUS_TOOL,
                    "plan": card.plan,
                }),
            );
        }
        NotRun::ApprovalRefused(_) => ErrorCode::ApprovalInvalid,
    };
    ToolError::new(code, reason.to_string())
}

impl Results {
    /// Compiles the output schemas ([`full_output_schema`] and
    /// `conda_cli_command`'s).
    ///
    /// Errors: a schema does not compile (a bug, reported at startup).
    pub fn new() -> Result<Self, SchemaCompileError> {
        let execution = Value::Object(full_output_schema().as_ref().clone());
        Ok(Self {
            execution: compile(&execution, "the output schema")?,
            answer: compile(
                &completion::output_schema(),
                "conda_cli_command's output schema",
            )?,
            inventory: compile(
                &crate::inventory::output_schema(),
                "conda_inventory's output schema",
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

    /// The tool result of `outcome`; `restart_required` is the restart
    /// watch's flag, carried by results of calls that ran nothing too.
    pub fn to_tool_result(&self, outcome: Outcome, restart_required: bool) -> CallToolResult {
        match outcome {
            Outcome::InvalidArguments { tool, errors } => {
                let text = invalid_arguments_text(&tool, &errors);
                let list: Vec<Value> = errors
                    .iter()
                    .map(|e| json!({"path": e.path, "rule": e.rule}))
                    .collect();
                let error = ToolError::new(ErrorCode::InvalidArguments, text.replace('\n', " "))
                    .with("errors", list);
                self.nothing_ran(&tool, &text, error, restart_required)
            }
            Outcome::Refused(refusal) => {
                let text = refused_text(&refusal);
                let mut error = ToolError::new(ErrorCode::Refused, text.clone())
                    .with("missing", refusal.missing.clone())
                    .with("command", refusal.command.clone());
                if !refusal.missing_scopes.is_empty() {
                    error = error.with("missing_scopes", refusal.missing_scopes.clone());
                }
                self.nothing_ran("", &text, error, restart_required)
            }
            Outcome::Restricted(restriction) => {
                let text = restriction.to_string();
                let error = restricted_error(&restriction, &text);
                self.nothing_ran("", &text, error, restart_required)
            }
            Outcome::EnvironmentExists(env) => {
                let text = environment_exists_text(env.packages, env.root);
                let error = ToolError::new(ErrorCode::EnvironmentExists, text.clone())
                    .with("prefix", env.prefix.display().to_string())
                    .with("packages", env.packages as u64)
                    .with("root", env.root);
                self.nothing_ran("", &text, error, restart_required)
            }
            Outcome::NotRun { what, reason } => {
                // The reason may quote what the worker or conda said, so it
                // goes through the credential mask (always: it is the
                // server's text, not conda's output).
                let text = match &reason {
                    NotRun::AwaitingApproval(card) => mask(&format!(
                        "{what}: {reason}\n\nWhat the card shows:\n{}",
                        card.message
                    ))
                    .into_owned(),
                    _ => mask(&format!("{what} could not be run: {reason}")).into_owned(),
                };
                let mut error = not_run_error(&reason);
                error.message = mask(&error.message).into_owned();
                // An approval that was not given still ran the dry run
                // (and waited for the person): the result says how long.
                let mut r = self.nothing_ran_for(
                    &what,
                    &text,
                    error,
                    restart_required,
                    reason.duration_ms(),
                );
                // The card's result is not an error result: Claude does not
                // mount a view for a result with isError, ChatGPT unmounts it
                // (docs/approval.md "Hosts and error results"). Its text and
                // error code still say that nothing changed yet.
                if matches!(reason, NotRun::AwaitingApproval(_)) {
                    r.is_error = Some(false);
                }
                r
            }
            Outcome::DryRunNotHonoured { what, forced } => {
                let text = format!(
                    "{what} was not run: conda's configuration marks `{}` final in {}, so conda would not honour --dry-run and this call, which the server runs only as a dry run, would change the installation; nothing ran. Remove the final marker (#!final) there; the server sees the change before the next call, without a restart.",
                    forced.key,
                    forced.place()
                );
                let mut error = ToolError::new(ErrorCode::DryRunNotHonoured, text.clone())
                    .with("key", forced.key.clone());
                error = match forced.file() {
                    Some(file) => error.with("file", file),
                    None => error.with(
                        "variable",
                        format!("CONDA_{}", forced.key.to_ascii_uppercase()),
                    ),
                };
                self.nothing_ran(&what, &text, error, restart_required)
            }
            Outcome::Stopped { what, error } => {
                let text = error.message.clone();
                self.nothing_ran(&what, &text, *error, restart_required)
            }
            Outcome::Answered { value, .. } => CallToolResult::structured(value),
            Outcome::Ran {
                what,
                ran: Ran::Execution(output),
            } => self.execution(&what, &output),
            Outcome::Ran {
                ran: Ran::Answer(answer),
                ..
            } => self.answer(&answer),
            Outcome::Ran {
                ran: Ran::Inventory(answer),
                ..
            } => self.inventory(&answer),
        }
    }

    /// An `isError` result for a call that ran nothing: `text`, then the
    /// structured content (of `conda_cli_command`'s shape for that tool,
    /// else a [`CallOutput`] with no exit code and no output).
    fn nothing_ran(
        &self,
        tool: &str,
        text: &str,
        error: ToolError,
        restart_required: bool,
    ) -> CallToolResult {
        self.nothing_ran_for(tool, text, error, restart_required, 0)
    }

    /// [`Results::nothing_ran`] for a call that spent `duration_ms`
    /// milliseconds before it ended (the dry run of an approval that was
    /// not given), which its `duration_ms` reports.
    fn nothing_ran_for(
        &self,
        tool: &str,
        text: &str,
        error: ToolError,
        restart_required: bool,
        duration_ms: u64,
    ) -> CallToolResult {
        let structured = if tool == completion::TOOL_NAME {
            json!({
                "availability": "unavailable",
                "requested_path": [],
                "resolved_path": [],
                "message": error.message,
                "error": error,
            })
        } else if tool == crate::inventory::TOOL_NAME {
            json!({
                "query": "",
                "environments": 0,
                "matched": 0,
                "rows": [],
                "truncated": false,
                "error": error,
            })
        } else {
            let mut out = CallOutput::nothing_ran(error);
            out.restart_required = restart_required;
            out.execution.duration_ms = duration_ms;
            serde_json::to_value(&out).unwrap_or(Value::Null)
        };
        let mut r = CallToolResult::error(vec![Content::text(format!("{text}\n{structured}"))]);
        r.structured_content = Some(structured);
        r
    }

    /// A bug inside the server, as an `isError` result that ran nothing.
    fn internal_error(&self, msg: &'static str) -> CallToolResult {
        self.to_tool_result(
            Outcome::NotRun {
                what: "the call".to_owned(),
                reason: NotRun::Internal(msg),
            },
            false,
        )
    }

    /// A conda execution. `isError` is set when the exit code is not 0, or
    /// on timeout or cancellation.
    fn execution(&self, what: &str, output: &CallOutput) -> CallToolResult {
        let structured = match serde_json::to_value(output) {
            Ok(v) => v,
            Err(e) => {
                tracing::error!("cannot serialize an execution result: {e}");
                return self.internal_error("the execution result could not be serialized");
            }
        };
        if !self.execution.is_valid(&structured) {
            tracing::error!("an execution result does not match the output schema");
            return self
                .internal_error("the execution result does not match the tool's output schema");
        }
        let text = format!("{}\n{}", summary(what, output, self.live_tools), structured);
        let mut r = CallToolResult::success(vec![Content::text(text)]);
        r.structured_content = Some(structured);
        r.is_error = Some(output.is_error());
        r
    }

    /// `conda_inventory`'s answer: its summary line
    /// ([`crate::inventory::summary`]), then the answer.
    fn inventory(&self, answer: &crate::inventory::InventoryAnswer) -> CallToolResult {
        let structured = match serde_json::to_value(answer) {
            Ok(v) => v,
            Err(e) => {
                tracing::error!("cannot serialize a conda_inventory answer: {e}");
                return self.internal_error("the answer could not be serialized");
            }
        };
        if !self.inventory.is_valid(&structured) {
            tracing::error!("a conda_inventory answer does not match its output schema");
            return self.internal_error("the answer does not match the tool's output schema");
        }
        let line = format!(
            "{}: {}",
            crate::inventory::TOOL_NAME,
            crate::inventory::summary(answer)
        );
        let mut r = CallToolResult::success(vec![Content::text(format!("{line}\n{structured}"))]);
        r.structured_content = Some(structured);
        r
    }

    /// `conda_cli_command`'s answer: a line saying what it found, then the
    /// answer.
    fn answer(&self, answer: &CompletionAnswer) -> CallToolResult {
        let what = completion::TOOL_NAME;
        let internal = |reason: &'static str| {
            self.to_tool_result(
                Outcome::NotRun {
                    what: what.to_owned(),
                    reason: NotRun::Internal(reason),
                },
                false,
            )
        };
        let structured = match serde_json::to_value(answer) {
            Ok(v) => v,
            Err(e) => {
                tracing::error!("cannot serialize a conda_cli_command answer: {e}");
                return internal("the answer could not be serialized");
            }
        };
        if !self.answer.is_valid(&structured) {
            tracing::error!("a conda_cli_command answer does not match its output schema");
            return internal("the answer does not match the tool's output schema");
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

/// One line: what ran, how it ended, the error code, and what a cut kept
/// with how to narrow the call (`live_tools`: the server rebuilds its tools
/// when conda or its plugins change).
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
    if let Some(e) = &output.error {
        let code = serde_json::to_value(e.code).unwrap_or(Value::Null);
        s.push_str(&format!(
            "; error {}",
            code.as_str().unwrap_or("conda_error")
        ));
        if e.code == ErrorCode::CrashedAfterSuccess {
            s.push_str(": the change was very probably applied, check before repeating it");
        }
        if e.code == ErrorCode::PostconditionFailed {
            s.push_str(": conda exited 0 but did not do what it was asked");
        }
    }
    if let Some(cut) = &output.cut {
        s.push_str(&format!(
            "; result cut to fit {} bytes",
            cut.max_result_bytes
        ));
        if let Some(j) = &cut.parsed_json {
            s.push_str(&format!(
                " (parsed_json keeps {} of {} items",
                j.kept, j.total
            ));
            if j.kept_end == crate::call::shape::budget::KeptEnd::Last {
                s.push_str(", the newest of each list");
            }
            if j.keys_dropped > 0 {
                s.push_str(&format!(", {} top-level keys left out", j.keys_dropped));
            }
            s.push(')');
        }
        s.push_str(": ");
        s.push_str(&cut.narrow);
    }
    if output.restart_required {
        s.push_str(if live_tools {
            "; conda or its plugins changed: list the tools again to see the new ones"
        } else {
            "; restart the server to see the change in conda or its plugins"
        });
    }
    if let Some(u) = &output.unmanaged_files {
        s = if u.removed {
            format!(
                "The environment at {} also held {}; they were removed with it. {s}",
                u.prefix,
                u.phrase()
            )
        } else {
            format!(
                "The environment at {} holds {}: removing it deletes them too, so applying this is refused (unmanaged_files_present) unless the call sets remove_unmanaged_files: true. {s}",
                u.prefix,
                u.phrase()
            )
        };
    }
    if let Some(r) = &output.replaced_environment {
        s = format!("{} {s}", r.sentence(output.is_error()));
    } else if output.dry_run_for_confirmation {
        s = format!("{} {s}", dry_run_banner(output));
    }
    s
}

/// What a dry run the server made of a call without `yes: true` means, and
/// the next step that applies on this server: repeat with `yes: true`
/// only when conda's plan succeeded and the server may apply it.
fn dry_run_banner(output: &CallOutput) -> String {
    const NOTHING: &str =
        "Nothing was changed: this ran as a dry run because the call did not set yes: true";
    if output.is_error() {
        format!(
            "{NOTHING}, and conda's dry run failed (see error): fix the call first; repeating it with yes: true would fail the same way."
        )
    } else if !output.apply_requires.is_empty() {
        format!(
            "{NOTHING}; conda's plan is below. This server cannot apply it: yes: true is refused until the server is restarted with {}.",
            output.apply_requires.join(" and ")
        )
    } else {
        format!("{NOTHING}; repeat the call with yes: true to apply it.")
    }
}

/// Invalid arguments: the tool name and every JSON path with its rule.
fn invalid_arguments_text(tool: &str, errors: &[ArgumentError]) -> String {
    let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    format!(
        "Invalid arguments for {tool}; nothing was run.\n{}",
        lines.join("\n")
    )
}

/// The guard's refusal of a create whose target holds an environment (the
/// prefix is in `details`, not in the text).
fn environment_exists_text(packages: usize, root: bool) -> String {
    if root {
        return format!(
            "The target is conda's root prefix (the base environment, {packages} package(s)); nothing was run. conda never replaces it: create the environment under another name or prefix."
        );
    }
    format!(
        "An environment already exists at the target prefix (details.prefix) with {packages} package(s); nothing was run. Creating it again, or renaming another environment onto it, would remove it, every file under the prefix included. To replace it, repeat the call with {}: true where the tool has it (conda_create, conda_env_create, conda_execute; without yes: true it shows what would be removed and linked instead; with yes: true it applies); for a rename, choose another destination or remove that environment first.",
        crate::tools::server_options::REPLACE_EXISTING
    )
}

/// A policy refusal: its text names the missing startup option(s), or the
/// scope(s) the caller's access token lacks.
fn refused_text(refusal: &Refusal) -> String {
    let mut text = format!("Refused by the server's policy; nothing was run: {refusal}.");
    if !refusal.missing.is_empty() {
        text.push_str(" The server must be restarted with that option to allow it.");
    }
    if !refusal.missing_scopes.is_empty() {
        text.push_str(
            " The caller's access token must be granted that scope by its authorization server.",
        );
    }
    text
}

/// The typed error of a [`Restriction`] whose sentence is `text`.
fn restricted_error(restriction: &Restriction, text: &str) -> ToolError {
    match restriction {
        Restriction::ProtectedEnvironment { prefix, remedy, .. } => {
            let error = ToolError::new(ErrorCode::ProtectedEnvironment, text)
                .with("prefix", prefix.clone());
            if remedy.is_empty() {
                error
            } else {
                error.with("allowed_by", "--allow-base-writes")
            }
        }
        Restriction::ChannelNotAllowed {
            channel, origin, ..
        } => ToolError::new(ErrorCode::ChannelNotAllowed, text)
            .with("channel", channel.clone())
            .with("source", origin.word()),
        Restriction::ReadNotAllowed(r) => ToolError::new(ErrorCode::ReadPathNotAllowed, text)
            .with("option", r.option.clone())
            .with("rule", r.rule.word())
            .with("allowed_by", "--allow-read-path"),
    }
}

/// The complete output schema (with `required`, nested definitions and
/// `additionalProperties: false`): what results are checked against before
/// they are sent, and `result_schema` in `conda://capabilities`. Written
/// without type arrays ("integer or null" is an `anyOf` of single types).
pub fn full_output_schema() -> Arc<JsonObject> {
    let full = rmcp::handler::server::common::schema_for_output::<CallOutput>();
    let mut v = Value::Object(full.as_ref().clone());
    crate::schema::without_type_arrays(&mut v);
    Arc::new(match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::call::shape::{self, CallFacts, ResultSettings};
    use conda_mcp_shared::{ExecutionResult, StopSignal};

    fn structured(r: &CallToolResult) -> Value {
        r.structured_content.clone().expect("structured content")
    }

    #[test]
    fn calls_that_ran_nothing_carry_a_valid_typed_error() {
        let results = Results::new().expect("schemas compile");
        let schema = Value::Object(full_output_schema().as_ref().clone());
        let validator = compile(&schema, "schema").expect("compiles");
        let cases = [
            (
                NotRun::Exec(ExecError::WorkerDied("eof".into())),
                "worker_unavailable",
                true,
            ),
            (
                NotRun::Exec(ExecError::WorkerUnavailable("no binary".into())),
                "worker_unavailable",
                true,
            ),
            (NotRun::Exec(ExecError::Cancelled), "cancelled", false),
            (
                NotRun::Unavailable("the server was not started with --allow-exec"),
                "unavailable",
                false,
            ),
            (NotRun::Internal("a bug"), "internal", false),
        ];
        for (reason, code, retryable) in cases {
            let r = results.to_tool_result(
                Outcome::NotRun {
                    what: "conda env list".into(),
                    reason,
                },
                true,
            );
            assert_eq!(r.is_error, Some(true));
            let s = structured(&r);
            assert!(validator.is_valid(&s), "{s}");
            assert_eq!(s["error"]["code"], json!(code));
            assert_eq!(s["error"]["retryable"], json!(retryable));
            assert_eq!(s["exit_code"], Value::Null);
            assert_eq!(s["restart_required"], json!(true));
        }
        // conda_cli_command keeps its own answer shape.
        let r = results.to_tool_result(
            Outcome::InvalidArguments {
                tool: completion::TOOL_NAME.into(),
                errors: vec![ArgumentError {
                    path: "/command_path".into(),
                    rule: "required field is missing".into(),
                }],
            },
            false,
        );
        let s = structured(&r);
        let answer = compile(&completion::output_schema(), "answer").expect("compiles");
        assert!(answer.is_valid(&s), "{s}");
        assert_eq!(s["error"]["code"], json!("invalid_arguments"));
    }

    #[test]
    fn a_cancelled_execution_says_how_it_ended() {
        let mut exec = ExecutionResult::nothing_ran();
        exec.cancelled = true;
        exec.duration_ms = 1200;
        exec.stopped_by = Some(StopSignal::Kill);
        let out = shape::shape(
            exec,
            ResultSettings::default(),
            CallFacts {
                command: &["conda".to_owned(), "install".to_owned()],
                timeout_ms: 900_000,
                waited_ms: 0,
                argv: &[],
                verbose: false,
            },
        );
        let e = out.error.clone().expect("error");
        assert_eq!(e.code, ErrorCode::Cancelled);
        assert_eq!(e.details["signal"], json!("SIGKILL"));
        assert!(summary("conda install", &out, false).contains("error cancelled"));
    }
}
