//! The catalog: conda's command tree as the rest of the server sees it.
//!
//! Built once at startup from a [`crate::dump::Dump`] by [`build()`]; immutable
//! afterwards. Everything downstream reads it: tool generation
//! ([`crate::schema`], [`crate::mcp`]), the argv compiler
//! ([`crate::compile`]), the argparse resolver of raw argv
//! ([`crate::argparse`]) and the policy ([`crate::policy`]).
//!
//! Two views of a command live side by side:
//! * [`Command::arguments`]: every argparse action, 1:1 with the dump, in
//!   declaration order. The resolver parses raw argv against these exactly as
//!   argparse would.
//! * [`Command::properties`]: the tool surface, i.e. the input-schema
//!   properties. Hidden optionals are left out, and store_const actions that
//!   share a dest inside one exclusive group are merged into one enum
//!   property (docs/reference.md "Generated tools").

pub mod build;
pub mod environments;
pub mod help;

use serde::Serialize;

pub use build::{BuildError, build};
pub use environments::EnvironmentDirs;

/// Index of a command in [`Catalog::commands`].
pub type CommandIdx = usize;
/// Index of an argument in [`Command::arguments`].
pub type ArgIdx = usize;

/// The whole command tree of one conda installation.
#[derive(Debug, Clone, Serialize)]
pub struct Catalog {
    /// `conda.__version__` of the target.
    pub conda_version: String,
    /// The target's conda plugins (entry points), sorted.
    pub plugins: Vec<crate::dump::PluginRecord>,
    /// sha256 hex over the conda version and the sorted plugin records
    /// (what `restart_required` compares); see [`discovery_fingerprint`].
    pub fingerprint: String,
    /// Every parser of the tree, root first (index 0), parents before their
    /// children.
    pub commands: Vec<Command>,
    /// What could not be represented, per command.
    pub diagnostics: Vec<Diagnostic>,
    /// Where conda puts and finds named environments (root prefix, envs
    /// directories), for the guard of existing environments. Not
    /// serialized: the capabilities document names no environments.
    #[serde(skip)]
    pub environments: EnvironmentDirs,
}

/// sha256 hex over the conda version and the sorted plugin records: changes
/// exactly when conda is upgraded or a plugin comes, goes or changes version.
pub fn discovery_fingerprint(conda_version: &str, plugins: &[crate::dump::PluginRecord]) -> String {
    let mut sorted: Vec<_> = plugins.to_vec();
    sorted.sort();
    let mut text = format!("conda {conda_version}\n");
    for p in &sorted {
        text.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\n",
            p.group, p.distribution, p.version, p.name, p.value
        ));
    }
    conda_mcp_shared::fingerprint::sha256_hex(text.as_bytes())
}

/// How a command is exposed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Exposure {
    /// A terminal command that becomes a generated tool.
    Tool,
    /// The root parser (`conda`): never a tool; its options are not copied.
    Root,
    /// A parser with subcommands (`env`, `env config`): prints usage only.
    Parent,
    /// A shell-only command (`activate`, `deactivate`) that cannot work in a
    /// subprocess.
    ShellOnly,
    /// `conda mcp` (the subcommand of an MCP server plugin, this project's
    /// own `conda mcp` included): it starts an MCP server, and a server
    /// nested inside this one is never useful, so it is never a tool (the
    /// raw tool can still reach it).
    NestedServer {
        /// Why, for the capabilities resource.
        reason: String,
    },
    /// A terminal command with an action that cannot be represented; raw
    /// tool only. See [`Catalog::diagnostics`].
    RawOnly {
        /// Why, for the capabilities resource.
        reason: String,
    },
}

/// One parser of the tree.
#[derive(Debug, Clone, Serialize)]
pub struct Command {
    /// Canonical path including the root, e.g. `["conda", "env", "create"]`.
    pub path: Vec<String>,
    /// Aliases of the last path element (`["uninstall"]` for `remove`).
    pub aliases: Vec<String>,
    /// The parent command (`None` for the root).
    pub parent: Option<CommandIdx>,
    /// Direct subcommands, in argparse's order.
    pub children: Vec<CommandIdx>,
    /// First paragraph of the description (or the subcommand help), without
    /// examples: the tool description.
    pub summary: String,
    /// The full description as argparse holds it.
    pub description: Option<String>,
    /// Every action, 1:1 with the dump, declaration order.
    pub arguments: Vec<Argument>,
    /// Mutually exclusive groups over [`Command::arguments`].
    pub groups: Vec<ExclusiveGroup>,
    /// The tool surface (input-schema properties), in a stable order:
    /// positionals first in declared order, then optionals in declaration
    /// order.
    pub properties: Vec<Property>,
    /// Whether argv after the command (or part of it) is passed on to another
    /// program unparsed (greedy plugin parser, REMAINDER/PARSER positional).
    pub passthrough: Passthrough,
    /// Whether long options may be abbreviated (argparse `allow_abbrev`).
    pub allow_abbrev: bool,
    /// How the command is exposed.
    pub exposure: Exposure,
}

impl Command {
    /// `conda env create` style display path.
    pub fn display_path(&self) -> String {
        self.path.join(" ")
    }

    /// The path without the leading `conda` (`["env", "create"]`).
    pub fn subpath(&self) -> &[String] {
        self.path.get(1..).unwrap_or(&[])
    }

    /// Whether this command becomes a generated tool.
    pub fn is_tool(&self) -> bool {
        self.exposure == Exposure::Tool
    }
}

/// Passthrough of unparsed argv to another program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Passthrough {
    /// Every token is parsed by argparse.
    None,
    /// A greedy plugin parser: everything after the command is handed to the
    /// plugin unparsed (property `args`).
    Greedy,
    /// A REMAINDER (`...`) or PARSER (`A...`) positional takes the rest.
    Remainder {
        /// The positional's index in [`Command::arguments`].
        arg: ArgIdx,
    },
}

/// How argparse treats an action, decided by `argparse_base` (never by
/// conda's class names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ArgKind {
    /// `_StoreAction`, and custom actions deriving directly from `Action`
    /// (conda's LazyChoicesAction, ExtendConstAction): values consumed per
    /// nargs, the action decides what lands in the namespace.
    Store,
    /// `_StoreConstAction`: a flag storing `const`.
    StoreConst,
    /// `_StoreTrueAction`.
    StoreTrue,
    /// `_StoreFalseAction`.
    StoreFalse,
    /// `_AppendAction`: each occurrence appends its value(s).
    Append,
    /// `_AppendConstAction`: each occurrence appends `const`.
    AppendConst,
    /// `_ExtendAction`: each occurrence extends with its values.
    Extend,
    /// `_CountAction`: each occurrence adds one.
    Count,
    /// `BooleanOptionalAction`: `--x` / `--no-x`.
    BooleanOptional,
    /// `_HelpAction`: never exposed.
    Help,
    /// `_VersionAction`: never exposed.
    Version,
    /// `_SubParsersAction`: the subcommand choice.
    Subparsers,
}

/// `nargs` in argparse's terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Nargs {
    /// `None`: exactly one value (or none for flag kinds).
    Default,
    /// An exact count (`0` for flags, `2` for `--append KEY VALUE`).
    Exactly(u32),
    /// `?`: zero or one value.
    Optional,
    /// `*`: any number.
    ZeroOrMore,
    /// `+`: one or more.
    OneOrMore,
    /// `...` (argparse.REMAINDER): everything that follows.
    Remainder,
    /// `A...` (argparse.PARSER): a subcommand and everything that follows.
    Parser,
}

/// The JSON type of one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ValueType {
    /// Any string (no `type=`, or a conda string converter).
    String,
    /// `type=int`.
    Integer,
    /// `type=float`.
    Number,
}

/// One argparse action of a command.
#[derive(Debug, Clone, Serialize)]
pub struct Argument {
    /// `action.dest`.
    pub dest: String,
    /// Option strings; empty for a positional.
    pub option_strings: Vec<String>,
    /// Interpretation of `argparse_base`.
    pub kind: ArgKind,
    /// `action.nargs`.
    pub nargs: Nargs,
    /// JSON type of each value.
    pub value_type: ValueType,
    /// Choices as strings, when the action has usable ones.
    pub choices: Option<Vec<String>>,
    /// `action.required`.
    pub required: bool,
    /// `help == SUPPRESS`.
    pub hidden: bool,
    /// Help as argparse would print it (`%(default)s` and friends expanded);
    /// `None` when hidden or absent.
    pub help: Option<String>,
    /// `action.metavar` as a list (one element, or the tuple).
    pub metavar: Option<Vec<String>>,
    /// `action.const` (JSON, or its repr).
    pub const_value: serde_json::Value,
    /// `action.default` (JSON, or its repr).
    pub default: serde_json::Value,
    /// The action's class (`module.qualname`), for diagnostics only.
    pub class: String,
}

impl Argument {
    /// A plain action with argparse's defaults for everything but its
    /// identity: string values, no choices, not required, not hidden, no
    /// help or metavar, `const` and `default` null, no class. For catalogs
    /// built by hand (tests, synthetic commands); [`build()`] fills every
    /// field from the dump.
    pub fn new(dest: &str, option_strings: &[&str], kind: ArgKind, nargs: Nargs) -> Self {
        Argument {
            dest: dest.to_owned(),
            option_strings: option_strings.iter().map(|s| (*s).to_owned()).collect(),
            kind,
            nargs,
            value_type: ValueType::String,
            choices: None,
            required: false,
            hidden: false,
            help: None,
            metavar: None,
            const_value: serde_json::Value::Null,
            default: serde_json::Value::Null,
            class: String::new(),
        }
    }

    /// A positional has no option strings.
    pub fn is_positional(&self) -> bool {
        self.option_strings.is_empty()
    }

    /// The preferred option string for compiling: the first long one
    /// (`--x`), else the first.
    pub fn preferred_option(&self) -> Option<&str> {
        self.option_strings
            .iter()
            .find(|s| s.starts_with("--"))
            .or_else(|| self.option_strings.first())
            .map(String::as_str)
    }

    /// Whether a value of this option can be passed as ONE argv item
    /// joined to its long option string (`--name=-x`), which argparse reads
    /// back as that value whatever it starts with (CPython's
    /// `_parse_optional` splits the item at its first `=` and never reads
    /// the explicit argument as an option), any value but
    /// [`DROPPED_OPTION_VALUE`]: an option with a long option string that
    /// takes one value per occurrence (store and append with `nargs` None
    /// or `?`, extend with `nargs` None). The argv compiler
    /// (`crate::compile`) passes such a value so when it starts with `-`,
    /// and its schema (`crate::schema::input`) needs no anti-option
    /// pattern; the values of other arguments are separate argv items.
    pub fn joins_value(&self) -> bool {
        let one_value = match self.kind {
            ArgKind::Store | ArgKind::Append => {
                matches!(self.nargs, Nargs::Default | Nargs::Optional)
            }
            ArgKind::Extend => self.nargs == Nargs::Default,
            _ => false,
        };
        one_value
            && !self.is_positional()
            && self.preferred_option().is_some_and(|o| o.starts_with("--"))
    }
}

/// The one value argparse does not read back from `--opt=value`
/// ([`Argument::joins_value`]): `--` alone, which argparse (Python 3.11's
/// `_get_values`, the stand-in's Python among them) drops from an
/// option's values, so `--name=--` stores `[]` and a `nargs='?'` option its
/// `const`.
pub const DROPPED_OPTION_VALUE: &str = "--";

/// One mutually exclusive group.
#[derive(Debug, Clone, Serialize)]
pub struct ExclusiveGroup {
    /// Exactly one member is required.
    pub required: bool,
    /// Members, as indices into [`Command::arguments`].
    pub members: Vec<ArgIdx>,
}

/// One input-schema property of a tool.
#[derive(Debug, Clone, Serialize)]
pub struct Property {
    /// The JSON property name: the dest, or, where several exposed actions
    /// share a dest outside a merged group, a name derived from the long
    /// option (`strict_channel_priority`). Unique within the command.
    pub name: String,
    /// What the property compiles to.
    pub source: PropertySource,
    /// Whether the input schema lists it in `required`.
    pub required: bool,
    /// Description for the schema: the help text (plus how the value is
    /// spelled on the command line where that helps).
    pub description: String,
}

/// What a property compiles to.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum PropertySource {
    /// One action.
    Action {
        /// Index into [`Command::arguments`].
        arg: ArgIdx,
    },
    /// store_const actions sharing a dest inside one exclusive group: a string
    /// enum of their long option names without dashes (`update-all`), each
    /// compiled to its flag.
    FlagEnum {
        /// `(enum value, argument index)`, in declaration order.
        choices: Vec<(String, ArgIdx)>,
    },
    /// The argv of a greedy plugin parser (`args`): passed unchanged after
    /// the command.
    GreedyArgs,
}

/// Something the catalog could not represent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// The command's canonical path.
    pub command: Vec<String>,
    /// Why (human-readable).
    pub reason: String,
    /// The action class concerned, if any.
    pub action_class: Option<String>,
}

impl Catalog {
    /// The root parser.
    pub fn root(&self) -> &Command {
        &self.commands[0]
    }

    /// Looks up a command by its canonical path including the root
    /// (`["conda", "env", "list"]`).
    pub fn find(&self, path: &[&str]) -> Option<CommandIdx> {
        self.commands
            .iter()
            .position(|c| c.path.iter().map(String::as_str).eq(path.iter().copied()))
    }

    /// Every command that becomes a generated tool, in tree order.
    pub fn tools(&self) -> impl Iterator<Item = (CommandIdx, &Command)> {
        self.commands
            .iter()
            .enumerate()
            .filter(|(_, c)| c.is_tool())
    }

    /// The direct child of `parent` named `name` or aliased `name`.
    pub fn child(&self, parent: CommandIdx, name: &str) -> Option<CommandIdx> {
        self.commands[parent].children.iter().copied().find(|&i| {
            let c = &self.commands[i];
            c.path.last().is_some_and(|n| n == name) || c.aliases.iter().any(|a| a == name)
        })
    }
}
