//! Sessions of the `initialize` era over HTTP (`Mcp-Session-Id`,
//! docs/approval.md "Over HTTP"), measured over loopback:
//! `cargo bench -p conda-mcp-tests --bench http_sessions`
//! (`CONDA_MCP_BIN_DIR=target/release` for the release binaries).
//!
//! 1. Memory per idle session: the server's RSS before and after opening
//!    [`OPENED`] sessions (`initialize` declaring elicitation, then
//!    `notifications/initialized`), with `--max-sessions` above that.
//! 2. The bound: [`OPENED`] sessions opened against the default
//!    `--max-sessions`, then how many of their ids still answer.
//! 3. Latency: the median and p90 of [`CALLS`] `tools/call` of
//!    `conda_env_list` (one conda run each, the warm conda on), one at a
//!    time, sessionless (a JSON answer) and in a session (an SSE answer).
//!
//! Never asserts a timing.

// A bench binary reports its figures on stdout (it is not the server).
#![allow(clippy::print_stdout)]

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use conda_mcp_server::transport::http::tokens::file_line;
use conda_mcp_tests::http::{HttpServer, messages, post_mcp, tempdir};
use conda_mcp_tests::procfs::figures;
use conda_mcp_tests::standin::StandinPrefix;
use conda_mcp_tests::stats::percentile;
use serde_json::{Value, json};

const TOKEN: &str = "cmcp_bench-sessions";
const OPENED: usize = 200;
const CALLS: usize = 50;

fn server(prefix: &StandinPrefix, extra: &[&str]) -> HttpServer {
    let dir = tempdir();
    let file = dir.path().join("tokens");
    std::fs::write(&file, file_line("bench", TOKEN, None)).expect("token file");
    let mut args = vec!["--auth-tokens".to_owned(), file.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    HttpServer::start_in(dir, &prefix.conda_exe, &args)
}

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

/// Opens one session; its id.
fn open(addr: SocketAddr) -> String {
    let b = bearer();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "bench", "version": "1"}}});
    let r = post_mcp(addr, &[("Authorization", &b)], &init).expect("initialize");
    let id = r.header("Mcp-Session-Id").expect("a session").to_owned();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let h = [
        ("Authorization", b.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
        ("Mcp-Session-Id", id.as_str()),
    ];
    post_mcp(addr, &h, &note).expect("initialized");
    id
}

/// One `tools/call` of `conda_env_list` (in `session` when given): its
/// latency and whether it answered `exit_code` 0.
fn call(addr: SocketAddr, session: Option<&str>, n: usize) -> (Duration, bool) {
    let b = bearer();
    let mut h = vec![
        ("Authorization", b.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    if let Some(s) = session {
        h.push(("Mcp-Session-Id", s));
    }
    let body = json!({"jsonrpc": "2.0", "id": n, "method": "tools/call",
        "params": {"name": "conda_env_list", "arguments": {"json": true}}});
    let t = Instant::now();
    let r = post_mcp(addr, &h, &body).expect("call");
    let took = t.elapsed();
    let good = messages(&r)
        .iter()
        .any(|m: &Value| m["result"]["structuredContent"]["exit_code"] == json!(0));
    (took, good)
}

fn main() {
    let prefix = StandinPrefix::create(&conda_mcp_tests::paths::real_dump()).expect("stand-in");

    // 1. Memory per idle session.
    let s = server(&prefix, &["--max-sessions", "1000"]);
    let pid = s.child.id() as i32;
    let _ = call(s.addr, None, 0);
    std::thread::sleep(Duration::from_secs(1));
    let before = figures(pid).expect("figures");
    let ids: Vec<String> = (0..OPENED).map(|_| open(s.addr)).collect();
    std::thread::sleep(Duration::from_secs(1));
    let after = figures(pid).expect("figures");
    let per = (after.rss_kib.saturating_sub(before.rss_kib)) as f64 / OPENED as f64;
    println!(
        "memory: RSS {:.1} MiB before, {:.1} MiB after {OPENED} idle sessions: {per:.1} KiB a \
         session; threads {} -> {}, fds {} -> {}",
        before.rss_kib as f64 / 1024.0,
        after.rss_kib as f64 / 1024.0,
        before.threads,
        after.threads,
        before.fds,
        after.fds
    );
    drop(ids);
    drop(s);

    // 2. The bound (default --max-sessions).
    let s = server(&prefix, &[]);
    let ids: Vec<String> = (0..OPENED).map(|_| open(s.addr)).collect();
    let b = bearer();
    let live = ids
        .iter()
        .filter(|id| {
            let h = [
                ("Authorization", b.as_str()),
                ("MCP-Protocol-Version", "2025-11-25"),
                ("Mcp-Session-Id", id.as_str()),
            ];
            let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
            post_mcp(s.addr, &h, &ping).is_ok_and(|r| r.status == 200)
        })
        .count();
    println!(
        "bound: {OPENED} sessions opened, {live} still answer (the rest 404: the least recently \
         used idle ones were closed)"
    );

    // 3. Latency, sessionless and in a session.
    let session = open(s.addr);
    for _ in 0..3 {
        let _ = call(s.addr, None, 0);
        let _ = call(s.addr, Some(&session), 0);
    }
    for (name, sid) in [
        ("sessionless", None),
        ("in a session", Some(session.as_str())),
    ] {
        let mut lat = Vec::new();
        let mut bad = 0;
        for n in 0..CALLS {
            let (t, good) = call(s.addr, sid, n + 10);
            lat.push(t);
            bad += usize::from(!good);
        }
        lat.sort();
        println!(
            "latency {name}: {CALLS} tools/call conda_env_list, median {:.1} ms, p90 {:.1} ms, \
             not exit_code 0: {bad}",
            percentile(&lat, 0.50).as_secs_f64() * 1e3,
            percentile(&lat, 0.90).as_secs_f64() * 1e3,
        );
    }
}
