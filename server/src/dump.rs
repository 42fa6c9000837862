//! The dump format `conda-parser-dump/1`: a serde mirror of what the
//! discovery helper (`discovery/helper.py`) prints.
//!
//! These types only carry facts; all interpretation (what is a tool, how an
//! action maps to a schema) happens in [`crate::catalog`]. Unknown fields are
//! ignored so that a newer helper or a recording with extra notes still
//! loads.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The format tag every dump carries.
pub const DUMP_FORMAT: &str = "conda-parser-dump/1";

/// One whole dump.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dump {
    /// Always [`DUMP_FORMAT`].
    pub format: String,
    /// `conda.__version__`.
    pub conda_version: String,
    /// `platform.python_version()` of the target's interpreter.
    #[serde(default)]
    pub python_version: String,
    /// `platform.python_implementation()`.
    #[serde(default)]
    pub python_implementation: String,
    /// `sys.platform`.
    #[serde(default)]
    pub sys_platform: String,
    /// Entry points of the `conda` group (conda's plugins).
    #[serde(default)]
    pub plugins: Vec<PluginRecord>,
    /// The root parser (`conda`).
    pub root: DumpParser,
    /// `sys.executable` (added by the helper; absent from recordings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interpreter: Option<String>,
    /// `sys.prefix` (added by the helper).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// Folders whose listing changes when packages change (site-packages,
    /// the prefix's `conda-meta`); added by the helper, used by the startup
    /// cache stamp.
    #[serde(default)]
    pub stamp_dirs: Vec<String>,
    /// `context.root_prefix` (added by the helper; absent from recordings
    /// and older caches): where `--name base` points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root_prefix: Option<String>,
    /// `context.envs_dirs` (added by the helper): the folders conda looks
    /// a `--name` up in, in order (see [`crate::target`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envs_dirs: Option<Vec<String>>,
    /// conda's configuration as its own objects hold it (added by the
    /// helper; `None` in recordings and when conda's configuration module
    /// could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<ConfigFacts>,
    /// Problems the helper met but survived (lazy choices that raised, ...).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// The plugins conda's plugin manager failed to load (it warns and
    /// skips each); added by the helper, empty in recordings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub plugin_failures: Vec<PluginFailure>,
}

/// One entry point of group `conda` that conda's plugin manager could not
/// import: conda skips it and prints
/// `Error while loading conda entry point: NAME (ERROR)` on every call
/// (`CondaPluginManager.load_entrypoints`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PluginFailure {
    /// The entry point's name (empty when conda's record did not say).
    #[serde(default)]
    pub entry_point: String,
    /// The distribution that declares it (empty when unknown).
    #[serde(default)]
    pub distribution: String,
    /// The exception's class (`ModuleNotFoundError`; empty when unknown).
    #[serde(default)]
    pub error_type: String,
    /// The exception's text, credentials masked by the helper.
    #[serde(default)]
    pub message: String,
}

impl PluginFailure {
    /// One line for the startup log and `check`: which plugin, what
    /// failed, credentials masked again ([`conda_mcp_shared::mask`]).
    pub fn warning(&self) -> String {
        let mut who = if self.entry_point.is_empty() {
            "a conda plugin".to_string()
        } else {
            format!("conda plugin `{}`", self.entry_point)
        };
        if !self.distribution.is_empty() {
            who.push_str(&format!(" (distribution {})", self.distribution));
        }
        let what = if self.error_type.is_empty() {
            self.message.clone()
        } else {
            format!("{}: {}", self.error_type, self.message)
        };
        let line = format!(
            "{who} failed to load: {what}; conda skips it and prints a warning on every call"
        );
        conda_mcp_shared::mask::mask_text(&line).0.into_owned()
    }
}

/// What the helper read of conda's configuration
/// (`conda.common.configuration`, `conda.base.context`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigFacts {
    /// Every place conda's search path looks (`SEARCH_PATH`, its variables
    /// expanded as conda expands them), existing or not: files, and
    /// `condarc.d` folders whose `*.yml`/`*.yaml` files conda reads.
    #[serde(default)]
    pub search_path: Vec<String>,
    /// The files conda loaded (`context._search_path`).
    #[serde(default)]
    pub files: Vec<String>,
    /// Every key a source marks final.
    #[serde(default)]
    pub final_keys: Vec<FinalKey>,
    /// `context.channels` as conda resolved it from its configuration,
    /// credentials masked by the helper as [`conda_mcp_shared::mask`]
    /// masks them (`user:***@`, `/t/<TOKEN>/`); `None` when it did not say
    /// (an older cache, a conda that raised).
    #[serde(default)]
    pub channels: Option<Vec<String>>,
}

/// One key whose value a source marks final (`#!final` in a file,
/// `!important` in a `CONDA_*` variable): conda's merge lets no later
/// source override it, the command line included.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinalKey {
    /// The parameter name (`dry_run`).
    pub key: String,
    /// The source: a file path, or `envvars`.
    pub source: String,
    /// The value when it is a flag or a number (`false`, `"no"`, `0`);
    /// `null` for anything else (never text that may carry credentials).
    #[serde(default)]
    pub value: serde_json::Value,
}

/// One entry point of the `conda` group.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct PluginRecord {
    /// Entry-point group (always `conda`).
    pub group: String,
    /// Distribution that declares it (`conda-completion`).
    pub distribution: String,
    /// That distribution's version.
    pub version: String,
    /// Entry-point name.
    pub name: String,
    /// Entry-point value (`module:attr`).
    pub value: String,
}

/// One argparse parser.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DumpParser {
    /// Canonical command path, starting with `conda`.
    pub path: Vec<String>,
    /// `parser.prog`.
    #[serde(default)]
    pub prog: String,
    /// `parser.description`.
    #[serde(default)]
    pub description: Option<String>,
    /// `parser.epilog`.
    #[serde(default)]
    pub epilog: Option<String>,
    /// True for conda's greedy plugin subparsers (their argv is passed on
    /// unparsed).
    #[serde(default)]
    pub greedy: bool,
    /// `parser.allow_abbrev` (argparse's default is true; conda's parsers
    /// keep it). Absent from the recording: then true.
    #[serde(default = "default_true")]
    pub allow_abbrev: bool,
    /// `parser.prefix_chars` (default `-`).
    #[serde(default = "default_prefix_chars")]
    pub prefix_chars: String,
    /// Every action of the parser, in declaration order (positionals and
    /// optionals mixed, as argparse keeps them).
    #[serde(default)]
    pub actions: Vec<DumpAction>,
    /// argparse's mutually exclusive groups.
    #[serde(default)]
    pub mutually_exclusive_groups: Vec<DumpGroup>,
    /// Subcommands, in the order argparse lists them.
    #[serde(default)]
    pub subcommands: Vec<DumpSubcommand>,
}

fn default_true() -> bool {
    true
}

fn default_prefix_chars() -> String {
    "-".to_owned()
}

/// One argparse action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DumpAction {
    /// `module.qualname` of the action's class.
    pub class: String,
    /// First argparse class in the MRO (`_StoreAction`, `Action`, ...);
    /// interpretation goes by this, never by `class`.
    pub argparse_base: String,
    /// Option strings; empty for positionals.
    #[serde(default)]
    pub option_strings: Vec<String>,
    /// `action.dest`.
    pub dest: String,
    /// `action.nargs`.
    #[serde(default)]
    pub nargs: Option<DumpNargs>,
    /// `action.const` (JSON, or a repr string).
    #[serde(default, rename = "const")]
    pub const_value: Value,
    /// `action.default` (JSON, or a repr string; `==SUPPRESS==` for
    /// argparse.SUPPRESS).
    #[serde(default)]
    pub default: Value,
    /// Name of `action.type` when it is callable (`int`, `float`, ...).
    #[serde(default, rename = "type")]
    pub type_name: Option<String>,
    /// `null`, a list of choices, or `{"error": str}` when lazy choices
    /// raised.
    #[serde(default)]
    pub choices: Option<Value>,
    /// `action.required`.
    #[serde(default)]
    pub required: bool,
    /// `action.help`: null, text, or `==SUPPRESS==`.
    #[serde(default)]
    pub help: Option<String>,
    /// `action.metavar`: null, a string, or a list (tuple metavar).
    #[serde(default)]
    pub metavar: Option<Value>,
    /// Title of the argument group the action was added to.
    #[serde(default)]
    pub argument_group: Option<String>,
}

/// `action.nargs` as dumped: an integer or one of argparse's symbols.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DumpNargs {
    /// An exact count (0 for flags).
    Count(u32),
    /// `?`, `*`, `+`, `...` (REMAINDER) or `A...` (PARSER).
    Symbol(String),
}

/// One mutually exclusive group. Members are matched to actions by their
/// option strings (several members may share a dest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DumpGroup {
    /// argparse's `required` for the group: exactly one member must be given.
    #[serde(default)]
    pub required: bool,
    /// Dest of each member, in order.
    #[serde(default)]
    pub dests: Vec<String>,
    /// Option strings of each member, in order (empty for a positional
    /// member).
    #[serde(default)]
    pub option_strings: Vec<Vec<String>>,
}

/// One subcommand of a parser.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DumpSubcommand {
    /// Canonical name.
    pub name: String,
    /// Aliases (`uninstall` for `remove`).
    #[serde(default)]
    pub aliases: Vec<String>,
    /// The `help=` given to `add_parser`.
    #[serde(default)]
    pub help: Option<String>,
    /// The subcommand's parser.
    pub parser: DumpParser,
}

/// Errors of loading a dump.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    /// Not JSON, or not of this shape; the message names the JSON path.
    #[error("the discovery dump is not a valid {DUMP_FORMAT} document: {0}")]
    Invalid(String),
    /// The `format` field names another format.
    #[error("the discovery dump has format {found:?}, expected {DUMP_FORMAT:?}")]
    WrongFormat {
        /// The format found.
        found: String,
    },
}

impl Dump {
    /// Parses and checks a dump document.
    ///
    /// Errors: [`DumpError::Invalid`] for malformed JSON or shape,
    /// [`DumpError::WrongFormat`] for another `format` tag.
    pub fn from_json(bytes: &[u8]) -> Result<Self, DumpError> {
        let dump: Dump =
            serde_json::from_slice(bytes).map_err(|e| DumpError::Invalid(e.to_string()))?;
        if dump.format != DUMP_FORMAT {
            return Err(DumpError::WrongFormat { found: dump.format });
        }
        Ok(dump)
    }
}

/// The recorded conda 26 parser the unit tests run on: the project's own
/// recording `tests/fixtures/dumps/conda-26.json`, or the file named by
/// `CONDA_MCP_REAL_DUMP` (to run the same tests on another recording).
/// Panics when it cannot be read: these tests never skip.
#[cfg(test)]
pub(crate) fn recorded_conda() -> Dump {
    let path = match std::env::var_os("CONDA_MCP_REAL_DUMP") {
        Some(p) => std::path::PathBuf::from(p),
        None => std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/dumps/conda-26.json"),
    };
    let bytes = std::fs::read(&path)
        .unwrap_or_else(|e| panic!("the recorded conda dump {}: {e}", path.display()));
    Dump::from_json(&bytes).expect("the recorded conda dump loads")
}
