//! Catalog tests on the recorded real conda 26 dump
//! (`tests/fixtures/dumps/conda-26.json`, see [`crate::dump::recorded_conda`]).
//! The in-project stand-in dump is covered by `tests/tests/library/catalog.rs`.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::*;
use crate::catalog::{ArgKind, Catalog, PropertySource, ValueType};
use crate::dump::Dump;

fn real() -> (Dump, Catalog) {
    let dump = crate::dump::recorded_conda();
    let catalog = build(&dump).expect("the real dump builds");
    (dump, catalog)
}

/// Every terminal parser of the dump, as a path.
fn dump_terminals(p: &crate::dump::DumpParser, out: &mut BTreeSet<Vec<String>>) {
    if p.subcommands.is_empty() {
        out.insert(p.path.clone());
    }
    for s in &p.subcommands {
        dump_terminals(&s.parser, out);
    }
}

fn cmd<'a>(c: &'a Catalog, path: &[&str]) -> &'a crate::catalog::Command {
    let idx = c
        .find(path)
        .unwrap_or_else(|| panic!("{path:?} is in the catalog"));
    &c.commands[idx]
}

#[test]
fn real_dump_tools_are_the_terminals_minus_shell_only() {
    let (dump, catalog) = real();
    let mut terminals = BTreeSet::new();
    dump_terminals(&dump.root, &mut terminals);
    let expected: BTreeSet<Vec<String>> = terminals
        .into_iter()
        .filter(|p| !(p.len() == 2 && SHELL_ONLY.contains(&p[1].as_str())))
        .collect();
    let tools_or_raw: BTreeSet<Vec<String>> = catalog
        .commands
        .iter()
        .filter(|c| matches!(c.exposure, Exposure::Tool | Exposure::RawOnly { .. }))
        .map(|c| c.path.clone())
        .collect();
    assert_eq!(tools_or_raw, expected);
    // The project's recording (conda 26.7.1 with conda-completion,
    // conda-rattler-solver and menuinst); another one named by
    // CONDA_MCP_REAL_DUMP has its own counts.
    let recorded = std::env::var_os("CONDA_MCP_REAL_DUMP").is_none();
    if recorded {
        assert_eq!(expected.len(), 35, "37 terminals minus activate/deactivate");
    }
    for c in &catalog.commands {
        if let Exposure::RawOnly { reason } = &c.exposure {
            eprintln!("raw-only: {} — {reason}", c.display_path());
        }
    }
    for d in &catalog.diagnostics {
        eprintln!(
            "diagnostic: {} — {} ({:?})",
            d.command.join(" "),
            d.reason,
            d.action_class
        );
    }
    if recorded {
        assert_eq!(catalog.commands.len(), 43, "every parser of the recording");
    }
    assert_eq!(catalog.root().exposure, Exposure::Root);
    assert!(
        catalog.root().properties.is_empty(),
        "root options are not copied"
    );
    for p in [
        &["conda", "env"][..],
        &["conda", "env", "config"],
        &["conda", "env", "config", "vars"],
        &["conda", "completion"],
        &["conda", "plugins"],
    ] {
        assert_eq!(cmd(&catalog, p).exposure, Exposure::Parent, "{p:?}");
    }
    for p in [&["conda", "activate"][..], &["conda", "deactivate"]] {
        assert_eq!(cmd(&catalog, p).exposure, Exposure::ShellOnly, "{p:?}");
    }
}

#[test]
fn real_dump_has_the_expected_tools() {
    let (dump, catalog) = real();
    let mut wanted: Vec<Vec<&str>> = [
        "env create",
        "env export",
        "env list",
        "env remove",
        "env update",
        "config",
        "create",
        "install",
        "remove",
        "update",
        "run",
        "search",
        "check",
        "doctor",
    ]
    .iter()
    .map(|s| std::iter::once("conda").chain(s.split(' ')).collect())
    .collect();
    for parent in ["completion", "plugins"] {
        let sub = dump
            .root
            .subcommands
            .iter()
            .find(|s| s.name == parent)
            .expect("parent in dump");
        assert!(!sub.parser.subcommands.is_empty());
        for s in &sub.parser.subcommands {
            wanted.push(vec!["conda", parent, s.name.as_str()]);
        }
    }
    for path in &wanted {
        let c = cmd(&catalog, path);
        assert_eq!(c.exposure, Exposure::Tool, "{path:?}");
        assert!(!c.summary.is_empty(), "{path:?} has a summary");
    }
    let root = 0;
    let remove = catalog.child(root, "uninstall").expect("alias uninstall");
    assert_eq!(catalog.commands[remove].path, ["conda", "remove"]);
    assert_eq!(catalog.commands[remove].aliases, ["uninstall"]);
    let update = catalog.child(root, "upgrade").expect("alias upgrade");
    assert_eq!(catalog.commands[update].path, ["conda", "update"]);
}

#[test]
fn real_dump_search_keeps_its_hidden_positional() {
    let (_, catalog) = real();
    let search = cmd(&catalog, &["conda", "search"]);
    let p = search
        .properties
        .iter()
        .find(|p| p.name == "match_spec")
        .expect("match_spec is a property");
    let PropertySource::Action { arg } = p.source else {
        panic!("match_spec is one action")
    };
    let a = &search.arguments[arg];
    assert!(a.hidden && a.is_positional());
    assert_eq!(a.nargs, Nargs::Optional);
    assert!(!p.required);
    // Hidden optionals are not properties.
    assert!(
        !search
            .properties
            .iter()
            .any(|p| p.name == "canonical" || p.name == "debug")
    );
    // The positional comes first.
    assert_eq!(search.properties[0].name, "match_spec");
}

#[test]
fn real_dump_merges_update_modifier_and_names_shared_dests() {
    let (_, catalog) = real();
    let install = cmd(&catalog, &["conda", "install"]);
    let p = install
        .properties
        .iter()
        .find(|p| p.name == "update_modifier")
        .expect("update_modifier property");
    let PropertySource::FlagEnum { choices } = &p.source else {
        panic!("update_modifier is a flag enum")
    };
    let values: Vec<&str> = choices.iter().map(|(v, _)| v.as_str()).collect();
    assert_eq!(
        values,
        [
            "freeze-installed",
            "update-deps",
            "satisfied-skip-solve",
            "update-all",
            "update-specs"
        ]
    );
    let deps = install
        .properties
        .iter()
        .find(|p| p.name == "deps_modifier")
        .expect("deps_modifier");
    assert!(matches!(&deps.source, PropertySource::FlagEnum { choices } if choices.len() == 2));
    let names: BTreeSet<&str> = install.properties.iter().map(|p| p.name.as_str()).collect();
    for n in [
        "strict_channel_priority",
        "no_channel_priority",
        "environment_specifier",
        "format",
        "revision",
        "packages",
    ] {
        assert!(names.contains(n), "install has property {n}: {names:?}");
    }
    assert!(!names.contains("channel_priority"));
    let revision = install
        .properties
        .iter()
        .find(|p| p.name == "revision")
        .expect("revision");
    let PropertySource::Action { arg } = revision.source else {
        panic!()
    };
    assert_eq!(install.arguments[arg].value_type, ValueType::Integer);
    // Unique names everywhere.
    for c in &catalog.commands {
        let mut seen = BTreeSet::new();
        for p in &c.properties {
            assert!(
                seen.insert(&p.name),
                "duplicate property {} in {}",
                p.name,
                c.display_path()
            );
        }
    }
    let init = cmd(&catalog, &["conda", "init"]);
    let names: BTreeSet<&str> = init.properties.iter().map(|p| p.name.as_str()).collect();
    assert!(
        names.contains("user") && names.contains("no_user"),
        "{names:?}"
    );
}

#[test]
fn real_dump_run_passes_the_remainder_through() {
    let (_, catalog) = real();
    let run = cmd(&catalog, &["conda", "run"]);
    let Passthrough::Remainder { arg } = run.passthrough else {
        panic!("run has a REMAINDER positional: {:?}", run.passthrough)
    };
    assert_eq!(run.arguments[arg].dest, "executable_call");
    assert_eq!(run.arguments[arg].nargs, Nargs::Remainder);
    assert!(run.properties.iter().any(|p| p.name == "executable_call"));
    assert_eq!(
        cmd(&catalog, &["conda", "install"]).passthrough,
        Passthrough::None
    );
}

#[test]
fn real_dump_kinds_and_help() {
    let (dump, catalog) = real();
    // LazyChoicesAction (base Action) is a Store with choices.
    let create = cmd(&catalog, &["conda", "create"]);
    let lazy: Vec<_> = create
        .arguments
        .iter()
        .filter(|a| a.class.ends_with("LazyChoicesAction"))
        .collect();
    assert!(!lazy.is_empty());
    assert!(lazy.iter().all(|a| a.kind == ArgKind::Store));
    // NullCountAction is a count.
    let v = create
        .arguments
        .iter()
        .find(|a| a.dest == "verbosity")
        .expect("verbosity");
    assert_eq!(v.kind, ArgKind::Count);
    // config --set KEY VALUE: an append with nargs 2 and a tuple metavar.
    let config = cmd(&catalog, &["conda", "config"]);
    let set = config
        .arguments
        .iter()
        .find(|a| a.dest == "set")
        .expect("--set");
    assert_eq!(set.nargs, Nargs::Exactly(2));
    assert_eq!(
        set.metavar.as_deref(),
        Some(&["KEY".to_owned(), "VALUE".to_owned()][..])
    );
    // No help contains an unexpanded placeholder or a run of whitespace.
    for c in &catalog.commands {
        for a in &c.arguments {
            if let Some(h) = &a.help {
                assert!(!h.contains("%("), "{}: {h}", c.display_path());
                assert!(
                    !h.contains("  ") && !h.contains('\n'),
                    "{}: {h}",
                    c.display_path()
                );
            }
        }
    }
    assert_eq!(
        cmd(&catalog, &["conda", "config"]).summary,
        "Modify configuration values in .condarc."
    );
    assert_eq!(
        catalog.fingerprint,
        crate::catalog::discovery_fingerprint(&dump.conda_version, &catalog.plugins)
    );
    if std::env::var_os("CONDA_MCP_REAL_DUMP").is_none() {
        assert_eq!(dump.conda_version, "26.7.1");
        assert_eq!(
            catalog.plugins.len(),
            3,
            "completion, rattler solver, menuinst"
        );
    }
}

/// A compact, stable text view of the catalog: one line per command, one
/// per property.
fn outline(c: &Catalog) -> String {
    let mut out = String::new();
    for cmd in &c.commands {
        let exposure = match &cmd.exposure {
            Exposure::Tool => "tool".to_owned(),
            Exposure::Root => "root".to_owned(),
            Exposure::Parent => "parent".to_owned(),
            Exposure::ShellOnly => "shell-only".to_owned(),
            Exposure::NestedServer { .. } => "nested server".to_owned(),
            Exposure::RawOnly { reason } => format!("raw-only ({reason})"),
        };
        let aliases = if cmd.aliases.is_empty() {
            String::new()
        } else {
            format!(" aliases={}", cmd.aliases.join(","))
        };
        let _ = writeln!(
            out,
            "{} [{exposure}]{aliases} passthrough={:?}",
            cmd.display_path(),
            cmd.passthrough
        );
        for p in &cmd.properties {
            let what = match &p.source {
                PropertySource::Action { arg } => {
                    let a = &cmd.arguments[*arg];
                    format!(
                        "{:?} {:?} {:?}{}{}",
                        a.kind,
                        a.nargs,
                        a.value_type,
                        if a.hidden { " hidden" } else { "" },
                        a.choices
                            .as_ref()
                            .map(|c| format!(" choices={}", c.join("|")))
                            .unwrap_or_default()
                    )
                }
                PropertySource::FlagEnum { choices } => format!(
                    "flag-enum {}",
                    choices
                        .iter()
                        .map(|(v, _)| v.as_str())
                        .collect::<Vec<_>>()
                        .join("|")
                ),
                PropertySource::GreedyArgs => "greedy-args".to_owned(),
            };
            let _ = writeln!(
                out,
                "    {}{} = {what}",
                p.name,
                if p.required { "*" } else { "" }
            );
        }
    }
    for d in &c.diagnostics {
        let _ = writeln!(out, "diagnostic: {}: {}", d.command.join(" "), d.reason);
    }
    out
}

#[test]
fn real_dump_outline_snapshot() {
    let (_, catalog) = real();
    insta::assert_snapshot!("conda_26_outline", outline(&catalog));
}
