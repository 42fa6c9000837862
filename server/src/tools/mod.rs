//! The tool surface, free of the call pipeline and of the protocol's
//! requests: which tools this server offers for a catalog and how a tool
//! name routes to a tool kind. Below [`crate::call`] (which plans the
//! calls of these tools) and [`crate::mcp`] (which serves them).
//!
//! The tool set is built once at startup: one generated tool per exposed
//! terminal command, plus the server's own tools (`conda_execute` with
//! `--allow-exec`; `conda_cli_command` when the target has the
//! conda-completion plugin; `conda_inventory` always).
//!
//! * [`ToolSet`], [`Route`], [`GeneratedTool`], [`ToolMode`],
//!   [`ToolOptions`]: the tool set, its routes and what it is built from;
//! * [`filter`]: `--tools` and `--exclude-tools`;
//! * [`compact`]: the three tools of `--tool-mode compact` and the
//!   catalog answers of `conda_commands` and `conda_describe`;
//! * [`execute`]: the raw tool's input and checks;
//! * [`cli_command`]: the `conda_cli_command` tool's definition;
//! * [`inventory`]: the `conda_inventory` tool's definition (listed in
//!   every mode and under every policy);
//! * [`server_options`]: the options the server adds to typed tools
//!   (`stdin`, `timeout_seconds`, `replace_existing`) and the sentences of
//!   confirmation and approval.
//!
//! Every input schema is checked as a JSON Schema 2020-12 document here, and
//! each tool's FULL schema is compiled into the validator calls go through,
//! so a broken schema stops the server at startup, never at call time.

pub mod approval_card;
pub mod cli_command;
pub mod closest;
pub mod compact;
pub mod execute;
pub mod filter;
pub mod inventory;
pub mod server_options;
pub mod spec;

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use crate::catalog::{Catalog, CommandIdx, Passthrough};
use crate::policy::Policy;
use crate::schema::describe::{self, ToolEffects};
use crate::schema::{
    ArgumentValidator, Profile, SchemaError, SharedHelp, check_schema_document, input_schema_with,
    tool_names,
};

use filter::{Candidate, ToolFilter};
use spec::{JsonObject, ToolHints, ToolSpec};

/// A property help text shared by at least this many tools is stated once
/// in the server instructions instead of in every schema.
pub const SHARED_HELP_MIN_TOOLS: usize = 2;

/// Name of the raw tool (listed only with `--allow-exec`).
pub const EXECUTE_TOOL: &str = "conda_execute";
/// Name of the completion-manifest tool (read-only; listed when the target
/// has the conda-completion plugin).
pub const CLI_COMMAND_TOOL: &str = "conda_cli_command";
/// Name of the inventory tool (read-only; listed in every mode).
pub const INVENTORY_TOOL: &str = crate::inventory::TOOL_NAME;

/// One generated tool.
#[derive(Debug)]
pub struct GeneratedTool {
    /// The tool name.
    pub name: String,
    /// Its command in the catalog.
    pub cmd: CommandIdx,
    /// Validator of the FULL input schema.
    pub validator: ArgumentValidator,
    /// Its description as listed (policy sentence first, when there is one).
    pub description: String,
    /// What the startup policy lets its calls do.
    pub runnable: crate::policy::Runnable,
}

/// What a tool name routes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// Index into [`ToolSet::generated`].
    Generated(usize),
    /// `conda_execute`.
    Execute,
    /// `conda_cli_command` (routed only when it is listed).
    CliCommand,
    /// `conda_inventory` (routed unless `--tools`/`--exclude-tools` leave
    /// it out).
    Inventory,
    /// `conda_commands`, `conda_describe` or `conda_call`
    /// (`--tool-mode compact`).
    Compact(compact::CompactTool),
}

/// All tools of the server.
#[derive(Debug)]
pub struct ToolSet {
    /// Generated tools the filter lets through, in catalog order (listed
    /// and routed by name in the typed mode; reached through `conda_call`
    /// in the compact mode).
    pub generated: Vec<GeneratedTool>,
    /// What `tools/list` returns, in order: generated tools, then the
    /// server's own.
    pub listed: Arc<Vec<ToolSpec>>,
    /// Validator of `conda_execute`'s input schema (present with
    /// `--allow-exec`).
    pub execute_validator: Option<ArgumentValidator>,
    /// `conda_cli_command`, listed when the target has conda-completion
    /// ≥ 0.3.
    pub cli_command: Option<cli_command::CliCommandTool>,
    /// Help texts left out of the schemas because many tools share them;
    /// the server instructions state them once.
    pub shared_help: SharedHelp,
    routes: HashMap<String, Route>,
}

/// `--tool-mode`: how the catalog is offered as tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ToolMode {
    /// One typed tool per conda command (`conda_install`, ...).
    #[default]
    Typed,
    /// Three tools over the same catalog: `conda_commands` (list),
    /// `conda_describe` (one command's input schema) and `conda_call` (run
    /// one command with its arguments), for hosts with a small tool budget.
    Compact,
}

/// What the tool set is built from.
#[derive(Debug, Clone, Default)]
pub struct ToolOptions {
    /// Input-schema profile to advertise.
    pub profile: Profile,
    /// The startup policy: `conda_execute` is listed with `--allow-exec`,
    /// and a tool the policy limits says so first in its description.
    pub policy: Policy,
    /// `--tools` / `--exclude-tools`.
    pub filter: ToolFilter,
    /// `--tool-mode`.
    pub mode: ToolMode,
    /// Whether mutations without `yes: true` run as dry runs (not
    /// `--no-confirm`); the tools it applies to say so in their description.
    pub confirm: bool,
    /// `--tool-icons`: every listed tool carries the server's icon
    /// ([`ToolSpec::icon`]).
    pub icons: bool,
}

impl ToolOptions {
    /// The options of a server with confirmation by dry run, in `profile`,
    /// allowed to write and to run raw command lines when `allow` (else
    /// read-only): what the tool-set tests build with.
    #[cfg(test)]
    pub(crate) fn writes(profile: Profile, allow: bool) -> Self {
        ToolOptions {
            profile,
            policy: Policy {
                allow_write: allow,
                allow_exec: allow,
                approve_writes: false,
                scopes: None,
            },
            confirm: true,
            ..ToolOptions::default()
        }
    }
}

impl ToolSet {
    /// Builds every tool of `catalog` that `options.filter` lets through.
    ///
    /// Errors: a [`SchemaError`] when a schema is not a valid JSON Schema
    /// 2020-12 document (a bug, reported at startup).
    pub fn build(catalog: &Catalog, options: &ToolOptions) -> Result<Self, SchemaError> {
        let cmds: Vec<CommandIdx> = catalog.tools().map(|(i, _)| i).collect();
        let paths: Vec<Vec<String>> = cmds
            .iter()
            .map(|&i| catalog.commands[i].subpath().to_vec())
            .collect();
        let names = tool_names(&paths);
        let output_schema = output_schema();
        let shared_help = SharedHelp::of(catalog, SHARED_HELP_MIN_TOOLS);
        let compact = options.mode == ToolMode::Compact;
        let mut generated = Vec::with_capacity(cmds.len());
        let mut listed = Vec::with_capacity(cmds.len() + 2);
        let mut routes = HashMap::new();
        for (&cmd, name) in cmds.iter().zip(names) {
            let command = &catalog.commands[cmd];
            if !options.filter.allows(&name, &command_paths(catalog, cmd)) {
                continue;
            }
            let mut advertised = input_schema_with(catalog, cmd, options.profile, &shared_help);
            let mut full = if options.profile == Profile::Full {
                advertised.clone()
            } else {
                input_schema_with(catalog, cmd, Profile::Full, &shared_help)
            };
            if server_options::is_run(command) {
                add_server_options(&mut advertised);
                add_server_options(&mut full);
            }
            if server_options::creates_environment(command) {
                add_replace_existing(&mut advertised);
                add_replace_existing(&mut full);
            }
            if server_options::removes_environment(command) {
                add_remove_unmanaged(&mut advertised);
                add_remove_unmanaged(&mut full);
            }
            if confirms_by_dry_run(command, effects(catalog, cmd), options) {
                describe_confirmation(&mut advertised);
                describe_confirmation(&mut full);
            }
            check_schema_document(&name, &advertised)?;
            let validator = ArgumentValidator::new(&name, &full)?;
            let runnable = crate::policy::runnable(catalog, cmd, &options.policy);
            let mut description = description(command, effects(catalog, cmd), options);
            let siblings = describe::sibling_sentences(catalog, cmd, &cmds);
            if !siblings.is_empty() {
                // Right after the summary's first sentence, instead of the
                // rest of a summary the other command repeats.
                let summary = command.summary.trim();
                let full = describe::first_sentences(summary, describe::SUMMARY_CHARS);
                let first = describe::first_sentences(summary, 0);
                description = if !full.is_empty() && description.starts_with(&full) {
                    format!("{first} {siblings}{}", &description[full.len()..])
                } else {
                    format!("{description} {siblings}")
                };
            }
            let description = match runnable.sentence() {
                Some(first) => format!("{first} {description}"),
                None => description,
            };
            let tool = ToolSpec::new(
                name.clone(),
                description.clone(),
                Arc::new(as_object(advertised)),
            )
            .with_output_schema(output_schema.clone())
            .with_hints(describe::annotations(effects(catalog, cmd)))
            .with_meta(describe::meta(command, &name));
            if !compact {
                routes.insert(name.clone(), Route::Generated(generated.len()));
                listed.push(tool);
            }
            generated.push(GeneratedTool {
                name,
                cmd,
                validator,
                description,
                runnable,
            });
        }
        if compact {
            for (which, tool) in compact::tools(options.profile) {
                routes.insert(tool.name.to_string(), Route::Compact(which));
                listed.push(tool);
            }
        }
        let mut execute_validator = None;
        if options.policy.allow_exec && options.filter.allows(EXECUTE_TOOL, &[]) {
            let schema = execute::input_schema();
            execute_validator = Some(ArgumentValidator::new(
                EXECUTE_TOOL,
                &Value::Object(schema.as_ref().clone()),
            )?);
            listed.push(
                // Its hints are MCP's defaults (may write, destroy, repeat
                // with new effects, reach the network): listed without
                // `annotations`, like every hint equal to its default
                // (`describe::annotations`).
                ToolSpec::new(EXECUTE_TOOL, execute::DESCRIPTION, schema)
                    .with_title("conda (raw command line)")
                    .with_hints(ToolHints::default())
                    .with_output_schema(output_schema.clone())
                    .with_meta(describe::own_meta("conda command line", false)),
            );
            routes.insert(EXECUTE_TOOL.to_owned(), Route::Execute);
        }
        let cli_command = if routes.contains_key(CLI_COMMAND_TOOL)
            || !options.filter.allows(CLI_COMMAND_TOOL, &[])
        {
            None
        } else {
            let schema = crate::completion::input_schema();
            check_schema_document(CLI_COMMAND_TOOL, &schema)?;
            cli_command::CliCommandTool::for_catalog(catalog)?
        };
        if let Some(t) = &cli_command {
            listed.push(t.tool.clone());
            routes.insert(CLI_COMMAND_TOOL.to_owned(), Route::CliCommand);
        }
        if !routes.contains_key(INVENTORY_TOOL) && options.filter.allows(INVENTORY_TOOL, &[]) {
            listed.push(inventory::InventoryTool::new()?.tool);
            routes.insert(INVENTORY_TOOL.to_owned(), Route::Inventory);
        }
        if options.icons {
            for tool in &mut listed {
                tool.icon = true;
            }
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

    /// What follows "unknown " in the error of a `tools/call` for `name`,
    /// a tool this set does not serve: the served tool closest to it when
    /// one is close ([`closest::closest`]), and where the names are. The
    /// name asked for is never repeated (it may be long or hold markup).
    pub fn unknown_tool(&self, name: &str) -> String {
        let compact = [
            compact::COMMANDS_TOOL,
            compact::DESCRIBE_TOOL,
            compact::CALL_TOOL,
        ];
        if compact.contains(&name) {
            // A host that knew this server in --tool-mode compact.
            return "tool: conda_commands, conda_describe and conda_call are the tools of --tool-mode compact; this server serves one tool per conda command, which tools/list names".to_owned();
        }
        let mut served: Vec<&str> = self.routes.keys().map(String::as_str).collect();
        served.sort_unstable();
        match closest::closest(name, served) {
            Some(near) => {
                format!("tool; the closest is {near}; tools/list names this server's tools")
            }
            None => "tool; tools/list names this server's tools".to_owned(),
        }
    }

    /// Whether the tool routed to `route` has a top-level property `name`
    /// of its own (the input schema of a generated tool or of
    /// `conda_execute`); the server's other tools (`conda_cli_command`,
    /// `conda_inventory`, the compact ones) have fixed properties, none a host adds
    /// (`crate::call::plan::host_args`).
    pub fn accepts(&self, route: Route, name: &str) -> bool {
        match route {
            Route::Generated(i) => self
                .generated
                .get(i)
                .is_some_and(|t| t.validator.accepts(name)),
            Route::Execute => self
                .execute_validator
                .as_ref()
                .is_some_and(|v| v.accepts(name)),
            Route::CliCommand | Route::Inventory | Route::Compact(_) => false,
        }
    }

    /// Names of the generated tools, in catalog order.
    pub fn generated_names(&self) -> Vec<String> {
        self.generated.iter().map(|t| t.name.clone()).collect()
    }

    /// The generated tool of a command, given as a tool name
    /// (`conda_env_create`) or a command path (`env create`, aliases
    /// included), when this server serves it.
    pub fn find_command(&self, catalog: &Catalog, command: &str) -> Option<usize> {
        let command = command.split_whitespace().collect::<Vec<_>>().join(" ");
        self.generated
            .iter()
            .position(|t| t.name == command || command_paths(catalog, t.cmd).contains(&command))
    }
}

/// Every tool a catalog could give this server, whatever the policy, mode
/// and filter: what `--tools`/`--exclude-tools` entries are checked against.
pub fn universe(catalog: &Catalog) -> Vec<Candidate> {
    let cmds: Vec<CommandIdx> = catalog.tools().map(|(i, _)| i).collect();
    let paths: Vec<Vec<String>> = cmds
        .iter()
        .map(|&i| catalog.commands[i].subpath().to_vec())
        .collect();
    let mut out: Vec<Candidate> = cmds
        .iter()
        .zip(tool_names(&paths))
        .map(|(&cmd, name)| Candidate {
            name,
            paths: command_paths(catalog, cmd),
        })
        .collect();
    for name in [EXECUTE_TOOL, CLI_COMMAND_TOOL, INVENTORY_TOOL] {
        out.push(Candidate {
            name: name.to_owned(),
            paths: Vec::new(),
        });
    }
    out
}

/// A command's paths as filters and `conda_call` accept them: the
/// canonical one (`env create`) and one per alias of its last element
/// (`uninstall` for `remove`).
pub fn command_paths(catalog: &Catalog, cmd: CommandIdx) -> Vec<String> {
    let command = &catalog.commands[cmd];
    let sub = command.subpath();
    let mut out = vec![sub.join(" ")];
    if let Some((_, parent)) = sub.split_last() {
        for alias in &command.aliases {
            let mut p = parent.to_vec();
            p.push(alias.clone());
            out.push(p.join(" "));
        }
    }
    out
}

/// The description of a generated tool ([`describe::description`]), plus,
/// for a tool that may mutate, with `--approve-writes`,
/// [`server_options::APPROVE_SENTENCE`]. Confirmation by dry run is said
/// by the tool's `yes` property ([`describe_confirmation`]).
fn description(
    command: &crate::catalog::Command,
    effects: ToolEffects,
    options: &ToolOptions,
) -> String {
    let mut d = describe::description(command, effects);
    if !effects.read_only && options.policy.approve_writes {
        d.push(' ');
        d.push_str(server_options::APPROVE_SENTENCE);
    }
    d
}

/// Whether a call of the tool without `yes: true` runs as a dry run: it
/// may mutate, has conda's `yes` and `dry_run` options, confirmation is
/// on and `--approve-writes` is off (`crate::call::plan::typed`).
fn confirms_by_dry_run(
    command: &crate::catalog::Command,
    effects: ToolEffects,
    options: &ToolOptions,
) -> bool {
    !effects.read_only
        && !options.policy.approve_writes
        && options.confirm
        && server_options::confirm_properties(command).is_some()
}

/// Sets the description of the `yes` property to
/// [`server_options::CONFIRM_YES_DESCRIPTION`]: what `yes` does on this
/// server, where the tool's other arguments are.
pub(crate) fn describe_confirmation(schema: &mut Value) {
    if let Some(Value::Object(yes)) = schema.pointer_mut("/properties/yes") {
        yes.insert(
            "description".into(),
            Value::String(server_options::CONFIRM_YES_DESCRIPTION.to_owned()),
        );
    }
}

/// Adds `conda_run`'s server options ([`server_options::server_option_schemas`])
/// to its input schema, unless conda itself has a property of that name.
pub(crate) fn add_server_options(schema: &mut Value) {
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for (name, s) in server_options::server_option_schemas() {
            props.entry(name.to_owned()).or_insert(s);
        }
    }
}

/// Adds the server option `replace_existing`
/// ([`server_options::REPLACE_EXISTING`]) to the input schema of a tool
/// that creates an environment, unless conda has a property of that name.
pub(crate) fn add_replace_existing(schema: &mut Value) {
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props
            .entry(server_options::REPLACE_EXISTING.to_owned())
            .or_insert(serde_json::json!({
                "type": "boolean",
                "description": server_options::REPLACE_EXISTING_DESCRIPTION,
            }));
    }
}

/// Adds the server option `remove_unmanaged_files`
/// ([`server_options::REMOVE_UNMANAGED`]) to the input schema of a tool
/// that can remove a whole environment, unless conda has a property of
/// that name.
pub(crate) fn add_remove_unmanaged(schema: &mut Value) {
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        props
            .entry(server_options::REMOVE_UNMANAGED.to_owned())
            .or_insert(serde_json::json!({
                "type": "boolean",
                "description": server_options::REMOVE_UNMANAGED_DESCRIPTION,
            }));
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

/// The advertised output schema of every execution tool (generated tools,
/// `conda_execute`, `conda_call`): `{"type":"object"}`. The result has the
/// same fields for every tool, and a copy of its full schema in each of
/// 35+ tools was a quarter of `tools/list`; the fields are named in the
/// server instructions and the full schema (with descriptions) is in
/// `conda://capabilities` (`result_schema`). Results are still checked
/// against the full schema before they are sent (`crate::mcp::results`).
pub fn output_schema() -> Arc<JsonObject> {
    let mut m = JsonObject::new();
    m.insert("type".into(), Value::String("object".into()));
    Arc::new(m)
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

    fn real() -> Catalog {
        crate::catalog::build(&crate::dump::recorded_conda()).expect("catalog")
    }

    #[test]
    fn real_tool_set_builds_in_both_profiles_and_lists_execute_only_when_allowed() {
        let cat = real();
        for profile in [Profile::Portable, Profile::Full] {
            for allow_exec in [false, true] {
                let set = ToolSet::build(&cat, &ToolOptions::writes(profile, allow_exec))
                    .expect("builds");
                let listed: Vec<&str> = set.listed.iter().map(|t| t.name.as_ref()).collect();
                assert_eq!(listed.contains(&EXECUTE_TOOL), allow_exec);
                assert_eq!(set.route(EXECUTE_TOOL).is_some(), allow_exec);
                assert!(set.route("conda_list").is_some());
                assert!(
                    set.route("conda_activate").is_none(),
                    "shell-only commands are not tools"
                );
                // Its size on the wire: `mcp::listing`'s tests.
            }
        }
    }

    #[test]
    fn commands_that_share_a_summary_say_how_they_differ() {
        let cat = real();
        let set = ToolSet::build(&cat, &ToolOptions::default()).expect("builds");
        let d = |name: &str| {
            set.generated
                .iter()
                .find(|t| t.name == name)
                .map(|t| t.description.clone())
                .unwrap_or_else(|| panic!("{name}"))
        };
        let (export, env_export) = (d("conda_export"), d("conda_env_export"));
        assert_ne!(export, env_export);
        assert!(
            export.contains("Export a conda environment to a file. Same as conda env export."),
            "{export}"
        );
        assert!(
            env_export.contains("Export a conda environment to a file. Same as conda export."),
            "{env_export}"
        );
        for text in [&export, &env_export] {
            assert!(text.contains("Without file it prints to stdout."), "{text}");
        }
        // A command with a summary of its own gets no such sentence.
        assert!(!d("conda_list").contains("Same as"));
    }
}
