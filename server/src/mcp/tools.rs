//! The tool set, built once at startup: one generated tool per exposed
//! terminal command, plus the server's own tools (`conda_execute` with
//! `--allow-exec`; `conda_cli_command` when the target has the
//! conda-completion plugin).
//!
//! Every input schema is checked as a JSON Schema 2020-12 document here, and
//! each tool's FULL schema is compiled into the validator calls go through,
//! so a broken schema stops the server at startup, never at call time.

use std::collections::HashMap;
use std::sync::Arc;

use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::Value;

use crate::catalog::{Catalog, CommandIdx, Passthrough};
use crate::schema::describe::{self, ToolEffects};
use crate::schema::{
    ArgumentValidator, Profile, SchemaError, SharedHelp, check_schema_document, input_schema_with,
    tool_names,
};

use super::execute;

/// A property help text shared by at least this many tools is stated once
/// in the server instructions instead of in every schema.
pub const SHARED_HELP_MIN_TOOLS: usize = 2;

/// Name of the raw tool (listed only with `--allow-exec`).
pub const EXECUTE_TOOL: &str = "conda_execute";
/// Name of the completion-manifest tool (read-only; listed when the target
/// has the conda-completion plugin).
pub const CLI_COMMAND_TOOL: &str = "conda_cli_command";

/// One generated tool.
#[derive(Debug)]
pub struct GeneratedTool {
    /// The tool name.
    pub name: String,
    /// Its command in the catalog.
    pub cmd: CommandIdx,
    /// Validator of the FULL input schema.
    pub validator: ArgumentValidator,
}

/// What a tool name routes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Index into [`ToolSet::generated`].
    Generated(usize),
    /// `conda_execute`.
    Execute,
    /// `conda_cli_command` (routed only once it is listed).
    CliCommand,
}

/// All tools of the server.
#[derive(Debug)]
pub struct ToolSet {
    /// Generated tools, in catalog order.
    pub generated: Vec<GeneratedTool>,
    /// What `tools/list` returns, in order: generated tools, then the
    /// server's own.
    pub listed: Arc<Vec<Tool>>,
    /// Validator of `conda_execute`'s input schema (present with
    /// `--allow-exec`).
    pub execute_validator: Option<ArgumentValidator>,
    /// `conda_cli_command`, listed when the target has conda-completion
    /// ≥ 0.3.
    pub cli_command: Option<super::cli_command::CliCommandTool>,
    /// Help texts left out of the schemas because many tools share them;
    /// the server instructions state them once.
    pub shared_help: SharedHelp,
    routes: HashMap<String, Route>,
}

/// What the tool set is built from.
#[derive(Debug, Clone, Copy)]
pub struct ToolOptions {
    /// Input-schema profile to advertise.
    pub profile: Profile,
    /// Whether `conda_execute` is listed (`--allow-exec`).
    pub allow_exec: bool,
}

impl ToolSet {
    /// Builds every tool of `catalog`.
    ///
    /// Errors: a [`SchemaError`] when a schema is not a valid JSON Schema
    /// 2020-12 document (a bug, reported at startup).
    pub fn build(catalog: &Catalog, options: ToolOptions) -> Result<Self, SchemaError> {
        let cmds: Vec<CommandIdx> = catalog.tools().map(|(i, _)| i).collect();
        let paths: Vec<Vec<String>> = cmds
            .iter()
            .map(|&i| catalog.commands[i].subpath().to_vec())
            .collect();
        let names = tool_names(&paths);
        let output_schema = output_schema();
        let shared_help = SharedHelp::of(catalog, SHARED_HELP_MIN_TOOLS);
        let mut generated = Vec::with_capacity(cmds.len());
        let mut listed = Vec::with_capacity(cmds.len() + 2);
        let mut routes = HashMap::new();
        for (&cmd, name) in cmds.iter().zip(names) {
            let command = &catalog.commands[cmd];
            let advertised = input_schema_with(catalog, cmd, options.profile, &shared_help);
            check_schema_document(&name, &advertised)?;
            let full = if options.profile == Profile::Full {
                advertised.clone()
            } else {
                input_schema_with(catalog, cmd, Profile::Full, &shared_help)
            };
            let validator = ArgumentValidator::new(&name, &full)?;
            let effects = effects(catalog, cmd);
            let tool = Tool::new_with_raw(
                name.clone(),
                Some(describe::description(command, effects).into()),
                Arc::new(as_object(advertised)),
            )
            .with_title(describe::title(command))
            .with_annotations(describe::annotations(effects))
            .with_raw_output_schema(output_schema.clone())
            .with_meta(describe::meta(command));
            routes.insert(name.clone(), Route::Generated(generated.len()));
            generated.push(GeneratedTool {
                name,
                cmd,
                validator,
            });
            listed.push(tool);
        }
        let mut execute_validator = None;
        if options.allow_exec {
            let schema = execute::input_schema();
            execute_validator = Some(ArgumentValidator::new(
                EXECUTE_TOOL,
                &Value::Object(schema.as_ref().clone()),
            )?);
            listed.push(
                Tool::new_with_raw(EXECUTE_TOOL, Some(execute::DESCRIPTION.into()), schema)
                    .with_title("conda (raw command line)")
                    .with_annotations(
                        ToolAnnotations::with_title("conda (raw command line)")
                            .read_only(false)
                            .destructive(true)
                            .idempotent(false)
                            .open_world(true),
                    )
                    .with_raw_output_schema(output_schema.clone()),
            );
            routes.insert(EXECUTE_TOOL.to_owned(), Route::Execute);
        }
        let cli_command = if routes.contains_key(CLI_COMMAND_TOOL) {
            None
        } else {
            let schema = crate::completion::input_schema();
            check_schema_document(CLI_COMMAND_TOOL, &schema)?;
            super::cli_command::CliCommandTool::for_catalog(catalog).map_err(|reason| {
                SchemaError {
                    tool: CLI_COMMAND_TOOL.to_owned(),
                    reason,
                }
            })?
        };
        if let Some(t) = &cli_command {
            listed.push(t.tool.clone());
            routes.insert(CLI_COMMAND_TOOL.to_owned(), Route::CliCommand);
        }
        Ok(Self {
            generated,
            listed: Arc::new(listed),
            execute_validator,
            cli_command,
            shared_help,
            routes,
        })
    }

    /// Routes a tool name; `None` for names this server does not serve.
    pub fn route(&self, name: &str) -> Option<Route> {
        self.routes.get(name).copied()
    }

    /// Names of the generated tools, in catalog order.
    pub fn generated_names(&self) -> Vec<String> {
        self.generated.iter().map(|t| t.name.clone()).collect()
    }
}

/// The tool's broadest behaviour, from the policy's annotations.
pub fn effects(catalog: &Catalog, cmd: CommandIdx) -> ToolEffects {
    let hint = crate::policy::annotations(catalog, cmd);
    ToolEffects {
        read_only: hint.read_only,
        destructive: hint.destructive,
        idempotent: hint.idempotent,
        open_world: hint.open_world,
        runs_subprocess: catalog.commands[cmd].passthrough != Passthrough::None,
    }
}

/// The output schema of every tool as advertised in `tools/list`: the
/// [`crate::call::CallOutput`] schema (schemars, 2020-12, serialize
/// contract) with the shape of each field only (no descriptions, `format`,
/// `$schema`, `required`, nested definitions): it is repeated in every
/// tool, and the field meanings are documented once (README, server
/// instructions). `error.code` lists every code; "integer or null" is an
/// `anyOf` of single types (no type arrays).
pub fn output_schema() -> Arc<JsonObject> {
    let full = Value::Object(full_output_schema().as_ref().clone());
    let mut props = serde_json::Map::new();
    if let Some(Value::Object(fields)) = full.get("properties") {
        for (name, field) in fields {
            props.insert(name.clone(), advertised_field(name, field));
        }
    }
    let v = serde_json::json!({"type": "object", "properties": props});
    Arc::new(as_object(v))
}

/// The advertised shape of one output field.
fn advertised_field(name: &str, field: &Value) -> Value {
    use serde_json::json;
    match name {
        "error" => {
            let codes = serde_json::to_value(schemars::schema_for!(crate::call::error::ErrorCode))
                .map(|s| enum_values(&s))
                .unwrap_or_default();
            json!({"type": "object", "properties": {
                "code": {"type": "string", "enum": codes},
                "message": {"type": "string"},
                "retryable": {"type": "boolean"},
                "details": {"type": "object"},
            }})
        }
        "cut" => json!({"type": "object"}),
        "stopped_by" => json!({"type": "string", "enum": ["SIGTERM", "SIGKILL"]}),
        "parsed_json" => json!({}),
        _ => {
            let mut f = field.clone();
            strip_keywords(&mut f);
            f
        }
    }
}

/// Removes what the advertised copy leaves to the documentation:
/// descriptions, `format`, integer minimums, defaults (also inside `anyOf`).
fn strip_keywords(v: &mut Value) {
    if let Value::Object(m) = v {
        for k in ["description", "format", "minimum", "default"] {
            m.remove(k);
        }
        if let Some(Value::Array(branches)) = m.get_mut("anyOf") {
            for b in branches {
                strip_keywords(b);
            }
        }
    }
}

/// The values of a schemars enum schema (`enum`, or `oneOf` of `const`s).
fn enum_values(schema: &Value) -> Vec<Value> {
    if let Some(Value::Array(values)) = schema.get("enum") {
        return values.clone();
    }
    schema
        .get("oneOf")
        .and_then(Value::as_array)
        .map(|alts| {
            alts.iter()
                .filter_map(|a| a.get("const").cloned())
                .collect()
        })
        .unwrap_or_default()
}

/// The complete output schema (with `required`, nested definitions and
/// `additionalProperties: false`): what results are checked against before
/// they are sent. Written without type arrays, like the advertised one.
pub fn full_output_schema() -> Arc<JsonObject> {
    let full = rmcp::handler::server::common::schema_for_output::<crate::call::CallOutput>();
    let mut v = Value::Object(full.as_ref().clone());
    crate::schema::without_type_arrays(&mut v);
    Arc::new(as_object(v))
}

fn as_object(v: Value) -> JsonObject {
    match v {
        Value::Object(m) => m,
        _ => JsonObject::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn real() -> Option<Catalog> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/fixtures/conda-26-parser.json");
        let bytes = std::fs::read(p).ok()?;
        crate::catalog::build(&crate::dump::Dump::from_json(&bytes).ok()?).ok()
    }

    #[test]
    fn real_tool_set_builds_in_both_profiles_and_lists_execute_only_when_allowed() {
        let Some(cat) = real() else {
            eprintln!("SKIPPED: the recorded conda 26 dump is absent");
            return;
        };
        for profile in [Profile::Portable, Profile::Full] {
            for allow_exec in [false, true] {
                let set = ToolSet::build(
                    &cat,
                    ToolOptions {
                        profile,
                        allow_exec,
                    },
                )
                .expect("builds");
                let listed: Vec<&str> = set.listed.iter().map(|t| t.name.as_ref()).collect();
                assert_eq!(listed.contains(&EXECUTE_TOOL), allow_exec);
                assert_eq!(set.route(EXECUTE_TOOL).is_some(), allow_exec);
                assert!(set.route("conda_list").is_some());
                assert!(
                    set.route("conda_activate").is_none(),
                    "shell-only commands are not tools"
                );
                let bytes = serde_json::to_vec(&*set.listed).expect("json").len();
                eprintln!(
                    "{profile:?} allow_exec={allow_exec}: {} tools, {bytes} bytes",
                    listed.len()
                );
                if profile == Profile::Portable && !allow_exec {
                    assert!(bytes <= 50 * 1024, "tools/list is {bytes} bytes");
                }
            }
        }
    }
}
