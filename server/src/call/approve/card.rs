//! `--approve-writes` through an MCP Apps view (docs/approval.md "The
//! approval card"): the plan of a question as structured data the view
//! renders, beside the plain-words message of [`super::question`] (which
//! the form and the model see). Protocol-free: `mcp::apps` carries it.
//!
//! Built from the same inputs as the message (the command line, conda's
//! `--json` dry-run document, the environment replaced, the unmanaged files
//! a removal deletes), so it shows what the message says and the
//! question's digest covers it. Every string goes through the credential
//! mask (`shared/src/mask.rs`), whatever `--no-mask-credentials` says.
//!
//! The shape (`plan` of the card, JSON):
//!
//! ```json
//! {"tool": "conda_create", "command": "conda create zlib=1.3 --name demo --json --yes",
//!  "preview": true, "environment": "/…/envs/demo",
//!  "link": [{"name": "zlib", "version": "1.3", "build": "h0_0", "channel": "standin"}],
//!  "unlink": [], "update": [{"name": "…", "from": {…}, "to": {…}}],
//!  "replaces": null, "removes_files": null, "download_bytes": 15360}
//! ```
//!
//! `link` and `unlink` are conda's `LINK` and `UNLINK` lists
//! (`conda/cli/install.py`, `handle_txn`) without the packages that are in
//! both: those are `update` (the same name unlinked at one version and
//! linked at another). `preview` is false for a command conda cannot
//! preview (no `--dry-run`, `conda run`, the raw tool's argv): then only
//! the command is known. `download_bytes` is the sum of `FETCH` sizes when
//! conda gave every one.

use serde_json::{Map, Value, json};

use crate::call::plan::existing_env::Replacement;
use crate::call::shape::output::UnmanagedFiles;

/// The structured plan of a question (the shape of the module docs),
/// masked. `command` is the command line shown (`conda` and the argv).
pub fn plan(
    tool: &str,
    command: &str,
    plan: Option<&Value>,
    replaces: Option<&Replacement>,
    unmanaged: Option<&UnmanagedFiles>,
) -> Value {
    let actions = plan
        .and_then(|p| p.get("actions"))
        .and_then(Value::as_object);
    let environment = replaces.map(|r| r.prefix.clone()).or_else(|| {
        actions
            .and_then(|a| a.get("PREFIX"))
            .or_else(|| plan.and_then(|p| p.get("prefix")))
            .and_then(Value::as_str)
            .map(str::to_owned)
    });
    let list = |key: &str| -> Vec<Value> {
        let mut v: Vec<Value> = actions
            .and_then(|a| a.get(key))
            .and_then(Value::as_array)
            .map(|l| l.iter().map(package).collect())
            .unwrap_or_default();
        v.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        v
    };
    let (linked, unlinked) = (list("LINK"), list("UNLINK"));
    let named = |l: &[Value], name: &Value| l.iter().find(|p| p["name"] == *name).cloned();
    let mut update = Vec::new();
    let mut link = Vec::new();
    for p in &linked {
        match named(&unlinked, &p["name"]) {
            Some(from) => update.push(json!({"name": p["name"], "from": from, "to": p})),
            None => link.push(p.clone()),
        }
    }
    let unlink: Vec<Value> = unlinked
        .iter()
        .filter(|p| named(&linked, &p["name"]).is_none())
        .cloned()
        .collect();
    let download_bytes = actions
        .and_then(|a| a.get("FETCH"))
        .and_then(Value::as_array)
        .filter(|f| !f.is_empty())
        .and_then(|f| {
            f.iter()
                .map(|p| p.get("size").and_then(Value::as_u64))
                .sum::<Option<u64>>()
        });
    let mut card = json!({
        "tool": tool,
        "command": command,
        "preview": plan.is_some(),
        "environment": environment,
        "link": link,
        "unlink": unlink,
        "update": update,
        "replaces": replaces.map(|r| json!({"prefix": r.prefix, "packages": r.packages})),
        "removes_files": unmanaged.map(|u| json!({
            "prefix": u.prefix, "count": u.count, "bytes": u.bytes, "first": u.first,
        })),
        "download_bytes": download_bytes,
    });
    if actions.is_none()
        && let Some(message) = plan.and_then(|p| p.get("message")).and_then(Value::as_str)
    {
        card["message"] = Value::String(message.trim().to_owned());
    }
    conda_mcp_shared::mask::mask_json(&mut card);
    card
}

/// One package of a `LINK`/`UNLINK` list: name, version, build, channel
/// (conda's record keys: `name` or `dist_name`, `build_string` or `build`).
fn package(p: &Value) -> Value {
    let field = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
    let pick = |a: &str, b: &str| match field(a) {
        "" => field(b).to_owned(),
        v => v.to_owned(),
    };
    let mut m = Map::new();
    m.insert("name".into(), pick("name", "dist_name").into());
    m.insert("version".into(), field("version").into());
    m.insert("build".into(), pick("build_string", "build").into());
    m.insert("channel".into(), field("channel").into());
    Value::Object(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_are_the_names_both_unlinked_and_linked() {
        let doc = json!({"actions": {
            "PREFIX": "/envs/demo",
            "LINK": [
                {"name": "zlib", "version": "1.3.1", "build_string": "h1", "channel": "c"},
                {"name": "abc", "version": "2.0", "build": "0", "channel": "https://u:secret@x.org/c"}
            ],
            "UNLINK": [
                {"name": "zlib", "version": "1.2", "build_string": "h0", "channel": "c"},
                {"name": "old", "version": "0.1", "build_string": "h0", "channel": "c"}
            ],
            "FETCH": [{"size": 1000}, {"size": 24}]
        }});
        let card = plan(
            "conda_install",
            "conda install zlib",
            Some(&doc),
            None,
            None,
        );
        assert_eq!(card["environment"], "/envs/demo");
        assert_eq!(card["link"].as_array().map(Vec::len), Some(1));
        assert_eq!(card["link"][0]["name"], "abc");
        assert_eq!(card["link"][0]["build"], "0");
        assert!(!card.to_string().contains("secret"), "masked: {card}");
        assert_eq!(card["unlink"][0]["name"], "old");
        assert_eq!(card["update"][0]["name"], "zlib");
        assert_eq!(card["update"][0]["from"]["version"], "1.2");
        assert_eq!(card["update"][0]["to"]["version"], "1.3.1");
        assert_eq!(card["download_bytes"], 1024);
        assert_eq!(card["preview"], true);
    }

    #[test]
    fn a_command_without_preview_has_only_its_command() {
        let card = plan("conda_run", "conda run -n x python", None, None, None);
        assert_eq!(card["preview"], false);
        assert_eq!(card["link"], json!([]));
        assert_eq!(card["environment"], Value::Null);
        assert_eq!(card["download_bytes"], Value::Null);
    }
}
