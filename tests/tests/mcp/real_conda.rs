//! The real-conda tier (`real`): the same black-box path against a real
//! conda named by `CONDA_MCP_TEST_CONDA`; skipped with a message otherwise,
//! a failure when `CONDA_MCP_TEST_TIERS` declares `real`
//! ([`conda_mcp_tests::tiers`]).
//!
//! It builds its own local file channel (a hand-made `noarch` package and its
//! `repodata.json`), so nothing touches the network, and creates/removes an
//! environment only under a temporary prefix.

use std::path::{Path, PathBuf};
use std::process::Command;

use std::time::Duration;

use conda_mcp_tests::mcp::{Era, Server, result_text};
use conda_mcp_tests::rawrpc::RawClient;
use conda_mcp_tests::results::assert_valid_result;
use serde_json::{Value, json};

const PACKAGE: &str = "conda-mcp-probe";

fn real_conda() -> Option<PathBuf> {
    conda_mcp_tests::tiers::real_conda(module_path!())
}

/// A local channel with one noarch package (`conda-mcp-probe 1.0 0`),
/// built with Python's tarfile (a `.tar.bz2` v1 package) and hashed into
/// `noarch/repodata.json`; `linux-64` and friends get an empty index.
fn build_channel(root: &Path) -> String {
    let script = r#"
import hashlib, io, json, os, sys, tarfile, time
root, name = sys.argv[1], sys.argv[2]
fn = f"{name}-1.0-0.tar.bz2"
index = {"name": name, "version": "1.0", "build": "0", "build_number": 0, "depends": [],
         "noarch": "generic", "subdir": "noarch", "license": "BSD-3-Clause",
         "timestamp": int(time.time() * 1000)}
files = {"info/index.json": json.dumps(index).encode(),
         "info/paths.json": json.dumps({"paths": [], "paths_version": 1}).encode(),
         "info/files": b""}
os.makedirs(os.path.join(root, "noarch"), exist_ok=True)
path = os.path.join(root, "noarch", fn)
with tarfile.open(path, "w:bz2") as t:
    for n, data in files.items():
        info = tarfile.TarInfo(n); info.size = len(data); info.mtime = int(time.time())
        t.addfile(info, io.BytesIO(data))
blob = open(path, "rb").read()
rec = dict(index, md5=hashlib.md5(blob).hexdigest(), sha256=hashlib.sha256(blob).hexdigest(), size=len(blob))
for subdir in ["noarch", "linux-64", "linux-aarch64", "osx-64", "osx-arm64", "win-64"]:
    os.makedirs(os.path.join(root, subdir), exist_ok=True)
    pk = {fn: rec} if subdir == "noarch" else {}
    with open(os.path.join(root, subdir, "repodata.json"), "w") as f:
        json.dump({"info": {"subdir": subdir}, "packages": pk, "packages.conda": {}, "repodata_version": 1}, f)
"#;
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(root)
        .arg(PACKAGE)
        .status()
        .expect("python3 builds the channel");
    assert!(status.success(), "building the local channel failed");
    format!("file://{}", root.display())
}

fn ok(r: &rmcp::model::CallToolResult, what: &str) -> Value {
    assert_eq!(r.is_error, Some(false), "{what}: {}", result_text(r));
    r.structured_content.clone().expect("structuredContent")
}

/// [`ok`], or the one failure a solve with py-rattler may end in after its
/// work is done: conda printed its success document, then the interpreter
/// aborted at exit (`crashed_after_success`, a fresh process only).
fn ok_or_crashed_after_success(r: &rmcp::model::CallToolResult, what: &str) -> Value {
    let s = r.structured_content.clone().expect("structuredContent");
    if r.is_error == Some(true) && s["error"]["code"] == json!("crashed_after_success") {
        assert!(s["parsed_json"]["success"] == json!(true), "{what}: {s}");
        eprintln!("{what}: crashed_after_success ({})", s["error"]["message"]);
        return s;
    }
    ok(r, what)
}

#[tokio::test]
async fn real_conda_read_only_calls_and_a_dry_run() {
    let Some(conda) = real_conda() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let channel = build_channel(&dir.path().join("channel"));
    for era in Era::ALL {
        let server = Server::start(&conda, &["--timeout", "600"], era).await;
        let tools = server.tools().await;
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        for n in [
            "conda_info",
            "conda_list",
            "conda_search",
            "conda_create",
            "conda_remove",
        ] {
            assert!(names.contains(&n), "{n} missing: {names:?}");
        }
        let s = ok(
            &server.call_ok("conda_info", json!({"json": true})).await,
            "conda info",
        );
        assert!(s["parsed_json"]["conda_version"].is_string(), "{s}");
        let s = ok(
            &server.call_ok("conda_list", json!({"json": true})).await,
            "conda list",
        );
        assert!(s["parsed_json"].is_array(), "{s}");
        let s = ok(
            &server
                .call_ok(
                    "conda_search",
                    json!({"match_spec": PACKAGE, "channel": [channel], "override_channels": true, "json": true}),
                )
                .await,
            "conda search",
        );
        assert!(s["stdout"].as_str().unwrap_or("").contains(PACKAGE), "{s}");
        let prefix = dir.path().join(format!("env-dry-{era:?}"));
        let s = ok_or_crashed_after_success(
            &server
                .call_ok(
                    "conda_create",
                    json!({"prefix": prefix, "packages": [PACKAGE], "channel": [channel],
                           "override_channels": true, "dry_run": true, "yes": true, "json": true}),
                )
                .await,
            "conda create --dry-run",
        );
        assert!(s["stdout"].as_str().unwrap_or("").contains(PACKAGE), "{s}");
        assert!(!prefix.exists(), "a dry run created the environment");
        // Without --allow-write the real create is refused.
        let r = server
            .call_ok(
                "conda_create",
                json!({"prefix": prefix, "packages": [PACKAGE], "yes": true}),
            )
            .await;
        assert!(
            result_text(&r).contains("--allow-write"),
            "{}",
            result_text(&r)
        );
        server.close().await;
    }
}

#[tokio::test]
async fn real_conda_create_then_remove_with_allow_write() {
    let Some(conda) = real_conda() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let channel = build_channel(&dir.path().join("channel"));
    let server = Server::start(
        &conda,
        &["--allow-write", "--timeout", "600"],
        Era::Initialize,
    )
    .await;
    let prefix = dir.path().join("env");
    ok(
        &server
            .call_ok(
                "conda_create",
                json!({"prefix": prefix, "packages": [PACKAGE], "channel": [channel],
                       "override_channels": true, "yes": true, "json": true}),
            )
            .await,
        "conda create",
    );
    assert!(prefix.join("conda-meta").is_dir(), "the environment exists");
    ok(
        &server
            .call_ok(
                "conda_remove",
                json!({"prefix": prefix, "all": true, "yes": true, "json": true}),
            )
            .await,
        "conda remove --all",
    );
    assert!(
        !prefix.join("conda-meta").exists(),
        "the environment is gone"
    );
    server.close().await;
}

#[tokio::test]
async fn real_conda_remove_without_yes_is_a_dry_run_that_keeps_the_environment() {
    let Some(conda) = real_conda() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let channel = build_channel(&dir.path().join("channel"));
    let prefix = dir.path().join("env");
    let writer = Server::start(
        &conda,
        &["--allow-write", "--timeout", "600"],
        Era::Initialize,
    )
    .await;
    ok(
        &writer
            .call_ok(
                "conda_create",
                json!({"prefix": prefix, "packages": [PACKAGE], "channel": [channel],
                       "override_channels": true, "yes": true, "json": true}),
            )
            .await,
        "conda create",
    );
    assert!(prefix.join("conda-meta").is_dir(), "the environment exists");
    // Without yes, with and without json: the plan, nothing removed.
    for json_flag in [false, true] {
        let r = writer
            .call_ok(
                "conda_remove",
                json!({"prefix": prefix, "all": true, "json": json_flag}),
            )
            .await;
        let s = r.structured_content.clone().expect("ran");
        assert_eq!(s["confirmation_required"], json!(true), "{s}");
        assert!(
            result_text(&r).starts_with("Nothing was changed"),
            "{}",
            result_text(&r)
        );
        assert!(
            prefix.join("conda-meta").is_dir(),
            "json={json_flag}: the environment is intact: {s}"
        );
    }
    // A read-only server may show the plan too.
    let reader = Server::start(&conda, &["--timeout", "600"], Era::Initialize).await;
    let r = reader
        .call_ok(
            "conda_remove",
            json!({"prefix": prefix, "all": true, "json": true}),
        )
        .await;
    let s = r
        .structured_content
        .clone()
        .expect("ran on a read-only server");
    assert_eq!(s["confirmation_required"], json!(true), "{s}");
    assert!(prefix.join("conda-meta").is_dir());
    reader.close().await;
    // With yes it is removed.
    let s = ok(
        &writer
            .call_ok(
                "conda_remove",
                json!({"prefix": prefix, "all": true, "yes": true, "json": true}),
            )
            .await,
        "conda remove --all --yes",
    );
    assert_eq!(s["confirmation_required"], json!(false), "{s}");
    assert!(
        !prefix.join("conda-meta").exists(),
        "the environment is gone"
    );
    writer.close().await;
}

#[tokio::test]
async fn real_conda_run_keeps_output_ends_with_the_program_and_takes_stdin() {
    let Some(conda) = real_conda() else { return };
    // The installation's own root is an environment conda run accepts.
    let root = std::fs::canonicalize(&conda)
        .ok()
        .and_then(|c| c.parent().and_then(Path::parent).map(Path::to_path_buf))
        .expect("conda root");
    let server = Server::start(
        &conda,
        &["--allow-exec", "--timeout", "60"],
        Era::Initialize,
    )
    .await;
    let r = server
        .call_ok(
            "conda_run",
            // conda run itself takes seconds to start on a loaded machine.
            json!({"prefix": root, "executable_call": ["sh", "-c", "echo started; sleep 120"],
                   "timeout_seconds": 15}),
        )
        .await;
    let s = r.structured_content.clone().expect("structured");
    assert_eq!(s["timed_out"], json!(true), "{s}");
    assert_eq!(s["stdout"], json!("started\n"), "{s}");
    let t0 = std::time::Instant::now();
    let r = server
        .call_ok(
            "conda_run",
            json!({"prefix": root, "executable_call": ["sh", "-c", "sleep 60 & echo started"]}),
        )
        .await;
    let s = r.structured_content.clone().expect("structured");
    // Well under the background child's 60 s (a loaded machine takes
    // seconds to start conda run).
    assert!(
        t0.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        t0.elapsed()
    );
    assert_eq!(s["stdout"], json!("started\n"), "{s}");
    let r = server
        .call_ok(
            "conda_run",
            json!({"prefix": root, "executable_call": ["cat"], "stdin": "through stdin"}),
        )
        .await;
    let s = r.structured_content.clone().expect("structured");
    assert_eq!(s["stdout"], json!("through stdin"), "{s}");
    server.close().await;
}

/// Response sizes of the size table on a real conda, default against lean:
/// the whole JSON-RPC response line and the text block, beside conda's own
/// stdout (run directly). Prints the table; asserts the lean targets.
#[tokio::test]
async fn real_conda_result_sizes_default_and_lean() {
    let Some(conda) = real_conda() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let channel = build_channel(&dir.path().join("channel"));
    let cases: Vec<(&str, Value, Vec<String>)> = vec![
        (
            "conda_info",
            json!({"json": true}),
            vec!["info".into(), "--json".into()],
        ),
        (
            "conda_config",
            json!({"show": [], "json": true}),
            vec!["config".into(), "--show".into(), "--json".into()],
        ),
        (
            "conda_search",
            json!({"match_spec": PACKAGE, "channel": [channel], "override_channels": true, "json": true}),
            vec![
                "search".into(),
                "--json".into(),
                PACKAGE.into(),
                "-c".into(),
                channel.clone(),
                "--override-channels".into(),
            ],
        ),
    ];
    let mut table = vec![
        "| call | conda's stdout | default: response | default: text | lean: response | lean: text |".to_owned(),
        "| --- | --- | --- | --- | --- | --- |".to_owned(),
    ];
    let mut rows: Vec<Vec<usize>> = vec![Vec::new(); cases.len()];
    for (i, (_, _, argv)) in cases.iter().enumerate() {
        let out = Command::new(&conda).args(argv).output().expect("run conda");
        assert!(out.status.success(), "conda {argv:?} failed");
        rows[i].push(out.stdout.len());
    }
    for mode in ["default", "lean"] {
        let mut client =
            RawClient::start(&conda, &["--result-mode", mode, "--timeout", "600"]).await;
        for (i, (name, args, _)) in cases.iter().enumerate() {
            let id = format!("{mode}-{i}");
            client.call_tool(&id, name, args.clone(), None).await;
            let (resp, _) = client.response(&id, Duration::from_secs(600)).await;
            let result = &resp["result"];
            assert_eq!(result["isError"], json!(false), "{resp}");
            let text_len = result["content"][0]["text"].as_str().expect("text").len();
            let wire = resp.to_string().len() + 1;
            rows[i].push(wire);
            rows[i].push(text_len);
            if mode == "lean" {
                let stdout = rows[i][0] as f64;
                assert!(
                    text_len as f64 <= 1.05 * stdout + 400.0,
                    "{name}: text block {text_len} B for {stdout} B of stdout"
                );
                assert!(
                    wire as f64 <= 2.2 * stdout + 800.0,
                    "{name}: response {wire} B for {stdout} B of stdout"
                );
            }
        }
        client.close().await;
    }
    for ((name, args, _), r) in cases.iter().zip(&rows) {
        let shown = if *name == "conda_search" {
            json!({"match_spec": PACKAGE, "json": true}).to_string()
        } else {
            args.to_string()
        };
        table.push(format!(
            "| {name} {shown} | {} B | {} B | {} B | {} B | {} B |",
            r[0], r[1], r[2], r[3], r[4]
        ));
    }
    eprintln!("{}", table.join("\n"));
}

/// Typed errors from a real conda: a missing package, a missing
/// environment, an invalid spec.
#[tokio::test]
async fn real_conda_typed_errors() {
    let Some(conda) = real_conda() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let channel = build_channel(&dir.path().join("channel"));
    for mode in ["default", "lean"] {
        let server = Server::start(
            &conda,
            &["--result-mode", mode, "--timeout", "600"],
            Era::Initialize,
        )
        .await;
        let tools = server.tools().await;
        let check = |name: &str, r: &rmcp::model::CallToolResult| {
            let t = tools.iter().find(|t| t.name == name).expect("listed");
            assert_valid_result(t, r);
            assert_eq!(r.is_error, Some(true), "{name}: {}", result_text(r));
            r.structured_content.clone().expect("structured")["error"].clone()
        };
        for json_flag in [true, false] {
            let cases = [
                (
                    "conda_search",
                    json!({"match_spec": "no-such-package-xyz", "channel": [channel],
                           "override_channels": true, "json": json_flag}),
                    "packages_not_found",
                ),
                (
                    "conda_list",
                    json!({"name": "no-such-env-xyz", "json": json_flag}),
                    "environment_not_found",
                ),
                (
                    "conda_search",
                    json!({"match_spec": "probe[version=", "channel": [channel],
                           "override_channels": true, "json": json_flag}),
                    "invalid_spec",
                ),
            ];
            for (tool, args, code) in cases {
                let r = server.call_ok(tool, args).await;
                let e = check(tool, &r);
                assert_eq!(e["code"], json!(code), "{mode} json={json_flag}: {e}");
            }
        }
        server.close().await;
    }
}

/// The guard of existing environments against a real conda (see
/// `tests/tests/mcp/writes.rs` for the stand-in's): create, a marker file
/// in the prefix, the same create without `yes` and with `yes: true`
/// (refused before conda runs), the preview with `replace_existing: true`
/// (a real plan, solved for a fresh prefix), then the replacement.
#[tokio::test]
async fn real_conda_existing_environment_is_never_replaced_by_surprise() {
    let Some(conda) = real_conda() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let channel = build_channel(&dir.path().join("channel"));
    let server = Server::start(
        &conda,
        &["--allow-write", "--timeout", "600"],
        Era::Initialize,
    )
    .await;
    let prefix = dir.path().join("env");
    let marker = prefix.join("marker.txt");
    let args = |yes: bool, replace: bool| {
        json!({"prefix": prefix, "packages": [PACKAGE], "channel": [channel],
               "override_channels": true, "yes": yes, "replace_existing": replace,
               "json": true})
    };
    ok_or_crashed_after_success(
        &server.call_ok("conda_create", args(true, false)).await,
        "conda create",
    );
    assert!(prefix.join("conda-meta/history").is_file());
    std::fs::write(&marker, "keep me").expect("marker");
    for yes in [false, true] {
        let r = server.call_ok("conda_create", args(yes, false)).await;
        let s = r.structured_content.clone().expect("structured");
        assert_eq!(r.is_error, Some(true), "yes={yes}: {s}");
        assert_eq!(s["error"]["code"], json!("environment_exists"), "{s}");
        assert_eq!(s["error"]["details"]["prefix"], json!(prefix), "{s}");
        assert_eq!(s["exit_code"], Value::Null, "conda did not run: {s}");
        assert!(marker.is_file(), "yes={yes}: the marker is gone");
    }
    let r = server.call_ok("conda_create", args(false, true)).await;
    let s = ok_or_crashed_after_success(&r, "the preview");
    let rep = &s["replaced_environment"];
    assert_eq!(rep["applied"], json!(false), "{s}");
    assert_eq!(rep["linked"], json!([PACKAGE]), "{s}");
    let planned = PathBuf::from(rep["planned_for"].as_str().expect("planned_for"));
    assert!(
        !planned.exists(),
        "the preview created {}",
        planned.display()
    );
    assert!(
        result_text(&r).starts_with("Nothing was changed. Applying this call"),
        "{}",
        result_text(&r)
    );
    assert!(marker.is_file(), "the preview removed the marker");
    let r = server.call_ok("conda_create", args(true, true)).await;
    let s = ok_or_crashed_after_success(&r, "the replacement");
    assert_eq!(s["replaced_environment"]["applied"], json!(true), "{s}");
    assert!(!marker.exists(), "the old environment's files stay");
    assert!(prefix.join("conda-meta/history").is_file());
    server.close().await;
}
