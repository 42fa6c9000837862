//! Properties: the arguments a generated tool exposes, merged and named.
//!
//! Help, version and subparsers actions never become properties; hidden
//! optionals are left out, hidden positionals kept; `store_const` members
//! sharing a dest in one exclusive group become one enum property; names are
//! dests, or the long option where dests collide. See the rules in
//! [`super`].

use std::collections::{BTreeMap, HashMap};

use super::{GREEDY_ARGS_PROPERTY, RawReason};
use crate::catalog::{ArgIdx, ArgKind, Argument, ExclusiveGroup, Nargs, Property, PropertySource};

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

pub(super) fn build_properties(
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
