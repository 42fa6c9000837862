//! Titles, descriptions, annotations and `_meta` of generated tools.
//!
//! Descriptions are short on purpose: `tools/list` of a real conda must stay
//! under 50 KB in the portable profile, and hosts put every description into
//! the model's context. A description is the parser's first paragraph
//! ([`crate::catalog::Command::summary`], examples already dropped) plus what
//! the tool may do.

use rmcp::model::{MetaObject, ToolAnnotations};
use serde_json::json;

use crate::catalog::Command;

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

/// Sentence appended when a tool may modify something.
pub const MAY_MODIFY: &str = "May modify environments or files.";
/// Sentence appended when a tool may run an arbitrary program.
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
/// in words, and [`MAY_MODIFY`] / [`RUNS_SUBPROCESS`] as the effects say.
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
    if !effects.read_only {
        d.push(' ');
        d.push_str(MAY_MODIFY);
    }
    if effects.runs_subprocess {
        d.push(' ');
        d.push_str(RUNS_SUBPROCESS);
    }
    d
}

/// MCP annotations from the effects. Hints equal to the MCP defaults
/// (readOnlyHint false, destructiveHint true, idempotentHint false,
/// openWorldHint true) are left out: they are repeated in every tool of
/// `tools/list`.
pub fn annotations(effects: ToolEffects) -> ToolAnnotations {
    let mut a = ToolAnnotations::new();
    if effects.read_only {
        a = a.read_only(true);
    } else {
        if !effects.destructive {
            a = a.destructive(false);
        }
        if effects.idempotent {
            a = a.idempotent(true);
        }
    }
    if !effects.open_world {
        a = a.open_world(false);
    }
    a
}

/// `_meta` of a tool: `conda-mcp/aliases` (aliases of its last element,
/// e.g. `uninstall`), or `None` when there are none. The canonical path is
/// the title without `conda ` (and is in `conda://capabilities`).
pub fn meta(command: &Command) -> Option<MetaObject> {
    if command.aliases.is_empty() {
        return None;
    }
    let mut m = MetaObject::new();
    m.0.insert("conda-mcp/aliases".into(), json!(command.aliases));
    Some(m)
}
