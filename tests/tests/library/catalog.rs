//! The catalog built from the in-project dump (`tests/fixtures/dumps/standin.json`):
//! every case the dump was written to cover lands as docs/reference.md "Generated
//! tools" specifies.

use std::collections::BTreeSet;

use conda_mcp_server::catalog::{
    ArgKind, Catalog, Command, Exposure, Nargs, Passthrough, Property, PropertySource, ValueType,
    build, discovery_fingerprint,
};
use conda_mcp_server::dump::Dump;
use conda_mcp_tests::standin::standin_dump;

fn dump() -> Dump {
    Dump::from_json(&std::fs::read(standin_dump()).expect("read standin.json")).expect("valid dump")
}

fn catalog() -> Catalog {
    build(&dump()).expect("standin.json builds")
}

fn cmd<'a>(c: &'a Catalog, path: &str) -> &'a Command {
    let full: Vec<&str> = std::iter::once("conda")
        .chain(path.split_whitespace())
        .collect();
    let idx = c
        .find(&full)
        .unwrap_or_else(|| panic!("{path} is in the catalog"));
    &c.commands[idx]
}

fn prop<'a>(c: &'a Command, name: &str) -> &'a Property {
    c.properties
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("{} has property {name}: {:?}", c.display_path(), names(c)))
}

fn names(c: &Command) -> Vec<&str> {
    c.properties.iter().map(|p| p.name.as_str()).collect()
}

fn arg<'a>(c: &'a Command, name: &str) -> &'a conda_mcp_server::catalog::Argument {
    match prop(c, name).source {
        PropertySource::Action { arg } => &c.arguments[arg],
        ref other => panic!("{name} is not one action: {other:?}"),
    }
}

#[test]
fn exposure_of_every_command() {
    let c = catalog();
    let tools: BTreeSet<String> = c.tools().map(|(_, c)| c.subpath().join(" ")).collect();
    let expected: BTreeSet<String> = [
        "info",
        "install",
        "update",
        "remove",
        "search",
        "run",
        "tool",
        "config",
        "compare",
        "clean",
        "env create",
        "env list",
        "env config vars list",
        "env config vars set",
        "env config vars unset",
        "plugins list",
        "lint",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(tools, expected);
    assert_eq!(c.root().exposure, Exposure::Root);
    assert!(
        c.root().properties.is_empty(),
        "root options are not copied"
    );
    for p in ["env", "env config", "env config vars", "plugins"] {
        assert_eq!(cmd(&c, p).exposure, Exposure::Parent, "{p}");
        assert!(cmd(&c, p).properties.is_empty());
    }
    for p in ["activate", "deactivate"] {
        assert_eq!(cmd(&c, p).exposure, Exposure::ShellOnly, "{p}");
    }
    // Three levels below the root, parents before children.
    let list = c
        .find(&["conda", "env", "config", "vars", "list"])
        .expect("nested");
    let vars = c.commands[list].parent.expect("parent");
    assert_eq!(c.commands[vars].path, ["conda", "env", "config", "vars"]);
    assert!(vars < list);
    assert!(c.commands[vars].children.contains(&list));
    assert_eq!(c.fingerprint, discovery_fingerprint("26.9.0", &c.plugins));
    assert_eq!(c.plugins.len(), 1);
}

#[test]
fn unrepresentable_action_makes_only_its_command_raw_only() {
    let c = catalog();
    let legacy = cmd(&c, "legacy");
    let Exposure::RawOnly { reason } = &legacy.exposure else {
        panic!("legacy is raw-only: {:?}", legacy.exposure)
    };
    assert!(reason.contains("--purge"), "{reason}");
    let d = c
        .diagnostics
        .iter()
        .find(|d| d.command == ["conda", "legacy"])
        .expect("a diagnostic for legacy");
    assert_eq!(
        d.action_class.as_deref(),
        Some("conda_legacy.actions.PurgeAction")
    );
    // An unknown argparse base makes `clean` raw-only and nothing else.
    let mut dump = dump();
    let clean = dump
        .root
        .subcommands
        .iter_mut()
        .find(|s| s.name == "clean")
        .expect("clean");
    clean.parser.actions[0].argparse_base = "_FancyAction".into();
    clean.parser.actions[0].class = "plugin.FancyAction".into();
    let c2 = build(&dump).expect("builds");
    assert!(matches!(
        cmd(&c2, "clean").exposure,
        Exposure::RawOnly { .. }
    ));
    assert_eq!(
        c2.tools().count(),
        c.tools().count() - 1,
        "only clean changed"
    );
    assert!(
        c2.diagnostics
            .iter()
            .any(|d| d.command == ["conda", "clean"]
                && d.action_class.as_deref() == Some("plugin.FancyAction"))
    );
}

#[test]
fn every_kind_and_nargs_form() {
    let c = catalog();
    let install = cmd(&c, "install");
    assert_eq!(install.exposure, Exposure::Tool);
    let expect = |name: &str, kind: ArgKind, nargs: Nargs| {
        let a = arg(install, name);
        assert_eq!((a.kind, a.nargs), (kind, nargs), "{name}");
    };
    expect("packages", ArgKind::Store, Nargs::ZeroOrMore);
    expect("channel", ArgKind::Append, Nargs::Default);
    expect("solver", ArgKind::Store, Nargs::Default); // LazyChoicesAction: base Action
    expect("extra_specs", ArgKind::Store, Nargs::ZeroOrMore); // ExtendConstAction: base Action
    expect("features", ArgKind::Extend, Nargs::OneOrMore);
    expect("extras", ArgKind::AppendConst, Nargs::Exactly(0));
    expect("pin", ArgKind::Append, Nargs::Exactly(2));
    expect("copy", ArgKind::Store, Nargs::Optional);
    expect("exclude", ArgKind::Store, Nargs::OneOrMore);
    expect(
        "repodata_use_zst",
        ArgKind::BooleanOptional,
        Nargs::Exactly(0),
    );
    expect("verbosity", ArgKind::Count, Nargs::Exactly(0));
    expect("ssl_verify", ArgKind::StoreFalse, Nargs::Exactly(0));
    expect("dry_run", ArgKind::StoreTrue, Nargs::Exactly(0));
    expect(
        "strict_channel_priority",
        ArgKind::StoreConst,
        Nargs::Exactly(0),
    );
    assert_eq!(
        arg(install, "pin").metavar.as_deref(),
        Some(&["NAME".to_owned(), "SPEC".to_owned()][..])
    );
    assert_eq!(arg(install, "copy").const_value, serde_json::json!("all"));
    assert_eq!(
        install
            .arguments
            .iter()
            .find(|a| a.kind == ArgKind::Help)
            .map(|a| a.nargs),
        Some(Nargs::Exactly(0))
    );
    assert!(
        c.root()
            .arguments
            .iter()
            .any(|a| a.kind == ArgKind::Version)
    );
    assert!(
        c.root()
            .arguments
            .iter()
            .any(|a| a.kind == ArgKind::Subparsers && a.nargs == Nargs::Parser)
    );
    // Help, version and subparsers actions are never properties.
    for cmd in &c.commands {
        for p in &cmd.properties {
            if let PropertySource::Action { arg } = p.source {
                assert!(!matches!(
                    cmd.arguments[arg].kind,
                    ArgKind::Help | ArgKind::Version | ArgKind::Subparsers
                ));
            }
        }
    }
    let compare = cmd(&c, "compare");
    assert_eq!(arg(compare, "files").nargs, Nargs::Exactly(2));
    assert!(prop(compare, "files").required);
}

#[test]
fn values_types_choices_and_help() {
    let c = catalog();
    let install = cmd(&c, "install");
    let jobs = arg(install, "jobs");
    assert_eq!(jobs.value_type, ValueType::Integer);
    assert_eq!(
        jobs.choices.as_deref(),
        Some(&["1", "2", "4", "8"].map(String::from)[..])
    );
    assert_eq!(
        jobs.help.as_deref(),
        Some("Parallel downloads (one of 1, 2, 4, 8; default: 1).")
    );
    let backoff = arg(install, "retry_backoff");
    assert_eq!(backoff.value_type, ValueType::Number);
    assert_eq!(
        backoff.help.as_deref(),
        Some("Seconds between retries (default: 0.5).")
    );
    assert_eq!(
        arg(install, "subdir").help.as_deref(),
        Some("Use packages built for this platform (default: linux-64) in conda install.")
    );
    assert_eq!(
        arg(install, "ssl_verify").help.as_deref(),
        Some("Skip SSL certificate verification (100% insecure).")
    );
    assert_eq!(
        arg(install, "extra_specs").help.as_deref(),
        Some("Extra specs; bare flag adds default.")
    );
    assert_eq!(arg(install, "revision").value_type, ValueType::Integer);
    assert_eq!(
        arg(install, "solver").choices.as_deref(),
        Some(&["classic", "rattler"].map(String::from)[..])
    );
    // Lazy choices that raised: no enum, a diagnostic, still a tool.
    let format = arg(install, "environment_specifier");
    assert_eq!(format.choices, None);
    assert!(
        c.diagnostics
            .iter()
            .any(|d| d.command == ["conda", "install"]
                && d.reason.contains("could not be evaluated")
                && d.action_class.as_deref() == Some("conda.cli.helpers.LazyChoicesAction"))
    );
    assert_eq!(
        install.summary,
        "Install a list of packages into a specified conda environment."
    );
    assert_eq!(
        cmd(&c, "env list").summary,
        "An alias for `conda info --envs`. Lists all conda environments."
    );
    // No description: the subcommand's help.
    assert_eq!(
        cmd(&c, "env").summary,
        "Create and manage conda environments."
    );
}

#[test]
fn hidden_arguments() {
    let c = catalog();
    let search = cmd(&c, "search");
    assert_eq!(
        names(search)[0],
        "match_spec",
        "hidden positional kept, first"
    );
    let m = arg(search, "match_spec");
    assert!(m.hidden && m.is_positional() && m.help.is_none());
    assert!(!prop(search, "match_spec").required);
    assert!(
        !names(search).contains(&"canonical"),
        "hidden optional left out"
    );
    assert!(!names(search).contains(&"debug"));
    assert!(
        search
            .arguments
            .iter()
            .any(|a| a.dest == "canonical" && a.hidden)
    );
}

#[test]
fn exclusive_groups_and_shared_dests() {
    let c = catalog();
    let install = cmd(&c, "install");
    let flag_enum = |name: &str| -> Vec<String> {
        match &prop(install, name).source {
            PropertySource::FlagEnum { choices } => {
                choices.iter().map(|(v, _)| v.clone()).collect()
            }
            other => panic!("{name} is a flag enum: {other:?}"),
        }
    };
    assert_eq!(flag_enum("deps_modifier"), ["no-deps", "only-deps"]);
    assert_eq!(
        flag_enum("update_modifier"),
        [
            "freeze-installed",
            "update-deps",
            "satisfied-skip-solve",
            "update-all"
        ]
    );
    let PropertySource::FlagEnum { choices } = &prop(install, "update_modifier").source else {
        unreachable!()
    };
    assert_eq!(
        install.arguments[choices[0].1].option_strings,
        ["--freeze-installed", "--no-update-deps"]
    );
    // Shared dest outside a group: named after the long options.
    assert!(names(install).contains(&"strict_channel_priority"));
    assert!(names(install).contains(&"no_channel_priority"));
    assert!(!names(install).contains(&"channel_priority"));
    // Optional group: members not required.
    assert!(!prop(install, "name").required && !prop(install, "prefix").required);
    let g = install
        .groups
        .iter()
        .find(|g| {
            g.members
                .iter()
                .any(|&m| install.arguments[m].dest == "name")
        })
        .expect("name/prefix group");
    assert!(!g.required);
    assert_eq!(g.members.len(), 2);
    // Required groups.
    let remove = cmd(&c, "remove");
    let g = remove
        .groups
        .iter()
        .find(|g| {
            g.members
                .iter()
                .any(|&m| remove.arguments[m].dest == "name")
        })
        .expect("remove's group");
    assert!(g.required);
    assert!(prop(remove, "package_names").required);
    let config = cmd(&c, "config");
    let g = config
        .groups
        .iter()
        .find(|g| g.required)
        .expect("config's required group");
    let dests: Vec<&str> = g
        .members
        .iter()
        .map(|&m| config.arguments[m].dest.as_str())
        .collect();
    assert_eq!(dests, ["show", "get", "set", "remove_key"]);
    assert_eq!(arg(config, "set").nargs, Nargs::Exactly(2));
    // Positionals first, then optionals, each in declared order.
    assert_eq!(names(install)[0], "packages");
}

#[test]
fn aliases_and_passthrough() {
    let c = catalog();
    let root = 0;
    for (alias, canonical) in [
        ("uninstall", "remove"),
        ("upgrade", "update"),
        ("check-env", "lint"),
    ] {
        let idx = c
            .child(root, alias)
            .unwrap_or_else(|| panic!("alias {alias}"));
        assert_eq!(c.commands[idx].path, ["conda", canonical]);
        assert!(c.commands[idx].aliases.iter().any(|a| a == alias));
    }
    let lint = cmd(&c, "lint");
    assert_eq!(lint.passthrough, Passthrough::Greedy);
    assert_eq!(names(lint), ["args"]);
    assert!(matches!(
        lint.properties[0].source,
        PropertySource::GreedyArgs
    ));
    let run = cmd(&c, "run");
    let Passthrough::Remainder { arg: a } = run.passthrough else {
        panic!("{:?}", run.passthrough)
    };
    assert_eq!(run.arguments[a].dest, "executable_call");
    assert_eq!(run.arguments[a].nargs, Nargs::Remainder);
    let tool = cmd(&c, "tool");
    let Passthrough::Remainder { arg: a } = tool.passthrough else {
        panic!("{:?}", tool.passthrough)
    };
    assert_eq!(tool.arguments[a].nargs, Nargs::Parser);
    assert_eq!(cmd(&c, "install").passthrough, Passthrough::None);
}
