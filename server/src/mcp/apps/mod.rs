//! `--approve-writes` for MCP Apps hosts (the extension
//! `io.modelcontextprotocol/ui`, SEP-1865; docs/approval.md "The approval
//! card"): a client that declared the extension (with the MIME type
//! [`MIME_TYPE`]) but not form elicitation is shown each change in a view,
//! the approval card, instead of ending with `approval_unavailable`.
//!
//! * `tools/list` names the view in `_meta.ui.resourceUri` of every tool
//!   that may change something, and lists the app-only tool
//!   [`DECIDE_TOOL`] (`_meta.ui.visibility: ["app"]`), for such a client
//!   only ([`listed`]); any other client gets today's list.
//! * `resources/read` of [`RESOURCE_URI`] serves the view
//!   (`approval.html`, one self-contained file: no remote script, style or
//!   font; its strict CSP in `_meta.ui.csp`, [`contents`]).
//! * A change answers with `approval_pending`: nothing changed yet; the
//!   structured content's `error.details.approval` carries the plan and a
//!   single-use id (`crate::call::approve::ids`), bound to the principal,
//!   the tool, the arguments and the plan's digest, valid for `--timeout`.
//! * The card calls [`DECIDE_TOOL`] with `{id, decision}`. Decline ends
//!   `declined` at once. Approve answers at once with the decision's
//!   stage ([`stage_result`]: `deciding`) and the handler runs the bound
//!   call again with that answer apart from the request (re-plan under the
//!   installation's lock, apply only an unchanged plan, else
//!   `plan_changed`), so a host's request limit (60 s in the MCP
//!   TypeScript SDK that the ext-apps host SDK relays through) cuts
//!   neither; the id is spent only as the change starts
//!   (`crate::call::approve::ids`).
//! * The card follows the decision with [`STATUS_TOOL`] (`{id}`): the
//!   stage, or once the change ran, the approved call's own result.
//!
//! The host is trusted to keep [`DECIDE_TOOL`] (and [`STATUS_TOOL`]) from the model (the spec's
//! "Visibility": hosts MUST NOT list it to the agent), but nothing rests
//! on it: without a live id, issued to the same principal for a card, the
//! tool changes nothing, and a live id approves only the plan shown.

use rmcp::model::{
    CallToolResult, ClientCapabilities, ContentBlock, JsonObject, MetaObject, Resource,
    ResourceContents,
};
use serde_json::{Value, json};

use super::listing;
use crate::tools::approval_card;
use crate::tools::spec::ToolSpec;

pub use crate::tools::approval_card::{DECIDE_TOOL, RESOURCE_URI, STATUS_TOOL};

use crate::call::approve::Stage;

/// The extension's identifier in the client's `capabilities.extensions`.
pub const EXTENSION_ID: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an MCP Apps HTML view (SEP-1865, "UI Resource Format").
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The view: one self-contained HTML file.
pub const VIEW: &str = include_str!("approval.html");

/// Whether `capabilities` declare the extension with [`MIME_TYPE`]
/// (`extensions: {"io.modelcontextprotocol/ui": {"mimeTypes": [...]}}`).
pub fn declares_ui(capabilities: &ClientCapabilities) -> bool {
    capabilities
        .extensions
        .as_ref()
        .and_then(|e| e.get(EXTENSION_ID))
        .and_then(|s| s.get("mimeTypes"))
        .and_then(Value::as_array)
        .is_some_and(|m| m.iter().any(|t| t.as_str() == Some(MIME_TYPE)))
}

/// The tools/list of `specs` for a client that declared the extension:
/// each tool that may change something names the card, and the app-only
/// [`DECIDE_TOOL`] and [`STATUS_TOOL`] come last.
pub fn listed(specs: &[ToolSpec]) -> Vec<rmcp::model::Tool> {
    let mut tools: Vec<rmcp::model::Tool> = specs
        .iter()
        .map(|s| listing::render(&approval_card::with_card(s)))
        .collect();
    tools.push(listing::render(&approval_card::decide_spec()));
    tools.push(listing::render(&approval_card::status_spec()));
    tools
}

/// The tool result that tells the card where the decision about `id` is,
/// while no final result is known: `structuredContent.approval` is
/// `{id, state, status_tool, last}` with `state` `pending` (no decision
/// is running: none arrived, or the last one ended before the change
/// started, `last` being that decision's `error`), `deciding` (approved:
/// the lock and the re-plan; nothing changed yet) or `applying` (the
/// change started). Not an error: nothing failed. A [`Stage::Done`] is
/// the approved call's own result (`result`, the tool result as JSON).
pub fn stage_result(id: &str, stage: &Stage) -> CallToolResult {
    let (state, text, last) = match stage {
        Stage::Done(result) => {
            if let Ok(r) = serde_json::from_value::<CallToolResult>(result.clone()) {
                return r;
            }
            tracing::error!("a kept approval result did not read back");
            (
                "applying",
                "The change was started; its result could not be read back. Check the environment.",
                Value::Null,
            )
        }
        Stage::Open { last } => (
            "pending",
            "No decision is running for this card: nothing has changed. The person can approve or \
             decline it.",
            last.as_ref()
                .and_then(|r| r.get("structuredContent"))
                .and_then(|s| s.get("error"))
                .cloned()
                .unwrap_or(Value::Null),
        ),
        Stage::Deciding => (
            "deciding",
            "The person approved the change in the approval card. conda-mcp is checking conda's \
             plan again before it applies it; nothing has changed yet.",
            Value::Null,
        ),
        Stage::Applying => (
            "applying",
            "The person approved the change in the approval card, conda's plan is unchanged, and \
             conda is applying it now.",
            Value::Null,
        ),
    };
    let structured = json!({"approval": {
        "id": id,
        "state": state,
        "status_tool": STATUS_TOOL,
        "last": last,
    }});
    let mut r = CallToolResult::success(vec![ContentBlock::text(format!("{text}\n{structured}"))]);
    r.structured_content = Some(structured);
    r
}

/// The view's `resources/list` entry.
pub fn resource() -> Resource {
    Resource::new(RESOURCE_URI, "approval")
        .with_title("conda-mcp approval card")
        .with_description(
            "Shows a change conda-mcp would make (conda's plan) with Approve and Decline.",
        )
        .with_mime_type(MIME_TYPE)
        .with_size(VIEW.len() as u64)
}

/// The view's `_meta.ui`: every CSP list empty (no network, no remote
/// resource, no nested frame, the base URI its own), so a host applies the
/// spec's restrictive default; a border around it.
pub fn ui_meta() -> Value {
    json!({
        "csp": {
            "connectDomains": [],
            "resourceDomains": [],
            "frameDomains": [],
            "baseUriDomains": [],
        },
        "prefersBorder": true,
    })
}

/// The `resources/read` contents of the view.
pub fn contents() -> ResourceContents {
    let mut meta = JsonObject::new();
    meta.insert("ui".into(), ui_meta());
    ResourceContents::TextResourceContents {
        uri: RESOURCE_URI.into(),
        mime_type: Some(MIME_TYPE.into()),
        text: VIEW.to_owned(),
        meta: Some(MetaObject(meta)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(v: Value) -> ClientCapabilities {
        serde_json::from_value(v).expect("capabilities")
    }

    #[test]
    fn the_extension_counts_only_with_the_html_mime_type() {
        assert!(declares_ui(&caps(json!({"extensions": {
            EXTENSION_ID: {"mimeTypes": [MIME_TYPE]}
        }}))));
        assert!(!declares_ui(&caps(json!({"extensions": {
            EXTENSION_ID: {"mimeTypes": ["text/uri-list"]}
        }}))));
        assert!(!declares_ui(&caps(
            json!({"extensions": {EXTENSION_ID: {}}})
        )));
        assert!(!declares_ui(&caps(json!({}))));
    }

    #[test]
    fn the_view_is_self_contained() {
        // No remote script, style, font or image; no network call.
        for needle in [
            "http://",
            "https://",
            "src=",
            "@import",
            "fetch(",
            "XMLHttpRequest",
            "WebSocket",
        ] {
            assert!(!VIEW.contains(needle), "approval.html contains {needle:?}");
        }
        assert!(VIEW.contains("Content-Security-Policy"));
        assert!(VIEW.contains("default-src 'none'"));
        let v = serde_json::to_value(contents()).expect("serializes");
        assert_eq!(v["mimeType"], MIME_TYPE);
        assert_eq!(v["_meta"]["ui"]["csp"]["connectDomains"], json!([]));
    }

    /// What the card adds to `tools/list` for a client that declared the
    /// extension (printed; docs/approval.md "Cost" quotes it): the
    /// `_meta.ui` of each tool that may change something, and the decision
    /// tool.
    #[test]
    fn the_card_adds_little_to_the_tool_list() {
        use crate::schema::Profile;
        use crate::tools::{ToolOptions, ToolSet};
        let cat = crate::catalog::build(&crate::dump::recorded_conda()).expect("catalog");
        let mut options = ToolOptions::writes(Profile::Portable, false);
        options.policy.allow_write = false;
        options.policy.approve_writes = true;
        let set = ToolSet::build(&cat, &options).expect("builds");
        let plain = serde_json::to_vec(&listing::render_all(&set.listed))
            .expect("json")
            .len();
        let carded = serde_json::to_vec(&listed(&set.listed))
            .expect("json")
            .len();
        let named = listed(&set.listed)
            .iter()
            .filter(|t| t.meta.as_ref().is_some_and(|m| m.0.contains_key("ui")))
            .count();
        eprintln!(
            "tools/list: {plain} bytes, {carded} with the card ({named} of {} tools name it); the view {} bytes",
            set.listed.len() + 2,
            VIEW.len()
        );
        assert!(carded > plain);
        assert!(carded - plain < 4_000, "{plain} → {carded}");
        assert!(VIEW.len() < 20_480, "the view is {} bytes", VIEW.len());
    }
}
