//! Benchmark (not a test): per-call overhead of the worker path.
//!
//! Measures, interleaved in one run so that machine load hits both sides
//! alike, (a) `Executor::run` → socket → `conda-mcp-worker` → `/bin/true` →
//! result, against (b) spawning `/bin/true` directly from tokio with its
//! output piped and collected. Prints the median of each, the difference
//! (the overhead added per call; target ≤ 2 ms) and the ratio.
//!
//! Run: `cargo bench -p conda-mcp-tests --bench worker_overhead`
//! (`CONDA_MCP_BENCH_RUNS` changes the number of runs per side, default
//! 300, at least 200).
#![allow(clippy::print_stdout)] // a bench binary reports on stdout

use std::time::{Duration, Instant};

use conda_mcp_server::worker_client::{Executor, Job, Program, WorkerConfig};
use conda_mcp_tests::stats::{median, ms};

fn main() {
    let runs: usize = std::env::var("CONDA_MCP_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300)
        .max(200);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let mut cfg = WorkerConfig::new("/bin/true");
        cfg.worker_exe = conda_mcp_tests::bins::worker();
        let ex = Executor::new(cfg);
        ex.connect().await.expect("worker");
        let job = || {
            let mut j = Job::new(Program::Conda, Vec::new());
            j.limits.timeout = Duration::from_secs(30);
            j
        };
        // Warm-up of both paths.
        for _ in 0..20 {
            ex.run(job(), |_| {}).await.expect("run");
            direct().await;
        }
        let (mut via, mut raw) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
        for _ in 0..runs {
            let t = Instant::now();
            let r = ex.run(job(), |_| {}).await.expect("run");
            via.push(t.elapsed());
            assert_eq!(r.exit_code, Some(0));
            let t = Instant::now();
            direct().await;
            raw.push(t.elapsed());
        }
        ex.shutdown().await;
        let (mv, mr) = (median(&mut via), median(&mut raw));
        println!("worker_overhead: {runs} runs each, interleaved");
        println!(
            "  executor -> worker -> /bin/true : median {:.3} ms",
            ms(mv)
        );
        println!(
            "  direct spawn of /bin/true       : median {:.3} ms",
            ms(mr)
        );
        println!(
            "  added per call: {:.3} ms (target <= 2 ms); ratio {:.2}x",
            ms(mv.saturating_sub(mr)),
            mv.as_secs_f64() / mr.as_secs_f64()
        );
    });
}

async fn direct() {
    let out = tokio::process::Command::new("/bin/true")
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .expect("spawn /bin/true");
    assert!(out.status.success());
}
