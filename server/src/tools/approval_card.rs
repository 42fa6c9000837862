//! The tools of the approval card (`--approve-writes` for an MCP Apps
//! host without elicitation; docs/approval.md "The approval card"), as
//! plain [`ToolSpec`]s: the view's URI on the tools that may change
//! something, the app-only tool the view calls with the person's
//! decision, and the app-only tool it follows that decision with (the
//! decision is accepted at once and runs apart from the request, so a
//! host's request limit does not cut the re-plan or the apply). The keys are those of the MCP Apps extension
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

/// The app-only tool the card follows a decision with: `{id}`.
pub const STATUS_TOOL: &str = "conda_approval_status";

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

/// The app-only tool: the person's decision about one card. Declining
/// answers `declined` (nothing ran); approving answers at once with the
/// decision's stage (`structuredContent.approval.state`: `deciding`), and
/// the re-plan and the apply run on ([`STATUS_TOOL`] follows them); an id
/// that cannot be used answers `approval_invalid`.
pub fn decide_spec() -> ToolSpec {
    ToolSpec::new(
        DECIDE_TOOL,
        "The approval card's decision (called by the card, not by the model): approve or decline \
         the change the card shows, by its single-use approval id. Approval is accepted at once; \
         follow it with conda_approval_status.",
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
    .with_meta(app_only_meta())
}

/// The app-only tool that tells the card where its decision is: the
/// stage (`pending`, `deciding`, `applying`) or, once the change ran, the
/// approved call's own result.
pub fn status_spec() -> ToolSpec {
    ToolSpec::new(
        STATUS_TOOL,
        "Where the approval card's decision is (called by the card, not by the model): pending, \
         deciding, applying, or the applied call's result.",
        Arc::new(match status_schema() {
            Value::Object(m) => m,
            _ => JsonObject::new(),
        }),
    )
    .with_title("Follow an approved change")
    .with_output_schema(super::output_schema())
    .with_hints(ToolHints {
        title: Some("Follow an approved change".into()),
        read_only: Some(true),
        destructive: Some(false),
        idempotent: Some(true),
        open_world: Some(false),
    })
    .with_meta(app_only_meta())
}

/// The decision's arguments: the approval id, and whether the person
/// approved (`decision: "approve"`) or declined.
///
/// Errors: the arguments break [`DECIDE_TOOL`]'s input schema (each error
/// names a JSON path, never the value).
pub fn read_decision(args: &Value) -> Result<(String, bool), Vec<ArgumentError>> {
    validated(DECIDE_TOOL, &decide_schema(), args)?;
    let id = args["id"].as_str().unwrap_or_default().to_owned();
    Ok((id, args["decision"] == "approve"))
}

/// The status tool's argument: the approval id.
///
/// Errors: the arguments break [`STATUS_TOOL`]'s input schema.
pub fn read_status(args: &Value) -> Result<String, Vec<ArgumentError>> {
    validated(STATUS_TOOL, &status_schema(), args)?;
    Ok(args["id"].as_str().unwrap_or_default().to_owned())
}

fn validated(tool: &str, schema: &Value, args: &Value) -> Result<(), Vec<ArgumentError>> {
    let validator = ArgumentValidator::new(tool, schema).map_err(|_| {
        vec![ArgumentError {
            path: "/".into(),
            rule: "the tool's schema does not compile".into(),
        }]
    })?;
    validator.validate(args)
}

fn app_only_meta() -> JsonObject {
    let mut meta = JsonObject::new();
    meta.insert(
        "ui".into(),
        json!({"resourceUri": RESOURCE_URI, "visibility": ["app"]}),
    );
    meta
}

fn id_schema() -> Value {
    json!({
        "type": "string",
        "description": "The approval id of the card (error.details.approval.id of the result that showed it).",
        "minLength": 1,
        "maxLength": 64
    })
}

fn status_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"id": id_schema()},
        "required": ["id"],
        "additionalProperties": false
    })
}

fn decide_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": id_schema(),
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
    fn the_card_tools_are_app_only() {
        let spec = decide_spec();
        assert_eq!(spec.meta["ui"]["visibility"], json!(["app"]));
        assert_eq!(spec.input_schema["required"], json!(["id", "decision"]));
        let status = status_spec();
        assert_eq!(status.meta["ui"]["visibility"], json!(["app"]));
        assert_eq!(status.input_schema["required"], json!(["id"]));
        assert_eq!(status.hints.read_only, Some(true));
        // No conda command's tool can take their names.
        for name in [DECIDE_TOOL, STATUS_TOOL] {
            assert!(crate::schema::RESERVED_TOOL_NAMES.contains(&name));
        }
        assert_eq!(read_status(&json!({"id": "x"})), Ok("x".to_owned()));
        assert!(read_status(&json!({"id": "x", "decision": "approve"})).is_err());
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
