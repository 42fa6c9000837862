//! Dump → catalog: the one place where argparse facts become tool rules.
//!
//! The discovery helper only reports what argparse holds; every decision is
//! made here, so it can be tested on recorded dumps (DESIGN.md "Discovery",
//! step 4). The rules, and where they come from:
//!
//! * **Action kinds** go by `argparse_base`, the first argparse class in the
//!   action's MRO, never by conda's class names. A custom action whose base
//!   is plain `argparse.Action` (conda's `LazyChoicesAction`,
//!   `ExtendConstAction`) is treated as [`ArgKind::Store`]: argparse consumes
//!   its values by `nargs` exactly as for `_StoreAction`, and what the action
//!   then does with them (validate lazy choices, extend a list) does not
//!   change the argv we compile. Such an action with `nargs=0` is a flag of
//!   unknown effect and makes its command raw-only.
//! * **Exposure** (DESIGN.md "Catalog → tools"): the root parser is
//!   [`Exposure::Root`] (never a tool; its options are not copied into
//!   tools); a parser with subcommands is [`Exposure::Parent`]; `activate`
//!   and `deactivate` directly under the root are [`Exposure::ShellOnly`];
//!   every other parser is a [`Exposure::Tool`], unless one of its actions
//!   cannot be represented, which makes only that command
//!   [`Exposure::RawOnly`] with a [`Diagnostic`].
//! * **Properties**: help, version and subparsers actions never become
//!   properties; hidden (`SUPPRESS`) optionals are left out; hidden
//!   positionals are kept (conda hides `search`'s only positional).
//!   `store_const` actions sharing a dest inside one mutually exclusive
//!   group are merged into one [`PropertySource::FlagEnum`] whose values are
//!   the long option names without dashes (`update-all`). A property is
//!   named after its dest; when several exposed properties would share a
//!   name, each of them is named after its first long option instead
//!   (`--strict-channel-priority` → `strict_channel_priority`), with a
//!   numeric suffix as a last resort.
//! * **Passthrough**: a greedy plugin parser (conda's
//!   `_GreedySubParsersAction` hands every token it does not know to the
//!   plugin) gets [`Passthrough::Greedy`] and a property `args`
//!   ([`PropertySource::GreedyArgs`]); a positional with `nargs` REMAINDER
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

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use super::help::{self, HelpParams, SUPPRESS};
use super::{
    ArgIdx, ArgKind, Argument, Catalog, Command, CommandIdx, Diagnostic, ExclusiveGroup, Exposure,
    Nargs, Passthrough, Property, PropertySource, ValueType, discovery_fingerprint,
};
use crate::dump::{Dump, DumpAction, DumpNargs, DumpParser};

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

        let properties = if is_root || is_parent || shell_only {
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

/// Maps `argparse_base` to an [`ArgKind`]; `None` for a base we do not know.
pub fn kind_of(argparse_base: &str) -> Option<ArgKind> {
    Some(match argparse_base {
        "_StoreAction" | "Action" => ArgKind::Store,
        "_StoreConstAction" => ArgKind::StoreConst,
        "_StoreTrueAction" => ArgKind::StoreTrue,
        "_StoreFalseAction" => ArgKind::StoreFalse,
        "_AppendAction" => ArgKind::Append,
        "_AppendConstAction" => ArgKind::AppendConst,
        "_ExtendAction" => ArgKind::Extend,
        "_CountAction" => ArgKind::Count,
        "BooleanOptionalAction" => ArgKind::BooleanOptional,
        "_HelpAction" => ArgKind::Help,
        "_VersionAction" => ArgKind::Version,
        "_SubParsersAction" => ArgKind::Subparsers,
        _ => return None,
    })
}

fn convert_nargs(nargs: &Option<DumpNargs>) -> Option<Nargs> {
    Some(match nargs {
        None => Nargs::Default,
        Some(DumpNargs::Count(n)) => Nargs::Exactly(*n),
        Some(DumpNargs::Symbol(s)) => match s.as_str() {
            "?" => Nargs::Optional,
            "*" => Nargs::ZeroOrMore,
            "+" => Nargs::OneOrMore,
            "..." => Nargs::Remainder,
            "A..." => Nargs::Parser,
            _ => return None,
        },
    })
}

fn value_type_of(type_name: Option<&str>) -> ValueType {
    match type_name {
        Some("int") => ValueType::Integer,
        Some("float") => ValueType::Number,
        _ => ValueType::String,
    }
}

/// A choice as the string the command line carries (`1` for the int 1).
fn choice_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => help::py_str(other),
    }
}

fn convert_action(
    a: &DumpAction,
    prog: &str,
    raw: &mut Vec<RawReason>,
    notes: &mut Vec<RawReason>,
) -> Argument {
    let hidden = a.help.as_deref() == Some(SUPPRESS);
    let kind = match kind_of(&a.argparse_base) {
        Some(k) => k,
        None => {
            raw.push(RawReason {
                reason: format!(
                    "action {:?} has the unsupported argparse base {:?}",
                    display_action(a),
                    a.argparse_base
                ),
                action_class: Some(a.class.clone()),
            });
            ArgKind::Store
        }
    };
    let nargs = match convert_nargs(&a.nargs) {
        Some(n) => n,
        None => {
            raw.push(RawReason {
                reason: format!(
                    "action {:?} has the unsupported nargs {:?}",
                    display_action(a),
                    a.nargs
                ),
                action_class: Some(a.class.clone()),
            });
            Nargs::Default
        }
    };
    if kind == ArgKind::Store && a.argparse_base == "Action" && nargs == Nargs::Exactly(0) {
        raw.push(RawReason {
            reason: format!(
                "custom action {:?} takes no value and its effect is unknown",
                display_action(a)
            ),
            action_class: Some(a.class.clone()),
        });
    }
    if !a.option_strings.is_empty()
        && matches!(nargs, Nargs::Remainder | Nargs::Parser)
        && kind != ArgKind::Subparsers
    {
        raw.push(RawReason {
            reason: format!(
                "optional {:?} takes the rest of the command line (nargs REMAINDER)",
                display_action(a)
            ),
            action_class: Some(a.class.clone()),
        });
    }

    let (choices, choice_list): (Option<Vec<String>>, Option<&[Value]>) = match &a.choices {
        None | Some(Value::Null) => (None, None),
        Some(Value::Array(items)) => (Some(items.iter().map(choice_string).collect()), Some(items)),
        Some(Value::Object(map)) => {
            let err = map
                .get("error")
                .map(help::py_str)
                .unwrap_or_else(|| "choices are an object without \"error\"".to_owned());
            notes.push(RawReason {
                reason: format!(
                    "choices of {:?} could not be evaluated ({err}); accepted without an enum",
                    display_action(a)
                ),
                action_class: Some(a.class.clone()),
            });
            (None, None)
        }
        Some(other) => {
            notes.push(RawReason {
                reason: format!(
                    "choices of {:?} are not a list ({}); accepted without an enum",
                    display_action(a),
                    help::py_str(other)
                ),
                action_class: Some(a.class.clone()),
            });
            (None, None)
        }
    };

    let metavar = match &a.metavar {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => Some(items.iter().map(help::py_str).collect()),
        Some(other) => Some(vec![help::py_str(other)]),
    };
    let null = Value::Null;
    let nargs_json = match &a.nargs {
        None => Value::Null,
        Some(DumpNargs::Count(n)) => Value::from(*n),
        Some(DumpNargs::Symbol(s)) => Value::String(s.clone()),
    };
    let params = HelpParams {
        prog,
        dest: &a.dest,
        option_strings: &a.option_strings,
        nargs: nargs_json,
        const_value: &a.const_value,
        default: &a.default,
        type_name: a.type_name.as_deref(),
        choices: choice_list,
        required: a.required,
        metavar: a.metavar.as_ref().unwrap_or(&null),
    };
    Argument {
        dest: a.dest.clone(),
        option_strings: a.option_strings.clone(),
        kind,
        nargs,
        value_type: value_type_of(a.type_name.as_deref()),
        choices,
        required: a.required,
        hidden,
        help: help::expand_help(a.help.as_deref(), &params),
        metavar,
        const_value: a.const_value.clone(),
        default: a.default.clone(),
        class: a.class.clone(),
    }
}

fn display_action(a: &DumpAction) -> String {
    if a.option_strings.is_empty() {
        a.dest.clone()
    } else {
        a.option_strings.join("/")
    }
}

/// Resolves the dump's exclusive groups to argument indices. Members are
/// matched by their option strings (several members may share a dest), a
/// positional member by its dest.
fn resolve_groups(
    parser: &DumpParser,
    arguments: &[Argument],
    raw: &mut Vec<RawReason>,
) -> Vec<ExclusiveGroup> {
    let mut groups = Vec::new();
    for g in &parser.mutually_exclusive_groups {
        let mut members = Vec::new();
        let count = g.dests.len().max(g.option_strings.len());
        for i in 0..count {
            let opts = g.option_strings.get(i).filter(|o| !o.is_empty());
            let dest = g.dests.get(i);
            let found = match opts {
                Some(opts) => arguments.iter().position(|a| &a.option_strings == opts),
                None => dest.and_then(|d| {
                    arguments
                        .iter()
                        .position(|a| a.is_positional() && &a.dest == d)
                }),
            };
            match found {
                Some(idx) if !members.contains(&idx) => members.push(idx),
                Some(_) => {}
                None => raw.push(RawReason {
                    reason: format!(
                        "an exclusive-group member ({}) matches no action",
                        opts.map(|o| o.join("/"))
                            .or_else(|| dest.cloned())
                            .unwrap_or_default()
                    ),
                    action_class: None,
                }),
            }
        }
        groups.push(ExclusiveGroup {
            required: g.required,
            members,
        });
    }
    groups
}

/// Finds the REMAINDER/PARSER positional of a non-greedy parser.
fn passthrough_positional(arguments: &[Argument], raw: &mut Vec<RawReason>) -> Passthrough {
    let rest: Vec<ArgIdx> = arguments
        .iter()
        .enumerate()
        .filter(|(_, a)| {
            a.is_positional()
                && a.kind != ArgKind::Subparsers
                && matches!(a.nargs, Nargs::Remainder | Nargs::Parser)
        })
        .map(|(i, _)| i)
        .collect();
    match rest.as_slice() {
        [] => Passthrough::None,
        [one] => Passthrough::Remainder { arg: *one },
        [first, ..] => {
            raw.push(RawReason {
                reason: format!(
                    "{} positionals take the rest of the command line (REMAINDER)",
                    rest.len()
                ),
                action_class: Some(arguments[*first].class.clone()),
            });
            Passthrough::Remainder { arg: *first }
        }
    }
}

/// Whether an argument can ever be a property (help, version and the
/// subcommand choice never are; hidden optionals are left out).
fn exposable(a: &Argument) -> bool {
    let never = matches!(
        a.kind,
        ArgKind::Help | ArgKind::Version | ArgKind::Subparsers
    );
    !never && (!a.hidden || a.is_positional())
}

/// A name derived from the first long option (`--strict-channel-priority`
/// → `strict_channel_priority`), else the first option string, else dest.
fn option_name(a: &Argument) -> String {
    let opt = a
        .option_strings
        .iter()
        .find(|s| s.starts_with("--"))
        .or_else(|| a.option_strings.first());
    match opt {
        Some(o) => o.trim_start_matches(['-', '+']).replace('-', "_"),
        None => a.dest.clone(),
    }
}

/// The enum value of a merged store_const member: its first long option
/// without dashes (`update-all` for `--update-all/--all`).
fn flag_value(a: &Argument) -> String {
    let opt = a
        .option_strings
        .iter()
        .find(|s| s.starts_with("--"))
        .or_else(|| a.option_strings.first());
    opt.map(|o| o.trim_start_matches(['-', '+']).to_owned())
        .unwrap_or_else(|| a.dest.clone())
}

/// The action's help as argparse prints it; empty without one (the schema
/// layer then describes a positional by its usage and the command's
/// summary, and leaves an option undescribed rather than repeating its
/// name).
fn describe_action(a: &Argument) -> String {
    a.help.clone().unwrap_or_default()
}

struct Pending {
    /// Declaration index used to order the properties.
    order: ArgIdx,
    positional: bool,
    /// Preferred name (dest) and the fallback derived from the option.
    dest: String,
    derived: String,
    source: PropertySource,
    required: bool,
    description: String,
}

fn build_properties(
    arguments: &[Argument],
    groups: &[ExclusiveGroup],
    greedy: bool,
    raw: &mut Vec<RawReason>,
) -> Vec<Property> {
    // store_const members sharing a dest inside one exclusive group.
    let mut merged: HashMap<ArgIdx, usize> = HashMap::new();
    let mut pending: Vec<Pending> = Vec::new();
    for group in groups {
        let mut by_dest: BTreeMap<&str, Vec<ArgIdx>> = BTreeMap::new();
        for &m in &group.members {
            let a = &arguments[m];
            if a.kind == ArgKind::StoreConst && !a.is_positional() {
                by_dest.entry(a.dest.as_str()).or_default().push(m);
            }
        }
        for (dest, members) in by_dest {
            if members.len() < 2 {
                continue;
            }
            let visible: Vec<ArgIdx> = members
                .iter()
                .copied()
                .filter(|&m| !arguments[m].hidden)
                .collect();
            for &m in &members {
                merged.insert(m, pending.len());
            }
            if visible.is_empty() {
                continue;
            }
            let choices: Vec<(String, ArgIdx)> = visible
                .iter()
                .map(|&m| (flag_value(&arguments[m]), m))
                .collect();
            let description = format!(
                "Exactly one of: {}.",
                choices
                    .iter()
                    .map(|(v, m)| {
                        let a = &arguments[*m];
                        let spelled = a.option_strings.join("/");
                        match &a.help {
                            Some(h) => format!("`{v}` ({spelled}): {h}"),
                            None => format!("`{v}` ({spelled})"),
                        }
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            );
            pending.push(Pending {
                order: members[0],
                positional: false,
                dest: dest.to_owned(),
                derived: dest.to_owned(),
                source: PropertySource::FlagEnum { choices },
                // Required only when this property is the whole group.
                required: group.required && members.len() == group.members.len(),
                description,
            });
        }
    }

    for (i, a) in arguments.iter().enumerate() {
        if merged.contains_key(&i) || !exposable(a) {
            continue;
        }
        let required = a.required
            && !matches!(
                a.nargs,
                Nargs::Optional | Nargs::ZeroOrMore | Nargs::Remainder
            );
        pending.push(Pending {
            order: i,
            positional: a.is_positional(),
            dest: a.dest.clone(),
            derived: option_name(a),
            source: PropertySource::Action { arg: i },
            required,
            description: describe_action(a),
        });
    }

    if greedy {
        if arguments
            .iter()
            .any(|a| exposable(a) && a.dest == GREEDY_ARGS_PROPERTY)
        {
            raw.push(RawReason {
                reason: format!(
                    "greedy plugin parser has its own argument named {GREEDY_ARGS_PROPERTY:?}"
                ),
                action_class: None,
            });
        }
        pending.push(Pending {
            order: usize::MAX,
            positional: false,
            dest: GREEDY_ARGS_PROPERTY.to_owned(),
            derived: GREEDY_ARGS_PROPERTY.to_owned(),
            source: PropertySource::GreedyArgs,
            required: false,
            description: "Arguments passed unchanged to the plugin command, in order.".to_owned(),
        });
    }

    // Positionals first (declared order), then optionals (declared order).
    pending.sort_by_key(|p| (!p.positional, p.order));

    // Names: dest, or the derived name where a dest is shared.
    let mut dest_count: HashMap<&str, usize> = HashMap::new();
    for p in &pending {
        *dest_count.entry(p.dest.as_str()).or_default() += 1;
    }
    let first_names: Vec<String> = pending
        .iter()
        .map(|p| {
            if dest_count[p.dest.as_str()] > 1 {
                p.derived.clone()
            } else {
                p.dest.clone()
            }
        })
        .collect();
    let mut taken: HashMap<String, usize> = HashMap::new();
    let mut props = Vec::with_capacity(pending.len());
    for (p, name) in pending.into_iter().zip(first_names) {
        let mut unique = name.clone();
        let mut n = 1;
        while taken.contains_key(&unique) {
            n += 1;
            unique = format!("{name}_{n}");
        }
        taken.insert(unique.clone(), 1);
        props.push(Property {
            name: unique,
            source: p.source,
            required: p.required,
            description: p.description,
        });
    }
    props
}

#[cfg(test)]
mod tests;
