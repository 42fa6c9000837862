//! Benchmark of `conda_inventory` beside the 1 + N-call way through the
//! same server: `cargo bench -p conda-mcp-tests --bench inventory`.
//!
//! A stand-in conda (the recorded conda 26 parser, answering `list` and
//! `env list` as conda does) with 20 environments of 200 packages each
//! (`conda_mcp_tests::inventory::many`: numpy in every other one, pyyaml in
//! every third) and the base environment. Two questions:
//!
//! * "which environments have numpy": `conda_inventory {"package":
//!   "numpy"}` against `conda_env_list` + one `conda_list` per environment
//!   (what an agent with conda's commands as tools calls);
//! * "what provides `yaml`": `conda_inventory {"import_name": "yaml"}`
//!   against the same 1 + N calls (which list the packages but cannot even
//!   name the file; the agent has to guess from the names).
//!
//! For each: the calls, the bytes of the JSON-RPC responses (what reaches
//! the host), and the wall time per answer (median of interleaved runs
//! after a warm-up; the server keeps its worker and warm conda). Target:
//! one call, ≤ 100 ms warm, ≤ 1/10 of the bytes.
//!
//! `CONDA_MCP_BENCH_ENVS` and `CONDA_MCP_BENCH_PACKAGES` change the sizes;
//! `CONDA_MCP_BENCH_RUNS` the number of runs (default 15).

// A bench binary reports its figures on stdout (it is not the server).
#![allow(clippy::print_stdout)]

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use conda_mcp_tests::mcp::server_command;
use conda_mcp_tests::paths;
use conda_mcp_tests::standin::{ControlRule, StandinPrefix};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

struct Raw {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
    _dir: tempfile::TempDir,
}

impl Raw {
    async fn start(conda_exe: &Path, home: &Path) -> Raw {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut child = server_command(conda_exe, &[], dir.path())
            .env("HOME", home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn conda-mcp");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut raw = Raw {
            child,
            stdin,
            lines,
            next_id: 1,
            _dir: dir,
        };
        raw.request("initialize", json!({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}))
            .await;
        raw.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await;
        raw
    }

    async fn send(&mut self, v: &Value) {
        self.stdin
            .write_all(format!("{v}\n").as_bytes())
            .await
            .expect("write");
    }

    /// One request; returns the raw response line.
    async fn request(&mut self, method: &str, params: Value) -> String {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
        loop {
            let line = tokio::time::timeout(Duration::from_secs(300), self.lines.next_line())
                .await
                .expect("answer in time")
                .expect("read")
                .expect("server closed stdout");
            let v: Value = serde_json::from_str(&line).expect("JSON");
            if v.get("id") == Some(&json!(id)) {
                return line;
            }
        }
    }

    /// `tools/call`: the response line and its structured content.
    async fn call(&mut self, tool: &str, args: Value) -> (String, Value) {
        let line = self
            .request("tools/call", json!({"name": tool, "arguments": args}))
            .await;
        let v: Value = serde_json::from_str(&line).expect("JSON");
        assert_ne!(v["result"]["isError"], json!(true), "{tool}: {line}");
        let s = v["result"]["structuredContent"].clone();
        (line, s)
    }

    async fn close(mut self) {
        drop(self.stdin);
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }
}

/// One way of answering: calls made, bytes received, the answer's rows.
struct Way {
    calls: usize,
    bytes: usize,
    found: usize,
}

/// `conda_env_list`, then `conda_list` of each environment; `found`: the
/// environments whose list names `package`.
async fn one_plus_n(raw: &mut Raw, package: &str) -> Way {
    let (line, s) = raw.call("conda_env_list", json!({"json": true})).await;
    let mut way = Way {
        calls: 1,
        bytes: line.len(),
        found: 0,
    };
    let prefixes: Vec<String> = s["parsed_json"]["envs"]
        .as_array()
        .expect("envs")
        .iter()
        .map(|p| p.as_str().expect("prefix").to_owned())
        .collect();
    for prefix in prefixes {
        let (line, s) = raw
            .call("conda_list", json!({"prefix": prefix, "json": true}))
            .await;
        way.calls += 1;
        way.bytes += line.len();
        if s["parsed_json"]
            .as_array()
            .expect("packages")
            .iter()
            .any(|p| p["name"] == json!(package))
        {
            way.found += 1;
        }
    }
    way
}

async fn one_call(raw: &mut Raw, args: Value) -> Way {
    let (line, s) = raw.call("conda_inventory", args).await;
    Way {
        calls: 1,
        bytes: line.len(),
        found: s["rows"].as_array().map_or(0, Vec::len),
    }
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let envs = env_usize("CONDA_MCP_BENCH_ENVS", 20);
    let packages = env_usize("CONDA_MCP_BENCH_PACKAGES", 200);
    let runs = env_usize("CONDA_MCP_BENCH_RUNS", 15);
    let standin = StandinPrefix::create(&paths::real_dump()).expect("stand-in");
    standin
        .set_control(&[ControlRule {
            listing: Some(true),
            ..ControlRule::default()
        }])
        .expect("control");
    conda_mcp_tests::inventory::many(&standin.prefix.join("envs"), envs, packages);
    let home = tempfile::tempdir().expect("home");
    let mut raw = Raw::start(&standin.conda_exe, home.path()).await;
    println!(
        "inventory: {envs} environments of {packages} packages (+ base), stand-in conda, {runs} runs"
    );
    for (question, package, args) in [
        (
            "which environments have numpy",
            "numpy",
            json!({"package": "numpy"}),
        ),
        (
            "what provides yaml",
            "pyyaml",
            json!({"import_name": "yaml"}),
        ),
    ] {
        // Warm-up: the worker, the warm conda, the page cache.
        let base = one_plus_n(&mut raw, package).await;
        let inv = one_call(&mut raw, args.clone()).await;
        assert_eq!(base.found, inv.found, "{question}: both ways find the same");
        let (mut t_base, mut t_inv) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let t = Instant::now();
            one_plus_n(&mut raw, package).await;
            t_base.push(t.elapsed());
            let t = Instant::now();
            one_call(&mut raw, args.clone()).await;
            t_inv.push(t.elapsed());
        }
        let (mb, mi) = (median(&mut t_base), median(&mut t_inv));
        println!("{question} ({} environments found):", inv.found);
        println!(
            "  1 + N calls: {:>3} calls, {:>9} bytes, {:>8.1} ms median",
            base.calls,
            base.bytes,
            ms(mb)
        );
        println!(
            "  conda_inventory: {:>3} call,  {:>9} bytes, {:>8.1} ms median (min {:.1} ms)",
            inv.calls,
            inv.bytes,
            ms(mi),
            ms(*t_inv.iter().min().expect("runs"))
        );
        println!(
            "  ratio: bytes {:.4} ({:.0}x fewer), time {:.3}",
            inv.bytes as f64 / base.bytes as f64,
            base.bytes as f64 / inv.bytes as f64,
            ms(mi) / ms(mb)
        );
    }
    raw.close().await;
}
