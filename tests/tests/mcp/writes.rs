//! Writes that never lose data: an existing environment is never replaced
//! by surprise (`replace_existing`, the preview in words), and a success
//! that did not happen is an error (`postcondition_failed`). Black-box,
//! through rmcp's client against the built server and the stand-in conda
//! serving the recorded conda 26 parser (which has `create --file`, `env
//! create`'s `yes` set by default, `--json`): the stand-in creates and
//! removes environments as conda does (`tests/fixtures/standin/conda/cli/environments.py`).

use std::path::{Path, PathBuf};

use conda_mcp_tests::mcp::{Era, Server, result_text};
use conda_mcp_tests::paths;
use conda_mcp_tests::standin::{ControlRule, StandinPrefix};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

const MARKER: &str = "marker.txt";

fn standin() -> StandinPrefix {
    StandinPrefix::create(&paths::real_dump()).expect("stand-in prefix with the conda 26 parser")
}

/// The structured content (the server checks it against the output schema
/// before sending: a result that broke it would be an `internal` error).
fn structured(r: &CallToolResult) -> Value {
    r.structured_content.clone().expect("structuredContent")
}

fn ok(r: &CallToolResult, what: &str) -> Value {
    assert_eq!(r.is_error, Some(false), "{what}: {}", result_text(r));
    structured(r)
}

fn error_code(r: &CallToolResult, what: &str) -> Value {
    assert_eq!(r.is_error, Some(true), "{what}: {}", result_text(r));
    let s = structured(r);
    assert_eq!(s["exit_code"], Value::Null, "{what}: nothing ran: {s}");
    s["error"].clone()
}

/// The package records of the environment at `prefix`.
fn packages(prefix: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(prefix.join("conda-meta"))
        .expect("conda-meta")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    names
}

/// The environment_exists refusal of a call into `prefix` (1 package).
fn assert_exists_refusal(r: &CallToolResult, prefix: &Path, what: &str) {
    let e = error_code(r, what);
    assert_eq!(e["code"], json!("environment_exists"), "{what}: {e}");
    assert_eq!(e["retryable"], json!(false), "{what}: {e}");
    assert_eq!(e["details"]["prefix"], json!(prefix), "{what}: {e}");
    assert_eq!(e["details"]["packages"], json!(1), "{what}: {e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or("")
            .contains("replace_existing: true"),
        "{what}: {e}"
    );
    assert!(prefix.join(MARKER).is_file(), "{what}: the marker is gone");
}

/// The preview of replacing the environment at `prefix` (1 package) by one
/// that links `linked` (`confirmation`: the server made the dry run because
/// the call did not say `yes: true`).
fn assert_preview(r: &CallToolResult, prefix: &Path, linked: &str, confirmation: bool, what: &str) {
    let s = ok(r, what);
    assert_eq!(
        s["confirmation_required"],
        json!(confirmation),
        "{what}: {s}"
    );
    let rep = &s["replaced_environment"];
    assert_eq!(rep["prefix"], json!(prefix), "{what}: {s}");
    assert_eq!(rep["packages"], json!(1), "{what}: {s}");
    assert_eq!(rep["applied"], json!(false), "{what}: {s}");
    assert_eq!(rep["linked"], json!([linked]), "{what}: {s}");
    let planned = PathBuf::from(rep["planned_for"].as_str().expect("planned_for"));
    assert_ne!(planned, prefix, "{what}");
    assert!(!planned.exists(), "{what}: the preview created its prefix");
    // conda ran a dry run against the fresh prefix, not the existing one.
    assert_eq!(s["parsed_json"]["dry_run"], json!(true), "{what}: {s}");
    assert_eq!(
        s["parsed_json"]["actions"]["PREFIX"],
        json!(planned),
        "{what}: {s}"
    );
    let text = result_text(r);
    assert!(
        text.starts_with(&format!(
            "Nothing was changed. Applying this call (replace_existing: true and yes: true) removes the environment at {} with 1 package(s), every file under that prefix included, and creates it anew, linking: {linked}.",
            prefix.display()
        )),
        "{what}: {text}"
    );
    assert!(prefix.join(MARKER).is_file(), "{what}: the marker is gone");
}

/// The applied replacement of the environment at `prefix` by one with
/// `linked` only.
fn assert_replaced(r: &CallToolResult, prefix: &Path, linked: &str, what: &str) {
    let s = ok(r, what);
    assert_eq!(s["confirmation_required"], json!(false), "{what}: {s}");
    let rep = &s["replaced_environment"];
    assert_eq!(rep["applied"], json!(true), "{what}: {s}");
    assert_eq!(rep["prefix"], json!(prefix), "{what}: {s}");
    assert!(rep.get("planned_for").is_none(), "{what}: {s}");
    assert!(
        result_text(r).starts_with("Replaced the environment at "),
        "{what}"
    );
    assert!(!prefix.join(MARKER).exists(), "{what}: the old files stay");
    assert!(prefix.join("conda-meta/history").is_file(), "{what}");
    assert_eq!(packages(prefix), [format!("{linked}-0.0-0.json")], "{what}");
}

/// The sequence every route goes through, given how it calls a create of
/// `packages` with `yes`/`replace_existing`.
async fn never_replaced_by_surprise<F, Fut>(prefix: &Path, call: F, what: &str)
where
    F: Fn(&'static str, bool, bool) -> Fut,
    Fut: std::future::Future<Output = CallToolResult>,
{
    let first = ok(&call("alpha", true, false).await, what);
    assert!(
        first.get("replaced_environment").is_none(),
        "{what}: {first}"
    );
    assert_eq!(packages(prefix), ["alpha-0.0-0.json"], "{what}");
    std::fs::write(prefix.join(MARKER), "keep me").expect("marker");

    let r = call("beta", false, false).await;
    assert_exists_refusal(&r, prefix, &format!("{what}: again without yes"));
    let r = call("beta", true, false).await;
    assert_exists_refusal(&r, prefix, &format!("{what}: again with yes"));
    let r = call("beta", true, true).await;
    assert_replaced(
        &r,
        prefix,
        "beta",
        &format!("{what}: replace_existing and yes"),
    );
}

#[tokio::test]
async fn typed_create_never_replaces_an_existing_environment_by_surprise() {
    let standin = standin();
    let dir = tempfile::tempdir().expect("tmp");
    let prefix = dir.path().join("env");
    let server = Server::start(&standin.conda_exe, &["--allow-write"], Era::Initialize).await;
    let call = |pkg: &'static str, yes: bool, replace: bool| {
        let mut args = json!({"prefix": prefix, "packages": [pkg], "json": true});
        if yes {
            args["yes"] = json!(true);
        }
        if replace {
            args["replace_existing"] = json!(true);
        }
        let server = &server;
        async move { server.call_ok("conda_create", args).await }
    };
    let first = ok(&call("alpha", true, false).await, "create");
    assert_eq!(packages(&prefix), ["alpha-0.0-0.json"]);
    assert!(first.get("replaced_environment").is_none(), "{first}");
    std::fs::write(prefix.join(MARKER), "keep me").expect("marker");

    assert_exists_refusal(&call("beta", false, false).await, &prefix, "without yes");
    assert_exists_refusal(&call("beta", true, false).await, &prefix, "with yes");
    // replace_existing without yes: the preview, in words and as a real plan.
    let r = call("beta", false, true).await;
    assert_preview(&r, &prefix, "beta", true, "replace_existing without yes");
    // An explicit dry run previews the same way.
    let mut args = json!({"prefix": prefix, "packages": ["beta"], "json": true,
                          "dry_run": true, "replace_existing": true});
    let r = server.call_ok("conda_create", args.clone()).await;
    assert_preview(&r, &prefix, "beta", false, "dry_run with replace_existing");
    // Applying without replace_existing stays refused.
    args["yes"] = json!(true);
    args["dry_run"] = json!(false);
    args["replace_existing"] = json!(false);
    assert_exists_refusal(
        &server.call_ok("conda_create", args).await,
        &prefix,
        "applied without replace_existing",
    );
    let r = call("beta", true, true).await;
    assert_replaced(&r, &prefix, "beta", "replace_existing and yes");

    // conda's root prefix (`name: base`) is never replaced, not even with
    // replace_existing.
    let r = server
        .call_ok(
            "conda_create",
            json!({"name": "base", "packages": ["beta"], "json": true, "replace_existing": true}),
        )
        .await;
    let e = error_code(&r, "base");
    assert_eq!(e["code"], json!("environment_exists"), "{e}");
    assert_eq!(e["details"]["root"], json!(true), "{e}");
    assert_eq!(
        std::fs::canonicalize(e["details"]["prefix"].as_str().expect("prefix")).expect("c"),
        std::fs::canonicalize(&standin.prefix).expect("c")
    );
    assert!(
        e["message"]
            .as_str()
            .unwrap_or("")
            .contains("never replaces it"),
        "{e}"
    );

    // The tool says what the server argument does.
    let tools = server.tools().await;
    let create = tools
        .iter()
        .find(|t| t.name == "conda_create")
        .expect("listed");
    let prop = &create.input_schema["properties"]["replace_existing"];
    assert_eq!(prop["type"], json!("boolean"), "{prop}");
    assert!(
        prop["description"]
            .as_str()
            .unwrap_or("")
            .contains("refused")
    );
    server.close().await;
}

#[tokio::test]
async fn env_create_from_a_file_is_guarded_by_the_name_in_the_file() {
    let standin = standin();
    let dir = tempfile::tempdir().expect("tmp");
    let file = dir.path().join("environment.yml");
    std::fs::write(&file, "name: lab\ndependencies:\n  - alpha\n").expect("file");
    // conda puts a named environment in its first envs directory.
    let prefix = standin.prefix.join("envs").join("lab");
    // The file lies outside the home: the server may read it only there.
    let server = Server::start(
        &standin.conda_exe,
        &[
            "--allow-write",
            "--allow-read-path",
            dir.path().to_str().expect("utf-8"),
        ],
        Era::Stateless,
    )
    .await;
    let call = |pkg: &'static str, yes: bool, replace: bool| {
        std::fs::write(&file, format!("name: lab\ndependencies:\n  - {pkg}\n")).expect("file");
        let mut args = json!({"file": [file], "json": true});
        if yes {
            args["yes"] = json!(true);
        }
        if replace {
            args["replace_existing"] = json!(true);
        }
        let server = &server;
        async move { server.call_ok("conda_env_create", args).await }
    };
    never_replaced_by_surprise(&prefix, call, "env create --file").await;
    // The preview of an env create names the environment of the file.
    std::fs::write(prefix.join(MARKER), "keep me").expect("marker");
    let r = call("gamma", false, true).await;
    assert_preview(
        &r,
        &prefix,
        "gamma",
        true,
        "env create: replace_existing without yes",
    );
    server.close().await;
}

#[tokio::test]
async fn compact_conda_call_is_guarded_like_the_typed_tool() {
    let standin = standin();
    let dir = tempfile::tempdir().expect("tmp");
    let prefix = dir.path().join("env");
    let server = Server::start(
        &standin.conda_exe,
        &["--allow-write", "--tool-mode", "compact"],
        Era::Initialize,
    )
    .await;
    let call = |pkg: &'static str, yes: bool, replace: bool| {
        let mut args = json!({"prefix": prefix, "packages": [pkg], "json": true});
        if yes {
            args["yes"] = json!(true);
        }
        if replace {
            args["replace_existing"] = json!(true);
        }
        let server = &server;
        async move {
            server
                .call_ok(
                    "conda_call",
                    json!({"command": "create", "arguments": args}),
                )
                .await
        }
    };
    never_replaced_by_surprise(&prefix, call, "conda_call create").await;
    std::fs::write(prefix.join(MARKER), "keep me").expect("marker");
    let r = call("gamma", false, true).await;
    assert_preview(
        &r,
        &prefix,
        "gamma",
        true,
        "conda_call: replace_existing without yes",
    );
    // conda_describe shows the server argument.
    let d = server
        .call_ok("conda_describe", json!({"command": "create"}))
        .await;
    let d = d.structured_content.expect("answer");
    assert_eq!(
        d["input_schema"]["properties"]["replace_existing"]["type"],
        json!("boolean"),
        "{d}"
    );
    server.close().await;
}

#[tokio::test]
async fn raw_conda_execute_is_guarded_and_applies_only_with_replace_existing() {
    let standin = standin();
    let dir = tempfile::tempdir().expect("tmp");
    let prefix = dir.path().join("env");
    let p = prefix.display().to_string();
    let server = Server::start(
        &standin.conda_exe,
        &["--allow-write", "--allow-exec"],
        Era::Initialize,
    )
    .await;
    let call = |pkg: &'static str, yes: bool, replace: bool| {
        // `--name=`/`-p` spellings resolve like argparse does.
        let mut argv = vec![
            "create".to_owned(),
            format!("--prefix={p}"),
            pkg.to_owned(),
            "--json".to_owned(),
        ];
        if yes {
            argv.push("-y".to_owned());
        }
        let mut args = json!({"argv": argv});
        if replace {
            args["replace_existing"] = json!(true);
        }
        let server = &server;
        async move { server.call_ok("conda_execute", args).await }
    };
    never_replaced_by_surprise(&prefix, call, "conda_execute create").await;
    // A raw dry run cannot preview a replacement (conda refuses it, and
    // conda_execute runs its argv unchanged): the typed tool does.
    std::fs::write(prefix.join(MARKER), "keep me").expect("marker");
    let r = server
        .call_ok(
            "conda_execute",
            json!({"argv": ["create", "-p", p, "gamma", "--dry-run", "--json"], "replace_existing": true}),
        )
        .await;
    let e = error_code(&r, "raw dry run with replace_existing");
    assert_eq!(e["code"], json!("invalid_arguments"), "{e}");
    assert_eq!(
        e["details"]["errors"][0]["path"],
        json!("/replace_existing"),
        "{e}"
    );
    assert!(prefix.join(MARKER).is_file());
    // A relative prefix is resolved in the call's working directory.
    let r = server
        .call_ok(
            "conda_execute",
            json!({"argv": ["create", "-p", "env", "gamma", "--json"], "cwd": dir.path()}),
        )
        .await;
    assert_exists_refusal(&r, &prefix, "relative prefix");
    server.close().await;
}

#[tokio::test]
async fn a_read_only_server_previews_a_replacement_and_refuses_to_apply_it() {
    let standin = standin();
    let dir = tempfile::tempdir().expect("tmp");
    let prefix = dir.path().join("env");
    // An environment made by hand: conda-meta with its history and one record.
    std::fs::create_dir_all(prefix.join("conda-meta")).expect("mkdir");
    std::fs::write(prefix.join("conda-meta/history"), "").expect("history");
    std::fs::write(prefix.join("conda-meta/alpha-0.0-0.json"), "{}").expect("record");
    std::fs::write(prefix.join(MARKER), "keep me").expect("marker");
    let server = Server::start(&standin.conda_exe, &[], Era::Initialize).await;
    let args =
        json!({"prefix": prefix, "packages": ["beta"], "json": true, "replace_existing": true});
    let r = server.call_ok("conda_create", args.clone()).await;
    assert_preview(&r, &prefix, "beta", true, "read-only preview");
    let mut apply = args;
    apply["yes"] = json!(true);
    let r = server.call_ok("conda_create", apply).await;
    let e = error_code(&r, "read-only apply");
    assert_eq!(e["code"], json!("refused"), "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or("")
            .contains("--allow-write"),
        "{e}"
    );
    assert!(prefix.join(MARKER).is_file());
    assert_eq!(packages(&prefix), ["alpha-0.0-0.json"]);
    server.close().await;
}

#[tokio::test]
async fn a_create_that_exits_0_without_creating_is_postcondition_failed() {
    let standin = standin();
    standin
        .set_control(&[ControlRule {
            skip_create: Some(true),
            ..ControlRule::for_commands(&["create"])
        }])
        .expect("control");
    let dir = tempfile::tempdir().expect("tmp");
    let prefix = dir.path().join("env");
    let server = Server::start(&standin.conda_exe, &["--allow-write"], Era::Initialize).await;
    let r = server
        .call_ok(
            "conda_create",
            json!({"prefix": prefix, "packages": ["alpha"], "json": true, "yes": true}),
        )
        .await;
    assert_eq!(r.is_error, Some(true), "{}", result_text(&r));
    let s = structured(&r);
    assert_eq!(s["exit_code"], json!(0), "{s}");
    assert_eq!(s["parsed_json"]["success"], json!(true), "{s}");
    let e = &s["error"];
    assert_eq!(e["code"], json!("postcondition_failed"), "{s}");
    assert_eq!(e["retryable"], json!(false), "{s}");
    assert_eq!(e["details"]["check"], json!("created"), "{s}");
    assert_eq!(e["details"]["prefix"], json!(prefix), "{s}");
    assert!(
        result_text(&r).contains("error postcondition_failed"),
        "{}",
        result_text(&r)
    );
    assert!(!prefix.exists());

    // A create that did happen, and a remove --all that did, are successes.
    standin.clear_control().expect("control");
    let r = server
        .call_ok(
            "conda_create",
            json!({"prefix": prefix, "packages": ["alpha"], "json": true, "yes": true}),
        )
        .await;
    ok(&r, "create");
    let r = server
        .call_ok(
            "conda_remove",
            json!({"prefix": prefix, "all": true, "json": true, "yes": true}),
        )
        .await;
    ok(&r, "remove --all");
    assert!(!prefix.exists());

    // conda's JSON saying success: false with exit 0 is not a success.
    standin
        .set_control(&[ControlRule {
            stdout_text: Some("{\"success\": false, \"message\": \"nothing\"}\n".into()),
            ..ControlRule::for_commands(&["install"])
        }])
        .expect("control");
    let r = server
        .call_ok(
            "conda_install",
            json!({"prefix": dir.path(), "packages": ["alpha"], "json": true, "yes": true}),
        )
        .await;
    assert_eq!(r.is_error, Some(true), "{}", result_text(&r));
    let s = structured(&r);
    assert_eq!(s["error"]["code"], json!("postcondition_failed"), "{s}");
    assert_eq!(s["error"]["details"]["check"], json!("success"), "{s}");
    server.close().await;
}

/// `conda rename --yes` onto an existing environment removes it (conda's
/// `main_rename`: "Override with --yes"), so the guard covers a rename's
/// destination too: typed (with `yes: true`, as a path and as a name) and
/// raw, refused before conda runs; the destination keeps its files.
#[tokio::test]
async fn rename_onto_an_existing_environment_is_refused_before_conda_runs() {
    let standin = standin();
    let dir = tempfile::tempdir().expect("tmp");
    let source = dir.path().join("source");
    let destination = dir.path().join("destination");
    let server = Server::start(
        &standin.conda_exe,
        &["--allow-write", "--allow-exec"],
        Era::Initialize,
    )
    .await;
    for (prefix, pkg) in [(&source, "alpha"), (&destination, "beta")] {
        let r = server
            .call_ok(
                "conda_create",
                json!({"prefix": prefix, "packages": [pkg], "json": true, "yes": true}),
            )
            .await;
        ok(&r, "create");
    }
    std::fs::write(destination.join(MARKER), "keep me").expect("marker");
    let typed = server
        .call_ok(
            "conda_rename",
            json!({"prefix": source, "destination": destination, "yes": true, "json": true}),
        )
        .await;
    assert_exists_refusal(&typed, &destination, "typed rename onto a path");
    let raw = server
        .call_ok(
            "conda_execute",
            json!({"argv": ["rename", "-p", source, destination.display().to_string(), "--yes"]}),
        )
        .await;
    assert_exists_refusal(&raw, &destination, "raw rename onto a path");
    // A destination given as a name, looked up in conda's envs directories.
    let named = standin.prefix.join("envs").join("taken");
    let r = server
        .call_ok(
            "conda_create",
            json!({"name": "taken", "packages": ["gamma"], "json": true, "yes": true}),
        )
        .await;
    ok(&r, "create by name");
    std::fs::write(named.join(MARKER), "keep me").expect("marker");
    let by_name = server
        .call_ok(
            "conda_rename",
            json!({"prefix": source, "destination": "taken", "yes": true}),
        )
        .await;
    assert_exists_refusal(&by_name, &named, "typed rename onto a name");
    assert!(
        source.join("conda-meta").is_dir(),
        "the source is untouched"
    );
    server.close().await;
}
