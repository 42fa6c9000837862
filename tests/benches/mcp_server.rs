//! Benchmark of the MCP server: `cargo bench -p conda-mcp-tests --bench mcp_server`.
//!
//! 1. `tools/list` latency (median of 200 requests after warm-up) and size in
//!    bytes, for the recorded real conda 26 parser (`CONDA_MCP_REAL_DUMP`
//!    names another recording) in each schema profile, read-only and with
//!    `--allow-write --allow-exec`, in `--tool-mode compact` and filtered
//!    to docs/using.md's read-mostly `--tools` example (served by a stand-in
//!    prefix built from that dump), with each size's ratio to the default
//!    (portable, read-only). Targets with every flag on: ≤ 40,000 bytes in
//!    the portable profile (every tool; ≤ 46,000 on
//!    `tests/fixtures/dumps/conda-26-plugins.json`, the recording with
//!    conda-index and conda-pypi), ≤ 4,200 bytes in compact mode.
//! 2. Startup: from spawning the server to its `initialize` answer, with
//!    an empty discovery cache (the helper runs) and with a warm one (no
//!    Python), medians of interleaved runs and their ratio.
//! 3. Per-call overhead of a generated tool (`conda_info`) against running
//!    the stand-in `conda info` directly: interleaved runs, medians, their
//!    ratio and difference, with `--no-warm-conda` (the overhead; target
//!    ≤ 3 ms added per call) and with the warm conda (the default).
//!
//! The client is a minimal JSON-RPC writer/reader over the server's pipes
//! (no client-side caching), in the `initialize` era.

// A bench binary reports its figures on stdout (it is not the server).
#![allow(clippy::print_stdout)]

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use conda_mcp_tests::mcp::server_command;
use conda_mcp_tests::paths;
use conda_mcp_tests::standin::StandinPrefix;
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
    async fn start(conda_exe: &Path, args: &[&str]) -> Raw {
        Self::start_in(tempfile::tempdir().expect("tempdir"), conda_exe, args).await
    }

    /// [`Raw::start`] with the private folder (discovery cache) `dir`.
    async fn start_in(dir: tempfile::TempDir, conda_exe: &Path, args: &[&str]) -> Raw {
        let mut child = server_command(conda_exe, args, dir.path())
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
            let line = tokio::time::timeout(Duration::from_secs(120), self.lines.next_line())
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

    async fn close(self) {
        self.close_keeping().await;
    }

    /// Closes and hands back the private folder (to start again on the
    /// same discovery cache).
    async fn close_keeping(mut self) -> tempfile::TempDir {
        drop(self.stdin);
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
        self._dir
    }
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Size targets of `tools/list` (the `tools` array, bytes, every tool) on
/// the recorded real conda 26 parser with `--allow-write --allow-exec`:
/// typed tools in the portable profile (on `conda-26-plugins.json`, the
/// recording with conda-index and conda-pypi, its own target), and
/// `--tool-mode compact`; the limits the surface tests check.
fn typed_target_bytes() -> usize {
    let dump = paths::real_dump();
    if dump
        .file_name()
        .is_some_and(|n| n == "conda-26-plugins.json")
    {
        conda_mcp_tests::mcp::PLUGINS_LIST_MAX_BYTES
    } else {
        conda_mcp_tests::mcp::TYPED_LIST_MAX_BYTES
    }
}
const COMPACT_TARGET_BYTES: usize = conda_mcp_tests::mcp::COMPACT_LIST_MAX_BYTES;

/// docs/using.md's read-mostly `--tools` example for hosts with a tool limit.
const READ_MOSTLY: &str =
    "info,list,search,env list,env export,export,config,compare,notices,doctor";

async fn tools_list(conda_exe: &Path) {
    let all = ["--allow-write", "--allow-exec"];
    let mut default_bytes = None;
    let configurations: [(&str, Vec<&str>, Option<usize>); 6] = [
        (
            "portable, read-only",
            vec!["--schema-profile", "portable"],
            None,
        ),
        ("full, read-only", vec!["--schema-profile", "full"], None),
        (
            "portable, all flags",
            [&["--schema-profile", "portable"][..], &all].concat(),
            Some(typed_target_bytes()),
        ),
        (
            "full, all flags",
            [&["--schema-profile", "full"][..], &all].concat(),
            None,
        ),
        (
            "compact, all flags",
            [&["--tool-mode", "compact"][..], &all].concat(),
            Some(COMPACT_TARGET_BYTES),
        ),
        ("filtered, read-only", vec!["--tools", READ_MOSTLY], None),
    ];
    for (profile, args, target) in configurations {
        let mut raw = Raw::start(conda_exe, &args).await;
        let first = raw.request("tools/list", json!({})).await;
        let v: Value = serde_json::from_str(&first).expect("json");
        let tools = &v["result"]["tools"];
        let tools_bytes = serde_json::to_vec(tools).expect("json").len();
        for _ in 0..20 {
            raw.request("tools/list", json!({})).await;
        }
        let mut times = Vec::new();
        for _ in 0..200 {
            let t = Instant::now();
            raw.request("tools/list", json!({})).await;
            times.push(t.elapsed());
        }
        let default = *default_bytes.get_or_insert(tools_bytes);
        println!(
            "tools/list real conda {} dump, {profile:20}: {} tools, tools array {} bytes ({:.1} KiB, {:.3} of the default), response frame {} bytes, median latency {:.3} ms{}",
            conda_version(),
            tools.as_array().map_or(0, Vec::len),
            tools_bytes,
            tools_bytes as f64 / 1024.0,
            tools_bytes as f64 / default as f64,
            first.len(),
            ms(median(&mut times)),
            match target {
                Some(t) => format!(
                    " (target ≤ {t}: {})",
                    if tools_bytes <= t { "met" } else { "MISSED" }
                ),
                None => String::new(),
            }
        );
        raw.close().await;
    }
}

/// The conda version of the recording the bench reads.
fn conda_version() -> String {
    let text = std::fs::read_to_string(paths::real_dump()).expect("the recorded dump");
    let v: Value = serde_json::from_str(&text).expect("dump JSON");
    v["conda_version"].as_str().unwrap_or("?").to_owned()
}

/// From spawning the server to its `initialize` answer (the server is
/// ready: discovery, catalog and tools are done), with an empty discovery
/// cache and with the cache the previous start left, interleaved.
async fn startup(standin: &StandinPrefix) {
    let rounds = 15;
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    for round in 0..=rounds {
        let t = Instant::now();
        let raw = Raw::start(&standin.conda_exe, &[]).await;
        let cold_ms = t.elapsed();
        let dir = raw.close_keeping().await;
        let t = Instant::now();
        let raw = Raw::start_in(dir, &standin.conda_exe, &[]).await;
        let warm_ms = t.elapsed();
        raw.close().await;
        if round > 0 {
            // Round 0 warms the page cache.
            cold.push(cold_ms);
            warm.push(warm_ms);
        }
    }
    let (c, w) = (median(&mut cold), median(&mut warm));
    println!(
        "startup to the initialize answer ({rounds} interleaved rounds, stand-in conda, default flags): empty discovery cache median {:.1} ms, warm cache median {:.1} ms, ratio {:.3}",
        ms(c),
        ms(w),
        w.as_secs_f64() / c.as_secs_f64()
    );
}

/// `conda_info` through the server against the stand-in's `conda info` run
/// directly (a fresh process): with `--no-warm-conda` the difference is the
/// server's and worker's overhead; with the warm conda (the default) the
/// call is forked from an imported interpreter and can beat a fresh start.
async fn call_overhead(standin: &StandinPrefix, args: &[&str]) {
    let mut raw = Raw::start(&standin.conda_exe, args).await;
    let call = || json!({"name": "conda_info", "arguments": {}});
    for _ in 0..5 {
        let r = raw.request("tools/call", call()).await;
        assert!(r.contains("\"isError\":false"), "{r}");
        let out = tokio::process::Command::new(&standin.conda_exe)
            .arg("info")
            .stdin(Stdio::null())
            .output()
            .await
            .expect("direct run");
        assert!(out.status.success());
    }
    let rounds = 60;
    let (mut via_mcp, mut direct) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let t = Instant::now();
        let r = raw.request("tools/call", call()).await;
        via_mcp.push(t.elapsed());
        assert!(r.contains("\"isError\":false"), "{r}");
        let t = Instant::now();
        let out = tokio::process::Command::new(&standin.conda_exe)
            .arg("info")
            .stdin(Stdio::null())
            .output()
            .await
            .expect("direct run");
        direct.push(t.elapsed());
        assert!(out.status.success());
    }
    let (m, d) = (median(&mut via_mcp), median(&mut direct));
    println!(
        "per call ({rounds} interleaved rounds, {}): conda_info via MCP median {:.2} ms, stand-in `conda info` directly median {:.2} ms, ratio {:.3}, added {:.2} ms",
        if args.is_empty() {
            "warm conda (default)".to_owned()
        } else {
            args.join(" ")
        },
        ms(m),
        ms(d),
        m.as_secs_f64() / d.as_secs_f64(),
        ms(m) - ms(d)
    );
    raw.close().await;
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        // `cargo test --benches` asks the harness for its benchmarks.
        return;
    }
    let standin =
        StandinPrefix::create(&paths::real_dump()).expect("stand-in prefix for the real dump");
    tools_list(&standin.conda_exe).await;
    let standin = StandinPrefix::standard();
    startup(&standin).await;
    call_overhead(&standin, &["--no-warm-conda"]).await;
    call_overhead(&standin, &[]).await;
}
