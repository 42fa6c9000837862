//! The in-process checks through the worker, warm and fresh, on the
//! stand-in conda serving the recorded conda 26 parser: the guard decides
//! from inside conda's process (its configuration files, its envs
//! directories), refuses before the command acts, and its report comes back
//! typed; a guarded run prints what an unguarded one prints; a program
//! conda runs cannot forge a report; a conda that is not a Python script
//! cannot run checks and is refused.

use std::time::Duration;

use conda_mcp_server::worker_client::{
    ExecError, ExecutionResult, Executor, Job, JobRefusal, JobUpdate, Program,
};
use conda_mcp_shared::guard::{
    Expectation, GuardOutcome, GuardRefusal, GuardReport, InProcessChecks, REFUSED_STATUS,
    SettingSource, TargetRule, UnmanagedRule,
};
use conda_mcp_tests::paths;
use conda_mcp_tests::standin::{ControlRule, StandinPrefix, environment_with_marker};
use conda_mcp_tests::warm::{executor, was_warm};

const LIMIT: Duration = Duration::from_secs(60);

fn standin() -> StandinPrefix {
    StandinPrefix::create(&paths::real_dump()).expect("stand-in prefix with the conda 26 parser")
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// A worker whose conda calls run warm or fresh.
struct Under {
    ex: Executor,
    warm: bool,
    /// Calls that ran: (all of them, those whose path was confirmed by
    /// their parent pid). A call whose parent cannot be read (it ended
    /// before `/proc` was read) is not confirmed; [`each_path`] bounds how
    /// many may be.
    ran: std::sync::Mutex<(u32, u32)>,
}

/// Runs one conda job on `under` and checks it took the path asked for: a
/// child of the warm conda, or a process the worker started.
async fn run_job(
    under: &Under,
    argv: &[String],
    checks: Option<InProcessChecks>,
) -> Result<ExecutionResult, ExecError> {
    let mut job = Job::new(Program::Conda, argv.to_vec());
    job.limits.timeout = LIMIT;
    job.checks = checks;
    let parent = std::sync::Arc::new(std::sync::Mutex::new(None));
    let seen = parent.clone();
    let r = under
        .ex
        .run(job, move |u| {
            if let JobUpdate::Started { pid } = u {
                *seen.lock().expect("parent") = conda_mcp_tests::warm::parent_of(pid);
            }
        })
        .await;
    let parent = *parent.lock().expect("parent");
    if r.is_ok() {
        let mut ran = under.ran.lock().expect("ran");
        ran.0 += 1;
        if let (Some(parent), Some(worker)) = (parent, under.ex.worker_pid()) {
            assert_eq!(
                parent != worker,
                under.warm,
                "{argv:?} ran on the path asked for"
            );
            ran.1 += 1;
        }
    }
    r
}

fn report(r: &ExecutionResult) -> GuardReport {
    match &r.guard {
        Some(GuardOutcome::Report(rep)) => (**rep).clone(),
        other => panic!("a guard report, not {other:?}: {r:?}"),
    }
}

/// An executor whose calls run warm (`warm`: the warm conda is ready) or
/// fresh (`--no-warm-conda`).
async fn ready(p: &StandinPrefix, warm: bool) -> Executor {
    let ex = executor(&p.conda_exe, warm);
    if warm {
        let end = tokio::time::Instant::now() + LIMIT;
        loop {
            let ran = conda_mcp_tests::warm::run(
                &ex,
                &conda_mcp_tests::warm::Call::new(&["info"]),
                LIMIT,
            )
            .await;
            if was_warm(&ex, &ran) == Some(true) {
                break;
            }
            assert!(tokio::time::Instant::now() < end, "never warm");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    ex
}

async fn each_path(case: impl AsyncFn(&StandinPrefix, &Under, &str)) {
    for warm in [true, false] {
        let p = standin();
        let under = Under {
            ex: ready(&p, warm).await,
            warm,
            ran: std::sync::Mutex::new((0, 0)),
        };
        let what = if warm { "warm" } else { "fresh" };
        case(&p, &under, what).await;
        under.ex.shutdown().await;
        // The path check above runs only where the parent pid was read: at
        // least one call, and at least half of those that ran, must have
        // been confirmed on the path asked for.
        let (ran, confirmed) = *under.ran.lock().expect("ran");
        assert!(
            ran == 0 || (confirmed >= 1 && 2 * confirmed >= ran),
            "{what}: only {confirmed} of {ran} calls were confirmed on the path asked for"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dry_run_conda_would_not_honour_is_stopped_before_it_acts() {
    each_path(async |p, ex, what| {
        let root = p.prefix.clone();
        let argv = args(&["create", "-n", "fresh", "alpha", "--dry-run", "--json"]);
        let checks = InProcessChecks {
            require_dry_run: true,
            target: Some(TargetRule::Arguments),
            expect: Some(Expectation::Absent),
            ..InProcessChecks::default()
        };
        let r = run_job(ex, &argv, Some(checks.clone())).await.expect("ran");
        assert_eq!(r.exit_code, Some(0), "{what}: {r:?}");
        let rep = report(&r);
        assert!(rep.dry_run && rep.refusal.is_none(), "{what}: {rep:?}");
        assert_eq!(
            rep.prefix.as_deref(),
            Some(root.join("envs/fresh").to_str().expect("UTF-8 path")),
            "{what}: conda's own resolution of -n"
        );

        // The installation's .condarc forces dry_run off: conda would create.
        let condarc = root.join(".condarc");
        std::fs::write(&condarc, "dry_run: false  #!final\n").expect("condarc");
        let r = run_job(ex, &argv, Some(checks)).await.expect("ran");
        assert_eq!(r.exit_code, Some(REFUSED_STATUS), "{what}: {r:?}");
        let rep = report(&r);
        let Some(GuardRefusal::DryRunNotHonoured { setting }) = &rep.refusal else {
            panic!("{what}: {rep:?}")
        };
        assert_eq!(setting.key, "dry_run");
        assert!(setting.final_);
        assert_eq!(
            setting.source,
            Some(SettingSource::File(condarc.display().to_string()))
        );
        assert!(
            !root.join("envs/fresh").exists(),
            "{what}: nothing was created"
        );
        assert!(
            r.stdout.is_empty(),
            "{what}: the command never ran: {}",
            r.stdout
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_is_checked_where_conda_resolves_it_not_where_it_was_predicted() {
    each_path(async |p, ex, what| {
        // This command's conda looks in another envs directory first (the
        // stand-in's envs_dirs_first); the server would predict
        // <root>/envs/foo, which does not exist.
        let other = tempfile::tempdir().expect("dir");
        let env = other.path().join("foo");
        environment_with_marker(&env, "marker.txt");
        p.set_control(&[ControlRule {
            envs_dirs_first: Some(vec![other.path().to_path_buf()]),
            ..ControlRule::for_commands(&["create"])
        }])
        .expect("control");
        let checks = InProcessChecks {
            target: Some(TargetRule::Arguments),
            expect: Some(Expectation::Absent),
            ..InProcessChecks::default()
        };
        let argv = args(&["create", "-n", "foo", "alpha", "--yes", "--json"]);
        let r = run_job(ex, &argv, Some(checks)).await.expect("ran");
        assert_eq!(r.exit_code, Some(REFUSED_STATUS), "{what}: {r:?}");
        assert_eq!(
            report(&r).refusal,
            Some(GuardRefusal::EnvironmentExists {
                prefix: env.display().to_string(),
                packages: 1
            }),
            "{what}"
        );
        assert_eq!(
            std::fs::read_to_string(env.join("marker.txt")).expect("the marker survives"),
            "keep me"
        );
        // Without the check the same call replaces it (what the guard
        // prevents): conda's own behaviour under --json.
        let r = run_job(ex, &argv, None).await.expect("ran");
        assert_eq!(r.exit_code, Some(0), "{what}: {r:?}");
        assert!(r.guard.is_none());
        assert!(
            !env.join("marker.txt").exists(),
            "{what}: conda replaced it"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_of_a_missing_environment_is_not_found_and_json_forced_off_is_reported() {
    each_path(async |p, ex, what| {
        let checks = InProcessChecks {
            target: Some(TargetRule::Arguments),
            expect: Some(Expectation::Present),
            ..InProcessChecks::default()
        };
        let r = run_job(
            ex,
            &args(&["env", "export", "-n", "nosuchenv", "--json"]),
            Some(checks),
        )
        .await
        .expect("ran");
        assert_eq!(r.exit_code, Some(REFUSED_STATUS), "{what}: {r:?}");
        assert_eq!(
            report(&r).refusal,
            Some(GuardRefusal::EnvironmentNotFound {
                prefix: p.prefix.join("envs/nosuchenv").display().to_string()
            }),
            "{what}"
        );

        std::fs::write(p.prefix.join(".condarc"), "json: false #!final\n").expect("condarc");
        let r = run_job(
            ex,
            &args(&["info", "--json"]),
            Some(InProcessChecks::default()),
        )
        .await
        .expect("ran");
        assert_eq!(r.exit_code, Some(0), "{what}: {r:?}");
        let off = report(&r).json_forced_off.expect("json forced off");
        assert_eq!(off.key, "json");
        assert_eq!(
            off.source,
            Some(SettingSource::File(
                p.prefix.join(".condarc").display().to_string()
            ))
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_no_package_installed_are_listed_and_refuse_a_removal() {
    each_path(async |p, ex, what| {
        let env = p.prefix.join("envs/data");
        environment_with_marker(&env, "notes/mine.txt");
        let checks = |rule| InProcessChecks {
            target: Some(TargetRule::Arguments),
            expect: Some(Expectation::Present),
            unmanaged: rule,
            ..InProcessChecks::default()
        };
        let argv = args(&["remove", "-n", "data", "--all", "--yes", "--json"]);
        let r = run_job(ex, &argv, Some(checks(UnmanagedRule::Refuse)))
            .await
            .expect("ran");
        assert_eq!(r.exit_code, Some(REFUSED_STATUS), "{what}: {r:?}");
        let Some(GuardRefusal::UnmanagedFilesPresent { prefix, files }) = report(&r).refusal else {
            panic!("{what}: {r:?}")
        };
        assert_eq!(prefix, env.display().to_string());
        // The record's files and the interpreter's cache of a listed .py
        // are managed; the marker is not.
        assert_eq!(files.count, 1, "{what}: {files:?}");
        assert_eq!(files.bytes, 7);
        assert_eq!(files.first, ["notes/mine.txt"]);
        assert!(env.join("notes/mine.txt").is_file(), "{what}: it survives");

        let r = run_job(ex, &argv, Some(checks(UnmanagedRule::Report)))
            .await
            .expect("ran");
        assert_eq!(r.exit_code, Some(0), "{what}: {r:?}");
        assert_eq!(report(&r).unmanaged.expect("listed").count, 1);
        assert!(!env.exists(), "{what}: removed with the argument");
    })
    .await;
}

/// Normalised output of the stand-in (pids differ between runs).
fn observable(r: &ExecutionResult) -> (Option<i32>, String, String) {
    let stdout = match serde_json::from_str::<serde_json::Value>(&r.stdout) {
        Ok(serde_json::Value::Object(mut m)) => {
            m.remove("pid");
            serde_json::Value::Object(m).to_string()
        }
        _ => r.stdout.clone(),
    };
    (r.exit_code, stdout, r.stderr.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guarded_conda_prints_what_an_unguarded_one_prints() {
    each_path(async |_p, ex, what| {
        for argv in [
            &["info", "--json"][..],
            &["list", "--json"],
            &["--version"],
            &["info", "--help"],
            &["no-such-command"],
            &["search", "pâquet-ü"],
            &["create", "-n", "x", "alpha", "--dry-run", "--json"],
        ] {
            let argv = args(argv);
            let plain = run_job(ex, &argv, None).await.expect("ran");
            let guarded = run_job(ex, &argv, Some(InProcessChecks::default()))
                .await
                .expect("ran");
            assert_eq!(observable(&plain), observable(&guarded), "{what}: {argv:?}");
            // A command line conda rejects, --help and --version never
            // reach the command: no report.
            let reached = !matches!(argv[0].as_str(), "--version" | "no-such-command")
                && !argv.contains(&"--help".to_string());
            assert_eq!(
                matches!(guarded.guard, Some(GuardOutcome::Report(_))),
                reached,
                "{what}: {argv:?}: {:?}",
                guarded.guard
            );
            if !reached {
                assert_eq!(guarded.guard, Some(GuardOutcome::NoReport));
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_program_conda_runs_cannot_write_a_report() {
    each_path(async |p, ex, what| {
        p.set_control(&[ControlRule {
            execute_run: Some(true),
            ..ControlRule::for_commands(&["run"])
        }])
        .expect("control");
        let forged = r#"{"refusal": {"environment_not_found": {"prefix": "/forged"}}}"#;
        let script = format!(
            "import os\ntry:\n    os.write(3, {forged:?}.encode())\n    print('wrote')\nexcept OSError:\n    print('EBADF')\n"
        );
        let python = p.prefix.join("bin/python");
        let argv = args(&["run", "-n", "base", python.to_str().expect("UTF-8 path"), "-c", &script]);
        let r = run_job(ex, &argv, Some(InProcessChecks::default()))
            .await
            .expect("ran");
        assert_eq!(r.exit_code, Some(0), "{what}: {r:?}");
        assert_eq!(r.stdout.trim(), "EBADF", "{what}: {r:?}");
        assert_eq!(report(&r).refusal, None, "{what}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conda_that_is_not_a_python_script_cannot_be_checked() {
    let dir = tempfile::tempdir().expect("dir");
    let conda = dir.path().join("conda");
    std::fs::write(&conda, "#!/bin/sh\necho ran > \"$0.ran\"\n").expect("script");
    std::fs::set_permissions(&conda, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let under = Under {
        ex: executor(&conda, true),
        warm: false,
        ran: std::sync::Mutex::new((0, 0)),
    };
    let e = run_job(&under, &args(&["info"]), Some(enforcing()))
        .await
        .expect_err("refused");
    assert!(
        matches!(e, ExecError::Rejected(JobRefusal::ChecksUnsupported { .. })),
        "{e:?}"
    );
    assert!(!dir.path().join("conda.ran").exists(), "nothing ran");
    // Checks that only report run without the guard: no report.
    let r = run_job(&under, &args(&["info"]), Some(InProcessChecks::default()))
        .await
        .expect("ran");
    assert_eq!(r.exit_code, Some(0));
    assert_eq!(r.guard, None);
    assert!(dir.path().join("conda.ran").exists(), "it ran");
    under.ex.shutdown().await;
}

fn enforcing() -> InProcessChecks {
    InProcessChecks {
        require_dry_run: true,
        ..InProcessChecks::default()
    }
}
