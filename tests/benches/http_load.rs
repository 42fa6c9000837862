//! Load over loopback, HTTP beside stdio:
//! `cargo bench -p conda-mcp-tests --bench http_load`.
//!
//! 50 concurrent clients × 20 read-only calls (`conda_info`, a conda run
//! each, against the stand-in conda with the warm conda on), first to
//! `conda-mcp --listen` with a bearer token (each client a thread, one
//! connection per request), then the same 1000 calls over one stdio pipe
//! with at most 50 in flight. Reports whether every call was answered
//! exactly once with `exit_code` 0, latency p50/p99 (from sending a request
//! to its answer, so queueing on the one exec lane is included) and the
//! server's RSS and open fds before and after. Never asserts a timing.

// A bench binary reports its figures on stdout (it is not the server).
#![allow(clippy::print_stdout)]

use std::collections::HashMap;
use std::time::{Duration, Instant};

use conda_mcp_server::transport::http::tokens::file_line;
use conda_mcp_tests::http::{HttpServer, post_mcp, tempdir};
use conda_mcp_tests::procfs::figures;
use conda_mcp_tests::rawrpc::RawClient;
use conda_mcp_tests::standin::StandinPrefix;
use serde_json::{Value, json};

const CLIENTS: usize = 50;
const CALLS: usize = 20;
const TOKEN: &str = "cmcp_bench-token";

fn call(id: String) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": "conda_info", "arguments": {"json": true}}})
}

fn ok(v: &Value) -> bool {
    v["result"]["structuredContent"]["exit_code"] == json!(0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

struct Run {
    answered: HashMap<String, usize>,
    failed: usize,
    latencies: Vec<Duration>,
    wall: Duration,
    before: Option<conda_mcp_tests::procfs::Figures>,
    after: Option<conda_mcp_tests::procfs::Figures>,
}

fn report(name: &str, mut r: Run) {
    r.latencies.sort();
    let once = r.answered.len() == CLIENTS * CALLS && r.answered.values().all(|n| *n == 1);
    println!(
        "{name}: {} calls, answered exactly once: {once}, not exit_code 0: {}, wall {:.1} s, \
         p50 {:.1} ms, p99 {:.1} ms",
        CLIENTS * CALLS,
        r.failed,
        r.wall.as_secs_f64(),
        percentile(&r.latencies, 0.50).as_secs_f64() * 1e3,
        percentile(&r.latencies, 0.99).as_secs_f64() * 1e3,
    );
    let f = |x: Option<conda_mcp_tests::procfs::Figures>| {
        x.map(|f| format!("RSS {:.1} MiB, {} fds", f.rss_kib as f64 / 1024.0, f.fds))
            .unwrap_or_else(|| "gone".into())
    };
    println!("  server before: {}; after: {}", f(r.before), f(r.after));
}

fn http(prefix: &StandinPrefix) -> Run {
    let dir = tempdir();
    let file = dir.path().join("tokens");
    std::fs::write(&file, file_line("bench", TOKEN, None)).expect("token file");
    let server = HttpServer::start_in(
        dir,
        &prefix.conda_exe,
        &["--auth-tokens", file.to_str().expect("utf-8")],
    );
    let addr = server.addr;
    let bearer = format!("Bearer {TOKEN}");
    // Warm up: the worker and its warm conda start with the first call.
    let warm = post_mcp(addr, &[("Authorization", &bearer)], &call("w".into())).expect("warm");
    assert!(
        ok(&serde_json::from_str(&warm.body).expect("json")),
        "{warm:?}"
    );
    std::thread::sleep(Duration::from_secs(1));
    let pid = server.child.id() as i32;
    let before = figures(pid);
    let started = Instant::now();
    let threads: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let bearer = bearer.clone();
            std::thread::spawn(move || {
                let mut out = Vec::new();
                for i in 0..CALLS {
                    let id = format!("{c}-{i}");
                    let t = Instant::now();
                    let r = post_mcp(addr, &[("Authorization", &bearer)], &call(id.clone()));
                    let took = t.elapsed();
                    let v: Value = r
                        .ok()
                        .and_then(|r| serde_json::from_str(&r.body).ok())
                        .unwrap_or(Value::Null);
                    out.push((v["id"].as_str().unwrap_or("").to_owned(), ok(&v), took));
                }
                out
            })
        })
        .collect();
    let mut run = Run {
        answered: HashMap::new(),
        failed: 0,
        latencies: Vec::new(),
        wall: Duration::ZERO,
        before,
        after: None,
    };
    for t in threads {
        for (id, good, took) in t.join().expect("client") {
            *run.answered.entry(id).or_default() += 1;
            run.failed += usize::from(!good);
            run.latencies.push(took);
        }
    }
    run.wall = started.elapsed();
    std::thread::sleep(Duration::from_secs(1));
    run.after = figures(pid);
    run
}

async fn stdio(prefix: &StandinPrefix) -> Run {
    let mut c = RawClient::start(&prefix.conda_exe, &[]).await;
    c.send(call("w".into())).await;
    let (warm, _) = c.response("w", Duration::from_secs(60)).await;
    assert!(ok(&warm), "{warm}");
    tokio::time::sleep(Duration::from_secs(1)).await;
    let pid = c.pid() as i32;
    let before = figures(pid);
    let started = Instant::now();
    let mut sent: HashMap<String, Instant> = HashMap::new();
    let mut next = vec![0usize; CLIENTS];
    for (client, n) in next.iter_mut().enumerate() {
        let id = format!("{client}-0");
        sent.insert(id.clone(), Instant::now());
        c.send(call(id)).await;
        *n = 1;
    }
    let mut run = Run {
        answered: HashMap::new(),
        failed: 0,
        latencies: Vec::new(),
        wall: Duration::ZERO,
        before,
        after: None,
    };
    while run.latencies.len() < CLIENTS * CALLS {
        let Some(v) = c.next(Duration::from_secs(120)).await else {
            break;
        };
        let Some(id) = v["id"].as_str().map(str::to_owned) else {
            continue;
        };
        let Some(t) = sent.get(&id) else { continue };
        run.latencies.push(t.elapsed());
        *run.answered.entry(id.clone()).or_default() += 1;
        run.failed += usize::from(!ok(&v));
        let client: usize = id
            .split('-')
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        if next[client] < CALLS {
            let id = format!("{client}-{}", next[client]);
            next[client] += 1;
            sent.insert(id.clone(), Instant::now());
            c.send(call(id)).await;
        }
    }
    run.wall = started.elapsed();
    tokio::time::sleep(Duration::from_secs(1)).await;
    run.after = figures(pid);
    c.close().await;
    run
}

fn main() {
    let prefix = StandinPrefix::standard();
    println!(
        "{CLIENTS} clients x {CALLS} conda_info calls over loopback (stand-in conda, warm conda)"
    );
    report("HTTP (--listen, bearer token)", http(&prefix));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    report(
        "stdio (one pipe, <= 50 in flight)",
        rt.block_on(stdio(&prefix)),
    );
}
