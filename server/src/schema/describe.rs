//! Titles, descriptions, annotations and `_meta` of generated tools.
//!
//! Descriptions are short on purpose: `tools/list` of a real conda must stay
//! within its byte targets (40,000 B on the recorded conda 26 with every
//! flag, 46,000 B with conda-index and conda-pypi as well;
//! docs/benchmarks.md "tools/list size"), and hosts put every description
//! into the model's context. A description is the parser's first paragraph
//! ([`crate::catalog::Command::summary`], examples already dropped) plus what
//! the tool may do.

use serde_json::{Map, Value, json};

use std::collections::BTreeSet;

use crate::catalog::{Catalog, Command, CommandIdx};

/// The broadest behaviour of a tool, from the policy (`policy::annotations`).
/// Hints only: enforcement never relies on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolEffects {
    /// No argument combination modifies anything.
    pub read_only: bool,
    /// Some argument combination may delete or overwrite.
    pub destructive: bool,
    /// Repeating a call with the same arguments changes nothing more.
    pub idempotent: bool,
    /// Talks to the network (channels, notices).
    pub open_world: bool,
    /// May run an arbitrary subprocess (`conda run`, passthrough).
    pub runs_subprocess: bool,
}

/// Sentence appended when a tool may run an arbitrary program. (That a
/// tool may modify environments or files is said by its annotations,
/// `readOnlyHint` left out, and by its summary's verb, "Create", "Remove",
/// ...: a sentence of its own in each of 26 tools was 884 bytes of
/// `tools/list`, docs/benchmarks.md.)
pub const RUNS_SUBPROCESS: &str = "Runs an arbitrary subprocess command.";

/// Longest summary kept in a tool description: whole sentences of the
/// parser's first paragraph while they fit (at least one).
pub const SUMMARY_CHARS: usize = 160;

/// Whole sentences of `text` ([`crate::catalog::help::sentences`]: an
/// abbreviation such as `e.g.` ends none) while the total stays within
/// `max` characters (the first one always), whitespace collapsed.
pub fn first_sentences(text: &str, max: usize) -> String {
    let mut out = String::new();
    for sentence in crate::catalog::help::sentences(text) {
        if !out.is_empty() && out.len() + 1 + sentence.len() > max {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&sentence);
    }
    out
}

/// `conda <path>`, e.g. `conda env create`.
pub fn title(command: &Command) -> String {
    command.display_path()
}

/// The tool description: the summary, the exclusive/required option groups
/// in words, the options conda needs at run time
/// ([`crate::policy::required`]), and [`RUNS_SUBPROCESS`] as the effects say.
pub fn description(command: &Command, effects: ToolEffects) -> String {
    let mut d = first_sentences(command.summary.trim(), SUMMARY_CHARS);
    if d.is_empty() {
        d = format!("Run `{}`.", command.display_path());
    } else if !d.ends_with(['.', '!', '?', ':']) {
        // Some plugin summaries have no final period; what follows is
        // another sentence.
        d.push('.');
    }
    for g in super::input::group_sentences(command) {
        d.push(' ');
        d.push_str(&g);
    }
    if let Some(rule) = crate::policy::required::Requirement::for_path(command.subpath()) {
        d.push(' ');
        d.push_str(&rule.sentence());
    }
    if effects.runs_subprocess {
        d.push(' ');
        d.push_str(RUNS_SUBPROCESS);
    }
    d
}

/// Most property names a [`sibling_sentences`] sentence lists per side.
const SIBLING_NAMES: usize = 4;

/// What tells a command apart from the other tools whose parser gives the
/// same summary (conda 26's `conda export` and `conda env export`), and
/// where an output goes: one or two sentences, empty when no other tool
/// shares its summary and it has no `file` option. `tools` are the
/// commands that become tools.
///
/// * The same summary and the same properties: "Same as conda X."
/// * The same summary, other properties: "Unlike conda X: takes a, b;
///   not c." (at most four names each side).
/// * A summary that says "to a file" and an optional `file` property:
///   "Without file it prints to stdout." (conda writes to stdout when no
///   file is given.)
pub fn sibling_sentences(catalog: &Catalog, cmd: CommandIdx, tools: &[CommandIdx]) -> String {
    let command = &catalog.commands[cmd];
    let summary = command.summary.trim();
    let names =
        |c: &Command| -> BTreeSet<String> { c.properties.iter().map(|p| p.name.clone()).collect() };
    let mut out = Vec::new();
    if !summary.is_empty() {
        let mine = names(command);
        for &other in tools {
            let o = &catalog.commands[other];
            if other == cmd || o.summary.trim() != summary {
                continue;
            }
            let theirs = names(o);
            let path = o.display_path();
            if mine == theirs {
                out.push(format!("Same as {path}."));
                continue;
            }
            let list = |set: Vec<&String>| -> String {
                let more = set.len().saturating_sub(SIBLING_NAMES);
                let mut s = set
                    .into_iter()
                    .take(SIBLING_NAMES)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ");
                if more > 0 {
                    s.push_str(&format!(" and {more} more"));
                }
                s
            };
            let only_mine: Vec<&String> = mine.difference(&theirs).collect();
            let only_theirs: Vec<&String> = theirs.difference(&mine).collect();
            let mut s = format!("Unlike {path}:");
            if !only_mine.is_empty() {
                s.push_str(&format!(" takes {}", list(only_mine)));
            }
            if !only_theirs.is_empty() {
                if !s.ends_with(':') {
                    s.push(';');
                }
                s.push_str(&format!(" not {}", list(only_theirs)));
            }
            s.push('.');
            out.push(s);
        }
    }
    let file = command
        .properties
        .iter()
        .any(|p| p.name == "file" && !p.required);
    if file && summary.contains("to a file") {
        out.push("Without file it prints to stdout.".to_owned());
    }
    out.join(" ")
}

/// A tool's behaviour hints, free of the protocol library: the fields of
/// MCP's `ToolAnnotations` (MCP spec, "Tool annotations": `title`,
/// `readOnlyHint`, `destructiveHint`, `idempotentHint`, `openWorldHint`),
/// each `None` when left out. `crate::mcp` renders them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolHints {
    /// `title`.
    pub title: Option<String>,
    /// `readOnlyHint`.
    pub read_only: Option<bool>,
    /// `destructiveHint`.
    pub destructive: Option<bool>,
    /// `idempotentHint`.
    pub idempotent: Option<bool>,
    /// `openWorldHint`.
    pub open_world: Option<bool>,
}

impl ToolHints {
    /// Whether every hint is left out (the tool is listed without
    /// `annotations`).
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// MCP annotations from the effects. Hints equal to the MCP defaults
/// (readOnlyHint false, destructiveHint true, idempotentHint false,
/// openWorldHint true) are left out: they are repeated in every tool of
/// `tools/list`.
pub fn annotations(effects: ToolEffects) -> ToolHints {
    let mut a = ToolHints::default();
    if effects.read_only {
        a.read_only = Some(true);
    } else {
        if !effects.destructive {
            a.destructive = Some(false);
        }
        if effects.idempotent {
            a.idempotent = Some(true);
        }
    }
    if !effects.open_world {
        a.open_world = Some(false);
    }
    a
}

/// The `_meta` key that asks Claude Code to load a tool's schema into the
/// model's first request instead of deferring it behind its tool search.
pub const ALWAYS_LOAD_KEY: &str = "anthropic/alwaysLoad";

/// The `_meta` key with words Claude Code's tool search matches a deferred
/// tool by, beside its name and description.
pub const SEARCH_HINT_KEY: &str = "anthropic/searchHint";

/// `_meta` of the tool `name` of a command: `conda-mcp/aliases` (aliases
/// of its last element, e.g. `uninstall`, when there are any) and, for
/// the always-loaded (`crate::policy::commands`) commands,
/// [`ALWAYS_LOAD_KEY`], for every other one [`SEARCH_HINT_KEY`] when its
/// words ([`search_hint`]) are more than the name's (aliases, or a name
/// that had to be sanitized or suffixed, `crate::schema::names`): a tool
/// loaded up front is never searched for, the words of a plain name
/// (`conda_env_create`) are the command's path already, and `tools/list`
/// stays within its byte target (docs/benchmarks.md). The canonical path
/// is the title without `conda ` (and is in `conda://capabilities`).
pub fn meta(command: &Command, name: &str) -> Map<String, Value> {
    let mut m = Map::new();
    if !command.aliases.is_empty() {
        m.insert("conda-mcp/aliases".into(), json!(command.aliases));
    }
    if crate::policy::commands::holds(command.subpath(), |c| c.always_loaded) {
        m.insert(ALWAYS_LOAD_KEY.into(), json!(true));
    } else if !command.aliases.is_empty() || name != plain_name(command) {
        m.insert(SEARCH_HINT_KEY.into(), json!(search_hint(command)));
    }
    m
}

/// `conda_` + the command's path joined by `_`: the tool name of a command
/// whose name needed no sanitizing or suffix (`crate::schema::names`).
pub fn plain_name(command: &Command) -> String {
    let mut name = String::from("conda");
    for element in command.subpath() {
        name.push('_');
        name.push_str(element);
    }
    name
}

/// The words of [`SEARCH_HINT_KEY`]: the command as a person types it and
/// its aliases (`conda remove uninstall`), which the tool's name
/// (`conda_remove`) does not carry.
pub fn search_hint(command: &Command) -> String {
    let mut words = command.path.clone();
    words.extend(command.aliases.iter().cloned());
    words.join(" ")
}

/// `_meta` of one of the server's own tools: [`ALWAYS_LOAD_KEY`] when
/// `always_load`, else [`SEARCH_HINT_KEY`] `hint` (as [`meta`] does).
pub fn own_meta(hint: &str, always_load: bool) -> Map<String, Value> {
    let mut m = Map::new();
    if always_load {
        m.insert(ALWAYS_LOAD_KEY.into(), json!(true));
    } else {
        m.insert(SEARCH_HINT_KEY.into(), json!(hint));
    }
    m
}
