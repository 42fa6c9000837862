//! `tools/list`: the tool surface ([`crate::tools::spec::ToolSpec`], free of
//! the protocol library) rendered into the MCP library's `Tool`. The one
//! place the two types meet (ARCHITECTURE.md "Code map").

use std::sync::Arc;

use rmcp::model::{MetaObject, Tool, ToolAnnotations};

use crate::tools::spec::{ToolHints, ToolSpec};

/// The MCP `Tool` of `spec`: `annotations` only when a hint is set,
/// `_meta` only when it has a key (as [`ToolSpec`] says).
pub fn render(spec: &ToolSpec) -> Tool {
    let mut tool = Tool::new_with_raw(
        spec.name.clone(),
        Some(spec.description.clone().into()),
        Arc::clone(&spec.input_schema),
    );
    if let Some(title) = &spec.title {
        tool = tool.with_title(title.clone());
    }
    if let Some(schema) = &spec.output_schema {
        tool = tool.with_raw_output_schema(Arc::clone(schema));
    }
    if !spec.hints.is_empty() {
        tool = tool.with_annotations(annotations(&spec.hints));
    }
    if !spec.meta.is_empty() {
        tool = tool.with_meta(MetaObject(spec.meta.clone()));
    }
    tool
}

/// Every tool of `specs`, in order.
pub fn render_all(specs: &[ToolSpec]) -> Vec<Tool> {
    specs.iter().map(render).collect()
}

/// MCP's `ToolAnnotations` of `hints` (a hint left out stays out).
fn annotations(hints: &ToolHints) -> ToolAnnotations {
    let mut a = match &hints.title {
        Some(title) => ToolAnnotations::with_title(title.clone()),
        None => ToolAnnotations::new(),
    };
    if let Some(v) = hints.read_only {
        a = a.read_only(v);
    }
    if let Some(v) = hints.destructive {
        a = a.destructive(v);
    }
    if let Some(v) = hints.idempotent {
        a = a.idempotent(v);
    }
    if let Some(v) = hints.open_world {
        a = a.open_world(v);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: serde_json::Value) -> Arc<crate::tools::spec::JsonObject> {
        match v {
            serde_json::Value::Object(m) => Arc::new(m),
            _ => unreachable!("an object literal"),
        }
    }

    #[test]
    fn a_bare_spec_lists_no_annotations_and_no_meta() {
        let spec = ToolSpec::new("t", "d", object(json!({"type": "object"})));
        let v = serde_json::to_value(render(&spec)).expect("serializes");
        assert_eq!(
            v,
            json!({"name": "t", "description": "d", "inputSchema": {"type": "object"}})
        );
    }

    #[test]
    fn every_field_reaches_the_protocol_type() {
        let mut meta = crate::tools::spec::JsonObject::new();
        meta.insert("anthropic/alwaysLoad".into(), json!(true));
        let spec = ToolSpec::new("t", "d", object(json!({"type": "object"})))
            .with_title("T")
            .with_output_schema(object(json!({"type": "object"})))
            .with_hints(ToolHints {
                title: Some("H".into()),
                read_only: Some(true),
                destructive: None,
                idempotent: Some(false),
                open_world: Some(false),
            })
            .with_meta(meta);
        let v = serde_json::to_value(render(&spec)).expect("serializes");
        assert_eq!(v["title"], "T");
        assert_eq!(v["outputSchema"], json!({"type": "object"}));
        assert_eq!(
            v["annotations"],
            json!({"title": "H", "readOnlyHint": true, "idempotentHint": false, "openWorldHint": false})
        );
        assert_eq!(v["_meta"], json!({"anthropic/alwaysLoad": true}));
    }

    #[test]
    fn the_typed_tools_list_stays_within_its_byte_target() {
        use crate::schema::Profile;
        use crate::tools::{ToolOptions, ToolSet};
        let cat = crate::catalog::build(&crate::dump::recorded_conda()).expect("catalog");
        for allow_exec in [false, true] {
            let set = ToolSet::build(&cat, &ToolOptions::writes(Profile::Portable, allow_exec))
                .expect("builds");
            let listed = render_all(&set.listed);
            let bytes = serde_json::to_vec(&listed).expect("json").len();
            eprintln!(
                "allow_exec={allow_exec}: {} tools, {bytes} bytes",
                listed.len()
            );
            // The 45,000-byte target covers conda's own commands and the
            // conda-completion and rattler-solver plugins; this recording
            // also has the menuinst plugin's `conda menuinst`, which the
            // target does not include (the total is printed above). Raised
            // by 500 bytes for the server option `replace_existing` of
            // `conda_create` and `conda_env_create` (about 2 × 186 bytes):
            // the prediction of existing environments needs the argument
            // listed. Raised again by 2,000 bytes for the `_meta` keys
            // Claude Code reads (`anthropic/searchHint` on every tool,
            // `anthropic/alwaysLoad` on six; about 1,730 bytes measured):
            // hosts do not pass `_meta` to the model. Raised by 300 bytes
            // for option help shortened at clause ends instead of cut
            // inside a phrase (`schema::input::clause_ends`; 522 bytes
            // measured, docs/benchmarks.md). Raised by 1,100 bytes for
            // `conda_inventory` (1,087 measured, printed above), loaded up
            // front: one call of it replaces 1 + N calls of `conda_env_list`
            // and `conda_list` (docs/benchmarks.md "Inventory").
            let inventory = listed
                .iter()
                .find(|t| t.name == crate::tools::INVENTORY_TOOL)
                .map(|t| serde_json::to_vec(t).expect("json").len())
                .expect("conda_inventory is listed");
            eprintln!("conda_inventory: {inventory} bytes");
            let without_menuinst = serde_json::to_vec(
                &listed
                    .iter()
                    .filter(|t| t.name != "conda_menuinst")
                    .collect::<Vec<_>>(),
            )
            .expect("json")
            .len();
            assert!(
                without_menuinst <= 48_900,
                "tools/list without conda_menuinst is {without_menuinst} bytes"
            );
        }
    }
}
