//! Unit tests of schemas and validation on a hand-built catalog (also
//! the compiler's, `crate::compile`)
//! (the round trip through real argparse lives in tests/).

use serde_json::json;

use super::profile::portable_violations;
use super::*;
use crate::catalog::*;

fn arg(dest: &str, opts: &[&str], kind: ArgKind, nargs: Nargs) -> Argument {
    Argument::new(dest, opts, kind, nargs)
}

fn prop(name: &str, arg: usize) -> Property {
    Property {
        name: name.into(),
        source: PropertySource::Action { arg },
        required: false,
        description: format!("{name} help"),
    }
}

/// `conda demo` with one action of most kinds.
pub(crate) fn demo_catalog() -> Catalog {
    let mut count = arg("count", &["--count"], ArgKind::Store, Nargs::Default);
    count.value_type = ValueType::Integer;
    let arguments = vec![
        arg("help", &["-h", "--help"], ArgKind::Help, Nargs::Exactly(0)), // 0
        arg("packages", &[], ArgKind::Store, Nargs::ZeroOrMore),          // 1
        arg("name", &["-n", "--name"], ArgKind::Store, Nargs::Default),   // 2
        arg(
            "prefix",
            &["-p", "--prefix"],
            ArgKind::Store,
            Nargs::Default,
        ), // 3
        count,                                                            // 4
        arg(
            "dry_run",
            &["-d", "--dry-run"],
            ArgKind::StoreTrue,
            Nargs::Exactly(0),
        ), // 5
        arg(
            "shortcuts",
            &["--no-shortcuts"],
            ArgKind::StoreFalse,
            Nargs::Exactly(0),
        ), // 6
        arg(
            "verbose",
            &["-v", "--verbose"],
            ArgKind::Count,
            Nargs::Exactly(0),
        ), // 7
        arg(
            "channel",
            &["-c", "--channel"],
            ArgKind::Append,
            Nargs::Default,
        ), // 8
        arg("opt", &["--opt"], ArgKind::Store, Nargs::Optional),          // 9
        arg(
            "zst",
            &["--zst", "--no-zst"],
            ArgKind::BooleanOptional,
            Nargs::Exactly(0),
        ), // 10
        arg(
            "update_modifier",
            &["--update-all"],
            ArgKind::StoreConst,
            Nargs::Exactly(0),
        ), // 11
        arg(
            "update_modifier",
            &["--freeze-installed"],
            ArgKind::StoreConst,
            Nargs::Exactly(0),
        ), // 12
        arg("pairs", &["--pair"], ArgKind::Append, Nargs::Exactly(2)),    // 13
    ];
    let mut properties = vec![
        prop("packages", 1),
        prop("name", 2),
        prop("prefix", 3),
        prop("count", 4),
        prop("dry_run", 5),
        prop("shortcuts", 6),
        prop("verbose", 7),
        prop("channel", 8),
        prop("opt", 9),
        prop("zst", 10),
        Property {
            name: "update_modifier".into(),
            source: PropertySource::FlagEnum {
                choices: vec![("update-all".into(), 11), ("freeze-installed".into(), 12)],
            },
            required: false,
            description: "How to update.".into(),
        },
        prop("pairs", 13),
    ];
    properties[0].required = false;
    let root = Command {
        path: vec!["conda".into()],
        aliases: vec![],
        parent: None,
        children: vec![1],
        summary: String::new(),
        description: None,
        arguments: vec![],
        groups: vec![],
        properties: vec![],
        passthrough: Passthrough::None,
        allow_abbrev: true,
        exposure: Exposure::Root,
    };
    let demo = Command {
        path: vec!["conda".into(), "demo".into()],
        aliases: vec!["dm".into()],
        parent: Some(0),
        children: vec![],
        summary: "Demo command.".into(),
        description: None,
        arguments,
        groups: vec![
            ExclusiveGroup {
                required: false,
                members: vec![2, 3],
            },
            ExclusiveGroup {
                required: false,
                members: vec![11, 12],
            },
        ],
        properties,
        passthrough: Passthrough::None,
        allow_abbrev: true,
        exposure: Exposure::Tool,
    };
    Catalog {
        conda_version: "0.0".into(),
        plugins: vec![],
        fingerprint: String::new(),
        commands: vec![root, demo],
        diagnostics: vec![],
        environments: Default::default(),
    }
}

#[test]
fn portable_schema_uses_only_allowed_keywords_and_full_adds_groups() {
    let cat = demo_catalog();
    let portable = input_schema(&cat, 1, Profile::Portable);
    assert_eq!(portable_violations(&portable), Vec::<String>::new());
    check_schema_document("demo", &portable).expect("valid 2020-12");
    let full = input_schema(&cat, 1, Profile::Full);
    assert!(!portable_violations(&full).is_empty(), "full adds allOf");
    assert!(full["allOf"].as_array().is_some_and(|a| a.len() == 1));
    assert_eq!(
        portable["properties"]["update_modifier"]["enum"],
        json!(["update-all", "freeze-installed"])
    );
    assert_eq!(
        portable["properties"]["packages"]["items"]["pattern"],
        json!("^[^-]")
    );
}

#[test]
fn validation_names_the_path_and_never_the_value() {
    let cat = demo_catalog();
    let v = ArgumentValidator::new("conda_demo", &input_schema(&cat, 1, Profile::Full))
        .expect("compiles");
    assert!(
        v.validate(&json!({"name": "x", "dry_run": false, "prefix": "/p"}))
            .is_err()
    );
    assert!(v.validate(&json!({"name": "x", "prefix": "/p"})).is_err());
    assert!(v.validate(&json!({"name": "x", "verbose": 0})).is_ok());
    let cases = [
        (json!({"count": "SECRET1"}), "/count"),
        (json!({"pairs": [["a", "-SECRET2"]]}), "/pairs/0/1"),
        (json!({"name": ""}), "/name"),
        (json!({"name": "--"}), "/name"),
        (json!({"packages": ["ok", "--SECRET3"]}), "/packages/1"),
        // An unknown property is named by its path (a name, not a value).
        (json!({"unknown_option": "SECRET4"}), "/unknown_option"),
        (json!({"update_modifier": "SECRET5"}), "/update_modifier"),
        (json!({"pairs": [["a"]]}), "/pairs/0"),
    ];
    for (args, path) in cases {
        let errs = v.validate(&args).expect_err("invalid");
        let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
        let text = text.join("; ");
        assert!(errs.iter().any(|e| e.path == path), "{path}: {text}");
        assert!(!text.contains("SECRET"), "{text}");
    }
}

fn real_catalog() -> Catalog {
    crate::catalog::build(&crate::dump::recorded_conda()).expect("catalog")
}

#[test]
fn every_real_schema_is_valid_portable_and_compiles_to_a_validator() {
    let cat = real_catalog();
    let tools: Vec<_> = cat.tools().collect();
    assert!(tools.len() >= 30, "{}", tools.len());
    let names = tool_names(
        &tools
            .iter()
            .map(|(_, c)| c.subpath().to_vec())
            .collect::<Vec<_>>(),
    );
    for ((idx, cmd), name) in tools.iter().zip(&names) {
        let portable = input_schema(&cat, *idx, Profile::Portable);
        assert_eq!(
            portable_violations(&portable),
            Vec::<String>::new(),
            "{name}"
        );
        check_schema_document(name, &portable).expect("portable is 2020-12");
        let full = input_schema(&cat, *idx, Profile::Full);
        ArgumentValidator::new(name, &full).expect("full compiles");
        let plain = format!("conda_{}", cmd.subpath().join("_"));
        if crate::schema::RESERVED_TOOL_NAMES.contains(&plain.as_str()) {
            // conda's own `conda commands`: not compact mode's tool name.
            assert!(name.starts_with(&format!("{plain}_")), "{name}");
        } else {
            assert_eq!(name, &plain);
        }
    }
}

/// Help is shortened at sentence and clause ends, never inside a phrase or
/// a parenthesis; a sentence without a clause end that fits is kept whole.
#[test]
fn short_help_ends_at_clause_ends() {
    use super::input::{clause_ends, short_help_within};
    // Fits: the whole first sentence, without its period.
    assert_eq!(
        short_help_within("Environment name. Second sentence.", 48),
        "Environment name"
    );
    // Before a parenthetical.
    assert_eq!(
        short_help_within("Shell to uninstall from (auto-detected if omitted).", 30),
        "Shell to uninstall from"
    );
    // Never inside one: the clause before it, or the whole sentence.
    assert_eq!(
        short_help_within("Threads to use when solving (one of 1, 2, 4, 8).", 40),
        "Threads to use when solving"
    );
    assert_eq!(
        short_help_within("Threads (one of 1, 2, 4, 8, 16, 32, 64) to use.", 20),
        "Threads"
    );
    // At ", " before an aside, not in a list and not after an introduction.
    assert_eq!(
        short_help_within("Remove all packages, i.e., the entire environment.", 40),
        "Remove all packages"
    );
    assert_eq!(
        short_help_within(
            "Use cache of channel index files, even if it has expired.",
            40
        ),
        "Use cache of channel index files"
    );
    let list = "Remove index cache, unused cache packages, tarballs, and logfiles.";
    assert_eq!(short_help_within(list, 40), list.trim_end_matches('.'));
    let intro = "When this is set, where implemented, the scripts print debugging information.";
    assert_eq!(short_help_within(intro, 40), intro.trim_end_matches('.'));
    // At "; " and " - ", never inside backquotes.
    assert_eq!(
        short_help_within(
            "create menu items for the given files; if none are given, all.",
            48
        ),
        "create menu items for the given files"
    );
    assert_eq!(
        clause_ends("Use `a -m b; c` in wrapper scripts - here"),
        vec!["Use `a -m b; c` in wrapper scripts".len()]
    );
    // No clause end: kept whole rather than cut at a word.
    let long = "Disable all plugins that are not built into conda and its friends.";
    assert_eq!(short_help_within(long, 30), long.trim_end_matches('.'));
}

/// An option that takes one value gets it joined (`--name=-x`) when it
/// starts with `-`: its string has no pattern; the full schema still
/// refuses the empty value and `--` alone. Positionals and the values of
/// options that take several keep the pattern.
#[test]
fn values_joined_to_their_option_need_no_pattern() {
    let cat = demo_catalog();
    let portable = input_schema(&cat, 1, Profile::Portable);
    let full = input_schema(&cat, 1, Profile::Full);
    let p = &portable["properties"];
    assert_eq!(
        p["name"],
        json!({"type": "string", "description": "Environment name."})
    );
    assert_eq!(p["channel"]["items"], json!({"type": "string"}));
    assert_eq!(p["opt"]["type"], json!("string"));
    assert!(p["opt"].get("pattern").is_none(), "{}", p["opt"]);
    assert_eq!(
        p["packages"]["items"]["pattern"],
        json!(input::NO_LEADING_DASH)
    );
    assert_eq!(
        p["pairs"]["items"]["items"]["pattern"],
        json!(input::NO_LEADING_DASH)
    );
    let f = &full["properties"];
    assert_eq!(f["name"]["minLength"], json!(1));
    assert_eq!(f["name"]["not"], json!({"const": "--"}));
    assert!(
        f["opt"].get("minLength").is_none(),
        "\"\" is the bare --opt"
    );
    let v = ArgumentValidator::new("conda_demo", &full).expect("compiles");
    for ok in [
        json!({"name": "-x"}),
        json!({"channel": ["--all"]}),
        json!({"opt": "-"}),
    ] {
        assert!(v.validate(&ok).is_ok(), "{ok}");
    }
    for (bad, rule) in [
        (json!({"name": "--"}), "'--' alone"),
        (json!({"opt": "--"}), "'--' alone"),
        (json!({"channel": ["--"]}), "'--' alone"),
        (json!({"name": ""}), "must not be empty"),
    ] {
        let errs = v.validate(&bad).expect_err("refused");
        let text: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert!(text.iter().any(|t| t.contains(rule)), "{bad}: {text:?}");
    }
}
