//! A team server (docs/operating.md "A team server"), the built
//! `conda-mcp --listen` on loopback driven over raw HTTP: `/healthz` and
//! `/readyz` across startup, a failed worker and the drain; `/metrics`
//! behind the token, moving with calls; the audit log of applied, declined
//! and refused changes (none for reads, no token in it, reopened on
//! SIGHUP); `base` protected unless `--allow-base-writes`, and
//! `--protect-env`; channels outside `--allowed-channel` refused, from the
//! call and from a `.condarc`; the token file's policy column.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use conda_mcp_server::transport::http::tokens::{file_line, token_hash};
use conda_mcp_tests::bins;
use conda_mcp_tests::http::{HttpServer, Response, post_mcp, post_stateless, request, tempdir};
use conda_mcp_tests::rawrpc::stateless_meta;
use conda_mcp_tests::standin::{ControlRule, StandinPrefix};
use serde_json::{Value, json};

const ALICE: &str = "cmcp_team-alice-0123456789abcdef";
const READER: &str = "cmcp_team-reader-0123456789abcdef";
const SCRAPER: &str = "cmcp_team-scraper-0123456789abcdef";

/// A token file in `dir`: alice (not narrowed), reader (`conda:read`),
/// scraper (`-`: no tool call).
fn token_file(dir: &Path) -> PathBuf {
    let file = dir.join("tokens");
    std::fs::write(
        &file,
        format!(
            "# team\n{}\nreader {} - conda:read\nscraper {} - -\n",
            file_line("alice", ALICE, None),
            token_hash(READER),
            token_hash(SCRAPER)
        ),
    )
    .expect("token file");
    file
}

/// A server for `standin` with the token file and `args`.
fn team_server(standin: &StandinPrefix, args: &[&str]) -> HttpServer {
    let dir = tempdir();
    let file = token_file(dir.path());
    let mut all = vec!["--auth-tokens", file.to_str().expect("utf-8 path")];
    all.extend_from_slice(args);
    HttpServer::start_in(dir, &standin.conda_exe, &all)
}

fn get(server: &HttpServer, path: &str, token: Option<&str>) -> Response {
    let bearer = token.map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = bearer
        .as_deref()
        .map(|b| vec![("Authorization", b)])
        .unwrap_or_default();
    request(server.addr, "GET", path, &headers, b"").expect("GET")
}

/// `tools/call` of `tool` with `args` (an `initialize`-era request, no
/// session): the JSON-RPC answer.
fn call(server: &HttpServer, token: &str, tool: &str, args: Value) -> Value {
    let bearer = format!("Bearer {token}");
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": tool, "arguments": args}});
    let r = post_mcp(server.addr, &[("Authorization", &bearer)], &body).expect("request");
    assert_eq!(r.status, 200, "{r:?}");
    serde_json::from_str(&r.body).unwrap_or_else(|_| panic!("{r:?}"))
}

/// The typed error code of a tool result, if it is an error.
fn error_code(answer: &Value) -> Option<String> {
    answer["result"]["structuredContent"]["error"]["code"]
        .as_str()
        .map(str::to_owned)
}

fn audit_lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|_| panic!("one JSON object: {l}")))
        .collect()
}

/// Waits up to 60 s for `path` to answer `status`; the last answer.
fn wait_status(server: &HttpServer, path: &str, status: u16) -> Response {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = get(server, path, None);
        if r.status == status || Instant::now() >= deadline {
            return r;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The pids of `parent`'s children whose executable is `exe`.
fn children_running(parent: u32, exe: &Path) -> Vec<i32> {
    let mut pids = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<i32>().ok())
        else {
            continue;
        };
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        // `pid (comm) state ppid ...`: the comm may hold spaces.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        let runs = std::fs::read_link(entry.path().join("exe"))
            .is_ok_and(|e| e == exe || e.to_string_lossy().starts_with(&*exe.to_string_lossy()));
        if ppid == Some(parent) && runs {
            pids.push(pid);
        }
    }
    pids
}

#[test]
fn health_and_readiness_across_startup_a_failed_worker_and_the_drain() {
    let standin = StandinPrefix::standard();
    standin
        .set_control(&[ControlRule {
            sleep_seconds: Some(3.0),
            ..ControlRule::for_commands(&["env list"])
        }])
        .expect("control");
    let dir = tempdir();
    let go = dir.path().join("go");
    standin.hold_python_until(&go);
    // A copy of the worker the test can break and restore.
    let worker = dir.path().join("worker-copy");
    std::fs::copy(bins::worker(), &worker).expect("copy the worker");
    let mut server = HttpServer::start_with_worker(
        dir,
        &standin.conda_exe,
        &worker,
        &["--no-warm-conda", "--shutdown-grace", "10"],
    );
    // Startup holds in discovery: live, not ready; nothing of the
    // installation in either answer.
    let health = get(&server, "/healthz", None);
    assert_eq!(health.status, 200, "{health:?}");
    assert_eq!(
        serde_json::from_str::<Value>(&health.body).expect("json"),
        json!({"status": "ok"})
    );
    let starting = get(&server, "/readyz", None);
    assert_eq!(starting.status, 503, "{starting:?}");
    assert!(starting.body.contains("starting"), "{starting:?}");
    for r in [&health, &starting] {
        assert!(
            !r.body.contains(&*standin.prefix.to_string_lossy()),
            "{r:?}"
        );
    }
    std::fs::write(&go, "").expect("release discovery");
    let ready = wait_status(&server, "/readyz", 200);
    assert_eq!(ready.status, 200, "{ready:?}\n{}", server.stderr_text());
    assert!(ready.body.contains("ready"), "{ready:?}");

    // A failed worker: killed, and no new one can start.
    let real = std::fs::read(&worker).expect("worker bytes");
    let broken = worker.with_extension("broken");
    std::fs::write(&broken, "#!/bin/sh\nexit 3\n").expect("broken worker");
    std::fs::set_permissions(&broken, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    std::fs::rename(&broken, &worker).expect("swap in the broken worker");
    let killed = children_running(server.child.id(), &worker);
    assert!(!killed.is_empty(), "the server runs its worker");
    for pid in killed {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(pid),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    let failed = wait_status(&server, "/readyz", 503);
    assert_eq!(failed.status, 503, "{failed:?}");
    assert!(failed.body.contains("no_worker"), "{failed:?}");
    assert_eq!(get(&server, "/healthz", None).status, 200);
    let fixed = worker.with_extension("fixed");
    std::fs::write(&fixed, real).expect("worker bytes back");
    std::fs::set_permissions(&fixed, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    std::fs::rename(&fixed, &worker).expect("restore the worker");
    let back = wait_status(&server, "/readyz", 200);
    assert_eq!(back.status, 200, "{back:?}\n{}", server.stderr_text());

    // The drain: a call in flight, SIGTERM, then not ready (and new MCP
    // requests turned away) while the call finishes.
    let addr = server.addr;
    let in_flight = std::thread::spawn(move || {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "conda_env_list", "arguments": {}}});
        post_mcp(addr, &[], &body)
    });
    assert!(server.wait_log("label=conda env list", 1, Duration::from_secs(30)));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    assert!(server.wait_log("stopping", 1, Duration::from_secs(10)));
    let draining = get(&server, "/readyz", None);
    assert_eq!(draining.status, 503, "{draining:?}");
    assert!(draining.body.contains("draining"), "{draining:?}");
    assert_eq!(get(&server, "/healthz", None).status, 200);
    let turned_away = post_mcp(
        server.addr,
        &[],
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
    )
    .expect("request");
    assert_eq!(turned_away.status, 503, "{turned_away:?}");
    let answer = in_flight
        .join()
        .expect("thread")
        .expect("the call's answer");
    assert_eq!(answer.status, 200, "{answer:?}");
    assert!(answer.body.contains("\"exit_code\":0"), "{answer:?}");
    let status = server.wait_exit(Duration::from_secs(30));
    assert!(status.is_some_and(|s| s.success()), "{status:?}");
}

/// The value of the sample `series` (name and labels as exposed).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l[series.len()..].trim().parse().ok())
}

#[test]
fn metrics_need_a_token_and_move_with_calls() {
    let standin = StandinPrefix::standard();
    let server = team_server(&standin, &[]);
    let refused = get(&server, "/metrics", None);
    assert_eq!(refused.status, 401, "{refused:?}");
    assert!(refused.header("www-authenticate").is_some(), "{refused:?}");
    let bad = get(&server, "/metrics", Some("cmcp_not-a-token"));
    assert_eq!(bad.status, 401, "{bad:?}");
    let before = get(&server, "/metrics", Some(SCRAPER));
    assert_eq!(before.status, 200, "{before:?}");
    assert!(
        before
            .header("content-type")
            .is_some_and(|c| c.starts_with("application/openmetrics-text")),
        "{before:?}"
    );
    let ok = "conda_mcp_tool_calls_total{tool=\"conda_info\",outcome=\"ok\"}";
    assert_eq!(sample(&before.body, ok), None, "{}", before.body);
    for _ in 0..2 {
        assert_eq!(
            error_code(&call(&server, ALICE, "conda_info", json!({"json": true}))),
            None
        );
    }
    // The scraper's token authenticates but may call no tool.
    let scraped = call(&server, SCRAPER, "conda_info", json!({}));
    assert_eq!(
        error_code(&scraped).as_deref(),
        Some("refused"),
        "{scraped}"
    );
    let after = get(&server, "/metrics", Some(SCRAPER));
    let text = &after.body;
    assert_eq!(sample(text, ok), Some(2.0), "{text}");
    assert_eq!(
        sample(
            text,
            "conda_mcp_tool_calls_total{tool=\"conda_info\",outcome=\"refused\"}"
        ),
        Some(1.0),
        "{text}"
    );
    assert!(
        sample(
            text,
            "conda_mcp_requests_total{method=\"tools/call\",outcome=\"answered\"}"
        )
        .is_some_and(|n| n >= 2.0),
        "{text}"
    );
    assert_eq!(
        sample(
            text,
            "conda_mcp_tool_call_duration_seconds_count{tool=\"conda_info\"}"
        ),
        Some(3.0),
        "{text}"
    );
    assert!(
        sample(text, "conda_mcp_workers").is_some_and(|n| n >= 1.0),
        "{text}"
    );
    assert_eq!(sample(text, "conda_mcp_queue_depth"), Some(0.0), "{text}");
    assert_eq!(sample(text, "conda_mcp_tasks"), Some(0.0), "{text}");
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        assert!(line.starts_with("conda_mcp_"), "{line}");
    }
    for secret in ["alice", "scraper", ALICE, SCRAPER] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
}

#[test]
fn the_audit_log_records_applied_declined_and_refused_changes_and_no_reads() {
    let standin = crate::approval::transaction_standin();
    let dir = tempdir();
    let audit = dir.path().join("audit.jsonl");
    let file = token_file(dir.path());
    let server = HttpServer::start_in(
        dir,
        &standin.conda_exe,
        &[
            "--approve-writes",
            "--auth-tokens",
            file.to_str().expect("utf-8"),
            "--audit-log",
            audit.to_str().expect("utf-8"),
        ],
    );
    let meta = stateless_meta(json!({
        "extensions": {"io.modelcontextprotocol/tasks": {}},
        "elicitation": {"form": {}}
    }));
    let post = |method: &str, name: Option<&str>, mut params: Value| -> Value {
        params["_meta"] = meta.clone();
        post_stateless(server.addr, ALICE, method, name, params)
    };
    // Reads write nothing.
    for (tool, args) in [
        ("conda_info", json!({"json": true})),
        ("conda_env_list", json!({})),
    ] {
        let r = post(
            "tools/call",
            Some(tool),
            json!({"name": tool, "arguments": args}),
        );
        assert!(r.get("result").is_some(), "{r}");
    }
    // A change answered inside a task: approved, then declined.
    let change = |tool: &str, args: Value, action: Value| -> Value {
        let handle = post(
            "tools/call",
            Some(tool),
            json!({"name": tool, "arguments": args}),
        );
        let id = handle["result"]["taskId"]
            .as_str()
            .expect("a task")
            .to_owned();
        let status = || post("tasks/get", Some(&id), json!({"taskId": id}));
        let deadline = Instant::now() + Duration::from_secs(60);
        while status()["result"]["status"] != json!("input_required") {
            assert!(Instant::now() < deadline, "{}", status());
            std::thread::sleep(Duration::from_millis(100));
        }
        let update = post(
            "tasks/update",
            Some(&id),
            json!({"taskId": id, "inputResponses": {"approval": action}}),
        );
        assert!(update.get("result").is_some(), "{update}");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let s = status();
            if s["result"]["status"] == json!("completed") {
                return s;
            }
            assert!(Instant::now() < deadline, "{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    change(
        "conda_create",
        json!({"name": "lab", "packages": ["zlib"], "json": true}),
        json!({"action": "accept", "content": {"approve": true}}),
    );
    let lab = standin.prefix.join("envs").join("lab");
    assert!(lab.join("conda-meta/history").is_file(), "applied");
    change(
        "conda_install",
        json!({"name": "lab", "packages": ["numpy"], "json": true}),
        json!({"action": "decline"}),
    );
    // Refused before anything runs: base is protected.
    let base = post(
        "tools/call",
        Some("conda_install"),
        json!({"name": "conda_install", "arguments":
            {"prefix": standin.prefix.to_str().expect("utf-8"), "packages": ["numpy"], "json": true}}),
    );
    assert_eq!(
        base["result"]["structuredContent"]["error"]["code"],
        json!("protected_environment"),
        "{base}"
    );
    let lines = audit_lines(&audit);
    assert_eq!(lines.len(), 3, "{lines:#?}");
    let (applied, declined, refused) = (&lines[0], &lines[1], &lines[2]);
    assert_eq!(applied["outcome"], json!("applied"), "{applied}");
    assert_eq!(applied["approval"], json!("approve"), "{applied}");
    assert_eq!(applied["principal"], json!("alice"));
    assert_eq!(applied["tool"], json!("conda_create"));
    assert_eq!(applied["kind"], json!("mutation"));
    assert_eq!(applied["exit_code"], json!(0));
    assert_eq!(
        applied["prefix"],
        json!(lab.to_str().expect("utf-8")),
        "{applied}"
    );
    assert!(
        applied["plan"]["link"]
            .as_array()
            .is_some_and(|l| l.contains(&json!("zlib-1.0-h0_0"))),
        "{applied}"
    );
    assert_eq!(applied["revision_before"], Value::Null);
    assert_eq!(applied["revision_after"], json!(0));
    assert_eq!(
        applied["undo"],
        json!(format!("conda env remove --prefix {}", lab.display()))
    );
    assert!(
        applied["argv"]
            .as_array()
            .is_some_and(|a| a.contains(&json!("zlib")))
    );
    assert_eq!(declined["outcome"], json!("declined"), "{declined}");
    assert_eq!(declined["approval"], json!("decline"));
    assert_eq!(declined["exit_code"], Value::Null);
    assert!(
        declined["plan"]["link"]
            .as_array()
            .is_some_and(|l| l.contains(&json!("numpy-1.0-h0_0"))),
        "the plan shown: {declined}"
    );
    assert_eq!(
        declined["revision_after"],
        json!(0),
        "nothing changed: {declined}"
    );
    assert_eq!(refused["outcome"], json!("refused"), "{refused}");
    assert!(
        refused["reason"]
            .as_str()
            .is_some_and(|r| r.contains("--allow-base-writes")),
        "{refused}"
    );
    let text = std::fs::read_to_string(&audit).expect("audit");
    for secret in [ALICE, "Bearer", "authorization", "Authorization"] {
        assert!(!text.contains(secret), "{secret} in the audit log");
    }
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&audit)
        .expect("meta")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);

    // Rotation: the file moved away, SIGHUP, the next line in a new file.
    let rotated = audit.with_extension("jsonl.1");
    std::fs::rename(&audit, &rotated).expect("rotate");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.child.id() as i32),
        nix::sys::signal::Signal::SIGHUP,
    )
    .expect("SIGHUP");
    assert!(server.wait_log("audit log reopened", 1, Duration::from_secs(10)));
    let again = post(
        "tools/call",
        Some("conda_install"),
        json!({"name": "conda_install", "arguments":
            {"name": "base", "packages": ["numpy"], "json": true}}),
    );
    assert!(again.get("result").is_some(), "{again}");
    assert_eq!(audit_lines(&rotated).len(), 3);
    let fresh = audit_lines(&audit);
    assert_eq!(fresh.len(), 1, "{fresh:#?}");
    assert_eq!(fresh[0]["outcome"], json!("refused"));
}

#[test]
fn base_is_refused_then_allowed_with_the_flag_and_protect_env_adds_more() {
    let standin = crate::approval::transaction_standin();
    let root = standin.prefix.to_str().expect("utf-8").to_owned();
    let install_in_base = json!({"prefix": root, "packages": ["zlib"], "yes": true, "json": true});
    let server = team_server(&standin, &["--allow-write", "--protect-env", "lab"]);
    let refused = call(&server, ALICE, "conda_install", install_in_base.clone());
    assert_eq!(
        error_code(&refused).as_deref(),
        Some("protected_environment"),
        "{refused}"
    );
    let text = refused["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(text.contains("--allow-base-writes"), "{refused}");
    let by_name = call(
        &server,
        ALICE,
        "conda_install",
        json!({"name": "base", "packages": ["zlib"], "yes": true, "json": true}),
    );
    assert_eq!(
        error_code(&by_name).as_deref(),
        Some("protected_environment"),
        "{by_name}"
    );
    // A dry run in base changes nothing: it runs.
    let dry = call(
        &server,
        ALICE,
        "conda_install",
        json!({"prefix": root, "packages": ["zlib"], "dry_run": true, "json": true}),
    );
    assert_eq!(error_code(&dry), None, "{dry}");
    // --protect-env lab.
    let lab = call(
        &server,
        ALICE,
        "conda_create",
        json!({"name": "lab", "packages": ["zlib"], "yes": true, "json": true}),
    );
    assert_eq!(
        error_code(&lab).as_deref(),
        Some("protected_environment"),
        "{lab}"
    );
    assert!(!standin.prefix.join("envs/lab").exists());
    drop(server);
    let history = standin.prefix.join("conda-meta").join("history");
    let before = std::fs::read_to_string(&history).unwrap_or_default();
    let open = team_server(&standin, &["--allow-write", "--allow-base-writes"]);
    let applied = call(&open, ALICE, "conda_install", install_in_base);
    assert_eq!(error_code(&applied), None, "{applied}");
    assert_eq!(
        applied["result"]["structuredContent"]["exit_code"],
        json!(0),
        "{applied}"
    );
    let after = std::fs::read_to_string(&history).expect("history");
    assert!(
        after.len() > before.len() && after.contains("+zlib-1.0-h0_0"),
        "{after}"
    );
}

#[test]
fn channels_outside_the_list_are_refused_in_the_call_and_from_a_condarc() {
    let standin = crate::approval::transaction_standin();
    let rc = standin.prefix.join(".condarc");
    std::fs::write(&rc, "channels:\n  - conda-forge\n").expect("condarc");
    let server = team_server(
        &standin,
        &["--allow-write", "--allowed-channel", "conda-forge"],
    );
    let install = |args: Value| call(&server, ALICE, "conda_install", args);
    let ok = install(json!({"name": "x", "packages": ["zlib"], "dry_run": true, "json": true}));
    assert_eq!(
        error_code(&ok),
        None,
        "the configured channel is allowed: {ok}"
    );
    let given = install(
        json!({"name": "x", "packages": ["zlib"], "channel": ["bioconda"],
                               "dry_run": true, "json": true}),
    );
    assert_eq!(
        error_code(&given).as_deref(),
        Some("channel_not_allowed"),
        "{given}"
    );
    let text = given["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(
        text.contains("bioconda") && text.contains("call"),
        "{given}"
    );
    let spec = install(json!({"name": "x", "packages": ["bioconda::samtools"],
                              "dry_run": true, "json": true}));
    assert_eq!(
        error_code(&spec).as_deref(),
        Some("channel_not_allowed"),
        "{spec}"
    );
    let url = install(json!({"name": "x", "packages": ["zlib"],
                             "channel": ["https://conda.anaconda.org/conda-forge/"],
                             "dry_run": true, "json": true}));
    assert_eq!(error_code(&url), None, "{url}");
    // The configuration changes: from the next call on, its channels count.
    std::fs::write(&rc, "channels:\n  - conda-forge\n  - bioconda\n").expect("condarc");
    let configured =
        install(json!({"name": "x", "packages": ["zlib"], "dry_run": true, "json": true}));
    assert_eq!(
        error_code(&configured).as_deref(),
        Some("channel_not_allowed"),
        "{configured}"
    );
    let text = configured["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or("");
    assert!(
        text.contains("bioconda") && text.contains("configuration"),
        "{configured}"
    );
    // --override-channels leaves the configuration out.
    let overridden = install(
        json!({"name": "x", "packages": ["zlib"], "channel": ["conda-forge"],
                                    "override_channels": true, "dry_run": true, "json": true}),
    );
    assert_eq!(error_code(&overridden), None, "{overridden}");
}

#[test]
fn a_read_only_token_on_an_allow_write_server_is_refused_and_check_says_so() {
    let standin = crate::approval::transaction_standin();
    let server = team_server(&standin, &["--allow-write"]);
    let install = json!({"name": "team", "packages": ["zlib"], "yes": true, "json": true});
    let read = call(&server, READER, "conda_env_list", json!({}));
    assert_eq!(error_code(&read), None, "{read}");
    let refused = call(&server, READER, "conda_create", install.clone());
    assert_eq!(
        error_code(&refused).as_deref(),
        Some("refused"),
        "{refused}"
    );
    assert_eq!(
        refused["result"]["structuredContent"]["error"]["details"]["missing_scopes"],
        json!(["conda:write"]),
        "{refused}"
    );
    assert!(!standin.prefix.join("envs/team").exists());
    let none = call(&server, SCRAPER, "conda_env_list", json!({}));
    assert_eq!(
        none["result"]["structuredContent"]["error"]["details"]["missing_scopes"],
        json!(["conda:read"]),
        "{none}"
    );
    let applied = call(&server, ALICE, "conda_create", install);
    assert_eq!(error_code(&applied), None, "{applied}");
    assert!(
        standin
            .prefix
            .join("envs/team/conda-meta/history")
            .is_file()
    );

    // `check --listen` prints each principal's effective policy.
    let dir = tempdir();
    let file = token_file(dir.path());
    let out = Command::new(bins::server())
        .arg("check")
        .arg("--conda-exe")
        .arg(&standin.conda_exe)
        .arg("--worker-exe")
        .arg(bins::worker())
        .args(["--listen", "127.0.0.1:0", "--allow-write", "--auth-tokens"])
        .arg(&file)
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .output()
        .expect("check");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = |name: &str| {
        text.lines()
            .find(|l| l.contains(&format!("principal {name}")))
            .unwrap_or_else(|| panic!("{name} in {text}"))
            .to_owned()
    };
    assert!(
        line("alice").contains("write allowed (--allow-write)"),
        "{text}"
    );
    assert!(
        line("reader").contains("write refused (the token lacks conda:write)"),
        "{text}"
    );
    assert!(
        line("scraper").contains("read refused (the token lacks conda:read)"),
        "{text}"
    );
    for l in ["alice", "reader"].map(line) {
        assert!(l.contains("exec refused (no --allow-exec)"), "{l}");
    }
    assert!(
        line("scraper").contains("exec refused (the token lacks conda:read)"),
        "{text}"
    );
}
