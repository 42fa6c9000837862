//! Exit codes, signals, text and lossy flags, how a stopped process ended,
//! refusals and progress events
//! through the real worker binary.

use std::time::Duration;

use conda_mcp_server::worker_client::{ExecError, JobRefusal, JobUpdate};
use conda_mcp_shared::StopSignal;
use conda_mcp_tests::exec::{run_collect, sh, sh_executor};

#[tokio::test]
async fn exit_status_and_signals() {
    let ex = sh_executor();
    let r = run_collect(&ex, sh("exit 3", Duration::from_secs(10)))
        .await
        .0
        .expect("result");
    assert_eq!(r.exit_code, Some(3));
    assert!(r.is_error());
    let r = run_collect(&ex, sh("kill -SEGV $$", Duration::from_secs(10)))
        .await
        .0
        .expect("result");
    assert_eq!(r.exit_code, Some(-11));
    let r = run_collect(&ex, sh("exit 0", Duration::from_secs(10)))
        .await
        .0
        .expect("result");
    assert_eq!(r.exit_code, Some(0));
    assert!(!r.is_error());
    ex.shutdown().await;
}

#[tokio::test]
async fn stdout_is_reported_as_text_and_json_is_left_to_the_server() {
    let ex = sh_executor();
    // Progress records with NUL separators and a final document: the worker
    // keeps the text as it was printed and flags the NUL characters.
    let r = run_collect(
        &ex,
        sh(
            r#"printf '{"fetch":"x","progress":1.0}\n\000{"a":1}\n'"#,
            Duration::from_secs(10),
        ),
    )
    .await
    .0
    .expect("result");
    assert_eq!(
        r.stdout,
        "{\"fetch\":\"x\",\"progress\":1.0}\n\0{\"a\":1}\n"
    );
    assert!(r.stdout_lossy, "NUL characters are flagged");
    assert!(!r.stderr_lossy);
    assert_eq!(r.stopped_by, None, "the process ended by itself");
    let json = serde_json::to_value(&r).expect("serializes");
    assert!(json.get("parsed_json").is_none(), "{json}");
    assert!(
        json.get("stderr_lossy").is_none(),
        "false flags are left out: {json}"
    );
    ex.shutdown().await;
}

#[tokio::test]
async fn a_stopped_process_reports_the_signal_that_ended_it() {
    let ex = sh_executor();
    // sh exits on SIGTERM within the grace.
    let r = run_collect(&ex, sh("sleep 30", Duration::from_millis(500)))
        .await
        .0
        .expect("result");
    assert!(r.timed_out);
    assert_eq!(r.stopped_by, Some(StopSignal::Term));
    // A process that ignores SIGTERM is killed after the grace.
    let r = run_collect(
        &ex,
        sh(
            "trap '' TERM; while :; do sleep 0.1; done",
            Duration::from_millis(500),
        ),
    )
    .await
    .0
    .expect("result");
    assert!(r.timed_out);
    assert_eq!(r.stopped_by, Some(StopSignal::Kill));
    ex.shutdown().await;
}

#[tokio::test]
async fn nonexistent_cwd_is_refused_and_nothing_spawns() {
    let ex = sh_executor();
    let dir = tempfile::tempdir().expect("tempdir");
    let marker = dir.path().join("ran");
    let mut job = sh(
        &format!("touch '{}'", marker.display()),
        Duration::from_secs(10),
    );
    job.cwd = Some(dir.path().join("does-not-exist"));
    let (res, updates) = run_collect(&ex, job).await;
    let err = res.expect_err("refused");
    // A typed refusal on the wire, with the sentence of the worker's own.
    assert_eq!(err, ExecError::Rejected(JobRefusal::BadCwd));
    assert_eq!(
        err.to_string(),
        "the call could not be started: the working directory does not exist or is not a directory"
    );
    assert!(
        !err.to_string().contains("does-not-exist"),
        "no values echoed: {err}"
    );
    assert!(
        !updates
            .iter()
            .any(|u| matches!(u, JobUpdate::Started { .. }))
    );
    assert!(!marker.exists());

    // An existing cwd is used.
    let mut job = sh("pwd", Duration::from_secs(10));
    job.cwd = Some(dir.path().to_path_buf());
    let r = run_collect(&ex, job).await.0.expect("result");
    assert_eq!(
        std::path::Path::new(r.stdout.trim())
            .canonicalize()
            .expect("pwd"),
        dir.path().canonicalize().expect("dir")
    );
    ex.shutdown().await;
}

#[tokio::test]
async fn conda_json_progress_records_become_output_updates() {
    let ex = sh_executor();
    let script = r#"for p in 0.25 0.5 0.75; do printf '{"fetch":"x","finished":false,"maxval":1,"progress":%s}\n\0' $p; sleep 0.6; done"#;
    let (res, updates) = run_collect(&ex, sh(script, Duration::from_secs(20))).await;
    let r = res.expect("result");
    assert_eq!(r.exit_code, Some(0));
    let fractions: Vec<f64> = updates
        .iter()
        .filter_map(|u| match u {
            JobUpdate::Output {
                progress_fraction, ..
            } => *progress_fraction,
            _ => None,
        })
        .collect();
    assert!(!fractions.is_empty(), "updates: {updates:?}");
    assert!(fractions.windows(2).all(|w| w[0] <= w[1]), "{fractions:?}");
    assert!(
        fractions.iter().all(|f| [0.25, 0.5, 0.75].contains(f)),
        "{fractions:?}"
    );
    assert!(matches!(updates.first(), Some(JobUpdate::Started { .. })));
    ex.shutdown().await;
}
