//! Discovery benchmark: process start to catalog ready.
//!
//! ```text
//! cargo bench -p conda-mcp-tests --bench discovery            # 15 rounds
//! CONDA_MCP_BENCH_ROUNDS=30 cargo bench -p conda-mcp-tests --bench discovery
//! ```
//!
//! On a fresh stand-in conda prefix (`tests/fixtures/dumps/standin.json`),
//! each round runs, interleaved so that all three see the same machine load:
//!
//! * **bare**: the embedded helper run directly by the target's interpreter
//!   (`<prefix>/bin/python -` with the helper on stdin), spawn to exit;
//! * **cold**: this benchmark binary re-executed as a probe that runs
//!   `discovery::discover` with an empty cache folder (target and
//!   interpreter resolution, a worker, the helper through it, parsing, the
//!   catalog, the cache write), spawn to exit;
//! * **warm**: the same probe with the cache written by a previous start
//!   (a hit: no Python, no worker).
//!
//! It prints the medians and the ratio cold / bare measured in this one run.
//! Targets: cold ≤ 1.15 × bare, warm ≤ 30 ms.

#![allow(clippy::print_stdout)] // a benchmark reports on stdout
#![allow(missing_docs)]

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use conda_mcp_server::discovery::{DiscoveryOptions, discover, helper::HELPER_SOURCE};
use conda_mcp_server::worker_client::WorkerConfig;
use conda_mcp_tests::bins;
use conda_mcp_tests::standin::StandinPrefix;
use conda_mcp_tests::stats::{median, ms};

const PROBE: &str = "CONDA_MCP_BENCH_PROBE";

fn probe() {
    let var = |k: &str| std::env::var_os(k).map(PathBuf::from).expect(k);
    let conda = var("CONDA_MCP_BENCH_CONDA");
    let mut worker = WorkerConfig::new(&conda);
    worker.worker_exe = var("CONDA_MCP_BENCH_WORKER");
    let opts = DiscoveryOptions {
        conda_exe: Some(conda),
        cache_dir: Some(var("CONDA_MCP_BENCH_CACHE")),
        worker,
        ..DiscoveryOptions::new()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let d = rt.block_on(discover(&opts)).expect("discovery");
    assert!(d.catalog.tools().count() > 0);
    // Tell the parent which path was taken.
    std::process::exit(if d.from_cache { 10 } else { 11 });
}

fn time(mut cmd: Command, stdin: Option<&[u8]>) -> (Duration, Option<i32>) {
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let t = Instant::now();
    let mut child = cmd.spawn().expect("spawn");
    if let Some(bytes) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(bytes)
            .expect("write stdin");
    }
    let status = child.wait().expect("wait");
    (t.elapsed(), status.code())
}

fn main() {
    if std::env::var_os(PROBE).is_some() {
        return probe();
    }
    let rounds: usize = std::env::var("CONDA_MCP_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    let prefix = StandinPrefix::standard();
    let worker = bins::worker();
    let me = std::env::current_exe().expect("own path");
    let warm_cache = tempfile::tempdir().expect("tempdir");
    let probe_cmd = |cache: &std::path::Path| {
        let mut c = Command::new(&me);
        c.env(PROBE, "1")
            .env("CONDA_MCP_BENCH_CONDA", &prefix.conda_exe)
            .env("CONDA_MCP_BENCH_WORKER", &worker)
            .env("CONDA_MCP_BENCH_CACHE", cache);
        c
    };
    // Fill the warm cache and warm the OS caches once.
    let (_, code) = time(probe_cmd(warm_cache.path()), None);
    assert_eq!(code, Some(11), "first start is a miss");
    let (_, code) = time(probe_cmd(warm_cache.path()), None);
    assert_eq!(code, Some(10), "second start is a hit");

    let (mut bare, mut cold, mut warm) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds {
        let mut c = Command::new(&prefix.python);
        c.arg("-");
        let (d, code) = time(c, Some(HELPER_SOURCE.as_bytes()));
        assert_eq!(code, Some(0), "bare helper");
        bare.push(d);

        let empty = tempfile::tempdir().expect("tempdir");
        let (d, code) = time(probe_cmd(empty.path()), None);
        assert_eq!(code, Some(11), "cold start is a miss");
        cold.push(d);

        let (d, code) = time(probe_cmd(warm_cache.path()), None);
        assert_eq!(code, Some(10), "warm start is a hit");
        warm.push(d);
    }
    let (b, c, w) = (median(&mut bare), median(&mut cold), median(&mut warm));
    let ratio = c.as_secs_f64() / b.as_secs_f64();
    println!("discovery benchmark on the stand-in conda ({rounds} interleaved rounds, medians)");
    println!("  bare helper (python - < helper.py)   {:8.1} ms", ms(b));
    println!("  cold start to catalog ready          {:8.1} ms", ms(c));
    println!("  warm start (cache hit)               {:8.1} ms", ms(w));
    println!(
        "  cold / bare = {ratio:.3} (target <= 1.15: {}); warm {:.1} ms (target <= 30 ms: {})",
        if ratio <= 1.15 { "met" } else { "MISSED" },
        ms(w),
        if ms(w) <= 30.0 { "met" } else { "MISSED" }
    );
}
