//! Mutually exclusive groups: the dump's groups resolved to argument
//! indices of the command.

use super::RawReason;
use crate::catalog::{Argument, ExclusiveGroup};
use crate::dump::DumpParser;

/// Resolves the dump's exclusive groups to argument indices. Members are
/// matched by their option strings (several members may share a dest), a
/// positional member by its dest.
pub(super) fn resolve_groups(
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
