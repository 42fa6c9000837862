//! The `conda_inventory` tool's definition (see [`crate::inventory`] for
//! what it answers and why, and `call::plan::inventory` for how a call
//! runs).
//!
//! It is listed in every tool mode and under every policy (it only reads),
//! is loaded up front by hosts that defer tools ([`describe::ALWAYS_LOAD_KEY`]:
//! it is the first tool to reach for when the question is "what is
//! installed where"), and its answer is checked against its own output
//! schema before it is sent.

use std::sync::Arc;

use serde_json::Value;

use crate::inventory;
use crate::schema::describe;

use super::spec::{JsonObject, ToolHints, ToolSpec};

/// The tool's definition.
#[derive(Debug)]
pub struct InventoryTool {
    /// What `tools/list` shows.
    pub tool: ToolSpec,
}

fn as_object(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

impl InventoryTool {
    /// The tool.
    ///
    /// Errors: its input or output schema does not compile (a bug,
    /// reported at startup).
    pub fn new() -> Result<Self, crate::schema::SchemaError> {
        let schema_error = |e: jsonschema::ValidationError<'_>| crate::schema::SchemaError {
            tool: inventory::TOOL_NAME.to_owned(),
            reason: format!("conda_inventory's output schema does not compile: {e}"),
        };
        crate::schema::check_schema_document(inventory::TOOL_NAME, &inventory::input_schema())?;
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&inventory::output_schema())
            .map_err(schema_error)?;
        let tool = ToolSpec::new(
            inventory::TOOL_NAME,
            inventory::DESCRIPTION,
            Arc::new(as_object(inventory::input_schema())),
        )
        .with_hints(ToolHints {
            title: None,
            read_only: Some(true),
            // readOnlyHint true: destructiveHint is not read (MCP
            // ToolAnnotations), so it is left out of tools/list.
            destructive: None,
            idempotent: Some(true),
            open_world: Some(false),
        })
        .with_output_schema(Arc::new(as_object(inventory::advertised_output_schema())))
        .with_meta(describe::own_meta(
            "conda inventory environments packages",
            true,
        ));
        Ok(Self { tool })
    }
}
