//! Input schema of a generated tool, from [`Command::properties`] and the
//! [`Argument`]s behind them, mapped by argparse action kind:
//!
//! | argparse (`argparse_base`) | schema |
//! | --- | --- |
//! | store, nargs None | scalar (`string` / `integer` / `number`; `enum` from choices) |
//! | store, `?` | scalar; for an option `""` gives the bare option (which stores `const`) |
//! | store, `*` `+` N | array (`minItems` 1 for `+`, exactly N for N); for an option `[]` with `*` gives the bare option |
//! | append | array of occurrences (each a scalar, or an array for nargs N/`+`/`*`) |
//! | extend | flat array |
//! | store_true / store_const | boolean (flag when true) |
//! | store_false | boolean (flag when false) |
//! | BooleanOptionalAction | boolean (`--x` / `--no-x`) |
//! | count / append_const | integer ≥ 0 (flag repeated) |
//! | REMAINDER / PARSER positional, greedy plugin parser | array of strings, passed unchanged |
//!
//! Strings that land in argv as separate items (positionals, the values of
//! options that take several: `nargs` `*`, `+`, N) must not start with `-`
//! (pattern `^[^-]`), or argparse would read them as options; numeric
//! positionals get `minimum: 0` for the same reason. An option that takes
//! one value per occurrence gets its value joined to its long option string
//! when the value starts with `-` (`--name=-x`,
//! [`Argument::joins_value`]), which argparse never reads as an
//! option: its string needs no pattern. What argparse cannot read back even
//! so (`--` alone, [`crate::catalog::DROPPED_OPTION_VALUE`]) and the empty value
//! are refused by the full schema (`not`, `minLength`), which the server
//! validates every call against; the portable schema leaves them out, like
//! the group constraints. The compiler ([`crate::compile`]) enforces the
//! same rules again.

use serde_json::{Map, Value, json};

use super::Profile;
use crate::catalog::{
    ArgKind, Argument, Catalog, Command, CommandIdx, Nargs, Passthrough, Property, PropertySource,
    ValueType,
};

/// Pattern of every free string that becomes a separate argv item (a
/// positional, or one of several values of an option).
pub const NO_LEADING_DASH: &str = "^[^-]";
/// Pattern of a `nargs='?'` value that is not joined to its option
/// ([`Argument::joins_value`]: a short-only option): empty (the bare
/// option) or a value that does not start with `-`.
pub const BARE_OR_NO_LEADING_DASH: &str = "^$|^[^-]";

/// The input schema of command `cmd` in `profile`:
/// `{"type":"object","properties":…,"required":…,"additionalProperties":false}`,
/// plus (full profile only) an `allOf` with the group constraints.
pub fn input_schema(catalog: &Catalog, cmd: CommandIdx, profile: Profile) -> Value {
    input_schema_with(catalog, cmd, profile, &SharedHelp::default())
}

/// Longest help text kept in a property description when its first
/// sentence has a clause end within it ([`short_help_within`]):
/// `tools/list` of a real conda must stay small (see docs/benchmarks.md for
/// the size targets).
pub const HELP_CHARS: usize = 48;

/// Longest help text kept for a positional or one of the
/// [`CORE_PROPERTIES`]: the arguments a model reaches for first get their
/// whole first sentence where it is not too long.
pub const CORE_HELP_CHARS: usize = 120;

/// The arguments most calls use: described with a longer text
/// ([`CORE_HELP_CHARS`], [`CORE_TEXTS`]) in every always-loaded tool that
/// has them (`crate::policy::commands`: the tools every host shows the
/// model up front, Claude Code before its tool search), never only in the
/// server instructions, which several hosts do not show the model. Those
/// of [`EVERY_SCHEMA_PROPERTIES`] are described in every schema; the
/// others, whose names say what they are (`name`, `prefix`, `json`,
/// `dry_run`), are shared help ([`SharedHelp`]) in the other tools.
pub const CORE_PROPERTIES: &[&str] = &["packages", "name", "prefix", "json", "yes", "dry_run"];

/// The [`CORE_PROPERTIES`] described in every schema that has them: what
/// the server gives them (`yes` applies a change that otherwise runs as a
/// dry run) or their syntax (MatchSpec) is not in their names.
pub const EVERY_SCHEMA_PROPERTIES: &[&str] = &["packages", "yes"];

/// Whether `command`'s tool is always loaded (`crate::policy::commands`).
fn always_loaded(command: &Command) -> bool {
    crate::policy::commands::holds(command.subpath(), |c| c.always_loaded)
}

/// The help part of a property's description as a schema gives it, before
/// the final period: the server's text of a core property
/// ([`CORE_TEXTS`]), else the first sentence of conda's help, shortened to
/// [`CORE_HELP_CHARS`] for a core property or a positional, to
/// [`HELP_CHARS`] otherwise.
fn property_help(command: &Command, prop: &Property) -> String {
    let core = CORE_PROPERTIES.contains(&prop.name.as_str()) || is_positional(command, prop);
    if let Some(text) = core_text(command, prop) {
        text.trim_end_matches('.').to_owned()
    } else if core {
        short_help_within(&command_help(command, prop), CORE_HELP_CHARS)
    } else {
        short_help(&command_help(command, prop))
    }
}

/// A property's description as a schema states it in place: its help
/// ([`property_help`]) as a sentence, then the usage hint ([`usage_hint`]:
/// how `false`, `""` or `[]` maps to argv), when there is one.
fn property_description(command: &Command, prop: &Property) -> String {
    let help = property_help(command, prop);
    let mut desc = if help.is_empty() || help.ends_with(['!', '?']) {
        help
    } else {
        format!("{help}.")
    };
    if let Some(hint) = usage_hint(command, prop) {
        push_sentence(&mut desc, &hint);
    }
    desc
}

/// What [`SharedHelp`] holds for a property: its whole description
/// ([`property_description`], usage hint included: a store_false
/// property's help describes its flag, `false`) without the final period.
fn shared_text(command: &Command, prop: &Property) -> String {
    property_description(command, prop)
        .trim_end_matches('.')
        .to_owned()
}

/// Whether a property's help is stated in place whatever [`SharedHelp`]
/// holds: positionals, [`EVERY_SCHEMA_PROPERTIES`], and the
/// [`CORE_PROPERTIES`] of an always-loaded tool.
fn described_in_place(command: &Command, prop: &Property) -> bool {
    is_positional(command, prop)
        || EVERY_SCHEMA_PROPERTIES.contains(&prop.name.as_str())
        || (CORE_PROPERTIES.contains(&prop.name.as_str()) && always_loaded(command))
}

/// Short descriptions of [`CORE_PROPERTIES`] where conda's help is long
/// and means the same in every command: `(name, argparse kind, text)`. A
/// property of that name with another kind (`clean`'s boolean `packages`)
/// keeps conda's help.
const CORE_TEXTS: &[(&str, CoreKind, &str)] = &[
    ("name", CoreKind::Value, "Environment name."),
    ("prefix", CoreKind::Value, "Full path of the environment."),
    (
        "packages",
        CoreKind::Value,
        "Package specs (MatchSpec), e.g. numpy or \"numpy>=1.26\".",
    ),
    ("yes", CoreKind::Flag, "Apply the change."),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CoreKind {
    /// A store/append/extend action: takes values.
    Value,
    /// A store_true flag.
    Flag,
}

/// The server's short text for a core property, when one applies.
fn core_text(command: &Command, prop: &Property) -> Option<&'static str> {
    let PropertySource::Action { arg } = &prop.source else {
        return None;
    };
    let kind = match command.arguments[*arg].kind {
        ArgKind::Store | ArgKind::Append | ArgKind::Extend => CoreKind::Value,
        ArgKind::StoreTrue => CoreKind::Flag,
        _ => return None,
    };
    CORE_TEXTS
        .iter()
        .find(|(n, k, _)| *n == prop.name && *k == kind)
        .map(|(_, _, t)| *t)
}

/// Property descriptions shared by many tools (`verbosity`, `channel`,
/// `ssl_verify` with its usage hint, ...): left out of each schema and
/// stated once in the server's instructions instead. One text per property name, so a name has one meaning there; a
/// tool whose property of that name means something else describes it in
/// place. Positionals and [`EVERY_SCHEMA_PROPERTIES`] are never shared;
/// the other [`CORE_PROPERTIES`] are, except in the always-loaded tools
/// ([`described_in_place`]).
#[derive(Debug, Clone, Default)]
pub struct SharedHelp {
    /// `(property name, description without its final period)` pairs left
    /// out of the schemas, at most one per name.
    pub entries: std::collections::BTreeSet<(String, String)>,
}

impl SharedHelp {
    /// For each property name, its most frequent short help, when at least
    /// `min_tools` tools of the catalog share it (ties: the first text in
    /// sort order).
    pub fn of(catalog: &Catalog, min_tools: usize) -> Self {
        let mut counts: std::collections::BTreeMap<(String, String), usize> = Default::default();
        for (_, c) in catalog.tools() {
            for p in &c.properties {
                if is_positional(c, p) || EVERY_SCHEMA_PROPERTIES.contains(&p.name.as_str()) {
                    continue;
                }
                *counts
                    .entry((p.name.clone(), shared_text(c, p)))
                    .or_default() += 1;
            }
        }
        let mut best: std::collections::BTreeMap<String, (usize, String)> = Default::default();
        for ((name, help), n) in counts {
            if n < min_tools || help.is_empty() {
                continue;
            }
            let slot = best.entry(name).or_insert((0, String::new()));
            if n > slot.0 {
                *slot = (n, help);
            }
        }
        Self {
            entries: best
                .into_iter()
                .map(|(name, (_, help))| (name, help))
                .collect(),
        }
    }

    /// One line per entry, `name: help`, for the server instructions.
    pub fn describe(&self) -> String {
        self.entries
            .iter()
            .map(|(n, h)| format!("{n}: {h}"))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Whether a property is an argparse positional.
fn is_positional(command: &Command, prop: &Property) -> bool {
    matches!(&prop.source, PropertySource::Action { arg } if command.arguments[*arg].is_positional())
}

/// The help part of a property's description: the catalog's text, except
/// for merged flag groups, whose values are the flags' names, and for a
/// positional without help (conda hides `search`'s `match_spec`), which is
/// described by the command's usage and summary.
fn command_help(command: &Command, prop: &Property) -> String {
    match &prop.source {
        PropertySource::FlagEnum { choices } => {
            let flags: Vec<String> = choices
                .iter()
                .filter_map(|(_, a)| command.arguments[*a].preferred_option().map(str::to_owned))
                .collect();
            format!("Passes the flag of that name ({})", flags.join(", "))
        }
        PropertySource::Action { arg }
            if prop.description.is_empty() && command.arguments[*arg].is_positional() =>
        {
            positional_help(command, &command.arguments[*arg])
        }
        _ => prop.description.clone(),
    }
}

/// `` `conda search [match_spec]`: Search for packages … `` — the usage of a
/// positional (argparse's metavar, else its dest, bracketed as argparse
/// prints an optional one) and the first sentence of the command's summary.
fn positional_help(command: &Command, a: &Argument) -> String {
    let meta = a
        .metavar
        .as_ref()
        .and_then(|m| m.first().cloned())
        .unwrap_or_else(|| a.dest.clone());
    let usage = match a.nargs {
        Nargs::Optional => format!("[{meta}]"),
        Nargs::ZeroOrMore => format!("[{meta} ...]"),
        Nargs::OneOrMore => format!("{meta} [{meta} ...]"),
        _ => meta,
    };
    let summary = crate::catalog::help::sentences(&command.summary)
        .into_iter()
        .next()
        .unwrap_or_default();
    if summary.is_empty() {
        format!("`{} {usage}`", command.display_path())
    } else {
        format!("`{} {usage}`: {summary}", command.display_path())
    }
}

/// The first sentence of `text` ([`crate::catalog::help::sentences`]:
/// abbreviations such as `i.e.` and parentheses end none), without its
/// final period, shortened to at most [`HELP_CHARS`] characters at a
/// clause end ([`clause_ends`]), never inside a phrase.
pub fn short_help(text: &str) -> String {
    short_help_within(text, HELP_CHARS)
}

/// Shortest clause [`short_help_within`] keeps when a longer one would do
/// (a clause end this close to the start is an introduction, not a clause).
pub const MIN_CLAUSE_CHARS: usize = 12;

/// [`short_help`] with a limit of `max` characters: the whole first
/// sentence when it fits; else its longest leading clause that fits (at
/// least [`MIN_CLAUSE_CHARS`]); else its first clause, or the whole
/// sentence when it has no clause end, whatever their length. So a text is
/// never cut inside a phrase or a parenthesis: it may exceed `max` instead
/// (docs/benchmarks.md gives what that costs in `tools/list`).
pub fn short_help_within(text: &str, max: usize) -> String {
    let first = crate::catalog::help::sentences(text)
        .into_iter()
        .next()
        .unwrap_or_default();
    let first = first.trim_end_matches('.');
    if first.chars().count() <= max {
        return first.to_owned();
    }
    let ends = clause_ends(first);
    let fits = ends.iter().rev().copied().find(|&i| {
        let n = first[..i].chars().count();
        (MIN_CLAUSE_CHARS..=max).contains(&n)
    });
    match fits.or_else(|| ends.first().copied()) {
        Some(i) => first[..i].trim_end().to_owned(),
        None => first.to_owned(),
    }
}

/// Words after `, ` that open an aside rather than carry the clause on:
/// the text before the comma is a whole clause without them.
pub const ASIDES: &[&str] = &[
    "e.g.",
    "i.e.",
    "even ",
    "but ",
    "such as ",
    "including ",
    "except ",
    "otherwise ",
];

/// Words that open an introductory or subordinate clause: a clause that
/// starts with one does not end at its first `, ` ("If set, ...").
pub const INTRODUCTIONS: &[&str] = &[
    "if ", "when ", "where ", "unless ", "while ", "with ", "used ", "given ", "in ", "for ",
    "only ", "after ", "before ", "once ",
];

/// Where a clause of `sentence` ends, as byte offsets `i` such that
/// `sentence[..i]` is a whole clause, in ascending order: before a
/// parenthetical or bracketed aside (` (`, ` [`), at `; `, ` - ` or ` — `,
/// and at `, ` before an aside ([`ASIDES`]) unless the sentence opens with
/// an introduction ([`INTRODUCTIONS`]). Only outside parentheses, brackets
/// and backquotes, so a clause never ends inside `(one of 1, 2, 4, 8)`.
pub fn clause_ends(sentence: &str) -> Vec<usize> {
    let lower = sentence.to_ascii_lowercase();
    let introduced = INTRODUCTIONS.iter().any(|w| lower.starts_with(w));
    let mut out = Vec::new();
    let mut depth: i32 = 0;
    let mut code = false;
    for (i, ch) in sentence.char_indices() {
        let rest = &sentence[i..];
        match ch {
            '`' => code = !code,
            '(' | '[' => {
                if depth == 0 && !code && sentence[..i].ends_with(' ') {
                    out.push(i - 1);
                }
                depth += 1;
            }
            ')' | ']' => depth = (depth - 1).max(0),
            _ if depth > 0 || code => {}
            ';' if rest.starts_with("; ") => out.push(i),
            ' ' if rest.starts_with(" - ") || rest.starts_with(" — ") => out.push(i),
            ',' if !introduced
                && rest.starts_with(", ")
                && ASIDES.iter().any(|w| lower[i + 2..].starts_with(w)) =>
            {
                out.push(i);
            }
            _ => {}
        }
    }
    out.retain(|&i| i > 0);
    out.dedup();
    out
}

/// [`input_schema`] leaving out the help texts in `shared`.
pub fn input_schema_with(
    catalog: &Catalog,
    cmd: CommandIdx,
    profile: Profile,
    shared: &SharedHelp,
) -> Value {
    let command = &catalog.commands[cmd];
    let groups = group_members(command);
    let mut props = Map::new();
    let mut required = Vec::new();
    for prop in &command.properties {
        let mut schema = property_schema(command, prop, profile);
        let shared_here = !described_in_place(command, prop)
            && shared
                .entries
                .contains(&(prop.name.clone(), shared_text(command, prop)));
        let desc = if shared_here {
            String::new()
        } else {
            property_description(command, prop)
        };
        if !desc.is_empty() {
            schema.insert("description".into(), Value::String(desc));
        }
        props.insert(prop.name.clone(), Value::Object(schema));
        if prop.required {
            required.push(Value::String(prop.name.clone()));
        }
    }
    let mut root = Map::new();
    root.insert("type".into(), json!("object"));
    root.insert("properties".into(), Value::Object(props));
    if !required.is_empty() {
        root.insert("required".into(), Value::Array(required));
    }
    root.insert("additionalProperties".into(), json!(false));
    if profile == Profile::Full {
        let all_of = group_constraints(command, &groups);
        if !all_of.is_empty() {
            root.insert("allOf".into(), Value::Array(all_of));
        }
    }
    Value::Object(root)
}

/// A short note on how a value maps to argv where JSON alone cannot say it
/// (store_false, the bare form of `?`/`*` options). A
/// BooleanOptionalAction needs none: `false` passes its `--no-` form, as
/// the server instructions say once.
fn usage_hint(command: &Command, prop: &Property) -> Option<String> {
    let PropertySource::Action { arg } = &prop.source else {
        return None;
    };
    let a = &command.arguments[*arg];
    let flag = a.preferred_option()?;
    match (a.kind, a.nargs) {
        (ArgKind::StoreFalse, _) => Some(format!("false passes {flag}.")),
        (ArgKind::Store | ArgKind::Append, Nargs::Optional) if bare_allowed(a) => {
            Some(format!("\"\" passes bare {flag}."))
        }
        (ArgKind::Store, Nargs::ZeroOrMore) => Some(format!("[] passes bare {flag}.")),
        _ => None,
    }
}

/// The exclusive and required groups of a command in words, for the tool
/// description ("At most one of: name, prefix."): the portable profile
/// cannot state them as constraints.
pub fn group_sentences(command: &Command) -> Vec<String> {
    let mut out = Vec::new();
    for g in group_members(command) {
        let names: Vec<&str> = g
            .props
            .iter()
            .map(|&pi| command.properties[pi].name.as_str())
            .collect();
        if g.required && !names.is_empty() {
            out.push(format!("Exactly one of: {}.", names.join(", ")));
        } else if names.len() > 1 {
            out.push(format!("At most one of: {}.", names.join(", ")));
        }
    }
    out
}

fn push_sentence(desc: &mut String, s: &str) {
    if !desc.is_empty() {
        desc.push(' ');
    }
    desc.push_str(s);
}

/// One exclusive group, as property indices (a group whose members all merge
/// into one enum property has a single member here and needs no constraint).
#[derive(Debug)]
struct PropGroup {
    required: bool,
    props: Vec<usize>,
}

fn group_members(command: &Command) -> Vec<PropGroup> {
    command
        .groups
        .iter()
        .map(|g| {
            let mut props: Vec<usize> = Vec::new();
            for &arg in &g.members {
                if let Some(pi) = property_of_arg(command, arg)
                    && !props.contains(&pi)
                {
                    props.push(pi);
                }
            }
            PropGroup {
                required: g.required,
                props,
            }
        })
        .collect()
}

/// The property that compiles to argument `arg`, if any (hidden optionals
/// have none).
pub fn property_of_arg(command: &Command, arg: usize) -> Option<usize> {
    command.properties.iter().position(|p| match &p.source {
        PropertySource::Action { arg: a } => *a == arg,
        PropertySource::FlagEnum { choices } => choices.iter().any(|(_, a)| *a == arg),
        PropertySource::GreedyArgs => false,
    })
}

/// The subschema a property's value satisfies exactly when it compiles to
/// something in argv (store_true `true`, a count ≥ 1, a non-empty append
/// list, ...). Group constraints use it so that an explicit `false` or `0`
/// never counts as "given".
pub fn active_subschema(command: &Command, prop: &Property) -> Value {
    let PropertySource::Action { arg } = &prop.source else {
        return json!(true);
    };
    let a = &command.arguments[*arg];
    match a.kind {
        ArgKind::StoreTrue | ArgKind::StoreConst => json!({"const": true}),
        ArgKind::StoreFalse => json!({"const": false}),
        ArgKind::Store if a.nargs == Nargs::Exactly(0) => json!({"const": true}),
        ArgKind::Count | ArgKind::AppendConst => json!({"minimum": 1}),
        ArgKind::Append | ArgKind::Extend => json!({"minItems": 1}),
        ArgKind::Store if a.is_positional() && a.nargs == Nargs::ZeroOrMore => {
            json!({"minItems": 1})
        }
        _ => json!(true),
    }
}

fn group_constraints(command: &Command, groups: &[PropGroup]) -> Vec<Value> {
    let mut out = Vec::new();
    for g in groups {
        let name = |pi: usize| command.properties[pi].name.clone();
        let active = |pi: usize| active_subschema(command, &command.properties[pi]);
        for (i, &a) in g.props.iter().enumerate() {
            for &b in &g.props[i + 1..] {
                let mut p = Map::new();
                p.insert(name(a), active(a));
                p.insert(name(b), active(b));
                out.push(json!({"not": {"required": [name(a), name(b)], "properties": p}}));
            }
        }
        if g.required && !g.props.is_empty() {
            let any: Vec<Value> = g
                .props
                .iter()
                .map(|&pi| {
                    let mut p = Map::new();
                    p.insert(name(pi), active(pi));
                    json!({"required": [name(pi)], "properties": p})
                })
                .collect();
            out.push(json!({"anyOf": any}));
        }
    }
    out
}

/// The schema of one property (without its description).
fn property_schema(command: &Command, prop: &Property, profile: Profile) -> Map<String, Value> {
    match &prop.source {
        PropertySource::GreedyArgs => obj(json!({"type": "array", "items": {"type": "string"}})),
        PropertySource::FlagEnum { choices } => {
            let names: Vec<Value> = choices.iter().map(|(n, _)| json!(n)).collect();
            obj(json!({"type": "string", "enum": names}))
        }
        PropertySource::Action { arg } => {
            let a = &command.arguments[*arg];
            let remainder =
                matches!(command.passthrough, Passthrough::Remainder { arg: r } if r == *arg);
            action_schema(a, remainder, profile)
        }
    }
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Whether a `nargs='?'` option accepts `""` for its bare form: only string
/// values can carry it.
fn bare_allowed(a: &Argument) -> bool {
    !a.is_positional() && a.value_type == ValueType::String
}

fn action_schema(a: &Argument, remainder: bool, profile: Profile) -> Map<String, Value> {
    let positional = a.is_positional();
    match a.kind {
        ArgKind::StoreTrue
        | ArgKind::StoreConst
        | ArgKind::StoreFalse
        | ArgKind::BooleanOptional => obj(json!({"type": "boolean"})),
        ArgKind::Count | ArgKind::AppendConst => obj(json!({"type": "integer", "minimum": 0})),
        ArgKind::Store => match a.nargs {
            Nargs::Exactly(0) => obj(json!({"type": "boolean"})),
            Nargs::Default => scalar(a, positional, false, profile),
            Nargs::Optional => scalar(a, positional, bare_allowed(a), profile),
            Nargs::Remainder | Nargs::Parser => {
                let mut m = obj(json!({"type": "array", "items": {"type": "string"}}));
                if a.nargs == Nargs::Parser {
                    // argparse.PARSER needs a subcommand: at least one item.
                    m.insert("minItems".into(), json!(1));
                }
                if remainder && profile == Profile::Full {
                    m.insert(
                        "prefixItems".into(),
                        json!([{"type": "string", "pattern": NO_LEADING_DASH}]),
                    );
                }
                m
            }
            n => array_of(Value::Object(scalar(a, true, false, profile)), n),
        },
        ArgKind::Append => {
            let item = match a.nargs {
                Nargs::Default => Value::Object(scalar(a, false, false, profile)),
                Nargs::Optional => Value::Object(scalar(a, false, bare_allowed(a), profile)),
                n => Value::Object(array_of(Value::Object(scalar(a, true, false, profile)), n)),
            };
            obj(json!({"type": "array", "items": item}))
        }
        ArgKind::Extend => {
            let non_negative = positional || a.nargs != Nargs::Default;
            let mut m = obj(
                json!({"type": "array", "items": Value::Object(scalar(a, non_negative, false, profile))}),
            );
            if let Nargs::Exactly(n) = a.nargs
                && n > 0
            {
                // Each occurrence takes exactly n values: the flat list is cut in chunks of n.
                m.insert("minItems".into(), json!(n));
            }
            m
        }
        // Never properties (the catalog leaves them out); a permissive
        // schema keeps a stray one harmless.
        ArgKind::Help | ArgKind::Version | ArgKind::Subparsers => obj(json!({"type": "boolean"})),
    }
}

fn array_of(item: Value, nargs: Nargs) -> Map<String, Value> {
    let mut m = obj(json!({"type": "array", "items": item}));
    match nargs {
        Nargs::OneOrMore => {
            m.insert("minItems".into(), json!(1));
        }
        Nargs::Exactly(n) => {
            m.insert("minItems".into(), json!(n));
            m.insert("maxItems".into(), json!(n));
        }
        _ => {}
    }
    m
}

/// A single value. Choices become a string `enum` whatever the type (the
/// portable profile allows string enums only; argparse converts the string
/// with its `type` before it checks the choice). A free string gets the
/// pattern [`NO_LEADING_DASH`] unless the compiler joins it to its option
/// ([`Argument::joins_value`]); then the full profile refuses what
/// argparse would not read back ([`joined_string`]).
fn scalar(
    a: &Argument,
    non_negative: bool,
    allow_bare: bool,
    profile: Profile,
) -> Map<String, Value> {
    let joined = a.joins_value();
    let has_choices = a.choices.as_ref().is_some_and(|c| !c.is_empty());
    match a.value_type {
        _ if has_choices => match a.choices.as_ref().filter(|c| !c.is_empty()) {
            Some(choices) => {
                let mut values: Vec<Value> = choices.iter().map(|c| json!(c)).collect();
                if allow_bare {
                    values.push(json!(""));
                }
                obj(json!({"type": "string", "enum": values}))
            }
            None => obj(json!({
                "type": "string",
                "pattern": if allow_bare { BARE_OR_NO_LEADING_DASH } else { NO_LEADING_DASH },
            })),
        },
        ValueType::String if joined => joined_string(allow_bare, profile),
        ValueType::String => obj(json!({
            "type": "string",
            "pattern": if allow_bare { BARE_OR_NO_LEADING_DASH } else { NO_LEADING_DASH },
        })),
        ValueType::Integer | ValueType::Number => {
            let t = if a.value_type == ValueType::Integer {
                "integer"
            } else {
                "number"
            };
            let mut m = obj(json!({"type": t}));
            if non_negative {
                m.insert("minimum".into(), json!(0));
            }
            m
        }
    }
}

/// The schema of a string the compiler joins to its option (`--opt=value`,
/// [`Argument::joins_value`]): any string in the portable profile;
/// in the full one (what the server validates against) not
/// [`crate::catalog::DROPPED_OPTION_VALUE`] and, unless `allow_bare` (`""` is the
/// bare form of a `nargs='?'` option), not empty.
fn joined_string(allow_bare: bool, profile: Profile) -> Map<String, Value> {
    let mut m = obj(json!({"type": "string"}));
    if profile == Profile::Full {
        if !allow_bare {
            m.insert("minLength".into(), json!(1));
        }
        m.insert(
            "not".into(),
            json!({"const": crate::catalog::DROPPED_OPTION_VALUE}),
        );
    }
    m
}
