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

/// `conda <path>`, e.g. `conda env create`.
pub fn title(command: &Command) -> String {
    command.display_path()
}

/// The tool description: the summary plus [`MAY_MODIFY`] /
/// [`RUNS_SUBPROCESS`] as the effects say.
pub fn description(command: &Command, effects: ToolEffects) -> String {
    let mut d = command.summary.trim().to_owned();
    if d.is_empty() {
        d = format!("Run `{}`.", command.display_path());
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

/// MCP annotations from the effects (plus the title).
pub fn annotations(command: &Command, effects: ToolEffects) -> ToolAnnotations {
    let mut a = ToolAnnotations::with_title(title(command))
        .read_only(effects.read_only)
        .open_world(effects.open_world);
    if !effects.read_only {
        a = a
            .destructive(effects.destructive)
            .idempotent(effects.idempotent);
    }
    a
}

/// `_meta` of a tool: `conda-mcp/path` (canonical path without `conda`) and
/// `conda-mcp/aliases` (aliases of its last element, e.g. `uninstall`).
pub fn meta(command: &Command) -> MetaObject {
    let mut m = MetaObject::new();
    m.0.insert("conda-mcp/path".into(), json!(command.subpath()));
    m.0.insert("conda-mcp/aliases".into(), json!(command.aliases));
    m
}
