//! `conda_cli_command`: one command of conda-completion's manifest.
//!
//! The conda-completion plugin (≥ 0.3) keeps a msgpack manifest of conda's
//! whole command line, plugins included, with completion types, rules and
//! runtime sources that argparse alone does not carry. This tool reads one
//! command of it through the plugin's public Python API, with the target's
//! own interpreter, through the worker's discovery lane (so it never waits
//! behind a running conda). It never regenerates the manifest (that is
//! `conda completion generate`, a mutation) and never returns the
//! package-name or version caches.
//!
//! The pieces here are pure: the input contract ([`parse_input`]), the
//! helper's argv ([`helper_argv`]), the answer type ([`CompletionAnswer`],
//! also the tool's `outputSchema`) and the reading of the helper's result
//! ([`read_answer`]). The MCP handler runs the job.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::catalog::Catalog;

/// The tool's name (reserved: no generated tool takes it).
pub const TOOL_NAME: &str = "conda_cli_command";

/// The embedded helper, run as `python -I -c HELPER <request-json>`.
pub const HELPER: &str = include_str!("helper.py");

/// Maximum number of tokens in `command_path` (conda's deepest command,
/// `env config vars list`, has four).
pub const MAX_PATH_TOKENS: usize = 8;

/// Longest token of `command_path`, in characters: far above any conda
/// command name, and it keeps the helper's argv within Linux's limit on
/// one argument (`conda_mcp_shared::limits::ARG_MAX_BYTES`).
pub const MAX_TOKEN_CHARS: usize = 128;

/// Lowest conda-completion version whose public API this tool uses.
const MIN_PLUGIN_VERSION: (u64, u64) = (0, 3);

/// Whether the target has conda-completion ≥ 0.3 among its plugins (the
/// entry points of group `conda` in the discovery dump).
pub fn plugin_present(catalog: &Catalog) -> bool {
    catalog.plugins.iter().any(|p| {
        p.distribution.eq_ignore_ascii_case("conda-completion")
            && version_at_least(&p.version, MIN_PLUGIN_VERSION)
    })
}

/// `major.minor` comparison on the leading numeric components of a PEP 440
/// version; anything unparsable counts as too old.
fn version_at_least(version: &str, min: (u64, u64)) -> bool {
    let mut parts = version.split(['.', '+', '-']).map(|p| {
        let digits: String = p.chars().take_while(char::is_ascii_digit).collect();
        digits.parse::<u64>().ok()
    });
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= min,
        (Some(major), None) => (major, 0) >= min,
        _ => false,
    }
}

/// The input schema (same in both schema profiles: it uses only the
/// portable keywords).
pub fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command_path": {
                "type": "array",
                "description": "Command tokens after `conda`, e.g. [\"env\",\"create\"]; [] = the root.",
                "items": {
                    "type": "string",
                    // The length bound is in the pattern: the portable
                    // profile has no `maxLength` (see schema/).
                    "pattern": format!("^[^\\s-]\\S{{0,{}}}$", MAX_TOKEN_CHARS - 1)
                },
                "maxItems": MAX_PATH_TOKENS
            }
        },
        "required": ["command_path"],
        "additionalProperties": false
    })
}

/// The tool's description.
pub const DESCRIPTION: &str = "Describe one conda command (options, positionals, subcommands, \
completion rules) from conda-completion's manifest. Read-only.";

/// Invalid input, named by JSON path; never carries the submitted value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// The arguments are not an object with exactly `command_path`.
    #[error("invalid arguments at {path}: {reason}")]
    Invalid {
        /// JSON pointer of the offending value (`/command_path/1`).
        path: String,
        /// What is wrong, without the value.
        reason: &'static str,
    },
}

fn invalid(path: impl Into<String>, reason: &'static str) -> InputError {
    InputError::Invalid {
        path: path.into(),
        reason,
    }
}

/// Checks the arguments and returns the requested path.
///
/// Errors: an [`InputError`] naming the JSON path when the arguments are not
/// an object, have unknown fields, lack `command_path`, or a token is empty,
/// starts with `-` or holds whitespace.
pub fn parse_input(args: &serde_json::Map<String, Value>) -> Result<Vec<String>, InputError> {
    if let Some(extra) = args.keys().find(|k| *k != "command_path") {
        let _ = extra;
        return Err(invalid(
            "/",
            "unknown field (only command_path is accepted)",
        ));
    }
    let Some(path) = args.get("command_path") else {
        return Err(invalid("/command_path", "required field is missing"));
    };
    let Some(items) = path.as_array() else {
        return Err(invalid("/command_path", "must be an array of strings"));
    };
    if items.len() > MAX_PATH_TOKENS {
        return Err(invalid("/command_path", "too many tokens"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let at = format!("/command_path/{i}");
            let s = v
                .as_str()
                .ok_or_else(|| invalid(at.clone(), "must be a string"))?;
            if s.is_empty() {
                Err(invalid(at, "must not be empty"))
            } else if s.starts_with('-') {
                Err(invalid(at, "must be a command name, not an option"))
            } else if s.chars().any(char::is_whitespace) {
                Err(invalid(at, "must not contain whitespace"))
            } else if s.chars().count() > MAX_TOKEN_CHARS {
                Err(invalid(
                    at,
                    "is longer than any command name (at most 128 characters)",
                ))
            } else {
                Ok(s.to_owned())
            }
        })
        .collect()
}

/// The helper's argv (after the interpreter): `-I -c HELPER <request>`.
/// The request carries the path and the catalog's subcommand aliases
/// (`[parent..., alias, canonical]`), so `uninstall` resolves to `remove`.
pub fn helper_argv(catalog: &Catalog, command_path: &[String]) -> Vec<String> {
    let mut aliases = Vec::new();
    for cmd in &catalog.commands {
        let Some((name, parent)) = cmd.subpath().split_last() else {
            continue;
        };
        for alias in &cmd.aliases {
            let mut entry: Vec<String> = parent.to_vec();
            entry.push(alias.clone());
            entry.push(name.clone());
            aliases.push(entry);
        }
    }
    let request = json!({ "command_path": command_path, "subcommand_aliases": aliases });
    vec![
        "-I".to_owned(),
        "-c".to_owned(),
        HELPER.to_owned(),
        request.to_string(),
    ]
}

/// Whether the manifest could be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Availability {
    /// The manifest was read; `command` is present.
    Available,
    /// conda-completion is not importable by the target's interpreter.
    NotInstalled,
    /// The manifest does not exist yet; `hint` says how to create it.
    NotGenerated,
    /// Something else failed; `message` says what.
    Unavailable,
}

/// Freshness of the manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ManifestInfo {
    /// Manifest format version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    /// When `conda completion generate` wrote it (ISO 8601).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated_at: Option<String>,
    /// Plugin hash stored in the manifest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored_plugin_hash: Option<String>,
    /// Plugin hash of the installation now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_plugin_hash: Option<String>,
    /// True when the plugin set changed since the manifest was written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale: Option<bool>,
}

/// One command as the manifest has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CommandView {
    /// One-line summary.
    #[serde(default)]
    pub summary: Option<String>,
    /// Options by long name: short form, choices, nargs, completion type,
    /// description, metavar, default, required, group.
    #[serde(default)]
    pub options: serde_json::Map<String, Value>,
    /// Positionals in order: name, choices, nargs, completion type and rules.
    #[serde(default)]
    pub positionals: Vec<Value>,
    /// Direct subcommands by name: `summary`, or `alias_of` for an alias.
    #[serde(default)]
    pub subcommands: serde_json::Map<String, Value>,
    /// Mutually exclusive groups, as lists of option names.
    #[serde(default)]
    pub exclusive_groups: Vec<Vec<String>>,
}

/// What `conda_cli_command` returns (also its `outputSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompletionAnswer {
    /// Whether the manifest could be read.
    pub availability: Availability,
    /// The path as requested.
    pub requested_path: Vec<String>,
    /// The canonical path after alias resolution.
    pub resolved_path: Vec<String>,
    /// Where an alias pointed, when one was used (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alias_target: Option<Vec<String>>,
    /// The command, when available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<CommandView>,
    /// Runtime candidate sources the command refers to, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_sources: Option<serde_json::Map<String, Value>>,
    /// Manifest metadata and freshness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<ManifestInfo>,
    /// Installed conda-completion version (absent when unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conda_completion_version: Option<String>,
    /// Why the manifest is not available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// What to do about it (`Run conda completion generate ...`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

/// The helper's raw answer: the public answer plus the index of an unknown
/// path token.
#[derive(Debug, Deserialize)]
struct RawAnswer {
    #[serde(flatten)]
    answer: CompletionAnswer,
    #[serde(default)]
    unknown_index: Option<usize>,
}

/// Reading the helper's result failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AnswerError {
    /// The requested path names no command of the manifest.
    #[error(transparent)]
    UnknownPath(#[from] InputError),
    /// The helper did not produce an answer.
    #[error("the completion helper failed: {0}")]
    Helper(String),
}

/// Turns the helper's execution result into the tool's answer.
///
/// Errors: [`AnswerError::UnknownPath`] (invalid input, naming the JSON path
/// of the first unknown token), [`AnswerError::Helper`] when the helper
/// timed out, failed or printed no answer document.
pub fn read_answer(
    result: &conda_mcp_shared::ExecutionResult,
) -> Result<CompletionAnswer, AnswerError> {
    let raw: RawAnswer = result
        .helper_answer()
        .map_err(|e| AnswerError::Helper(e.to_string()))?;
    if let Some(i) = raw.unknown_index {
        return Err(invalid(
            format!("/command_path/{i}"),
            "names no command known to conda-completion's manifest",
        )
        .into());
    }
    Ok(raw.answer)
}

/// The complete output schema (`CompletionAnswer`, via schemars): what an
/// answer is checked against before it is sent.
pub fn output_schema() -> Value {
    let mut schema =
        serde_json::to_value(schemars::schema_for!(CompletionAnswer)).unwrap_or(Value::Null);
    crate::schema::without_type_arrays(&mut schema);
    schema
}

/// The output schema as advertised in `tools/list`: the required fields of
/// [`output_schema`] (what every answer has), without descriptions, nested
/// definitions or the optional fields (`alias_target`, `command`,
/// `runtime_sources`, `manifest`, `conda_completion_version`, `message`,
/// `hint`, `error`: docs/reference.md documents them), which JSON Schema
/// still allows: `tools/list` must stay small (docs/benchmarks.md
/// "tools/list size").
pub fn advertised_output_schema() -> Value {
    let path = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "type": "object",
        "properties": {
            "availability": {"type": "string", "enum": ["available", "not_installed", "not_generated", "unavailable"]},
            "requested_path": path,
            "resolved_path": path,
        },
        "required": ["availability", "requested_path", "resolved_path"]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn input_tokens_are_checked_by_path() {
        assert_eq!(
            parse_input(&args(json!({"command_path": ["env", "list"]}))),
            Ok(vec!["env".into(), "list".into()])
        );
        assert_eq!(parse_input(&args(json!({"command_path": []}))), Ok(vec![]));
        for (bad, path) in [
            (json!({"command_path": ["env", ""]}), "/command_path/1"),
            (json!({"command_path": ["--json"]}), "/command_path/0"),
            (json!({"command_path": ["env list"]}), "/command_path/0"),
            (json!({"command_path": [3]}), "/command_path/0"),
            (
                json!({"command_path": ["env", "x".repeat(200 * 1024)]}),
                "/command_path/1",
            ),
            (json!({"command_path": "env"}), "/command_path"),
            (json!({}), "/command_path"),
            (json!({"command_path": [], "x": 1}), "/"),
        ] {
            let err = parse_input(&args(bad)).expect_err("must be refused");
            let InputError::Invalid { path: got, .. } = &err;
            assert_eq!(got, path);
            assert!(
                !err.to_string().contains("--json"),
                "never echoes the value"
            );
        }
    }

    #[test]
    fn plugin_version_rule() {
        assert!(version_at_least("0.3.2", (0, 3)));
        assert!(version_at_least("1.0", (0, 3)));
        assert!(!version_at_least("0.2.9", (0, 3)));
        assert!(!version_at_least("dev", (0, 3)));
    }

    #[test]
    fn input_schema_is_valid_and_agrees_with_parse_input() {
        let schema = input_schema();
        let validator = jsonschema::validator_for(&schema).expect("valid schema");
        for ok in [
            json!({"command_path": ["env", "list"]}),
            json!({"command_path": []}),
        ] {
            assert!(validator.is_valid(&ok));
            assert!(parse_input(&args(ok)).is_ok());
        }
        for bad in [
            json!({"command_path": ["-x"]}),
            json!({"command_path": ["a b"]}),
            json!({"command_path": [""]}),
            json!({"command_path": ["y".repeat(MAX_TOKEN_CHARS + 1)]}),
        ] {
            assert!(!validator.is_valid(&bad));
            assert!(parse_input(&args(bad)).is_err());
        }
    }

    #[test]
    fn output_schema_accepts_helper_answers() {
        let schema = output_schema();
        let validator = jsonschema::validator_for(&schema).expect("valid schema");
        let answer = CompletionAnswer {
            availability: Availability::NotGenerated,
            requested_path: vec!["env".into()],
            resolved_path: vec!["env".into()],
            alias_target: None,
            command: None,
            runtime_sources: None,
            manifest: None,
            conda_completion_version: Some("0.3.2".into()),
            message: Some("m".into()),
            hint: Some("h".into()),
        };
        let v = serde_json::to_value(&answer).expect("serializes");
        assert!(
            validator.is_valid(&v),
            "{:?}",
            validator
                .iter_errors(&v)
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
        );
    }
}
