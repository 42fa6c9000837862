//! Checks of tool results shared by the result tests: every result valid
//! against its tool's output schemas (the advertised one from `tools/list`
//! and the server's complete one), no type arrays in output schemas, and the
//! sizes a host pays for a result.

use rmcp::model::{CallToolResult, Tool};
use serde_json::Value;

/// JSON pointers of every `"type": [...]` (a type array) inside `schema`.
pub fn type_arrays(schema: &Value) -> Vec<String> {
    fn walk(v: &Value, path: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if m.get("type").is_some_and(Value::is_array) {
                    out.push(path.to_owned());
                }
                for (k, x) in m {
                    walk(x, &format!("{path}/{k}"), out);
                }
            }
            Value::Array(items) => {
                for (i, x) in items.iter().enumerate() {
                    walk(x, &format!("{path}/{i}"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(schema, "", &mut out);
    out
}

/// Validates `instance` against `schema` (JSON Schema 2020-12); the error
/// lists what failed.
pub fn validate(schema: &Value, instance: &Value) -> Result<(), String> {
    let validator = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .map_err(|e| format!("schema does not compile: {e}"))?;
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

/// Checks `r` (a result of `tool`) against the tool's advertised output
/// schema and, for execution tools, the server's complete one. Panics with
/// what failed.
pub fn assert_valid_result(tool: &Tool, r: &CallToolResult) {
    let structured = r
        .structured_content
        .clone()
        .unwrap_or_else(|| panic!("{}: a result without structuredContent", tool.name));
    let advertised = Value::Object(
        tool.output_schema
            .as_ref()
            .unwrap_or_else(|| panic!("{}: no outputSchema", tool.name))
            .as_ref()
            .clone(),
    );
    if let Err(e) = validate(&advertised, &structured) {
        panic!(
            "{}: result breaks its advertised outputSchema: {e}\n{structured}",
            tool.name
        );
    }
    if tool.name != "conda_cli_command" {
        let full = Value::Object(
            conda_mcp_server::mcp::results::full_output_schema()
                .as_ref()
                .clone(),
        );
        if let Err(e) = validate(&full, &structured) {
            panic!(
                "{}: result breaks the complete output schema: {e}\n{structured}",
                tool.name
            );
        }
    }
    if r.is_error == Some(true) {
        assert!(
            structured
                .get("error")
                .is_some_and(|e| e["code"].is_string()),
            "{}: an isError result without error.code: {structured}",
            tool.name
        );
    } else {
        assert!(
            structured.get("error").is_none(),
            "{}: error on a successful result: {structured}",
            tool.name
        );
    }
}

/// The text of a result's text blocks, joined by newlines.
pub fn text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}
