//! The warm conda on the stand-in conda: a differential test (fresh process
//! against a child forked from the warm conda, byte for byte), containment,
//! fallback and recovery, and no state carried from one call to the next.
//!
//! Which path a call took is read from the stand-in's own logs: a fresh
//! process imports the stand-in `conda` package (one more line in
//! `standin-starts.log`), a warm call does not; both run its `main` (one line
//! in `standin-runs.log`).

use std::collections::BTreeMap;
use std::time::Duration;

use conda_mcp_server::worker_client::{Executor, WorkerConfig};
use conda_mcp_tests::exec::{alive, gone_within};
use conda_mcp_tests::standin::{ControlRule, PluginSpec, StandinPrefix};
use conda_mcp_tests::tiers::{Tier, missing};
use conda_mcp_tests::warm::{Call, executor, observable, run};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

/// Runs `call`; returns the result and whether it was warm (no Python
/// start).
async fn run_counted(
    ex: &Executor,
    p: &StandinPrefix,
    call: &Call,
) -> (conda_mcp_server::worker_client::ExecutionResult, bool) {
    let starts = p.python_starts();
    let runs = p.conda_runs();
    let r = run(ex, call, LIMIT).await.result;
    let warm = p.python_starts() == starts;
    assert!(p.conda_runs() > runs, "the call ran conda");
    (r, warm)
}

/// Calls `conda info` until one runs warm (the first calls run fresh while
/// the zygote starts); panics after 60 s.
async fn until_warm(ex: &Executor, p: &StandinPrefix) {
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let (_, warm) = run_counted(ex, p, &Call::new(&["info"])).await;
        if warm {
            return;
        }
        assert!(
            tokio::time::Instant::now() < end,
            "the warm conda never became ready"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The stand-in's JSON line with the pids (which differ between any two
/// fresh runs) removed; other output unchanged.
fn normalise(stdout: &str) -> String {
    stdout
        .lines()
        .map(|line| match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(mut m)) => {
                m.remove("pid");
                m.remove("grandchild_pid");
                Value::Object(m).to_string()
            }
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn corpus(dir_a: &std::path::Path, dir_b: &std::path::Path) -> Vec<Call> {
    let plain: &[&[&str]] = &[
        &["info"],
        &["info", "--json"],
        &["info", "-a"],
        &["--version"],
        &["--help"],
        &["info", "--help"],
        &["list"],
        &["list", "--json"],
        &["list", "-n", "base", "--json"],
        &["list", "--explicit"],
        &["env", "list"],
        &["env", "list", "--json"],
        &["config", "--show"],
        &["config", "--show", "--json"],
        &["config", "--show-sources"],
        &["config", "--get", "channels"],
        &["config", "--set", "channel_priority", "strict"],
        &["config", "--add", "channels", "conda-forge"],
        &["search", "numpy"],
        &["search", "--json", "lab-greet"],
        &["search", "numpy>=1.20", "--info"],
        &["install", "-n", "x", "numpy", "--dry-run", "--json"],
        &["install", "-n", "x", "numpy", "-y"],
        &["install", "-p", "/tmp/nowhere", "lab-greet", "--json"],
        &["update", "-n", "x", "--all", "--dry-run"],
        &["remove", "-n", "x", "numpy", "-y"],
        &["remove", "-n", "missing-env", "--all", "--json"],
        &["env", "export", "-n", "x"],
        &["env", "create", "-f", "environment.yml", "--dry-run"],
        &["run", "-n", "base", "python", "-c", "print(1)"],
        &["clean", "--all", "--dry-run"],
        &["compare", "-n", "x", "environment.yml"],
        &["plugins"],
        // Failures: unknown command, unknown option, missing value, bad choice.
        &["no-such-command"],
        &["install", "--no-such-flag"],
        &["list", "-n"],
        &["config", "--show", "--json", "--verbose", "--no-such"],
        &["search", "--platform"],
        &[],
        // Unusual argv: non-ASCII, empty string, spaces, a leading dash.
        &["search", "pâquet-ü"],
        &["search", ""],
        &["search", "a b c"],
        &["run", "-n", "base", "--", "-x"],
    ];
    let mut calls: Vec<Call> = plain.iter().map(|a| Call::new(a)).collect();
    // Working directories that differ per call.
    calls.push(Call::new(&["info"]).in_dir(dir_a));
    calls.push(Call::new(&["info", "--json"]).in_dir(dir_b));
    calls.push(Call::new(&["env", "list"]).in_dir(dir_a));
    // stdin.
    calls.push(Call::new(&["install", "-n", "x", "numpy"]).with_stdin(b"y\n"));
    calls
}

/// The rules under which the corpus runs: varied exit codes, output on
/// stderr, stdin read back, a crash by signal, and what the interpreter does
/// at exit (atexit handlers, a non-daemon thread, `sys.exit("message")`).
fn corpus_rules() -> Vec<ControlRule> {
    let mut remove = ControlRule::for_commands(&["remove"]);
    remove.exit_code = Some(1);
    remove.stderr_bytes = Some(300);
    let mut install = ControlRule::for_commands(&["install"]);
    install.read_stdin = Some(true);
    let mut update = ControlRule::for_commands(&["update"]);
    update.kill_self = Some(11);
    let mut search = ControlRule::for_commands(&["search"]);
    search.exit_code = Some(3);
    // What the interpreter does at exit: atexit handlers, non-daemon
    // threads joined (their output flushed), sys.exit with a message.
    let mut clean = ControlRule::for_commands(&["clean"]);
    clean.atexit_stderr = Some("atexit handler ran\n".into());
    clean.thread_stdout = Some("late thread output\n".into());
    let mut env_create = ControlRule::for_commands(&["env create"]);
    env_create.exit_message = Some("exit with a message".into());
    vec![remove, install, update, search, clean, env_create]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fresh_and_warm_agree_byte_for_byte() {
    let p = StandinPrefix::standard();
    p.set_control(&corpus_rules()).expect("rules");
    let dirs = (
        tempfile::tempdir().expect("dir"),
        tempfile::tempdir().expect("dir"),
    );
    let corpus = corpus(dirs.0.path(), dirs.1.path());
    assert!(corpus.len() >= 40, "{} calls", corpus.len());

    let fresh = executor(&p.conda_exe, false);
    let warm = executor(&p.conda_exe, true);
    until_warm(&warm, &p).await;
    let mut warm_calls = 0;
    for call in &corpus {
        let (f, f_warm) = run_counted(&fresh, &p, call).await;
        let (w, w_warm) = run_counted(&warm, &p, call).await;
        assert!(!f_warm, "--no-warm-conda ran {call:?} warm");
        warm_calls += usize::from(w_warm);
        let (fo, wo) = (observable(&f), observable(&w));
        assert_eq!(fo.0, wo.0, "exit status of {call:?}");
        assert_eq!(normalise(&fo.1), normalise(&wo.1), "stdout of {call:?}");
        assert_eq!(fo.2, wo.2, "stderr of {call:?}");
        assert_eq!(
            (f.stdout_truncated, f.stderr_truncated),
            (w.stdout_truncated, w.stderr_truncated)
        );
        // The exit rules above took effect (so agreeing means something).
        match call.argv.first().map(String::as_str) {
            Some("clean") => {
                assert!(wo.1.ends_with("late thread output\n"), "{call:?}: {}", wo.1);
                assert!(wo.2.ends_with("atexit handler ran\n"), "{call:?}: {}", wo.2);
            }
            Some("env") if call.argv.get(1).map(String::as_str) == Some("create") => {
                assert_eq!(wo.0, Some(1), "{call:?}");
                assert!(
                    wo.2.ends_with("exit with a message\n"),
                    "{call:?}: {}",
                    wo.2
                );
            }
            _ => {}
        }
    }
    assert_eq!(warm_calls, corpus.len(), "every call ran warm");
    fresh.shutdown().await;
    warm.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn condarc_edits_and_new_plugins_are_seen_by_the_next_call() {
    let p = StandinPrefix::standard();
    let ex = executor(&p.conda_exe, true);
    until_warm(&ex, &p).await;
    let rc = p.prefix.join(".condarc");

    // A .condarc edited between two warm calls.
    std::fs::write(&rc, "channels: [one]\n").expect("rc");
    let (r, warm) = run_counted(&ex, &p, &Call::new(&["config", "--show"])).await;
    assert!(warm);
    let v: Value = serde_json::from_str(r.stdout.trim()).expect("json");
    assert_eq!(v["condarc"], "channels: [one]\n");
    std::fs::write(&rc, "channels: [two]\n").expect("rc");
    let (r, warm) = run_counted(&ex, &p, &Call::new(&["config", "--show"])).await;
    assert!(warm);
    let v: Value = serde_json::from_str(r.stdout.trim()).expect("json");
    assert_eq!(v["condarc"], "channels: [two]\n");

    // A plugin installed by a call: the zygote's plugin manager is stale,
    // so it is replaced and no later call sees the old plugin list.
    let (r, _) = run_counted(&ex, &p, &Call::new(&["info", "--json"])).await;
    let before: Value = serde_json::from_str(r.stdout.trim()).expect("json");
    let mut add = ControlRule::for_commands(&["install"]);
    add.add_plugin = Some(PluginSpec {
        distribution: "conda-warm-probe".into(),
        version: "1.0".into(),
        name: "warm-probe".into(),
        value: "conda_warm_probe.plugin".into(),
    });
    p.set_control(&[add]).expect("rules");
    let (r, _) = run_counted(&ex, &p, &Call::new(&["install", "-n", "x", "numpy"])).await;
    assert_eq!(r.exit_code, Some(0), "{}", r.stderr);
    p.clear_control().expect("rules");
    let expected = "warm-probe=conda_warm_probe.plugin";
    for _ in 0..3 {
        let (r, _) = run_counted(&ex, &p, &Call::new(&["info", "--json"])).await;
        let v: Value = serde_json::from_str(r.stdout.trim()).expect("json");
        let plugins = v["plugins"].as_array().expect("plugins");
        assert!(
            plugins.iter().any(|x| x == expected),
            "{plugins:?} (before: {})",
            before["plugins"]
        );
    }
    until_warm(&ex, &p).await;
    let (r, warm) = run_counted(&ex, &p, &Call::new(&["info", "--json"])).await;
    assert!(warm, "a new warm conda took over");
    let v: Value = serde_json::from_str(r.stdout.trim()).expect("json");
    assert!(
        v["plugins"]
            .as_array()
            .expect("plugins")
            .iter()
            .any(|x| x == expected)
    );
    ex.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environment_and_directory_changes_do_not_leak() {
    let p = StandinPrefix::standard();
    let ex = executor(&p.conda_exe, true);
    until_warm(&ex, &p).await;
    let (baseline, _) = run_counted(&ex, &p, &Call::new(&["info", "--json"])).await;
    let base: Value = serde_json::from_str(baseline.stdout.trim()).expect("json");

    let elsewhere = tempfile::tempdir().expect("dir");
    let mut leak = ControlRule::for_commands(&["run"]);
    leak.setenv = Some(BTreeMap::from([("LEAKED_BY_RUN".into(), "1".into())]));
    leak.chdir = Some(elsewhere.path().display().to_string());
    p.set_control(&[leak]).expect("rules");
    let (r, warm) = run_counted(
        &ex,
        &p,
        &Call::new(&["run", "--cwd", "/", "-n", "base", "true"]),
    )
    .await;
    assert!(warm);
    let v: Value = serde_json::from_str(r.stdout.trim()).expect("json");
    assert!(
        v["env"]
            .as_array()
            .expect("env")
            .iter()
            .any(|n| n == "LEAKED_BY_RUN")
    );
    p.clear_control().expect("rules");

    let (after, warm) = run_counted(&ex, &p, &Call::new(&["info", "--json"])).await;
    assert!(warm);
    let after: Value = serde_json::from_str(after.stdout.trim()).expect("json");
    assert_eq!(after["env"], base["env"], "no variable carried over");
    assert_eq!(after["cwd"], base["cwd"], "no directory carried over");
    ex.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout_and_cancel_kill_the_forked_childs_whole_tree() {
    let p = StandinPrefix::standard();
    let ex = executor(&p.conda_exe, true);
    until_warm(&ex, &p).await;
    let mut rule = ControlRule::for_commands(&["install"]);
    rule.spawn_grandchild = Some(true);
    rule.grandchild_setsid = Some(true);
    rule.sleep_seconds = Some(300.0);
    rule.ignore_sigterm = Some(true);
    p.set_control(&[rule]).expect("rules");

    // Timeout.
    let starts = p.python_starts();
    let t0 = std::time::Instant::now();
    let r = run(
        &ex,
        &Call::new(&["install", "-n", "x", "numpy"]),
        Duration::from_secs(3),
    )
    .await
    .result;
    assert!(r.timed_out, "{r:?}");
    // at the 3 s timeout (and the grace), not the 300 s sleep
    assert!(t0.elapsed() < Duration::from_secs(60), "{:?}", t0.elapsed());
    assert_eq!(
        p.python_starts(),
        starts,
        "a warm call (the grandchild Python does not import conda)"
    );
    let grandchildren = p.grandchild_pids();
    assert_eq!(grandchildren.len(), 1);
    for pid in &grandchildren {
        assert!(
            gone_within(*pid, Duration::from_secs(30)).await,
            "setsid grandchild {pid} survived"
        );
    }

    // Cancel.
    let mut job = conda_mcp_server::worker_client::Job::new(
        conda_mcp_server::worker_client::Program::Conda,
        vec!["install".into(), "-n".into(), "x".into(), "numpy".into()],
    );
    job.limits.timeout = LIMIT;
    let cancel = job.cancel.clone();
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(2)).await;
        cancel.cancel();
    });
    let r = ex.run(job, |_| {}).await;
    let cancelled = match r {
        Ok(r) => r.cancelled,
        Err(e) => matches!(e, conda_mcp_server::worker_client::ExecError::Cancelled),
    };
    assert!(cancelled);
    let grandchildren = p.grandchild_pids();
    assert_eq!(grandchildren.len(), 2);
    for pid in &grandchildren {
        assert!(
            gone_within(*pid, Duration::from_secs(30)).await,
            "grandchild {pid} survived"
        );
    }

    // The zygote survived both, and a crash of a child.
    p.clear_control().expect("rules");
    let (_, warm) = run_counted(&ex, &p, &Call::new(&["info"])).await;
    assert!(warm, "the zygote survived the killed children");
    let mut crash = ControlRule::for_commands(&["config"]);
    crash.kill_self = Some(11);
    p.set_control(&[crash]).expect("rules");
    let (r, warm) = run_counted(&ex, &p, &Call::new(&["config", "--show"])).await;
    assert!(warm);
    assert_eq!(r.exit_code, Some(-11));
    let (_, warm) = run_counted(&ex, &p, &Call::new(&["info"])).await;
    assert!(warm, "the zygote survived a crashing child");
    ex.shutdown().await;
}

/// The zygote's pid: the stand-in logs each import of `conda` with the
/// importing process's argv; the zygote's is the conda script alone.
fn zygote_pids(p: &StandinPrefix) -> Vec<u32> {
    let log = std::fs::read_to_string(p.prefix.join("standin-starts.log")).unwrap_or_default();
    let me = serde_json::to_string(&vec![p.conda_exe.display().to_string()]).expect("json");
    log.lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, argv)| *argv == me)
        .filter_map(|(pid, _)| pid.parse().ok())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_zygote_means_one_fresh_call_then_warm_again() {
    let p = StandinPrefix::standard();
    let ex = executor(&p.conda_exe, true);
    until_warm(&ex, &p).await;
    let zygotes = zygote_pids(&p);
    assert_eq!(zygotes.len(), 1, "{zygotes:?}");
    let z = zygotes[0];
    assert!(alive(z));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(z as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill the zygote");
    assert!(gone_within(z, Duration::from_secs(30)).await);

    let (r, warm) = run_counted(&ex, &p, &Call::new(&["info", "--json"])).await;
    assert_eq!(r.exit_code, Some(0));
    assert!(!warm, "the call after the zygote died ran fresh");
    until_warm(&ex, &p).await;
    assert_eq!(zygote_pids(&p).len(), 2, "a new zygote");
    ex.shutdown().await;
}

/// A listening worker (`conda-mcp-worker serve`) for `p` whose environment
/// has `env` (passed to conda with `--pass-env`), and an executor connected
/// to it. The worker is killed when the returned guard drops.
struct Listening {
    ex: Executor,
    served: std::process::Child,
    log: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Listening {
    async fn start(p: &StandinPrefix, env: &[(&str, &str)], warm: bool) -> Listening {
        let dir = tempfile::tempdir().expect("tempdir");
        let socket = dir.path().join("worker.sock");
        let log = dir.path().join("worker.log");
        let mut cmd = std::process::Command::new(conda_mcp_tests::bins::worker());
        cmd.arg("serve")
            .arg("--socket")
            .arg(&socket)
            .arg("--conda-exe")
            .arg(&p.conda_exe)
            .args(["--allow-uid", &nix::unistd::Uid::effective().to_string()]);
        for (k, v) in env {
            cmd.env(k, v).args(["--pass-env", k]);
        }
        if !warm {
            cmd.arg("--no-warm-conda");
        }
        let served = cmd
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log"))
            .spawn()
            .expect("serve");
        let end = tokio::time::Instant::now() + Duration::from_secs(10);
        while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("listening")) {
            assert!(
                tokio::time::Instant::now() < end,
                "the worker never listened"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let mut cfg = WorkerConfig::new(&p.conda_exe);
        cfg.worker_exe = conda_mcp_tests::bins::worker();
        cfg.socket = Some(socket);
        Listening {
            ex: Executor::new(cfg),
            served,
            log,
            _dir: dir,
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The `n`-th (from 1) "job finished" line of the worker's log once it
    /// is there, or after 10 s an empty string: the worker writes its log on
    /// a thread of its own, so the line may follow the answer it belongs
    /// to (under load, by more than a moment).
    async fn job_finished(&self, n: usize) -> String {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let line = self
                .log_text()
                .lines()
                .filter(|l| l.contains("job finished"))
                .nth(n - 1)
                .map(str::to_string);
            match line {
                Some(line) => return line,
                None if tokio::time::Instant::now() >= deadline => return String::new(),
                None => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let _ = self.served.kill();
        let _ = self.served.wait();
    }
}

/// The `__cuda` version of an `info --json` answer.
fn cuda(stdout: &str) -> Value {
    let v: Value = serde_json::from_str(stdout).expect("JSON");
    v["virtual_pkgs"][0][1].clone()
}

/// How many times the stand-in's CUDA probe ran (one line each).
fn probes(p: &StandinPrefix) -> usize {
    std::fs::read_to_string(p.prefix.join("standin-cuda-probes.log"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// `conda info`'s CUDA probe (conda 26 starts a fresh interpreter for it,
/// once per process) runs once in the warm conda and its answer is reused
/// by every call while the driver stays the same; a driver upgraded without
/// any change to conda or its plugins (a `libcuda.so.1` on the loader's
/// path rewritten) gives the new answer on the next call, as a fresh conda
/// does, and the new answer is again reused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cuda_probe_runs_once_and_a_driver_change_is_seen_on_the_next_call() {
    let p = StandinPrefix::standard();
    let lib = p.dir.path().join("driver-lib");
    std::fs::create_dir(&lib).expect("lib dir");
    let driver = lib.join("libcuda.so.1");
    std::fs::write(&driver, "12.4").expect("driver");
    let lib_path = lib.display().to_string();
    let env = [("LD_LIBRARY_PATH", lib_path.as_str())];
    let warm = Listening::start(&p, &env, true).await;
    let fresh = Listening::start(&p, &env, false).await;
    until_warm(&warm.ex, &p).await;
    let call = Call::new(&["info", "--json"]);
    let before = probes(&p);
    for _ in 0..3 {
        let (r, was_warm) = run_counted(&warm.ex, &p, &call).await;
        assert!(was_warm);
        assert_eq!(cuda(&r.stdout), Value::from("12.4"));
    }
    assert_eq!(probes(&p), before, "warm calls reuse the zygote's probe");
    let (f, was_warm) = run_counted(&fresh.ex, &p, &call).await;
    assert!(!was_warm);
    assert_eq!(cuda(&f.stdout), Value::from("12.4"));
    assert_eq!(probes(&p), before + 1, "a fresh conda probes on its call");

    std::fs::write(&driver, "12.6.1").expect("driver upgraded");
    let (w, _) = run_counted(&warm.ex, &p, &call).await;
    let (f, _) = run_counted(&fresh.ex, &p, &call).await;
    assert_eq!(cuda(&w.stdout), Value::from("12.6.1"), "the next call");
    assert_eq!(cuda(&w.stdout), cuda(&f.stdout), "warm and fresh agree");
    assert!(
        warm.log_text().contains("the CUDA driver may have changed"),
        "the zygote was replaced for the driver"
    );
    until_warm(&warm.ex, &p).await;
    let settled = probes(&p);
    for _ in 0..2 {
        let (r, was_warm) = run_counted(&warm.ex, &p, &call).await;
        assert!(was_warm);
        assert_eq!(cuda(&r.stdout), Value::from("12.6.1"));
    }
    assert_eq!(probes(&p), settled, "the new answer is reused");
    warm.ex.shutdown().await;
    fresh.ex.shutdown().await;
}

/// `CONDA_OVERRIDE_CUDA` (conda's override of the probe) reaches a warm
/// call as it reaches a fresh one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn conda_override_cuda_reaches_warm_calls() {
    let p = StandinPrefix::standard();
    let warm = Listening::start(&p, &[("CONDA_OVERRIDE_CUDA", "11.8")], true).await;
    until_warm(&warm.ex, &p).await;
    let (r, was_warm) = run_counted(&warm.ex, &p, &Call::new(&["info", "--json"])).await;
    assert!(was_warm);
    assert_eq!(cuda(&r.stdout), Value::from("11.8"));
    warm.ex.shutdown().await;
}

/// A call that arrives while the warm conda is still starting waits for it
/// when the start is expected to end before a fresh run would: here the
/// zygote's start (its CUDA probe takes 2.5 s, longer than the 2 s a call
/// used to wait) is shorter than the fresh run measured before (4 s of
/// of `conda config`), so the call waits and runs warm, and the worker's log says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waits_for_a_starting_warm_conda_when_that_is_sooner() {
    let p = StandinPrefix::standard();
    let lib = p.dir.path().join("driver-lib");
    std::fs::create_dir(&lib).expect("lib dir");
    std::fs::write(lib.join("libcuda.so.1"), "12.4").expect("driver");
    let lib_path = lib.display().to_string();
    let warm = Listening::start(&p, &[("LD_LIBRARY_PATH", lib_path.as_str())], true).await;
    std::fs::write(p.prefix.join("standin-cuda-probe-delay"), "2.5").expect("delay");
    let mut slow = ControlRule::for_commands(&["config"]);
    slow.sleep_seconds = Some(4.0);
    p.set_control(&[slow]).expect("control");
    // Each call's "job finished" line in the worker's log says which path
    // ran (the zygote's own start imports conda while the call waits, so
    // the stand-in's start count cannot tell).
    // The first call runs fresh (nothing started yet) and is measured.
    let r = run(&warm.ex, &Call::new(&["config", "--show"]), LIMIT)
        .await
        .result;
    assert_eq!(r.exit_code, Some(0), "{r:?}\n{}", warm.log_text());
    assert!(
        warm.job_finished(1).await.contains("warm=false"),
        "the first call, without a warm-up, runs fresh"
    );
    p.clear_control().expect("control");
    // Its end started the zygote, which now probes for 2.5 s.
    let started = tokio::time::Instant::now();
    let r = run(&warm.ex, &Call::new(&["config", "--show"]), LIMIT)
        .await
        .result;
    assert_eq!(r.exit_code, Some(0));
    assert!(
        warm.job_finished(2).await.contains("warm=true"),
        "the call waited for the starting warm conda: {}",
        warm.log_text()
    );
    assert!(started.elapsed() >= Duration::from_secs(2), "it did wait");
    warm.ex.shutdown().await;
}

/// The pids of `pid`'s children (every thread's `/proc` entry).
#[cfg(target_os = "linux")]
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// The warm conda at rest is one process: its CUDA probe (the stand-in's,
/// like conda 26's, runs the detector in a `spawn` child, whose semaphore
/// and start also start multiprocessing's resource tracker, a second
/// interpreter that would live as long as the zygote) leaves nothing
/// running beside it, and its answer is the one a fresh conda gives.
#[cfg(target_os = "linux")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_warm_conda_at_rest_has_no_helper_process() {
    let p = StandinPrefix::standard();
    let lib = p.dir.path().join("driver-lib");
    std::fs::create_dir(&lib).expect("lib dir");
    std::fs::write(lib.join("libcuda.so.1"), "12.4").expect("driver");
    let lib_path = lib.display().to_string();
    let env = [("LD_LIBRARY_PATH", lib_path.as_str())];
    let warm = Listening::start(&p, &env, true).await;
    let fresh = Listening::start(&p, &env, false).await;
    until_warm(&warm.ex, &p).await;
    let zygotes = zygote_pids(&p);
    assert_eq!(
        zygotes.len(),
        1,
        "one zygote, nothing else started as one: {zygotes:?}"
    );
    let z = zygotes[0];
    // The last warm call's child is reaped by the zygote before the call's
    // status comes back: what is left is the zygote's own.
    assert_eq!(
        children_of(z),
        Vec::<u32>::new(),
        "the zygote at rest has no child"
    );
    assert!(
        warm.log_text().contains("phases_ms=") && warm.log_text().contains("probe="),
        "the worker logs the start's phases: {}",
        warm.log_text()
    );
    let call = Call::new(&["info", "--json"]);
    let probed = probes(&p);
    let (w, was_warm) = run_counted(&warm.ex, &p, &call).await;
    assert!(was_warm);
    assert_eq!(
        probes(&p),
        probed,
        "the warm call reads the zygote's answer"
    );
    let (f, _) = run_counted(&fresh.ex, &p, &call).await;
    assert_eq!(probes(&p), probed + 1, "a fresh conda probes");
    assert_eq!(cuda(&w.stdout), Value::from("12.4"));
    assert_eq!(cuda(&w.stdout), cuda(&f.stdout), "warm and fresh agree");
    assert_eq!(children_of(z), Vec::<u32>::new(), "still none after a call");
    warm.ex.shutdown().await;
    fresh.ex.shutdown().await;
}

/// A call that does not wait for a starting warm conda (its start is
/// expected to end later than a fresh run would: a slow driver probe
/// against a quick fresh call measured before) runs fresh; the warm conda,
/// ready while that fresh run goes on, serves the next call, and no second
/// one is started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_conda_ready_while_a_fresh_call_runs_serves_the_next_call() {
    let p = StandinPrefix::standard();
    let lib = p.dir.path().join("driver-lib");
    std::fs::create_dir(&lib).expect("lib dir");
    std::fs::write(lib.join("libcuda.so.1"), "12.4").expect("driver");
    let lib_path = lib.display().to_string();
    let warm = Listening::start(&p, &[("LD_LIBRARY_PATH", lib_path.as_str())], true).await;
    std::fs::write(p.prefix.join("standin-cuda-probe-delay"), "3").expect("delay");
    // The first call runs fresh (nothing started yet), quickly, and is
    // measured; its end starts the zygote, whose probe takes 3 s.
    let r = run(&warm.ex, &Call::new(&["env", "list"]), LIMIT)
        .await
        .result;
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert!(warm.job_finished(1).await.contains("warm=false"));
    // The second call does not wait for the start (or stops waiting once
    // a fresh run would have ended) and runs fresh, for 5 s: the zygote
    // becomes ready meanwhile.
    let mut slow = ControlRule::for_commands(&["config"]);
    slow.sleep_seconds = Some(5.0);
    p.set_control(&[slow]).expect("control");
    let r = run(&warm.ex, &Call::new(&["config", "--show"]), LIMIT)
        .await
        .result;
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    assert!(
        warm.job_finished(2).await.contains("warm=false"),
        "the second call ran fresh: {}",
        warm.log_text()
    );
    p.clear_control().expect("control");
    let r = run(&warm.ex, &Call::new(&["info", "--json"]), LIMIT)
        .await
        .result;
    assert_eq!(r.exit_code, Some(0));
    assert_eq!(cuda(&r.stdout), Value::from("12.4"));
    assert!(
        warm.job_finished(3).await.contains("warm=true"),
        "the third call forked from the zygote that became ready: {}",
        warm.log_text()
    );
    assert_eq!(zygote_pids(&p).len(), 1, "one zygote was started");
    warm.ex.shutdown().await;
}

/// Calls queued behind a call that waits for the starting warm conda: two
/// calls sent together right after the warm-up both answer as a fresh
/// conda would, the one queued behind the other (the server's conda lane
/// runs one job at a time) forks from the same zygote, and no second zygote
/// starts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_queued_behind_a_starting_warm_conda_share_it() {
    let p = StandinPrefix::standard();
    let warm = Listening::start(&p, &[], true).await;
    let fresh = Listening::start(&p, &[], false).await;
    warm.ex.warm_up().await;
    let call = Call::new(&["info", "--json"]);
    let (a, b) = tokio::join!(run(&warm.ex, &call, LIMIT), run(&warm.ex, &call, LIMIT));
    let f = run(&fresh.ex, &call, LIMIT).await.result;
    for r in [&a.result, &b.result] {
        assert_eq!(r.exit_code, Some(0), "{r:?}");
        assert_eq!(
            (normalise(&r.stdout), &r.stderr),
            (normalise(&f.stdout), &f.stderr),
            "as a fresh conda answers"
        );
    }
    let second = warm.job_finished(2).await;
    assert!(
        second.contains("warm=true"),
        "the call queued behind ran warm: {}",
        warm.log_text()
    );
    assert_eq!(zygote_pids(&p).len(), 1, "one zygote was started");
    warm.ex.shutdown().await;
    fresh.ex.shutdown().await;
}

/// Waits up to 60 s for a zygote of `p` to start, then gives it time to
/// finish importing (the stand-in's imports take well under a second).
async fn until_zygote(p: &StandinPrefix) {
    let end = tokio::time::Instant::now() + Duration::from_secs(60);
    while zygote_pids(p).is_empty() {
        assert!(
            tokio::time::Instant::now() < end,
            "no zygote started after the warm-up"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_up_makes_the_first_call_warm() {
    // Without it, the first call runs fresh and starts the warm conda.
    let p = StandinPrefix::standard();
    let ex = executor(&p.conda_exe, true);
    let (r, warm) = run_counted(&ex, &p, &Call::new(&["info"])).await;
    assert_eq!(r.exit_code, Some(0));
    assert!(!warm, "without a warm-up the first call runs fresh");
    ex.shutdown().await;
    // With it (what the server sends once discovery is done), the first
    // call forks from the warm conda.
    let p = StandinPrefix::standard();
    let ex = executor(&p.conda_exe, true);
    ex.warm_up().await;
    until_zygote(&p).await;
    assert_eq!(p.conda_runs(), 0, "the warm-up runs no conda command");
    let (r, warm) = run_counted(&ex, &p, &Call::new(&["info"])).await;
    assert_eq!(r.exit_code, Some(0));
    assert!(warm, "the first call after the warm-up ran warm");
    ex.shutdown().await;
    // --no-warm-conda: the warm-up starts nothing.
    let p = StandinPrefix::standard();
    let ex = executor(&p.conda_exe, false);
    ex.warm_up().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(zygote_pids(&p).is_empty(), "no zygote with --no-warm-conda");
    ex.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_warm_conda_runs_every_call_fresh() {
    let p = StandinPrefix::standard();
    let ex = executor(&p.conda_exe, false);
    for _ in 0..4 {
        let (r, warm) = run_counted(&ex, &p, &Call::new(&["info"])).await;
        assert_eq!(r.exit_code, Some(0));
        assert!(!warm);
    }
    assert!(zygote_pids(&p).is_empty(), "no zygote was started");
    ex.shutdown().await;
}

/// The warm conda where hardened deployments run the worker: a listening
/// worker (`conda-mcp-worker serve`) and, as root, a worker under
/// `--worker-user` (the zygote, and so every call forked from it, runs as
/// that user).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_conda_in_a_listening_worker_and_under_a_worker_user() {
    const TEST: &str = "warm_conda_in_a_listening_worker_and_under_a_worker_user";

    // A listening worker.
    let p = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("worker.sock");
    let log = dir.path().join("worker.log");
    let mut served = std::process::Command::new(conda_mcp_tests::bins::worker())
        .arg("serve")
        .arg("--socket")
        .arg(&socket)
        .arg("--conda-exe")
        .arg(&p.conda_exe)
        .args(["--allow-uid", &nix::unistd::Uid::effective().to_string()])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("serve");
    let end = tokio::time::Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("listening")) {
        assert!(
            tokio::time::Instant::now() < end,
            "the worker never listened"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut cfg = WorkerConfig::new(&p.conda_exe);
    cfg.worker_exe = conda_mcp_tests::bins::worker();
    cfg.socket = Some(socket);
    let ex = Executor::new(cfg);
    until_warm(&ex, &p).await;
    let (r, warm) = run_counted(&ex, &p, &Call::new(&["info", "--json"])).await;
    assert!(warm, "{r:?}");
    assert_eq!(r.exit_code, Some(0), "{r:?}");
    ex.shutdown().await;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.contains("warm=true"), "{text}");
    let _ = served.kill();
    let _ = served.wait();

    // A worker under another user.
    if !nix::unistd::Uid::effective().is_root() {
        missing(Tier::Root, TEST, "not root: --worker-user needs it");
        return;
    }
    let Ok(Some(nobody)) = nix::unistd::User::from_name("nobody") else {
        missing(Tier::Root, TEST, "no user `nobody`");
        return;
    };
    // The venv's interpreter must be one nobody can run (not one under
    // root's home, as pyenv's is).
    let python = std::path::Path::new("/usr/bin/python3");
    if !python.exists() {
        missing(Tier::Root, TEST, "no /usr/bin/python3 for user `nobody`");
        return;
    }
    let p = StandinPrefix::create_with(&conda_mcp_tests::standin::standin_dump(), python)
        .expect("stand-in prefix");
    // nobody reads the stand-in package from a copy inside the prefix
    // (the checkout may be out of its reach) and writes the stand-in's logs.
    let package = p.prefix.join("standin-package");
    copy_tree(&conda_mcp_tests::standin::standin_dir(), &package).expect("copy");
    std::fs::write(
        p.site_packages.join("conda_mcp_standin.pth"),
        format!("{}\n", package.display()),
    )
    .expect("pth");
    let status = std::process::Command::new("chmod")
        .arg("-R")
        .arg("a+rwX")
        .arg(p.dir.path())
        .status()
        .expect("chmod");
    assert!(status.success());
    let base = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(
        base.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .expect("chmod");
    let mut cfg = WorkerConfig::new(&p.conda_exe);
    cfg.worker_exe = conda_mcp_tests::bins::worker();
    cfg.user = Some("nobody".into());
    cfg.home = Some(base.path().join("home"));
    let ex = Executor::new(cfg);
    until_warm(&ex, &p).await;
    let (r, warm) = run_counted(&ex, &p, &Call::new(&["info", "--json"])).await;
    assert!(warm, "{r:?}");
    let v: Value = serde_json::from_str(r.stdout.trim()).expect("json");
    assert_eq!(v["uid"], Value::from(nobody.uid.as_raw()), "{v}");
    ex.shutdown().await;
}

/// Copies the directory tree `from` to `to` (files and directories only).
fn copy_tree(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// A plugin whose entry point imports a missing module: conda skips it and
/// prints `Error while loading conda entry point: NAME (ERROR)` on stderr
/// (`conda/plugins/manager.py`, the stand-in's `conda.plugins.manager`).
/// The warm conda keeps working, and each warm call prints that line
/// exactly as a fresh conda does, verbose or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_that_fails_to_load_keeps_conda_warm_and_each_call_prints_condas_warning() {
    let p = StandinPrefix::standard();
    p.add_entry_point(&PluginSpec {
        distribution: "conda-broken".into(),
        version: "1.0".into(),
        name: "conda-broken".into(),
        value: "conda_broken_missing.plugin".into(),
    })
    .expect("entry point");
    let line = "Error while loading conda entry point: conda-broken \
                (No module named 'conda_broken_missing')\n";
    let calls = [
        Call::new(&["info", "--json"]),
        Call::new(&["list"]),
        Call::new(&["info", "-vv"]),
    ];
    let fresh = executor(&p.conda_exe, false);
    let mut expected = Vec::new();
    for call in &calls {
        let (r, warm) = run_counted(&fresh, &p, call).await;
        assert!(!warm);
        assert!(r.stderr.starts_with(line), "{:?}: {}", call.argv, r.stderr);
        expected.push(r);
    }
    fresh.shutdown().await;

    let ex = executor(&p.conda_exe, true);
    until_warm(&ex, &p).await;
    for (call, want) in calls.iter().zip(&expected) {
        for _ in 0..2 {
            let (r, warm) = run_counted(&ex, &p, call).await;
            assert!(warm, "{:?} ran warm", call.argv);
            assert_eq!(r.exit_code, want.exit_code, "{:?}", call.argv);
            assert_eq!(r.stderr, want.stderr, "{:?}: stderr as fresh", call.argv);
            assert_eq!(
                normalise(&r.stdout),
                normalise(&want.stdout),
                "{:?}",
                call.argv
            );
        }
    }
    ex.shutdown().await;
}

/// Runs one of the server's helper programs (the inventory helper, `python
/// -I -c SOURCE REQUEST`) through `ex`; returns the result and whether it
/// ran without a Python start (forked from the warm conda).
async fn run_helper(
    ex: &Executor,
    p: &StandinPrefix,
    query: &conda_mcp_server::inventory::Query,
) -> (conda_mcp_server::worker_client::ExecutionResult, bool) {
    use conda_mcp_server::worker_client::{Job, Program};
    let starts = p.python_starts();
    let mut job = Job::new(
        Program::Python,
        conda_mcp_server::inventory::helper_argv(query),
    );
    job.limits.timeout = LIMIT;
    job.label = "warm helper test".into();
    let r = ex.run(job, |_| {}).await.expect("the helper ran");
    (r, p.python_starts() == starts)
}

/// The server's helper programs run in a child of a ready, idle warm conda
/// (no Python start, conda's modules already imported) and answer exactly
/// as a fresh interpreter does; with the warm conda off, or while it is not
/// ready, they run fresh.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn helpers_fork_from_a_ready_warm_conda_and_answer_as_a_fresh_interpreter() {
    use conda_mcp_server::inventory::Query;
    let p = StandinPrefix::standard();
    let with_python = |warm: bool| conda_mcp_tests::warm::helper_executor(&p.conda_exe, warm);
    let fresh = with_python(false);
    let warm = with_python(true);
    until_warm(&warm, &p).await;
    let queries = [
        Query::Sizes,
        Query::Package("python".into()),
        Query::ImportName("yaml".into()),
        Query::Package("numpy[version=".into()),
    ];
    for query in &queries {
        let (f, f_warm) = run_helper(&fresh, &p, query).await;
        let (w, w_warm) = run_helper(&warm, &p, query).await;
        assert!(!f_warm, "{query:?}: --no-warm-conda ran the helper warm");
        assert!(
            w_warm,
            "{query:?}: the helper started Python beside a ready warm conda"
        );
        assert_eq!(observable(&f), observable(&w), "{query:?}");
        let answer: Value = serde_json::from_str(&w.stdout).expect("one JSON answer");
        assert_eq!(answer["query"], query.kind(), "{}", w.stdout);
    }
    // The helper changed nothing the next conda call sees: it still runs
    // warm, in a zygote that never ran a helper.
    let (_, warm_again) = run_counted(&warm, &p, &Call::new(&["info"])).await;
    assert!(warm_again, "the conda call after the helpers ran warm");
    fresh.shutdown().await;
    warm.shutdown().await;
}

/// `Executor::run_helper_warm` sends a helper as `warm_only`: with no warm
/// conda it is refused and handed back with nothing run (no Python start);
/// with a ready one it runs forked from it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_only_helper_runs_warm_or_is_handed_back_unrun() {
    use conda_mcp_server::inventory::{Query, helper_argv};
    use conda_mcp_server::worker_client::{Job, Program};
    let p = StandinPrefix::standard();
    let with_python = |warm: bool| conda_mcp_tests::warm::helper_executor(&p.conda_exe, warm);
    let helper = || {
        let mut job = Job::new(Program::Python, helper_argv(&Query::Sizes));
        job.limits.timeout = LIMIT;
        job
    };
    let cold = with_python(false);
    cold.connect().await.expect("worker");
    let starts = p.python_starts();
    let given_back = cold.run_helper_warm(helper(), |_| {}).await;
    assert!(given_back.is_err(), "no warm conda: the job comes back");
    assert_eq!(p.python_starts(), starts, "nothing ran");
    assert_eq!(cold.jobs_started(), 0, "a refused job is not counted");

    let warm = with_python(true);
    until_warm(&warm, &p).await;
    let starts = p.python_starts();
    let ran = warm
        .run_helper_warm(helper(), |_| {})
        .await
        .expect("an idle lane with a ready warm conda runs it")
        .expect("the helper ran");
    assert_eq!(ran.exit_code, Some(0), "{}", ran.stderr);
    assert_eq!(p.python_starts(), starts, "forked from the warm conda");
    // Helpers at once take turns on the lane, each forked from the warm
    // conda: none is handed back, none starts Python.
    let all =
        futures::future::join_all((0..5).map(|_| warm.run_helper_warm(helper(), |_| {}))).await;
    for r in all {
        let r = r.expect("queued behind helpers only").expect("ran");
        assert_eq!(r.exit_code, Some(0), "{}", r.stderr);
    }
    assert_eq!(
        p.python_starts(),
        starts,
        "every one forked from the warm conda"
    );
    cold.shutdown().await;
    warm.shutdown().await;
}
