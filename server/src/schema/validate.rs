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

    /// Whether the schema's top level has a property named `name`.
    pub fn accepts(&self, name: &str) -> bool {
        self.known.iter().any(|k| k == name)
    }

    /// Validates call arguments; every violation is returned (sorted by path),
    /// none of them quoting a submitted value. An unknown property is one
    /// error at its own path (`/name`: a property's name is where a value
    /// is, not a value; [`pointer_token`] bounds it), the others at the
    /// path of the offending value.
    ///
    /// Errors: the list of [`ArgumentError`]s (never empty when `Err`).
    pub fn validate(&self, arguments: &Value) -> Result<(), Vec<ArgumentError>> {
        let mut errors: Vec<ArgumentError> = Vec::new();
        for e in self.validator.iter_errors(arguments) {
            let at = e.instance_path().to_string();
            match e.kind() {
                ValidationErrorKind::AdditionalProperties { unexpected } => {
                    for name in unexpected {
                        errors.push(ArgumentError {
                            path: format!("{at}/{}", pointer_token(name)),
                            rule: self.unknown_rule(at.is_empty()),
                        });
                    }
                }
                kind => errors.push(ArgumentError {
                    path: pointer(&at),
                    rule: self.rule(kind),
                }),
            }
        }
        if errors.is_empty() {
            return Ok(());
        }
        errors.sort_by(|a, b| a.path.cmp(&b.path).then(a.rule.cmp(&b.rule)));
        errors.dedup();
        Err(errors)
    }

    /// The rule an unknown property breaks; at the top level (`top`) with
    /// the properties the tool accepts.
    fn unknown_rule(&self, top: bool) -> String {
        if !top {
            return "unknown property".into();
        }
        format!(
            "unknown property (this tool accepts: {})",
            if self.known.is_empty() {
                "none".to_owned()
            } else {
                self.known.join(", ")
            }
        )
    }

    fn rule(&self, kind: &ValidationErrorKind) -> String {
        use ValidationErrorKind as K;
        match kind {
            K::Type { kind } => format!("must be of type {}", type_names(kind)),
            K::AdditionalProperties { .. } => self.unknown_rule(false),
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
            K::MinLength { limit: 1 } => "must not be empty".into(),
            K::Not { schema }
                if schema.get("const")
                    == Some(&serde_json::json!(crate::catalog::DROPPED_OPTION_VALUE)) =>
            {
                DROPPED_RULE.into()
            }
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

/// The rule an option value of `--` alone breaks
/// ([`crate::catalog::DROPPED_OPTION_VALUE`]; the text of its error, from
/// the full schema's `not` or from the argv compiler).
pub const DROPPED_RULE: &str = "must not be '--' alone (argparse drops it from an option's values)";

/// The longest property name an error path carries, in characters; a
/// longer one is cut and ends in `…`.
pub const MAX_PATH_NAME_CHARS: usize = 64;

/// A property name as one JSON pointer token (RFC 6901: `~` as `~0`, `/`
/// as `~1`), control characters as `?`, at most [`MAX_PATH_NAME_CHARS`]
/// characters: a name a client sent may be long or odd, and error text is
/// one line.
pub fn pointer_token(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if i == MAX_PATH_NAME_CHARS {
            out.push('…');
            break;
        }
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c if c.is_control() => out.push('?'),
            c => out.push(c),
        }
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn validator() -> ArgumentValidator {
        ArgumentValidator::new(
            "t",
            &json!({
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "specs": {"type": "array", "items": {
                        "type": "object",
                        "properties": {"spec": {"type": "string"}},
                        "additionalProperties": false}}
                },
                "additionalProperties": false
            }),
        )
        .expect("a valid schema")
    }

    #[test]
    fn an_unknown_property_is_named_by_its_path_never_by_its_value() {
        let errors = validator()
            .validate(&json!({"name": "x", "wait_for_it": "s3cret-value", "a/b~c": 1}))
            .expect_err("two unknown properties");
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(paths, ["/a~1b~0c", "/wait_for_it"]);
        for e in &errors {
            assert_eq!(e.rule, "unknown property (this tool accepts: name, specs)");
            assert!(!e.to_string().contains("s3cret"), "{e}");
        }
        let nested = validator()
            .validate(&json!({"specs": [{"spec": "x", "extra": true}]}))
            .expect_err("an unknown nested property");
        assert_eq!(nested[0].path, "/specs/0/extra");
        assert_eq!(nested[0].rule, "unknown property");
    }

    #[test]
    fn long_and_odd_names_are_bounded() {
        let long = "k".repeat(200);
        let token = pointer_token(&long);
        assert_eq!(token.chars().count(), MAX_PATH_NAME_CHARS + 1);
        assert!(token.ends_with('…'));
        assert_eq!(pointer_token("a\nb"), "a?b");
        assert!(validator().accepts("name"));
        assert!(!validator().accepts("wait_for_previous"));
    }
}
