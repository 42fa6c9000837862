//! The `conda://capabilities` resource: what this server serves and why.
//!
//! Serialized ONCE at startup and served byte-identical for the life of the
//! process (tools are fixed at startup too). It holds facts about the
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
    /// What conda sees of the host.
    pub environment: EnvironmentSummary,
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
    /// How it is exposed (`tool`, `root`, `parent`, `shell_only`, `raw_only`).
    pub exposure: &'a Exposure,
    /// The generated tool's name, when it is one.
    pub tool: Option<String>,
}

/// Serializes the resource (pretty JSON).
pub fn render(
    catalog: &Catalog,
    target_executable: &std::path::Path,
    tools: &super::tools::ToolSet,
    policy: PolicySummary,
    profile: crate::schema::Profile,
    environment: EnvironmentSummary,
) -> String {
    let commands = catalog
        .commands
        .iter()
        .enumerate()
        .map(|(i, c)| CommandSummary {
            path: &c.path,
            aliases: &c.aliases,
            exposure: &c.exposure,
            tool: tools
                .generated
                .iter()
                .find(|t| t.cmd == i)
                .map(|t| t.name.clone()),
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
    };
    serde_json::to_string_pretty(&doc).unwrap_or_else(|_| "{}".into())
}
