//! Long calls through the built server: progress notifications,
//! cancellation, queueing and restart detection, spoken in raw JSON-RPC so
//! that the test controls the progress token and sees every frame (and the
//! absence of a response). The target is a stand-in conda prefix whose
//! control file makes chosen commands sleep, flood or change the plugin set.

use std::time::{Duration, Instant};

use conda_mcp_tests::rawrpc::{RawClient, pids_with_cmdline, progress_for};
use conda_mcp_tests::standin::{ControlRule, PluginSpec, StandinPrefix};
use serde_json::{Value, json};

/// A stand-in prefix where `commands` sleep `seconds`.
fn sleepy(commands: &[&str], seconds: f64) -> StandinPrefix {
    let prefix = StandinPrefix::standard();
    prefix
        .set_control(&[ControlRule {
            sleep_seconds: Some(seconds),
            ..ControlRule::for_commands(commands)
        }])
        .expect("control file");
    prefix
}

fn structured(response: &Value) -> &Value {
    &response["result"]["structuredContent"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_call_with_a_token_reports_rising_progress_until_its_result() {
    let prefix = sleepy(&["info"], 25.0);
    let mut c = RawClient::start(&prefix.conda_exe, &[]).await;
    c.call_tool("long", "conda_info", json!({}), Some("tok-long"))
        .await;
    let (response, seen) = c.response("long", Duration::from_secs(90)).await;
    assert_eq!(structured(&response)["exit_code"], json!(0), "{response}");
    let progress = progress_for(&seen, "tok-long");
    assert!(
        progress.len() >= 2,
        "expected at least 2 notifications, got {progress:?}"
    );
    let values: Vec<f64> = progress
        .iter()
        .map(|p| p["params"]["progress"].as_f64().expect("numeric progress"))
        .collect();
    assert!(
        values.windows(2).all(|w| w[1] > w[0]),
        "strictly rising: {values:?}"
    );
    let gaps_ok = values.windows(2).all(|w| w[1] - w[0] <= 10.5);
    assert!(gaps_ok, "at least every 10 s: {values:?}");
    assert!(
        progress.iter().any(|p| p["params"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("running")),
        "{progress:?}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_token_no_progress_is_sent_and_a_queued_call_reports_its_position() {
    let prefix = sleepy(&["info"], 6.0);
    let mut c = RawClient::start(&prefix.conda_exe, &[]).await;
    // First call: no token, runs 6 s. Second call (token) waits behind it.
    c.call_tool("first", "conda_info", json!({}), None).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    c.call_tool("second", "conda_env_list", json!({}), Some("tok-queued"))
        .await;
    let (first, seen_first) = c.response("first", Duration::from_secs(60)).await;
    assert_eq!(structured(&first)["exit_code"], json!(0), "{first}");
    let (second, seen_second) = c.response("second", Duration::from_secs(60)).await;
    assert_eq!(structured(&second)["exit_code"], json!(0), "{second}");
    let all: Vec<Value> = seen_first.into_iter().chain(seen_second).collect();
    let untokened: Vec<&Value> = all
        .iter()
        .filter(|m| m.get("method") == Some(&json!("notifications/progress")))
        .filter(|m| m["params"]["progressToken"] != json!("tok-queued"))
        .collect();
    assert!(
        untokened.is_empty(),
        "progress without a token: {untokened:?}"
    );
    let queued = progress_for(&all, "tok-queued");
    assert!(
        queued.iter().any(|p| p["params"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("queued at position 2")),
        "the queued call names its position: {queued:?}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_running_call_kills_its_tree_sends_no_response_and_the_next_call_answers() {
    let prefix = sleepy(&["info"], 300.0);
    let needle = prefix.conda_exe.display().to_string();
    // Fresh processes: the call is found by its command line (a call
    // forked from the warm conda, which now starts right after discovery,
    // carries the warm conda's; its tree is covered in the worker tests).
    let mut c = RawClient::start(&prefix.conda_exe, &["--no-warm-conda"]).await;
    c.call_tool("doomed", "conda_info", json!({}), None).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let pids = loop {
        let pids = pids_with_cmdline(&needle);
        if !pids.is_empty() {
            break pids;
        }
        assert!(
            Instant::now() < deadline,
            "the stand-in never started\n{}",
            c.stderr_text()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    // Let it settle into its sleep, then cancel.
    tokio::time::sleep(Duration::from_millis(500)).await;
    c.cancel("doomed").await;
    let cancelled_at = Instant::now();
    while !pids_with_cmdline(&needle).is_empty() {
        // killed, not left to its 300 s
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(30),
            "processes {pids:?} still alive 30 s after the cancel"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let after = c.drain(Duration::from_secs(2)).await;
    assert!(
        after.iter().all(|m| m.get("id") != Some(&json!("doomed"))),
        "a response was sent for a cancelled call: {after:?}"
    );
    c.call_tool("next", "conda_env_list", json!({}), None).await;
    let (next, _) = c.response("next", Duration::from_secs(30)).await;
    assert_eq!(structured(&next)["exit_code"], json!(0), "{next}");
    // A cancel for an unknown or finished id is ignored.
    c.cancel("doomed").await;
    c.cancel("never-sent").await;
    c.call_tool("after", "conda_env_list", json!({}), None)
        .await;
    let (after, _) = c.response("after", Duration::from_secs(30)).await;
    assert_eq!(structured(&after)["exit_code"], json!(0), "{after}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_queued_call_never_runs() {
    let prefix = sleepy(&["info"], 4.0);
    let mut c = RawClient::start(&prefix.conda_exe, &[]).await;
    let starts_before = prefix.conda_runs();
    c.call_tool("running", "conda_info", json!({}), None).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    c.call_tool("queued", "conda_env_list", json!({}), None)
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    c.cancel("queued").await;
    let (running, _) = c.response("running", Duration::from_secs(60)).await;
    assert_eq!(structured(&running)["exit_code"], json!(0), "{running}");
    let later = c.drain(Duration::from_secs(2)).await;
    assert!(
        later.iter().all(|m| m.get("id") != Some(&json!("queued"))),
        "a response was sent for a cancelled call: {later:?}"
    );
    assert_eq!(
        prefix.conda_runs(),
        starts_before + 1,
        "only the running call started a conda process"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_required_flips_only_when_a_mutation_changes_the_plugin_set() {
    let prefix = StandinPrefix::standard();
    let mut c =
        RawClient::start(&prefix.conda_exe, &["--allow-write", "--allow-base-writes"]).await;

    // A mutation that changes nothing: false, and no discovery Python.
    let before = prefix.conda_runs();
    c.call_tool(
        "plain",
        "conda_install",
        json!({"packages": ["numpy"], "yes": true}),
        None,
    )
    .await;
    let (plain, _) = c.response("plain", Duration::from_secs(60)).await;
    assert_eq!(structured(&plain)["exit_code"], json!(0), "{plain}");
    assert_eq!(structured(&plain)["restart_required"], json!(false));
    assert_eq!(
        prefix.conda_runs(),
        before + 1,
        "only the stand-in conda itself started Python (no rediscovery)"
    );

    // A mutation that installs a plugin: true, and it stays true.
    prefix
        .set_control(&[ControlRule {
            add_plugin: Some(PluginSpec {
                distribution: "conda-newplugin".into(),
                version: "1.0".into(),
                name: "conda-newplugin".into(),
                value: "conda_newplugin.plugin".into(),
            }),
            ..ControlRule::for_commands(&["install"])
        }])
        .expect("control");
    c.call_tool(
        "plugin",
        "conda_install",
        json!({"packages": ["conda-newplugin"], "yes": true}),
        None,
    )
    .await;
    let (plugin, _) = c.response("plugin", Duration::from_secs(120)).await;
    assert_eq!(structured(&plugin)["exit_code"], json!(0), "{plugin}");
    assert_eq!(
        structured(&plugin)["restart_required"],
        json!(true),
        "{plugin}"
    );
    c.call_tool("read", "conda_env_list", json!({}), None).await;
    let (read, _) = c.response("read", Duration::from_secs(60)).await;
    assert_eq!(
        structured(&read)["restart_required"],
        json!(true),
        "sticky: {read}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_run_one_at_a_time_in_arrival_order() {
    // Each call marks itself a writer in `writers` while it sleeps; a call
    // that starts or ends while another is running is logged as an overlap
    // (the stand-in's `writers_dir`, as in the writer-lock tests).
    let writers = tempfile::tempdir().expect("tempdir");
    let prefix = StandinPrefix::standard();
    prefix
        .set_control(&[ControlRule {
            sleep_seconds: Some(1.0),
            writers_dir: Some(writers.path().to_path_buf()),
            ..ControlRule::for_commands(&["info"])
        }])
        .expect("control file");
    let mut c = RawClient::start(&prefix.conda_exe, &[]).await;
    let ids = ["c1", "c2", "c3", "c4"];
    for id in ids {
        c.call_tool(id, "conda_info", json!({}), None).await;
    }
    let mut order = Vec::new();
    let mut finished: Vec<(String, u64)> = Vec::new();
    while order.len() < ids.len() {
        let msg = c
            .next(Duration::from_secs(60))
            .await
            .expect("a response within 60 s");
        if let Some(id) = msg.get("id").and_then(Value::as_str) {
            order.push(id.to_owned());
            let ms = structured(&msg)["duration_ms"].as_u64().unwrap_or(0);
            finished.push((id.to_owned(), ms));
        }
    }
    // One at a time: no call ran while another did. In arrival order:
    // run one after another, each answered when it ended, so the order of
    // the answers is the order in which they ran.
    let overlaps = std::fs::read_to_string(writers.path().join("overlaps.log")).unwrap_or_default();
    assert_eq!(overlaps, "", "two conda calls ran at once: {finished:?}");
    assert_eq!(order, ids, "responses in arrival order: {finished:?}");
    for (id, ms) in &finished {
        assert!(*ms >= 900, "{id} ran its full second: {finished:?}");
    }
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_stdin_mid_call_exits_promptly_and_leaves_no_process() {
    let prefix = sleepy(&["info"], 300.0);
    let needle = prefix.conda_exe.display().to_string();
    // Fresh processes: the call is found by its command line (a call
    // forked from the warm conda, which now starts right after discovery,
    // carries the warm conda's; its tree is covered in the worker tests).
    let mut c = RawClient::start(&prefix.conda_exe, &["--no-warm-conda"]).await;
    c.call_tool("long", "conda_info", json!({}), None).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while pids_with_cmdline(&needle).is_empty() {
        assert!(Instant::now() < deadline, "the stand-in never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let took = c.close().await.expect("the server exits");
    // not after the call's 300 s (the exit latency is the stop_latency
    // benchmark's)
    assert!(took < Duration::from_secs(30), "exit took {took:?}");
    assert!(
        pids_with_cmdline(&needle).is_empty(),
        "a conda process survived the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_requests_are_answered_not_dropped() {
    let prefix = StandinPrefix::standard();
    let mut c = RawClient::start(&prefix.conda_exe, &[]).await;
    c.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"tools/list\"\n")
        .await;
    let parse_error = c
        .next(Duration::from_secs(10))
        .await
        .expect("an answer to a broken line");
    assert_eq!(parse_error["error"]["code"], json!(-32700), "{parse_error}");
    // Malformed params of a served method: invalid params, not "no such method".
    c.send(
        json!({"jsonrpc": "2.0", "id": "bad", "method": "tools/call", "params": {"arguments": {}}}),
    )
    .await;
    let (bad, _) = c.response("bad", Duration::from_secs(10)).await;
    assert_eq!(bad["error"]["code"], json!(-32602), "{bad}");
    // An unknown method: not found, without echoing its name.
    c.send(json!({"jsonrpc": "2.0", "id": "odd", "method": "secret/method-name"}))
        .await;
    let (odd, _) = c.response("odd", Duration::from_secs(10)).await;
    assert_eq!(odd["error"]["code"], json!(-32601), "{odd}");
    assert!(!odd.to_string().contains("secret"), "{odd}");
    // The session goes on.
    c.send(json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}))
        .await;
    let (pong, _) = c.response("p", Duration::from_secs(10)).await;
    assert!(pong.get("result").is_some(), "{pong}");
    c.close().await;
}

/// The time limit counts running time only: with `--timeout 6`, two
/// pipelined `conda run` calls of 4 s each (the second waits about 4 s for
/// the installation's writer lock the first holds) both run to their end;
/// the wait does not shorten the second one's limit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wait_for_the_writer_lock_leaves_the_time_limit_whole() {
    let prefix = sleepy(&["run"], 4.0);
    let mut c = RawClient::start(&prefix.conda_exe, &["--allow-exec", "--timeout", "6"]).await;
    let run = json!({"name": "base", "executable_call": ["python", "-c", "print(1)"]});
    c.call_tool("first", "conda_run", run.clone(), None).await;
    c.call_tool("second", "conda_run", run, None).await;
    for id in ["first", "second"] {
        let (response, _) = c.response(id, Duration::from_secs(60)).await;
        let out = structured(&response);
        assert_eq!(out["exit_code"], json!(0), "{id}: {response}");
        assert_eq!(out["timed_out"], json!(false), "{id}: {response}");
    }
    c.close().await;
}
