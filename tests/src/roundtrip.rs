//! The round-trip oracle of the argv compiler: the proof that compiled argv
//! mean what the tool arguments say.
//!
//! For every generated tool of a dump: proptest draws valid arguments from
//! the tool's FULL input schema, the server compiles them to argv, and the
//! stand-in conda's real argparse (built from the same dump) parses every
//! argv in ONE batch Python process (`tests/fixtures/standin/batch_parse.py`). Each namespace must equal what the arguments mean:
//!
//! * every dest the arguments touch holds the value argparse's action gives
//!   it (store → the value, store_const → const, count → n, append → the
//!   default list plus the items, ...), computed here from the catalog;
//! * every other dest holds what it holds in the parse of the tool's
//!   minimal call (required arguments only): no stray option leaked in.

use std::collections::BTreeMap;
use std::path::Path;

use conda_mcp_server::catalog::{
    ArgKind, Argument, Catalog, Command, CommandIdx, Nargs, PropertySource, ValueType,
};
use conda_mcp_server::schema::{ArgumentValidator, Profile, input_schema, tool_names};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Map, Value, json};

/// One drawn call.
#[derive(Debug, Clone)]
pub struct Case {
    /// Tool name.
    pub tool: String,
    /// Command index.
    pub cmd: CommandIdx,
    /// The arguments.
    pub args: Map<String, Value>,
    /// The compiled argv.
    pub argv: Vec<String>,
}

/// Outcome of a round trip over one dump.
#[derive(Debug, Default)]
pub struct Report {
    /// Tools covered.
    pub tools: usize,
    /// Cases parsed and compared (minimal calls included).
    pub cases: usize,
    /// Properties left out of the drawing because their lazy choices raise
    /// (conda itself rejects every value of those).
    pub skipped_properties: usize,
    /// Option values that start with `-` passed joined to their option
    /// (`--name=-x`) in the parsed cases: argparse must read each back as
    /// given.
    pub joined_dash_values: usize,
    /// Mismatches, each a readable paragraph.
    pub failures: Vec<String>,
}

/// A strategy for one value of a schema node (the subset of JSON Schema the
/// generator emits).
pub fn value_strategy(schema: &Value) -> BoxedStrategy<Value> {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        return proptest::sample::select(options.clone()).boxed();
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("boolean") => any::<bool>().prop_map(Value::Bool).boxed(),
        Some("integer") => {
            let min = schema.get("minimum").and_then(Value::as_i64);
            match min {
                Some(m) => (m..m + 50).prop_map(|n| json!(n)).boxed(),
                None => (-50i64..500).prop_map(|n| json!(n)).boxed(),
            }
        }
        Some("number") => {
            let min = schema.get("minimum").and_then(Value::as_f64);
            let lo = min.map_or(-400, |m| (m * 4.0) as i64);
            (lo..lo + 4000).prop_map(|n| json!(n as f64 / 4.0)).boxed()
        }
        Some("array") => {
            let items = schema
                .get("items")
                .cloned()
                .unwrap_or(json!({"type": "string"}));
            let min = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0) as usize;
            let max = schema
                .get("maxItems")
                .and_then(Value::as_u64)
                .map_or(min + 3, |m| m as usize);
            let first_no_dash = schema.get("prefixItems").is_some();
            let item = if items.get("pattern").is_none()
                && items.get("enum").is_none()
                && items.get("not").is_none()
                && items.get("type") == Some(&json!("string"))
            {
                free_token().boxed()
            } else {
                value_strategy(&items)
            };
            (proptest::collection::vec(item, min..=max), plain_string())
                .prop_map(move |(mut v, head)| {
                    if first_no_dash && !v.is_empty() {
                        v[0] = Value::String(head);
                    }
                    Value::Array(v)
                })
                .boxed()
        }
        _ => {
            // Strings: the patterns the generator emits are `^[^-]` and
            // `^$|^[^-]`. A string without one may start with `-`, so it
            // is drawn so too: argparse must read it back as given (a value
            // joined to its option, `--opt=value`; its full schema refuses
            // `--` alone with `not` and, unless `""` is its bare form, the
            // empty value with `minLength` 1).
            let pattern = schema.get("pattern").and_then(Value::as_str).unwrap_or("");
            let joined = pattern.is_empty();
            let value = if joined {
                prop_oneof![3 => plain_string(), 2 => dash_string()].boxed()
            } else {
                plain_string().boxed()
            };
            let bare = pattern.starts_with("^$") || (joined && schema.get("minLength").is_none());
            if bare {
                prop_oneof![1 => Just(String::new()), 4 => value]
                    .prop_map(Value::String)
                    .boxed()
            } else {
                value.prop_map(Value::String).boxed()
            }
        }
    }
}

/// A value that does not start with `-`: letters, digits, punctuation conda
/// users type (specs, paths, URLs), spaces and non-ASCII.
fn plain_string() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9_./:=<>*é][a-zA-Z0-9_./:=<>* é,-]{0,10}"
}

/// A value that starts with `-`, as argparse would read an option (`-x`,
/// `--all`, `-1`, `-h`, a lone `-`, `--name=v`), never `--` alone (the
/// full schema refuses it: argparse drops it from an option's values).
fn dash_string() -> impl Strategy<Value = String> {
    "-[a-zA-Z0-9_./:=-]{0,10}".prop_filter("not -- alone", |s| s != "--")
}

/// A passthrough token: may start with `-` (passed unchanged), but never
/// `--` alone nor anything the greedy parser would read as `-h`/`--help`.
fn free_token() -> impl Strategy<Value = Value> {
    "[a-z0-9_./=-][a-z0-9_./=, -]{0,8}"
        .prop_filter("not -- nor help", |s| {
            s != "--" && !s.starts_with("-h") && !s.starts_with("--h")
        })
        .prop_map(Value::String)
}

/// Arguments of one tool: required properties always, the others with
/// probability ½, then exclusive groups repaired with the catalog (at most
/// one member given; one given for required groups).
pub fn args_strategy(
    catalog: &Catalog,
    cmd: CommandIdx,
    schema: &Value,
    skip: &[String],
) -> BoxedStrategy<Map<String, Value>> {
    let mut props = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    props.retain(|k, _| !skip.contains(k));
    let required: Vec<String> = schema["required"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let mut fields: Vec<BoxedStrategy<Option<(String, Value)>>> = Vec::new();
    for (name, sub) in props {
        let v = value_strategy(&sub);
        let n = name.clone();
        if required.contains(&name) {
            fields.push(v.prop_map(move |x| Some((n.clone(), x))).boxed());
        } else {
            fields.push(
                proptest::option::weighted(0.5, v)
                    .prop_map(move |o| o.map(|x| (n.clone(), x)))
                    .boxed(),
            );
        }
    }
    let command = catalog.commands[cmd].clone();
    (fields, any::<u64>())
        .prop_map(move |(pairs, pick)| {
            let mut args: Map<String, Value> = pairs.into_iter().flatten().collect();
            repair_groups(&command, &mut args, pick);
            args
        })
        .boxed()
}

fn group_props(command: &Command) -> Vec<(bool, Vec<usize>)> {
    command
        .groups
        .iter()
        .map(|g| {
            let mut props = Vec::new();
            for &arg in &g.members {
                if let Some(pi) = conda_mcp_server::schema::input::property_of_arg(command, arg)
                    && !props.contains(&pi)
                {
                    props.push(pi);
                }
            }
            (g.required, props)
        })
        .collect()
}

fn is_active(command: &Command, pi: usize, v: &Value) -> bool {
    let prop = &command.properties[pi];
    let PropertySource::Action { arg } = &prop.source else {
        return true;
    };
    let a = &command.arguments[*arg];
    match a.kind {
        ArgKind::StoreTrue | ArgKind::StoreConst => v == &json!(true),
        ArgKind::StoreFalse => v == &json!(false),
        ArgKind::Store if a.nargs == Nargs::Exactly(0) => v == &json!(true),
        ArgKind::Count | ArgKind::AppendConst => v.as_u64().is_some_and(|n| n > 0),
        ArgKind::Append | ArgKind::Extend => v.as_array().is_some_and(|x| !x.is_empty()),
        ArgKind::Store if a.is_positional() && a.nargs == Nargs::ZeroOrMore => {
            v.as_array().is_some_and(|x| !x.is_empty())
        }
        _ => true,
    }
}

fn repair_groups(command: &Command, args: &mut Map<String, Value>, pick: u64) {
    for (required, props) in group_props(command) {
        let active: Vec<usize> = props
            .iter()
            .copied()
            .filter(|&pi| {
                args.get(&command.properties[pi].name)
                    .is_some_and(|v| is_active(command, pi, v))
            })
            .collect();
        if active.len() > 1 {
            let keep = active[(pick as usize) % active.len()];
            for pi in active {
                if pi != keep {
                    args.remove(&command.properties[pi].name);
                }
            }
        } else if active.is_empty() && required && !props.is_empty() {
            let pi = props[(pick as usize) % props.len()];
            let name = command.properties[pi].name.clone();
            let v = activating_value(command, pi);
            args.insert(name, v);
        }
    }
}

fn activating_value(command: &Command, pi: usize) -> Value {
    match &command.properties[pi].source {
        PropertySource::FlagEnum { choices } => json!(choices[0].0),
        PropertySource::GreedyArgs => json!(["x"]),
        PropertySource::Action { arg } => {
            let a = &command.arguments[*arg];
            match a.kind {
                ArgKind::StoreFalse => json!(false),
                ArgKind::Count | ArgKind::AppendConst => json!(1),
                ArgKind::Append => match a.nargs {
                    Nargs::Default | Nargs::Optional => json!(["x"]),
                    Nargs::Exactly(n) => json!([vec!["x"; n as usize]]),
                    _ => json!([["x"]]),
                },
                ArgKind::Extend => json!(["x"]),
                ArgKind::Store if a.nargs == Nargs::Exactly(0) => json!(true),
                ArgKind::Store => match a.nargs {
                    Nargs::Default | Nargs::Optional => json!("x"),
                    _ => json!(["x"]),
                },
                _ => json!(true),
            }
        }
    }
}

/// The minimal call of a tool: required properties only, each with a fixed
/// valid value.
pub fn minimal_args(catalog: &Catalog, cmd: CommandIdx) -> Map<String, Value> {
    let command = &catalog.commands[cmd];
    let mut args = Map::new();
    for (pi, p) in command.properties.iter().enumerate() {
        if p.required {
            args.insert(p.name.clone(), minimal_value(command, pi));
        }
    }
    repair_groups(command, &mut args, 0);
    args
}

fn minimal_value(command: &Command, pi: usize) -> Value {
    if let PropertySource::Action { arg } = &command.properties[pi].source {
        let a = &command.arguments[*arg];
        if let Some(c) = a.choices.as_ref().and_then(|c| c.first()) {
            return match a.nargs {
                Nargs::Default | Nargs::Optional => json!(c),
                Nargs::Exactly(n) => Value::Array(vec![json!(c); n as usize]),
                _ => json!([c]),
            };
        }
        let one = match a.value_type {
            ValueType::String => json!("x"),
            ValueType::Integer => json!(1),
            ValueType::Number => json!(1.5),
        };
        return match (a.kind, a.nargs) {
            (ArgKind::Store, Nargs::Default | Nargs::Optional) => one,
            (ArgKind::Store, Nargs::Exactly(n)) if n > 0 => Value::Array(vec![one; n as usize]),
            (ArgKind::Store, _) => json!([one]),
            _ => activating_value(command, pi),
        };
    }
    activating_value(command, pi)
}

/// A scalar as argparse's `type` converts it.
fn typed(a: &Argument, v: &Value) -> Value {
    match (a.value_type, v) {
        (ValueType::Integer, Value::String(s)) => s.parse::<i64>().map_or(v.clone(), |n| json!(n)),
        (ValueType::Number, Value::String(s)) => s.parse::<f64>().map_or(v.clone(), |n| json!(n)),
        (ValueType::Number, Value::Number(n)) => json!(n.as_f64()),
        _ => v.clone(),
    }
}

fn typed_list(a: &Argument, v: &Value) -> Vec<Value> {
    v.as_array()
        .map(|x| x.iter().map(|i| typed(a, i)).collect())
        .unwrap_or_default()
}

fn prior_list(ns: &Map<String, Value>, dest: &str) -> Vec<Value> {
    ns.get(dest)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Applies one property's value to the expected namespace, as argparse's
/// action would (in argv order).
fn apply(command: &Command, pi: usize, v: &Value, ns: &mut Map<String, Value>) {
    let prop = &command.properties[pi];
    match &prop.source {
        PropertySource::GreedyArgs => {
            ns.insert("_args".into(), v.clone());
        }
        PropertySource::FlagEnum { choices } => {
            if let Some((_, arg)) = choices.iter().find(|(n, _)| Some(n.as_str()) == v.as_str()) {
                let a = &command.arguments[*arg];
                ns.insert(a.dest.clone(), a.const_value.clone());
            }
        }
        PropertySource::Action { arg } => {
            let a = &command.arguments[*arg];
            let dest = a.dest.clone();
            let custom = !a.class.starts_with("argparse.");
            match a.kind {
                ArgKind::StoreTrue | ArgKind::StoreConst => {
                    if v == &json!(true) {
                        ns.insert(dest, a.const_value.clone());
                    }
                }
                ArgKind::StoreFalse => {
                    if v == &json!(false) {
                        ns.insert(dest, json!(false));
                    }
                }
                ArgKind::BooleanOptional => {
                    ns.insert(dest, v.clone());
                }
                ArgKind::Count => {
                    let n = v.as_i64().unwrap_or(0);
                    if n > 0 {
                        let start = match ns.get(&dest) {
                            Some(Value::Number(x)) if !a.class.ends_with("NullCountAction") => {
                                x.as_i64().unwrap_or(0)
                            }
                            _ => 0,
                        };
                        ns.insert(dest, json!(start + n));
                    }
                }
                ArgKind::AppendConst => {
                    let n = v.as_u64().unwrap_or(0);
                    if n > 0 {
                        let mut l = prior_list(ns, &dest);
                        l.extend(std::iter::repeat_n(a.const_value.clone(), n as usize));
                        ns.insert(dest, Value::Array(l));
                    }
                }
                ArgKind::Append => {
                    let items = v.as_array().cloned().unwrap_or_default();
                    if !items.is_empty() {
                        let mut l = prior_list(ns, &dest);
                        for item in &items {
                            l.push(match a.nargs {
                                Nargs::Default => typed(a, item),
                                Nargs::Optional if item == &json!("") => a.const_value.clone(),
                                Nargs::Optional => typed(a, item),
                                _ => Value::Array(typed_list(a, item)),
                            });
                        }
                        ns.insert(dest, Value::Array(l));
                    }
                }
                ArgKind::Extend => {
                    let items = typed_list(a, v);
                    if !items.is_empty() {
                        let mut l = prior_list(ns, &dest);
                        l.extend(items);
                        ns.insert(dest, Value::Array(l));
                    }
                }
                ArgKind::Store => match a.nargs {
                    Nargs::Exactly(0) => {
                        if v == &json!(true) {
                            ns.insert(
                                dest,
                                if custom {
                                    json!([])
                                } else {
                                    a.const_value.clone()
                                },
                            );
                        }
                    }
                    Nargs::Default => {
                        ns.insert(dest, typed(a, v));
                    }
                    Nargs::Optional => {
                        let value = if v == &json!("") && !a.is_positional() {
                            a.const_value.clone()
                        } else {
                            typed(a, v)
                        };
                        ns.insert(dest, value);
                    }
                    Nargs::ZeroOrMore if a.is_positional() => {
                        let l = typed_list(a, v);
                        if !l.is_empty() {
                            ns.insert(dest, Value::Array(l));
                        }
                    }
                    _ if custom && a.class.ends_with("ExtendConstAction") => {
                        let mut l = prior_list(ns, &dest);
                        let vals = typed_list(a, v);
                        if vals.is_empty() {
                            l.push(a.const_value.clone());
                        } else {
                            l.extend(vals);
                        }
                        ns.insert(dest, Value::Array(l));
                    }
                    _ => {
                        ns.insert(dest, Value::Array(typed_list(a, v)));
                    }
                },
                ArgKind::Help | ArgKind::Version | ArgKind::Subparsers => {}
            }
        }
    }
}

/// The dests a property may write.
fn dests_of(command: &Command, pi: usize) -> Vec<String> {
    match &command.properties[pi].source {
        PropertySource::GreedyArgs => vec!["_args".into()],
        PropertySource::FlagEnum { choices } => choices
            .iter()
            .map(|(_, a)| command.arguments[*a].dest.clone())
            .collect(),
        PropertySource::Action { arg } => vec![command.arguments[*arg].dest.clone()],
    }
}

/// The namespace `args` mean, starting from the minimal call's namespace.
pub fn expected_namespace(
    command: &Command,
    args: &Map<String, Value>,
    baseline: &Map<String, Value>,
) -> Map<String, Value> {
    let mut ns = baseline.clone();
    // Dests the minimal call touched are reset to what argparse holds before
    // any action (accumulating kinds would otherwise count twice).
    let mut order: Vec<usize> = (0..command.properties.len()).collect();
    // argv order: positionals first (declared order), then options.
    order.sort_by_key(|&pi| match &command.properties[pi].source {
        PropertySource::Action { arg } if command.arguments[*arg].is_positional() => (0, *arg),
        _ => (1, pi),
    });
    for pi in order {
        if let Some(v) = args.get(&command.properties[pi].name) {
            apply(command, pi, v, &mut ns);
        }
    }
    ns
}

/// Properties of `cmd` whose action's lazy choices raised when the dump
/// was recorded (`{"error": ...}`): argparse raises for every value, with
/// the real conda as with the stand-in.
fn raising_choices(
    dump: &conda_mcp_server::dump::Dump,
    catalog: &Catalog,
    cmd: CommandIdx,
) -> Vec<String> {
    let command = &catalog.commands[cmd];
    let mut parser = &dump.root;
    for name in command.subpath() {
        match parser.subcommands.iter().find(|s| &s.name == name) {
            Some(s) => parser = &s.parser,
            None => return Vec::new(),
        }
    }
    let raising: Vec<&Vec<String>> = parser
        .actions
        .iter()
        .filter(|a| a.choices.as_ref().is_some_and(Value::is_object))
        .map(|a| &a.option_strings)
        .collect();
    command
        .properties
        .iter()
        .filter(|p| match &p.source {
            PropertySource::Action { arg } => {
                raising.contains(&&command.arguments[*arg].option_strings)
            }
            _ => false,
        })
        .map(|p| p.name.clone())
        .collect()
}

/// Parses argv lists with the stand-in's argparse in one Python process
/// ([`crate::standin::batch_parse`]).
///
/// Panics when python3 or the script cannot run (the oracle is required).
pub fn batch_parse(dump: &Path, argvs: &[Vec<String>]) -> Vec<Value> {
    crate::standin::batch_parse(dump, argvs).expect("python3 runs the stand-in's batch_parse.py")
}

fn numbers_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| numbers_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| numbers_equal(v, w)))
        }
        _ => a == b,
    }
}

/// Runs the round trip over `dump_path` with `cases_per_tool` drawn cases
/// per tool (plus each tool's minimal call).
pub fn run(dump_path: &Path, cases_per_tool: u32, seed: u8) -> Report {
    let bytes = std::fs::read(dump_path).expect("dump readable");
    let dump = conda_mcp_server::dump::Dump::from_json(&bytes).expect("dump");
    let catalog = conda_mcp_server::catalog::build(&dump).expect("catalog");
    let tools: Vec<CommandIdx> = catalog.tools().map(|(i, _)| i).collect();
    let names = tool_names(
        &tools
            .iter()
            .map(|&i| catalog.commands[i].subpath().to_vec())
            .collect::<Vec<_>>(),
    );
    let mut report = Report {
        tools: tools.len(),
        ..Report::default()
    };
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases: cases_per_tool,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]),
    );
    let mut minimal: Vec<Case> = Vec::new();
    let mut drawn: Vec<Case> = Vec::new();
    for (&cmd, name) in tools.iter().zip(&names) {
        let full = input_schema(&catalog, cmd, Profile::Full);
        let validator = ArgumentValidator::new(name, &full).expect("full schema compiles");
        let args = minimal_args(&catalog, cmd);
        let argv = conda_mcp_server::compile::compile(&catalog, cmd, &args)
            .expect("minimal call compiles");
        minimal.push(Case {
            tool: name.clone(),
            cmd,
            args,
            argv,
        });
        let skip = raising_choices(&dump, &catalog, cmd);
        report.skipped_properties += skip.len();
        let strategy = args_strategy(&catalog, cmd, &full, &skip);
        for _ in 0..cases_per_tool {
            let args = strategy.new_tree(&mut runner).expect("draw").current();
            if let Err(e) = validator.validate(&Value::Object(args.clone())) {
                report.failures.push(format!(
                    "{name}: drawn arguments {args:?} fail the full schema: {e:?}"
                ));
                continue;
            }
            match conda_mcp_server::compile::compile(&catalog, cmd, &args) {
                Ok(argv) => drawn.push(Case {
                    tool: name.clone(),
                    cmd,
                    args,
                    argv,
                }),
                Err(e) => report.failures.push(format!(
                    "{name}: valid arguments {args:?} do not compile: {e}"
                )),
            }
        }
    }
    let all: Vec<Vec<String>> = minimal
        .iter()
        .chain(&drawn)
        .map(|c| c.argv.clone())
        .collect();
    let answers = batch_parse(dump_path, &all);
    report.cases = all.len();
    report.joined_dash_values = all
        .iter()
        .flatten()
        .filter(|t| {
            t.starts_with("--") && t.split_once('=').is_some_and(|(_, v)| v.starts_with('-'))
        })
        .count();
    let mut baselines: BTreeMap<CommandIdx, Map<String, Value>> = BTreeMap::new();
    for (case, answer) in minimal.iter().zip(&answers) {
        match answer.get("namespace").and_then(Value::as_object) {
            Some(ns) if answer["ok"] == json!(true) => {
                baselines.insert(case.cmd, ns.clone());
            }
            _ => report.failures.push(format!(
                "{}: minimal call {:?} rejected by argparse: {}",
                case.tool, case.argv, answer
            )),
        }
    }
    for (case, answer) in drawn.iter().zip(&answers[minimal.len()..]) {
        let Some(baseline) = baselines.get(&case.cmd) else {
            continue;
        };
        let command = &catalog.commands[case.cmd];
        let Some(ns) = answer
            .get("namespace")
            .and_then(Value::as_object)
            .filter(|_| answer["ok"] == json!(true))
        else {
            report.failures.push(format!(
                "{}: argparse rejected {:?} (arguments {:?}): {}",
                case.tool, case.argv, case.args, answer
            ));
            continue;
        };
        // Dests set by the minimal call start from the dump's default, as
        // in a parse without that member: from there this case's own
        // arguments derive them (never from the parse under test).
        let mut base = baseline.clone();
        let minimal_case = minimal
            .iter()
            .find(|m| m.cmd == case.cmd)
            .map(|m| m.args.clone())
            .unwrap_or_default();
        for pi in 0..command.properties.len() {
            if minimal_case.contains_key(&command.properties[pi].name) {
                for d in dests_of(command, pi) {
                    if ns.contains_key(&d) {
                        let default = dest_default(command, &d);
                        if !case.args.contains_key(&command.properties[pi].name) {
                            base.insert(d, default);
                        } else {
                            base.insert(d.clone(), pre_action_value(command, pi, &default));
                        }
                    }
                }
            }
        }
        let expected = expected_namespace(command, &case.args, &base);
        let mut diffs = Vec::new();
        for (k, v) in ns {
            let e = expected.get(k).unwrap_or(&Value::Null);
            if !numbers_equal(e, v) {
                diffs.push(format!("{k}: expected {e}, argparse gave {v}"));
            }
        }
        if !diffs.is_empty() {
            report.failures.push(format!(
                "{}: argv {:?} from {:?}:\n  {}",
                case.tool,
                case.argv,
                case.args,
                diffs.join("\n  ")
            ));
        }
    }
    report
}

/// The dump's default of `dest`: `action.default` of the first action that
/// stores to it (argparse fills the namespace from the actions in order
/// and keeps the first value), JSON null when none does.
fn dest_default(command: &Command, dest: &str) -> Value {
    command
        .arguments
        .iter()
        .find(|a| a.dest == dest)
        .map_or(Value::Null, |a| a.default.clone())
}

/// What a dest holds before its (accumulating) action runs, for dests the
/// minimal call touched: an empty list for append/extend kinds (the stand-in
/// and argparse start from the default, which the recorded dumps keep
/// empty), 0 for counts, the dump's default (`default`) otherwise.
fn pre_action_value(command: &Command, pi: usize, default: &Value) -> Value {
    match &command.properties[pi].source {
        PropertySource::Action { arg } => match command.arguments[*arg].kind {
            ArgKind::Append | ArgKind::Extend | ArgKind::AppendConst => json!([]),
            ArgKind::Count => json!(0),
            _ => default.clone(),
        },
        _ => default.clone(),
    }
}
