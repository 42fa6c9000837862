//! Schema profiles (`--schema-profile`) and the portable keyword allow-list.

use serde_json::Value;

/// Which input schema a tool advertises in `tools/list`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Profile {
    /// What every major host accepts: at the root `type`, `properties`,
    /// `required`, `additionalProperties: false`; inside only the keywords of
    /// [`PORTABLE_KEYWORDS`]. Exclusive and required groups are stated in the
    /// descriptions.
    #[default]
    #[value(help = "What every major host accepts: a small keyword allow-list; \
                    exclusive and required option groups are stated in the descriptions")]
    Portable,
    /// The portable schema plus the exact JSON Schema 2020-12 constraints for
    /// exclusive groups, required groups and REMAINDER positionals, for hosts
    /// that validate client-side. The server validates every call against
    /// this one whatever the profile.
    #[value(
        help = "The portable schema plus exact JSON Schema 2020-12 constraints for \
                    exclusive and required option groups, for hosts that validate client-side"
    )]
    Full,
}

/// Keywords allowed below the root of a portable schema: what every major
/// MCP host accepts (no `anyOf`/`oneOf`/`allOf`/`not`, `const`, type arrays,
/// `$ref`, `format` or `default`; docs/reference.md "Flags", `--schema-profile`).
pub const PORTABLE_KEYWORDS: &[&str] = &[
    "type",
    "description",
    "enum",
    "items",
    "properties",
    "required",
    "minimum",
    "minItems",
    "maxItems",
    "pattern",
];

/// Keywords allowed at the root of a portable schema.
pub const PORTABLE_ROOT_KEYWORDS: &[&str] =
    &["type", "properties", "required", "additionalProperties"];

/// Checks a schema against the portable allow-list and returns every
/// violation as `JSON pointer: reason` (empty when the schema is portable).
///
/// Rules: root keywords from [`PORTABLE_ROOT_KEYWORDS`] with `type: "object"`
/// and `additionalProperties: false`; below it only [`PORTABLE_KEYWORDS`];
/// `type` is one string; `enum` holds strings only; `pattern` has no
/// look-around (`(?=`, `(?!`, `(?<=`, `(?<!`).
pub fn portable_violations(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(root) = schema.as_object() else {
        return vec!["/: the schema is not an object".into()];
    };
    for (k, v) in root {
        if !PORTABLE_ROOT_KEYWORDS.contains(&k.as_str()) {
            out.push(format!("/{k}: keyword not allowed at the root"));
        }
        match k.as_str() {
            "type" if v != "object" => out.push("/type: the root must be an object".into()),
            "additionalProperties" if v != false => {
                out.push("/additionalProperties: must be false".into())
            }
            _ => {}
        }
    }
    if root.get("additionalProperties") != Some(&Value::Bool(false)) {
        out.push("/additionalProperties: missing (must be false)".into());
    }
    if let Some(Value::Object(props)) = root.get("properties") {
        for (name, sub) in props {
            walk(sub, &format!("/properties/{name}"), &mut out);
        }
    }
    out
}

fn walk(schema: &Value, at: &str, out: &mut Vec<String>) {
    let Some(obj) = schema.as_object() else {
        out.push(format!("{at}: a subschema is not an object"));
        return;
    };
    for (k, v) in obj {
        let here = format!("{at}/{k}");
        if !PORTABLE_KEYWORDS.contains(&k.as_str()) {
            out.push(format!(
                "{here}: keyword not allowed in the portable profile"
            ));
            continue;
        }
        match k.as_str() {
            "type" if !v.is_string() => out.push(format!("{here}: must be one type name")),
            "enum" if !v.as_array().is_some_and(|a| a.iter().all(Value::is_string)) => {
                out.push(format!("{here}: must list strings only"))
            }
            "pattern" => {
                let p = v.as_str().unwrap_or("");
                if ["(?=", "(?!", "(?<=", "(?<!"].iter().any(|l| p.contains(l)) {
                    out.push(format!("{here}: look-around is not portable"));
                }
            }
            "items" => walk(v, &here, out),
            "properties" => {
                if let Some(props) = v.as_object() {
                    for (name, sub) in props {
                        walk(sub, &format!("{here}/{name}"), out);
                    }
                }
            }
            _ => {}
        }
    }
}
