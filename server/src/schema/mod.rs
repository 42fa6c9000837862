//! Tool surface of the catalog: input schemas, names, descriptions, and the
//! validation of call arguments.
//!
//! Why it is built this way (docs/reference.md "Generated tools"):
//!
//! * Hosts differ in how much JSON Schema they accept, so every tool has two
//!   input schemas: [`Profile::Portable`] (a small keyword allow-list every
//!   major host accepts; exclusive groups stated in prose) and
//!   [`Profile::Full`] (the same plus exact JSON Schema 2020-12 constraints
//!   for exclusive and required groups). [`input::input_schema`] builds both
//!   from [`crate::catalog::Command::properties`].
//! * The server always validates against the FULL schema ([`validate`]), so
//!   both profiles enforce the same rules; errors name the JSON path and never
//!   echo the submitted value.
//! * Names ([`names`]) are deterministic and fit host limits;
//!   descriptions and `_meta` ([`describe`]) are kept short so `tools/list`
//!   stays small.

pub mod describe;
pub mod input;
pub mod names;
pub mod profile;
pub mod validate;

pub use input::{SharedHelp, input_schema, input_schema_with};
pub use names::{RESERVED_TOOL_NAMES, tool_names};
pub use profile::Profile;
pub use validate::{ArgumentError, ArgumentValidator, SchemaError, check_schema_document};

/// Rewrites every `"type": [A, B, …]` in `schema` as
/// `"anyOf": [{"type": A, …}, {"type": B}, …]` (the type's own keywords,
/// such as `format` or `minimum`, go with its branch), so clients that map
/// schemas onto a single-`type` dialect accept it. The meaning is the same
/// under JSON Schema 2020-12.
pub fn without_type_arrays(schema: &mut serde_json::Value) {
    use serde_json::Value;
    match schema {
        Value::Object(m) => {
            if let Some(Value::Array(types)) = m.get("type").cloned() {
                m.remove("type");
                // Keywords that belong to the non-null branch.
                let own: Vec<(String, Value)> = [
                    "format",
                    "minimum",
                    "maximum",
                    "items",
                    "properties",
                    "enum",
                ]
                .iter()
                .filter_map(|k| m.remove(*k).map(|v| ((*k).to_owned(), v)))
                .collect();
                let branches: Vec<Value> = types
                    .into_iter()
                    .map(|t| {
                        let mut b = serde_json::Map::new();
                        let is_null = t == "null";
                        b.insert("type".into(), t);
                        if !is_null {
                            for (k, v) in &own {
                                b.insert(k.clone(), v.clone());
                            }
                        }
                        Value::Object(b)
                    })
                    .collect();
                m.insert("anyOf".into(), Value::Array(branches));
            }
            for v in m.values_mut() {
                without_type_arrays(v);
            }
        }
        Value::Array(items) => {
            for v in items {
                without_type_arrays(v);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
pub(crate) mod tests;
