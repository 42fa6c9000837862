//! How a host starts the built server, over raw JSON-RPC on stdio: early
//! notifications before the session is open, in both protocol eras.

use std::time::Duration;

use conda_mcp_tests::rawrpc::{RawClient, stateless_meta};
use conda_mcp_tests::standin::StandinPrefix;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

/// Whether a `tools/list` response lists at least one tool.
fn lists_tools(list: &Value) -> bool {
    list["result"]["tools"]
        .as_array()
        .is_some_and(|t| !t.is_empty())
}

/// Notifications some clients send before the session is open.
fn early_notifications() -> Vec<Value> {
    vec![
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
               "params": {"requestId": "never-sent", "reason": "early"}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
}

#[tokio::test]
async fn a_notification_before_initialize_does_not_end_the_session() {
    let standin = StandinPrefix::standard();
    let mut c = RawClient::spawn(&standin.conda_exe, &[], &[]);
    for n in early_notifications() {
        c.send(n).await;
    }
    // A ping before initialize is answered and opens nothing: the
    // notifications after it are still early ones.
    let (pong, _) = c.request("early-ping", "ping", json!({}), WAIT).await;
    assert!(pong.get("result").is_some(), "{pong}");
    for n in early_notifications() {
        c.send(n).await;
    }
    c.send(json!({
        "jsonrpc": "2.0", "id": "init", "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "conda-mcp-raw-test", "version": "0"}
        }
    }))
    .await;
    let (init, _) = c.response("init", WAIT).await;
    assert!(
        init["result"]["serverInfo"].is_object(),
        "{init}\n{}",
        c.stderr_text()
    );
    // Between initialize and initialized, only initialized goes on.
    c.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                  "params": {"requestId": "early-ping"}}),
    )
    .await;
    c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    c.send(json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}))
        .await;
    let (list, _) = c.response("list", WAIT).await;
    assert!(lists_tools(&list), "{list}");
    c.close().await;
}

#[tokio::test]
async fn a_notification_before_server_discover_does_not_end_the_session() {
    let standin = StandinPrefix::standard();
    let mut c = RawClient::spawn(&standin.conda_exe, &[], &[]);
    for n in early_notifications() {
        c.send(n).await;
    }
    c.send(json!({
        "jsonrpc": "2.0", "id": "discover", "method": "server/discover",
        "params": {"_meta": stateless_meta(json!({}))}
    }))
    .await;
    let (discover, _) = c.response("discover", WAIT).await;
    assert!(
        discover.get("result").is_some(),
        "{discover}\n{}",
        c.stderr_text()
    );
    c.send(json!({
        "jsonrpc": "2.0", "id": "list", "method": "tools/list",
        "params": {"_meta": stateless_meta(json!({}))}
    }))
    .await;
    let (list, _) = c.response("list", WAIT).await;
    assert!(lists_tools(&list), "{list}");
    c.close().await;
}

/// A host's bare environment: no variables at all (no `HOME`, no `PATH`)
/// and the working directory `/`.
fn bare(exe: &std::path::Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(exe);
    cmd.env_clear()
        .current_dir("/")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    cmd
}

#[tokio::test]
async fn a_bare_host_environment_serves_with_conda_exe_and_says_what_it_looked_for() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let standin = StandinPrefix::standard();
    let server = conda_mcp_tests::bins::server();
    let mut child = bare(&server)
        .arg("--conda-exe")
        .arg(&standin.conda_exe)
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "bare", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
               "params": {"name": "conda_info", "arguments": {"json": true}}}),
    ];
    for r in &requests {
        stdin
            .write_all(format!("{r}\n").as_bytes())
            .await
            .expect("write");
    }
    let mut answer = Value::Null;
    while answer.get("id") != Some(&json!(2)) {
        let line = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .expect("in time")
            .expect("read")
            .expect("a line");
        answer = serde_json::from_str(&line).expect("JSON");
    }
    let s = &answer["result"]["structuredContent"];
    assert_eq!(s["exit_code"], json!(0), "{answer}");
    // conda ran in its fixed directory, with no HOME from the host.
    assert!(s["parsed_json"]["cwd"].is_string(), "{s}");
    drop(stdin);
    let _ = child.wait().await;

    // Without --conda-exe: exit status 1 and every place it looked, in the
    // serving server and in check alike.
    for check in [false, true] {
        let mut cmd = bare(&server);
        if check {
            cmd.arg("check");
        }
        let out = cmd
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .expect("run");
        assert_eq!(out.status.code(), Some(1), "check={check}");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        for needle in ["--conda-exe", "CONDA_EXE", "PATH"] {
            assert!(text.contains(needle), "check={check}: {needle} in {text}");
        }
    }
}

#[tokio::test]
async fn initialize_does_not_wait_for_a_slow_conda_and_tools_list_does() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let gate = dir.path().join("go");
    standin.hold_python_until(&gate);
    for era in ["initialize", "server/discover"] {
        let _ = std::fs::remove_file(&gate);
        let mut c = RawClient::spawn(&standin.conda_exe, &["--no-warm-conda"], &[]);
        let open = if era == "initialize" {
            json!({"jsonrpc": "2.0", "id": "open", "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "slow", "version": "0"}}})
        } else {
            json!({"jsonrpc": "2.0", "id": "open", "method": "server/discover",
                   "params": {"_meta": stateless_meta(json!({}))}})
        };
        c.send(open).await;
        // Answered while conda cannot have finished starting.
        let (answer, _) = c.response("open", WAIT).await;
        assert!(answer.get("result").is_some(), "{era}: {answer}");
        assert!(!gate.exists());
        if era == "initialize" {
            c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
                .await;
        }
        let mut list = json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"});
        if era != "initialize" {
            list["params"] = json!({"_meta": stateless_meta(json!({}))});
        }
        c.send(list).await;
        // tools/list waits for discovery...
        assert_eq!(c.next(Duration::from_millis(500)).await, None, "{era}");
        // ...and is answered once conda has started.
        std::fs::write(&gate, "").expect("open the gate");
        let (list, _) = c.response("list", WAIT).await;
        assert!(lists_tools(&list), "{era}: {list}");
        c.close().await;
    }
}

/// The command lines of the running processes whose command line mentions
/// `needle` (from `/proc`; unlike `rawrpc::pids_with_cmdline`, conda-mcp's
/// own processes too: the warm conda's command line carries its source,
/// which names the worker).
#[cfg(target_os = "linux")]
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if text.contains(needle) {
                found.push(text);
            }
        }
    }
    found
}

/// A cold start (no startup cache) starts the call lane's warm conda while
/// the discovery helper runs, not after it: with every Python start of the
/// stand-in held at its `site` import, the warm conda's interpreter is
/// there beside the held helper before discovery can finish; once they go
/// on, the server serves.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_cold_start_starts_the_warm_conda_beside_the_discovery_helper() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let gate = dir.path().join("go");
    standin.hold_python_until(&gate);
    let mut c = RawClient::spawn(&standin.conda_exe, &[], &[]);
    c.initialize(json!({})).await;
    let python = standin.prefix.join("bin").join("python");
    let python = python.display().to_string();
    let end = tokio::time::Instant::now() + WAIT;
    loop {
        let held = processes_mentioning(&python);
        let zygote = held.iter().any(|c| c.contains("conda-mcp warm conda"));
        let helper = held.iter().any(|c| c.ends_with(&format!("{python} - ")));
        if zygote && helper {
            break;
        }
        assert!(
            tokio::time::Instant::now() < end,
            "no warm conda beside the held discovery helper: {held:?}\n{}",
            c.stderr_text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(!gate.exists(), "discovery cannot have finished");
    std::fs::write(&gate, "").expect("open the gate");
    c.send(json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}))
        .await;
    let (list, _) = c.response("list", WAIT).await;
    assert!(lists_tools(&list), "{list}");
    c.close().await;
}

#[tokio::test]
async fn a_conda_that_never_starts_gives_tools_list_a_clear_error() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    standin.hold_python_until(&dir.path().join("never"));
    let mut c = RawClient::spawn(&standin.conda_exe, &["--timeout", "4"], &[]);
    c.send(
        json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "slow", "version": "0"}}}),
    )
    .await;
    let (init, _) = c.response("init", WAIT).await;
    assert!(init.get("result").is_some(), "{init}");
    c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    c.send(json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}))
        .await;
    let (list, _) = c.response("list", WAIT).await;
    let message = list["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("could not start") || message.contains("did not finish within 4 s"),
        "{list}"
    );
    c.close().await;
}

/// `--conda-exe` naming a program that is not conda (Python itself, a
/// program that prints nothing, a Python script that is not conda's):
/// exit status 1, and the message says what ran, what discovery expects
/// and what to check, in the server's log and in `check`'s verdict.
#[tokio::test]
async fn a_conda_exe_that_is_not_conda_says_what_ran_and_what_was_expected() {
    let python = which(&conda_mcp_tests::standin::host_python()).expect("python3 on PATH");
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("not-conda");
    std::fs::write(&script, format!("#!{}\nprint('hello')\n", python.display())).expect("script");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let server = conda_mcp_tests::bins::server();
    let cases = [
        (python.clone(), "info --json` exited with status 2"),
        ("/bin/true".into(), "info --json` printed no JSON document"),
        (script.clone(), "cannot import conda"),
    ];
    for (exe, how) in &cases {
        for check in [false, true] {
            let mut cmd = tokio::process::Command::new(&server);
            if check {
                cmd.arg("check");
            }
            let out = cmd
                .arg("--conda-exe")
                .arg(exe)
                .arg("--no-cache")
                .stdin(std::process::Stdio::null())
                .output()
                .await
                .expect("run");
            let text = if check {
                String::from_utf8_lossy(&out.stdout).into_owned()
            } else {
                String::from_utf8_lossy(&out.stderr).into_owned()
            };
            assert_eq!(out.status.code(), Some(1), "{exe:?} check={check}: {text}");
            let first = format!(
                "--conda-exe {} does not behave like conda: `",
                exe.display()
            );
            for needle in [
                first.as_str(),
                how,
                "\"sys.executable\"",
                "imports conda and prints a dump of conda's argument parser",
                "Check that --conda-exe names conda itself",
                &format!("`{} info --json` prints conda's information", exe.display()),
            ] {
                assert!(
                    text.contains(needle),
                    "{exe:?} check={check}: {needle:?} in {text}"
                );
            }
        }
    }
}

/// The first executable `name` on `PATH` (or `name` itself when it has a
/// slash).
fn which(name: &std::path::Path) -> Option<std::path::PathBuf> {
    if name.components().count() > 1 {
        return Some(name.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}
