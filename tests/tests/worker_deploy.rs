//! Hardened deployment through the real `conda-mcp` server and a real MCP
//! client: `--worker-socket` against `conda-mcp-worker serve`, and
//! the environment conda sees.

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

#[tokio::test]
async fn activation_variables_of_the_server_do_not_reach_conda() {
    let standin = StandinPrefix::standard();
    let mut env = ACTIVATION.to_vec();
    env.push(("CONDA_MCP_TEST_KEEP", "kept"));
    let server = Server::start_with_env(&standin.conda_exe, &[], Era::Initialize, &env).await;
    let r = server.call_ok("conda_info", json!({"json": true})).await;
    let s = r.structured_content.clone().expect("structuredContent");
    let names = env_names(&s);
    for (n, _) in ACTIVATION {
        assert!(!names.iter().any(|x| x == n), "{n} reached conda");
    }
    assert!(
        names.iter().any(|x| x == "CONDA_MCP_TEST_KEEP"),
        "{names:?}"
    );
    server.close().await;
}
