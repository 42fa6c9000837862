//! The `conda_cli_command` tool: listing and calling (see
//! [`crate::completion`] for what it reads and why).
//!
//! It runs on the discovery lane, never behind a running conda, needs no
//! policy option (it only reads a file conda-completion wrote), and its
//! result is checked against its own output schema before it is sent.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{CallToolResult, ContentBlock as Content, JsonObject, Tool, ToolAnnotations};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::catalog::Catalog;
use crate::completion::{self, AnswerError, Availability, CompletionAnswer};
use crate::worker_client::{ExecError, Executor, Job, Program};

use super::results;

/// Longest the helper may run: reading one msgpack file takes well under a
/// second; the server's own `--timeout` applies when it is shorter.
const HELPER_TIMEOUT: Duration = Duration::from_secs(60);

/// The tool's definition and its output-schema validator.
#[derive(Debug)]
pub struct CliCommandTool {
    /// What `tools/list` shows.
    pub tool: Tool,
    validator: Validator,
}

struct Validator(jsonschema::Validator);

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Validator")
    }
}

fn as_object(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

impl CliCommandTool {
    /// The tool when the target has conda-completion ≥ 0.3, else `None`.
    ///
    /// Errors: the output schema does not compile (a bug, reported at
    /// startup).
    pub fn for_catalog(catalog: &Catalog) -> Result<Option<Self>, String> {
        if !completion::plugin_present(catalog) {
            return Ok(None);
        }
        let output = completion::output_schema();
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&output)
            .map_err(|e| format!("conda_cli_command's output schema does not compile: {e}"))?;
        let tool = Tool::new_with_raw(
            completion::TOOL_NAME,
            Some(completion::DESCRIPTION.into()),
            Arc::new(as_object(completion::input_schema())),
        )
        .with_title("conda command reference")
        .with_annotations(
            ToolAnnotations::new()
                .read_only(true)
                .destructive(false)
                .idempotent(true)
                .open_world(false),
        )
        .with_raw_output_schema(Arc::new(as_object(completion::advertised_output_schema())));
        Ok(Some(Self {
            tool,
            validator: Validator(validator),
        }))
    }

    /// Runs one call on `lane` (the discovery lane).
    pub async fn call(
        &self,
        catalog: &Catalog,
        lane: &Executor,
        server_timeout: Duration,
        output_limit_bytes: u64,
        args: &Value,
        cancel: CancellationToken,
    ) -> CallToolResult {
        let name = completion::TOOL_NAME;
        let Some(object) = args.as_object() else {
            return input_error("invalid arguments at /: must be an object");
        };
        let path = match completion::parse_input(object) {
            Ok(p) => p,
            Err(e) => return input_error(&e.to_string()),
        };
        let mut job = Job::new(Program::Python, completion::helper_argv(catalog, &path));
        job.timeout = server_timeout.min(HELPER_TIMEOUT);
        job.output_limit_bytes = output_limit_bytes;
        job.label = "conda_cli_command helper".into();
        job.cancel = cancel;
        let result = match lane.run(job, |_| {}).await {
            Ok(r) => r,
            Err(ExecError::Cancelled) => return results::not_run(name, &"cancelled"),
            Err(e) => return results::not_run(name, &e),
        };
        match completion::read_answer(&result) {
            Ok(answer) => self.answer_result(&answer),
            Err(AnswerError::UnknownPath(e)) => input_error(&e.to_string()),
            Err(e @ AnswerError::Helper(_)) => results::not_run(name, &e),
        }
    }

    fn answer_result(&self, answer: &CompletionAnswer) -> CallToolResult {
        let structured = match serde_json::to_value(answer) {
            Ok(v) => v,
            Err(e) => return results::not_run(completion::TOOL_NAME, &e),
        };
        if !self.validator.0.is_valid(&structured) {
            tracing::error!("a conda_cli_command answer does not match its output schema");
            return results::not_run(
                completion::TOOL_NAME,
                &"the answer does not match the tool's output schema",
            );
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

fn input_error(text: &str) -> CallToolResult {
    CallToolResult::error(vec![Content::text(format!(
        "Invalid arguments for {}; nothing was run.\n{text}",
        completion::TOOL_NAME
    ))])
}
