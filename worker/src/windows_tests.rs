//! Windows process containment, end to end through [`crate::job::run`]
//! with real processes (run under wine here, on Windows runners in CI):
//! a tree of processes (`cmd` → `ping`) is gone within 2 s of a timeout,
//! a cancel, and its leader's exit; the byte limit; UTF-8 and UTF-16
//! (beyond the BMP) names in arguments and the working directory.
//!
//! Whether a grandchild still lives is seen through a file it holds open:
//! `cmd` opens the `>` redirection without FILE_SHARE_DELETE and `ping`
//! inherits the handle, so the file cannot be deleted while either runs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use conda_mcp_shared::env::EnvRules;
use conda_mcp_shared::limits::Limits;
use conda_mcp_shared::protocol::{JobEvent, Program, RunRequest};
use conda_mcp_shared::ExecutionResult;
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

/// Waits until `held` can be deleted (nothing holds it open any more);
/// returns how long that took, or `None` after `within`.
async fn released(held: &Path, within: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    while t0.elapsed() < within {
        if std::fs::remove_file(held).is_ok() {
            return Some(t0.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    None
}

/// `cmd /c ping -n 60 127.0.0.1 > held`: about a minute unless killed.
fn ping_tree(held: &Path) -> Vec<String> {
    ["/c", "ping", "-n", "60", "127.0.0.1", ">"]
        .iter()
        .map(|s| s.to_string())
        .chain([held.display().to_string()])
        .collect()
}

/// The grandchild holds the file while the job runs (so the check below
/// can fail), and lets go of it within 2 s of `stopped`.
async fn assert_tree_gone(held: &Path, stopped: Instant) {
    match released(held, Duration::from_secs(2)).await {
        Some(_) => assert!(
            stopped.elapsed() < Duration::from_secs(2) + Duration::from_millis(100),
            "the tree took {:?}",
            stopped.elapsed()
        ),
        None => panic!("a process of the tree still holds {}", held.display()),
    }
}

async fn wait_held(held: &Path) {
    let t0 = Instant::now();
    while !held.exists() && t0.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(held.exists(), "cmd did not create {}", held.display());
    assert!(
        std::fs::remove_file(held).is_err(),
        "the file must be held open while ping runs"
    );
}

#[tokio::test]
async fn a_timeout_ends_the_whole_tree() {
    let dir = scratch("timeout");
    let held = dir.join("held.txt");
    let argv = ping_tree(&held);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let req = request(&argv, Duration::from_secs(3), 4096);
    let watch = {
        let held = held.clone();
        tokio::spawn(async move { wait_held(&held).await })
    };
    let r = run(req, Stop::default()).await;
    let stopped = Instant::now();
    watch.await.expect("the tree ran");
    assert!(r.timed_out, "{r:?}");
    assert!(r.duration_ms < 10_000, "{r:?}");
    assert_tree_gone(&held, stopped).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn a_cancel_ends_the_whole_tree() {
    let dir = scratch("cancel");
    let held = dir.join("held.txt");
    let argv = ping_tree(&held);
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let req = request(&argv, Duration::from_secs(120), 4096);
    let stop = Stop::default();
    let cancel = stop.cancel.clone();
    let watch = {
        let held = held.clone();
        tokio::spawn(async move {
            wait_held(&held).await;
            cancel.cancel();
        })
    };
    let r = run(req, stop).await;
    let stopped = Instant::now();
    watch.await.expect("the tree ran");
    assert!(r.cancelled && !r.timed_out, "{r:?}");
    assert_tree_gone(&held, stopped).await;
    let _ = std::fs::remove_dir_all(&dir);
}

/// `start /b` leaves ping running after cmd exits: the leader's exit ends
/// the job, and the job object's termination ends the orphan.
#[tokio::test]
async fn an_orphan_dies_with_its_job() {
    let dir = scratch("orphan");
    let held = dir.join("held.txt");
    let mut argv = vec!["/c".to_string(), "start".into(), "/b".into()];
    argv.extend(ping_tree(&held).into_iter().skip(1));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let r = run(request(&argv, Duration::from_secs(60), 4096), Stop::default()).await;
    let ended = Instant::now();
    assert!(!r.timed_out && !r.cancelled, "{r:?}");
    assert!(r.duration_ms < 30_000, "cmd returns at once: {r:?}");
    assert_tree_gone(&held, ended).await;
    let _ = std::fs::remove_dir_all(&dir);
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
    assert!(r.stdout.starts_with("0123456789abcdef"), "{:?}", &r.stdout[..40]);
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
