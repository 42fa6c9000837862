//! The short soak and chaos run: 200 mixed calls on one server with 3
//! worker kills and 3 cancels of queued calls, held to the same checks as
//! the full run (`soak` binary, README.md "Soak and chaos test"): every
//! request answered exactly once (a cancelled one at most once, a cancelled
//! queued one never run), the server alive, descriptors, threads and memory
//! of server and worker back near the start, no zombie, no leftover
//! process, nothing left in the worker socket directory.

use conda_mcp_tests::soak::{self, Kind, Plan};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_short_soak_with_worker_kills_and_queued_cancels_leaves_nothing_behind() {
    let plan = Plan::short(20_261_130);
    let report = soak::run(&plan).await;
    eprintln!("{}", report.table());
    assert!(
        report.violations.is_empty(),
        "soak checks failed:\n{}",
        report.violations.join("\n")
    );
    assert_eq!(report.sent.values().sum::<usize>(), plan.calls);
    assert_eq!(report.kills, plan.kills, "every kill was delivered");
    assert_eq!(report.queued_cancels, plan.queued_cancels);
    assert!(
        report.workers_seen > plan.kills,
        "a fresh worker after each kill: {} workers seen",
        report.workers_seen
    );
    for kind in [Kind::ReadOnly, Kind::Invalid, Kind::Refused] {
        assert!(
            report.sent.get(&kind).copied().unwrap_or(0) > 0,
            "{kind:?} in the mix"
        );
    }
}

/// A worker that dies while no call runs is reaped when it dies, not when
/// the next call finds it dead: no zombie child of the server in between;
/// the next call starts a fresh worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_while_idle_leaves_no_zombie_and_the_next_call_answers() {
    use conda_mcp_tests::procfs;
    use conda_mcp_tests::rawrpc::RawClient;
    use conda_mcp_tests::standin::StandinPrefix;
    use serde_json::json;
    use std::time::{Duration, Instant};

    let prefix = StandinPrefix::standard();
    let mut c = RawClient::start(&prefix.conda_exe, &[]).await;
    let server = c.pid() as i32;
    let workers = || -> Vec<procfs::Proc> {
        procfs::descendants(server, &procfs::all())
            .into_iter()
            .filter(|p| p.ppid == server && p.comm.starts_with("conda-mcp-work"))
            .collect()
    };
    let before: Vec<i32> = workers().iter().map(|p| p.pid).collect();
    c.call_tool("first", "conda_info", json!({}), None).await;
    let (first, _) = c.response("first", Duration::from_secs(60)).await;
    assert_eq!(
        first["result"]["structuredContent"]["exit_code"],
        json!(0),
        "{first}"
    );
    let worker = workers()
        .into_iter()
        .filter(|p| !before.contains(&p.pid))
        .max_by_key(|p| p.starttime)
        .expect("the exec lane's worker");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(worker.pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the worker");
    let killed = Instant::now();
    loop {
        match procfs::proc(worker.pid) {
            Some(p) if p.starttime == worker.starttime => {
                assert!(
                    killed.elapsed() < Duration::from_secs(5),
                    "the killed worker {} is still there (state {}) 5 s later, with no call running",
                    worker.pid,
                    p.state
                );
            }
            _ => break,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.call_tool("next", "conda_info", json!({}), None).await;
    let (next, _) = c.response("next", Duration::from_secs(60)).await;
    assert_eq!(
        next["result"]["structuredContent"]["exit_code"],
        json!(0),
        "{next}"
    );
    c.close().await;
}
