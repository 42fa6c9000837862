//! Exit codes, signals, the parsed_json rule, refusals and progress events
//! through the real worker binary.

use std::time::Duration;

use conda_mcp_server::worker_client::{ExecError, JobRefusal, JobUpdate};
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
async fn parsed_json_only_for_exactly_one_document() {
    let ex = sh_executor();
    let r = run_collect(&ex, sh(r#"echo '{"a":1}'"#, Duration::from_secs(10)))
        .await
        .0
        .expect("result");
    assert_eq!(r.parsed_json, Some(serde_json::json!({"a": 1})));
    for script in [
        r#"echo '{"a":1}'; echo '{"b":2}'"#,
        r#"echo 'Collecting package metadata'; echo '{"a":1}'"#,
        "echo NaN",
        "printf ''",
    ] {
        let r = run_collect(&ex, sh(script, Duration::from_secs(10)))
            .await
            .0
            .expect("result");
        assert_eq!(r.parsed_json, None, "{script}");
        assert_eq!(r.exit_code, Some(0));
    }
    // Truncated JSON is never parsed, even if the prefix happened to parse.
    let mut job = sh(r#"echo '{"a":1}          '"#, Duration::from_secs(10));
    job.limits.output_limit_bytes = 8;
    let r = run_collect(&ex, job).await.0.expect("result");
    assert!(r.stdout_truncated);
    assert_eq!(r.parsed_json, None);
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
