//! Benchmark (not a test): what the checks inside conda's process add per
//! call, warm and fresh.
//!
//! On a stand-in conda prefix (the recorded conda 26 parser), one argv
//! (`list -n base --json`) runs through the built worker without checks
//! (what every call did before the guard: conda's script run directly, or
//! forked from the warm conda) and with the checks of an export (conda's
//! target prefix resolved by conda's own functions, which must hold an
//! environment, and the report on its own pipe), interleaved in one run so
//! machine load hits both alike; once with the warm conda ready, once with
//! `--no-warm-conda`. Prints the median of each side, the difference (the
//! cost of the guard; target ≤ 1 ms warm) and the ratio.
//!
//! Run: `cargo bench -p conda-mcp-tests --bench guard`
//! (`CONDA_MCP_BENCH_RUNS` changes the runs per side, default 60, at least
//! 20).
#![allow(clippy::print_stdout)] // a bench binary reports on stdout

use std::time::{Duration, Instant};

use conda_mcp_server::worker_client::{Executor, Job, Program, WorkerConfig};
use conda_mcp_shared::guard::{Expectation, GuardOutcome, InProcessChecks, TargetRule};
use conda_mcp_tests::standin::StandinPrefix;

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn job(checks: Option<InProcessChecks>) -> Job {
    let argv = ["list", "-n", "base", "--json"];
    let mut j = Job::new(Program::Conda, argv.iter().map(|s| s.to_string()).collect());
    j.limits.timeout = Duration::from_secs(60);
    j.checks = checks;
    j
}

fn main() {
    let runs: usize = std::env::var("CONDA_MCP_BENCH_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60)
        .max(20);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let prefix = StandinPrefix::create(&conda_mcp_tests::paths::real_dump()).expect("stand-in");
    let checks = InProcessChecks {
        target: Some(TargetRule::Arguments),
        expect: Some(Expectation::Present),
        ..InProcessChecks::default()
    };
    println!(
        "guard: {runs} runs per side, interleaved, `conda list -n base --json` on the stand-in"
    );
    rt.block_on(async {
        for warm in [true, false] {
            let mut cfg = WorkerConfig::new(&prefix.conda_exe);
            cfg.worker_exe = conda_mcp_tests::bins::worker();
            cfg.warm_conda = warm;
            let ex = Executor::new(cfg);
            // Warm-up (and, warm, until the zygote serves).
            for _ in 0..10 {
                ex.run(job(None), |_| {}).await.expect("run");
                ex.run(job(Some(checks.clone())), |_| {}).await.expect("run");
            }
            if warm {
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
            let (mut plain, mut guarded) = (Vec::with_capacity(runs), Vec::with_capacity(runs));
            for _ in 0..runs {
                let t = Instant::now();
                let r = ex.run(job(None), |_| {}).await.expect("run");
                plain.push(t.elapsed());
                assert_eq!(r.exit_code, Some(0));
                let t = Instant::now();
                let r = ex.run(job(Some(checks.clone())), |_| {}).await.expect("run");
                guarded.push(t.elapsed());
                assert_eq!(r.exit_code, Some(0));
                assert!(matches!(r.guard, Some(GuardOutcome::Report(_))), "{r:?}");
            }
            ex.shutdown().await;
            let (mp, mg) = (median(&mut plain), median(&mut guarded));
            let path = if warm { "warm " } else { "fresh" };
            println!(
                "  {path}: without checks median {:.2} ms, with checks {:.2} ms: added {:.2} ms per call{}; ratio {:.3}x",
                ms(mp),
                ms(mg),
                ms(mg) - ms(mp),
                if warm { " (target <= 1 ms)" } else { "" },
                mg.as_secs_f64() / mp.as_secs_f64()
            );
        }
    });
}
