//! The `conda://capabilities` resource: what this server serves and why.
//!
//! Serialized ONCE per tool set and served byte-identical until the tools
//! change: for the life of the process by default (the tools are fixed at
//! startup), and with `--live-tools` again from each new discovery when
//! conda or its plugins change. It holds facts about the
//! installation and the catalog, never credentials, request headers or
//! environment variable values (the names of the variables conda gets are
//! listed).

use serde::Serialize;

use crate::catalog::{Catalog, Diagnostic, Exposure};
use crate::dump::PluginRecord;

/// URI of the resource.
pub const URI: &str = "conda://capabilities";
/// Its MIME type.
pub const MIME_TYPE: &str = "application/json";

/// The resource document.
#[derive(Debug, Serialize)]
pub struct Capabilities<'a> {
    /// `conda-mcp`.
    pub server: &'static str,
    /// The server's version.
    pub server_version: &'static str,
    /// The canonical path of the conda executable served.
    pub target_executable: String,
    /// `conda.__version__`.
    pub conda_version: &'a str,
    /// Every command of the catalog and how it is exposed.
    pub catalog: CatalogSummary<'a>,
    /// Names of the generated tools.
    pub generated_tools: Vec<String>,
    /// The target's conda plugins (entry points).
    pub plugins: &'a [PluginRecord],
    /// sha256 over the conda version and the plugin records.
    pub discovery_fingerprint: &'a str,
    /// The startup policy.
    pub policy: PolicySummary,
    /// `portable` or `full`.
    pub schema_profile: &'static str,
    /// `typed` or `compact` (`--tool-mode`).
    pub tool_mode: &'static str,
    /// The full JSON Schema of the result every execution tool returns
    /// (`structuredContent`), with field descriptions: `tools/list`
    /// advertises only `{"type":"object"}` for it.
    pub result_schema: serde_json::Value,
    /// What conda sees of the host.
    pub environment: EnvironmentSummary,
    /// The help of the options many tools share, by property name: left
    /// out of those tools' input schemas, stated here once (and in the
    /// server's instructions as far as they fit).
    pub shared_options: std::collections::BTreeMap<&'a str, &'a str>,
}

/// The environment and working directory conda gets: names only, never
/// values.
#[derive(Debug, Clone, Serialize)]
pub struct EnvironmentSummary {
    /// conda's working directory (unless a raw call names one).
    pub working_directory: &'static str,
    /// The `--pass-env` patterns added to the built-in allowlist.
    pub pass_env: Vec<String>,
    /// Names of the variables conda gets, sorted; `null` with a listening
    /// worker (`--worker-socket`), whose own environment and `--pass-env`
    /// decide.
    pub passed: Option<Vec<String>>,
}

/// The startup policy, as flags.
#[derive(Debug, Serialize)]
pub struct PolicySummary {
    /// `--allow-write`.
    pub allow_write: bool,
    /// `--allow-exec`.
    pub allow_exec: bool,
    /// `--approve-writes`.
    pub approve_writes: bool,
    /// How mutations are treated: `refused`, `allow_write` or
    /// `approve_writes` (each change asked of the person through the host;
    /// docs/approval.md).
    pub writes: crate::policy::WritesMode,
}

impl PolicySummary {
    /// The summary of the startup policy.
    pub fn of(policy: &crate::policy::Policy) -> Self {
        PolicySummary {
            allow_write: policy.allow_write,
            allow_exec: policy.allow_exec,
            approve_writes: policy.approve_writes,
            writes: policy.writes_mode(),
        }
    }
}

/// The catalog as the resource shows it.
#[derive(Debug, Serialize)]
pub struct CatalogSummary<'a> {
    /// Commands in tree order.
    pub commands: Vec<CommandSummary<'a>>,
    /// What could not be represented.
    pub diagnostics: &'a [Diagnostic],
}

/// One command.
#[derive(Debug, Serialize)]
pub struct CommandSummary<'a> {
    /// Canonical path including `conda`.
    pub path: &'a [String],
    /// Aliases of the last element.
    pub aliases: &'a [String],
    /// How it is exposed (`tool`, `root`, `parent`, `shell_only`,
    /// `nested_server`, `raw_only`).
    pub exposure: &'a Exposure,
    /// The generated tool's name, when this server serves it.
    pub tool: Option<String>,
    /// For a command that is a tool: `read_only`, `mutation` or `exec`, its
    /// broadest behaviour.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<&'static str>,
    /// For a served tool: what the startup policy lets its calls do
    /// (`runs`: `always`, `read_only_calls`, `dry_run_only` or `never`, with
    /// the startup options the rest `needs`), the same fact its description
    /// begins with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runnable: Option<crate::policy::Runnable>,
    /// True for a tool left out by `--tools`/`--exclude-tools`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub filtered_out: bool,
}

/// How the tools are served: the startup policy, the schema profile
/// (`--schema-profile`) and the tool mode (`--tool-mode`).
#[derive(Debug)]
pub struct ServedAs {
    /// The startup policy's summary.
    pub policy: PolicySummary,
    /// `--schema-profile`.
    pub profile: crate::schema::Profile,
    /// `--tool-mode`.
    pub mode: crate::tools::ToolMode,
}

/// Serializes the resource (pretty JSON).
pub fn render(
    catalog: &Catalog,
    target_executable: &std::path::Path,
    tools: &crate::tools::ToolSet,
    served: ServedAs,
    environment: EnvironmentSummary,
) -> String {
    let ServedAs {
        policy,
        profile,
        mode,
    } = served;
    let commands = catalog
        .commands
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let served = tools.generated.iter().find(|t| t.cmd == i);
            CommandSummary {
                path: &c.path,
                aliases: &c.aliases,
                exposure: &c.exposure,
                tool: served.map(|t| t.name.clone()),
                policy: c.is_tool().then(|| crate::policy::policy_class(catalog, i)),
                runnable: served.map(|t| t.runnable.clone()),
                filtered_out: c.is_tool() && served.is_none(),
            }
        })
        .collect();
    let doc = Capabilities {
        server: "conda-mcp",
        server_version: env!("CARGO_PKG_VERSION"),
        target_executable: target_executable.display().to_string(),
        conda_version: &catalog.conda_version,
        catalog: CatalogSummary {
            commands,
            diagnostics: &catalog.diagnostics,
        },
        generated_tools: tools.generated_names(),
        plugins: &catalog.plugins,
        discovery_fingerprint: &catalog.fingerprint,
        policy,
        schema_profile: match profile {
            crate::schema::Profile::Portable => "portable",
            crate::schema::Profile::Full => "full",
        },
        environment,
        shared_options: tools
            .shared_help
            .entries
            .iter()
            .map(|(n, h)| (n.as_str(), h.as_str()))
            .collect(),
        tool_mode: match mode {
            crate::tools::ToolMode::Typed => "typed",
            crate::tools::ToolMode::Compact => "compact",
        },
        result_schema: serde_json::Value::Object(
            super::results::full_output_schema().as_ref().clone(),
        ),
    };
    serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".into())
}
