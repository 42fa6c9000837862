//! The server's entry in a JSON or JSONC file, edited in the file's
//! concrete syntax tree (dprint's `jsonc-parser`): every byte outside the
//! entry — other servers, comments, blank lines, indentation, key order —
//! stays as it was.
//!
//! The entry is merged key by key: keys this writes (`command`, `args`,
//! `type`, …) take the new value, keys the person added (`env`, …) stay.
//! Removing it takes the whole entry out, and the table of servers too when
//! nothing else is left in it (so that setup then `--remove` gives the
//! file back as it was).

use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::Value;

use super::EditError;

/// `text` (a JSON or JSONC document; empty or blank is an empty object)
/// with `entry` under `servers_key`.`name`, or without it when `entry` is
/// `None`. Returns the new text, equal to `text` when nothing changes.
///
/// Errors: [`EditError::Syntax`] with the 1-based line and column when the
/// text does not parse; [`EditError::Shape`] when the document or the
/// table of servers is not an object.
pub fn edit(
    text: &str,
    servers_key: &str,
    name: &str,
    entry: Option<&Value>,
) -> Result<String, EditError> {
    if entry.is_none() && text.trim().is_empty() {
        return Ok(text.to_owned());
    }
    let root = CstRootNode::parse(text, &ParseOptions::default()).map_err(|e| {
        let shown = e.to_string();
        // "<message> on line L column C": the message alone.
        let message = shown
            .rsplit_once(" on line ")
            .map_or(shown.as_str(), |(m, _)| m)
            .to_owned();
        EditError::Syntax {
            line: e.line_display(),
            column: Some(e.column_display()),
            message,
        }
    })?;
    let top = match root.value() {
        None => root.object_value_or_set(),
        Some(v) => v.as_object().ok_or_else(|| EditError::Shape {
            what: "the document is not a JSON object".into(),
        })?,
    };
    let shape = |what: String| EditError::Shape { what };
    match entry {
        Some(entry) => {
            let servers = top
                .object_value_or_create(servers_key)
                .ok_or_else(|| shape(format!("\"{servers_key}\" is there but is not an object")))?;
            merge(&servers, name, entry)
                .ok_or_else(|| shape(format!("\"{servers_key}\".\"{name}\" is not an object")))?;
        }
        None => {
            if let Some(servers_prop) = top.get(servers_key) {
                let servers = servers_prop.object_value().ok_or_else(|| {
                    shape(format!("\"{servers_key}\" is there but is not an object"))
                })?;
                if let Some(p) = servers.get(name) {
                    p.remove();
                    if servers.properties().is_empty() {
                        servers_prop.remove();
                    }
                }
            }
        }
    }
    Ok(root.to_string())
}

/// Sets `name` in `servers` to `entry` key by key (an object: a new one is
/// appended). `None` when `name` holds something that is not an object.
fn merge(servers: &CstObject, name: &str, entry: &Value) -> Option<()> {
    let Some(existing) = servers.get(name) else {
        servers.append(name, input(entry));
        return Some(());
    };
    let obj = existing.object_value()?;
    let Value::Object(fields) = entry else {
        existing.set_value(input(entry));
        return Some(());
    };
    for (k, v) in fields {
        match obj.get(k) {
            Some(p) if p.value().and_then(|n| n.to_serde_value()).as_ref() == Some(v) => {}
            Some(p) => p.set_value(input(v)),
            None => {
                obj.append(k, input(v));
            }
        }
    }
    Some(())
}

/// `v` as the tree's input value.
fn input(v: &Value) -> CstInputValue {
    match v {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(a) => CstInputValue::Array(a.iter().map(input).collect()),
        Value::Object(o) => {
            CstInputValue::Object(o.iter().map(|(k, v)| (k.clone(), input(v))).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry() -> Value {
        json!({"command": "/bin/conda-mcp", "args": ["--conda-exe", "/c"]})
    }

    const USER: &str = r#"{
    // my servers
    "theme": "dark",
    "mcpServers": {
        /* the file server */
        "files": {"command": "fs-mcp", "args": []}, // keep
    },
}
"#;

    #[test]
    fn the_entry_goes_beside_other_servers_and_comments_stay() {
        let out = edit(USER, "mcpServers", "conda", Some(&entry())).expect("edit");
        assert!(out.starts_with("{\n    // my servers\n    \"theme\": \"dark\",\n"));
        assert!(out.contains("/* the file server */"));
        assert!(out.contains(r#""files": {"command": "fs-mcp", "args": []}, // keep"#));
        let parsed: Value = CstRootNode::parse(&out, &ParseOptions::default())
            .expect("jsonc")
            .value()
            .and_then(|v| v.to_serde_value())
            .expect("v");
        assert_eq!(parsed["mcpServers"]["conda"], entry());
        assert_eq!(parsed["mcpServers"]["files"]["command"], "fs-mcp");
        // Idempotent, and removal gives the file back byte for byte.
        assert_eq!(
            edit(&out, "mcpServers", "conda", Some(&entry())).expect("again"),
            out
        );
        assert_eq!(
            edit(&out, "mcpServers", "conda", None).expect("remove"),
            USER
        );
    }

    #[test]
    fn a_new_or_empty_file_gets_the_table_and_removal_empties_it() {
        for start in ["", "{}\n", "{\n}\n"] {
            let out = edit(start, "servers", "conda", Some(&entry())).expect("edit");
            let parsed: Value = serde_json::from_str(&out).expect("strict JSON");
            assert_eq!(parsed["servers"]["conda"], entry(), "{start:?} → {out}");
            let back = edit(&out, "servers", "conda", None).expect("remove");
            let parsed: Value = serde_json::from_str(&back).expect("strict JSON");
            assert_eq!(parsed, json!({}), "{back}");
        }
    }

    #[test]
    fn an_existing_entry_is_updated_and_keys_the_person_added_stay() {
        let text = "{\"mcpServers\": {\"conda\": {\"command\": \"old\", \"env\": {\"A\": \"1\"}}}}";
        let out = edit(text, "mcpServers", "conda", Some(&entry())).expect("edit");
        let parsed: Value = serde_json::from_str(&out).expect("json");
        assert_eq!(parsed["mcpServers"]["conda"]["command"], "/bin/conda-mcp");
        assert_eq!(parsed["mcpServers"]["conda"]["env"]["A"], "1");
    }

    #[test]
    fn broken_files_and_wrong_shapes_are_errors_with_a_line() {
        let err = edit(
            "{\n  \"a\": 1,\n  \"b\": [\n}\n",
            "mcpServers",
            "conda",
            Some(&entry()),
        )
        .expect_err("broken");
        match err {
            EditError::Syntax { line, .. } => assert!(line >= 3, "{line}"),
            e => panic!("{e:?}"),
        }
        assert!(matches!(
            edit("[1]", "mcpServers", "conda", Some(&entry())),
            Err(EditError::Shape { .. })
        ));
        assert!(matches!(
            edit("{\"mcpServers\": 3}", "mcpServers", "conda", Some(&entry())),
            Err(EditError::Shape { .. })
        ));
    }
}
