//! conda's configuration cannot turn a preview into a change
//! (docs/writes.md): a `.condarc` key marked `#!final` that conda would let
//! beat `--dry-run` or `--json`, through the built server. The stand-in
//! conda honours `#!final` keys of its `.condarc` search path as conda
//! does and creates the prefix of an `env create` that is not an effective
//! dry run; the real tier repeats it with a real conda.

use std::path::Path;

use conda_mcp_tests::mcp::{Era, Server};
use conda_mcp_tests::standin::StandinPrefix;
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

fn structured(r: &CallToolResult) -> &Value {
    r.structured_content.as_ref().expect("structured content")
}

fn created(prefix: &Path) -> bool {
    prefix.join("conda-meta").join("history").is_file()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_final_dry_run_false_refuses_previews_until_the_marker_goes_without_a_restart() {
    let p = StandinPrefix::standard();
    let work = tempfile::tempdir().expect("tempdir");
    let cache = work.path().join("cache");
    let target = work.path().join("env-a");
    let rc = p.prefix.join(".condarc");

    // A first start writes the discovery cache without any .condarc.
    let first = Server::start_with_cache(&p.conda_exe, &[], &cache, &[]).await;
    first.close().await;

    // The marker appears while no server runs: the cached start must see it.
    std::fs::write(&rc, "channels: [one]\ndry_run: false  #!final\n").expect("condarc");
    let s = Server::start_with_cache(&p.conda_exe, &[], &cache, &[]).await;
    let preview = json!({"prefix": target.display().to_string()});
    let explicit = json!({"prefix": target.display().to_string(), "dry_run": true});
    for args in [preview.clone(), explicit] {
        let runs_before = p.conda_runs();
        let r = s.call_ok("conda_env_create", args).await;
        assert_eq!(r.is_error, Some(true), "{r:?}");
        let e = &structured(&r)["error"];
        assert_eq!(e["code"], json!("dry_run_not_honoured"), "{r:?}");
        assert_eq!(e["details"]["key"], json!("dry_run"), "{e}");
        assert_eq!(e["details"]["file"], json!(rc.display().to_string()), "{e}");
        assert_eq!(e["retryable"], json!(false), "{e}");
        let message = e["message"].as_str().expect("message");
        assert!(message.contains(&rc.display().to_string()), "{message}");
        assert!(!message.contains("false"), "never the value: {message}");
        assert_eq!(p.conda_runs(), runs_before, "conda never ran");
        assert!(!created(&target), "nothing was created");
    }
    // A read-only call that does not depend on --dry-run still runs.
    let info = s.call_ok("conda_info", json!({})).await;
    assert_eq!(structured(&info)["exit_code"], json!(0), "{info:?}");

    // Without the marker conda honours --dry-run again: the next preview
    // runs (same server, no restart) and creates nothing.
    std::fs::write(&rc, "channels: [one]\ndry_run: false\n").expect("condarc");
    let r = s.call_ok("conda_env_create", preview.clone()).await;
    let out = structured(&r);
    assert_eq!(out["exit_code"], json!(0), "{r:?}");
    assert_eq!(out["confirmation_required"], json!(true), "{r:?}");
    assert_eq!(
        out["parsed_json"]["namespace"]["dry_run"],
        json!(true),
        "{r:?}"
    );
    assert!(!created(&target), "a preview creates nothing");

    // And the marker back: refused again before the next call.
    std::fs::write(&rc, "dry_run: false #!final\n").expect("condarc");
    let r = s.call_ok("conda_env_create", preview).await;
    assert_eq!(
        structured(&r)["error"]["code"],
        json!("dry_run_not_honoured"),
        "{r:?}"
    );
    assert!(!created(&target));
    s.close().await;

    // The stand-in does what conda does with the marker: the dry run
    // creates the environment (so the refusal above is what protected it).
    std::fs::write(&rc, "dry_run: false  #!final\n").expect("condarc");
    let t = target.display().to_string();
    let out = p
        .run(&["env", "create", "-p", &t, "--dry-run", "--json"])
        .expect("run the stand-in");
    assert!(out.status.success(), "{out:?}");
    assert!(created(&target), "a forced dry_run: false writes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_argv_and_compact_calls_that_rely_on_dry_run_are_refused_too() {
    let p = StandinPrefix::standard();
    let work = tempfile::tempdir().expect("tempdir");
    let target = work.path().join("env-r");
    let t = target.display().to_string();
    let rc = p.prefix.join("condarc.d");
    std::fs::create_dir(&rc).expect("condarc.d");
    let file = rc.join("policy.yml");
    std::fs::write(&file, "dry_run: false  #!final\n").expect("condarc.d file");
    let raw = Server::start(&p.conda_exe, &["--allow-exec"], Era::Initialize).await;
    let r = raw
        .call_ok(
            "conda_execute",
            json!({"argv": ["env", "create", "-p", t, "--dry-run", "--json"]}),
        )
        .await;
    let e = &structured(&r)["error"];
    assert_eq!(e["code"], json!("dry_run_not_honoured"), "{r:?}");
    assert_eq!(
        e["details"]["file"],
        json!(file.display().to_string()),
        "{e}"
    );
    raw.close().await;

    let compact = Server::start(&p.conda_exe, &["--tool-mode", "compact"], Era::Initialize).await;
    let r = compact
        .call_ok(
            "conda_call",
            json!({"command": "env create", "arguments": {"prefix": t}}),
        )
        .await;
    assert_eq!(
        structured(&r)["error"]["code"],
        json!("dry_run_not_honoured"),
        "{r:?}"
    );
    compact.close().await;
    assert!(!created(&target), "nothing was created");
    assert_eq!(p.conda_runs(), 0, "conda never ran");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_final_json_false_is_said_in_the_result_and_check_reports_both_keys() {
    let p = StandinPrefix::standard();
    let work = tempfile::tempdir().expect("tempdir");
    let target = work.path().join("env-j");
    let rc = p.prefix.join(".condarc");
    std::fs::write(&rc, "json: false  #!final\n").expect("condarc");
    let s = Server::start(&p.conda_exe, &[], Era::Initialize).await;
    let r = s
        .call_ok(
            "conda_env_create",
            json!({"prefix": target.display().to_string(), "json": true}),
        )
        .await;
    let out = structured(&r);
    assert_eq!(out["exit_code"], json!(0), "{r:?}");
    assert_eq!(out["confirmation_required"], json!(true), "{r:?}");
    assert!(out.get("parsed_json").is_none(), "{r:?}");
    let why = out["parsed_json_error"]
        .as_str()
        .expect("parsed_json_error");
    assert!(
        why.contains("--json") && why.contains(&rc.display().to_string()),
        "{why}"
    );
    assert!(!created(&target), "the preview (a dry run) created nothing");
    s.close().await;

    std::fs::write(&rc, "json: false  #!final\ndry_run: false #!final\n").expect("condarc");
    let home = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(conda_mcp_tests::bins::server())
        .arg("check")
        .arg("--conda-exe")
        .arg(&p.conda_exe)
        .arg("--worker-exe")
        .arg(conda_mcp_tests::bins::worker())
        .env("XDG_CACHE_HOME", home.path())
        .env_remove("CONDA_EXE")
        .output()
        .expect("conda-mcp check");
    let text = String::from_utf8_lossy(&out.stdout);
    let rc_text = rc.display().to_string();
    for key in ["dry_run", "json"] {
        assert!(
            text.lines()
                .any(|l| l.contains(&format!("{key} (marked final in the file {rc_text})"))),
            "{text}"
        );
    }
    assert!(text.contains("conda would not honour --dry-run"), "{text}");
    assert!(text.contains("conda would not honour --json"), "{text}");
}

/// The real tier (`CONDA_MCP_TEST_CONDA`): the same guarantees with a real
/// conda and a real `.condarc` named by `CONDARC`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_conda_final_keys_in_a_condarc() {
    let Some(conda) = conda_mcp_tests::tiers::real_conda(module_path!()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let rc = dir.path().join(".condarc");
    std::fs::write(&rc, "dry_run: false  #!final\njson: false  #!final\n").expect("condarc");
    let rc_text = rc.display().to_string();
    let s = Server::start_with_env(
        &conda,
        &["--timeout", "600"],
        Era::Initialize,
        &[("CONDARC", rc_text.as_str())],
    )
    .await;
    let target = dir.path().join("env");
    let r = s
        .call_ok(
            "conda_create",
            json!({"prefix": target.display().to_string(), "packages": ["python"]}),
        )
        .await;
    let e = &structured(&r)["error"];
    assert_eq!(e["code"], json!("dry_run_not_honoured"), "{r:?}");
    assert_eq!(e["details"]["file"], json!(rc_text), "{e}");
    assert!(!target.exists(), "nothing was created");

    let r = s.call_ok("conda_info", json!({"json": true})).await;
    let out = structured(&r);
    assert_eq!(out["exit_code"], json!(0), "{r:?}");
    assert!(
        out.get("parsed_json").is_none(),
        "conda printed text: {r:?}"
    );
    let why = out["parsed_json_error"]
        .as_str()
        .expect("parsed_json_error");
    assert!(why.contains("--json") && why.contains(&rc_text), "{why}");

    // Without the markers conda honours both flags again, no restart.
    std::fs::write(&rc, "dry_run: false\njson: false\n").expect("condarc");
    let r = s.call_ok("conda_info", json!({"json": true})).await;
    assert!(structured(&r)["parsed_json"].is_object(), "{r:?}");
    s.close().await;
}
