//! Action kinds and values: one dump action → one [`Argument`].
//!
//! Kinds go by `argparse_base` (the first argparse class in the action's
//! MRO), never by conda's class names; a custom action based on plain
//! `argparse.Action` is a store action by its `nargs`, and one that takes no
//! value is of unknown effect (its command becomes raw-only). `type=int` →
//! integer, `type=float` → number, anything else → string; choices are kept
//! as the strings the command line carries, and lazy choices that raised
//! only add a note. See the rules in [`super`].

use serde_json::Value;

use super::RawReason;
use crate::catalog::help::{self, HelpParams, SUPPRESS};
use crate::catalog::{ArgKind, Argument, Nargs, ValueType};
use crate::dump::{DumpAction, DumpNargs};

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

pub(super) fn convert_action(
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

pub(super) fn display_action(a: &DumpAction) -> String {
    if a.option_strings.is_empty() {
        a.dest.clone()
    } else {
        a.option_strings.join("/")
    }
}
