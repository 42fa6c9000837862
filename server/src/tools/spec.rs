//! One tool as this server defines it, free of the protocol library: the
//! fields of an MCP `Tool` (MCP spec, "Tools": `name`, `title`,
//! `description`, `inputSchema`, `outputSchema`, `annotations`, `_meta`)
//! as plain JSON maps and strings.
//!
//! Why a type of our own: the tool surface sits below the call pipeline,
//! and neither may depend on the MCP library's types (ARCHITECTURE.md
//! "Code map"); `crate::mcp` renders a [`ToolSpec`] into the protocol's type
//! when it answers `tools/list`, and that is the only place the two meet.

use std::sync::Arc;

use serde_json::{Map, Value};

pub use crate::schema::describe::ToolHints;

/// A JSON object (a schema, `_meta`).
pub type JsonObject = Map<String, Value>;

/// What `tools/list` shows of one tool.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolSpec {
    /// `name`: the tool name calls route by.
    pub name: String,
    /// `title`: a short display name, when there is one.
    pub title: Option<String>,
    /// `description`.
    pub description: String,
    /// `inputSchema`: a JSON Schema 2020-12 object schema.
    pub input_schema: Arc<JsonObject>,
    /// `outputSchema`: the schema of `structuredContent`, when the tool
    /// has one.
    pub output_schema: Option<Arc<JsonObject>>,
    /// `annotations`; listed only when some hint is set.
    pub hints: ToolHints,
    /// `_meta`; listed only when it has a key.
    pub meta: JsonObject,
    /// Whether `icons` carries the server's icon (`--tool-icons`; the MCP
    /// rendering adds it, `crate::mcp::icon`).
    pub icon: bool,
}

impl ToolSpec {
    /// A tool with `name`, `description` and `input_schema`, no title,
    /// output schema, hints or `_meta`.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Arc<JsonObject>,
    ) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema,
            output_schema: None,
            hints: ToolHints::default(),
            meta: JsonObject::new(),
            icon: false,
        }
    }

    /// With `title`.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// With `outputSchema`.
    pub fn with_output_schema(mut self, schema: Arc<JsonObject>) -> Self {
        self.output_schema = Some(schema);
        self
    }

    /// With `annotations`.
    pub fn with_hints(mut self, hints: ToolHints) -> Self {
        self.hints = hints;
        self
    }

    /// With `_meta`.
    pub fn with_meta(mut self, meta: JsonObject) -> Self {
        self.meta = meta;
        self
    }
}
