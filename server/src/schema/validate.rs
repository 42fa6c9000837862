//! Validation of call arguments against the full input schema, and the
//! startup check that every schema is a valid JSON Schema 2020-12 document.
//!
//! jsonschema's own messages quote the offending value (`"x" is not of type
//! "integer"`); arguments may carry secrets and error text never echoes a
//! submitted value (ARCHITECTURE.md "Invariants"), so [`ArgumentError`] is
//! rebuilt from the error kind and the JSON path only.

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

/// A schema that is not a valid JSON Schema 2020-12 document, or that the
/// validator cannot compile.
#[derive(Debug, thiserror::Error)]
#[error("input schema of {tool} is not a valid JSON Schema 2020-12 document: {reason}")]
pub struct SchemaError {
    /// The tool whose schema failed.
    pub tool: String,
    /// The validator's reason (about the schema, never about call arguments).
    pub reason: String,
}

/// Checks `schema` against the JSON Schema 2020-12 meta-schema.
///
/// Errors: [`SchemaError`] naming `tool`.
pub fn check_schema_document(tool: &str, schema: &Value) -> Result<(), SchemaError> {
    jsonschema::draft202012::meta::validate(schema).map_err(|e| SchemaError {
        tool: tool.to_owned(),
        reason: format!("{} (at {})", e.kind().keyword(), e.instance_path()),
    })
}

/// One rule a call's arguments broke: where, and which rule. Its `Display`
/// names the JSON path (a JSON pointer; `/` for the arguments object itself)
/// and never the submitted value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid argument at {path}: {rule}")]
pub struct ArgumentError {
    /// JSON pointer of the offending value inside the arguments object
    /// (`/` for the object itself).
    pub path: String,
    /// The rule, in words, without the value.
    pub rule: String,
}

/// A compiled full-profile schema of one tool.
pub struct ArgumentValidator {
    validator: jsonschema::Validator,
    /// Property names, listed in errors about unknown properties (never the
    /// unknown names the caller sent).
    known: Vec<String>,
}

impl std::fmt::Debug for ArgumentValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ArgumentValidator")
            .field("known", &self.known)
            .finish_non_exhaustive()
    }
}

impl ArgumentValidator {
    /// Checks `full_schema` as a 2020-12 document and compiles it.
    ///
    /// Errors: [`SchemaError`] naming `tool`.
    pub fn new(tool: &str, full_schema: &Value) -> Result<Self, SchemaError> {
        check_schema_document(tool, full_schema)?;
        let validator = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(full_schema)
            .map_err(|e| SchemaError {
                tool: tool.to_owned(),
                reason: format!("{} (at {})", e.kind().keyword(), e.instance_path()),
            })?;
        let known = full_schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        Ok(Self { validator, known })
    }

    /// Validates call arguments; every violation is returned (sorted by path),
    /// none of them quoting a submitted value.
    ///
    /// Errors: the list of [`ArgumentError`]s (never empty when `Err`).
    pub fn validate(&self, arguments: &Value) -> Result<(), Vec<ArgumentError>> {
        let mut errors: Vec<ArgumentError> = self
            .validator
            .iter_errors(arguments)
            .map(|e| ArgumentError {
                path: pointer(&e.instance_path().to_string()),
                rule: self.rule(e.kind()),
            })
            .collect();
        if errors.is_empty() {
            return Ok(());
        }
        errors.sort_by(|a, b| a.path.cmp(&b.path).then(a.rule.cmp(&b.rule)));
        errors.dedup();
        Err(errors)
    }

    fn rule(&self, kind: &ValidationErrorKind) -> String {
        use ValidationErrorKind as K;
        match kind {
            K::Type { kind } => format!("must be of type {}", type_names(kind)),
            K::AdditionalProperties { unexpected } => format!(
                "{} unknown propert{} (this tool accepts: {})",
                unexpected.len(),
                if unexpected.len() == 1 { "y" } else { "ies" },
                if self.known.is_empty() {
                    "none".to_owned()
                } else {
                    self.known.join(", ")
                }
            ),
            K::Required { property } => {
                // The property name comes from the schema, not from the caller.
                format!(
                    "missing required property {}",
                    property.as_str().unwrap_or("?")
                )
            }
            K::Enum { options } => {
                let n = options.as_array().map_or(0, Vec::len);
                format!("must be one of the {n} values the schema lists")
            }
            K::Pattern { pattern } => {
                if pattern == super::input::NO_LEADING_DASH
                    || pattern == super::input::BARE_OR_NO_LEADING_DASH
                {
                    "must not be empty or start with '-' (it would be read as an option)".into()
                } else {
                    format!("must match the pattern {pattern}")
                }
            }
            K::Minimum { limit } => format!("must be at least {limit}"),
            K::MinItems { limit } => format!("must have at least {limit} item(s)"),
            K::MaxItems { limit } => format!("must have at most {limit} item(s)"),
            K::Not { .. } => {
                "gives options that cannot be combined (see the tool's exclusive groups)".into()
            }
            K::AnyOf { .. } => {
                "must give one of a required group of options (see the tool's description)".into()
            }
            K::FalseSchema => "is not allowed here".into(),
            other => format!("violates the schema keyword {}", other.keyword()),
        }
    }
}

/// jsonschema's location prints as a JSON pointer; an empty one is the
/// arguments object itself.
fn pointer(location: &str) -> String {
    if location.is_empty() {
        "/".into()
    } else {
        location.into()
    }
}

fn type_names(kind: &jsonschema::error::TypeKind) -> String {
    match kind {
        jsonschema::error::TypeKind::Single(t) => t.to_string(),
        jsonschema::error::TypeKind::Multiple(ts) => ts
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(" or "),
    }
}
