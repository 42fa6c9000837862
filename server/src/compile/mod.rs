//! Tool arguments → conda argv (what follows the conda executable).
//!
//! The arguments have already passed the full input schema
//! ([`crate::schema::ArgumentValidator`]); the compiler still checks every
//! rule it relies on, so that nothing it emits can be misread by argparse.
//!
//! Layout of the argv (argparse's rules decide it):
//!
//! 1. the canonical command path (`env`, `create`): subparser choices;
//! 2. positionals in declared order: they come before any option so that a
//!    variadic option (`nargs='*'`) can never swallow them;
//! 3. options in property order, long option strings preferred; values as
//!    separate argv items (`--name`, `x`), except `nargs='?'` values, which
//!    are ONE token (`--opt=value`; a bare `--opt` for `""`) so that the
//!    optional value can never be split from its flag, and values that
//!    start with `-` (`--n=-1`, `--name=-x`), which argparse would
//!    otherwise take for an option;
//! 4. last, the passthrough: a REMAINDER/PARSER positional's values or a
//!    greedy plugin parser's `args`, unchanged.
//!
//! A value that starts with `-` is passed only where argparse reads it
//! back as that value: as the explicit argument of a long option
//! (`--opt=value`, [`Argument::joins_value`]; argparse's `_parse_optional`
//! splits the item at its first `=` and never reads what follows as an
//! option). Such a value must not be `--` alone ([`DROPPED_OPTION_VALUE`]). Positionals and the
//! values of options that take several (`nargs` `*`, `+`, N) are separate
//! argv items and must not start with `-`, or argparse would read them as
//! options. No argv item may contain NUL.

pub mod paths;

use serde_json::{Map, Value};

use crate::catalog::{
    ArgKind, Argument, Catalog, CommandIdx, DROPPED_OPTION_VALUE, Nargs, Passthrough,
    PropertySource,
};
use crate::schema::ArgumentError;
use crate::schema::validate::DROPPED_RULE;
use conda_mcp_shared::limits::{ARG_MAX_BYTES, ARGV_MAX_BYTES, arg_fits, argv_bytes};

/// Compiles validated arguments of the tool for `cmd` into argv.
///
/// Errors: an [`ArgumentError`] naming the JSON path of the first value that
/// cannot be compiled (never quoting it).
pub fn compile(
    catalog: &Catalog,
    cmd: CommandIdx,
    args: &Map<String, Value>,
) -> Result<Vec<String>, ArgumentError> {
    let command = &catalog.commands[cmd];
    for (key, value) in args {
        if !command.properties.iter().any(|p| &p.name == key) {
            return Err(err("/", "unknown property"));
        }
        if let Some(at) = nul_at(value, format!("/{}", pointer_escape(key))) {
            return Err(err(&at, "contains a NUL character"));
        }
        if let Some(at) = too_long_at(value, format!("/{}", pointer_escape(key))) {
            return Err(err(&at, &too_long()));
        }
    }
    let mut argv: Vec<String> = command.subpath().to_vec();
    let mut options: Vec<(bool, Vec<String>)> = Vec::new();
    let mut tail: Vec<String> = Vec::new();
    // Positionals first, in declared (argument) order.
    let mut positionals: Vec<(usize, usize)> = Vec::new(); // (arg index, property index)
    for (pi, prop) in command.properties.iter().enumerate() {
        if let PropertySource::Action { arg } = prop.source
            && command.arguments[arg].is_positional()
        {
            positionals.push((arg, pi));
        }
    }
    positionals.sort();
    for (arg, pi) in positionals {
        let prop = &command.properties[pi];
        let given = args
            .get(&prop.name)
            .filter(|v| !v.as_array().is_some_and(Vec::is_empty));
        let Some(value) = given else {
            argv.extend(explicit_default(&command.arguments[arg]));
            continue;
        };
        let at = format!("/{}", escape(&prop.name));
        let a = &command.arguments[arg];
        let remainder = matches!(command.passthrough, Passthrough::Remainder { arg: r } if r == arg)
            || matches!(a.nargs, Nargs::Remainder | Nargs::Parser);
        if remainder {
            let items = strings(value, &at)?;
            if let Some(first) = items.first()
                && first.starts_with('-')
            {
                return Err(err(
                    &format!("{at}/0"),
                    "must not start with '-' (argparse would read it as an option)",
                ));
            }
            tail.extend(items);
        } else {
            argv.extend(positional_values(a, value, &at)?);
        }
    }
    for prop in &command.properties {
        let Some(value) = args.get(&prop.name) else {
            continue;
        };
        let at = format!("/{}", escape(&prop.name));
        match &prop.source {
            PropertySource::GreedyArgs => tail.extend(strings(value, &at)?),
            PropertySource::FlagEnum { choices } => {
                let chosen = value.as_str().ok_or_else(|| err(&at, "must be a string"))?;
                let (_, arg) = choices
                    .iter()
                    .find(|(n, _)| n == chosen)
                    .ok_or_else(|| err(&at, "must be one of the values the schema lists"))?;
                let flag = flag_of(&command.arguments[*arg], &at)?;
                options.push((false, vec![flag]));
            }
            PropertySource::Action { arg } => {
                let a = &command.arguments[*arg];
                if a.is_positional() {
                    continue;
                }
                let tokens = option_tokens(a, value, &at)?;
                if !tokens.is_empty() {
                    options.push((is_variadic(a), tokens));
                }
            }
        }
    }
    if !tail.is_empty() && options.last().is_some_and(|(v, _)| *v) {
        // A variadic option right before the passthrough would swallow it:
        // move the fixed-arity options last.
        options.sort_by_key(|(variadic, _)| !*variadic);
        if options.last().is_some_and(|(v, _)| *v) {
            return Err(err(
                "/",
                "a variadic option cannot directly precede the passed-through arguments; add a fixed option or pass them separately",
            ));
        }
    }
    for (_, tokens) in options {
        argv.extend(tokens);
    }
    argv.extend(tail);
    if argv.iter().any(|t| t.contains('\0')) {
        return Err(err("/", "an argument contains a NUL character"));
    }
    if argv_bytes(&argv) > ARGV_MAX_BYTES {
        return Err(err("/", &argv_too_long()));
    }
    Ok(argv)
}

/// The default of a `nargs='*'` positional with choices, spelled out when
/// the call leaves it out. Python before 3.12 checks a list default against
/// the choices as ONE value and rejects it (`conda init` without shells:
/// "invalid choice: ['bash']"); giving the default's items explicitly means
/// the same on every Python.
fn explicit_default(a: &Argument) -> Vec<String> {
    let (Nargs::ZeroOrMore, Some(choices), serde_json::Value::Array(items)) =
        (a.nargs, a.choices.as_ref(), &a.default)
    else {
        return Vec::new();
    };
    let items: Vec<String> = items
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    if !items.is_empty()
        && items.len() == a.default.as_array().map_or(0, Vec::len)
        && items
            .iter()
            .all(|i| choices.contains(i) && !i.starts_with('-'))
    {
        items
    } else {
        Vec::new()
    }
}

/// JSON pointer of the first string holding NUL inside `v` (argv items are
/// C strings: NUL cannot be passed to conda).
fn nul_at(v: &Value, at: String) -> Option<String> {
    match v {
        Value::String(s) => s.contains('\0').then_some(at),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| nul_at(item, format!("{at}/{i}"))),
        _ => None,
    }
}

/// The JSON path of the first string in `v` too long for one argument of
/// a process ([`arg_fits`]).
fn too_long_at(v: &Value, at: String) -> Option<String> {
    match v {
        Value::String(s) => (!arg_fits(s)).then_some(at),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(i, item)| too_long_at(item, format!("{at}/{i}"))),
        _ => None,
    }
}

/// The rule an argument over Linux's per-argument limit breaks (the text
/// of its [`ArgumentError`]).
pub fn too_long() -> String {
    format!(
        "is longer than one argument of a process may be on Linux ({} bytes with its NUL, MAX_ARG_STRLEN)",
        ARG_MAX_BYTES
    )
}

/// The rule an argv over [`ARGV_MAX_BYTES`] breaks (the text of its
/// [`ArgumentError`], at `/` or the argv's own path).
pub fn argv_too_long() -> String {
    format!(
        "the arguments together take more than {ARGV_MAX_BYTES} bytes (the share of Linux's ARG_MAX the server gives conda's argv; each argument counts its bytes, its NUL and an 8-byte pointer)"
    )
}

/// RFC 6901 escaping of one pointer token.
fn pointer_escape(token: &str) -> String {
    token.replace('~', "~0").replace('/', "~1")
}

fn err(path: &str, rule: &str) -> ArgumentError {
    ArgumentError {
        path: path.to_owned(),
        rule: rule.to_owned(),
    }
}

/// JSON pointer escaping of one reference token (RFC 6901).
fn escape(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

/// Whether an option consumes a variable number of values.
fn is_variadic(a: &Argument) -> bool {
    matches!(
        a.nargs,
        Nargs::ZeroOrMore | Nargs::OneOrMore | Nargs::Remainder | Nargs::Parser
    ) && !matches!(
        a.kind,
        ArgKind::StoreTrue
            | ArgKind::StoreFalse
            | ArgKind::StoreConst
            | ArgKind::Count
            | ArgKind::AppendConst
            | ArgKind::BooleanOptional
    )
}

fn flag_of(a: &Argument, at: &str) -> Result<String, ArgumentError> {
    a.preferred_option()
        .map(str::to_owned)
        .ok_or_else(|| err(at, "has no option string"))
}

/// The long option to give the positive form of a BooleanOptionalAction
/// (`--x`), and its negative (`--no-x`).
fn boolean_optional_flags(a: &Argument, at: &str) -> Result<(String, String), ArgumentError> {
    let longs: Vec<&String> = a
        .option_strings
        .iter()
        .filter(|o| o.starts_with("--"))
        .collect();
    let no = longs
        .iter()
        .find(|o| o.starts_with("--no-"))
        .map(|s| s.to_string());
    let yes = longs
        .iter()
        .find(|o| !o.starts_with("--no-"))
        .map(|s| s.to_string());
    match (yes, no) {
        (Some(y), Some(n)) => Ok((y, n)),
        _ => Err(err(at, "has no --x/--no-x option strings")),
    }
}

fn strings(value: &Value, at: &str) -> Result<Vec<String>, ArgumentError> {
    let arr = value
        .as_array()
        .ok_or_else(|| err(at, "must be an array"))?;
    arr.iter()
        .enumerate()
        .map(|(i, v)| {
            v.as_str()
                .map(str::to_owned)
                .ok_or_else(|| err(&format!("{at}/{i}"), "must be a string"))
        })
        .collect()
}

/// One value as an argv item: strings as they are, numbers in their JSON
/// spelling (Python's `int()`/`float()` read it). A string must not be
/// empty (unless `allow_empty`: the bare form of `nargs='?'`) and must not
/// start with `-` unless `joined` (the value is passed as `--opt=value`,
/// [`Argument::joins_value`]); a joined one must not be
/// [`DROPPED_OPTION_VALUE`].
fn scalar(
    value: &Value,
    at: &str,
    allow_empty: bool,
    joined: bool,
) -> Result<String, ArgumentError> {
    match value {
        Value::String(s) => {
            if s.is_empty() && allow_empty {
                return Ok(String::new());
            }
            if joined && s == DROPPED_OPTION_VALUE {
                return Err(err(at, DROPPED_RULE));
            }
            if s.is_empty() || (s.starts_with('-') && !joined) {
                return Err(err(
                    at,
                    "must not be empty or start with '-' (it would be read as an option)",
                ));
            }
            Ok(s.clone())
        }
        Value::Number(n) => Ok(n.to_string()),
        _ => Err(err(at, "must be a string or a number")),
    }
}

fn positional_values(a: &Argument, value: &Value, at: &str) -> Result<Vec<String>, ArgumentError> {
    let one = |v: &Value, at: &str| -> Result<String, ArgumentError> {
        let s = scalar(v, at, false, false)?;
        if s.starts_with('-') {
            return Err(err(
                at,
                "must not be negative (it would be read as an option)",
            ));
        }
        Ok(s)
    };
    match a.nargs {
        Nargs::Default | Nargs::Optional => Ok(vec![one(value, at)?]),
        _ => {
            let arr = value
                .as_array()
                .ok_or_else(|| err(at, "must be an array"))?;
            arr.iter()
                .enumerate()
                .map(|(i, v)| one(v, &format!("{at}/{i}")))
                .collect()
        }
    }
}

/// `--flag value` as separate items, or one `--flag=value` token when the
/// value starts with `-` (a negative number, or a string of an option that
/// [`Argument::joins_value`]).
fn flag_value(flag: &str, v: String, at: &str) -> Result<Vec<String>, ArgumentError> {
    Ok(if v.starts_with('-') {
        vec![joined(flag, &v, at)?]
    } else {
        vec![flag.to_owned(), v]
    })
}

/// One token: `--flag=value`, or `-fvalue` for a short-only option.
///
/// Errors: the token is too long for one argument ([`arg_fits`]; `at` is
/// the value's JSON path).
fn joined(flag: &str, v: &str, at: &str) -> Result<String, ArgumentError> {
    let token = if flag.starts_with("--") {
        format!("{flag}={v}")
    } else {
        format!("{flag}{v}")
    };
    if arg_fits(&token) {
        Ok(token)
    } else {
        Err(err(at, &too_long()))
    }
}

fn count(value: &Value, at: &str) -> Result<u64, ArgumentError> {
    let n = value
        .as_u64()
        .ok_or_else(|| err(at, "must be an integer ≥ 0"))?;
    if n > 1000 {
        return Err(err(at, "must be at most 1000"));
    }
    Ok(n)
}

fn boolean(value: &Value, at: &str) -> Result<bool, ArgumentError> {
    value.as_bool().ok_or_else(|| err(at, "must be a boolean"))
}

fn option_tokens(a: &Argument, value: &Value, at: &str) -> Result<Vec<String>, ArgumentError> {
    let flag = flag_of(a, at)?;
    let joins = a.joins_value();
    let mut out = Vec::new();
    match a.kind {
        ArgKind::StoreTrue | ArgKind::StoreConst => {
            if boolean(value, at)? {
                out.push(flag);
            }
        }
        ArgKind::StoreFalse => {
            if !boolean(value, at)? {
                out.push(flag);
            }
        }
        ArgKind::BooleanOptional => {
            let (yes, no) = boolean_optional_flags(a, at)?;
            out.push(if boolean(value, at)? { yes } else { no });
        }
        ArgKind::Count | ArgKind::AppendConst => {
            for _ in 0..count(value, at)? {
                out.push(flag.clone());
            }
        }
        ArgKind::Store => match a.nargs {
            Nargs::Exactly(0) => {
                if boolean(value, at)? {
                    out.push(flag);
                }
            }
            Nargs::Default => out.extend(flag_value(&flag, scalar(value, at, false, joins)?, at)?),
            Nargs::Optional => {
                let v = scalar(value, at, true, joins)?;
                out.push(if v.is_empty() {
                    flag
                } else {
                    joined(&flag, &v, at)?
                });
            }
            _ => out.extend(values_after_flag(&flag, value, at)?),
        },
        ArgKind::Append => {
            let arr = value
                .as_array()
                .ok_or_else(|| err(at, "must be an array"))?;
            for (i, item) in arr.iter().enumerate() {
                let at_i = format!("{at}/{i}");
                match a.nargs {
                    Nargs::Default => out.extend(flag_value(
                        &flag,
                        scalar(item, &at_i, false, joins)?,
                        &at_i,
                    )?),
                    Nargs::Optional => {
                        let v = scalar(item, &at_i, true, joins)?;
                        out.push(if v.is_empty() {
                            flag.clone()
                        } else {
                            joined(&flag, &v, &at_i)?
                        });
                    }
                    _ => out.extend(values_after_flag(&flag, item, &at_i)?),
                }
            }
        }
        ArgKind::Extend => {
            let arr = value
                .as_array()
                .ok_or_else(|| err(at, "must be an array"))?;
            match a.nargs {
                Nargs::Default => {
                    for (i, item) in arr.iter().enumerate() {
                        let at_i = format!("{at}/{i}");
                        out.extend(flag_value(
                            &flag,
                            scalar(item, &at_i, false, joins)?,
                            &at_i,
                        )?);
                    }
                }
                Nargs::Exactly(n) if n > 0 => {
                    if arr.len() % n as usize != 0 {
                        return Err(err(at, "must hold a multiple of the option's value count"));
                    }
                    for chunk in arr.chunks(n as usize) {
                        out.extend(values_after_flag(&flag, &Value::Array(chunk.to_vec()), at)?);
                    }
                }
                _ => {
                    if !arr.is_empty() {
                        out.extend(values_after_flag(&flag, value, at)?);
                    }
                }
            }
        }
        ArgKind::Help | ArgKind::Version | ArgKind::Subparsers => {
            return Err(err(at, "is not an argument of this tool"));
        }
    }
    Ok(out)
}

/// `--flag v1 v2 …` for multi-value nargs (`*`, `+`, N). An empty array with
/// `*` gives the bare flag. Values must not start with `-`.
fn values_after_flag(flag: &str, value: &Value, at: &str) -> Result<Vec<String>, ArgumentError> {
    let arr = value
        .as_array()
        .ok_or_else(|| err(at, "must be an array"))?;
    let mut out = vec![flag.to_owned()];
    for (i, v) in arr.iter().enumerate() {
        let at_i = format!("{at}/{i}");
        let s = scalar(v, &at_i, false, false)?;
        if s.starts_with('-') {
            return Err(err(
                &at_i,
                "must not be negative here (it would be read as an option)",
            ));
        }
        out.push(s);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::tests::demo_catalog;
    use serde_json::{Value, json};

    fn compile_json(cat: &Catalog, args: Value) -> Result<Vec<String>, ArgumentError> {
        compile(cat, 1, args.as_object().expect("object"))
    }

    #[test]
    fn compiles_every_kind_with_long_flags() {
        let cat = demo_catalog();
        let argv = compile_json(
            &cat,
            json!({
                "packages": ["numpy", "scipy"], "name": "env1", "count": -3, "dry_run": true,
                "shortcuts": false, "verbose": 2, "channel": ["a", "b"], "opt": "", "zst": false,
                "update_modifier": "freeze-installed", "pairs": [["k", "v"]]
            }),
        )
        .expect("compiles");
        assert_eq!(
            argv,
            [
                "demo",
                "numpy",
                "scipy",
                "--name",
                "env1",
                "--count=-3",
                "--dry-run",
                "--no-shortcuts",
                "--verbose",
                "--verbose",
                "--channel",
                "a",
                "--channel",
                "b",
                "--opt",
                "--no-zst",
                "--freeze-installed",
                "--pair",
                "k",
                "v"
            ]
        );
        let argv = compile_json(
            &cat,
            json!({"opt": "val", "dry_run": false, "shortcuts": true, "zst": true}),
        )
        .expect("compiles");
        assert_eq!(argv, ["demo", "--opt=val", "--zst"]);
    }

    #[test]
    fn option_like_values_of_one_value_options_pass_joined() {
        let cat = demo_catalog();
        let argv = compile_json(
            &cat,
            json!({"name": "-x", "channel": ["ok", "--all", "-"], "opt": "-y"}),
        )
        .expect("compiles");
        assert_eq!(
            argv,
            [
                "demo",
                "--name=-x",
                "--channel",
                "ok",
                "--channel=--all",
                "--channel=-",
                "--opt=-y"
            ]
        );
    }

    #[test]
    fn compiler_refuses_option_like_values_and_nul() {
        let cat = demo_catalog();
        for args in [
            json!({"packages": ["--all"]}),
            json!({"pairs": [["k", "-v"]]}),
            json!({"name": "--"}),
            json!({"channel": ["--"]}),
            json!({"opt": "--"}),
            json!({"name": ""}),
            json!({"name": "a\u{0}b"}),
            json!({"unknown": 1}),
        ] {
            let e = compile_json(&cat, args).expect_err("refused");
            assert!(
                !e.to_string().contains("-x") && !e.to_string().contains("--all"),
                "{e}"
            );
        }
    }

    fn standin_catalog() -> Catalog {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/fixtures/dumps/standin.json");
        let bytes = std::fs::read(path).expect("in-project dump");
        let dump = crate::dump::Dump::from_json(&bytes).expect("dump");
        crate::catalog::build(&dump).expect("catalog")
    }

    #[test]
    fn a_nul_is_refused_at_its_own_json_path_without_echo() {
        let cat = standin_catalog();
        let cmd = cat.find(&["conda", "install"]).expect("install");
        let args = serde_json::json!({"packages": ["ok", "bad\u{0}value"], "name": "env"});
        let e = compile(&cat, cmd, args.as_object().expect("object")).expect_err("NUL refused");
        assert_eq!(e.path, "/packages/1");
        assert!(!e.to_string().contains("bad"), "{e}");
        let args = serde_json::json!({"packages": ["ok"], "name": "e\u{0}nv"});
        let e = compile(&cat, cmd, args.as_object().expect("object")).expect_err("NUL refused");
        assert_eq!(e.path, "/name");
    }

    #[test]
    fn an_argument_too_long_for_linux_is_refused_at_its_path_without_echo() {
        let cat = standin_catalog();
        let cmd = cat.find(&["conda", "install"]).expect("install");
        let fits = "v".repeat(ARG_MAX_BYTES - 1);
        let args = serde_json::json!({"packages": [fits.clone()]});
        let argv = compile(&cat, cmd, args.as_object().expect("object")).expect("fits");
        assert!(argv.contains(&fits));
        // As a value of its own it fits; joined to its option (`--copy=…`,
        // nargs='?') it does not.
        let args = serde_json::json!({"packages": ["a"], "copy": fits});
        let e = compile(&cat, cmd, args.as_object().expect("object")).expect_err("too long");
        assert_eq!(e.path, "/copy");
        assert!(e.to_string().contains("MAX_ARG_STRLEN"), "{e}");
        assert!(!e.to_string().contains("vvv"), "{e}");
    }
}
