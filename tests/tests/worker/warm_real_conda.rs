//! The warm conda against a real conda (the real-conda tier, named by
//! `CONDA_MCP_TEST_CONDA`; skipped with a message otherwise): every argv of
//! the corpus runs through a worker with `--no-warm-conda` and through one
//! whose calls are forked from its warm conda, and exit status, stdout and
//! stderr must agree.
//!
//! Normalised, because two fresh runs differ there too: the per-path
//! temporary directory (each path creates its environments and
//! configuration files under its own directory, replaced by `{T}`), and the
//! order of keys in JSON objects (conda builds some from sets, e.g.
//! `env_vars` in `info --json`, whose order follows the per-process string
//! hash seed): a stdout that is one JSON document is compared as parsed JSON.
//! Nothing else is normalised.
//!
//! A local file channel (tests/fixtures/channel/make_channel.py) keeps it
//! offline; environments live only under temporary prefixes.

use std::path::{Path, PathBuf};
use std::time::Duration;

use conda_mcp_server::worker_client::Executor;
use conda_mcp_tests::warm::{Call, executor, run, was_warm};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(600);

fn real_conda() -> Option<PathBuf> {
    conda_mcp_tests::tiers::real_conda(module_path!())
}

fn build_channel(dir: &Path) -> String {
    let script = conda_mcp_tests::paths::fixtures()
        .join("channel")
        .join("make_channel.py");
    let status = std::process::Command::new("python3")
        .arg(script)
        .arg(dir)
        .status()
        .expect("python3 builds the channel");
    assert!(status.success(), "building the local channel failed");
    format!("file://{}", dir.display())
}

/// The corpus; `{T}` is the path's own temporary directory, `{C}` the
/// channel, `{A}`/`{B}` two working directories.
fn corpus() -> Vec<(Vec<&'static str>, Option<&'static str>)> {
    let c = |a: &[&'static str]| (a.to_vec(), None);
    let mut v = vec![
        // Read-only, with and without --json.
        c(&["info", "--json"]),
        c(&["info"]),
        c(&["info", "--envs"]),
        c(&["--version"]),
        c(&["--help"]),
        c(&["env", "list", "--json"]),
        c(&["env", "list"]),
        c(&["list", "-n", "base", "--json"]),
        c(&["list", "-n", "base"]),
        c(&["config", "--show", "--json"]),
        c(&["config", "--show", "channels"]),
        c(&["config", "--show-sources"]),
        c(&["config", "--describe", "channel_priority"]),
        c(&["config", "--validate"]),
        c(&[
            "search",
            "--json",
            "conda-mcp-hello",
            "-c",
            "{C}",
            "--override-channels",
        ]),
        c(&[
            "search",
            "conda-mcp-hello",
            "-c",
            "{C}",
            "--override-channels",
        ]),
        c(&[
            "search",
            "conda-mcp-hello",
            "--info",
            "-c",
            "{C}",
            "--override-channels",
        ]),
        // Failures: unknown package, bad spec, missing environment, bad argv.
        c(&[
            "search",
            "--json",
            "no-such-package",
            "-c",
            "{C}",
            "--override-channels",
        ]),
        c(&[
            "search",
            "no-such-package",
            "-c",
            "{C}",
            "--override-channels",
        ]),
        c(&[
            "search",
            "--json",
            "conda-mcp-hello>=2",
            "-c",
            "{C}",
            "--override-channels",
        ]),
        c(&[
            "search",
            "--json",
            "bad spec ==",
            "-c",
            "{C}",
            "--override-channels",
        ]),
        c(&["list", "-n", "no-such-env-warm"]),
        c(&["list", "--json", "-n", "no-such-env-warm"]),
        c(&["env", "export", "-n", "no-such-env-warm"]),
        c(&["no-such-command"]),
        c(&["install", "--no-such-flag"]),
        c(&["list", "-p", "{T}/missing"]),
        // Mutations against the local channel, under {T}.
        c(&[
            "create",
            "-p",
            "{T}/e1",
            "-c",
            "{C}",
            "--override-channels",
            "conda-mcp-hello",
            "--json",
            "-y",
        ]),
        c(&["list", "-p", "{T}/e1", "--json"]),
        c(&["list", "-p", "{T}/e1"]),
        c(&["env", "export", "-p", "{T}/e1"]),
        c(&["env", "export", "-p", "{T}/e1", "--json"]),
        c(&[
            "install",
            "-p",
            "{T}/e1",
            "-c",
            "{C}",
            "--override-channels",
            "conda-mcp-hello",
            "--json",
            "-y",
        ]),
        c(&["remove", "-p", "{T}/e1", "conda-mcp-hello", "--json", "-y"]),
        c(&["list", "-p", "{T}/e1", "--json"]),
        c(&[
            "install",
            "-p",
            "{T}/e1",
            "-c",
            "{C}",
            "--override-channels",
            "conda-mcp-hello",
            "-y",
        ]),
        c(&[
            "create",
            "-p",
            "{T}/e2",
            "--dry-run",
            "-c",
            "{C}",
            "--override-channels",
            "conda-mcp-hello",
            "--json",
        ]),
        c(&["remove", "-p", "{T}/e1", "--all", "-y", "--json"]),
        // Configuration written, then read back.
        c(&[
            "config",
            "--file",
            "{T}/rc",
            "--set",
            "channel_priority",
            "strict",
        ]),
        c(&["config", "--file", "{T}/rc", "--add", "channels", "{C}"]),
        c(&["config", "--file", "{T}/rc", "--get", "--json"]),
        c(&["config", "--file", "{T}/rc", "--remove", "channels", "{C}"]),
        c(&["config", "--file", "{T}/rc", "--get"]),
    ];
    // Working directories that differ per call.
    v.push((vec!["info", "--json"], Some("{A}")));
    v.push((vec!["env", "list"], Some("{B}")));
    v
}

struct Side {
    ex: Executor,
    root: tempfile::TempDir,
}

fn expand(s: &str, root: &Path, channel: &str, a: &Path, b: &Path) -> String {
    s.replace("{T}", &root.display().to_string())
        .replace("{C}", channel)
        .replace("{A}", &a.display().to_string())
        .replace("{B}", &b.display().to_string())
}

fn normalise_text(s: &str, root: &Path) -> String {
    let canon = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    s.replace(&canon.display().to_string(), "{T}")
        .replace(&root.display().to_string(), "{T}")
}

/// stdout as parsed JSON (key order ignored) when it is one document, else
/// the text.
fn normalise_stdout(s: &str, root: &Path) -> Result<Value, String> {
    let text = normalise_text(s, root);
    serde_json::from_str::<Value>(&text).map_err(|_| text)
}

async fn until_warm(ex: &Executor) {
    let end = tokio::time::Instant::now() + Duration::from_secs(300);
    loop {
        let ran = run(ex, &Call::new(&["info", "--json"]), LIMIT).await;
        if was_warm(ex, &ran) == Some(true) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < end,
            "the warm conda never became ready"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_conda_fresh_and_warm_agree() {
    let Some(conda) = real_conda() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let channel = build_channel(&dir.path().join("channel"));
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    std::fs::create_dir_all(&a).expect("a");
    std::fs::create_dir_all(&b).expect("b");
    let fresh = Side {
        ex: executor(&conda, false),
        root: tempfile::tempdir_in(dir.path()).expect("root"),
    };
    let warm = Side {
        ex: executor(&conda, true),
        root: tempfile::tempdir_in(dir.path()).expect("root"),
    };
    until_warm(&warm.ex).await;
    // Prime conda's shared package cache, so that neither side's first
    // `create` is the one that downloads (two fresh runs would differ in
    // `FETCH` otherwise).
    let prime = dir.path().join("prime");
    let prime_argv = [
        "create",
        "-p",
        &prime.display().to_string(),
        "-c",
        &channel,
        "--override-channels",
        "conda-mcp-hello",
        "-y",
        "--json",
    ]
    .map(str::to_string)
    .to_vec();
    run(
        &fresh.ex,
        &Call {
            argv: prime_argv,
            cwd: None,
            stdin: None,
        },
        LIMIT,
    )
    .await;
    let corpus = corpus();
    assert!(corpus.len() >= 40, "{} calls", corpus.len());
    let mut confirmed_warm = 0;
    for (i, (argv, cwd)) in corpus.iter().enumerate() {
        if i == corpus.len() - 3 {
            // A configuration file edited between two calls: the next call
            // must see the edit.
            for side in [&fresh, &warm] {
                std::fs::write(
                    side.root.path().join("rc"),
                    "channels:\n  - edited-between-calls\n",
                )
                .expect("rc");
            }
            for side in [&fresh, &warm] {
                let call = Call::new(&["config", "--file", "{T}/rc", "--get", "channels"]);
                let argv: Vec<String> = call
                    .argv
                    .iter()
                    .map(|s| expand(s, side.root.path(), &channel, &a, &b))
                    .collect();
                let r = run(
                    &side.ex,
                    &Call {
                        argv,
                        cwd: None,
                        stdin: None,
                    },
                    LIMIT,
                )
                .await;
                assert!(
                    r.result.stdout.contains("edited-between-calls"),
                    "{}",
                    r.result.stdout
                );
            }
        }
        let mut outs = Vec::new();
        for side in [&fresh, &warm] {
            let argv: Vec<String> = argv
                .iter()
                .map(|s| expand(s, side.root.path(), &channel, &a, &b))
                .collect();
            let cwd = cwd.map(|c| PathBuf::from(expand(c, side.root.path(), &channel, &a, &b)));
            let ran = run(
                &side.ex,
                &Call {
                    argv,
                    cwd,
                    stdin: None,
                },
                LIMIT,
            )
            .await;
            let w = was_warm(&side.ex, &ran);
            outs.push((ran.result, w, side.root.path().to_path_buf()));
        }
        let (f, w) = (&outs[0], &outs[1]);
        assert_ne!(f.1, Some(true), "--no-warm-conda ran {argv:?} warm");
        assert_ne!(w.1, Some(false), "{argv:?} ran fresh on the warm worker");
        confirmed_warm += usize::from(w.1 == Some(true));
        assert_eq!(
            f.0.exit_code, w.0.exit_code,
            "exit status of {argv:?}: {}",
            w.0.stderr
        );
        assert_eq!(
            normalise_stdout(&f.0.stdout, &f.2),
            normalise_stdout(&w.0.stdout, &w.2),
            "stdout of {argv:?}"
        );
        assert_eq!(
            normalise_text(&f.0.stderr, &f.2),
            normalise_text(&w.0.stderr, &w.2),
            "stderr of {argv:?}"
        );
    }
    eprintln!("{confirmed_warm} of {} calls confirmed warm", corpus.len());
    assert!(
        confirmed_warm >= corpus.len() / 2,
        "{confirmed_warm} calls confirmed warm"
    );
    fresh.ex.shutdown().await;
    warm.ex.shutdown().await;
}
