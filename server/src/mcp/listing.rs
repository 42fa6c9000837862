//! `tools/list`: the tool surface ([`crate::tools::spec::ToolSpec`], free of
//! the protocol library) rendered into the MCP library's `Tool`. The one
//! place the two types meet (ARCHITECTURE.md "Code map").

use std::sync::Arc;

use rmcp::model::{MetaObject, Tool, ToolAnnotations};

use crate::tools::spec::{ToolHints, ToolSpec};

/// The MCP `Tool` of `spec`: `annotations` only when a hint is set,
/// `_meta` only when it has a key, `icons` (the server's) only when
/// [`ToolSpec::icon`] (as [`ToolSpec`] says).
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
    if spec.icon {
        tool = tool.with_icons(super::icon::icons());
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

    /// The byte targets of `tools/list` (the `tools` array, compact JSON)
    /// with `--allow-write --allow-exec` in the default tool mode and
    /// schema profile: every tool of the recorded conda 26
    /// (`tests/fixtures/dumps/conda-26.json`: conda's own commands and the
    /// conda-completion, rattler-solver and menuinst plugins, 37 tools) and
    /// of the recording that has conda-index and conda-pypi as well
    /// (`conda-26-plugins.json`, 41 tools). docs/benchmarks.md "tools/list
    /// size" says what each saving was.
    pub(crate) const TARGETS: [(&str, usize); 2] =
        [("conda-26.json", 40_000), ("conda-26-plugins.json", 46_000)];

    fn listing(dump: &str, allow: bool) -> Vec<Tool> {
        use crate::schema::Profile;
        use crate::tools::{ToolOptions, ToolSet};
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/dumps")
            .join(dump);
        let bytes = std::fs::read(&path).expect("recorded dump");
        let dump = crate::dump::Dump::from_json(&bytes).expect("dump");
        let cat = crate::catalog::build(&dump).expect("catalog");
        let set =
            ToolSet::build(&cat, &ToolOptions::writes(Profile::Portable, allow)).expect("builds");
        render_all(&set.listed)
    }

    #[test]
    fn the_typed_tools_list_stays_within_its_byte_target() {
        for (dump, target) in TARGETS {
            for allow in [false, true] {
                let listed = listing(dump, allow);
                let bytes = serde_json::to_vec(&listed).expect("json").len();
                eprintln!(
                    "{dump}, allow_write/exec={allow}: {} tools, {bytes} bytes",
                    listed.len()
                );
                // The targets are for every flag; read-only lists no
                // conda_execute but a policy sentence first in each tool
                // it limits (printed above).
                assert!(
                    !allow || bytes <= target,
                    "{dump}: tools/list is {bytes} bytes"
                );
            }
        }
    }

    /// `--tool-icons` gives every tool the server's icon and adds only its
    /// bytes; the default list carries none. Prints what it adds (the
    /// figure in docs/reference.md).
    #[test]
    fn tool_icons_add_the_server_icon_to_every_tool_and_nothing_else() {
        use crate::schema::Profile;
        use crate::tools::{ToolOptions, ToolSet};
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/dumps/conda-26.json");
        let dump =
            crate::dump::Dump::from_json(&std::fs::read(&path).expect("dump")).expect("dump");
        let cat = crate::catalog::build(&dump).expect("catalog");
        let plain_set =
            ToolSet::build(&cat, &ToolOptions::writes(Profile::Portable, true)).expect("builds");
        let iconed_set = ToolSet::build(
            &cat,
            &ToolOptions {
                icons: true,
                ..ToolOptions::writes(Profile::Portable, true)
            },
        )
        .expect("builds");
        let plain = render_all(&plain_set.listed);
        let iconed = render_all(&iconed_set.listed);
        assert_eq!(plain.len(), iconed.len());
        let server_icons = crate::mcp::icon::icons();
        for (p, i) in plain.iter().zip(&iconed) {
            assert!(p.icons.is_none(), "{}", p.name);
            assert_eq!(i.icons.as_ref(), Some(&server_icons), "{}", i.name);
            let mut stripped = i.clone();
            stripped.icons = None;
            assert_eq!(&stripped, p, "{}: only the icon differs", p.name);
        }
        let plain_bytes = serde_json::to_vec(&plain).expect("json").len();
        let iconed_bytes = serde_json::to_vec(&iconed).expect("json").len();
        let per_tool = (iconed_bytes - plain_bytes) / plain.len();
        eprintln!(
            "conda-26.json, every flag: {} tools, {plain_bytes} bytes, {iconed_bytes} with --tool-icons (+{}, {per_tool} per tool)",
            plain.len(),
            iconed_bytes - plain_bytes
        );
        assert_eq!((iconed_bytes - plain_bytes) % plain.len(), 0);
    }

    /// Each tool of the recorded conda 26's `tools/list` (every flag) as
    /// it goes on the wire, one compact JSON line per tool: a change to
    /// any tool's bytes shows as that tool's line in review
    /// (`cargo insta review`), and the tools it did not touch stay
    /// byte-identical.
    #[test]
    fn each_tool_of_the_recorded_conda_is_byte_identical_to_its_snapshot() {
        let lines: Vec<String> = listing("conda-26.json", true)
            .iter()
            .map(|t| serde_json::to_string(t).expect("json"))
            .collect();
        insta::assert_snapshot!("conda_26_tools_list", lines.join("\n"));
    }
}
