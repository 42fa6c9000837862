//! The executor's lifecycle through the real worker binary: a killed worker,
//! shutdown, cancellation, FIFO order and bounded queue wait.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use conda_mcp_server::worker_client::{ExecError, JobUpdate};
use conda_mcp_tests::exec::{alive, gone_within, pids_in, run_collect, sh, sh_executor};
use tokio::sync::mpsc;

/// Runs `job` in a task and returns its handle and the pid from `Started`.
async fn start(
    ex: &conda_mcp_server::worker_client::Executor,
    job: conda_mcp_server::worker_client::Job,
) -> (
    tokio::task::JoinHandle<Result<conda_mcp_server::worker_client::ExecutionResult, ExecError>>,
    u32,
) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let ex = ex.clone();
    let handle = tokio::spawn(async move {
        ex.run(job, move |u| {
            if let JobUpdate::Started { pid } = u {
                let _ = tx.send(pid);
            }
        })
        .await
    });
    let pid = tokio::time::timeout(Duration::from_secs(10), rx.recv())
        .await
        .expect("started in time")
        .expect("a pid");
    (handle, pid)
}

#[tokio::test]
async fn a_killed_worker_fails_the_call_and_the_next_call_gets_a_fresh_one() {
    let ex = sh_executor();
    let (handle, job_pid) = start(
        &ex,
        sh("sleep 300 & sleep 300; wait", Duration::from_secs(300)),
    )
    .await;
    let worker = ex.worker_pid().expect("worker");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(worker as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the worker");
    let err = tokio::time::timeout(Duration::from_secs(5), handle)
        .await
        .expect("the call ends promptly")
        .expect("join")
        .expect_err("the call fails");
    assert!(matches!(err, ExecError::WorkerDied(_)), "{err:?}");
    assert!(err.to_string().contains("went away"), "{err}");
    // gone, not after its 300 s (30 s is far from both)
    assert!(
        gone_within(job_pid, Duration::from_secs(30)).await,
        "the job survived"
    );

    let r = run_collect(&ex, sh("echo again", Duration::from_secs(10)))
        .await
        .0
        .expect("fresh worker");
    assert_eq!(r.stdout, "again\n");
    assert_ne!(ex.worker_pid(), Some(worker));
    ex.shutdown().await;
}

#[tokio::test]
async fn shutdown_kills_the_running_job_and_the_worker() {
    let ex = sh_executor();
    let (handle, job_pid) = start(&ex, sh("echo $$; sleep 300", Duration::from_secs(300))).await;
    let worker = ex.worker_pid().expect("worker");
    let t0 = Instant::now();
    ex.shutdown().await;
    // Not a wait for the job's 300 s: 30 s is far from both that and the
    // milliseconds a shutdown takes (the stop_latency benchmark measures
    // them).
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "took {:?}",
        t0.elapsed()
    );
    let err = handle.await.expect("join").expect_err("shut down");
    assert_eq!(err, ExecError::ShutDown);
    assert!(!alive(job_pid), "job survived");
    assert!(
        gone_within(worker, Duration::from_secs(30)).await,
        "worker survived"
    );
    let err = run_collect(&ex, sh("true", Duration::from_secs(5)))
        .await
        .0
        .expect_err("refused");
    assert_eq!(err, ExecError::ShutDown);
}

#[tokio::test]
async fn cancelling_a_running_job_kills_its_tree() {
    let ex = sh_executor();
    let job = sh("sleep 60 & echo $!; sleep 60", Duration::from_secs(60));
    let cancel = job.cancel.clone();
    let (handle, pid) = start(&ex, job).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    cancel.cancel();
    let r = tokio::time::timeout(Duration::from_secs(5), handle)
        .await
        .expect("prompt")
        .expect("join")
        .expect("a result");
    assert!(r.cancelled);
    assert!(!r.timed_out);
    assert_eq!(r.exit_code, None);
    assert!(r.stopped_by.is_some(), "{r:?}");
    assert!(!alive(pid));
    for p in pids_in(&r.stdout) {
        assert!(!alive(p), "grandchild {p} survived");
    }
    ex.shutdown().await;
}

#[tokio::test]
async fn fifo_order_positions_cancel_and_queue_timeout() {
    let ex = sh_executor();
    ex.connect().await.expect("worker");
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("order");
    let (first, _) = start(
        &ex,
        sh(
            &format!("echo first >> '{}'; sleep 1.5", log.display()),
            Duration::from_secs(30),
        ),
    )
    .await;
    let before = ex.jobs_started();

    let spawn = |name: &'static str, timeout: Duration| {
        let ex = ex.clone();
        let job = sh(&format!("echo {name} >> '{}'", log.display()), timeout);
        let cancel = job.cancel.clone();
        let updates = Arc::new(Mutex::new(Vec::new()));
        let u = updates.clone();
        let h =
            tokio::spawn(async move { ex.run(job, move |x| u.lock().expect("u").push(x)).await });
        (h, cancel, updates)
    };
    let (second, _, second_updates) = spawn("second", Duration::from_secs(30));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (cancelled, cancel_third, _) = spawn("third", Duration::from_secs(30));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (expired, _, _) = spawn("fourth", Duration::from_millis(300));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let (fifth, _, fifth_updates) = spawn("fifth", Duration::from_secs(30));
    tokio::time::sleep(Duration::from_millis(100)).await;
    cancel_third.cancel();

    assert_eq!(cancelled.await.expect("join"), Err(ExecError::Cancelled));
    let r = expired.await.expect("join").expect("a result");
    assert!(
        r.timed_out && r.exit_code.is_none() && r.duration_ms == 0 && r.stopped_by.is_none(),
        "{r:?}"
    );
    assert!(first.await.expect("join").is_ok());
    assert!(second.await.expect("join").is_ok());
    assert!(fifth.await.expect("join").is_ok());

    let order = std::fs::read_to_string(&log).expect("log");
    assert_eq!(order, "first\nsecond\nfifth\n");
    // Neither the cancelled nor the expired job reached the worker.
    assert_eq!(ex.jobs_started(), before + 2);
    let queued = |u: &Arc<Mutex<Vec<JobUpdate>>>| -> Vec<usize> {
        u.lock()
            .expect("u")
            .iter()
            .filter_map(|x| match x {
                JobUpdate::Queued { position } => Some(*position),
                _ => None,
            })
            .collect()
    };
    assert_eq!(queued(&second_updates), vec![1]);
    // Fifth: behind first, second, third, fourth; then third and fourth left.
    let fifth_positions = queued(&fifth_updates);
    assert_eq!(fifth_positions.first(), Some(&4), "{fifth_positions:?}");
    assert!(
        fifth_positions.windows(2).all(|w| w[0] > w[1]),
        "{fifth_positions:?}"
    );
    assert_eq!(fifth_positions.last(), Some(&1), "{fifth_positions:?}");
    ex.shutdown().await;
}

/// Used by [`nothing_survives_a_killed_server`]: a separate "server" process
/// that spawns its own worker, starts a long job, prints the worker's and
/// the job's pids and waits to be killed.
#[tokio::test]
#[ignore = "helper process for nothing_survives_a_killed_server"]
async fn helper_spawning_server_process() {
    use std::io::Write;
    let ex = sh_executor();
    let ex2 = ex.clone();
    let res = ex
        .run(
            sh("sleep 300 & sleep 300", Duration::from_secs(300)),
            move |u| {
                if let JobUpdate::Started { pid } = u {
                    let mut out = std::io::stdout();
                    let worker = ex2.worker_pid().unwrap_or(0);
                    let _ = writeln!(out, "\nPIDS {worker} {pid}");
                    let _ = out.flush();
                }
            },
        )
        .await;
    panic!("the helper should have been killed, got {res:?}");
}

/// The server process dies (SIGKILL, no cleanup code runs): its worker sees
/// the socket close, kills the job's process tree and exits.
#[tokio::test]
async fn nothing_survives_a_killed_server() {
    use std::io::BufRead;
    use std::process::Stdio;
    let mut server =
        conda_mcp_tests::bins::helper_test(module_path!(), "helper_spawning_server_process")
            .env("CONDA_MCP_BIN_DIR", conda_mcp_tests::bins::bin_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("helper server");
    let stdout = server.stdout.take().expect("stdout");
    let pids = tokio::task::spawn_blocking(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let line = line.expect("line");
            if let Some(rest) = line.strip_prefix("PIDS ") {
                return pids_in(rest);
            }
        }
        panic!("the helper printed no pids");
    });
    let pids = tokio::time::timeout(Duration::from_secs(30), pids)
        .await
        .expect("the helper started a job in time")
        .expect("join");
    let (worker, job) = (pids[0], pids[1]);
    assert!(worker > 0 && alive(worker) && alive(job));
    server.kill().expect("kill the server");
    server.wait().expect("reap the server");
    assert!(
        gone_within(job, Duration::from_secs(30)).await,
        "the job survived its server"
    );
    assert!(
        gone_within(worker, Duration::from_secs(30)).await,
        "the worker survived its server"
    );
}
