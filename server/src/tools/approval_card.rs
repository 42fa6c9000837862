//! The tools of the approval card (`--approve-writes` for an MCP Apps
//! host without elicitation; docs/approval.md "The approval card"), as
//! plain [`ToolSpec`]s: the view's URI on the tools that may change
//! something, and the app-only tool the view calls with the person's
//! decision. The keys are those of the MCP Apps extension
//! (`io.modelcontextprotocol/ui`, SEP-1865, "Resource Discovery"):
//! `_meta.ui.resourceUri` names the view the host renders a result in,
//! `_meta.ui.visibility: ["app"]` keeps a tool out of the model's list in
//! hosts that honour it. `crate::mcp` lists them only to a client that
//! declared the extension.

use std::sync::Arc;

use serde_json::{Value, json};

use super::spec::{JsonObject, ToolHints, ToolSpec};
use crate::schema::{ArgumentError, ArgumentValidator};

/// The app-only tool the card calls: `{id, decision}`.
pub const DECIDE_TOOL: &str = "conda_approval_decide";

/// The view's resource (`resources/read`).
pub const RESOURCE_URI: &str = "ui://conda-mcp/approval";

/// `spec` with `_meta.ui.resourceUri` naming the card, when a call of it
/// may change something (its `readOnlyHint` is not true); other tools are
/// returned unchanged.
pub fn with_card(spec: &ToolSpec) -> ToolSpec {
    if spec.hints.read_only == Some(true) {
        return spec.clone();
    }
    let mut out = spec.clone();
    let ui = out
        .meta
        .entry("ui")
        .or_insert_with(|| Value::Object(JsonObject::new()));
    if let Value::Object(ui) = ui {
        ui.insert("resourceUri".into(), RESOURCE_URI.into());
    }
    out
}

/// The app-only tool: the person's decision about one card. Its answer is
/// the approved call's own result (or `declined`, `plan_changed`,
/// `approval_invalid`); its output schema is that of every execution tool.
pub fn decide_spec() -> ToolSpec {
    ToolSpec::new(
        DECIDE_TOOL,
        "The approval card's decision (called by the card, not by the model): approve or decline \
         the change the card shows, by its single-use approval id.",
        Arc::new(match decide_schema() {
            Value::Object(m) => m,
            _ => JsonObject::new(),
        }),
    )
    .with_title("Approve or decline a change")
    .with_output_schema(super::output_schema())
    .with_hints(ToolHints {
        title: Some("Approve or decline a change".into()),
        read_only: Some(false),
        destructive: Some(true),
        idempotent: Some(false),
        open_world: Some(true),
    })
    .with_meta(decide_meta())
}

/// The decision's arguments: the approval id, and whether the person
/// approved (`decision: "approve"`) or declined.
///
/// Errors: the arguments break [`DECIDE_TOOL`]'s input schema (each error
/// names a JSON path, never the value).
pub fn read_decision(args: &Value) -> Result<(String, bool), Vec<ArgumentError>> {
    let validator = ArgumentValidator::new(DECIDE_TOOL, &decide_schema()).map_err(|_| {
        vec![ArgumentError {
            path: "/".into(),
            rule: "the decision's schema does not compile".into(),
        }]
    })?;
    validator.validate(args)?;
    let id = args["id"].as_str().unwrap_or_default().to_owned();
    Ok((id, args["decision"] == "approve"))
}

fn decide_meta() -> JsonObject {
    let mut meta = JsonObject::new();
    meta.insert(
        "ui".into(),
        json!({"resourceUri": RESOURCE_URI, "visibility": ["app"]}),
    );
    meta
}

fn decide_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {
                "type": "string",
                "description": "The approval id of the card (error.details.approval.id of the result that showed it).",
                "minLength": 1,
                "maxLength": 64
            },
            "decision": {
                "type": "string",
                "enum": ["approve", "decline"],
                "description": "approve applies exactly the plan shown, if conda's plan is still the same; decline changes nothing."
            }
        },
        "required": ["id", "decision"],
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_tools_that_may_change_something_name_the_card() {
        let schema = Arc::new(JsonObject::new());
        let read = ToolSpec::new("r", "d", Arc::clone(&schema)).with_hints(ToolHints {
            read_only: Some(true),
            ..ToolHints::default()
        });
        assert_eq!(with_card(&read), read);
        let mut meta = JsonObject::new();
        meta.insert("anthropic/alwaysLoad".into(), json!(true));
        let write = ToolSpec::new("w", "d", schema).with_meta(meta);
        let carded = with_card(&write);
        assert_eq!(carded.meta["ui"], json!({"resourceUri": RESOURCE_URI}));
        assert_eq!(carded.meta["anthropic/alwaysLoad"], json!(true));
    }

    #[test]
    fn the_decision_tool_is_app_only() {
        let spec = decide_spec();
        assert_eq!(spec.meta["ui"]["visibility"], json!(["app"]));
        assert_eq!(spec.input_schema["required"], json!(["id", "decision"]));
        // No conda command's tool can take its name.
        assert!(crate::schema::RESERVED_TOOL_NAMES.contains(&DECIDE_TOOL));
    }

    #[test]
    fn a_decision_is_read_strictly() {
        assert_eq!(
            read_decision(&json!({"id": "x", "decision": "approve"})),
            Ok(("x".to_owned(), true))
        );
        assert_eq!(
            read_decision(&json!({"id": "x", "decision": "decline"})),
            Ok(("x".to_owned(), false))
        );
        for bad in [
            json!({"id": "x", "decision": "yes"}),
            json!({"id": "x"}),
            json!({"id": "", "decision": "approve"}),
            json!({"id": "x", "decision": "approve", "tool": "conda_remove"}),
        ] {
            let errors = read_decision(&bad).expect_err("refused");
            assert!(!errors.is_empty());
            assert!(!format!("{errors:?}").contains("conda_remove"), "no echo");
        }
    }
}
