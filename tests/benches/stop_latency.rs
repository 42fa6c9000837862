//! Benchmark (not a test): how soon things stop. The tests that check these
//! properties (tests/tests/worker/lifecycle.rs, worker/tree.rs,
//! mcp/long_calls.rs, mcp/server.rs, mcp/tasks.rs) bound them at 30 s,
//! far from both the figures here and their failure modes (a 300 s sleep
//! left to run); the figures themselves are measured here:
//!
//! * **shutdown**: `Executor::shutdown` with a job (`sleep 300`) running,
//!   to its return (the job and the worker killed);
//! * **timeout**: a job whose grandchild holds its stdout (`sleep 300 &`),
//!   time limit 1 s: from the start to the result, minus the 1 s;
//! * **drain**: a job that exits at once leaving a grandchild on its
//!   stdout: from the start to the result (the drain grace);
//! * **stdin close**: `conda-mcp` with a call running (the stand-in conda
//!   sleeping 300 s): from closing its stdin to its exit.
//!
//! Run: `cargo bench -p conda-mcp-tests --bench stop_latency`
//! (`CONDA_MCP_BENCH_RUNS`, default 10, at least 3). Prints the median and
//! the largest of each.
#![allow(clippy::print_stdout)] // a bench binary reports on stdout

use std::time::{Duration, Instant};

use conda_mcp_tests::exec::{run_collect, sh, sh_executor};
use conda_mcp_tests::rawrpc::{RawClient, pids_with_cmdline};
use conda_mcp_tests::standin::{ControlRule, StandinPrefix};
use conda_mcp_tests::stats::{median, ms};

fn report(what: &str, v: &mut [Duration]) {
    let max = v.iter().max().copied().unwrap_or_default();
    println!(
        "  {what:<12}: median {:8.1} ms, largest {:8.1} ms ({} runs)",
        ms(median(v)),
        ms(max),
        v.len()
    );
}

fn main() {
    let runs: usize = std::env::var("CONDA_MCP_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10)
        .max(3);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let (mut shutdown, mut timeout, mut drain, mut stdin) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for _ in 0..runs {
            // shutdown with a job running
            let ex = sh_executor();
            ex.connect().await.expect("worker");
            let running = {
                let ex = ex.clone();
                tokio::spawn(async move {
                    run_collect(&ex, sh("sleep 300", Duration::from_secs(300))).await
                })
            };
            while ex.jobs_started() == 0 {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
            let t = Instant::now();
            ex.shutdown().await;
            shutdown.push(t.elapsed());
            let _ = running.await;

            // a timeout with a grandchild holding stdout
            let ex = sh_executor();
            ex.connect().await.expect("worker");
            let t = Instant::now();
            let (r, _) =
                run_collect(&ex, sh("sleep 300 & echo $!; wait", Duration::from_secs(1))).await;
            let took = t.elapsed();
            assert!(r.expect("a result").timed_out);
            timeout.push(took.saturating_sub(Duration::from_secs(1)));

            // a background grandchild on stdout after the job's exit
            let t = Instant::now();
            let (r, _) = run_collect(
                &ex,
                sh("sleep 300 & echo $!; exit 0", Duration::from_secs(300)),
            )
            .await;
            drain.push(t.elapsed());
            assert_eq!(r.expect("a result").exit_code, Some(0));
            ex.shutdown().await;
        }
        // the server, closing its stdin mid-call
        let prefix = StandinPrefix::standard();
        prefix
            .set_control(&[ControlRule {
                sleep_seconds: Some(300.0),
                ..ControlRule::for_commands(&["info"])
            }])
            .expect("control file");
        let needle = prefix.conda_exe.display().to_string();
        for _ in 0..runs {
            let mut c = RawClient::start(&prefix.conda_exe, &["--no-warm-conda"]).await;
            c.call_tool("long", "conda_info", serde_json::json!({}), None)
                .await;
            let deadline = Instant::now() + Duration::from_secs(60);
            while pids_with_cmdline(&needle).is_empty() {
                assert!(Instant::now() < deadline, "the stand-in never started");
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            stdin.push(c.close().await.expect("the server exits"));
        }
        println!("stop_latency: {runs} runs each");
        report("shutdown", &mut shutdown);
        report("timeout", &mut timeout);
        report("drain", &mut drain);
        report("stdin close", &mut stdin);
    });
}
