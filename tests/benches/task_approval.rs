//! What asking the person inside a task costs (docs/long-calls.md, "An
//! approval question inside a task"):
//! `cargo bench -p conda-mcp-tests --bench task_approval`
//! (`CONDA_MCP_BENCH_ROUNDS`, default 10; `CONDA_MCP_BIN_DIR` picks the
//! build measured, as for the tests).
//!
//! Against the stand-in conda of the recorded conda 26 parser with its
//! `transaction` switch (the tests' approval stand-in), two servers with
//! `--approve-writes`, rounds interleaved (alternating which goes first),
//! each round one `conda_create` into a new environment on each:
//!
//! * **task**: the client declares the tasks extension and elicitation:
//!   `tools/call` to the task handle; to `input_required` seen by
//!   `tasks/get` polled every 20 ms (the preview, a dry run); then from the
//!   `tasks/update` that accepts to `completed` seen by the same polling
//!   (the re-plan and the apply);
//! * **plain**: the client declares elicitation only (`initialize`):
//!   `tools/call` to the server's `elicitation/create`; then from the
//!   accepting answer to the call's result.
//!
//! It prints the medians measured in this one run.

// A bench binary reports its figures on stdout (it is not the server).
#![allow(clippy::print_stdout)]
#![allow(missing_docs)]

use std::time::{Duration, Instant};

use conda_mcp_tests::paths;
use conda_mcp_tests::rawrpc::RawClient;
use conda_mcp_tests::standin::{ControlRule, StandinPrefix};
use serde_json::{Value, json};

const POLL: Duration = Duration::from_millis(20);
const WITHIN: Duration = Duration::from_secs(60);

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn create(name: &str) -> Value {
    json!({"name": "conda_create",
           "arguments": {"name": name, "packages": ["zlib=1.3"], "json": true}})
}

#[derive(Default)]
struct Figures {
    handle: Vec<f64>,
    asked: Vec<f64>,
    accept_to_done: Vec<f64>,
}

/// Polls `tasks/get` every [`POLL`] until `status`; returns the answer.
async fn until(c: &mut RawClient, id: &str, status: &str, n: &mut u64) -> Value {
    loop {
        *n += 1;
        let (r, _) = c
            .request(&format!("g{n}"), "tasks/get", json!({"taskId": id}), WITHIN)
            .await;
        if r["result"]["status"] == json!(status) {
            return r["result"].clone();
        }
        assert!(r.get("result").is_some(), "{r}");
        tokio::time::sleep(POLL).await;
    }
}

async fn as_task(c: &mut RawClient, name: &str, n: &mut u64, f: &mut Figures) {
    let t0 = Instant::now();
    let (handle, _) = c.request(name, "tools/call", create(name), WITHIN).await;
    f.handle.push(ms(t0.elapsed()));
    let id = handle["result"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("a task handle: {handle}"))
        .to_owned();
    until(c, &id, "input_required", n).await;
    f.asked.push(ms(t0.elapsed()));
    let t1 = Instant::now();
    *n += 1;
    let (ack, _) = c
        .request(
            &format!("u{n}"),
            "tasks/update",
            json!({"taskId": id, "inputResponses":
                {"approval": {"action": "accept", "content": {"approve": true}}}}),
            WITHIN,
        )
        .await;
    assert!(ack.get("result").is_some(), "{ack}");
    let done = until(c, &id, "completed", n).await;
    f.accept_to_done.push(ms(t1.elapsed()));
    assert_eq!(done["result"]["isError"], json!(false), "{done}");
}

async fn as_plain(c: &mut RawClient, name: &str, f: &mut Figures) {
    let t0 = Instant::now();
    c.send(json!({"jsonrpc": "2.0", "id": name, "method": "tools/call", "params": create(name)}))
        .await;
    let question = loop {
        let m = c.next(WITHIN).await.expect("a message");
        if m["method"] == json!("elicitation/create") {
            break m;
        }
    };
    f.asked.push(ms(t0.elapsed()));
    let t1 = Instant::now();
    c.send(json!({"jsonrpc": "2.0", "id": question["id"],
                  "result": {"action": "accept", "content": {"approve": true}}}))
        .await;
    let (r, _) = c.response(name, WITHIN).await;
    f.accept_to_done.push(ms(t1.elapsed()));
    assert_eq!(r["result"]["isError"], json!(false), "{r}");
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        // `cargo test --benches` asks the harness for its benchmarks.
        return;
    }
    let rounds: usize = std::env::var("CONDA_MCP_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(10);
    let standin = StandinPrefix::create(&paths::real_dump()).expect("stand-in");
    standin
        .set_control(&[ControlRule {
            transaction: Some(json!(true)),
            ..ControlRule::default()
        }])
        .expect("control");
    let flags = ["--approve-writes"];
    let mut task = RawClient::start_with_capabilities(
        &standin.conda_exe,
        &flags,
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {"form": {}}}),
    )
    .await;
    let mut plain = RawClient::start_with_capabilities(
        &standin.conda_exe,
        &flags,
        json!({"elicitation": {"form": {}}}),
    )
    .await;
    // Startup finished on both before the first round.
    task.request("l", "tools/list", json!({}), WITHIN).await;
    plain.request("l", "tools/list", json!({}), WITHIN).await;
    let (mut t, mut p) = (Figures::default(), Figures::default());
    let mut n = 0;
    for i in 0..rounds {
        if i % 2 == 0 {
            as_task(&mut task, &format!("t{i}"), &mut n, &mut t).await;
            as_plain(&mut plain, &format!("p{i}"), &mut p).await;
        } else {
            as_plain(&mut plain, &format!("p{i}"), &mut p).await;
            as_task(&mut task, &format!("t{i}"), &mut n, &mut t).await;
        }
    }
    println!("rounds: {rounds} (conda_create under --approve-writes, stand-in conda)");
    println!(
        "task:  tools/call -> handle {:.1} ms; -> input_required {:.0} ms; accept -> completed {:.0} ms (tasks/get every {} ms)",
        median(&mut t.handle),
        median(&mut t.asked),
        median(&mut t.accept_to_done),
        POLL.as_millis()
    );
    println!(
        "plain: tools/call -> elicitation/create {:.0} ms; accept -> result {:.0} ms",
        median(&mut p.asked),
        median(&mut p.accept_to_done)
    );
    task.close().await;
    plain.close().await;
}
