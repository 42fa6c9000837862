//! The MCP tasks extension through the built server, in raw JSON-RPC (no
//! MCP client library here speaks tasks): a long call of a client that
//! declared the extension answers at once with a task handle, `tasks/get`
//! follows it to the same result the plain call returns, `tasks/cancel`
//! stops it like `notifications/cancelled`, and tasks are private to their
//! client and bounded in time. The target is a stand-in conda whose control
//! file makes chosen commands sleep.

use std::path::Path;
use std::time::{Duration, Instant};

use conda_mcp_tests::mcp::Era;
use conda_mcp_tests::rawrpc::{RawClient, pids_with_cmdline, stateless_meta, tasks_capabilities};
use conda_mcp_tests::standin::{ControlRule, StandinPrefix};
use serde_json::{Value, json};

use super::approval::{env_prefix, runs, transaction_standin};

/// A stand-in prefix where `commands` sleep `seconds` and print `out`.
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

/// A server for `prefix` whose client declares the tasks extension.
async fn tasks_client(prefix: &StandinPrefix, args: &[&str]) -> RawClient {
    RawClient::start_with_capabilities(&prefix.conda_exe, args, tasks_capabilities()).await
}

/// Calls `tool` and expects a task handle within `within`; returns the
/// handle (the whole `CreateTaskResult`).
async fn call_expecting_task(
    c: &mut RawClient,
    id: &str,
    tool: &str,
    args: Value,
    within: Duration,
) -> Value {
    let (response, _) = c
        .request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": args}),
            within,
        )
        .await;
    let result = &response["result"];
    assert_eq!(result["resultType"], json!("task"), "{response}");
    assert_eq!(result["status"], json!("working"), "{response}");
    assert!(result["taskId"].is_string(), "{response}");
    result.clone()
}

/// `tasks/get` of `task_id`: the result, or the JSON-RPC error.
async fn get(c: &mut RawClient, task_id: &str) -> Result<Value, Value> {
    on_task(c, "tasks/get", task_id).await
}

/// `tasks/cancel` of `task_id`: the result, or the JSON-RPC error.
async fn cancel(c: &mut RawClient, task_id: &str) -> Result<Value, Value> {
    on_task(c, "tasks/cancel", task_id).await
}

/// Request `method` (`tasks/get`, `tasks/cancel`) of `task_id`: the result,
/// or the JSON-RPC error.
async fn on_task(c: &mut RawClient, method: &str, task_id: &str) -> Result<Value, Value> {
    let (response, _) = c
        .request(
            &format!("{method}-{}", uuid_suffix()),
            method,
            json!({"taskId": task_id}),
            Duration::from_secs(30),
        )
        .await;
    match response.get("result") {
        Some(r) => Ok(r.clone()),
        None => Err(response["error"].clone()),
    }
}

/// A request id unique within the test process.
fn uuid_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Polls `tasks/get` until its status is `status` (panics after `within`);
/// returns that answer and every answer seen before it.
async fn poll_until(
    c: &mut RawClient,
    task_id: &str,
    status: &str,
    within: Duration,
) -> (Value, Vec<Value>) {
    let deadline = Instant::now() + within;
    let mut seen = Vec::new();
    loop {
        let now = get(c, task_id).await.expect("a known task");
        if now["status"] == json!(status) {
            return (now, seen);
        }
        assert!(
            Instant::now() < deadline,
            "not {status} within {within:?}: {seen:?}\n{}",
            c.stderr_text()
        );
        seen.push(now);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// An unknown-task answer: invalid params, naming nothing of the id.
fn assert_unknown(error: &Value, task_id: &str) {
    assert_eq!(error["code"], json!(-32602), "{error}");
    assert!(
        !error.to_string().contains(task_id),
        "the error echoes the id: {error}"
    );
}

/// A tool result with what differs between two runs of the same call (the
/// time it took) taken out.
fn comparable(result: &Value) -> Value {
    let mut r = result.clone();
    if let Some(s) = r["structuredContent"].as_object_mut() {
        s.remove("duration_ms");
    }
    if let Some(content) = r["content"].as_array_mut() {
        content.clear();
    }
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_call_answers_at_once_reports_progress_and_its_cancel_leaves_no_process() {
    let prefix = sleepy(&["search"], 300.0);
    let needle = prefix.conda_exe.display().to_string();
    // Fresh processes: the call is found by its command line (a call
    // forked from the warm conda, which now starts right after discovery,
    // carries the warm conda's; its tree is covered in the worker tests).
    let mut c = tasks_client(&prefix, &["--no-warm-conda"]).await;
    let asked = Instant::now();
    let handle = call_expecting_task(
        &mut c,
        "long",
        "conda_search",
        json!({"match_spec": "numpy"}),
        Duration::from_secs(10),
    )
    .await;
    let answered_in = asked.elapsed();
    // The handle comes before the call ends (300 s; the latency itself is
    // the task_approval benchmark's).
    assert!(
        answered_in < Duration::from_secs(30),
        "a 300 s call answered after {answered_in:?}"
    );
    let id = handle["taskId"].as_str().expect("id").to_owned();
    assert!(
        handle["ttlMs"].as_u64().is_some_and(|t| t >= 600_000),
        "{handle}"
    );
    assert!(handle["pollIntervalMs"].as_u64().is_some(), "{handle}");
    // It runs: tasks/get says working, with the progress message.
    let deadline = Instant::now() + Duration::from_secs(15);
    let running = loop {
        let now = get(&mut c, &id).await.expect("known");
        assert_eq!(now["status"], json!("working"), "{now}");
        let message = now["statusMessage"].as_str().unwrap_or("").to_owned();
        if message.contains("running for") && !pids_with_cmdline(&needle).is_empty() {
            break now;
        }
        assert!(Instant::now() < deadline, "never running: {now}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(
        running["statusMessage"]
            .as_str()
            .is_some_and(|m| m.starts_with("conda search: running for")),
        "{running}"
    );
    assert!(running.get("result").is_none(), "{running}");
    // Cancel: acknowledged, then cancelled once the process tree is gone.
    let ack = cancel(&mut c, &id).await.expect("acknowledged");
    assert_eq!(ack["resultType"], json!("complete"), "{ack}");
    let (cancelled, _) = poll_until(&mut c, &id, "cancelled", Duration::from_secs(10)).await;
    assert!(cancelled.get("result").is_none(), "{cancelled}");
    assert!(
        pids_with_cmdline(&needle).is_empty(),
        "processes left after the task was cancelled"
    );
    // The server goes on: a plain call (not long, nothing queued) answers.
    let (next, _) = c
        .request(
            "next",
            "tools/call",
            json!({"name": "conda_env_list", "arguments": {}}),
            Duration::from_secs(30),
        )
        .await;
    assert_eq!(
        next["result"]["structuredContent"]["exit_code"],
        json!(0),
        "{next}"
    );
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_must_queue_becomes_a_task_and_cancelled_in_the_queue_never_runs() {
    let prefix = sleepy(&["info"], 4.0);
    let mut c = tasks_client(&prefix, &[]).await;
    let runs_before = prefix.conda_runs();
    // conda info is not a long call: it runs as a plain call.
    c.call_tool("running", "conda_info", json!({}), None).await;
    let deadline = Instant::now() + Duration::from_secs(15);
    while prefix.conda_runs() == runs_before {
        assert!(Instant::now() < deadline, "conda info never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // conda env list would answer inline, but it has to wait behind it.
    let handle = call_expecting_task(
        &mut c,
        "queued",
        "conda_env_list",
        json!({}),
        Duration::from_secs(10),
    )
    .await;
    let id = handle["taskId"].as_str().expect("id").to_owned();
    let queued = get(&mut c, &id).await.expect("known");
    assert_eq!(queued["status"], json!("working"), "{queued}");
    assert_eq!(
        queued["_meta"]["conda-mcp/queue"]["ahead"],
        json!(1),
        "{queued}"
    );
    assert!(
        queued["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains("queued at position 2")),
        "{queued}"
    );
    cancel(&mut c, &id).await.expect("acknowledged");
    poll_until(&mut c, &id, "cancelled", Duration::from_secs(5)).await;
    let (running, _) = c.response("running", Duration::from_secs(30)).await;
    assert_eq!(
        running["result"]["structuredContent"]["exit_code"],
        json!(0),
        "{running}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        prefix.conda_runs(),
        runs_before + 1,
        "the cancelled task started a conda process"
    );
    c.close().await;
}

/// Two `conda run` tasks of a server with `--allow-exec` on a stand-in
/// whose `conda run` sleeps 30 s: the first runs (its conda started), the
/// second waits behind it (for the installation's writer lock a change
/// holds while it runs). Returns the prefix, the client and the two task
/// ids.
async fn two_runs() -> (StandinPrefix, RawClient, String, String) {
    let prefix = sleepy(&["run"], 30.0);
    let mut c = tasks_client(&prefix, &["--allow-exec"]).await;
    let run = json!({"name": "base", "executable_call": ["python", "-c", "print(1)"]});
    let runs_before = prefix.conda_runs();
    let first = call_expecting_task(
        &mut c,
        "a",
        "conda_run",
        run.clone(),
        Duration::from_secs(10),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(15);
    while prefix.conda_runs() == runs_before {
        assert!(
            Instant::now() < deadline,
            "the first conda run never started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let second = call_expecting_task(&mut c, "b", "conda_run", run, Duration::from_secs(10)).await;
    let id = |t: &Value| t["taskId"].as_str().expect("id").to_owned();
    (prefix, c, id(&first), id(&second))
}

/// A queued change cancelled as a task reports `cancelled`, never
/// `completed`, and never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_change_cancelled_as_a_task_reports_cancelled_and_never_runs() {
    let (prefix, mut c, a, b) = two_runs().await;
    let runs_before = prefix.conda_runs();
    tokio::time::sleep(Duration::from_millis(300)).await;
    cancel(&mut c, &b).await.expect("acknowledged");
    let (cancelled, seen) = poll_until(&mut c, &b, "cancelled", Duration::from_secs(10)).await;
    assert!(cancelled.get("result").is_none(), "{cancelled}");
    assert!(
        seen.iter().all(|s| s["status"] == json!("working")),
        "{seen:?}"
    );
    assert_eq!(
        prefix.conda_runs(),
        runs_before,
        "the cancelled task started a conda process"
    );
    cancel(&mut c, &a).await.expect("acknowledged");
    poll_until(&mut c, &a, "cancelled", Duration::from_secs(10)).await;
    c.close().await;
}

/// A queued change reports its queue position like any queued call: in
/// its status message and in `_meta["conda-mcp/queue"]`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_change_reports_its_queue_position() {
    let (_prefix, mut c, a, b) = two_runs().await;
    let deadline = Instant::now() + Duration::from_secs(10);
    let queued = loop {
        let now = get(&mut c, &b).await.expect("known");
        if now["_meta"]["conda-mcp/queue"].is_object() || Instant::now() > deadline {
            break now;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(queued["status"], json!("working"), "{queued}");
    assert_eq!(
        queued["_meta"]["conda-mcp/queue"]["ahead"],
        json!(1),
        "{queued}"
    );
    assert!(
        queued["statusMessage"]
            .as_str()
            .is_some_and(|m| m.contains("queued at position 2")),
        "{queued}"
    );
    for id in [&b, &a] {
        cancel(&mut c, id).await.expect("acknowledged");
        poll_until(&mut c, id, "cancelled", Duration::from_secs(10)).await;
    }
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_is_unknown_to_another_client_and_dropped_after_the_retention() {
    let prefix = sleepy(&["install"], 1.0);
    let mut owner = tasks_client(&prefix, &["--allow-write", "--task-retention", "3"]).await;
    let mut other = tasks_client(&prefix, &[]).await;
    // install solves: a task at once, even as a dry run.
    let handle = call_expecting_task(
        &mut owner,
        "solve",
        "conda_install",
        json!({"packages": ["numpy"], "dry_run": true}),
        Duration::from_secs(10),
    )
    .await;
    let id = handle["taskId"].as_str().expect("id").to_owned();
    assert_unknown(&get(&mut other, &id).await.expect_err("unknown"), &id);
    assert_unknown(&cancel(&mut other, &id).await.expect_err("unknown"), &id);
    let (done, _) = poll_until(&mut owner, &id, "completed", Duration::from_secs(30)).await;
    assert_eq!(
        done["result"]["structuredContent"]["exit_code"],
        json!(0),
        "{done}"
    );
    assert_eq!(
        done["result"]["structuredContent"]["parsed_json"]["command"],
        json!(["install"]),
        "{done}"
    );
    // As a plain answer in an initialize session: no resultType.
    assert!(done["result"].get("resultType").is_none(), "{done}");
    // Retention 3 s (long enough for the polls above to see it finished
    // on a loaded machine): gone a little later, for its owner too.
    tokio::time::sleep(Duration::from_millis(3_500)).await;
    assert_unknown(&get(&mut owner, &id).await.expect_err("expired"), &id);
    assert_unknown(&cancel(&mut owner, &id).await.expect_err("expired"), &id);
    owner.close().await;
    other.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_without_the_extension_gets_a_plain_result() {
    let prefix = StandinPrefix::standard();
    let mut c = RawClient::start(&prefix.conda_exe, &[]).await;
    let (response, _) = c
        .request(
            "plain",
            "tools/call",
            json!({"name": "conda_search", "arguments": {"match_spec": "numpy"}}),
            Duration::from_secs(30),
        )
        .await;
    let result = &response["result"];
    assert!(result.get("taskId").is_none(), "{response}");
    assert_ne!(result["resultType"], json!("task"), "{response}");
    assert_eq!(
        result["structuredContent"]["exit_code"],
        json!(0),
        "{response}"
    );
    // tasks/* need the extension declared (-32021, as the extension says).
    let (e, _) = c
        .request(
            "get",
            "tasks/get",
            json!({"taskId": "x"}),
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(e["error"]["code"], json!(-32021), "{e}");
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_the_stateless_lifecycle_a_task_completes_with_the_plain_calls_result() {
    let prefix = StandinPrefix::standard();
    prefix
        .set_control(&[ControlRule {
            sleep_seconds: Some(1.0),
            stdout_text: Some("{\"found\": []}\n".into()),
            ..ControlRule::for_commands(&["search"])
        }])
        .expect("control file");
    let mut c = RawClient::start_stateless(&prefix.conda_exe, &[]).await;
    let (discover, _) = c
        .request(
            "discover",
            "server/discover",
            json!({"_meta": stateless_meta(json!({}))}),
            Duration::from_secs(60),
        )
        .await;
    assert!(
        discover["result"]["capabilities"]["extensions"]
            .get("io.modelcontextprotocol/tasks")
            .is_some(),
        "the tasks extension is advertised: {discover}"
    );
    let args = json!({"match_spec": "numpy", "json": true});
    let (handle, _) = c
        .request(
            "as-task",
            "tools/call",
            json!({"name": "conda_search", "arguments": args,
                   "_meta": stateless_meta(tasks_capabilities())}),
            Duration::from_secs(10),
        )
        .await;
    assert_eq!(handle["result"]["resultType"], json!("task"), "{handle}");
    let id = handle["result"]["taskId"].as_str().expect("id").to_owned();
    let get_params = json!({"taskId": id, "_meta": stateless_meta(tasks_capabilities())});
    let deadline = Instant::now() + Duration::from_secs(30);
    let done = loop {
        let (now, _) = c
            .request(
                &format!("get-{}", uuid_suffix()),
                "tasks/get",
                get_params.clone(),
                Duration::from_secs(10),
            )
            .await;
        if now["result"]["status"] == json!("completed") {
            break now["result"].clone();
        }
        assert_eq!(now["result"]["status"], json!("working"), "{now}");
        assert!(Instant::now() < deadline, "never completed: {now}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    // The same call from a request that does not declare tasks.
    let (plain, _) = c
        .request(
            "plain",
            "tools/call",
            json!({"name": "conda_search", "arguments": args,
                   "_meta": stateless_meta(json!({}))}),
            Duration::from_secs(30),
        )
        .await;
    let plain = &plain["result"];
    assert!(plain.get("taskId").is_none(), "{plain}");
    assert_eq!(
        done["result"]["structuredContent"]["parsed_json"],
        json!({"found": []}),
        "{done}"
    );
    assert_eq!(comparable(&done["result"]), comparable(plain));
    c.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_stdin_with_a_task_running_exits_promptly_and_leaves_no_process() {
    let prefix = sleepy(&["search"], 300.0);
    let needle = prefix.conda_exe.display().to_string();
    // Fresh processes: the call is found by its command line (a call
    // forked from the warm conda, which now starts right after discovery,
    // carries the warm conda's; its tree is covered in the worker tests).
    let mut c = tasks_client(&prefix, &["--no-warm-conda"]).await;
    let handle = call_expecting_task(
        &mut c,
        "long",
        "conda_search",
        json!({"match_spec": "numpy"}),
        Duration::from_secs(10),
    )
    .await;
    let id = handle["taskId"].as_str().expect("id").to_owned();
    let deadline = Instant::now() + Duration::from_secs(15);
    while pids_with_cmdline(&needle).is_empty() {
        assert!(Instant::now() < deadline, "the stand-in never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        get(&mut c, &id).await.expect("known")["status"],
        json!("working")
    );
    let took = c.close().await.expect("the server exits");
    // not after the call's 300 s (the exit latency is the stop_latency
    // benchmark's)
    assert!(took < Duration::from_secs(30), "exit took {took:?}");
    let gone = Instant::now() + Duration::from_secs(30);
    while !pids_with_cmdline(&needle).is_empty() {
        assert!(
            Instant::now() < gone,
            "a task's process outlived the server"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// ---- `--approve-writes` inside a task (docs/approval.md, "Inside a task") ----

/// What a client declares to be asked inside its tasks: the extension and
/// (form) elicitation.
fn tasks_and_elicitation() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {"form": {}}})
}

/// One client of the approval tests, in either protocol era.
struct Asked {
    c: RawClient,
    /// `Some(_meta)` in the stateless lifecycle (sent with every request).
    meta: Option<Value>,
}

impl Asked {
    /// A server for `conda_exe` with `args`, its startup finished (so that
    /// the time to a task handle is the call's own).
    async fn start(conda_exe: &Path, era: Era, args: &[&str]) -> Asked {
        let mut s = match era {
            Era::Initialize => Asked {
                c: RawClient::start_with_capabilities(conda_exe, args, tasks_and_elicitation())
                    .await,
                meta: None,
            },
            Era::Stateless => Asked {
                c: RawClient::start_stateless(conda_exe, args).await,
                meta: Some(stateless_meta(tasks_and_elicitation())),
            },
        };
        s.rpc("tools/list", json!({})).await.expect("tools");
        s
    }

    /// Request `method` with `params` (plus the era's `_meta`): its result,
    /// or its JSON-RPC error.
    async fn rpc(&mut self, method: &str, mut params: Value) -> Result<Value, Value> {
        if let Some(meta) = &self.meta {
            params["_meta"] = meta.clone();
        }
        let id = format!("{method}-{}", uuid_suffix());
        let (response, _) = self
            .c
            .request(&id, method, params, Duration::from_secs(60))
            .await;
        match response.get("result") {
            Some(r) => Ok(r.clone()),
            None => Err(response["error"].clone()),
        }
    }

    /// A `conda_create` of `name` (with `yes: true`, which does not skip
    /// the question): its task id, checked to come as a handle at once.
    async fn create(&mut self, name: &str) -> String {
        let asked = Instant::now();
        let handle = self
            .rpc(
                "tools/call",
                json!({"name": "conda_create", "arguments":
                    {"name": name, "packages": ["zlib=1.3"], "json": true, "yes": true}}),
            )
            .await
            .expect("a result");
        assert_eq!(handle["resultType"], json!("task"), "{handle}");
        assert_eq!(handle["status"], json!("working"), "{handle}");
        // A handle, not the call's outcome: the two checks above catch a
        // call answered only when it ended (its question unanswered, it ends
        // after 8 s with a plain result). This bound is far from the
        // milliseconds a handle takes; it does not separate the two.
        assert!(
            asked.elapsed() < Duration::from_secs(30),
            "the handle came after {:?}",
            asked.elapsed()
        );
        handle["taskId"].as_str().expect("task id").to_owned()
    }

    /// Polls `tasks/get` until `status`; returns that answer.
    async fn until(&mut self, id: &str, status: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let now = self
                .rpc("tasks/get", json!({"taskId": id}))
                .await
                .expect("a known task");
            if now["status"] == json!(status) {
                return now;
            }
            // A task that ended otherwise never gets there.
            assert!(
                !["completed", "cancelled", "failed"]
                    .contains(&now["status"].as_str().unwrap_or("")),
                "ended before {status}: {now}\n{}",
                self.c.stderr_text()
            );
            assert!(
                Instant::now() < deadline,
                "not {status}: {now}\n{}",
                self.c.stderr_text()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `tasks/update` of `id` answering the approval with `action` (and
    /// `approve: true` for accept).
    async fn answer(&mut self, id: &str, action: &str) -> Result<Value, Value> {
        let mut answer = json!({"action": action});
        if action == "accept" {
            answer["content"] = json!({"approve": true});
        }
        self.rpc(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"approval": answer}}),
        )
        .await
    }
}

/// The form's message of an `input_required` task, checked to be the
/// approval form (an `elicitation/create` with the one `approve` field).
fn approval_message(waiting: &Value) -> String {
    let requests = waiting["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(
        requests.keys().collect::<Vec<_>>(),
        ["approval"],
        "{waiting}"
    );
    let request = &requests["approval"];
    assert_eq!(request["method"], json!("elicitation/create"), "{request}");
    let schema = &request["params"]["requestedSchema"];
    assert_eq!(
        schema["properties"]["approve"]["type"],
        json!("boolean"),
        "{schema}"
    );
    assert_eq!(schema["required"], json!(["approve"]), "{schema}");
    request["params"]["message"]
        .as_str()
        .expect("message")
        .to_owned()
}

/// The applies (creates without `--dry-run`) the stand-in ran.
fn applies(standin: &StandinPrefix) -> usize {
    runs(standin)
        .iter()
        .filter(|a| a.first().is_some_and(|c| c == "create") && !a.iter().any(|x| x == "--dry-run"))
        .count()
}

/// Handle at once → the dry run → `input_required` with the form listing
/// the packages the dry run would link → an answer under another key is
/// refused and the task goes on waiting → accept → `completed` with the
/// plain approved call's result, and the environment has exactly the
/// packages shown (two dry runs, one apply with the call's own specs).
/// `yes: true` from the model does not skip the question. Both eras.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_inside_a_task_applies_exactly_what_the_form_showed() {
    for era in Era::ALL {
        let standin = transaction_standin();
        let mut s = Asked::start(&standin.conda_exe, era, &["--approve-writes"]).await;
        let id = s.create("demo").await;
        let waiting = s.until(&id, "input_required").await;
        let message = approval_message(&waiting);
        let env = env_prefix(&standin, "demo");
        for line in [
            "Command: conda create zlib=1.3 --name demo --json --yes".to_owned(),
            format!("Environment: {}", env.display()),
            "Packages to install (link):".to_owned(),
            "  standin-dep 0.1 (build h1_0, channel standin)".to_owned(),
            "  zlib 1.3 (build h0_0, channel standin)".to_owned(),
        ] {
            assert!(
                message.lines().any(|l| l == line),
                "{era:?}: the form lacks {line:?}:\n{message}"
            );
        }
        assert_eq!(
            waiting["statusMessage"],
            json!("conda create: waiting for the person's approval"),
            "{waiting}"
        );
        assert!(!env.exists(), "{era:?}: nothing applied before the answer");
        // A response under a key the task does not wait for: a clear error,
        // naming the key it waits for; the task still waits.
        let wrong = s
            .rpc(
                "tasks/update",
                json!({"taskId": id, "inputResponses": {"other": {"action": "accept"}}}),
            )
            .await
            .expect_err("refused");
        assert_eq!(wrong["code"], json!(-32602), "{wrong}");
        assert!(
            wrong["message"]
                .as_str()
                .is_some_and(|m| m.contains("\"approval\"") && !m.contains("other")),
            "{wrong}"
        );
        s.until(&id, "input_required").await;

        let ack = s.answer(&id, "accept").await.expect("acknowledged");
        assert_eq!(ack["resultType"], json!("complete"), "{ack}");
        let done = s.until(&id, "completed").await;
        let result = &done["result"];
        assert_eq!(result["isError"], json!(false), "{era:?}: {done}");
        assert_eq!(result["structuredContent"]["exit_code"], json!(0), "{done}");
        super::approval::assert_applied_as_shown(&env, &message, &format!("{era:?}"));
        let creates: Vec<Vec<String>> = runs(&standin)
            .into_iter()
            .filter(|a| a.first().is_some_and(|c| c == "create"))
            .collect();
        let dry = creates
            .iter()
            .filter(|a| a.iter().any(|x| x == "--dry-run"))
            .count();
        assert_eq!((dry, creates.len()), (2, 3), "{era:?}: {creates:?}");
        s.c.close().await;
    }
}

/// Decline → `completed` with `declined`, nothing changed; `tasks/cancel`
/// while the question waits → `cancelled`, nothing applied, no process
/// left, and the installation's lock released (the next change reaches its
/// question at once); a question nobody answers within the call's time
/// limit counts as no.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declined_cancelled_or_unanswered_question_in_a_task_changes_nothing() {
    let standin = transaction_standin();
    let needle = standin.conda_exe.display().to_string();
    let mut s = Asked::start(
        &standin.conda_exe,
        Era::Initialize,
        &["--approve-writes", "--no-warm-conda", "--timeout", "8"],
    )
    .await;
    let no = s.create("no").await;
    s.until(&no, "input_required").await;
    s.answer(&no, "decline").await.expect("acknowledged");
    let declined = s.until(&no, "completed").await;
    assert_eq!(declined["result"]["isError"], json!(true), "{declined}");
    assert_eq!(
        declined["result"]["structuredContent"]["error"]["code"],
        json!("declined"),
        "{declined}"
    );
    assert!(!env_prefix(&standin, "no").exists());

    let gone = s.create("gone").await;
    s.until(&gone, "input_required").await;
    s.rpc("tasks/cancel", json!({"taskId": gone}))
        .await
        .expect("acknowledged");
    let cancelled = s.until(&gone, "cancelled").await;
    assert!(cancelled.get("result").is_none(), "{cancelled}");
    assert!(pids_with_cmdline(&needle).is_empty(), "a process is left");
    // An answer that comes after the cancel finds nothing to answer.
    s.answer(&gone, "accept").await.expect("ignored");
    assert!(!env_prefix(&standin, "gone").exists());

    // The cancelled task released the installation's lock: the next change
    // reaches its question (a held lock would keep it working until the 8 s
    // limit, then end it with install_lock, which `until` reports; how soon
    // the question comes is measured by the task_approval benchmark).
    let asked = Instant::now();
    let late = s.create("late").await;
    s.until(&late, "input_required").await;
    // Nobody answers: after the time limit (8 s) it counts as no.
    let unanswered = s.until(&late, "completed").await;
    assert_eq!(
        unanswered["result"]["structuredContent"]["error"]["code"],
        json!("declined"),
        "{unanswered}"
    );
    assert!(
        asked.elapsed() >= Duration::from_secs(8),
        "ended before the limit: {:?}",
        asked.elapsed()
    );
    assert!(!env_prefix(&standin, "late").exists());
    assert_eq!(applies(&standin), 0, "no create ran without --dry-run");
    s.c.close().await;
}

/// Real tier: an approved create inside a task against a real conda (a
/// local file channel): the form lists the package conda's dry run would
/// link, and after the accept the task completes with the environment made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_conda_approval_inside_a_task() {
    let Some(conda) = conda_mcp_tests::tiers::real_conda(module_path!()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let channel = super::real_conda::build_channel(&dir.path().join("channel"));
    let prefix = dir.path().join("approved");
    let mut s = Asked::start(
        &conda,
        Era::Initialize,
        &["--approve-writes", "--timeout", "600"],
    )
    .await;
    let (handle, _) =
        s.c.request(
            "create",
            "tools/call",
            json!({"name": "conda_create", "arguments": {
                "prefix": prefix, "packages": [super::real_conda::PACKAGE],
                "channel": [channel], "override_channels": true, "json": true}}),
            Duration::from_secs(30),
        )
        .await;
    assert_eq!(handle["result"]["resultType"], json!("task"), "{handle}");
    let id = handle["result"]["taskId"].as_str().expect("id").to_owned();
    let deadline = Instant::now() + Duration::from_secs(600);
    let waiting = loop {
        let now = s
            .rpc("tasks/get", json!({"taskId": id}))
            .await
            .expect("known");
        if now["status"] != json!("working") {
            break now;
        }
        assert!(Instant::now() < deadline, "{now}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    assert_eq!(waiting["status"], json!("input_required"), "{waiting}");
    let message = approval_message(&waiting);
    assert!(
        message.contains(&format!("{} 1.0 (build 0", super::real_conda::PACKAGE)),
        "the form lists the package conda would link:\n{message}"
    );
    assert!(!prefix.exists(), "nothing applied before the answer");
    s.answer(&id, "accept").await.expect("acknowledged");
    let deadline = Instant::now() + Duration::from_secs(600);
    let done = loop {
        let now = s
            .rpc("tasks/get", json!({"taskId": id}))
            .await
            .expect("known");
        if now["status"] == json!("completed") {
            break now;
        }
        assert_eq!(now["status"], json!("working"), "{now}");
        assert!(Instant::now() < deadline, "{now}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let code = done["result"]["structuredContent"]["error"]["code"].as_str();
    assert!(
        done["result"]["isError"] == json!(false) || code == Some("crashed_after_success"),
        "{done}"
    );
    assert!(prefix.join("conda-meta").is_dir(), "the environment exists");
    s.c.close().await;
}
