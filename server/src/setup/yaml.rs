//! The server's entry in a YAML file (Goose's `config.yaml`), edited as
//! lines: the entry is the block of lines under the top-level key of
//! servers (`extensions:`) that starts with `NAME:`, and only those lines
//! are written, so every other line — comments included — stays byte for
//! byte. yaml-rust2 parses the file before (a file it cannot parse is left
//! alone, the error naming the line) and after (the result must parse and
//! hold the entry, else nothing is written).
//!
//! An existing entry is replaced whole (YAML keeps no key-by-key merge
//! here: an `envs` the person set is written again from the new entry).
//! A table of servers in flow style (`extensions: {a: ...}`) is refused
//! (an empty `{}` becomes a block).

use serde_json::Value;
use yaml_rust2::{Yaml, YamlLoader};

use super::EditError;

/// `text` with `entry` as `servers_key`.`name` (a block mapping), or
/// without it when `entry` is `None`.
///
/// Errors: [`EditError::Syntax`] with the 1-based line when `text` does not
/// parse; [`EditError::Shape`] when the document is not a mapping, the
/// table of servers is in flow style, or the result would not hold the
/// entry.
pub fn edit(
    text: &str,
    servers_key: &str,
    name: &str,
    entry: Option<&Value>,
) -> Result<String, EditError> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| EditError::Syntax {
        line: e.marker().line().max(1),
        column: Some(e.marker().col() + 1),
        message: e.info().to_owned(),
    })?;
    let shape = |what: String| EditError::Shape { what };
    match docs.first() {
        None | Some(Yaml::Hash(_)) | Some(Yaml::Null) => {}
        Some(_) => return Err(shape("the document is not a mapping".into())),
    }
    let nl = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_owned).collect();
    if let Some(last) = lines.last_mut()
        && !last.ends_with('\n')
    {
        last.push_str(nl);
    }
    let indent_of = |l: &str| l.len() - l.trim_start_matches(' ').len();
    let is_content = |l: &str| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#')
    };
    let key_line = |l: &str, key: &str| -> Option<String> {
        // `key:` then nothing, a comment, or a value; the value returned.
        let rest = l
            .trim_start_matches(' ')
            .strip_prefix(key)?
            .strip_prefix(':')?;
        if !(rest.is_empty() || rest.starts_with([' ', '\t', '\r', '\n'])) {
            return None;
        }
        let v = rest.trim();
        Some(if v.starts_with('#') {
            String::new()
        } else {
            v.to_owned()
        })
    };
    let top = lines
        .iter()
        .position(|l| indent_of(l) == 0 && key_line(l, servers_key).is_some());
    let Some(top) = top else {
        let Some(entry) = entry else {
            return Ok(text.to_owned());
        };
        lines.push(format!("{servers_key}:{nl}"));
        lines.extend(render(name, entry, 2, nl));
        return checked(lines.concat(), servers_key, name, true);
    };
    match key_line(&lines[top], servers_key).as_deref() {
        Some("") => {}
        Some("{}") => lines[top] = format!("{servers_key}:{nl}"),
        _ => {
            return Err(shape(format!(
                "{servers_key} is written in flow style ({{...}}): write it as a block to let setup edit it"
            )));
        }
    }
    // The block: up to the next line of content at column 0, without the
    // blank lines and comments that end it.
    let mut end = lines[top + 1..]
        .iter()
        .position(|l| is_content(l) && indent_of(l) == 0)
        .map_or(lines.len(), |i| top + 1 + i);
    while end > top + 1 && !is_content(&lines[end - 1]) {
        end -= 1;
    }
    let child_indent = lines[top + 1..end]
        .iter()
        .find(|l| is_content(l))
        .map_or(2, |l| indent_of(l));
    let child = (top + 1..end)
        .find(|&i| indent_of(&lines[i]) == child_indent && key_line(&lines[i], name).is_some());
    let child_end = child.map(|c| {
        let mut e = lines[c + 1..end]
            .iter()
            .position(|l| is_content(l) && indent_of(l) <= child_indent)
            .map_or(end, |i| c + 1 + i);
        while e > c + 1 && !is_content(&lines[e - 1]) {
            e -= 1;
        }
        e
    });
    match (entry, child, child_end) {
        (Some(entry), Some(c), Some(e)) => {
            lines.splice(c..e, render(name, entry, child_indent, nl));
        }
        (Some(entry), _, _) => {
            lines.splice(end..end, render(name, entry, child_indent, nl));
        }
        (None, Some(c), Some(e)) => {
            lines.drain(c..e);
            let end = end - (e - c);
            if !lines[top + 1..end].iter().any(|l| is_content(l)) {
                lines.drain(top..end);
            }
        }
        (None, _, _) => return Ok(text.to_owned()),
    }
    checked(lines.concat(), servers_key, name, entry.is_some())
}

/// `out` when it parses and holds (or, `present` false, lacks) the entry.
fn checked(out: String, servers_key: &str, name: &str, present: bool) -> Result<String, EditError> {
    let docs = YamlLoader::load_from_str(&out).map_err(|e| EditError::Shape {
        what: format!(
            "the edited file would not parse ({}): nothing written",
            e.info()
        ),
    })?;
    let has = docs
        .first()
        .is_some_and(|d| !d[servers_key][name].is_badvalue());
    if has != present {
        return Err(EditError::Shape {
            what: format!("{servers_key}.{name} could not be placed in the file's layout"),
        });
    }
    Ok(out)
}

/// `name:` and `entry` as block lines at `indent` spaces (strings in
/// double quotes: JSON's string syntax is YAML's).
fn render(name: &str, entry: &Value, indent: usize, nl: &str) -> Vec<String> {
    let pad = " ".repeat(indent);
    let inner = " ".repeat(indent + 2);
    let scalar = |v: &Value| match v {
        Value::Object(o) if o.is_empty() => "{}".to_owned(),
        Value::Array(a) if a.is_empty() => "[]".to_owned(),
        other => other.to_string(),
    };
    let mut out = vec![format!("{pad}{name}:{nl}")];
    if let Value::Object(fields) = entry {
        for (k, v) in fields {
            match v {
                Value::Array(a) if !a.is_empty() => {
                    out.push(format!("{inner}{k}:{nl}"));
                    for e in a {
                        out.push(format!("{inner}- {}{nl}", scalar(e)));
                    }
                }
                Value::Object(o) if !o.is_empty() => {
                    out.push(format!("{inner}{k}:{nl}"));
                    for (ok, ov) in o {
                        out.push(format!("{inner}  {ok}: {}{nl}", scalar(ov)));
                    }
                }
                _ => out.push(format!("{inner}{k}: {}{nl}", scalar(v))),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const USER: &str = "# Goose\nGOOSE_PROVIDER: openai\nextensions:\n  # the developer tools\n  developer:\n    enabled: true\n    name: developer\n    type: builtin\n\n# model\nGOOSE_MODEL: gpt-4o\n";

    fn entry() -> Value {
        json!({"name": "conda", "type": "stdio", "cmd": "/bin/conda-mcp", "args": ["--conda-exe", "/c"], "enabled": true, "envs": {}, "timeout": 300})
    }

    #[test]
    fn the_entry_goes_into_the_block_and_the_rest_stays() {
        let out = edit(USER, "extensions", "conda", Some(&entry())).expect("edit");
        assert!(out.starts_with("# Goose\nGOOSE_PROVIDER: openai\nextensions:\n  # the developer tools\n  developer:\n    enabled: true\n    name: developer\n    type: builtin\n  conda:\n    name: \"conda\"\n"), "{out}");
        assert!(
            out.ends_with("    timeout: 300\n\n# model\nGOOSE_MODEL: gpt-4o\n"),
            "{out}"
        );
        let d = &YamlLoader::load_from_str(&out).expect("yaml")[0];
        assert_eq!(d["extensions"]["conda"]["args"][1].as_str(), Some("/c"));
        assert_eq!(
            d["extensions"]["conda"]["envs"].as_hash().map(|h| h.len()),
            Some(0)
        );
        assert_eq!(
            edit(&out, "extensions", "conda", Some(&entry())).expect("again"),
            out
        );
        assert_eq!(
            edit(&out, "extensions", "conda", None).expect("remove"),
            USER
        );
    }

    #[test]
    fn a_new_file_and_a_broken_one() {
        let out = edit("", "extensions", "conda", Some(&entry())).expect("edit");
        assert!(out.starts_with("extensions:\n  conda:\n"), "{out}");
        assert_eq!(edit(&out, "extensions", "conda", None).expect("remove"), "");
        let err =
            edit("a: 1\nb: [1,\n", "extensions", "conda", Some(&entry())).expect_err("broken");
        assert!(matches!(err, EditError::Syntax { .. }), "{err:?}");
        assert!(matches!(
            edit(
                "extensions: {a: 1}\n",
                "extensions",
                "conda",
                Some(&entry())
            ),
            Err(EditError::Shape { .. })
        ));
    }
}
