//! Byte limits through the real worker binary: floods, UTF-8 cuts, stdin.

use std::time::Duration;

use conda_mcp_tests::exec::{py, run_collect, sh, sh_executor};

const MIB: u64 = 1024 * 1024;

/// Peak resident set of `pid` in kB (`VmHWM` of /proc/PID/status).
fn peak_rss_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("VmHWM")
}

#[tokio::test]
async fn twenty_megabytes_on_each_stream_keep_the_limit_and_little_memory() {
    let ex = sh_executor();
    let mut job = sh(
        "head -c 20000000 /dev/zero | tr '\\0' e >&2 & head -c 20000000 /dev/zero | tr '\\0' o; wait",
        Duration::from_secs(60),
    );
    job.limits.output_limit_bytes = MIB;
    let (res, _) = run_collect(&ex, job).await;
    let r = res.expect("a result");
    assert_eq!(r.exit_code, Some(0));
    assert_eq!(r.stdout.len() as u64, MIB);
    assert_eq!(r.stderr.len() as u64, MIB);
    assert!(r.stdout.bytes().all(|b| b == b'o'));
    assert!(r.stderr.bytes().all(|b| b == b'e'));
    assert!(r.stdout_truncated && r.stderr_truncated);
    assert!(!r.stdout_lossy && !r.stderr_lossy);
    let worker = ex.worker_pid().expect("a live worker");
    let kb = peak_rss_kb(worker);
    assert!(kb < 30 * 1024, "worker peak RSS {kb} kB");
    ex.shutdown().await;
}

#[tokio::test]
async fn utf8_cut_replacement_and_nul_bytes() {
    let ex = sh_executor();
    // "abc€": the 3-byte € straddles a 5-byte limit and is dropped whole.
    let mut job = py(
        r"import sys; sys.stdout.buffer.write(b'abc\xe2\x82\xacdef')",
        Duration::from_secs(20),
    );
    job.limits.output_limit_bytes = 5;
    let r = run_collect(&ex, job).await.0.expect("result");
    assert_eq!(r.stdout, "abc");
    assert!(r.stdout_truncated);

    // Invalid bytes are replaced; NUL survives and serializes as valid JSON.
    let job = py(
        r"import sys; sys.stdout.buffer.write(b'a\xffb\x00c'); sys.stderr.buffer.write(b'\xc3')",
        Duration::from_secs(20),
    );
    let r = run_collect(&ex, job).await.0.expect("result");
    assert_eq!(r.stdout, "a\u{fffd}b\0c");
    assert_eq!(r.stderr, "\u{fffd}");
    assert!(r.stdout_lossy && r.stderr_lossy, "{r:?}");
    assert!(!r.stdout_truncated && !r.stderr_truncated);
    let json = serde_json::to_string(&r).expect("serializes");
    let back: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert_eq!(back["stdout"], "a\u{fffd}b\u{0}c");
    ex.shutdown().await;
}

#[tokio::test]
async fn stdin_is_written_concurrently() {
    let ex = sh_executor();
    // 4 MiB to a child that never reads: it still finishes normally.
    let mut job = sh("sleep 0.2; exit 0", Duration::from_secs(30));
    job.stdin = Some(vec![b'x'; 4 * MIB as usize]);
    job.limits.stdin_limit_bytes = 8 * MIB;
    let r = run_collect(&ex, job).await.0.expect("result");
    assert_eq!(r.exit_code, Some(0));
    assert!(!r.timed_out);

    // 1 MiB through cat with a 64 KiB output limit: completes, truncated.
    let mut job = sh("cat", Duration::from_secs(30));
    job.stdin = Some(vec![b'y'; MIB as usize]);
    job.limits.output_limit_bytes = 64 * 1024;
    let r = run_collect(&ex, job).await.0.expect("result");
    assert_eq!(r.exit_code, Some(0));
    assert_eq!(r.stdout.len(), 64 * 1024);
    assert!(r.stdout_truncated);

    // Over the stdin limit: refused before anything runs.
    let before = ex.jobs_started();
    let mut job = sh("cat", Duration::from_secs(30));
    job.stdin = Some(vec![b'z'; 10]);
    job.limits.stdin_limit_bytes = 5;
    let err = run_collect(&ex, job).await.0.expect_err("refused");
    assert!(err.to_string().contains("exceeds the limit"), "{err}");
    assert_eq!(ex.jobs_started(), before);
    ex.shutdown().await;
}
