//! `conda_inventory`: one question across every environment conda knows,
//! answered in one call.
//!
//! With conda's commands as tools, "which environments have numpy" is
//! `conda env list` and then one `conda list` per environment: 1 + N calls
//! and N full package lists in the model's context. This tool answers such
//! a question in one call with compact rows (environment name and prefix,
//! and what matched). It reads what `conda list` and `conda env list` read,
//! through conda's own Python API, in a helper program ([`HELPER`]) the
//! worker runs with the target's interpreter, never behind a running conda
//! (on the call lane when it is idle, forked from the warm conda when that
//! is ready, else on the discovery lane: docs/operating.md "Warm conda"),
//! as the user the worker runs conda as: a
//! principal mapped to an OS user sees what its own conda sees. It runs no
//! solver and changes nothing (the helper's module docs say how it keeps
//! conda's readers from tidying files).
//!
//! The pieces here are pure: the input contract ([`parse_input`],
//! [`Query`]), the helper's argv ([`helper_argv`]), the answer type
//! ([`InventoryAnswer`], also the tool's `outputSchema`), the reading of the
//! helper's result ([`read_answer`]) and the cut to the result budget
//! ([`InventoryAnswer::fit`]).

pub mod stamps;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The tool's name (reserved: no generated tool takes it).
pub const TOOL_NAME: &str = "conda_inventory";

/// The embedded helper, run as `python -I -c HELPER <request-json>`.
pub const HELPER: &str = include_str!("helper.py");

/// Longest query value, in characters: far above any package name, match
/// spec, import name or command, and room for a deep path; it keeps the
/// helper's argv within Linux's limit on one argument
/// (`conda_mcp_shared::limits::ARG_MAX_BYTES`).
pub const MAX_VALUE_CHARS: usize = 1024;

/// Most rows the helper returns (it counts every match); the result budget
/// then cuts further ([`InventoryAnswer::fit`]). Keeps the helper's stdout
/// far below the worker's `--output-limit-bytes` default (1 MiB).
pub const HELPER_MAX_ROWS: usize = 2000;

/// The result budget of this tool when the server has none
/// (`--max-result-bytes` unset): the lean mode's default, under the size at
/// which hosts warn (docs/reference.md "Results").
pub const DEFAULT_BUDGET_BYTES: usize = 40_000;

/// The tool's description.
pub const DESCRIPTION: &str = "What is installed where, in all conda environments, in one call. \
Give one: package (name/match spec), python (version), import_name, command (on PATH), path \
(whose file), sizes: true. Pip packages included. Read-only.";

/// One query: which question is asked, and of what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Query {
    /// Environments holding a package (a name or a match spec).
    Package(String),
    /// Environments whose `python` matches a version (`3.12`, `>=3.11`).
    Python(String),
    /// The package that provides an import name (`yaml`, `google.protobuf`).
    ImportName(String),
    /// The package that installs a command on the environment's `PATH`.
    Command(String),
    /// The package that installed a file (absolute, or relative to the
    /// environment).
    Path(String),
    /// Each environment's size on disk, package count and Python.
    Sizes,
}

impl Query {
    /// The input property of the query (also its kind in the helper's
    /// request and in the answer).
    pub fn kind(&self) -> &'static str {
        match self {
            Query::Package(_) => "package",
            Query::Python(_) => "python",
            Query::ImportName(_) => "import_name",
            Query::Command(_) => "command",
            Query::Path(_) => "path",
            Query::Sizes => "sizes",
        }
    }

    /// The value asked about (`None` for [`Query::Sizes`]).
    pub fn value(&self) -> Option<&str> {
        match self {
            Query::Package(v)
            | Query::Python(v)
            | Query::ImportName(v)
            | Query::Command(v)
            | Query::Path(v) => Some(v),
            Query::Sizes => None,
        }
    }
}

/// The input properties, in the order the description names them.
const PROPERTIES: [&str; 6] = [
    "package",
    "python",
    "import_name",
    "command",
    "path",
    "sizes",
];

/// The input schema (the same in both schema profiles: portable keywords
/// only; "exactly one property", the length bound and the forms of each
/// value are checked by [`parse_input`]). The descriptions are examples:
/// the tool's description says what each property asks.
pub fn input_schema() -> Value {
    let text = |d: &str| json!({"type": "string", "description": d});
    json!({
        "type": "object",
        "properties": {
            "package": text("numpy, numpy>=2"),
            "python": text("3.12, >=3.11"),
            "import_name": text("yaml, cv2, google.protobuf"),
            "command": text("f2py, jupyter"),
            "path": text("bin/python3, or absolute"),
            "sizes": {"type": "boolean"}
        },
        "additionalProperties": false
    })
}

/// Invalid input, named by JSON path; never carries the submitted value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// The arguments are not an object with exactly one known property of
    /// the right type.
    #[error("invalid arguments at {path}: {reason}")]
    Invalid {
        /// JSON pointer of the offending value (`/package`, `/`).
        path: String,
        /// What is wrong, without the value.
        reason: &'static str,
    },
}

fn invalid(path: impl Into<String>, reason: &'static str) -> QueryError {
    QueryError::Invalid {
        path: path.into(),
        reason,
    }
}

/// Checks the arguments and returns the query.
///
/// Errors: an [`QueryError`] naming the JSON path when the arguments are
/// not an object, name an unknown property, give none or more than one of
/// the queries, or a value is not a non-empty string (`sizes`: not `true`),
/// longer than [`MAX_VALUE_CHARS`], or holds a control character.
pub fn parse_input(args: &serde_json::Map<String, Value>) -> Result<Query, QueryError> {
    if let Some(unknown) = args.keys().find(|k| !PROPERTIES.contains(&k.as_str())) {
        // Named as the generated tools name one (a JSON pointer token, cut
        // and without control characters: `schema::validate::pointer_token`).
        return Err(invalid(
            format!("/{}", crate::schema::validate::pointer_token(unknown)),
            "unknown property (this tool accepts: package, python, import_name, command, path, sizes)",
        ));
    }
    let mut given = PROPERTIES.iter().filter(|k| args.contains_key(**k));
    let Some(&key) = given.next() else {
        return Err(invalid(
            "/",
            "give one of package, python, import_name, command, path, sizes",
        ));
    };
    if given.next().is_some() {
        return Err(invalid("/", "give exactly one query property per call"));
    }
    let at = format!("/{key}");
    let value = &args[key];
    if key == "sizes" {
        return match value {
            Value::Bool(true) => Ok(Query::Sizes),
            _ => Err(invalid(at, "must be true")),
        };
    }
    let Some(s) = value.as_str() else {
        return Err(invalid(at, "must be a string"));
    };
    let s = s.trim();
    if s.is_empty() {
        return Err(invalid(at, "must not be empty"));
    }
    if s.chars().count() > MAX_VALUE_CHARS {
        return Err(invalid(at, "is too long (at most 1024 characters)"));
    }
    if s.chars().any(char::is_control) {
        return Err(invalid(at, "must not contain control characters"));
    }
    let checked = |ok: bool, reason: &'static str| {
        if ok {
            Ok(())
        } else {
            Err(invalid(at.clone(), reason))
        }
    };
    let s = s.to_owned();
    Ok(match key {
        "package" => Query::Package(s),
        "python" => Query::Python(s),
        "import_name" => {
            // Python's import system: dotted identifiers.
            checked(
                s.split('.').all(|p| {
                    !p.is_empty()
                        && !p.starts_with(|c: char| c.is_ascii_digit())
                        && p.chars().all(|c| c == '_' || c.is_alphanumeric())
                }),
                "must be a dotted Python identifier (yaml, google.protobuf)",
            )?;
            Query::ImportName(s)
        }
        "command" => {
            checked(
                !s.contains(['/', '\\']) && !s.chars().any(char::is_whitespace),
                "must be a command name without a folder or whitespace",
            )?;
            Query::Command(s)
        }
        _ => Query::Path(s),
    })
}

/// The helper's argv (after the interpreter): `-I -c HELPER <request>`.
pub fn helper_argv(query: &Query) -> Vec<String> {
    let request = json!({
        "kind": query.kind(),
        "value": query.value(),
        "max_rows": HELPER_MAX_ROWS,
    });
    vec![
        "-I".to_owned(),
        "-c".to_owned(),
        HELPER.to_owned(),
        request.to_string(),
    ]
}

/// One row: an environment and what matched in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Row {
    /// The environment's name as `conda env list` shows it (`base`, the
    /// folder's name in an envs directory); "" for one known by prefix only.
    pub env: String,
    /// The environment's prefix (absolute).
    pub prefix: String,
    /// The package (`package`, `import_name`, `command`, `path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its version (`python`: Python's version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Its build string (`pypi_0` for a pip-installed one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
    /// Its channel as `conda list --json` shows it (`pypi` for pip).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// The package's file that matched, relative to the prefix
    /// (`import_name`, `command`, `path`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// `sizes`: how many packages `conda list` lists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packages: Option<u64>,
    /// `sizes`: the environment's size in bytes, as `conda env list
    /// --size` counts it (the installed packages' files and conda-meta).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// `sizes`: its Python's version, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub python: Option<String>,
}

/// An environment conda lists that could not be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Skipped {
    /// Its prefix.
    pub prefix: String,
    /// conda's exception type (`CorruptedEnvironmentError`).
    pub reason: String,
}

/// What `conda_inventory` returns (also its `outputSchema`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct InventoryAnswer {
    /// The query's kind (`package`, `python`, `import_name`, `command`,
    /// `path`, `sizes`).
    pub query: String,
    /// Environments searched (what `conda env list` lists and still exists).
    pub environments: u64,
    /// Rows found (all of them, also those cut).
    pub matched: u64,
    /// The rows sent, in `conda env list`'s order.
    pub rows: Vec<Row>,
    /// Rows left out to stay within the result budget (or the helper's
    /// [`HELPER_MAX_ROWS`]); the query can be narrowed.
    pub truncated: bool,
    /// Environments conda lists that could not be read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped: Vec<Skipped>,
}

impl InventoryAnswer {
    /// Cuts the rows (keeping the first ones) so the serialized answer is
    /// at most `budget` bytes, and says so in `truncated`.
    pub fn fit(&mut self, budget: usize) {
        let size = |a: &InventoryAnswer| serde_json::to_vec(a).map_or(usize::MAX, |v| v.len());
        if size(self) <= budget {
            return;
        }
        self.truncated = true;
        // Rows are of similar size: one estimate, then trim the rest.
        let full = size(self);
        let keep = self.rows.len().saturating_mul(budget) / full.max(1);
        self.rows.truncate(keep);
        while !self.rows.is_empty() && size(self) > budget {
            self.rows.pop();
        }
    }
}

/// The helper's raw answer.
#[derive(Debug, Deserialize)]
struct RawAnswer {
    /// The request's kind, echoed.
    query: String,
    #[serde(default)]
    environments: u64,
    #[serde(default)]
    matched: u64,
    #[serde(default)]
    rows: Vec<Row>,
    #[serde(default)]
    skipped: Vec<Skipped>,
    /// conda could not read the value (a match spec): why, without it.
    #[serde(default)]
    invalid: Option<String>,
}

/// Reading the helper's result failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InventoryError {
    /// conda cannot read the query's value (an invalid match spec).
    #[error("invalid arguments at {path}: {reason}")]
    Invalid {
        /// JSON pointer of the value (`/package`).
        path: String,
        /// What conda said of it, without the value.
        reason: String,
    },
    /// The helper did not produce an answer.
    #[error("the inventory helper failed: {0}")]
    Helper(String),
}

/// Turns the helper's execution result into the tool's answer.
///
/// Errors: [`InventoryError::Invalid`] when conda could not read the value,
/// [`InventoryError::Helper`] when the helper timed out, failed or printed no
/// answer document (its last stderr line is kept: conda's import error).
pub fn read_answer(
    result: &conda_mcp_shared::ExecutionResult,
) -> Result<InventoryAnswer, InventoryError> {
    let raw: RawAnswer = result
        .helper_answer()
        .map_err(|e| InventoryError::Helper(e.to_string()))?;
    if let Some(reason) = raw.invalid {
        return Err(InventoryError::Invalid {
            path: format!("/{}", raw.query),
            reason,
        });
    }
    let truncated = raw.matched > raw.rows.len() as u64;
    Ok(InventoryAnswer {
        query: raw.query,
        environments: raw.environments,
        matched: raw.matched,
        rows: raw.rows,
        truncated,
        skipped: raw.skipped,
    })
}

/// The one-line summary of an answer (the text block's first line).
pub fn summary(answer: &InventoryAnswer) -> String {
    let searched = format!(
        "{} environment{}",
        answer.environments,
        if answer.environments == 1 { "" } else { "s" }
    );
    let mut line = if answer.matched == 0 {
        format!("nothing matched in {searched}")
    } else if answer.query == "sizes" {
        searched.clone()
    } else {
        format!("{} match(es) in {searched}", answer.matched)
    };
    if answer.truncated {
        line.push_str(&format!(
            "; {} row(s) sent, the rest cut to stay within the result budget (narrow the query)",
            answer.rows.len()
        ));
    }
    if !answer.skipped.is_empty() {
        line.push_str(&format!(
            "; {} environment(s) could not be read",
            answer.skipped.len()
        ));
    }
    line
}

/// The complete output schema (`InventoryAnswer`, via schemars): what an
/// answer is checked against before it is sent.
pub fn output_schema() -> Value {
    let mut schema =
        serde_json::to_value(schemars::schema_for!(InventoryAnswer)).unwrap_or(Value::Null);
    crate::schema::without_type_arrays(&mut schema);
    schema
}

/// The output schema as advertised in `tools/list`: `{"type":"object"}`,
/// as for the execution tools (`crate::tools::output_schema`): `tools/list`
/// stays within its byte target; docs/reference.md documents the fields and
/// every answer is checked against [`output_schema`] before it is sent.
pub fn advertised_output_schema() -> Value {
    json!({"type": "object"})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(v: Value) -> serde_json::Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn one_query_per_call_checked_by_path_without_echo() {
        assert_eq!(
            parse_input(&args(json!({"package": "numpy>=2"}))),
            Ok(Query::Package("numpy>=2".into()))
        );
        assert_eq!(parse_input(&args(json!({"sizes": true}))), Ok(Query::Sizes));
        assert_eq!(
            parse_input(&args(json!({"import_name": "google.protobuf"}))),
            Ok(Query::ImportName("google.protobuf".into()))
        );
        let secret = "zz-secret-zz";
        for (bad, path) in [
            (json!({}), "/"),
            (json!({"package": "a", "python": "3"}), "/"),
            (json!({"wait_for_it": "zz-secret-zz"}), "/wait_for_it"),
            (json!({"a/b~": 1, "package": "zz-secret-zz"}), "/a~1b~0"),
            (json!({"package": ""}), "/package"),
            (json!({"package": 3}), "/package"),
            (json!({"sizes": false}), "/sizes"),
            (json!({"import_name": "zz-secret-zz"}), "/import_name"),
            (json!({"command": "bin/zz-secret-zz"}), "/command"),
            (json!({"path": format!("{secret}\u{1}")}), "/path"),
            (json!({"path": "x".repeat(MAX_VALUE_CHARS + 1)}), "/path"),
        ] {
            let err = parse_input(&args(bad)).expect_err("must be refused");
            let QueryError::Invalid { path: got, .. } = &err;
            assert_eq!(got, path);
            assert!(!err.to_string().contains(secret), "never echoes the value");
        }
    }

    #[test]
    fn input_schema_is_valid_and_agrees_with_parse_input() {
        let schema = input_schema();
        crate::schema::check_schema_document(TOOL_NAME, &schema).expect("valid schema");
        let validator = jsonschema::validator_for(&schema).expect("compiles");
        for ok in [json!({"package": "numpy"}), json!({"sizes": true})] {
            assert!(validator.is_valid(&ok));
            assert!(parse_input(&args(ok)).is_ok());
        }
        for bad in [json!({"package": 1}), json!({"x": 1})] {
            assert!(!validator.is_valid(&bad), "{bad}");
        }
    }

    fn row(i: usize) -> Row {
        Row {
            env: format!("env{i}"),
            prefix: format!("/opt/conda/envs/env{i}"),
            name: Some("numpy".into()),
            version: Some("2.1.0".into()),
            build: Some("py312_0".into()),
            channel: Some("conda-forge".into()),
            file: None,
            packages: None,
            size_bytes: None,
            python: None,
        }
    }

    #[test]
    fn fit_cuts_rows_to_the_budget_and_says_so() {
        let mut a = InventoryAnswer {
            query: "package".into(),
            environments: 500,
            matched: 500,
            rows: (0..500).map(row).collect(),
            truncated: false,
            skipped: Vec::new(),
        };
        let whole = serde_json::to_vec(&a).expect("json").len();
        let mut same = a.clone();
        same.fit(whole);
        assert!(!same.truncated);
        assert_eq!(same.rows.len(), 500);
        a.fit(5_000);
        assert!(a.truncated);
        assert!(!a.rows.is_empty() && a.rows.len() < 500);
        assert!(serde_json::to_vec(&a).expect("json").len() <= 5_000);
        assert_eq!(a.matched, 500, "the count stays whole");
        assert!(summary(&a).contains("cut"), "{}", summary(&a));
    }

    #[test]
    fn output_schema_accepts_answers() {
        let validator = jsonschema::validator_for(&output_schema()).expect("valid schema");
        let a = InventoryAnswer {
            query: "package".into(),
            environments: 2,
            matched: 1,
            rows: vec![row(1)],
            truncated: false,
            skipped: vec![Skipped {
                prefix: "/x".into(),
                reason: "CorruptedEnvironmentError".into(),
            }],
        };
        let v = serde_json::to_value(&a).expect("json");
        assert!(validator.is_valid(&v));
        let advertised = jsonschema::validator_for(&advertised_output_schema()).expect("valid");
        assert!(advertised.is_valid(&v));
    }
}
