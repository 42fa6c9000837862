//! `soak`: the soak and chaos run against the built binaries (docs/testing.md,
//! soak and chaos test). Prints the figures table; exit status 0 when
//! every check passed, 1 otherwise.
//!
//! ```text
//! cargo build --workspace --bins
//! target/debug/soak                      # 2,000 calls, 20 kills, 10 queued cancels
//! target/debug/soak --calls 200 --kills 3 --queued-cancels 3 --seed 7
//! ```

use std::io::Write as _;
use std::process::ExitCode;

use clap::Parser;
use conda_mcp_tests::soak::{self, Plan};

/// One conda-mcp server on a stand-in conda: mixed tool calls (read-only,
/// dry-run, failing, crashing, invalid, unknown tool, refused, timed out,
/// cancelled), random SIGKILLs of the worker, cancels of queued calls; then
/// checks that every request was answered exactly once, the server still
/// answers, descriptors, threads and memory of server and worker are back
/// near the start, and no zombie, leftover process or socket file remains.
#[derive(Debug, Parser)]
#[command(name = "soak")]
struct Args {
    /// tools/call requests in all.
    #[arg(long, default_value_t = 2000)]
    calls: usize,
    /// SIGKILLs of the worker process at random moments.
    #[arg(long, default_value_t = 20)]
    kills: usize,
    /// Cancels (notifications/cancelled) of calls queued behind a slow one.
    #[arg(long, default_value_t = 10)]
    queued_cancels: usize,
    /// Requests in flight at once.
    #[arg(long, default_value_t = 4)]
    window: usize,
    /// Seconds the slow stand-in command sleeps.
    #[arg(long, default_value_t = 0.8)]
    slow_seconds: f64,
    /// Seed of the mix and the timing (default: from the clock; printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Extra conda-mcp flag (repeatable), e.g. --server-arg=--no-warm-conda.
    #[arg(long = "server-arg", allow_hyphen_values = true)]
    server_args: Vec<String>,
    /// Copy the server's stderr log (server and worker lines) to this file.
    #[arg(long, value_name = "PATH")]
    log: Option<std::path::PathBuf>,
    /// Most extra KiB of VmRSS (server, worker) at the end.
    #[arg(long, default_value_t = 16 * 1024)]
    rss_slack_kib: u64,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(1)
    });
    let plan = Plan {
        calls: args.calls,
        kills: args.kills,
        queued_cancels: args.queued_cancels,
        window: args.window.max(1),
        slow_seconds: args.slow_seconds,
        server_args: args.server_args,
        rss_slack_kib: args.rss_slack_kib,
        keep_log: args.log,
        ..Plan::full(seed)
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let report = runtime.block_on(soak::run(&plan));
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(report.table().as_bytes());
    let _ = out.flush();
    if report.violations.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
