//! The policy on the recorded real conda 26 parser: a table of raw argv
//! cases with their expected classification and the expected outcome under
//! each of the four startup policies, and the coverage of the
//! classification table against every command and action of the recording.
//! The recording is `tests/fixtures/dumps/conda-26.json`
//! ([`conda_mcp_tests::paths::real_dump`]).

use conda_mcp_server::catalog::{self, ArgKind, Catalog, Passthrough};
use conda_mcp_server::dump::{Dump, DumpParser, DumpSubcommand};
use conda_mcp_server::policy::{self, Classification, Invocation, Policy, table};
use conda_mcp_tests::paths::real_dump;

/// The real dump plus one synthetic greedy plugin command (`conda
/// greedy-plugin`, like a plugin that registers no `configure_parser`), so
/// that the case table also covers a plugin whose argv is passed on.
fn real_catalog() -> Catalog {
    real_dump_and_catalog().1
}

fn real_dump_and_catalog() -> (Dump, Catalog) {
    let path = real_dump();
    let bytes = std::fs::read(path).expect("read the real dump");
    let mut dump = Dump::from_json(&bytes).expect("the real dump loads");
    dump.root.subcommands.push(DumpSubcommand {
        name: "greedy-plugin".into(),
        aliases: vec![],
        help: Some("A plugin with its own parser.".into()),
        parser: DumpParser {
            path: vec!["conda".into(), "greedy-plugin".into()],
            prog: "conda greedy-plugin".into(),
            description: None,
            epilog: None,
            greedy: true,
            allow_abbrev: true,
            prefix_chars: "-".into(),
            actions: vec![],
            mutually_exclusive_groups: vec![],
            subcommands: vec![],
        },
    });
    let cat = catalog::build(&dump).expect("the real dump builds");
    (dump, cat)
}

/// What the stand-in conda's real argparse parser (built from the same
/// augmented dump) does with each argv: "runs", "help" or "rejected".
fn argparse_outcomes(dump: &Dump, argvs: &[Vec<String>]) -> Vec<&'static str> {
    let dir = tempfile::tempdir().expect("tempdir");
    let dump_path = dir.path().join("dump.json");
    std::fs::write(&dump_path, serde_json::to_vec(dump).expect("json")).expect("write dump");
    // conda's main_subshell runs an empty argv as `--help`
    let argvs: Vec<Vec<String>> = argvs
        .iter()
        .map(|a| {
            if a.is_empty() {
                vec!["--help".to_owned()]
            } else {
                a.clone()
            }
        })
        .collect();
    conda_mcp_tests::standin::batch_parse(&dump_path, &argvs)
        .expect("the batch oracle answers")
        .iter()
        .map(|v| {
            let err = v["error"].as_str().unwrap_or("");
            if v["ok"].as_bool() == Some(true) {
                "runs"
            } else if err.starts_with("argparse exited with status 0") {
                "help"
            } else if err.contains("invalid choice: [") {
                // the stand-in lacks conda's element-wise _check_value
                "runs"
            } else {
                "rejected"
            }
        })
        .collect()
}

/// Expected classification of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// read-only, closed world
    Ro,
    /// read-only, open world (network)
    RoNet,
    /// help or version output only
    Help,
    /// mutation (needs --allow-write), closed world
    W,
    /// mutation, open world
    WNet,
    /// arbitrary program (needs --allow-exec)
    X,
    /// mutation that also passes argv on (needs both)
    Wx,
    /// argparse rejects it; fails closed as a mutation
    RejW,
    /// argparse rejects it; fails closed as a mutation and exec
    RejWx,
}

use Class::*;

/// `(argv, class, outcome under [no options, --allow-write, --allow-exec,
/// both])`: `A` allowed, `R` refused.
const CASES: &[(&str, Class, &str)] = &[
    // ---- read-only commands
    ("info", Ro, "AAAA"),
    ("info --envs", Ro, "AAAA"),
    ("info -a", Ro, "AAAA"),
    ("info --unsafe-channels", Ro, "AAAA"),
    ("info --offline", Ro, "AAAA"),
    ("list", Ro, "AAAA"),
    ("list -n base", Ro, "AAAA"),
    ("list --revisions", Ro, "AAAA"),
    ("list -e", Ro, "AAAA"),
    ("list --explicit --md5", Ro, "AAAA"),
    ("list ^py", Ro, "AAAA"),
    ("list -- -n", Ro, "AAAA"),
    ("list -1", Ro, "AAAA"),
    ("compare env.yml", Ro, "AAAA"),
    ("compare -n base env.yml", Ro, "AAAA"),
    ("commands", Ro, "AAAA"),
    ("env list", Ro, "AAAA"),
    ("env list --json", Ro, "AAAA"),
    ("env config vars list -n base", Ro, "AAAA"),
    ("plugins list", Ro, "AAAA"),
    ("plugins list --json", Ro, "AAAA"),
    ("completion status", Ro, "AAAA"),
    ("completion --cache-dir /tmp/c status", Ro, "AAAA"),
    ("export", Ro, "AAAA"),
    ("export --json", Ro, "AAAA"),
    ("export -n base --no-builds", Ro, "AAAA"),
    ("export --format yaml", Ro, "AAAA"),
    ("env export -n base", Ro, "AAAA"),
    ("config --show", Ro, "AAAA"),
    ("config --show channels", Ro, "AAAA"),
    ("config --show-sources", Ro, "AAAA"),
    ("config --get channels", Ro, "AAAA"),
    ("config --describe", Ro, "AAAA"),
    ("config --describe channels --file x.yml", Ro, "AAAA"),
    ("config --validate", Ro, "AAAA"),
    ("config --system --get channels", Ro, "AAAA"),
    ("config --file /tmp/x.yml --show", Ro, "AAAA"),
    ("config --env --show", Ro, "AAAA"),
    ("config -n base --get channels", Ro, "AAAA"),
    // --show returns before any write is looked at (main_config.py), and
    // --show and --set are in different exclusive groups
    ("config --show channels --set a b", Ro, "AAAA"),
    ("doctor", Ro, "AAAA"),
    ("doctor --list", Ro, "AAAA"),
    ("doctor --fix --list", Ro, "AAAA"),
    ("doctor --dry-run --fix", Ro, "AAAA"),
    ("check --list", Ro, "AAAA"),
    ("check -d --heal", Ro, "AAAA"),
    ("package --which /bin/python", Ro, "AAAA"),
    ("package --which x --reset", Ro, "AAAA"),
    ("package -u", Ro, "AAAA"),
    ("package --untracked -n base", Ro, "AAAA"),
    ("search numpy", RoNet, "AAAA"),
    ("search --envs numpy", RoNet, "AAAA"),
    ("search -i numpy --offline", Ro, "AAAA"),
    ("notices", RoNet, "AAAA"),
    ("notices -c conda-forge", RoNet, "AAAA"),
    ("env", Ro, "AAAA"),
    ("env config", Ro, "AAAA"),
    ("env config vars", Ro, "AAAA"),
    ("plugins", Ro, "AAAA"),
    ("completion", Ro, "AAAA"),
    ("activate base", Ro, "AAAA"),
    ("deactivate", Ro, "AAAA"),
    // ---- global flags before the command
    ("-v --json list", Ro, "AAAA"),
    ("--no-plugins list", Ro, "AAAA"),
    ("-vv info", Ro, "AAAA"),
    ("--json --debug list", Ro, "AAAA"),
    ("list -v --json", Ro, "AAAA"),
    ("--json install numpy", WNet, "RARA"),
    // ---- dry-run spellings turn mutations read-only
    ("install --dry-run numpy", RoNet, "AAAA"),
    ("install --dry numpy", RoNet, "AAAA"),
    ("install -dy numpy", RoNet, "AAAA"),
    ("install -yd numpy", RoNet, "AAAA"),
    ("install numpy -d", RoNet, "AAAA"),
    ("install x --json -d", RoNet, "AAAA"),
    ("install -d -- x", RoNet, "AAAA"),
    ("install --dry-run --offline numpy", Ro, "AAAA"),
    ("--json install --dry-run x", RoNet, "AAAA"),
    ("create -n x --dry-run python", RoNet, "AAAA"),
    ("create --dry-run -n x", RoNet, "AAAA"),
    ("update -d --all", RoNet, "AAAA"),
    ("remove -n x --dry-run numpy", RoNet, "AAAA"),
    ("uninstall -d numpy", RoNet, "AAAA"),
    ("upgrade --dry-r conda", RoNet, "AAAA"),
    ("rename -n x --dry-run y", Ro, "AAAA"),
    ("clean --all --dry-run", Ro, "AAAA"),
    ("clean -ayd", Ro, "AAAA"),
    ("init --dry-run bash", Ro, "AAAA"),
    ("env create -f env.yml --dry-run", RoNet, "AAAA"),
    ("env remove -n x -d", Ro, "AAAA"),
    ("completion install --dry-run bash", RoNet, "AAAA"),
    ("completion uninstall --dry-run", Ro, "AAAA"),
    ("install -ynfoo -d x", RoNet, "AAAA"),
    // ---- not dry runs
    ("install -n=--dry-run x", WNet, "RARA"),
    ("install --name --dry-run x", RejW, "RARA"),
    ("install -yn -d x", RejW, "RARA"),
    ("install -dn", RejW, "RARA"),
    ("install -- --dry-run", WNet, "RARA"),
    ("install -nd x", WNet, "RARA"),
    ("-dy install x", RejW, "RARA"),
    ("install --dry-run=yes x", RejW, "RARA"),
    ("install -n -d x", RejW, "RARA"),
    ("completion uninstall -d", RejW, "RARA"),
    // ---- mutations
    ("install numpy", WNet, "RARA"),
    ("install -n x -c conda-forge numpy", WNet, "RARA"),
    ("install --name=x numpy", WNet, "RARA"),
    ("install --offline numpy", W, "RARA"),
    ("create -n x python", WNet, "RARA"),
    ("create -n x --clone base", WNet, "RARA"),
    ("update --all", WNet, "RARA"),
    ("upgrade conda", WNet, "RARA"),
    ("remove -n x numpy", WNet, "RARA"),
    ("remove -n=x numpy", WNet, "RARA"),
    ("uninstall numpy", WNet, "RARA"),
    ("remove --offline --all -n x", W, "RARA"),
    ("rename -n x y", W, "RARA"),
    ("clean --all", W, "RARA"),
    ("clean -a", W, "RARA"),
    ("init bash", W, "RARA"),
    ("init --reverse", W, "RARA"),
    ("env create -f env.yml", WNet, "RARA"),
    ("env update -f env.yml", WNet, "RARA"),
    ("env remove -n x", W, "RARA"),
    ("env config vars set A=1", W, "RARA"),
    ("env config vars set -n x A=1", W, "RARA"),
    ("env config vars unset A", W, "RARA"),
    ("completion generate", WNet, "RARA"),
    ("completion generate --no-repodata", W, "RARA"),
    ("completion --cache-dir /tmp/c generate", WNet, "RARA"),
    ("completion refresh", WNet, "RARA"),
    ("completion install bash", WNet, "RARA"),
    ("completion uninstall", W, "RARA"),
    ("completion init bash", W, "RARA"),
    ("config --set channel_priority strict", W, "RARA"),
    ("config --se channel_priority strict", W, "RARA"),
    ("config --add channels x", W, "RARA"),
    ("config --append channels x", W, "RARA"),
    ("config --prepend channels x", W, "RARA"),
    ("config --remove channels x", W, "RARA"),
    ("config --remove-key channels", W, "RARA"),
    ("config --clear channels", W, "RARA"),
    ("config --stdin", W, "RARA"),
    ("config --write-default", W, "RARA"),
    // a bare `conda config`, a bare `--get` and a file selector alone end in
    // rc_config.write() (main_config.py)
    ("config", W, "RARA"),
    ("config --get", W, "RARA"),
    // the last --get wins: `get == []` and the rc file is written
    ("config --get channels --get", W, "RARA"),
    ("config --get --get channels", Ro, "AAAA"),
    ("config --system", W, "RARA"),
    ("export -f env.yml", W, "RARA"),
    ("export -fenv.yml", W, "RARA"),
    ("export --file=env.yml", W, "RARA"),
    ("export -f=env.yml", W, "RARA"),
    ("export -qf env.yml", W, "RARA"),
    ("env export --file out.yml", W, "RARA"),
    ("env export --fi out.yml", W, "RARA"),
    ("doctor --fix", W, "RARA"),
    ("doctor --heal", W, "RARA"),
    ("check --fix -n base", W, "RARA"),
    ("package --reset", W, "RARA"),
    ("package -r", W, "RARA"),
    (
        "package --pkg-name x --pkg-version 1 --pkg-build 0",
        W,
        "RARA",
    ),
    ("package", W, "RARA"),
    ("package --untracked --reset", W, "RARA"),
    // ---- exec
    ("run python -V", X, "RRAA"),
    ("run python --version", X, "RRAA"),
    ("run python --help", X, "RRAA"),
    ("run python --bogus", X, "RRAA"),
    ("run -n base python -c print(1)", X, "RRAA"),
    ("run -- python", X, "RRAA"),
    ("run -n base -- python -c x", X, "RRAA"),
    ("run --cwd /tmp ls", X, "RRAA"),
    ("run -s python", X, "RRAA"),
    ("run", X, "RRAA"),
    ("run -n base", X, "RRAA"),
    // ---- a plugin command that passes its argv on (greedy)
    ("greedy-plugin", Wx, "RRRA"),
    ("greedy-plugin --anything goes -x", Wx, "RRRA"),
    // ---- help and version print and exit
    ("", Help, "AAAA"),
    ("-h", Help, "AAAA"),
    ("--version", Help, "AAAA"),
    ("-V", Help, "AAAA"),
    ("install --help", Help, "AAAA"),
    ("install -yh", Help, "AAAA"),
    ("run --help", Help, "AAAA"),
    ("config --set a b --help", Help, "AAAA"),
    ("--help install", Help, "AAAA"),
    // after `--`, `--help` is a package name
    ("install -- --help", WNet, "RARA"),
    ("install --help=x", RejW, "RARA"),
    // ---- unresolvable: fail closed
    ("frobnicate", RejWx, "RRRA"),
    ("-- install numpy", RejWx, "RRRA"),
    ("--bogus list", RejW, "RARA"),
    ("list --bogus", RejW, "RARA"),
    ("list --json=1", RejW, "RARA"),
    ("install --s numpy", RejW, "RARA"),
    ("config --s", RejW, "RARA"),
    // --v is ambiguous in the root parser (--verbose, --version), which
    // classifies every string of the argv before the command is parsed
    ("install --v", RejWx, "RRRA"),
    ("install -n", RejW, "RARA"),
    ("config --set k", RejW, "RARA"),
    ("config --show --describe", RejW, "RARA"),
    ("config --get k --set k v", RejW, "RARA"),
    ("export -yf env.yml", RejW, "RARA"),
    ("list --console nope", RejW, "RARA"),
    ("run --bogus python", RejWx, "RRRA"),
    ("install --solver nope x", RejW, "RARA"),
];

const POLICIES: [Policy; 4] = [
    Policy {
        allow_write: false,
        allow_exec: false,
        approve_writes: false,
        scopes: None,
    },
    Policy {
        allow_write: true,
        allow_exec: false,
        approve_writes: false,
        scopes: None,
    },
    Policy {
        allow_write: false,
        allow_exec: true,
        approve_writes: false,
        scopes: None,
    },
    Policy {
        allow_write: true,
        allow_exec: true,
        approve_writes: false,
        scopes: None,
    },
];

fn check_class(argv: &str, class: Class, c: &Classification) -> Result<(), String> {
    let rejected = matches!(c.outcome, Invocation::Rejected(_));
    let help = c.outcome == Invocation::HelpOrVersion;
    let got = (
        c.read_only,
        c.open_world,
        c.requires_write,
        c.requires_exec,
        rejected,
        help,
    );
    let want = match class {
        Ro => (true, false, false, false, false, false),
        RoNet => (true, true, false, false, false, false),
        Help => (true, false, false, false, false, true),
        W => (false, false, true, false, false, false),
        WNet => (false, true, true, false, false, false),
        X => (false, true, false, true, false, false),
        Wx => (false, true, true, true, false, false),
        RejW => (false, true, true, false, true, false),
        RejWx => (false, true, true, true, true, false),
    };
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "`conda {argv}`: expected {class:?}, got read_only={} open_world={} write={} exec={} outcome={:?} reason={:?}",
            c.read_only, c.open_world, c.requires_write, c.requires_exec, c.outcome, c.reason
        ))
    }
}

#[test]
fn argv_cases_on_the_real_parser() {
    let (dump, cat) = real_dump_and_catalog();
    assert!(CASES.len() >= 120, "only {} cases", CASES.len());
    let argvs: Vec<Vec<String>> = CASES
        .iter()
        .map(|(line, _, _)| line.split_whitespace().map(str::to_owned).collect())
        .collect();
    // the expectations themselves are checked against real argparse
    let theirs = argparse_outcomes(&dump, &argvs);
    assert_eq!(theirs.len(), CASES.len(), "one answer per case");
    let mut failures = Vec::new();
    for (&(line, class, outcomes), argparse) in CASES.iter().zip(&theirs) {
        let expected = match class {
            Help => "help",
            RejW | RejWx => "rejected",
            _ => "runs",
        };
        if *argparse != expected {
            failures.push(format!(
                "`conda {line}`: the case expects argparse to say {expected}, it says {argparse}"
            ));
        }
        let argv: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        let c = policy::classify(&cat, &argv);
        if let Err(e) = check_class(line, class, &c) {
            failures.push(e);
        }
        for (p, want) in POLICIES.iter().zip(outcomes.chars()) {
            let got = if p.check(&c).is_ok() { 'A' } else { 'R' };
            if got != want {
                failures.push(format!(
                    "`conda {line}` under {p:?}: expected {want}, got {got}"
                ));
            }
            if let Err(refusal) = p.check(&c) {
                let text = refusal.to_string();
                assert!(text.starts_with("conda"), "{text}");
                assert!(text.contains("requires --allow-"), "{text}");
            }
        }
    }
    eprintln!("policy argv cases run: {}", CASES.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn refusals_name_the_command_and_option_and_no_values() {
    let cat = real_catalog();
    let p = Policy::default();
    let refuse = |line: &str| -> String {
        let argv: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        p.check(&policy::classify(&cat, &argv))
            .expect_err(line)
            .to_string()
    };
    assert_eq!(
        refuse("config --se SECRETKEY SECRETVALUE"),
        "conda config --set requires --allow-write"
    );
    assert_eq!(
        refuse("upgrade SECRETPKG"),
        "conda update requires --allow-write"
    );
    assert_eq!(
        refuse("run SECRETPROGRAM"),
        "conda run requires --allow-exec"
    );
    assert_eq!(
        refuse("export --file=SECRETFILE"),
        "conda export --file requires --allow-write"
    );
    for line in [
        "SECRETCOMMAND",
        "install --SECRETOPTION",
        "greedy-plugin SECRET",
        "config --s SECRET",
    ] {
        let text = refuse(line);
        assert!(!text.contains("SECRET"), "{line}: {text}");
        assert!(text.contains("--allow-write"), "{line}: {text}");
    }
}

/// Every run-time rule (`policy::required`) names a command and dests of the
/// recorded conda 26 parser.
#[test]
fn required_option_rules_match_the_recorded_parser() {
    let cat = real_catalog();
    for rule in policy::required::REQUIREMENTS {
        let cmd = cat
            .commands
            .iter()
            .find(|c| c.subpath().join(" ") == rule.path)
            .unwrap_or_else(|| panic!("{}: no such command", rule.path));
        for dest in rule.one_of.iter().chain(rule.unless) {
            assert!(
                cmd.arguments.iter().any(|a| a.dest == *dest),
                "{}: no dest {dest}",
                rule.path
            );
        }
    }
}

#[test]
fn table_covers_the_recorded_parser() {
    let cat = real_catalog();
    let mut missing = Vec::new();
    for cmd in &cat.commands {
        if cmd.passthrough == Passthrough::Greedy {
            continue; // the synthetic plugin: unknown to the table on purpose
        }
        let Some(entry) = table::lookup(cmd.subpath()) else {
            missing.push(format!(
                "command `{}` has no table entry",
                cmd.display_path()
            ));
            continue;
        };
        for a in &cmd.arguments {
            if !entry.covers(&a.dest) {
                missing.push(format!(
                    "`{}`: action {:?} (dest {}) is not covered",
                    cmd.display_path(),
                    a.option_strings,
                    a.dest
                ));
            }
        }
        // a clause reads "an action with this dest was given" as "the dest
        // is set": only actions that set their dest may share it
        for (w, _) in entry.clauses {
            for a in cmd.arguments.iter().filter(|a| a.dest == w.dest()) {
                if matches!(a.kind, ArgKind::StoreFalse | ArgKind::BooleanOptional) {
                    missing.push(format!(
                        "`{}`: action {:?} can unset the clause dest {}",
                        cmd.display_path(),
                        a.option_strings,
                        a.dest
                    ));
                }
            }
        }
        // every dest the entry reasons about exists in the command
        let dests: Vec<&str> = entry
            .clauses
            .iter()
            .map(|(w, _)| w.dest())
            .chain(entry.writes.iter().copied())
            .chain(match entry.open_world {
                table::OpenWorld::UnlessPresent(d) => Some(d),
                _ => None,
            })
            .collect();
        for d in dests {
            if !cmd.arguments.iter().any(|a| a.dest == d) {
                missing.push(format!(
                    "`{}`: the table names dest {d}, which the parser lacks",
                    cmd.display_path()
                ));
            }
        }
    }
    // and no stale entries
    for e in table::TABLE {
        let sub: Vec<String> = e
            .path
            .split(' ')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect();
        if !cat.commands.iter().any(|c| c.subpath() == sub.as_slice()) {
            missing.push(format!("table entry `{}` is not in the parser", e.path));
        }
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}

#[test]
fn annotations_on_the_real_tools() {
    let cat = real_catalog();
    let hint = |path: &[&str]| {
        let mut full = vec!["conda"];
        full.extend_from_slice(path);
        policy::annotations(&cat, cat.find(&full).expect("command"))
    };
    assert!(hint(&["list"]).read_only);
    assert!(hint(&["info"]).idempotent);
    let search = hint(&["search"]);
    assert!(search.read_only && search.open_world);
    assert!(!hint(&["config"]).read_only);
    assert!(!hint(&["export"]).read_only);
    let install = hint(&["install"]);
    assert!(!install.read_only && install.open_world && install.destructive);
    let run = hint(&["run"]);
    assert!(!run.read_only && run.open_world);
    assert!(!hint(&["greedy-plugin"]).read_only);
    // every tool: a read-only hint never coexists with a possible mutation
    for (idx, cmd) in cat.tools() {
        let a = policy::annotations(&cat, idx);
        if a.read_only {
            assert!(!a.destructive, "{}", cmd.display_path());
        }
    }
}
