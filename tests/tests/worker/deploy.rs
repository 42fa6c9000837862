//! Hardened deployment through the real `conda-mcp` server and a real MCP
//! client: `--worker-socket` against `conda-mcp-worker serve`, and
//! the environment and working directory conda gets.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use conda_mcp_tests::mcp::{Era, Server};
use conda_mcp_tests::standin::StandinPrefix;
use serde_json::json;

/// Conda activation variables a shell leaves behind; none may reach conda.
const ACTIVATION: [(&str, &str); 8] = [
    ("CONDA_PREFIX", "/opt/env"),
    ("CONDA_PREFIX_1", "/opt/base"),
    ("CONDA_PREFIX_2", "/opt/base2"),
    ("CONDA_DEFAULT_ENV", "env"),
    ("CONDA_SHLVL", "2"),
    ("CONDA_PROMPT_MODIFIER", "(env) "),
    ("_CE_M", "x"),
    ("_CE_CONDA", "y"),
];

fn env_names(s: &serde_json::Value) -> Vec<String> {
    s["parsed_json"]["env"]
        .as_array()
        .unwrap_or_else(|| panic!("the stand-in reports env names: {s}"))
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_server_with_worker_socket_makes_a_full_tools_call_round_trip() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("worker.sock");
    let log = dir.path().join("worker.log");
    let mut env = ACTIVATION.to_vec();
    env.push(("CONDA_MCP_TEST_KEEP", "kept"));
    let mut worker = Command::new(conda_mcp_tests::bins::worker())
        .arg("serve")
        .arg("--socket")
        .arg(&socket)
        .arg("--conda-exe")
        .arg(&standin.conda_exe)
        .arg("--python")
        .arg(&standin.python)
        .args(["--allow-uid", &nix::unistd::Uid::effective().to_string()])
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("log"))
        .spawn()
        .expect("serve");
    let t0 = Instant::now();
    while !socket.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "the worker never listened"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let socket_arg = socket.to_str().expect("utf-8 path");
    let server = Server::start(
        &standin.conda_exe,
        &["--worker-socket", socket_arg],
        Era::Initialize,
    )
    .await;
    let r = server.call_ok("conda_info", json!({"json": true})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let s = r.structured_content.clone().expect("structuredContent");
    assert_eq!(s["exit_code"], json!(0), "{s}");
    assert_eq!(s["parsed_json"]["command"], json!(["info"]), "{s}");
    // conda ran in the listening worker's environment, minus activation state.
    let names = env_names(&s);
    for (n, _) in ACTIVATION {
        assert!(!names.iter().any(|x| x == n), "{n} reached conda");
    }
    assert!(
        names.iter().any(|x| x == "CONDA_MCP_TEST_KEEP"),
        "{names:?}"
    );
    server.close().await;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(text.contains("connection accepted"), "{text}");
    assert!(text.contains("job finished"), "{text}");
    let _ = worker.kill();
    let _ = worker.wait();
}

#[tokio::test]
async fn a_missing_worker_socket_is_a_clear_startup_error() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let socket = dir.path().join("absent.sock");
    let mut cmd = conda_mcp_tests::mcp::server_command(
        &standin.conda_exe,
        &[
            "--worker-socket",
            socket.to_str().expect("utf-8"),
            "--no-cache",
        ],
        dir.path(),
    );
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output(),
    )
    .await
    .expect("exits in time")
    .expect("run");
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "nothing but MCP on stdout");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("absent.sock"), "{err}");
    assert!(err.contains("conda-mcp worker"), "{err}");
}

/// A worker binary that cannot start is a startup error also when the
/// discovery cache is warm (no process is started at startup then).
#[tokio::test]
async fn a_missing_worker_binary_is_a_startup_error_on_a_cached_startup() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    // Fill the cache.
    let out = conda_mcp_tests::mcp::server_command(&standin.conda_exe, &["check"], dir.path())
        .stdin(Stdio::null())
        .output()
        .await
        .expect("check");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let missing = dir.path().join("no-such-worker");
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::process::Command::new(conda_mcp_tests::bins::server())
            .arg("--conda-exe")
            .arg(&standin.conda_exe)
            .arg("--worker-exe")
            .arg(&missing)
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .env_remove("CONDA_EXE")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output(),
    )
    .await
    .expect("exits in time")
    .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("startup cache hit"),
        "the cache was used: {err}"
    );
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(out.stdout.is_empty(), "nothing but MCP on stdout");
    assert!(err.contains("no-such-worker"), "{err}");
    assert!(err.contains("conda-mcp worker"), "{err}");
}

#[tokio::test]
async fn conda_gets_an_allowlisted_environment_in_a_fixed_directory() {
    let standin = StandinPrefix::standard();
    let mut env = ACTIVATION.to_vec();
    env.extend([
        ("CONDA_MCP_TEST_KEEP", "kept"),
        ("CONDA_PKGS_DIRS", "/tmp/pkgs"),
        ("GITHUB_TOKEN", "ghp_SECRETVALUE"),
        ("X_API_KEY", "SECRETVALUE"),
        ("MY_SETTING", "1"),
        ("TMPDIR", "/tmp"),
        ("LANG", "C.UTF-8"),
        ("HTTPS_PROXY", "http://proxy.invalid:3128"),
    ]);
    let server = Server::start_with_env(
        &standin.conda_exe,
        &["--pass-env", "MY_*"],
        Era::Initialize,
        &env,
    )
    .await;
    let r = server.call_ok("conda_info", json!({"json": true})).await;
    let s = r.structured_content.clone().expect("structuredContent");
    let names = env_names(&s);
    for (n, _) in ACTIVATION {
        assert!(!names.iter().any(|x| x == n), "{n} reached conda");
    }
    for absent in ["GITHUB_TOKEN", "X_API_KEY"] {
        assert!(!names.iter().any(|x| x == absent), "{absent} reached conda");
    }
    for present in [
        "PATH",
        "HOME",
        "TMPDIR",
        "LANG",
        "HTTPS_PROXY",
        "CONDA_PKGS_DIRS",
        "CONDA_MCP_TEST_KEEP",
        "MY_SETTING",
    ] {
        assert!(names.iter().any(|x| x == present), "{present}: {names:?}");
    }
    // The working directory is fixed, whatever the server's.
    assert_eq!(s["parsed_json"]["cwd"], json!("/"), "{s}");
    // The capabilities resource lists the names passed, never values.
    let (caps, _) = server
        .read_text("conda://capabilities")
        .await
        .expect("capabilities");
    assert!(!caps.contains("SECRETVALUE"), "no values");
    let caps: serde_json::Value = serde_json::from_str(&caps).expect("JSON");
    let listed: Vec<&str> = caps["environment"]["passed"]
        .as_array()
        .expect("names")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert!(
        listed.contains(&"MY_SETTING") && listed.contains(&"PATH"),
        "{listed:?}"
    );
    assert!(!listed.contains(&"GITHUB_TOKEN"), "{listed:?}");
    assert_eq!(caps["environment"]["working_directory"], json!("/"));
    assert_eq!(caps["environment"]["pass_env"], json!(["MY_*"]));
    server.close().await;
}

#[tokio::test]
async fn a_condarc_conda_will_not_load_is_a_startup_warning() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let rc = dir.path().join("server.rc");
    std::fs::write(&rc, "channels: []\n").expect("rc");
    let rc_text = rc.to_str().expect("utf-8");
    let server = Server::start_with_env(
        &standin.conda_exe,
        &[],
        Era::Initialize,
        &[("CONDARC", rc_text)],
    )
    .await;
    let log = server.stderr_text();
    assert!(
        log.contains("server.rc") && log.contains("will not load"),
        "{log}"
    );
    let instructions = server
        .client
        .peer_info()
        .and_then(|i| i.instructions.clone())
        .unwrap_or_default();
    assert!(
        instructions.contains("Warning: CONDARC names") && instructions.contains("server.rc"),
        "{instructions}"
    );
    server.close().await;
    // A name conda loads gives no warning.
    let good = dir.path().join("server.condarc.yml");
    std::fs::write(&good, "channels: []\n").expect("rc");
    let server = Server::start_with_env(
        &standin.conda_exe,
        &[],
        Era::Initialize,
        &[("CONDARC", good.to_str().expect("utf-8"))],
    )
    .await;
    assert!(
        !server.stderr_text().contains("CONDARC"),
        "{}",
        server.stderr_text()
    );
    server.close().await;
}

#[tokio::test]
async fn a_worker_user_without_a_home_is_refused_at_startup() {
    let Some((user, home)) = conda_mcp_tests::users::without_home(
        "deploy::a_worker_user_without_a_home_is_refused_at_startup",
        "cmcp-nohome-deploy",
    ) else {
        return;
    };
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = conda_mcp_tests::mcp::server_command(
        &standin.conda_exe,
        &["--worker-user", &user, "--no-cache"],
        dir.path(),
    );
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output(),
    )
    .await
    .expect("exits in time")
    .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty(), "nothing but MCP on stdout");
    let err = String::from_utf8_lossy(&out.stderr);
    for part in [
        user.as_str(),
        &home.display().to_string(),
        "--worker-home DIR",
    ] {
        assert!(err.contains(part), "{part}: {err}");
    }
}
