//! The log never blocks the protocol: a host that never reads the server's
//! stderr still gets every answer (`shared/src/log_writer.rs`; README
//! "Logs").
//!
//! The server's stderr is a 4 KiB pipe that nobody reads while the test
//! makes 1,000 calls (and `ping`) with the debug log on, so the server and
//! its worker log far more than the pipe and the writer's queue hold. Then
//! the test reads the pipe: every request line is either there or counted
//! in a `log lines dropped` report, and the report comes once the pipe
//! drained.

use std::io::{BufRead, BufReader};
use std::os::fd::OwnedFd;
use std::process::Stdio;
use std::time::Duration;

use conda_mcp_tests::rawrpc::RawClient;
use conda_mcp_tests::standin::StandinPrefix;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use serde_json::json;

/// Calls made while nobody reads stderr.
const CALLS: usize = 1000;

/// A pipe of 4 KiB (the smallest Linux allows: one page): (read end,
/// write end), both close-on-exec so the server gets only what it is
/// given.
fn small_pipe() -> (OwnedFd, OwnedFd) {
    let (r, w) = nix::unistd::pipe2(OFlag::O_CLOEXEC).expect("pipe");
    fcntl(&w, FcntlArg::F_SETPIPE_SZ(4096)).expect("F_SETPIPE_SZ");
    (r, w)
}

/// The `dropped=N` and `total=N` fields of a text log line.
fn field(line: &str, name: &str) -> Option<u64> {
    let at = line.find(&format!("{name}="))? + name.len() + 1;
    let digits: String = line[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_that_never_reads_stderr_gets_every_answer() {
    let prefix = StandinPrefix::standard();
    let (read_end, write_end) = small_pipe();
    let mut c = RawClient::spawn_with_stderr(
        &prefix.conda_exe,
        &[],
        &[("RUST_LOG", "debug")],
        Some(Stdio::from(write_end)),
    );
    c.initialize(json!({})).await;

    // Calls that answer from the server alone (invalid arguments, a read
    // of the capabilities), and some that run conda through the worker,
    // whose own log lines go to the same pipe.
    for i in 0..CALLS {
        let id = format!("c{i}");
        let (answer, _) = if i % 100 == 0 {
            c.request(
                &id,
                "tools/call",
                json!({"name": "conda_info", "arguments": {}}),
                Duration::from_secs(60),
            )
            .await
        } else if i % 2 == 0 {
            c.request(
                &id,
                "tools/call",
                json!({"name": "conda_info", "arguments": {"no_such_option": true}}),
                Duration::from_secs(60),
            )
            .await
        } else {
            c.request(
                &id,
                "resources/read",
                json!({"uri": "conda://capabilities"}),
                Duration::from_secs(60),
            )
            .await
        };
        let result = answer
            .get("result")
            .unwrap_or_else(|| panic!("call {i}: {answer}"));
        if i % 100 == 0 {
            assert_eq!(
                result["isError"],
                json!(false),
                "call {i} ran conda: {result}"
            );
            assert_eq!(result["structuredContent"]["exit_code"], json!(0));
        } else if i % 2 == 0 {
            assert_eq!(
                result["isError"],
                json!(true),
                "call {i} is invalid: {result}"
            );
        } else {
            assert!(result["contents"].is_array(), "call {i}: {result}");
        }
    }
    let (pong, _) = c
        .request("ping", "ping", json!({}), Duration::from_secs(60))
        .await;
    assert_eq!(pong["result"], json!({}), "{pong}");

    // Now read the pipe: the backlog, then the report of what was dropped.
    let (lines_tx, mut lines_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(std::fs::File::from(read_end)).lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines: Vec<String> = Vec::new();
    let mut server_dropped = None;
    while server_dropped.is_none() {
        let line = tokio::time::timeout(Duration::from_secs(60), lines_rx.recv())
            .await
            .expect("the server reported its dropped lines once stderr was read")
            .expect("stderr closed before the report of dropped lines");
        if line.contains("log lines dropped") && line.contains("conda_mcp_server") {
            server_dropped = field(&line, "total");
        }
        lines.push(line);
    }
    // The server goes on answering, and exits when stdin closes.
    let (pong, _) = c
        .request("ping2", "ping", json!({}), Duration::from_secs(60))
        .await;
    assert_eq!(pong["result"], json!({}));
    assert!(c.close().await.is_some(), "the server exited");
    while let Some(line) = lines_rx.recv().await {
        lines.push(line);
    }

    let server_dropped = server_dropped.expect("the report was read");
    assert!(
        server_dropped > 0,
        "nothing was dropped: the test did not fill the pipe"
    );
    // Every report counts on from the last (`total` rises).
    let reports: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("log lines dropped"))
        .collect();
    for r in &reports {
        let (since, total) = (field(r, "dropped"), field(r, "total"));
        assert!(
            matches!((since, total), (Some(s), Some(t)) if s > 0 && s <= t),
            "a report with its counts: {r}"
        );
    }
    // Every request line of the server is there or was counted as dropped
    // (the drops also count other lines, hence at least).
    let requests_logged = lines
        .iter()
        .filter(|l| l.contains("::request_log: request "))
        .count() as u64;
    let dropped_total: u64 = lines
        .iter()
        .filter(|l| l.contains("log lines dropped") && l.contains("conda_mcp_server"))
        .filter_map(|l| field(l, "total"))
        .max()
        .unwrap_or(0);
    let requests = CALLS as u64 + 3; // initialize, the calls, two pings
    assert!(
        requests_logged + dropped_total >= requests,
        "{requests_logged} request lines written and {dropped_total} lines dropped cannot \
         account for {requests} requests"
    );
    assert!(
        requests_logged < requests,
        "every request line was written: nothing was dropped"
    );
    // The worker ran conda while nobody read: its lines either arrived or it
    // counted them too.
    let worker_lines = lines.iter().filter(|l| l.contains("job finished")).count();
    let worker_reports = reports
        .iter()
        .filter(|l| !l.contains("conda_mcp_server"))
        .count();
    assert!(
        worker_lines > 0 || worker_reports > 0,
        "the worker's log is neither there nor counted as dropped"
    );
}
