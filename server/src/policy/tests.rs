//! Unit tests of the resolver and classifier on small hand-built catalogs
//! (shaped like conda's parsers). The table-driven argv cases against the
//! recorded real parser and the argparse oracle live in
//! `tests/tests/library/policy_cases.rs` and `policy_oracle.rs`.

use super::*;
use crate::catalog::{
    ArgKind, Argument, Catalog, Command, ExclusiveGroup, Exposure, Nargs, Passthrough,
};
use serde_json::Value;

fn arg(opts: &[&str], dest: &str, kind: ArgKind, nargs: Nargs) -> Argument {
    let (const_value, default) = match kind {
        ArgKind::StoreTrue => (Value::Bool(true), Value::Bool(false)),
        ArgKind::StoreFalse => (Value::Bool(false), Value::Bool(true)),
        _ => (Value::Null, Value::Null),
    };
    Argument {
        const_value,
        default,
        ..Argument::new(dest, opts, kind, nargs)
    }
}

fn flag(opts: &[&str], dest: &str) -> Argument {
    arg(opts, dest, ArgKind::StoreTrue, Nargs::Exactly(0))
}

fn store(opts: &[&str], dest: &str) -> Argument {
    arg(opts, dest, ArgKind::Store, Nargs::Default)
}

fn help() -> Argument {
    arg(&["-h", "--help"], "help", ArgKind::Help, Nargs::Exactly(0))
}

fn common() -> Vec<Argument> {
    vec![
        help(),
        flag(&["--json"], "json"),
        arg(
            &["-v", "--verbose"],
            "verbosity",
            ArgKind::Count,
            Nargs::Exactly(0),
        ),
        flag(&["-q", "--quiet"], "quiet"),
    ]
}

fn subparsers(dest: &str, required: bool) -> Argument {
    let mut a = arg(&[], dest, ArgKind::Subparsers, Nargs::Parser);
    a.required = required;
    a
}

struct B {
    commands: Vec<Command>,
}

impl B {
    fn add(
        &mut self,
        parent: Option<usize>,
        name: &str,
        aliases: &[&str],
        arguments: Vec<Argument>,
    ) -> usize {
        let mut path = parent.map_or_else(Vec::new, |p| self.commands[p].path.clone());
        path.push(name.to_owned());
        let passthrough = arguments
            .iter()
            .position(|a| a.is_positional() && a.nargs == Nargs::Remainder)
            .map_or(Passthrough::None, |arg| Passthrough::Remainder { arg });
        let idx = self.commands.len();
        self.commands.push(Command {
            path,
            aliases: aliases.iter().map(|s| (*s).to_owned()).collect(),
            parent,
            children: Vec::new(),
            summary: String::new(),
            description: None,
            arguments,
            groups: Vec::new(),
            properties: Vec::new(),
            passthrough,
            allow_abbrev: true,
            exposure: Exposure::Tool,
        });
        if let Some(p) = parent {
            self.commands[p].children.push(idx);
        }
        idx
    }

    fn group(&mut self, cmd: usize, dests: &[&str]) {
        let members = dests
            .iter()
            .map(|d| {
                self.commands[cmd]
                    .arguments
                    .iter()
                    .position(|a| a.dest == *d)
                    .expect("group member")
            })
            .collect();
        self.commands[cmd].groups.push(ExclusiveGroup {
            required: false,
            members,
        });
    }
}

/// A miniature conda: root options, install (with aliases none), remove
/// (alias uninstall), update (alias upgrade), config (with its exclusive
/// groups), export, run (REMAINDER), env → list/create, and a greedy plugin.
fn mini() -> Catalog {
    let mut b = B {
        commands: Vec::new(),
    };
    let root = b.add(
        None,
        "conda",
        &[],
        vec![
            help(),
            arg(
                &["-v", "--verbose"],
                "verbosity",
                ArgKind::Count,
                Nargs::Exactly(0),
            ),
            flag(&["--debug"], "debug"),
            flag(&["--json"], "json"),
            flag(&["--no-plugins"], "no_plugins"),
            arg(
                &["-V", "--version"],
                "version",
                ArgKind::Version,
                Nargs::Exactly(0),
            ),
            subparsers("cmd", true),
        ],
    );
    let solver = |extra: Vec<Argument>| {
        let mut v = common();
        v.extend([
            store(&["-n", "--name"], "name"),
            store(&["-p", "--prefix"], "prefix"),
            arg(
                &["-c", "--channel"],
                "channel",
                ArgKind::Append,
                Nargs::Default,
            ),
            flag(&["--offline"], "offline"),
            flag(&["-d", "--dry-run"], "dry_run"),
            flag(&["-y", "--yes"], "yes"),
            arg(&["-f", "--file"], "file", ArgKind::Append, Nargs::Default),
            flag(&["--force"], "force"),
        ]);
        v.extend(extra);
        v
    };
    let install = b.add(
        Some(root),
        "install",
        &[],
        solver(vec![arg(
            &[],
            "packages",
            ArgKind::Store,
            Nargs::ZeroOrMore,
        )]),
    );
    b.group(install, &["name", "prefix"]);
    b.add(
        Some(root),
        "remove",
        &["uninstall"],
        solver(vec![
            flag(&["--all"], "all"),
            flag(&["--force-remove"], "force_remove"),
            arg(&[], "package_names", ArgKind::Store, Nargs::ZeroOrMore),
        ]),
    );
    b.add(
        Some(root),
        "update",
        &["upgrade"],
        solver(vec![arg(
            &[],
            "packages",
            ArgKind::Store,
            Nargs::ZeroOrMore,
        )]),
    );
    let mut cfg = common();
    cfg.extend([
        flag(&["--system"], "system"),
        store(&["--file"], "file"),
        arg(&["--show"], "show", ArgKind::Store, Nargs::ZeroOrMore),
        flag(&["--show-sources"], "show_sources"),
        flag(&["--validate"], "validate"),
        arg(
            &["--describe"],
            "describe",
            ArgKind::Store,
            Nargs::ZeroOrMore,
        ),
        flag(&["--write-default"], "write_default"),
        arg(&["--get"], "get", ArgKind::Store, Nargs::ZeroOrMore),
        arg(&["--append"], "append", ArgKind::Append, Nargs::Exactly(2)),
        arg(
            &["--prepend", "--add"],
            "prepend",
            ArgKind::Append,
            Nargs::Exactly(2),
        ),
        arg(&["--set"], "set", ArgKind::Append, Nargs::Exactly(2)),
        arg(&["--remove"], "remove", ArgKind::Append, Nargs::Exactly(2)),
        arg(&["--clear"], "clear", ArgKind::Append, Nargs::Default),
        arg(
            &["--remove-key"],
            "remove_key",
            ArgKind::Append,
            Nargs::Default,
        ),
        flag(&["--stdin"], "stdin"),
    ]);
    let config = b.add(Some(root), "config", &[], cfg);
    b.group(
        config,
        &[
            "show",
            "show_sources",
            "validate",
            "describe",
            "write_default",
        ],
    );
    b.group(
        config,
        &[
            "get",
            "append",
            "prepend",
            "set",
            "remove",
            "clear",
            "remove_key",
            "stdin",
        ],
    );
    let mut export = common();
    export.extend([
        store(&["-n", "--name"], "name"),
        store(&["-f", "--file"], "file"),
        flag(&["--no-builds"], "no_builds"),
    ]);
    b.add(Some(root), "export", &[], export);
    let mut list = common();
    list.extend([
        store(&["-n", "--name"], "name"),
        flag(&["-e", "--export"], "export"),
        flag(&["-r", "--revisions"], "revisions"),
        arg(&[], "regex", ArgKind::Store, Nargs::Optional),
    ]);
    b.add(Some(root), "list", &[], list);
    b.add(
        Some(root),
        "run",
        &[],
        vec![
            help(),
            store(&["-n", "--name"], "name"),
            store(&["--cwd"], "cwd"),
            arg(&[], "executable_call", ArgKind::Store, Nargs::Remainder),
        ],
    );
    let env = b.add(
        Some(root),
        "env",
        &[],
        vec![help(), subparsers("cmd", false)],
    );
    let mut envlist = common();
    envlist.push(flag(&["--size"], "size"));
    b.add(Some(env), "list", &[], envlist);
    let mut envcreate = common();
    envcreate.extend([
        store(&["-n", "--name"], "name"),
        arg(&["-f", "--file"], "file", ArgKind::Store, Nargs::ZeroOrMore),
        flag(&["-d", "--dry-run"], "dry_run"),
    ]);
    b.add(Some(env), "create", &[], envcreate);
    let greedy = b.add(Some(root), "greedy", &[], Vec::new());
    b.commands[greedy].passthrough = Passthrough::Greedy;
    // a plugin with two `--se...` options, for the ambiguous prefix
    let mut plug = common();
    plug.extend([flag(&["--select"], "select"), flag(&["--send"], "send")]);
    b.add(Some(root), "plug", &[], plug);
    Catalog {
        conda_version: "0".into(),
        plugins: Vec::new(),
        fingerprint: String::new(),
        commands: b.commands,
        diagnostics: Vec::new(),
        environments: Default::default(),
    }
}

fn argv(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

fn c(cat: &Catalog, s: &str) -> Classification {
    classify(cat, &argv(s))
}

fn cv(cat: &Catalog, v: &[&str]) -> Classification {
    classify(cat, &v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
}

#[test]
fn read_only_and_mutations() {
    let k = mini();
    assert!(c(&k, "list").read_only);
    assert!(c(&k, "env list --size").read_only);
    let i = c(&k, "install numpy");
    assert!(!i.read_only && i.requires_write && !i.requires_exec && i.open_world);
    assert_eq!(i.command, vec!["conda", "install"]);
    assert!(!c(&k, "install --offline numpy").open_world);
}

#[test]
fn dry_run_spellings() {
    let k = mini();
    for s in [
        "install --dry-run x",
        "install --dry x",
        "install --dr x",
        "install -d x",
        "install -dy x",
        "install -yd x",
        "install -yqd x",
        "install x -d",
        "uninstall -d x",
        "upgrade --dry-r",
        "env create --dry -n e",
    ] {
        let cl = c(&k, s);
        assert!(cl.read_only, "{s}: {cl:?}");
        assert_eq!(cl.reason, Reason::DryRun, "{s}");
    }
    // `--dry-run=1` is an explicit value for a flag: argparse rejects it
    let cl = c(&k, "install --dry-run=1 x");
    assert!(matches!(
        cl.outcome,
        Invocation::Rejected(Rejection::IgnoredExplicitArgument)
    ));
    assert!(!cl.read_only);
    // `-d` as the value of `-n` is not a dry run... it is not even a value
    let cl = c(&k, "install -n -d x");
    assert!(matches!(
        cl.outcome,
        Invocation::Rejected(Rejection::ExpectedArgument)
    ));
    // `-nd` is `--name d`, not a dry run
    let cl = c(&k, "install -nd x");
    assert!(!cl.read_only && cl.requires_write);
    // after `--`, `-d` is a package name
    let cl = c(&k, "install -- -d");
    assert!(!cl.read_only);
}

#[test]
fn aliases_resolve_to_the_canonical_command() {
    let k = mini();
    assert_eq!(c(&k, "uninstall x").command, vec!["conda", "remove"]);
    assert_eq!(c(&k, "upgrade x").command, vec!["conda", "update"]);
}

#[test]
fn prefixes_unique_and_ambiguous() {
    let k = mini();
    let cl = c(&k, "config --se k v");
    assert!(cl.requires_write);
    assert_eq!(cl.triggers, vec!["--set"]);
    assert_eq!(cl.outcome, Invocation::Runs);
    let cl = c(&k, "plug --se");
    assert_eq!(cl.outcome, Invocation::Rejected(Rejection::AmbiguousOption));
    assert!(cl.requires_write && !cl.read_only);
    // exact match wins over prefixes
    assert!(c(&k, "config --show").read_only);
    // root-level ambiguity applies to strings after the command too
    // (`--v` could be --verbose or --version in the root parser)
    let cl = c(&k, "list --v");
    assert_eq!(cl.outcome, Invocation::Rejected(Rejection::AmbiguousOption));
}

#[test]
fn config_rules() {
    let k = mini();
    for s in [
        "config --show",
        "config --show channels",
        "config --get channels",
        "config --get --get channels",
        "config --describe",
        "config --validate",
        "config --show-sources",
        "config --file f --show",
    ] {
        assert!(c(&k, s).read_only, "{s}");
    }
    for s in [
        "config",
        "config --get",
        "config --get k --get",
        "config --get=k --get",
        "config --system",
        "config --clear channels",
        "config --stdin",
        "config --add channels x",
        "config --write-default",
        "config --remove-key k",
    ] {
        let cl = c(&k, s);
        assert!(cl.requires_write && !cl.read_only, "{s}");
    }
    // mutually exclusive: argparse rejects, so not read-only
    let cl = c(&k, "config --show --describe");
    assert_eq!(cl.outcome, Invocation::Rejected(Rejection::NotAllowedWith));
    let cl = c(&k, "config --get k --set k v");
    assert_eq!(cl.outcome, Invocation::Rejected(Rejection::NotAllowedWith));
    // --set takes exactly two values
    let cl = c(&k, "config --set k");
    assert_eq!(
        cl.outcome,
        Invocation::Rejected(Rejection::ExpectedArgument)
    );
    let cl = c(&k, "config --set=k v");
    assert_eq!(
        cl.outcome,
        Invocation::Rejected(Rejection::ExpectedArgument)
    );
}

#[test]
fn export_file_spellings() {
    let k = mini();
    assert!(c(&k, "export").read_only);
    for s in [
        "export -f out.yml",
        "export -fout.yml",
        "export -f=out.yml",
        "export --file=out.yml",
        "export --fi out.yml",
        "export -qf out.yml",
    ] {
        let cl = c(&k, s);
        assert!(cl.requires_write, "{s}: {cl:?}");
        assert_eq!(cl.triggers.len(), 1, "{s}");
        assert!(["-f", "--file"].contains(&cl.triggers[0].as_str()), "{s}");
    }
    // -y is not an option of export: rejected, fails closed
    let cl = c(&k, "export -yf out.yml");
    assert!(matches!(cl.outcome, Invocation::Rejected(_)));
    assert!(cl.requires_write);
}

#[test]
fn global_flags_before_the_command() {
    let k = mini();
    assert!(c(&k, "-v --json list").read_only);
    assert!(c(&k, "--no-plugins -vv list").read_only);
    assert!(c(&k, "--json install x").requires_write);
    assert_eq!(
        c(&k, "--bogus list").outcome,
        Invocation::Rejected(Rejection::Unrecognized)
    );
    assert_eq!(
        c(&k, "-- list").outcome,
        Invocation::Rejected(Rejection::UnknownCommand)
    );
}

#[test]
fn double_dash_and_values() {
    let k = mini();
    // the regex of `list` may look like an option after `--`
    let cl = c(&k, "list -- --all");
    assert!(cl.read_only && cl.outcome == Invocation::Runs);
    // a negative-number-looking string is a value
    assert!(c(&k, "list -1").read_only);
    // a string with a space is a positional even when it starts with '-'
    assert!(cv(&k, &["list", "-x y"]).read_only);
    assert_eq!(
        c(&k, "list -x").outcome,
        Invocation::Rejected(Rejection::Unrecognized)
    );
}

#[test]
fn run_and_passthrough() {
    let k = mini();
    let cl = c(&k, "run -n base python -c x");
    assert!(cl.requires_exec && !cl.requires_write && !cl.read_only);
    let cl = c(&k, "run -n base -- python");
    assert!(cl.requires_exec);
    let cl = c(&k, "greedy --anything goes");
    assert!(cl.requires_exec && cl.requires_write);
    assert_eq!(cl.reason, Reason::UnknownCommand);
    let cl = c(&k, "nosuchcommand");
    assert_eq!(cl.outcome, Invocation::Rejected(Rejection::UnknownCommand));
    assert!(cl.requires_exec && cl.requires_write);
}

#[test]
fn help_and_version_are_read_only() {
    let k = mini();
    for s in [
        "",
        "-h",
        "install --help",
        "install -yh",
        "-V",
        "config --set k v -h",
    ] {
        let cl = c(&k, s);
        assert!(cl.read_only, "{s}: {cl:?}");
        assert_eq!(cl.outcome, Invocation::HelpOrVersion, "{s}");
    }
    // an error before the help is consumed wins
    assert!(!c(&k, "config --set k -h").read_only);
}

#[test]
fn unknown_option_in_table_fails_closed() {
    let k = mini();
    // `--force` is an action of the mini `install`, covered as neutral; an
    // action the table does not know about fails closed:
    let mut k2 = k.clone();
    let list = k2.find(&["conda", "list"]).expect("list");
    k2.commands[list]
        .arguments
        .push(flag(&["--frobnicate"], "frobnicate"));
    let cl = c(&k2, "list --frobnicate");
    assert_eq!(cl.reason, Reason::UnknownOption);
    assert!(cl.requires_write);
    assert!(c(&k2, "list").read_only);
}

#[test]
fn policy_check_and_refusal_text() {
    let k = mini();
    let none = Policy::default();
    let w = Policy {
        allow_write: true,
        allow_exec: false,
        approve_writes: false,
        scopes: None,
    };
    let cl = c(&k, "config --set secret-key secret-value");
    let e = none.check(&cl).expect_err("refused");
    assert_eq!(e.to_string(), "conda config --set requires --allow-write");
    assert!(w.check(&cl).is_ok());
    let e = w.check_raw(&cl).expect_err("raw needs exec");
    assert_eq!(e.to_string(), "conda config --set requires --allow-exec");
    let cl = c(&k, "greedy secret");
    let e = none.check(&cl).expect_err("refused");
    let text = e.to_string();
    assert!(text.starts_with("conda greedy requires --allow-write and --allow-exec"));
    assert!(!text.contains("secret"));
    let cl = c(&k, "install --secret-flag");
    let text = none.check(&cl).expect_err("refused").to_string();
    assert!(!text.contains("secret"), "{text}");
    assert!(text.contains("--allow-write"));
}

#[test]
fn approve_writes_lets_mutations_through_only_with_approval() {
    let k = mini();
    let a = Policy {
        approve_writes: true,
        ..Policy::default()
    };
    assert_eq!(a.writes_mode(), WritesMode::ApproveWrites);
    assert_eq!(Policy::default().writes_mode(), WritesMode::Refused);
    let set = c(&k, "config --set secret-key secret-value");
    assert!(a.check(&set).is_ok());
    assert!(a.needs_approval(&set));
    let list = c(&k, "list");
    assert!(a.check(&list).is_ok() && !a.needs_approval(&list));
    // Arbitrary programs still need --allow-exec, and are asked about too.
    let greedy = c(&k, "greedy x");
    let e = a.check(&greedy).expect_err("exec");
    assert_eq!(e.missing, vec!["--allow-exec"]);
    assert!(a.needs_approval(&greedy));
    // Without --approve-writes nothing asks.
    let w = Policy {
        allow_write: true,
        ..Policy::default()
    };
    assert!(!w.needs_approval(&set));
}

#[test]
fn annotations_describe_the_broadest_behaviour() {
    let k = mini();
    let a = annotations(&k, k.find(&["conda", "list"]).expect("list"));
    assert!(a.read_only && a.idempotent && !a.open_world);
    let a = annotations(&k, k.find(&["conda", "config"]).expect("config"));
    assert!(!a.read_only && a.destructive);
    let a = annotations(&k, k.find(&["conda", "install"]).expect("install"));
    assert!(!a.read_only && a.open_world);
    let a = annotations(&k, k.find(&["conda", "greedy"]).expect("greedy"));
    assert!(!a.read_only && a.open_world && a.destructive);
    let a = annotations(&k, k.find(&["conda", "run"]).expect("run"));
    assert!(!a.read_only && a.open_world);
}

#[test]
fn actions_the_catalog_could_not_represent_fail_closed() {
    let mut k = mini();
    let list = k.find(&["conda", "list"]).expect("list");
    let mut odd = flag(&["--odd"], "export");
    odd.class = "plugin.OddAction".into();
    k.commands[list].arguments.push(odd);
    k.diagnostics.push(crate::catalog::Diagnostic {
        command: k.commands[list].path.clone(),
        reason: "custom action takes no value and its effect is unknown".into(),
        action_class: Some("plugin.OddAction".into()),
    });
    // the dest is one the table knows, but the action is doubtful
    let cl = c(&k, "list --odd");
    assert_eq!(cl.reason, Reason::UnknownOption);
    assert!(cl.requires_write && !cl.read_only);
    assert!(c(&k, "list --export").read_only);
}

#[test]
fn scopes_narrow_the_startup_policy_and_never_widen_it() {
    let k = mini();
    let set = c(&k, "config --set secret-key secret-value");
    let greedy = c(&k, "greedy x");
    let list = c(&k, "list");
    let all = Policy {
        allow_write: true,
        allow_exec: true,
        ..Policy::default()
    };
    let none = Some(Scopes::default());
    // Without conda:write: the mutation is refused, naming the scope only.
    let e = all.narrowed(none).check(&set).expect_err("narrowed");
    assert!(e.missing.is_empty());
    assert_eq!(e.missing_scopes, vec![scopes::WRITE]);
    assert_eq!(
        e.to_string(),
        "conda config --set requires scope conda:write"
    );
    let e = all.narrowed(none).check(&greedy).expect_err("narrowed");
    assert!(e.missing_scopes.contains(&scopes::EXEC), "{e}");
    let e = all.narrowed(none).check_raw(&list).expect_err("raw");
    assert_eq!(e.missing_scopes, vec![scopes::EXEC]);
    assert!(all.narrowed(none).check(&list).is_ok());
    // With the scopes: as the startup policy.
    let granted = Some(Scopes {
        read: true,
        write: true,
        exec: true,
    });
    assert!(all.narrowed(granted).check(&set).is_ok());
    assert!(all.narrowed(granted).check(&greedy).is_ok());
    // A scope never widens: a read-only server names its option, not the scope.
    let e = Policy::default()
        .narrowed(granted)
        .check(&set)
        .expect_err("read-only");
    assert_eq!(e.missing, vec!["--allow-write"]);
    assert!(e.missing_scopes.is_empty());
    // --approve-writes is narrowed the same way.
    let approve = Policy {
        approve_writes: true,
        ..Policy::default()
    };
    let e = approve.narrowed(none).check(&set).expect_err("narrowed");
    assert_eq!(e.missing_scopes, vec![scopes::WRITE]);
}
