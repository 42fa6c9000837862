//! The server's table in a TOML file (Codex's `config.toml`), edited with
//! `toml_edit` (cargo's own format-preserving editor): comments, blank
//! lines, key order and the other tables stay byte for byte.
//!
//! A new `[mcp_servers.conda]` goes after the file's other
//! `[mcp_servers.*]` tables (after its last table when there are none); an
//! existing one is updated in place, key by key (keys the person added,
//! such as `env` or `startup_timeout_sec`, stay).

use serde_json::Value;
use toml_edit::{Array, DocumentMut, Item, Table};

use super::EditError;

/// `text` with `entry` (an object of strings, booleans, numbers and
/// arrays of strings) as the table `servers_key`.`name`, or without that
/// table when `entry` is `None`. Returns the new text, equal to `text` when
/// nothing changes.
///
/// Errors: [`EditError::Syntax`] with the 1-based line when the text does
/// not parse; [`EditError::Shape`] when `servers_key` or the entry is not a
/// table.
pub fn edit(
    text: &str,
    servers_key: &str,
    name: &str,
    entry: Option<&Value>,
) -> Result<String, EditError> {
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let line = e.span().map_or(1, |s| {
            text[..s.start.min(text.len())].matches('\n').count() + 1
        });
        EditError::Syntax {
            line,
            column: None,
            message: e.message().trim().to_owned(),
        }
    })?;
    let shape = |what: String| EditError::Shape { what };
    let Some(entry) = entry else {
        if let Some(servers) = doc.get_mut(servers_key) {
            let t = servers
                .as_table_like_mut()
                .ok_or_else(|| shape(format!("{servers_key} is not a table")))?;
            if t.remove(name).is_some() && t.is_empty() {
                doc.remove(servers_key);
            }
        }
        return Ok(doc.to_string());
    };
    let Value::Object(fields) = entry else {
        return Err(shape("the entry is not a table".into()));
    };
    if doc.get(servers_key).is_none() {
        let mut t = Table::new();
        t.set_implicit(true);
        doc.insert(servers_key, Item::Table(t));
    }
    let servers = doc
        .get_mut(servers_key)
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| shape(format!("{servers_key} is not a table")))?;
    if servers.get(name).is_none() {
        servers.insert(name, Item::Table(Table::new()));
    }
    let table = servers
        .get_mut(name)
        .and_then(Item::as_table_like_mut)
        .ok_or_else(|| shape(format!("{servers_key}.{name} is not a table")))?;
    for (k, v) in fields {
        let same = table.get(k).and_then(to_json).as_ref() == Some(v);
        if !same && let Some(item) = to_item(v) {
            table.insert(k, item);
        }
    }
    Ok(doc.to_string())
}

/// A TOML value as JSON (strings, booleans, integers, arrays of them).
fn to_json(item: &Item) -> Option<Value> {
    let v = item.as_value()?;
    Some(match v {
        toml_edit::Value::String(s) => Value::String(s.value().clone()),
        toml_edit::Value::Boolean(b) => Value::Bool(*b.value()),
        toml_edit::Value::Integer(i) => Value::from(*i.value()),
        toml_edit::Value::Array(a) => Value::Array(
            a.iter()
                .map(|e| to_json(&Item::Value(e.clone())))
                .collect::<Option<Vec<_>>>()?,
        ),
        _ => return None,
    })
}

/// A JSON value as a TOML one (`None` for what TOML cannot hold: null).
fn to_item(v: &Value) -> Option<Item> {
    Some(match v {
        Value::String(s) => toml_edit::value(s.as_str()),
        Value::Bool(b) => toml_edit::value(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => toml_edit::value(i),
            None => toml_edit::value(n.as_f64()?),
        },
        Value::Array(a) => {
            let mut arr = Array::new();
            for e in a {
                if let Some(Item::Value(x)) = to_item(e) {
                    arr.push(x);
                }
            }
            toml_edit::value(arr)
        }
        Value::Object(o) => {
            let mut t = toml_edit::InlineTable::new();
            for (k, e) in o {
                if let Some(Item::Value(x)) = to_item(e) {
                    t.insert(k, x);
                }
            }
            toml_edit::value(t)
        }
        Value::Null => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const USER: &str = "# my Codex settings\nmodel = \"o3\"  # the model\n\n[mcp_servers.files]\ncommand = \"fs-mcp\"\nargs = []\n\n# projects\n[projects.\"/p\"]\ntrust_level = \"trusted\"\n";

    fn entry() -> Value {
        json!({"command": "/bin/conda-mcp", "args": ["--conda-exe", "/c"], "required": true})
    }

    #[test]
    fn the_table_goes_beside_other_servers_and_comments_stay() {
        let out = edit(USER, "mcp_servers", "conda", Some(&entry())).expect("edit");
        // Beside the other server, before the next group of tables.
        let table = "[mcp_servers.conda]\ncommand = \"/bin/conda-mcp\"\nargs = [\"--conda-exe\", \"/c\"]\nrequired = true\n\n";
        assert_eq!(
            out,
            USER.replace("# projects", &format!("{table}# projects"))
        );
        assert_eq!(
            edit(&out, "mcp_servers", "conda", Some(&entry())).expect("again"),
            out
        );
        assert_eq!(
            edit(&out, "mcp_servers", "conda", None).expect("remove"),
            USER
        );
    }

    #[test]
    fn a_new_file_gets_the_table_and_removal_empties_it() {
        let out = edit("", "mcp_servers", "conda", Some(&entry())).expect("edit");
        assert_eq!(
            out,
            "[mcp_servers.conda]\ncommand = \"/bin/conda-mcp\"\nargs = [\"--conda-exe\", \"/c\"]\nrequired = true\n"
        );
        assert_eq!(
            edit(&out, "mcp_servers", "conda", None).expect("remove"),
            ""
        );
    }

    #[test]
    fn an_existing_table_is_updated_in_place() {
        let text =
            "[mcp_servers.conda]\ncommand = \"old\"\nenv = { A = \"1\" }\n\n[other]\nx = 1\n";
        let out = edit(text, "mcp_servers", "conda", Some(&entry())).expect("edit");
        assert!(out.contains("command = \"/bin/conda-mcp\""), "{out}");
        assert!(out.contains("env = { A = \"1\" }"), "{out}");
        assert!(out.ends_with("[other]\nx = 1\n"), "{out}");
    }

    #[test]
    fn a_broken_file_names_its_line() {
        let err =
            edit("a = 1\nb = [\n", "mcp_servers", "conda", Some(&entry())).expect_err("broken");
        assert!(
            matches!(err, EditError::Syntax { line: 2 | 3, .. }),
            "{err:?}"
        );
        assert!(matches!(
            edit("mcp_servers = 3\n", "mcp_servers", "conda", Some(&entry())),
            Err(EditError::Shape { .. })
        ));
    }
}
