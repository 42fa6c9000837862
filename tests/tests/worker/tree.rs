//! Process-tree containment through the real worker binary: timeouts,
//! grandchildren holding pipes, setsid escapees, SIGTERM ignorers.

use std::time::{Duration, Instant};

use conda_mcp_tests::exec::{alive, pids_in, py, run_collect, sh, sh_executor};

#[tokio::test]
async fn grandchild_holding_stdout_is_killed_at_the_timeout() {
    let ex = sh_executor();
    let t0 = Instant::now();
    let (res, _) = run_collect(
        &ex,
        sh("echo $$; sleep 300 & echo $!; wait", Duration::from_secs(2)),
    )
    .await;
    let r = res.expect("a result");
    // At the 2 s timeout, not when the grandchild's 300 s end (30 s is far
    // from both; the stop_latency benchmark measures the latency).
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "took {:?}",
        t0.elapsed()
    );
    assert!(r.timed_out);
    assert_eq!(r.exit_code, None);
    let pids = pids_in(&r.stdout);
    assert_eq!(pids.len(), 2, "stdout: {:?}", r.stdout);
    for pid in pids {
        assert!(!alive(pid), "pid {pid} survived the job");
    }
    ex.shutdown().await;
}

#[tokio::test]
async fn background_grandchild_on_stdout_does_not_delay_the_result() {
    let ex = sh_executor();
    ex.connect().await.expect("worker");
    let t0 = Instant::now();
    let (res, _) = run_collect(
        &ex,
        sh("sleep 300 & echo $!; exit 0", Duration::from_secs(300)),
    )
    .await;
    let r = res.expect("a result");
    // After the short drain grace, not when the grandchild's 300 s end
    // (30 s is far from both; the stop_latency benchmark measures it).
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "the drain grace is short; took {:?}",
        t0.elapsed()
    );
    assert_eq!(r.exit_code, Some(0));
    assert!(!r.timed_out);
    let pids = pids_in(&r.stdout);
    assert_eq!(pids.len(), 1, "stdout: {:?}", r.stdout);
    assert!(!alive(pids[0]), "the grandchild survived");
    ex.shutdown().await;
}

/// A grandchild that calls setsid() (leaving the job's process group and
/// session) and a great-grandchild of a double fork are both found through
/// the subreaper and killed once the job ends.
#[tokio::test]
async fn setsid_and_double_fork_escapees_are_killed_and_reaped() {
    let ex = sh_executor();
    let code = r#"
import os, sys, time
r, w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.write(w, (str(os.getpid()) + "\n").encode())
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        time.sleep(60)
        os._exit(0)
    os.write(w, (str(os.getpid()) + "\n").encode())
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    time.sleep(60)
    os._exit(0)
os.close(w)
data = b""
while data.count(b"\n") < 2:
    data += os.read(r, 100)
sys.stdout.write(data.decode())
"#;
    let (res, _) = run_collect(&ex, py(code, Duration::from_secs(20))).await;
    let r = res.expect("a result");
    assert_eq!(r.exit_code, Some(0), "stderr: {}", r.stderr);
    let pids = pids_in(&r.stdout);
    assert_eq!(pids.len(), 2, "stdout: {:?}", r.stdout);
    for pid in pids {
        // Killed and reaped before the result was sent: not even a zombie
        // (a zombie's /proc entry stays until its parent, the worker as
        // subreaper, waits for it; `X` is the instant of that wait).
        let state = proc_state(pid);
        assert!(
            matches!(state.as_deref(), None | Some("X")),
            "pid {pid} was not reaped before the result: state {state:?}"
        );
    }
    ex.shutdown().await;
}

#[tokio::test]
async fn a_child_ignoring_sigterm_gets_sigkill_after_the_grace() {
    let ex = sh_executor();
    ex.connect().await.expect("worker");
    let t0 = Instant::now();
    let (res, _) = run_collect(
        &ex,
        sh(
            "trap '' TERM; echo $$; while :; do sleep 0.05; done",
            Duration::from_secs(1),
        ),
    )
    .await;
    let took = t0.elapsed();
    let r = res.expect("a result");
    assert!(r.timed_out);
    assert_eq!(r.exit_code, None);
    // It survived SIGTERM: the result came only after the 2 s grace.
    assert!(took >= Duration::from_millis(2900), "took {took:?}");
    // and then SIGKILL ended it: it would loop forever
    assert!(took < Duration::from_secs(60), "took {took:?}");
    let pid = pids_in(&r.stdout)[0];
    assert!(!alive(pid));
    ex.shutdown().await;
}

/// The state letter of `/proc/<pid>/stat` (`R`, `S`, `Z`, ...), `None`
/// when there is no such process (it was reaped).
fn proc_state(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().next().map(str::to_owned)
}
