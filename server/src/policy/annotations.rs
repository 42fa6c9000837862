//! MCP tool annotation hints from the policy table.
//!
//! Annotations describe a tool's *broadest* behaviour (any argument
//! combination): a tool is `readOnlyHint` only when no call of it can
//! mutate or run a program. They are hints for hosts; enforcement is
//! [`super::Policy::check`] on every call and never relies on them.

use super::table::{self, OpenWorld, Verdict};
use crate::catalog::{Catalog, CommandIdx, Passthrough};

/// The four MCP `ToolAnnotations` hints (MCP spec, `tools/list`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolAnnotationsHint {
    /// `readOnlyHint`: no call changes anything.
    pub read_only: bool,
    /// `destructiveHint`: a call may remove or overwrite (meaningful only
    /// when not read-only).
    pub destructive: bool,
    /// `idempotentHint`: repeating a call with the same arguments has no
    /// further effect.
    pub idempotent: bool,
    /// `openWorldHint`: a call may reach beyond the machine (network, or
    /// arbitrary programs).
    pub open_world: bool,
}

/// The hints for the tool of command `cmd`. A command the table does not
/// know gets the most cautious hints.
pub fn annotations(catalog: &Catalog, cmd: CommandIdx) -> ToolAnnotationsHint {
    let unknown = ToolAnnotationsHint {
        read_only: false,
        destructive: true,
        idempotent: false,
        open_world: true,
    };
    let Some(command) = catalog.commands.get(cmd) else {
        return unknown;
    };
    let Some(entry) = table::lookup(command.subpath()) else {
        return unknown;
    };
    let passthrough = command.passthrough != Passthrough::None;
    let read_only = !passthrough && entry.possible_verdicts().all(|v| v == Verdict::ReadOnly);
    let exec = passthrough || entry.possible_verdicts().any(|v| v == Verdict::Exec);
    ToolAnnotationsHint {
        read_only,
        destructive: !read_only && (entry.destructive || exec),
        idempotent: read_only,
        open_world: exec || entry.open_world != OpenWorld::Never,
    }
}
