//! The short soak and chaos run: 200 mixed calls on one server with 3
//! worker kills and 3 cancels of queued calls, held to the same checks as
//! the full run (`soak` binary, docs/testing.md, soak and chaos test): every
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
    c.call_tool("first", "conda_info", json!({}), None).await;
    let (first, _) = c.response("first", Duration::from_secs(60)).await;
    assert_eq!(
        first["result"]["structuredContent"]["exit_code"],
        json!(0),
        "{first}"
    );
    // The exec lane's worker: started by the warm-up after discovery or by
    // the first call, the newest either way.
    let worker = workers()
        .into_iter()
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
                    killed.elapsed() < Duration::from_secs(30),
                    "the killed worker {} is still there (state {}) 30 s later, with no call running",
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

/// Every live worker of the server is one the server still talks to: its
/// private socket folder (removed with the connection) exists. The lane
/// that ran the discovery helper (at startup after a cache miss, and again
/// when a mutation changed the plugin set) is dropped afterwards; it must
/// not leave its worker running, detached, until the server exits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_worker_outlives_its_connection_after_startup_or_a_rediscovery() {
    use conda_mcp_tests::procfs;
    use conda_mcp_tests::rawrpc::RawClient;
    use conda_mcp_tests::standin::{ControlRule, PluginSpec, StandinPrefix};
    use serde_json::json;
    use std::path::PathBuf;
    use std::time::{Duration, Instant};

    let prefix = StandinPrefix::standard();
    prefix
        .set_control(&[ControlRule {
            add_plugin: Some(PluginSpec {
                distribution: "conda-soak".into(),
                version: "0.1.0".into(),
                name: "conda-soak".into(),
                value: "conda_soak.plugin".into(),
            }),
            ..ControlRule::for_commands(&["install"])
        }])
        .expect("control file");
    // A private cache: discovery runs the helper through its own worker.
    let mut c =
        RawClient::start(&prefix.conda_exe, &["--allow-write", "--allow-base-writes"]).await;
    assert!(
        c.stderr_text().contains("running the helper"),
        "discovery ran the helper (a cache miss)"
    );
    // A mutation that changes the plugin set: discovery runs again.
    c.call_tool(
        "one",
        "conda_install",
        json!({"packages": ["numpy"], "yes": true}),
        None,
    )
    .await;
    let (one, _) = c.response("one", Duration::from_secs(60)).await;
    let result = &one["result"]["structuredContent"];
    assert_eq!(result["exit_code"], json!(0), "{one}");
    assert_eq!(result["restart_required"], json!(true), "{one}");
    let server = c.pid() as i32;
    let detached = || -> Vec<String> {
        procfs::descendants(server, &procfs::all())
            .into_iter()
            .filter(|p| p.ppid == server && p.comm.starts_with("conda-mcp-work") && !p.is_zombie())
            .filter_map(|p| {
                let args = procfs::cmdline(p.pid);
                let socket = args.iter().position(|a| a == "--socket")?;
                let dir = PathBuf::from(args.get(socket + 1)?).parent()?.to_path_buf();
                (!dir.exists())
                    .then(|| format!("worker {} (socket folder {} gone)", p.pid, dir.display()))
            })
            .collect()
    };
    let since = Instant::now();
    loop {
        let d = detached();
        if d.is_empty() {
            break;
        }
        assert!(
            since.elapsed() < Duration::from_secs(30),
            "workers still running after their connection was dropped: {d:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    c.close().await;
}
