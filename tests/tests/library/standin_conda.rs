//! The stand-in conda itself: a real venv prefix whose
//! `bin/conda` parses argv with real argparse, the batch oracle agrees with
//! it, and the process-test switches and plugin dist-infos work.

use std::io::Write;
use std::process::{Command, Stdio};

use conda_mcp_tests::standin::{ControlRule, PluginSpec, StandinPrefix, batch_parse, standin_dump};
use serde_json::Value;

fn json_line(out: &[u8]) -> Value {
    let text = String::from_utf8_lossy(out);
    let last = text.lines().last().expect("some output");
    serde_json::from_str(last).expect("one JSON object")
}

#[test]
fn executable_parses_and_reports() {
    let p = StandinPrefix::standard();
    let first = std::fs::read_to_string(&p.conda_exe).expect("read bin/conda");
    assert_eq!(
        first.lines().next(),
        Some(format!("#!{}", p.python.display()).as_str())
    );
    assert!(p.prefix.join("conda-meta").is_dir());
    let before = p.python_starts();
    let out = p
        .run(&["uninstall", "-n", "env1", "numpy", "--dry-run"])
        .expect("run the stand-in");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json_line(&out.stdout);
    assert_eq!(v["command"], serde_json::json!(["remove"]));
    assert_eq!(
        v["namespace"]["package_names"],
        serde_json::json!(["numpy"])
    );
    assert_eq!(v["namespace"]["name"], "env1");
    assert_eq!(v["namespace"]["dry_run"], true);
    assert_eq!(v["uid"], nix::unistd::getuid().as_raw());
    let env = v["env"].as_array().expect("env names");
    assert!(env.iter().any(|n| n == "PATH"));
    assert!(env.iter().all(|n| !n.as_str().unwrap_or("=").contains('=')));
    assert_eq!(p.python_starts(), before + 1, "one Python start counted");

    let info = p.run(&["info", "--json"]).expect("info");
    let v = json_line(&info.stdout);
    assert_eq!(v["sys.executable"], p.python.display().to_string());
    assert_eq!(v["conda_version"], "26.9.0");

    let bad = p.run(&["install", "--jobs", "3"]).expect("bad run");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid choice"));

    let greedy = p.run(&["lint", "--fix", "-x", "file.yml"]).expect("greedy");
    let v = json_line(&greedy.stdout);
    assert_eq!(
        v["namespace"]["_args"],
        serde_json::json!(["--fix", "-x", "file.yml"])
    );

    let m = Command::new(&p.python)
        .args(["-m", "conda", "env", "config", "vars", "list", "-p", "/x"])
        .output()
        .expect("python -m conda");
    assert!(m.status.success());
    assert_eq!(
        json_line(&m.stdout)["command"],
        serde_json::json!(["env", "config", "vars", "list"])
    );
}

#[test]
fn batch_oracle_agrees_with_the_executable() {
    let p = StandinPrefix::standard();
    let argvs: Vec<Vec<String>> = [
        vec![
            "install",
            "-c",
            "a",
            "-c",
            "b",
            "--update-all",
            "--jobs",
            "4",
            "x",
        ],
        vec!["config", "--set", "k", "v"],
        vec!["run", "-n", "e", "python", "-c", "print(1)"],
        vec!["tool", "pytest", "-q"],
        vec!["search"],
        vec!["update", "--extra-specs", "--copy"],
    ]
    .into_iter()
    .map(|a| a.into_iter().map(String::from).collect())
    .collect();
    let batch = batch_parse(&standin_dump(), &argvs).expect("batch");
    for (argv, b) in argvs.iter().zip(&batch) {
        assert_eq!(b["ok"], true, "{argv:?}: {b}");
        let refs: Vec<&str> = argv.iter().map(String::as_str).collect();
        let out = p.run(&refs).expect("run");
        let v = json_line(&out.stdout);
        assert_eq!(v["namespace"], b["namespace"], "{argv:?}");
        assert_eq!(v["command"], b["command"], "{argv:?}");
    }
    assert_eq!(batch[4]["namespace"]["match_spec"], "*");
    assert_eq!(
        batch[5]["namespace"]["extra_specs"],
        serde_json::json!(["default"])
    );
    assert_eq!(batch[5]["namespace"]["copy"], "all");
    let errors = batch_parse(
        &standin_dump(),
        &[vec!["config".to_owned()], vec!["nope".to_owned()]],
    )
    .expect("batch");
    assert!(
        errors
            .iter()
            .all(|e| e["ok"] == false && e["error"].is_string())
    );
}

#[test]
fn control_switches_and_plugins() {
    let p = StandinPrefix::standard();
    let spec = PluginSpec {
        distribution: "conda-extra".into(),
        version: "1.0".into(),
        name: "conda-extra".into(),
        value: "conda_extra.plugin".into(),
    };
    p.set_control(&[
        ControlRule {
            read_stdin: Some(true),
            exit_code: Some(3),
            stderr_bytes: Some(10),
            add_plugin: Some(spec.clone()),
            ..ControlRule::for_commands(&["env create"])
        },
        ControlRule {
            progress_records: Some(2),
            progress_interval_seconds: Some(0.0),
            ..ControlRule::for_commands(&["install"])
        },
    ])
    .expect("control");
    let mut child = Command::new(&p.conda_exe)
        .args(["env", "create", "-n", "x"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"name: x\n")
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(out.stderr, b"xxxxxxxxxx");
    let v = json_line(&out.stdout);
    assert_eq!(v["stdin_text"], "name: x\n");
    assert!(
        p.dist_info("conda-extra", "1.0")
            .join("entry_points.txt")
            .is_file()
    );

    let out = p.run(&["install", "x"]).expect("install");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("\"fetch\"").count(), 2, "{text}");
    assert!(text.contains("\n\0"));

    // The plugin set as importlib.metadata sees it.
    let eps = Command::new(&p.python)
        .args(["-c", "from importlib.metadata import entry_points; print(sorted(e.name for e in entry_points(group='conda')))"])
        .output()
        .expect("entry points");
    assert_eq!(
        String::from_utf8_lossy(&eps.stdout).trim(),
        "['conda-extra', 'conda-lint']"
    );
    p.remove_plugin("conda-extra").expect("remove");
    assert!(!p.dist_info("conda-extra", "1.0").exists());
    p.clear_control().expect("clear");
    assert!(p.run(&["env", "create"]).expect("run").status.success());
}

/// The stand-in creates and removes environments as conda does
/// (`conda/cli/environments.py`): `conda-meta/history` on create, a dry run
/// refused over an existing environment, the old one removed with
/// `--json`, a prompt that reads end-of-input otherwise, `remove --all`.
#[test]
fn create_and_remove_touch_the_file_system_as_conda_does() {
    let p = StandinPrefix::create(&conda_mcp_tests::paths::real_dump()).expect("stand-in");
    let dir = tempfile::tempdir().expect("tmp");
    let env = dir.path().join("env");
    let e = env.to_str().expect("utf-8");
    let run = |argv: &[&str]| {
        let out = p.run(argv).expect("run");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, stdout) = run(&["create", "-p", e, "alpha", "--dry-run", "--json"]);
    assert_eq!(code, Some(0), "{stdout}");
    assert!(!env.exists(), "a dry run creates nothing");
    assert_eq!(run(&["create", "-p", e, "alpha", "--json"]).0, Some(0));
    assert!(env.join("conda-meta/history").is_file());
    assert!(env.join("conda-meta/alpha-0.0-0.json").is_file());
    std::fs::write(env.join("marker"), "x").expect("marker");
    let (code, stdout) = run(&["create", "-p", e, "beta", "--dry-run", "--json"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        json_line(stdout.as_bytes())["exception_name"],
        "CondaValueError"
    );
    assert_eq!(
        run(&["create", "-p", e, "beta"]).0,
        Some(1),
        "the prompt says no"
    );
    assert!(env.join("marker").is_file());
    assert_eq!(run(&["create", "-p", e, "beta", "--json"]).0, Some(0));
    assert!(
        !env.join("marker").exists(),
        "--json replaced the environment"
    );
    assert!(env.join("conda-meta/beta-0.0-0.json").is_file());
    // A name is created in the first envs directory.
    assert_eq!(
        run(&["create", "-n", "lab", "gamma", "--json", "-y"]).0,
        Some(0)
    );
    assert!(p.prefix.join("envs/lab/conda-meta/history").is_file());
    assert_eq!(
        run(&["remove", "-p", e, "--all", "--json", "-y"]).0,
        Some(0)
    );
    assert!(!env.exists());
}
