//! The `conda_cli_command` helper against the real conda-completion plugin.
//!
//! The plugin (and its msgpack, platformdirs and conda-completer
//! dependencies) is installed with `pip --no-deps` into a stand-in conda
//! prefix, whose `conda` package carries the few shims the plugin's modules
//! import (`conda.exceptions`, `conda.plugins`, `conda.base.context`). The
//! manifest is written through the plugin's own API
//! (`introspect.generate_manifest` over the stand-in's real argparse parser,
//! `manifest.write_manifest`), then the embedded helper reads it with the
//! prefix's interpreter, exactly as conda-mcp runs it (`python -I -c HELPER
//! <request>`). When PyPI cannot be reached the test says so and skips.

use std::path::Path;
use std::process::{Command, Stdio};

use conda_mcp_server::completion::{self, AnswerError, Availability, CompletionAnswer};
use conda_mcp_server::dump::Dump;
use conda_mcp_shared::ExecutionResult;
use conda_mcp_tests::completion::{generate_manifest, install_conda_completion};
use conda_mcp_tests::standin::{StandinPrefix, standin_dump};

fn ask(
    prefix: &StandinPrefix,
    catalog: &conda_mcp_server::catalog::Catalog,
    cache: &Path,
    path: &[&str],
) -> Result<CompletionAnswer, AnswerError> {
    let path: Vec<String> = path.iter().map(|s| s.to_string()).collect();
    let out = Command::new(&prefix.python)
        .args(completion::helper_argv(catalog, &path))
        .env("CONDA_COMPLETION_CACHE_DIR", cache)
        .stdin(Stdio::null())
        .output()
        .expect("run the helper");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let result = ExecutionResult {
        exit_code: out.status.code(),
        stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        ..ExecutionResult::nothing_ran()
    };
    completion::read_answer(&result)
}

#[test]
fn helper_reads_one_command_through_the_plugin_api() {
    let prefix = StandinPrefix::standard();
    let dump = Dump::from_json(&std::fs::read(standin_dump()).expect("read dump")).expect("dump");
    let catalog = conda_mcp_server::catalog::build(&dump).expect("catalog");
    let cache = tempfile::tempdir().expect("cache dir");

    // Before the plugin is installed: not_installed.
    let answer = ask(&prefix, &catalog, cache.path(), &["env", "list"]).expect("answer");
    assert_eq!(answer.availability, Availability::NotInstalled);

    if !install_conda_completion(&prefix) {
        return;
    }

    // Installed, nothing generated yet: not_generated, with the hint.
    let answer = ask(&prefix, &catalog, cache.path(), &["env", "list"]).expect("answer");
    assert_eq!(answer.availability, Availability::NotGenerated);
    assert!(
        answer
            .hint
            .as_deref()
            .unwrap_or("")
            .contains("conda completion generate")
    );
    assert!(
        !cache.path().join("completion.msgpack").exists(),
        "never regenerates"
    );

    generate_manifest(&prefix, cache.path());

    // A nested command.
    let answer = ask(
        &prefix,
        &catalog,
        cache.path(),
        &["env", "config", "vars", "set"],
    )
    .expect("answer");
    assert_eq!(answer.availability, Availability::Available);
    assert_eq!(answer.resolved_path, ["env", "config", "vars", "set"]);
    assert_eq!(answer.alias_target, None);
    let manifest = answer.manifest.expect("manifest metadata");
    assert_eq!(manifest.stale, Some(false));
    assert!(manifest.generated_at.is_some());
    assert!(
        answer
            .conda_completion_version
            .as_deref()
            .is_some_and(|v| v.starts_with("0.3"))
    );

    // An alias resolves to its canonical command.
    let answer = ask(&prefix, &catalog, cache.path(), &["uninstall"]).expect("answer");
    assert_eq!(answer.requested_path, ["uninstall"]);
    assert_eq!(answer.resolved_path, ["remove"]);
    assert_eq!(answer.alias_target, Some(vec!["remove".to_string()]));
    let command = answer.command.expect("command");
    assert!(!command.options.is_empty(), "remove has options");

    // The root lists direct subcommands, aliases marked, never their trees.
    let root = ask(&prefix, &catalog, cache.path(), &[])
        .expect("answer")
        .command
        .expect("root");
    assert_eq!(
        root.subcommands.get("uninstall"),
        Some(&serde_json::json!({"alias_of": "remove"}))
    );
    assert!(root.subcommands.contains_key("env"));
    assert!(
        root.subcommands
            .values()
            .all(|v| v.get("options").is_none())
    );

    // An unknown path is invalid input, named by JSON path, value not echoed.
    let err =
        ask(&prefix, &catalog, cache.path(), &["env", "no-such-command"]).expect_err("unknown");
    let text = err.to_string();
    assert!(matches!(err, AnswerError::UnknownPath(_)));
    assert!(text.contains("/command_path/1"), "{text}");
    assert!(!text.contains("no-such-command"), "{text}");

    // The plugin set changes: the manifest is reported stale.
    prefix
        .add_plugin(&conda_mcp_tests::standin::PluginSpec {
            distribution: "conda-extra".into(),
            version: "1.0".into(),
            name: "conda-extra".into(),
            value: "conda_extra.plugin".into(),
        })
        .expect("add plugin");
    let answer = ask(&prefix, &catalog, cache.path(), &["info"]).expect("answer");
    assert_eq!(answer.manifest.and_then(|m| m.stale), Some(true));
}
