//! The `conda_cli_command` tool's definition (see [`crate::completion`] for
//! what it reads and why, and `call::plan::completion` for how a call runs).
//!
//! It runs on the discovery lane, never behind a running conda, needs no
//! policy option (it only reads a file conda-completion wrote), and its
//! answer is checked against its own output schema before it is sent.

use std::sync::Arc;

use serde_json::Value;

use crate::catalog::Catalog;
use crate::completion;

use super::spec::{JsonObject, ToolHints, ToolSpec};

/// The tool's definition.
#[derive(Debug)]
pub struct CliCommandTool {
    /// What `tools/list` shows.
    pub tool: ToolSpec,
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
    pub fn for_catalog(catalog: &Catalog) -> Result<Option<Self>, crate::schema::SchemaError> {
        if !completion::plugin_present(catalog) {
            return Ok(None);
        }
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&completion::output_schema())
            .map_err(|e| crate::schema::SchemaError {
                tool: completion::TOOL_NAME.to_owned(),
                reason: format!("conda_cli_command's output schema does not compile: {e}"),
            })?;
        let tool = ToolSpec::new(
            completion::TOOL_NAME,
            completion::DESCRIPTION,
            Arc::new(as_object(completion::input_schema())),
        )
        // destructiveHint and idempotentHint mean something only when
        // readOnlyHint is false (MCP spec, "Tool annotations").
        .with_hints(ToolHints {
            read_only: Some(true),
            open_world: Some(false),
            ..ToolHints::default()
        })
        .with_output_schema(Arc::new(as_object(completion::advertised_output_schema())))
        .with_meta(crate::schema::describe::own_meta(
            "conda options completion",
            false,
        ));
        Ok(Some(Self { tool }))
    }
}
