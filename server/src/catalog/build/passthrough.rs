//! Passthrough: which part of a command line is handed on unparsed (a
//! greedy plugin parser's unknown strings, or a REMAINDER/PARSER
//! positional). See the rules in [`super`].

use super::RawReason;
use crate::catalog::{ArgIdx, ArgKind, Argument, Nargs, Passthrough};

/// Finds the REMAINDER/PARSER positional of a non-greedy parser.
pub(super) fn passthrough_positional(
    arguments: &[Argument],
    raw: &mut Vec<RawReason>,
) -> Passthrough {
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
