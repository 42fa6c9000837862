//! The argparse oracle: random argv built from a catalog's vocabulary are
//! classified by the policy and parsed by the stand-in conda's *real*
//! argparse parser (`tests/fixtures/standin/batch_parse.py`, one Python
//! process for all cases).
//!
//! Properties, for every case:
//! * when the classifier says read-only, argparse accepts the argv (or only
//!   prints help/version), and the very same table applied to argparse's
//!   namespace says read-only, with no passthrough (`_args`, REMAINDER) and
//!   no action the table does not know;
//! * when argparse rejects the argv, the classifier did not say read-only;
//! * exactness: the resolver predicts accept / reject / help exactly as
//!   argparse decides, and the same command path.
//!
//! Runs over the in-project stand-in dump and the recorded
//! real conda 26 parser. The number of cases is printed.

use conda_mcp_server::catalog::{self, Catalog, CommandIdx, Nargs};
use conda_mcp_server::dump::Dump;
use conda_mcp_server::policy::{self, Invocation, Reason, table};
use conda_mcp_tests::paths;
use conda_mcp_tests::standin::Oracle;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use serde_json::Value;

/// Cases per dump.
const CASES: u32 = 6000;

/// The words random argv are made of.
struct Vocab {
    /// Ways to spell each command reachable from the root: the tokens after
    /// `conda` (names and aliases), and the command.
    paths: Vec<(Vec<String>, CommandIdx)>,
    /// Per command: its option spellings (exact, prefixes, `=value`,
    /// clusters, attached values) and values.
    words: Vec<Vec<String>>,
    /// Per command: its exact option strings (help excluded) and plain
    /// values.
    exact: Vec<Vec<String>>,
    /// Root option spellings.
    root: Vec<String>,
    /// Words from anywhere (other commands' options, odd strings).
    any: Vec<String>,
}

const VALUES: &[&str] = &[
    "x", "numpy", "base", "-1", "-1.5", "--", "-", "", "a b", "-x y", "k=v", "bash", "yaml",
    "classic", "--bogus", "-Z", "=", "--=x",
];

fn spellings(cat: &Catalog, idx: CommandIdx) -> Vec<String> {
    let cmd = &cat.commands[idx];
    let mut out: Vec<String> = Vec::new();
    let mut shorts: Vec<(String, bool)> = Vec::new(); // (char, takes no value)
    for a in &cmd.arguments {
        let flag = a.nargs == Nargs::Exactly(0);
        for o in &a.option_strings {
            out.push(o.clone());
            if let Some(long) = o.strip_prefix("--") {
                // prefixes of the long option
                for n in [1, 2, 3, long.len().saturating_sub(1)] {
                    if n > 0 && n < long.len() {
                        out.push(format!("--{}", &long[..n]));
                    }
                }
                out.push(format!("{o}=x"));
                out.push(format!("{o}="));
            } else if o.len() == 2 {
                shorts.push((o[1..].to_owned(), flag));
                out.push(format!("{o}x"));
                out.push(format!("{o}=x"));
            }
        }
        if let Some(choices) = &a.choices {
            out.extend(choices.iter().take(3).cloned());
        }
    }
    // clusters of two or three short options
    for (i, (a, _)) in shorts.iter().enumerate() {
        for (j, (b, _)) in shorts.iter().enumerate() {
            if i != j && (i + j) % 3 == 0 {
                out.push(format!("-{a}{b}"));
                if let Some((c, _)) = shorts.get((i + j + 1) % shorts.len()) {
                    out.push(format!("-{a}{b}{c}"));
                }
            }
        }
    }
    out.extend(VALUES.iter().map(|s| (*s).to_owned()));
    for &child in &cmd.children {
        let c = &cat.commands[child];
        out.extend(c.path.last().cloned());
        out.extend(c.aliases.iter().cloned());
    }
    out
}

fn vocab(cat: &Catalog) -> Vocab {
    let mut paths = Vec::new();
    let mut stack: Vec<(Vec<String>, CommandIdx)> = vec![(Vec::new(), 0)];
    while let Some((p, idx)) = stack.pop() {
        paths.push((p.clone(), idx));
        for &child in &cat.commands[idx].children {
            let c = &cat.commands[child];
            for name in c.path.last().into_iter().chain(c.aliases.iter()) {
                let mut q = p.clone();
                q.push(name.clone());
                stack.push((q, child));
            }
        }
    }
    paths.push((vec!["frobnicate".to_owned()], 0));
    let words = (0..cat.commands.len()).map(|i| spellings(cat, i)).collect();
    let exact = (0..cat.commands.len())
        .map(|i| {
            let mut w: Vec<String> = cat.commands[i]
                .arguments
                .iter()
                .filter(|a| a.dest != "help")
                .flat_map(|a| a.option_strings.iter().cloned())
                .collect();
            w.extend(["x", "numpy", "base", "k=v"].map(str::to_owned));
            w
        })
        .collect();
    let root = spellings(cat, 0)
        .into_iter()
        .filter(|s| s.starts_with('-'))
        .collect();
    let mut any: Vec<String> = (0..cat.commands.len())
        .flat_map(|i| cat.commands[i].arguments.iter())
        .flat_map(|a| a.option_strings.iter().cloned())
        .collect();
    any.sort();
    any.dedup();
    Vocab {
        paths,
        words,
        exact,
        root,
        any,
    }
}

/// One action of command `idx`, spelled per `kind`, with values per nargs.
fn structured_words(cat: &Catalog, idx: CommandIdx, kind: u8, n: usize) -> Vec<String> {
    let acts: Vec<&catalog::Argument> = cat.commands[idx]
        .arguments
        .iter()
        .filter(|a| {
            !matches!(
                a.kind,
                catalog::ArgKind::Help | catalog::ArgKind::Version | catalog::ArgKind::Subparsers
            )
        })
        .collect();
    if acts.is_empty() {
        return Vec::new();
    }
    let a = acts[n % acts.len()];
    let value = |k: usize| -> String {
        match &a.choices {
            Some(c) if !c.is_empty() => c[(n + k) % c.len()].clone(),
            _ => ["x", "numpy", "base", "k=v", "1", "-1"][(n + k) % 6].to_owned(),
        }
    };
    let count = match a.nargs {
        Nargs::Default => 1,
        Nargs::Exactly(k) => k as usize,
        Nargs::Optional => n % 2,
        Nargs::ZeroOrMore => n % 3,
        Nargs::OneOrMore => 1 + n % 2,
        Nargs::Remainder | Nargs::Parser => n % 3,
    };
    let mut out = Vec::new();
    let long = a.option_strings.iter().find(|o| o.starts_with("--"));
    let short = a.option_strings.iter().find(|o| !o.starts_with("--"));
    match (kind, long, short) {
        // `--option=value`
        (0, Some(l), _) if count == 1 => return vec![format!("{l}={}", value(0))],
        // a prefix of the long option
        (1, Some(l), _) if l.len() > 4 => out.push(l[..l.len() - 1].to_owned()),
        // `-xVALUE` / `-x=VALUE`
        (2, _, Some(sh)) if count == 1 => return vec![format!("{sh}{}", value(0))],
        (3, _, Some(sh)) if count == 1 => return vec![format!("{sh}={}", value(0))],
        _ => {
            if let Some(o) = a.option_strings.get(n % a.option_strings.len().max(1)) {
                out.push(o.clone());
            }
        }
    }
    out.extend((0..count).map(value));
    out
}

/// What the table says about argparse's own parse.
struct Judged {
    read_only: bool,
    why: String,
}

fn default_of(cat: &Catalog, idx: CommandIdx, dest: &str) -> Option<Value> {
    cat.commands[idx]
        .arguments
        .iter()
        .find(|a| a.dest == dest)
        .map(|a| a.default.clone())
}

/// Applies the table to argparse's namespace: the command from the oracle's
/// path, presence as "differs from the action's default".
fn judge(cat: &Catalog, path: &[String], ns: &serde_json::Map<String, Value>) -> Judged {
    let mut full = vec!["conda"];
    full.extend(path.iter().map(String::as_str));
    let Some(idx) = cat.find(&full) else {
        return Judged {
            read_only: false,
            why: format!("oracle path {path:?} not in the catalog"),
        };
    };
    if ns
        .get("_args")
        .is_some_and(|v| v.as_array().is_some_and(|a| !a.is_empty()) || !v.is_array())
    {
        return Judged {
            read_only: false,
            why: "passthrough `_args`".into(),
        };
    }
    let Some(entry) = table::lookup(cat.commands[idx].subpath()) else {
        return Judged {
            read_only: false,
            why: "command not in the table".into(),
        };
    };
    let present = |d: &str| -> bool {
        let Some(v) = ns.get(d) else { return false };
        match default_of(cat, idx, d) {
            Some(def) => *v != def && !(v.is_null() && def == "==SUPPRESS=="),
            None => false,
        }
    };
    // passthrough of a REMAINDER positional
    for a in &cat.commands[idx].arguments {
        if a.is_positional()
            && matches!(a.nargs, Nargs::Remainder | Nargs::Parser)
            && ns
                .get(&a.dest)
                .and_then(Value::as_array)
                .is_some_and(|v| !v.is_empty())
        {
            return Judged {
                read_only: false,
                why: format!("passthrough `{}`", a.dest),
            };
        }
    }
    // every dest set to a non-default value must be known to the entry
    for a in &cat.commands[idx].arguments {
        if present(&a.dest) && !entry.covers(&a.dest) {
            return Judged {
                read_only: false,
                why: format!("unknown dest {}", a.dest),
            };
        }
    }
    let (verdict, _) = policy::evaluate(entry, |w| match w {
        table::When::Present(d) => present(d),
        table::When::HasValues(d) => ns
            .get(d)
            .and_then(Value::as_array)
            .is_some_and(|v| !v.is_empty()),
    });
    Judged {
        read_only: verdict == table::Verdict::ReadOnly,
        why: format!("{verdict:?}"),
    }
}

#[derive(Default, Debug)]
struct Stats {
    cases: u64,
    read_only: u64,
    rejected: u64,
    help: u64,
    list_choice_divergence: u64,
    /// Divergences whose explicit-list parse was accepted and judged.
    list_choice_checked: u64,
    crashes: u64,
    runs: u64,
    default_valued_unknown: u64,
}

/// Whether `err` is argparse's "invalid choice: [...] (choose from ...)"
/// for a list value each of whose elements is among the choices (the
/// rejection conda's element-wise `_check_value` does not make): the
/// list's first element, or `None`.
fn list_choices_all_valid(err: &str) -> Option<String> {
    let rest = err.split_once("invalid choice: [")?.1;
    let (list, rest) = rest.split_once("] (choose from ")?;
    let choices = rest.trim_end().strip_suffix(')')?;
    let items = |s: &str| -> Vec<String> {
        s.split(", ")
            .map(|i| i.trim().trim_matches('\'').to_owned())
            .filter(|i| !i.is_empty())
            .collect()
    };
    let (list, choices) = (items(list), items(choices));
    let first = list.first()?.clone();
    list.iter().all(|i| choices.contains(i)).then_some(first)
}

/// `TypeError: ...`-style reports of batch_parse.py (not argparse errors).
fn is_exception(err: &str) -> bool {
    err.split_once(": ").is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && name.starts_with(|c: char| c.is_ascii_uppercase())
            && (name.ends_with("Error") || name.ends_with("Exception"))
    })
}

fn run_oracle(name: &str, dump_path: &std::path::Path) -> Stats {
    let bytes = std::fs::read(dump_path).expect("read dump");
    let dump = Dump::from_json(&bytes).expect("dump loads");
    let cat = catalog::build(&dump).expect("catalog builds");
    let v = vocab(&cat);
    let oracle = std::cell::RefCell::new(Oracle::start(dump_path).expect("start the batch oracle"));
    let stats = std::cell::RefCell::new(Stats::default());
    let n_paths = v.paths.len();
    let n_any = v.any.len();
    let n_root = v.root.len();
    let strategy = (
        0..n_paths,
        prop::collection::vec((0..6u8, 0..1000usize), 0..6),
        prop::collection::vec(0..n_root.max(1), 0..3),
        any::<bool>(),
    );
    let mut runner = TestRunner::new(Config {
        cases: CASES,
        failure_persistence: None,
        ..Config::default()
    });
    let result = runner.run(&strategy, |(p, picks, roots, structured)| {
        let (path, idx) = &v.paths[p];
        let mut argv: Vec<String> = roots.iter().filter_map(|&r| v.root.get(r).cloned()).collect();
        argv.extend(path.iter().cloned());
        if structured {
            // well-formed-ish: actions of the command spelled in one of
            // argparse's ways, with the number of values their nargs wants
            for &(kind, n) in &picks {
                argv.extend(structured_words(&cat, *idx, kind, n));
            }
        }
        for (kind, n) in picks.iter().filter(|_| !structured) {
            let word = match kind {
                // mostly the command's own vocabulary
                0..=2 => {
                    let w = &v.words[*idx];
                    w[n % w.len()].clone()
                }
                // its exact option strings and plain values
                3 | 4 => {
                    let w = &v.exact[*idx];
                    w[n % w.len()].clone()
                }
                _ => v.any[n % n_any.max(1)].clone(),
            };
            argv.push(word);
        }
        let c = policy::classify(&cat, &argv);
        // conda's main_subshell runs an empty argv as `--help`
        let py = if argv.is_empty() {
            oracle.borrow_mut().parse(&["--help".to_owned()])
        } else {
            oracle.borrow_mut().parse(&argv)
        }
        .expect("the batch oracle answers");
        let ok = py["ok"].as_bool().unwrap_or(false);
        let err = py["error"].as_str().unwrap_or("");
        let py_help = !ok && err.starts_with("argparse exited with status 0");
        // batch_parse.py reports exceptions other than argparse's error()
        // as "TypeName: message": argparse's help formatter crashing on a
        // positional with a tuple metavar (a CPython bug the in-project
        // dump exercises) and lazy choices that raise when evaluated (the
        // in-project dump records such a choices error, as conda's
        // LazyChoicesAction can). conda dies with a traceback during the
        // parse then: nothing runs, whatever the classification. Counted.
        let py_crash = !ok && !py_help && is_exception(err);
        stats.borrow_mut().cases += 1;
        if py_crash {
            stats.borrow_mut().crashes += 1;
            return Ok(());
        }
        let py_rejected = !ok && !py_help;
        {
            let mut s = stats.borrow_mut();
            s.read_only += u64::from(c.read_only);
            s.rejected += u64::from(py_rejected);
            s.help += u64::from(py_help);
        }
        // The stand-in's parser lacks conda's ArgumentParser._check_value
        // override (conda/cli/conda_argparse.py), which checks list values
        // element-wise: plain argparse rejects a list default such as
        // `init`'s shells (['bash']) that real conda accepts. Such a case is
        // a divergence only when every element of the list is among the
        // choices (what conda's check accepts); it is then counted (the count
        // is bounded by the tests below) and taken as accepted, so the
        // safety property below does not apply. Any other rejection is
        // conda's too and goes on to the property.
        if c.outcome == Invocation::Runs
            && py_rejected
            && let Some(first) = list_choices_all_valid(err)
        {
            stats.borrow_mut().list_choice_divergence += 1;
            // The safety property, on the parse conda makes: the same argv
            // with the list given explicitly (argparse checks an explicit
            // list element-wise) must be read-only where the classifier
            // says so.
            let mut explicit = argv.clone();
            explicit.push(first);
            let again = oracle
                .borrow_mut()
                .parse(&explicit)
                .expect("the batch oracle answers");
            if again["ok"].as_bool() == Some(true) {
                stats.borrow_mut().list_choice_checked += 1;
                let cmd: Vec<String> =
                    serde_json::from_value(again["command"].clone()).unwrap_or_default();
                let ns = again["namespace"].as_object().cloned().unwrap_or_default();
                let j = judge(&cat, &cmd, &ns);
                if c.read_only && !j.read_only {
                    return Err(TestCaseError::fail(format!(
                        "{name}: classifier says read-only for {argv:?} but argparse's parse of {explicit:?}, as conda parses it, is not ({}): {c:?}\n{again}",
                        j.why
                    )));
                }
            }
            return Ok(());
        }
        // the property the policy rests on
        if py_rejected && c.read_only {
            return Err(TestCaseError::fail(format!(
                "{name}: argparse rejects {argv:?} ({err}) but the classifier says read-only: {c:?}"
            )));
        }
        if c.read_only && ok {
            let cmd: Vec<String> = serde_json::from_value(py["command"].clone()).unwrap_or_default();
            let ns = py["namespace"].as_object().cloned().unwrap_or_default();
            let j = judge(&cat, &cmd, &ns);
            if !j.read_only {
                return Err(TestCaseError::fail(format!(
                    "{name}: classifier says read-only for {argv:?} but argparse's parse is not ({}): {c:?}\n{py}",
                    j.why
                )));
            }
        }
        // exactness: accept / reject / help and the command path
        let ours = match c.outcome {
            Invocation::Runs => "runs",
            Invocation::HelpOrVersion => "help",
            Invocation::Rejected(_) => "rejected",
        };
        let theirs = if ok {
            "runs"
        } else if py_help {
            "help"
        } else {
            "rejected"
        };
        if ours != theirs {
            return Err(TestCaseError::fail(format!(
                "{name}: {argv:?}: resolver says {ours} ({:?}), argparse says {theirs} ({err})",
                c.outcome
            )));
        }
        // exactness of the table evaluation: on every argv argparse
        // accepts, the table applied to argparse's namespace agrees with the
        // classifier in both directions
        if ok {
            let cmd: Vec<String> = serde_json::from_value(py["command"].clone()).unwrap_or_default();
            let ns = py["namespace"].as_object().cloned().unwrap_or_default();
            let j = judge(&cat, &cmd, &ns);
            // An action given with its own default value (the in-project
            // `activate base`, whose default is "base") cannot be seen in a
            // namespace; the classifier saw it on the command line and,
            // the table not knowing it, failed closed. Counted, not failed.
            let default_valued_unknown = j.read_only
                && c.reason == Reason::UnknownOption
                && cat
                    .find(&c.command.iter().map(String::as_str).collect::<Vec<_>>())
                    .is_some_and(|idx| {
                        let entry = table::lookup(cat.commands[idx].subpath());
                        cat.commands[idx].arguments.iter().any(|a| {
                            !entry.is_some_and(|e| e.covers(&a.dest))
                                && !a.default.is_null()
                                && ns.get(&a.dest) == Some(&a.default)
                        })
                    });
            if default_valued_unknown {
                stats.borrow_mut().default_valued_unknown += 1;
            } else if j.read_only != c.read_only {
                return Err(TestCaseError::fail(format!(
                    "{name}: {argv:?}: classifier read_only={} but the table on argparse's namespace says {}: {c:?}\n{py}",
                    c.read_only, j.why
                )));
            }
            stats.borrow_mut().runs += 1;
        }
        if ok {
            let mut want = vec!["conda".to_owned()];
            want.extend(
                serde_json::from_value::<Vec<String>>(py["command"].clone()).unwrap_or_default(),
            );
            if c.command != want {
                return Err(TestCaseError::fail(format!(
                    "{name}: {argv:?}: resolver path {:?}, argparse path {want:?}",
                    c.command
                )));
            }
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
    stats.into_inner()
}

#[test]
fn oracle_in_project_dump() {
    let dump = paths::fixtures().join("dumps").join("standin.json");
    let s = run_oracle("in-project dump", &dump);
    eprintln!(
        "policy oracle (in-project dump): {} cases, {} parsed (verdicts compared), {} read-only, {} rejected by argparse, {} help/version, {} list-default choice divergences ({} judged on the explicit list), {} argparse crashes",
        s.cases,
        s.runs,
        s.read_only,
        s.rejected,
        s.help,
        s.list_choice_divergence,
        s.list_choice_checked,
        s.crashes
    );
    assert_eq!(s.cases, u64::from(CASES));
    assert!(s.read_only > 0 && s.rejected > 0, "{s:?}");
    // the in-project dump has no list default among choices
    assert_eq!(s.list_choice_divergence, 0, "{s:?}");
}

#[test]
fn oracle_real_conda_26_dump() {
    let dump = paths::real_dump();
    let s = run_oracle("real conda 26 dump", &dump);
    eprintln!(
        "policy oracle (real conda 26 dump): {} cases, {} parsed (verdicts compared), {} read-only, {} rejected by argparse, {} help/version, {} list-default choice divergences ({} judged on the explicit list), {} argparse crashes",
        s.cases,
        s.runs,
        s.read_only,
        s.rejected,
        s.help,
        s.list_choice_divergence,
        s.list_choice_checked,
        s.crashes
    );
    assert_eq!(s.cases, u64::from(CASES));
    assert!(s.read_only > 0 && s.rejected > 0, "{s:?}"); // `init`'s shells are the one list default among choices: a sliver
    // of the cases (about 45 of 6000), nearly all of them judged on the
    // explicit list
    assert!(
        s.list_choice_divergence <= u64::from(CASES) / 50,
        "more divergences than `init` explains: {s:?}"
    );
    assert!(
        2 * s.list_choice_checked >= s.list_choice_divergence,
        "most divergences must be judged: {s:?}"
    );
}
