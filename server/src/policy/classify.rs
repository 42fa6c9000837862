//! Resolved command line + [`super::table`] → [`Classification`].
//!
//! Fail-closed rules, in order:
//! * argv that argparse rejects (or the resolver cannot reproduce) is a
//!   mutation; it also needs `--allow-exec` unless the command reached is a
//!   known one without passthrough;
//! * help and version output (`-h`, `-V`, an empty argv) is read-only: the
//!   parser exits before conda does anything;
//! * a command the table does not know is a mutation, and an exec as well
//!   when the catalog says it passes argv on (greedy plugin, REMAINDER);
//! * an action the command's entry does not list is a mutation;
//! * anything handed on unparsed (passthrough) needs `--allow-exec`.

use super::table::{self, Entry, OpenWorld, Verdict, When};
use crate::argparse::{End, Rejection, Resolved, resolve};
use crate::catalog::{ArgKind, Catalog, CommandIdx, Passthrough};

/// What happens when conda is run with the argv.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invocation {
    /// The command runs.
    Runs,
    /// Only usage or the version is printed.
    HelpOrVersion,
    /// argparse rejects the argv (or the resolver could not reproduce
    /// argparse); nothing is claimed about it, so it fails closed.
    Rejected(Rejection),
}

/// Why the classification came out as it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// The table says the command (with these options) only reads.
    ReadOnlyCommand,
    /// Only help or the version is printed.
    HelpOrVersion,
    /// A dry-run spelling turned a mutation read-only.
    DryRun,
    /// The command mutates.
    Mutation,
    /// The command runs arbitrary programs.
    Exec,
    /// The table does not know the command.
    UnknownCommand,
    /// The command's table entry does not know an option that was given.
    UnknownOption,
    /// The argv could not be resolved the way argparse would.
    Unresolved(Rejection),
}

/// The policy-relevant facts about one conda argv.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classification {
    /// Canonical command path including `conda` (`["conda", "update"]` for
    /// `upgrade`), as far as it was resolved.
    pub command: Vec<String>,
    /// The catalog command, when one was reached.
    pub command_idx: Option<CommandIdx>,
    /// Nothing is changed and no program is run.
    pub read_only: bool,
    /// The network may be used.
    pub open_world: bool,
    /// Needs `--allow-write`.
    pub requires_write: bool,
    /// Needs `--allow-exec`.
    pub requires_exec: bool,
    /// What argparse does with the argv.
    pub outcome: Invocation,
    /// Why.
    pub reason: Reason,
    /// The options (as the catalog spells them, e.g. `--set`) that make the
    /// call a mutation, for the refusal message; never submitted values.
    pub triggers: Vec<String>,
}

/// Classifies `argv` (what follows the conda executable). One classifier
/// for generated tools (their compiled argv) and the raw tool.
pub fn classify(catalog: &Catalog, argv: &[String]) -> Classification {
    let r = resolve(catalog, argv);
    classify_resolved(catalog, &r)
}

/// Path of a command for display (canonical names from the catalog).
fn path_of(catalog: &Catalog, idx: CommandIdx) -> Vec<String> {
    catalog
        .commands
        .get(idx)
        .map(|c| c.path.clone())
        .unwrap_or_else(|| vec!["conda".to_owned()])
}

/// Whether a command may hand argv to another program.
fn passes_through(catalog: &Catalog, idx: CommandIdx) -> bool {
    catalog
        .commands
        .get(idx)
        .is_none_or(|c| c.passthrough != Passthrough::None)
}

fn fail_closed(
    catalog: &Catalog,
    r: &Resolved,
    outcome: Invocation,
    reason: Reason,
    exec: bool,
) -> Classification {
    let idx = r.command();
    Classification {
        command: path_of(catalog, idx),
        command_idx: (idx != 0).then_some(idx),
        read_only: false,
        open_world: true,
        requires_write: true,
        requires_exec: exec,
        outcome,
        reason,
        triggers: Vec::new(),
    }
}

/// Classifies an already resolved argv.
pub fn classify_resolved(catalog: &Catalog, r: &Resolved) -> Classification {
    let idx = r.command();
    match r.end {
        End::Rejected(why) => {
            // Passthrough is possible unless a known, non-passthrough
            // command was reached.
            let known = idx != 0 && lookup(catalog, idx).is_some();
            let exec = !known || passes_through(catalog, idx);
            return fail_closed(
                catalog,
                r,
                Invocation::Rejected(why),
                Reason::Unresolved(why),
                exec,
            );
        }
        End::Help | End::Version => {
            return Classification {
                command: path_of(catalog, idx),
                command_idx: (idx != 0).then_some(idx),
                read_only: true,
                open_world: false,
                requires_write: false,
                requires_exec: false,
                outcome: Invocation::HelpOrVersion,
                reason: Reason::HelpOrVersion,
                triggers: Vec::new(),
            };
        }
        End::Parsed => {}
    }
    let Some(entry) = lookup(catalog, idx) else {
        let exec = passes_through(catalog, idx) || r.passthrough > 0;
        return fail_closed(catalog, r, Invocation::Runs, Reason::UnknownCommand, exec);
    };
    // an action the catalog could not represent (unknown argparse base or
    // nargs, custom zero-value action): the resolver's model of it may be
    // wrong, so nothing is claimed
    let doubtful = |cmd: CommandIdx, arg: &crate::catalog::Argument| {
        catalog.diagnostics.iter().any(|d| {
            d.command == catalog.commands[cmd].path && d.action_class.as_deref() == Some(&arg.class)
        })
    };
    for &cmd in &r.commands {
        let positional_doubt = catalog.commands[cmd]
            .arguments
            .iter()
            .any(|a| a.is_positional() && doubtful(cmd, a));
        let taken_doubt = r
            .taken
            .iter()
            .any(|t| t.command == cmd && doubtful(cmd, &catalog.commands[cmd].arguments[t.arg]));
        if positional_doubt || taken_doubt {
            let exec = r.passthrough > 0 || passes_through(catalog, idx);
            return fail_closed(catalog, r, Invocation::Runs, Reason::UnknownOption, exec);
        }
    }
    // every action taken, in every parser on the way, must be known
    for t in &r.taken {
        let arg = &catalog.commands[t.command].arguments[t.arg];
        // the subparser choice, and positionals that took no value (argparse
        // stores their default), say nothing about what runs
        if arg.kind == ArgKind::Subparsers || (t.option.is_none() && t.values == 0) {
            continue;
        }
        // A clause reads "given" as "set": an action that can *unset* a
        // clause's dest (store_false, --no-x) would break that reading, so
        // it is not trusted.
        let unsets = matches!(arg.kind, ArgKind::StoreFalse | ArgKind::BooleanOptional)
            && lookup(catalog, t.command)
                .is_some_and(|e| e.clauses.iter().any(|(w, _)| w.dest() == arg.dest));
        let known = !unsets && lookup(catalog, t.command).is_some_and(|e| e.covers(&arg.dest));
        if !known {
            let mut c = fail_closed(
                catalog,
                r,
                Invocation::Runs,
                Reason::UnknownOption,
                r.passthrough > 0 || passes_through(catalog, idx),
            );
            c.triggers = t.option.iter().cloned().collect();
            return c;
        }
    }
    let facts = |w: When| match w {
        When::Present(d) => r.has(catalog, d),
        When::HasValues(d) => r.has_values(catalog, d),
    };
    let (verdict, by_clause) = evaluate(entry, facts);
    let open_world = match entry.open_world {
        OpenWorld::Never => false,
        OpenWorld::Always => true,
        OpenWorld::UnlessPresent(d) => !r.has(catalog, d),
    };
    let passthrough = r.passthrough > 0;
    let (read_only, write, exec, reason) = match verdict {
        Verdict::ReadOnly if !passthrough => {
            let reason = match by_clause {
                Some(When::Present("dry_run")) => Reason::DryRun,
                _ => Reason::ReadOnlyCommand,
            };
            (true, false, false, reason)
        }
        // something handed on unparsed in a command the table calls
        // read-only: not claimed, fails closed
        Verdict::ReadOnly => (false, true, true, Reason::Exec),
        Verdict::Mutation => (false, true, passthrough, Reason::Mutation),
        Verdict::Exec => (false, false, true, Reason::Exec),
    };
    let triggers = if write {
        triggers(catalog, r, entry)
    } else {
        Vec::new()
    };
    Classification {
        command: path_of(catalog, idx),
        command_idx: Some(idx),
        read_only,
        open_world: open_world || exec,
        requires_write: write,
        requires_exec: exec,
        outcome: Invocation::Runs,
        reason,
        triggers,
    }
}

/// Applies an entry to facts about the command line: the first clause that
/// holds, else the default. Also returns the deciding clause's condition.
/// Public so tests can apply the very same table to argparse's own parse.
pub fn evaluate(entry: &Entry, facts: impl Fn(When) -> bool) -> (Verdict, Option<When>) {
    for &(when, verdict) in entry.clauses {
        if facts(when) {
            return (verdict, Some(when));
        }
    }
    (entry.default, None)
}

fn lookup(catalog: &Catalog, idx: CommandIdx) -> Option<&'static Entry> {
    table::lookup(catalog.commands.get(idx)?.subpath())
}

/// The options named in a refusal: the taken actions whose dest the entry
/// lists under `writes`, spelled as the catalog spells the option string
/// argparse matched (`--se` is reported as `--set`, `--add` as `--add`).
fn triggers(catalog: &Catalog, r: &Resolved, entry: &Entry) -> Vec<String> {
    let idx = r.command();
    let mut out: Vec<String> = Vec::new();
    for t in r.taken.iter().filter(|t| t.command == idx) {
        let arg = &catalog.commands[idx].arguments[t.arg];
        if entry.writes.contains(&arg.dest.as_str())
            && let Some(opt) = t.option.as_deref().or_else(|| arg.preferred_option())
            && !out.iter().any(|o| o == opt)
        {
            out.push(opt.to_owned());
        }
    }
    out
}
