//! The HTTP mode (`--listen`) on loopback: the Python MCP SDK over
//! Streamable HTTP with a bearer token in both protocol eras, the refusals
//! at the HTTP layer seen raw (401 with its challenge, 403 for an evil Host
//! or Origin, 413, a token in the query), `conda-mcp token new`, the
//! startup refusal of an unauthenticated non-loopback address, the request
//! deadline and the drain on SIGTERM, TLS, workers per OS user (root tier)
//! and tasks private to the principal whose token created them.

use std::process::Command;
use std::time::{Duration, Instant};

use conda_mcp_server::transport::http::tokens::file_line;
use conda_mcp_tests::bins;
use conda_mcp_tests::exec::alive;
use conda_mcp_tests::http::{HttpServer, job_pids, post_mcp, post_stateless, request, tempdir};
use conda_mcp_tests::paths::fixtures;
use conda_mcp_tests::pyclient::mcp_python as python_mcp;
use conda_mcp_tests::standin::{ControlRule, StandinPrefix};
use serde_json::{Value, json};

const TOKEN: &str = "cmcp_0123456789abcdef-test-token-alice";

/// A stand-in prefix where `conda env list` takes `short` seconds and
/// `conda plugins list` `long` seconds.
fn prefix(short: f64, long: f64) -> StandinPrefix {
    let prefix = StandinPrefix::standard();
    prefix
        .set_control(&[
            ControlRule {
                sleep_seconds: Some(short),
                ..ControlRule::for_commands(&["env list"])
            },
            ControlRule {
                sleep_seconds: Some(long),
                ..ControlRule::for_commands(&["plugins list"])
            },
        ])
        .expect("control file");
    prefix
}

/// A server with a token file admitting `alice` with [`TOKEN`].
fn with_token(prefix: &StandinPrefix, args: &[&str]) -> HttpServer {
    let dir = tempdir();
    let file = dir.path().join("tokens");
    std::fs::write(
        &file,
        format!("# test principals\n{}\n", file_line("alice", TOKEN, None)),
    )
    .expect("token file");
    let mut all = vec!["--auth-tokens", file.to_str().expect("utf-8 path")];
    all.extend_from_slice(args);
    HttpServer::start_in(dir, &prefix.conda_exe, &all)
}

fn ping() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
}

#[test]
fn the_python_sdk_lists_calls_gets_progress_and_cancels_in_both_eras() {
    let test = "http::the_python_sdk_lists_calls_gets_progress_and_cancels_in_both_eras";
    let Some(python) = python_mcp(test) else {
        return;
    };
    let prefix = prefix(3.0, 120.0);
    let server = with_token(&prefix, &[]);
    let script = fixtures().join("http").join("mcp_client.py");
    for (n, mode) in ["legacy", "2026-07-28"].into_iter().enumerate() {
        let out = Command::new(&python)
            .arg(&script)
            .args([&server.url(), TOKEN, mode])
            .output()
            .expect("run the Python client");
        assert!(
            out.status.success(),
            "{mode}: {}\nserver log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            server.stderr_text()
        );
        let r: Value = serde_json::from_slice(&out.stdout).expect("the client's JSON");
        let want_version = if mode == "legacy" { "2025-11-25" } else { mode };
        assert_eq!(r["protocol_version"], json!(want_version), "{r}");
        let tools: Vec<&str> = r["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            tools.contains(&"conda_info") && tools.contains(&"conda_env_list"),
            "{tools:?}"
        );
        assert_eq!(r["info_exit_code"], json!(0), "{mode}: {r}");
        assert_eq!(r["list_exit_code"], json!(0), "{mode}: {r}");
        let progress: Vec<f64> = r["progress"]
            .as_array()
            .expect("progress")
            .iter()
            .filter_map(Value::as_f64)
            .collect();
        assert!(!progress.is_empty(), "{mode}: no progress: {r}");
        assert!(progress.windows(2).all(|w| w[1] > w[0]), "{progress:?}");
        // The client gave up on the long call after 3 s: its conda is
        // cancelled and its process gone.
        assert!(
            server.wait_log("cancelled=true", n + 1, Duration::from_secs(15)),
            "{mode}: the abandoned call was not cancelled:\n{}",
            server.stderr_text()
        );
        let pids = job_pids(&server.stderr_text(), "conda plugins list");
        assert_eq!(pids.len(), n + 1, "{pids:?}");
        assert!(!alive(pids[n]), "{mode}: conda pid {} still runs", pids[n]);
    }
    let log = server.stderr_holding(&["principal=alice method=tools/call tool=conda_info"]);
    assert!(
        log.contains("principal=alice method=tools/call tool=conda_info"),
        "{log}"
    );
    assert!(!log.contains(TOKEN), "the token is never logged");
}

#[test]
fn refusals_at_the_http_layer_carry_their_status_and_challenge() {
    // A token from `conda-mcp token new`, admitted by the line it printed.
    let out = Command::new(bins::server())
        .args(["token", "new", "bob", "--os-user", "cmcp-no-such-user"])
        .output()
        .expect("conda-mcp token new");
    assert!(out.status.success(), "{out:?}");
    // No such OS user here: a warning, and the token all the same.
    let warning = String::from_utf8_lossy(&out.stderr);
    assert!(
        warning.contains("there is no OS user cmcp-no-such-user on this machine"),
        "{warning}"
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    let [token, line] = lines.as_slice() else {
        panic!("expected a token and a line: {text}")
    };
    assert!(token.starts_with("cmcp_") && token.len() == 69, "{token}");
    let fields: Vec<&str> = line.split(' ').collect();
    assert_eq!(fields.len(), 3, "{line}");
    assert_eq!((fields[0], fields[2]), ("bob", "cmcp-no-such-user"));
    assert!(!line.contains(token), "the line holds the hash only");

    let prefix = StandinPrefix::standard();
    let dir = tempdir();
    let file = dir.path().join("tokens");
    // The OS user does not exist (mapped users are the root tier's test):
    // the line without its third column.
    std::fs::write(&file, format!("{} {}\n", fields[0], fields[1])).expect("token file");
    let server = HttpServer::start_in(
        dir,
        &prefix.conda_exe,
        &["--auth-tokens", file.to_str().expect("utf-8")],
    );
    let addr = server.addr;
    let bearer = format!("Bearer {token}");
    let auth = ("Authorization", bearer.as_str());

    let ok = post_mcp(addr, &[auth], &ping()).expect("request");
    assert_eq!(ok.status, 200, "{ok:?}");
    assert!(ok.body.contains("conda_info"), "{ok:?}");

    let none = post_mcp(addr, &[], &ping()).expect("request");
    assert_eq!(none.status, 401, "{none:?}");
    assert_eq!(
        none.header("www-authenticate"),
        Some("Bearer realm=\"conda-mcp\"")
    );
    let garbage =
        post_mcp(addr, &[("Authorization", "Bearer not-a-token")], &ping()).expect("request");
    assert_eq!(garbage.status, 401);
    assert_eq!(
        garbage.header("www-authenticate"),
        Some("Bearer realm=\"conda-mcp\", error=\"invalid_token\"")
    );
    let basic =
        post_mcp(addr, &[("Authorization", "Basic Ym9iOmJvYg==")], &ping()).expect("request");
    assert_eq!(basic.status, 401);
    assert!(
        basic
            .header("www-authenticate")
            .is_some_and(|c| c.starts_with("Bearer "))
    );

    let in_query = request(
        addr,
        "POST",
        &format!("/mcp?access_token={token}"),
        &[("Content-Type", "application/json"), auth],
        ping().to_string().as_bytes(),
    )
    .expect("request");
    assert_eq!(in_query.status, 400, "{in_query:?}");

    let evil_host = post_mcp(addr, &[auth, ("Host", "evil.example:80")], &ping()).expect("request");
    assert_eq!(evil_host.status, 403, "{evil_host:?}");
    let evil_origin =
        post_mcp(addr, &[auth, ("Origin", "https://evil.example")], &ping()).expect("request");
    assert_eq!(evil_origin.status, 403, "{evil_origin:?}");
    let local_origin =
        post_mcp(addr, &[auth, ("Origin", "http://localhost:6274")], &ping()).expect("request");
    assert_eq!(local_origin.status, 200, "{local_origin:?}");

    // Past the body limit (7 MiB for the default --stdin-limit-bytes),
    // with or without a Content-Length that says so.
    let big = vec![b'x'; 8 * 1024 * 1024];
    let too_large = request(
        addr,
        "POST",
        "/mcp",
        &[("Content-Type", "application/json"), auth],
        &big,
    )
    .expect("request");
    assert_eq!(too_large.status, 413, "{:?}", too_large.status);

    let log = server.stderr_holding(&["principal=bob", "status=401", "status=403"]);
    assert!(log.contains("principal=bob"), "{log}");
    assert!(
        log.contains("status=401") && log.contains("status=403"),
        "{log}"
    );
    assert!(!log.contains(*token), "the token is never logged");
}

#[test]
fn a_non_loopback_listener_without_tokens_is_a_usage_error() {
    let out = Command::new(bins::server())
        .args(["--listen", "0.0.0.0:0", "--conda-exe", "/nonexistent/conda"])
        .output()
        .expect("conda-mcp");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not a loopback address") && err.contains("--auth-tokens"),
        "{err}"
    );
    // A malformed token file is a usage error too, naming the line only.
    let dir = tempdir();
    let file = dir.path().join("tokens");
    std::fs::write(&file, "alice not-a-hash-secret\n").expect("token file");
    let out = Command::new(bins::server())
        .args(["--listen", "127.0.0.1:0", "--auth-tokens"])
        .arg(&file)
        .output()
        .expect("conda-mcp");
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("line 1") && !err.contains("not-a-hash-secret"),
        "{err}"
    );
}

#[test]
fn a_request_past_its_deadline_is_answered_504_and_its_call_cancelled() {
    let prefix = prefix(0.1, 120.0);
    let server = with_token(&prefix, &["--request-timeout", "2"]);
    let call = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
                      "params": {"name": "conda_plugins_list", "arguments": {}}});
    let started = Instant::now();
    let r = post_mcp(
        server.addr,
        &[("Authorization", &format!("Bearer {TOKEN}"))],
        &call,
    )
    .expect("request");
    assert_eq!(r.status, 504, "{r:?}");
    assert!(started.elapsed() < Duration::from_secs(30));
    assert!(
        server.wait_log("cancelled=true", 1, Duration::from_secs(15)),
        "{}",
        server.stderr_text()
    );
    let pids = job_pids(&server.stderr_text(), "conda plugins list");
    assert!(
        !pids.is_empty(),
        "the log names no job pid of the call: {}",
        server.stderr_text()
    );
    assert!(pids.iter().all(|p| !alive(*p)), "{pids:?}");
    assert!(server.stderr_text().contains("outcome=\"timeout\""));
}

#[test]
fn sigterm_lets_calls_in_flight_finish_within_the_grace_then_cancels_the_rest() {
    let prefix = prefix(1.5, 120.0);
    let mut server = with_token(&prefix, &["--shutdown-grace", "4"]);
    let addr = server.addr;
    let bearer = format!("Bearer {TOKEN}");
    let call = |id: u32, tool: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": tool, "arguments": {}}})
    };
    // The short call runs first (one conda at a time), the long one queues
    // behind it; SIGTERM comes while the short one runs.
    let short = {
        let (b, c) = (bearer.clone(), call(1, "conda_env_list"));
        std::thread::spawn(move || post_mcp(addr, &[("Authorization", &b)], &c))
    };
    assert!(server.wait_log("label=conda env list", 1, Duration::from_secs(20)));
    let long = {
        let (b, c) = (bearer.clone(), call(2, "conda_plugins_list"));
        std::thread::spawn(move || post_mcp(addr, &[("Authorization", &b)], &c))
    };
    std::thread::sleep(Duration::from_millis(300));
    let sent = Instant::now();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let short = short
        .join()
        .expect("thread")
        .expect("the short call's answer");
    assert_eq!(short.status, 200, "{short:?}");
    assert!(short.body.contains("\"exit_code\":0"), "{short:?}");
    let status = server.wait_exit(Duration::from_secs(20));
    assert!(
        status.is_some_and(|s| s.success()),
        "{status:?}\n{}",
        server.stderr_text()
    );
    let waited = sent.elapsed();
    assert!(
        waited >= Duration::from_secs(3),
        "the grace was not given: {waited:?}"
    );
    // The long call did not get an answer; its conda is gone.
    let long = long.join().expect("thread");
    assert!(
        long.as_ref().map_or(true, |r| r.status != 200
            || !r.body.contains("\"exit_code\":0")),
        "{long:?}"
    );
    let log = server.stderr_text();
    assert!(log.contains("cancelling them"), "{log}");
    let pids = job_pids(&log, "conda plugins list");
    assert!(
        !pids.is_empty(),
        "the log names no job pid of the call: {log}"
    );
    assert!(pids.iter().all(|p| !alive(*p)), "{pids:?}");
}

/// The Python other OS users can run (`/usr/bin/python3`) when this test
/// process is root, which workers under other users need; otherwise the
/// root tier's requirement is reported missing for `test` and `None`.
pub(crate) fn root_python(test: &str) -> Option<&'static std::path::Path> {
    use conda_mcp_tests::tiers::{Tier, missing};
    if !nix::unistd::Uid::effective().is_root() {
        missing(
            Tier::Root,
            test,
            "not root: workers under other users need it",
        );
        return None;
    }
    let python = std::path::Path::new("/usr/bin/python3");
    if !python.exists() {
        missing(Tier::Root, test, "no /usr/bin/python3 other users can run");
        return None;
    }
    Some(python)
}

/// Makes OS user `name` with a home when it does not exist; its uid.
pub(crate) fn os_user(name: &str) -> Option<u32> {
    if let Ok(Some(u)) = nix::unistd::User::from_name(name) {
        return Some(u.uid.as_raw());
    }
    let status = Command::new("useradd")
        .args(["--create-home", "--shell", "/usr/sbin/nologin", name])
        .status()
        .ok()?;
    if !status.success() {
        return None;
    }
    nix::unistd::User::from_name(name)
        .ok()
        .flatten()
        .map(|u| u.uid.as_raw())
}

#[test]
fn principals_mapped_to_os_users_run_in_their_own_workers_in_parallel() {
    use conda_mcp_tests::rawrpc::{stateless_meta, tasks_capabilities};
    use conda_mcp_tests::tiers::{Tier, missing};
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    const TEST: &str = "http::principals_mapped_to_os_users_run_in_their_own_workers_in_parallel";
    let Some(python) = root_python(TEST) else {
        return;
    };
    let users = ["cmcp-http-a", "cmcp-http-b", "cmcp-http-c"];
    let uids: Vec<u32> = match users.iter().map(|u| os_user(u)).collect::<Option<Vec<_>>>() {
        Some(u) => u,
        None => {
            missing(Tier::Root, TEST, "useradd could not make the test users");
            return;
        }
    };
    // conda 26's parser: `conda create` as conda has it.
    let dump = conda_mcp_tests::paths::real_dump();
    let prefix = conda_mcp_tests::standin::shared_prefix(&dump, python).expect("shared prefix");
    prefix
        .set_control(&[ControlRule {
            sleep_seconds: Some(3.0),
            ..ControlRule::for_commands(&["env list"])
        }])
        .expect("control");
    let tokens = [
        ("alice", "cmcp_alice"),
        ("bob", "cmcp_bob"),
        ("dave", "cmcp_dave"),
        ("carol", "cmcp_carol"),
    ];
    let dir = tempdir();
    let file = dir.path().join("tokens");
    let lines: Vec<String> = tokens
        .iter()
        .enumerate()
        .map(|(i, (name, token))| file_line(name, token, users.get(i).copied().filter(|_| i < 3)))
        .collect();
    std::fs::write(&file, lines.join("\n")).expect("token file");
    let server = HttpServer::start_in(
        dir,
        &prefix.conda_exe,
        &[
            "--auth-tokens",
            file.to_str().expect("utf-8"),
            "--max-workers",
            "2",
            "--worker-idle-timeout",
            "2",
            "--allow-write",
        ],
    );
    let addr = server.addr;
    let call = |token: &str, tool: &str| {
        let b = format!("Bearer {token}");
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": tool, "arguments": {"json": true}}});
        std::thread::spawn(move || post_mcp(addr, &[("Authorization", &b)], &body))
    };
    let uid_of = |r: &conda_mcp_tests::http::Response| -> Value {
        let v: Value = serde_json::from_str(&r.body).unwrap_or_else(|_| panic!("{r:?}"));
        v["result"]["structuredContent"]["parsed_json"]["uid"].clone()
    };
    // alice and bob: each in a worker under its own user, at the same time.
    let a = call("cmcp_alice", "conda_env_list");
    let b = call("cmcp_bob", "conda_env_list");
    assert!(
        server.wait_log("label=conda env list", 2, Duration::from_secs(30)),
        "{}",
        server.stderr_text()
    );
    // Both user workers are busy: a third user is told to come back.
    let dave = post_mcp(addr, &[("Authorization", "Bearer cmcp_dave")], &ping()).expect("dave");
    assert_eq!(dave.status, 503, "{dave:?}");
    assert_eq!(dave.header("retry-after"), Some("5"));
    let (a, b) = (
        a.join().expect("a").expect("a"),
        b.join().expect("b").expect("b"),
    );
    assert_eq!(uid_of(&a), json!(uids[0]), "{a:?}");
    assert_eq!(uid_of(&b), json!(uids[1]), "{b:?}");
    // In parallel: both started before either finished.
    let log = server.stderr_holding(&["job finished job=1 label=conda env list"]);
    let started: Vec<usize> = log
        .match_indices("job started job=1 label=conda env list")
        .map(|(i, _)| i)
        .collect();
    let finished = log
        .find("job finished job=1 label=conda env list")
        .expect("finished");
    assert_eq!(started.len(), 2, "{log}");
    assert!(
        started.iter().all(|s| *s < finished),
        "not in parallel:\n{log}"
    );
    // carol has no OS user: the default worker, the server's own uid.
    let c = call("cmcp_carol", "conda_info")
        .join()
        .expect("c")
        .expect("c");
    assert_eq!(uid_of(&c), json!(0), "{c:?}");
    // Idle user workers are stopped.
    assert!(
        server.wait_log("stopping an idle user worker", 2, Duration::from_secs(20)),
        "{}",
        server.stderr_text()
    );
    let log = server.stderr_holding(&["principal=alice", "principal=bob"]);
    assert!(log.contains("principal=alice") && log.contains("principal=bob"));

    // alice and bob each create an environment, as a task of their own.
    let envs = tempdir();
    std::fs::set_permissions(envs.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let post = |token: &str, method: &str, name: &str, params: Value| -> Value {
        post_stateless(addr, token, method, Some(name), params)
    };
    let get = |token: &str, id: &str| -> Value {
        let params = json!({"taskId": id, "_meta": stateless_meta(tasks_capabilities())});
        post(token, "tasks/get", id, params)
    };
    let mut created = Vec::new();
    for (token, user) in [("cmcp_alice", users[0]), ("cmcp_bob", users[1])] {
        let target = envs.path().join(format!("env-{user}"));
        let handle = post(
            token,
            "tools/call",
            "conda_create",
            json!({"name": "conda_create",
                   "arguments": {"prefix": target.to_str().expect("utf-8"),
                                 "packages": ["numpy"], "yes": true, "json": true},
                   "_meta": stateless_meta(tasks_capabilities())}),
        );
        assert_eq!(handle["result"]["resultType"], json!("task"), "{handle}");
        let id = handle["result"]["taskId"].as_str().expect("task id");
        created.push((token, target, id.to_owned()));
    }
    // Neither sees the other's task: unknown, as a task that never was.
    let [(alice, _, alice_task), (bob, _, bob_task)] = &created[..] else {
        unreachable!()
    };
    for (who, other) in [(alice, bob_task), (bob, alice_task)] {
        let theirs = get(who, other);
        assert_eq!(theirs["error"]["code"], json!(-32602), "{theirs}");
    }
    // Each environment belongs to its user's uid, prefix and history.
    for ((token, target, id), uid) in created.iter().zip(&uids) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let mine = get(token, id);
            let status = &mine["result"]["status"];
            if *status == json!("completed") {
                break;
            }
            assert_eq!(*status, json!("working"), "{mine}");
            assert!(
                Instant::now() < deadline,
                "{mine}\n{}",
                server.stderr_text()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        for path in [target.clone(), target.join("conda-meta").join("history")] {
            let meta = std::fs::metadata(&path)
                .unwrap_or_else(|e| panic!("{}: {e}\n{}", path.display(), server.stderr_text()));
            assert_eq!(meta.uid(), *uid, "{}", path.display());
        }
    }
}

/// A client that opens a connection and never finishes its request headers
/// (slowloris; no token needed) is cut off after the header read timeout,
/// on plain HTTP; meanwhile an authenticated request is served.
#[test]
fn a_connection_that_never_finishes_its_headers_is_closed() {
    use conda_mcp_server::transport::http::serve::HEADER_READ_TIMEOUT;
    use std::io::{Read, Write};
    let prefix = StandinPrefix::standard();
    let server = with_token(&prefix, &[]);
    let mut slow = std::net::TcpStream::connect(server.addr).expect("connect");
    write!(slow, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n").expect("partial headers");
    let opened = Instant::now();
    let bearer = format!("Bearer {TOKEN}");
    let ok = post_mcp(server.addr, &[("Authorization", &bearer)], &ping()).expect("ping");
    assert_eq!(ok.status, 200, "{ok:?}");
    slow.set_read_timeout(Some(HEADER_READ_TIMEOUT + Duration::from_secs(20)))
        .expect("timeout");
    let mut got = Vec::new();
    let read = slow.read_to_end(&mut got);
    assert!(
        read.is_ok() && opened.elapsed() < HEADER_READ_TIMEOUT + Duration::from_secs(20),
        "the connection is still open after {:?}: {read:?}",
        opened.elapsed()
    );
    assert!(
        opened.elapsed() >= HEADER_READ_TIMEOUT - Duration::from_secs(1),
        "closed after {:?}, before the timeout",
        opened.elapsed()
    );
}

/// A certificate and key that cannot serve stop the server at startup
/// (exit status 1, as an unreadable file does) with a message naming the file and what is wrong with
/// it: a key file without a PEM key, a PEM key rustls cannot parse, and
/// another certificate's key.
#[test]
fn an_unusable_tls_key_is_a_startup_error_that_says_why() {
    let dir = tempdir();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).expect("write");
        path
    };
    let one = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("cert");
    let other = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("cert");
    let cert = write("cert.pem", &one.cert.pem());
    let cases = [
        (cert.clone(), "no PEM private key in it"),
        (
            write(
                "garbage.pem",
                "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
            ),
            "not a private key rustls can use",
        ),
        (
            write("other.pem", &other.key_pair.serialize_pem()),
            "is not the private key of the certificate in --tls-cert",
        ),
    ];
    let prefix = StandinPrefix::standard();
    for (key, want) in cases {
        let out = Command::new(bins::server())
            .args(["--listen", "127.0.0.1:0", "--conda-exe"])
            .arg(&prefix.conda_exe)
            .arg("--tls-cert")
            .arg(&cert)
            .arg("--tls-key")
            .arg(&key)
            .output()
            .expect("conda-mcp");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(want) && err.contains(key.to_str().expect("utf-8")),
            "{want}: {err}"
        );
    }
}

#[test]
fn tls_serves_https_with_the_given_certificate_and_refuses_plain_http() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .expect("a self-signed certificate");
    let dir = tempdir();
    let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_path, cert.cert.pem()).expect("cert");
    std::fs::write(&key_path, cert.key_pair.serialize_pem()).expect("key");
    let prefix = StandinPrefix::standard();
    let server = with_token(
        &prefix,
        &[
            "--tls-cert",
            cert_path.to_str().expect("utf-8"),
            "--tls-key",
            key_path.to_str().expect("utf-8"),
        ],
    );
    assert!(server.stderr_text().contains("scheme=\"https\""));
    // The standard library's TLS client, trusting only this certificate.
    let script = r#"
import http.client, json, ssl, sys
ctx = ssl.create_default_context(cafile=sys.argv[1])
c = http.client.HTTPSConnection("127.0.0.1", int(sys.argv[2]), context=ctx, timeout=60)
body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "conda_info", "arguments": {"json": True}}})
c.request("POST", "/mcp", body, {"Content-Type": "application/json",
          "Accept": "application/json, text/event-stream",
          "Authorization": "Bearer " + sys.argv[3]})
r = c.getresponse()
print(json.dumps({"status": r.status, "version": c.sock.version(), "body": json.loads(r.read())}))
"#;
    let out = Command::new(conda_mcp_tests::standin::host_python())
        .arg("-c")
        .arg(script)
        .arg(&cert_path)
        .arg(server.addr.port().to_string())
        .arg(TOKEN)
        .output()
        .expect("python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(r["status"], json!(200), "{r}");
    assert!(
        r["version"]
            .as_str()
            .is_some_and(|v| v.starts_with("TLSv1.")),
        "{r}"
    );
    assert_eq!(
        r["body"]["result"]["structuredContent"]["exit_code"],
        json!(0),
        "{r}"
    );
    // Plain HTTP on the TLS port gets no MCP answer.
    let plain = {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(server.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5)))
            .expect("timeout");
        let body = ping().to_string();
        let _ = write!(
            s,
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {TOKEN}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            server.addr,
            body.len()
        );
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        String::from_utf8_lossy(&got).into_owned()
    };
    assert!(
        !plain.starts_with("HTTP/1.1 200"),
        "plain HTTP was served: {plain}"
    );
    assert!(!server.stderr_text().contains(TOKEN));
}

#[test]
fn a_task_belongs_to_the_principal_whose_token_created_it() {
    use conda_mcp_tests::rawrpc::{stateless_meta, tasks_capabilities};
    let prefix = StandinPrefix::standard();
    prefix
        .set_control(&[ControlRule {
            sleep_seconds: Some(1.0),
            stdout_text: Some("{\"found\": []}\n".into()),
            ..ControlRule::for_commands(&["search"])
        }])
        .expect("control file");
    let dir = tempdir();
    let file = dir.path().join("tokens");
    std::fs::write(
        &file,
        format!(
            "{}\n{}\n",
            file_line("alice", "cmcp_alice", None),
            file_line("bob", "cmcp_bob", None)
        ),
    )
    .expect("token file");
    let server = HttpServer::start_in(
        dir,
        &prefix.conda_exe,
        &["--auth-tokens", file.to_str().expect("utf-8")],
    );
    let post = |token: &str, method: &str, name: Option<&str>, params: Value| -> Value {
        post_stateless(server.addr, token, method, name, params)
    };
    let handle = post(
        "cmcp_alice",
        "tools/call",
        Some("conda_search"),
        json!({"name": "conda_search", "arguments": {"match_spec": "numpy", "json": true},
               "_meta": stateless_meta(tasks_capabilities())}),
    );
    assert_eq!(handle["result"]["resultType"], json!("task"), "{handle}");
    let id = handle["result"]["taskId"]
        .as_str()
        .expect("task id")
        .to_owned();
    let get = json!({"taskId": id, "_meta": stateless_meta(tasks_capabilities())});
    let mine = post("cmcp_alice", "tasks/get", Some(&id), get.clone());
    assert!(mine.get("result").is_some(), "alice sees her task: {mine}");
    let theirs = post("cmcp_bob", "tasks/get", Some(&id), get);
    assert_eq!(
        theirs["error"]["code"],
        json!(-32602),
        "bob does not: {theirs}"
    );
}

/// The HTTP log line of a `tools/call` says what the answer was, as the
/// stdio log does: `answered`, `tool_error` (a result with `isError`) or
/// `error` with the JSON-RPC code; never an argument.
#[test]
fn the_log_line_of_a_tool_call_says_whether_it_was_an_error() {
    let prefix = StandinPrefix::standard();
    let server = with_token(&prefix, &[]);
    let bearer = format!("Bearer {TOKEN}");
    let cases = [
        (7, "conda_info", json!({"json": true}), "answered"),
        (
            8,
            "conda_install",
            json!({"packages": ["SECRET-pkg"], "yes": true}),
            "tool_error",
        ),
        (9, "conda_nothing_here", json!({}), "error"),
    ];
    for (id, tool, args, _) in &cases {
        let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": tool, "arguments": args}});
        let r = post_mcp(server.addr, &[("Authorization", &bearer)], &body).expect("request");
        assert_eq!(r.status, 200, "{r:?}");
    }
    for (id, tool, _, outcome) in &cases {
        let needle = format!("tool={tool} id={id} status=200");
        assert!(
            server.wait_log(&needle, 1, Duration::from_secs(30)),
            "{}",
            server.stderr_text()
        );
        let log = server.stderr_text();
        let line = log.lines().find(|l| l.contains(&needle)).expect("the line");
        assert!(
            line.contains(&format!("outcome=\"{outcome}\"")),
            "{tool}: {line}"
        );
        if *outcome == "error" {
            assert!(line.contains("code=-32602"), "{line}");
        }
    }
    assert!(!server.stderr_text().contains("SECRET"));
}

/// A body that is JSON but holds a lone surrogate escape (`"\ud800"`) is
/// answered as on stdio: 400 with the JSON-RPC Invalid Request error and
/// the request's id, without the value; a valid request still passes.
#[test]
fn a_lone_surrogate_is_an_invalid_request_with_its_id() {
    let prefix = StandinPrefix::standard();
    let server = with_token(&prefix, &[]);
    let bearer = format!("Bearer {TOKEN}");
    let body = r#"{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"conda_info","arguments":{"SECRET":"\ud800"}}}"#;
    let r = request(
        server.addr,
        "POST",
        "/mcp",
        &[
            ("Authorization", &bearer),
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ],
        body.as_bytes(),
    )
    .expect("request");
    assert_eq!(r.status, 400, "{r:?}");
    let v: Value = serde_json::from_str(&r.body).unwrap_or_else(|_| panic!("{r:?}"));
    assert_eq!(v["id"], json!(41), "{v}");
    assert_eq!(v["error"]["code"], json!(-32600), "{v}");
    assert!(
        !r.body.contains("SECRET") && !r.body.contains("ud800"),
        "{v}"
    );
    assert!(
        server.wait_log("id=41 status=400", 1, Duration::from_secs(10)),
        "{}",
        server.stderr_text()
    );
    let ok = post_mcp(server.addr, &[("Authorization", &bearer)], &ping()).expect("ping");
    assert_eq!(ok.status, 200, "{ok:?}");
}

/// A body that is not JSON, a batch array, or JSON that is no JSON-RPC
/// message is answered as on stdio (not rmcp's 415 with serde's error
/// text): 400 with the JSON-RPC Parse error or Invalid Request error, the
/// id when it can be read, nothing of the body echoed, and a log line.
#[test]
fn a_body_that_is_no_json_rpc_message_is_answered_400_with_its_error() {
    let prefix = StandinPrefix::standard();
    let server = with_token(&prefix, &[]);
    let bearer = format!("Bearer {TOKEN}");
    let cases: [(&str, Value, i64); 4] = [
        (
            r#"{"jsonrpc":"2.0","id":51,"method":"SECRET"#,
            Value::Null,
            -32700,
        ),
        ("SECRET not json", Value::Null, -32700),
        (
            r#"{"jsonrpc":"2.0","id":"q52","SECRET":1}"#,
            json!("q52"),
            -32600,
        ),
        (
            r#"[{"jsonrpc":"2.0","id":53,"method":"ping","params":{"SECRET":1}}]"#,
            Value::Null,
            -32600,
        ),
    ];
    for (body, id, code) in cases {
        let r = request(
            server.addr,
            "POST",
            "/mcp",
            &[
                ("Authorization", &bearer),
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
            ],
            body.as_bytes(),
        )
        .expect("request");
        assert_eq!(r.status, 400, "{body}: {r:?}");
        let v: Value = serde_json::from_str(&r.body).unwrap_or_else(|_| panic!("{r:?}"));
        assert_eq!(v["jsonrpc"], json!("2.0"), "{v}");
        assert_eq!(v["id"], id, "{body}: {v}");
        assert_eq!(v["error"]["code"], json!(code), "{body}: {v}");
        assert!(!r.body.contains("SECRET"), "{v}");
    }
    assert!(
        server.wait_log(
            "method=(undecodable) tool= id=q52 status=400",
            1,
            Duration::from_secs(10)
        ),
        "{}",
        server.stderr_text()
    );
    assert!(
        server.wait_log("status=400 duration_ms=", 4, Duration::from_secs(10)),
        "{}",
        server.stderr_text()
    );
    let ok = post_mcp(server.addr, &[("Authorization", &bearer)], &ping()).expect("ping");
    assert_eq!(ok.status, 200, "{ok:?}");
}

/// `--approve-writes` over HTTP: alice's change waits inside its task for
/// her approval; bob's `tasks/update` answering it is answered as for an
/// unknown task and changes nothing (alice's task still waits, nothing is
/// applied), and alice's own cancel ends it.
#[test]
fn another_principals_answer_to_an_approval_question_is_unknown() {
    use conda_mcp_tests::rawrpc::stateless_meta;
    let standin = super::approval::transaction_standin();
    let dir = tempdir();
    let file = dir.path().join("tokens");
    std::fs::write(
        &file,
        format!(
            "{}\n{}\n",
            file_line("alice", "cmcp_alice", None),
            file_line("bob", "cmcp_bob", None)
        ),
    )
    .expect("token file");
    let server = HttpServer::start_in(
        dir,
        &standin.conda_exe,
        &[
            "--approve-writes",
            "--auth-tokens",
            file.to_str().expect("utf-8"),
        ],
    );
    let meta = stateless_meta(json!({
        "extensions": {"io.modelcontextprotocol/tasks": {}},
        "elicitation": {"form": {}}
    }));
    let post = |token: &str, method: &str, name: Option<&str>, mut params: Value| -> Value {
        params["_meta"] = meta.clone();
        post_stateless(server.addr, token, method, name, params)
    };
    let handle = post(
        "cmcp_alice",
        "tools/call",
        Some("conda_create"),
        json!({"name": "conda_create",
               "arguments": {"name": "hers", "packages": ["zlib"], "json": true}}),
    );
    assert_eq!(handle["result"]["resultType"], json!("task"), "{handle}");
    let id = handle["result"]["taskId"]
        .as_str()
        .expect("task id")
        .to_owned();
    let status =
        |token: &str| -> Value { post(token, "tasks/get", Some(&id), json!({"taskId": id})) };
    let deadline = Instant::now() + Duration::from_secs(30);
    while status("cmcp_alice")["result"]["status"] != json!("input_required") {
        assert!(Instant::now() < deadline, "{}", status("cmcp_alice"));
        std::thread::sleep(Duration::from_millis(100));
    }
    let accept = json!({"taskId": id, "inputResponses":
        {"approval": {"action": "accept", "content": {"approve": true}}}});
    let theirs = post("cmcp_bob", "tasks/update", Some(&id), accept);
    assert_eq!(theirs["error"]["code"], json!(-32602), "{theirs}");
    assert!(
        theirs["error"]["message"]
            .as_str()
            .is_some_and(|m| m == "unknown task"),
        "{theirs}"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(
        status("cmcp_alice")["result"]["status"],
        json!("input_required"),
        "bob's answer changed nothing"
    );
    let ack = post(
        "cmcp_alice",
        "tasks/cancel",
        Some(&id),
        json!({"taskId": id}),
    );
    assert!(ack.get("result").is_some(), "{ack}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while status("cmcp_alice")["result"]["status"] != json!("cancelled") {
        assert!(Instant::now() < deadline, "{}", status("cmcp_alice"));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(!super::approval::env_prefix(&standin, "hers").exists());
}
