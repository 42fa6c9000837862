//! Dump → catalog: the one place where argparse facts become tool rules.
//!
//! The discovery helper only reports what argparse holds; every decision is
//! made here, so it can be tested on recorded dumps (the helper reports facts,
//! Rust decides: ARCHITECTURE.md "Invariants"). The rules, and where they
//! come from:
//!
//! * **Action kinds** go by `argparse_base`, the first argparse class in the
//!   action's MRO, never by conda's class names. A custom action whose base
//!   is plain `argparse.Action` (conda's `LazyChoicesAction`,
//!   `ExtendConstAction`) is treated as [`ArgKind::Store`](super::ArgKind::Store): argparse consumes
//!   its values by `nargs` exactly as for `_StoreAction`, and what the action
//!   then does with them (validate lazy choices, extend a list) does not
//!   change the argv we compile. Such an action with `nargs=0` is a flag of
//!   unknown effect and makes its command raw-only.
//! * **Exposure** (docs/reference.md "Generated tools"): the root parser is
//!   [`Exposure::Root`] (never a tool; its options are not copied into
//!   tools); a parser with subcommands is [`Exposure::Parent`]; `activate`
//!   and `deactivate` directly under the root are [`Exposure::ShellOnly`];
//!   `mcp` directly under the root is [`Exposure::NestedServer`] (an MCP
//!   server plugin's subcommand, see [`NESTED_SERVER`]);
//!   every other parser is a [`Exposure::Tool`], unless one of its actions
//!   cannot be represented, which makes only that command
//!   [`Exposure::RawOnly`] with a [`Diagnostic`].
//! * **Properties**: help, version and subparsers actions never become
//!   properties; hidden (`SUPPRESS`) optionals are left out; hidden
//!   positionals are kept (conda hides `search`'s only positional).
//!   `store_const` actions sharing a dest inside one mutually exclusive
//!   group are merged into one [`PropertySource::FlagEnum`](super::PropertySource::FlagEnum) whose values are
//!   the long option names without dashes (`update-all`). A property is
//!   named after its dest; when several exposed properties would share a
//!   name, each of them is named after its first long option instead
//!   (`--strict-channel-priority` → `strict_channel_priority`), with a
//!   numeric suffix as a last resort.
//! * **Passthrough**: a greedy plugin parser (conda's
//!   `_GreedySubParsersAction` hands every token it does not know to the
//!   plugin) gets [`Passthrough::Greedy`] and a property `args`
//!   ([`PropertySource::GreedyArgs`](super::PropertySource::GreedyArgs)); a positional with `nargs` REMAINDER
//!   (`...`) or PARSER (`A...`) gets [`Passthrough::Remainder`] and keeps
//!   its dest as property name. Preview plugin subcommands need nothing
//!   special: conda builds them with the built-in's parser or the plugin's
//!   `configure_parser` and never marks them greedy
//!   (`conda/cli/conda_argparse.py`, `configure_parser_plugins`), so they
//!   are ordinary parsers in the dump.
//! * **Values**: `type=int` → integer, `type=float` → number, anything else
//!   (conda's string converters) → string; choices are kept as strings
//!   (ints included); lazy choices that raised (`{"error": ...}`) leave the
//!   argument without choices and add a diagnostic (the command stays a
//!   tool: argparse itself validates the value when conda runs).
//!
//! Where each rule lives, under `build/`: `actions.rs` (action kinds,
//! values), `groups.rs` (exclusive groups), `passthrough.rs`,
//! `properties.rs`; exposure is decided here, in the walk over the parser
//! tree.

mod actions;
mod groups;
mod passthrough;
mod properties;

use super::help;
use super::{
    Argument, Catalog, Command, CommandIdx, Diagnostic, Exposure, Nargs, Passthrough,
    discovery_fingerprint,
};
use crate::dump::{Dump, DumpParser};
use actions::convert_action;
pub use actions::kind_of;
use groups::resolve_groups;
use passthrough::passthrough_positional;
use properties::build_properties;

/// Errors that make a dump unusable as a whole (a single unrepresentable
/// action never is one: it makes its command raw-only).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The root parser is not `conda`, or the tree is malformed.
    #[error("the discovery dump has no usable root parser: {0}")]
    NoRoot(String),
}

/// Commands directly under the root that only work inside a shell function
/// (conda's shell wrappers implement them); they are not tools.
pub const SHELL_ONLY: &[&str] = &["activate", "deactivate"];

/// The subcommand under the root that MCP server plugins register (this
/// project's `conda mcp`, python/conda_mcp/plugin.py, and other conda MCP
/// servers' alike): it starts a server on stdio, never a useful tool.
pub const NESTED_SERVER: &str = "mcp";

/// Why [`NESTED_SERVER`] is not a tool, as `conda://capabilities` says it.
pub const NESTED_SERVER_REASON: &str = "`conda mcp` starts an MCP server; a server nested \
     inside this one is never useful, so it is not offered as a tool";

/// The property name of a greedy plugin parser's passthrough argv.
pub const GREEDY_ARGS_PROPERTY: &str = "args";

/// Builds the catalog from a dump.
///
/// Commands are listed root first, each parent before its children
/// (depth-first, argparse's subcommand order). Problems with single actions
/// become [`Diagnostic`]s (and, where the action cannot be represented, a
/// raw-only command), never an error.
///
/// Errors: [`BuildError::NoRoot`] when the root parser's path is not
/// `["conda"]`.
pub fn build(dump: &Dump) -> Result<Catalog, BuildError> {
    if dump.root.path != ["conda"] {
        return Err(BuildError::NoRoot(format!(
            "the root parser's path is {:?}, expected [\"conda\"]",
            dump.root.path
        )));
    }
    let mut plugins = dump.plugins.clone();
    plugins.sort();
    let mut builder = Builder {
        commands: Vec::new(),
        diagnostics: Vec::new(),
    };
    builder.add(&dump.root, vec!["conda".to_owned()], Vec::new(), None, None);
    Ok(Catalog {
        fingerprint: discovery_fingerprint(&dump.conda_version, &plugins),
        conda_version: dump.conda_version.clone(),
        plugins,
        commands: builder.commands,
        diagnostics: builder.diagnostics,
        environments: super::EnvironmentDirs::from_dump(dump),
    })
}

struct Builder {
    commands: Vec<Command>,
    diagnostics: Vec<Diagnostic>,
}

/// What one command's analysis found that keeps it from being a tool.
struct RawReason {
    reason: String,
    action_class: Option<String>,
}

impl Builder {
    fn add(
        &mut self,
        parser: &DumpParser,
        path: Vec<String>,
        aliases: Vec<String>,
        parent: Option<CommandIdx>,
        sub_help: Option<&str>,
    ) -> CommandIdx {
        let idx = self.commands.len();
        let is_root = parent.is_none();
        let mut raw: Vec<RawReason> = Vec::new();
        let mut notes: Vec<RawReason> = Vec::new();

        let arguments: Vec<Argument> = parser
            .actions
            .iter()
            .map(|a| convert_action(a, &parser.prog, &mut raw, &mut notes))
            .collect();
        let groups = resolve_groups(parser, &arguments, &mut raw);

        let is_parent = !parser.subcommands.is_empty();
        let shell_only = path.len() == 2 && SHELL_ONLY.contains(&path[1].as_str());
        let nested_server = path.len() == 2 && path[1] == NESTED_SERVER && !is_parent;

        let passthrough = if parser.greedy {
            Passthrough::Greedy
        } else {
            passthrough_positional(&arguments, &mut raw)
        };
        if parser.greedy
            && let Some(a) = arguments
                .iter()
                .find(|a| matches!(a.nargs, Nargs::Remainder | Nargs::Parser) && a.is_positional())
        {
            raw.push(RawReason {
                reason: format!(
                    "greedy plugin parser also has the REMAINDER positional {:?}",
                    a.dest
                ),
                action_class: Some(a.class.clone()),
            });
        }

        let properties = if is_root || is_parent || shell_only || nested_server {
            Vec::new()
        } else {
            build_properties(&arguments, &groups, parser.greedy, &mut raw)
        };

        let exposure = if is_root {
            Exposure::Root
        } else if is_parent {
            Exposure::Parent
        } else if shell_only {
            Exposure::ShellOnly
        } else if nested_server {
            Exposure::NestedServer {
                reason: NESTED_SERVER_REASON.to_owned(),
            }
        } else if raw.is_empty() {
            Exposure::Tool
        } else {
            Exposure::RawOnly {
                reason: raw
                    .iter()
                    .map(|r| r.reason.as_str())
                    .collect::<Vec<_>>()
                    .join("; "),
            }
        };
        // Reasons only matter for commands that would otherwise be tools;
        // on the root, parents and shell-only commands they are still worth
        // reporting (the raw tool's resolver uses these arguments).
        for r in raw.into_iter().chain(notes) {
            self.diagnostics.push(Diagnostic {
                command: path.clone(),
                reason: r.reason,
                action_class: r.action_class,
            });
        }

        let description = parser
            .description
            .as_deref()
            .map(|d| help::expand_text(d, &parser.prog));
        let summary = help::summary(parser.description.as_deref(), sub_help, &parser.prog);

        self.commands.push(Command {
            path: path.clone(),
            aliases,
            parent,
            children: Vec::new(),
            summary,
            description,
            arguments,
            groups,
            properties,
            passthrough,
            allow_abbrev: parser.allow_abbrev,
            exposure,
        });

        for sub in &parser.subcommands {
            let mut child_path = path.clone();
            child_path.push(sub.name.clone());
            let child = self.add(
                &sub.parser,
                child_path,
                sub.aliases.clone(),
                Some(idx),
                sub.help.as_deref(),
            );
            self.commands[idx].children.push(child);
        }
        idx
    }
}

#[cfg(test)]
mod tests;
