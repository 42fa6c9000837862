//! `--tool-mode compact`: three tools over the same catalog, compiler and
//! policy instead of one tool per command, for hosts that carry few tools
//! or pay for every byte of `tools/list`.
//!
//! * `conda_commands` (`{}`): every command this server serves, with its
//!   one-line description, its policy class (`read_only`, `mutation`,
//!   `exec`) and what the startup policy lets it do;
//! * `conda_describe` (`{"command": "env create"}`): that command's input
//!   schema in the selected schema profile (every property described);
//! * `conda_call` (`{"command": "env create", "arguments": {…}}`): validated
//!   against that command's full schema, compiled, classified and run
//!   exactly as its typed tool (`conda_env_create`) would be: same results,
//!   same policy, same errors (a JSON path in an error is prefixed with
//!   `/arguments`).
//!
//! `command` is a command path as conda spells it (`env create`, aliases
//! such as `uninstall` included) or the typed tool's name
//! (`conda_env_create`). An unknown or filtered-out command is invalid
//! input naming `/command`, never the value.

use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde::Serialize;
use serde_json::{Value, json};

use crate::catalog::Catalog;
use crate::schema::describe::own_meta;
use crate::schema::{ArgumentError, Profile, input_schema};

use super::{ToolSet, command_paths, output_schema};

/// Name of the listing tool.
pub const COMMANDS_TOOL: &str = "conda_commands";
/// Name of the schema tool.
pub const DESCRIBE_TOOL: &str = "conda_describe";
/// Name of the calling tool.
pub const CALL_TOOL: &str = "conda_call";

const COMMANDS_DESCRIPTION: &str = "List the conda commands this server runs: path, \
     description, policy class and what the policy allows. Next: conda_describe, conda_call.";
const DESCRIBE_DESCRIPTION: &str =
    "Input schema of one conda command: the arguments conda_call takes for it.";
const CALL_DESCRIPTION: &str = "Run one conda command with its arguments as conda_describe \
     gives them, e.g. {\"command\": \"env list\", \"arguments\": {\"json\": true}}. Same result, \
     policy and errors as its typed tool.";

const COMMAND_PROPERTY: &str = "Command path (\"env create\") or tool name.";

/// Which of the three tools a call is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactTool {
    /// `conda_commands`.
    Commands,
    /// `conda_describe`.
    Describe,
    /// `conda_call`.
    Call,
}

/// The three tools as `tools/list` shows them.
pub fn tools(_profile: Profile) -> Vec<(CompactTool, Tool)> {
    let command = json!({"type": "string", "description": COMMAND_PROPERTY});
    let schema = |props: Value, required: &[&str]| -> Arc<JsonObject> {
        let mut m = JsonObject::new();
        m.insert("type".into(), json!("object"));
        m.insert("properties".into(), props);
        if !required.is_empty() {
            m.insert("required".into(), json!(required));
        }
        m.insert("additionalProperties".into(), json!(false));
        Arc::new(m)
    };
    let read_only = ToolAnnotations::new().read_only(true).open_world(false);
    vec![
        (
            CompactTool::Commands,
            Tool::new_with_raw(
                COMMANDS_TOOL,
                Some(COMMANDS_DESCRIPTION.into()),
                schema(json!({}), &[]),
            )
            .with_title("conda commands")
            .with_annotations(read_only.clone())
            .with_meta(own_meta("", true)),
        ),
        (
            CompactTool::Describe,
            Tool::new_with_raw(
                DESCRIBE_TOOL,
                Some(DESCRIBE_DESCRIPTION.into()),
                schema(json!({"command": command}), &["command"]),
            )
            .with_title("conda command schema")
            .with_annotations(read_only)
            .with_meta(own_meta("", true)),
        ),
        (
            CompactTool::Call,
            Tool::new_with_raw(
                CALL_TOOL,
                Some(CALL_DESCRIPTION.into()),
                schema(
                    json!({"command": command, "arguments": {"type": "object"}}),
                    &["command"],
                ),
            )
            .with_title("conda (any command)")
            .with_raw_output_schema(output_schema())
            .with_meta(own_meta("", true)),
        ),
    ]
}

/// One row of `conda_commands`.
#[derive(Debug, Serialize)]
pub struct CommandRow {
    /// Command path without `conda` (`env create`): what `conda_call` and
    /// `conda_describe` take as `command`.
    pub command: String,
    /// The typed tool's description (policy sentence first, when any).
    pub description: String,
    /// `read_only`, `mutation` or `exec`: the command's broadest behaviour.
    pub policy: &'static str,
    /// What the startup policy lets its calls do.
    #[serde(flatten)]
    pub runnable: crate::policy::Runnable,
}

/// `conda_commands`' answer: `{"commands": [CommandRow…]}`.
pub fn commands(catalog: &Catalog, tools: &ToolSet) -> Value {
    let rows: Vec<CommandRow> = tools
        .generated
        .iter()
        .map(|t| CommandRow {
            command: catalog.commands[t.cmd].subpath().join(" "),
            description: t.description.clone(),
            policy: crate::policy::policy_class(catalog, t.cmd),
            runnable: t.runnable.clone(),
        })
        .collect();
    json!({ "call": CALL_HINT, "commands": rows })
}

/// How `conda_commands`' answer says to run a command.
pub const CALL_HINT: &str = "run a command with conda_call {\"command\": <command>, \"arguments\": {...}}; conda_describe {\"command\": <command>} gives its arguments";

/// What the unknown-tool error of a compact server adds: conda's commands
/// are not tools there.
pub const UNKNOWN_TOOL_HINT: &str = "this server runs in compact mode: call a conda command through conda_call (conda_commands lists them)";

/// Checks that `conda_commands` was called without arguments.
///
/// Errors: an [`ArgumentError`] at `/` naming no submitted key.
pub fn no_arguments(args: &Value) -> Result<(), ArgumentError> {
    match args {
        Value::Null => Ok(()),
        Value::Object(m) if m.is_empty() => Ok(()),
        _ => Err(ArgumentError {
            path: "/".into(),
            rule: "this tool takes no arguments".into(),
        }),
    }
}

/// The arguments of `conda_describe` and `conda_call`: the command and, for
/// `conda_call`, its arguments object.
#[derive(Debug)]
pub struct Request {
    /// Index into [`ToolSet::generated`].
    pub tool: usize,
    /// The command's arguments (`{}` when left out).
    pub arguments: Value,
}

/// Reads `{"command": …, "arguments": {…}}` (the schema already checked
/// the shapes).
///
/// Errors: an [`ArgumentError`] at `/command` when the command is not one
/// this server serves (never naming the value), or at `/arguments` when it
/// is not an object.
pub fn request(catalog: &Catalog, tools: &ToolSet, args: &Value) -> Result<Request, ArgumentError> {
    if let Some(obj) = args.as_object()
        && obj.keys().any(|k| k != "command" && k != "arguments")
    {
        return Err(ArgumentError {
            path: "/".into(),
            rule: "only the properties command and arguments are allowed".into(),
        });
    }
    let command = args.get("command").and_then(Value::as_str).unwrap_or("");
    let tool = tools
        .find_command(catalog, command)
        .ok_or_else(|| ArgumentError {
            path: "/command".into(),
            rule: "not a command this server serves (conda_commands lists them)".into(),
        })?;
    let arguments = match args.get("arguments") {
        None => Value::Object(JsonObject::new()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => {
            return Err(ArgumentError {
                path: "/arguments".into(),
                rule: "must be an object".into(),
            });
        }
    };
    Ok(Request { tool, arguments })
}

/// `conda_describe`'s answer for generated tool `i`: command path,
/// description, policy class, what the policy allows, aliases and
/// the input schema in `profile`, every property described.
pub fn describe(catalog: &Catalog, tools: &ToolSet, i: usize, profile: Profile) -> Value {
    let t = &tools.generated[i];
    let paths = command_paths(catalog, t.cmd);
    // The typed tool's schema, server options (`conda_run`'s) included.
    let mut schema = input_schema(catalog, t.cmd, profile);
    if super::server_options::is_run(&catalog.commands[t.cmd]) {
        super::add_server_options(&mut schema);
    }
    if super::server_options::creates_environment(&catalog.commands[t.cmd]) {
        super::add_replace_existing(&mut schema);
    }
    if super::server_options::removes_environment(&catalog.commands[t.cmd]) {
        super::add_remove_unmanaged(&mut schema);
    }
    json!({
        "command": paths[0],
        "aliases": &paths[1..],
        "description": t.description,
        "policy": crate::policy::policy_class(catalog, t.cmd),
        "runnable": t.runnable,
        "input_schema": schema,
    })
}

/// An argument error of the typed tool, as `conda_call` reports it: its
/// JSON path under `/arguments`.
pub fn under_arguments(mut e: ArgumentError) -> ArgumentError {
    e.path = if e.path == "/" {
        "/arguments".to_owned()
    } else {
        format!("/arguments{}", e.path)
    };
    e
}
