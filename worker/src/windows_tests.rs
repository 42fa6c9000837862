//! Windows process containment, end to end through [`crate::job::run`]
//! with real processes (run under wine here, on Windows runners in CI):
//! a tree of processes (`cmd` → `ping`) is gone within 2 s of a timeout,
//! a cancel, and its leader's exit; the byte limit; UTF-8 and UTF-16
//! (beyond the BMP) names in arguments and the working directory.
//!
//! Whether a grandchild still lives is seen in `tasklist` (which wine has
//! too): the tree tests run one at a time and count `ping.exe` processes.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use conda_mcp_shared::ExecutionResult;
use conda_mcp_shared::env::EnvRules;
use conda_mcp_shared::limits::Limits;
use conda_mcp_shared::protocol::{JobEvent, Program, RunRequest};
use tokio::sync::mpsc;

use crate::job::{self, Stop};
use crate::spawn::Programs;

fn cmd_exe() -> PathBuf {
    std::env::var_os("COMSPEC")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .unwrap_or_else(|| PathBuf::from(r"C:\windows\system32\cmd.exe"))
}

fn programs() -> Programs {
    Programs {
        conda: cmd_exe(),
        python: None,
        env_rules: EnvRules::default(),
        warm: None,
    }
}

fn request(argv: &[&str], timeout: Duration, output_limit_bytes: u64) -> RunRequest {
    RunRequest {
        job: 1,
        program: Program::Conda,
        argv: argv.iter().map(|s| s.to_string()).collect(),
        cwd: None,
        stdin: None,
        limits: Limits {
            timeout,
            output_limit_bytes,
            stdin_limit_bytes: 1024,
        },
        label: "test".into(),
        checks: None,
        warm_only: false,
    }
}

async fn run(req: RunRequest, stop: Stop) -> ExecutionResult {
    let (tx, mut rx) = mpsc::channel(64);
    let drain = tokio::spawn(async move { while rx.recv().await.is_some() {} });
    let ev = job::run(req, &programs(), &Limits::WORKER_CEILINGS, stop, tx).await;
    drain.abort();
    match ev {
        JobEvent::Finished(r) => r,
        other => panic!("the job did not finish: {other:?}"),
    }
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("conda-mcp-win-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// How many `ping.exe` processes run now (`tasklist`, which wine has too).
fn pings() -> usize {
    let out = std::process::Command::new("tasklist")
        .output()
        .expect("tasklist runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.to_ascii_lowercase().starts_with("ping.exe"))
        .count()
}

/// The tree tests count `ping.exe` processes machine-wide: one at a time.
static TREES: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// `cmd /c [start /b] ping -n 60 127.0.0.1`: about a minute unless killed.
fn ping_tree(orphan: bool) -> Vec<&'static str> {
    let mut argv = vec!["/c"];
    if orphan {
        argv.extend(["start", "/b"]);
    }
    argv.extend(["ping", "-n", "60", "127.0.0.1"]);
    argv
}

/// Waits until `ping.exe` runs (so the check after the stop can fail).
async fn wait_running() {
    let t0 = Instant::now();
    while pings() == 0 {
        assert!(t0.elapsed() < Duration::from_secs(20), "ping never started");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// No `ping.exe` is left within 20 s of `stopped` (a tree left alone runs
/// its pings for 60 s; 20 s is far from that and from the milliseconds a
/// stop takes).
async fn assert_tree_gone(stopped: Instant) {
    loop {
        let left = pings();
        if left == 0 {
            return;
        }
        assert!(
            stopped.elapsed() < Duration::from_secs(20),
            "{left} ping.exe still running {:?} after the stop",
            stopped.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_timeout_ends_the_whole_tree() {
    let _one = TREES.lock().await;
    assert_eq!(pings(), 0, "no ping.exe may run before the test");
    let req = request(&ping_tree(false), Duration::from_secs(4), 4096);
    let watch = tokio::spawn(wait_running());
    let r = run(req, Stop::default()).await;
    let stopped = Instant::now();
    watch.await.expect("the tree ran");
    assert!(r.timed_out, "{r:?}");
    // at the 4 s timeout, not the tree's 60 s
    assert!(r.duration_ms < 20_000, "{r:?}");
    assert_tree_gone(stopped).await;
}

#[tokio::test]
async fn a_cancel_ends_the_whole_tree() {
    let _one = TREES.lock().await;
    assert_eq!(pings(), 0, "no ping.exe may run before the test");
    let req = request(&ping_tree(false), Duration::from_secs(120), 4096);
    let stop = Stop::default();
    let cancel = stop.cancel.clone();
    let watch = tokio::spawn(async move {
        wait_running().await;
        cancel.cancel();
    });
    let r = run(req, stop).await;
    let stopped = Instant::now();
    watch.await.expect("the tree ran");
    assert!(r.cancelled && !r.timed_out, "{r:?}");
    assert_tree_gone(stopped).await;
}

/// `start /b` leaves ping running after cmd exits: the leader's exit ends
/// the job, and the job object's termination ends the orphan. cmd waits
/// about two seconds (a second ping, silent) before it exits, so both
/// pings are seen running together in `tasklist` first: the orphan ran.
/// (Its output is no proof: a ping writing to a pipe under wine keeps its
/// lines in its C runtime's buffer until it exits, and this one is
/// killed.)
#[tokio::test]
async fn an_orphan_dies_with_its_job() {
    let _one = TREES.lock().await;
    assert_eq!(pings(), 0, "no ping.exe may run before the test");
    let mut argv = ping_tree(true);
    argv.extend(["&", "ping", "-n", "3", "127.0.0.1", ">nul"]);
    let both = tokio::spawn(async {
        let t0 = Instant::now();
        while pings() < 2 {
            if t0.elapsed() > Duration::from_secs(20) {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    });
    let r = run(
        request(&argv, Duration::from_secs(60), 4096),
        Stop::default(),
    )
    .await;
    let ended = Instant::now();
    assert!(!r.timed_out && !r.cancelled, "{r:?}");
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert!(
        r.duration_ms < 30_000,
        "cmd returns after its second ping: {r:?}"
    );
    assert!(
        both.await.expect("the watch"),
        "the orphan and cmd's second ping were never seen running together: {r:?}"
    );
    assert_tree_gone(ended).await;
}

#[tokio::test]
async fn output_beyond_the_byte_limit_is_counted_not_kept() {
    let dir = scratch("bytes");
    let big = dir.join("big.txt");
    std::fs::write(&big, "0123456789abcdef\r\n".repeat(64 * 1024)).expect("big file");
    let path = big.display().to_string();
    let r = run(
        request(&["/c", "type", &path], Duration::from_secs(60), 1000),
        Stop::default(),
    )
    .await;
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert!(r.stdout.len() <= 1000, "{}", r.stdout.len());
    assert!(
        r.stdout.starts_with("0123456789abcdef"),
        "{:?}",
        &r.stdout[..40]
    );
    assert!(r.stdout_truncated);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Names with UTF-8 multi-byte characters and one outside the BMP (a
/// UTF-16 surrogate pair) reach the child intact, as an argument and as
/// the working directory.
#[tokio::test]
async fn non_ascii_names_in_arguments_and_the_working_directory() {
    let dir = scratch("names").join("dossier é 日本 🐍");
    std::fs::create_dir_all(&dir).expect("non-ASCII dir");
    let file = dir.join("fichier ü 🐍.txt");
    std::fs::write(&file, "contents-ok\r\n").expect("non-ASCII file");
    let path = file.display().to_string();
    let r = run(
        request(&["/c", "type", &path], Duration::from_secs(60), 4096),
        Stop::default(),
    )
    .await;
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert!(r.stdout.contains("contents-ok"), "{r:?}");
    let mut req = request(
        &["/c", "type", "fichier ü 🐍.txt"],
        Duration::from_secs(60),
        4096,
    );
    req.cwd = Some(dir.display().to_string());
    let r = run(req, Stop::default()).await;
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert!(r.stdout.contains("contents-ok"), "{r:?}");
    let _ = std::fs::remove_dir_all(dir.parent().expect("parent"));
}
