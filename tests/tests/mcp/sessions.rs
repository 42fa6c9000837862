//! Sessions of the `initialize` era over HTTP (docs/approval.md "Over
//! HTTP"; `server/src/transport/http/sessions.rs`): a host that starts with
//! `initialize` and declares elicitation or the MCP Apps extension gets an
//! `Mcp-Session-Id` bound to its principal, and in that session it is
//! asked (the form) or shown the approval card, as over stdio. Another
//! principal cannot use the session (404) nor decide its card; sessionless
//! requests are served as before; the table is bounded (`--max-sessions`).
//! The hosts: the Python `mcp` client (the official SDK,
//! `tests/fixtures/approval_client.py`) in its `initialize` mode, and raw
//! HTTP requests with tokens the tests mint, against the stand-in conda
//! with its `transaction` switch.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use conda_mcp_server::transport::http::tokens::file_line;
use conda_mcp_tests::http::{HttpServer, Response, messages, post_mcp, request, tempdir};
use conda_mcp_tests::pyclient::{self, mcp_python};

use super::approval::{env_prefix, runs, transaction_standin};
use super::apps::ui_capabilities;

const ALICE: &str = "cmcp_sessions_alice_0123456789";
const BOB: &str = "cmcp_sessions_bob_0123456789";
const DECIDE: &str = "conda_approval_decide";
const STATUS: &str = "conda_approval_status";

/// A server with `--auth-tokens` for alice and bob, `--approve-writes`
/// and `extra`.
fn server(conda_exe: &std::path::Path, extra: &[&str]) -> HttpServer {
    let dir = tempdir();
    let file = dir.path().join("tokens");
    std::fs::write(
        &file,
        [file_line("alice", ALICE, None), file_line("bob", BOB, None)].join("\n"),
    )
    .expect("token file");
    let mut args = vec![
        "--auth-tokens",
        file.to_str().expect("utf-8"),
        "--approve-writes",
    ];
    args.extend_from_slice(extra);
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    HttpServer::start_in(dir, conda_exe, &args)
}

fn create_args(name: &str) -> Value {
    json!({"name": name, "packages": ["zlib=1.3"], "json": true})
}

/// The creates the stand-in ran: (dry runs, all).
fn creates(standin: &conda_mcp_tests::standin::StandinPrefix) -> (usize, usize) {
    let creates: Vec<Vec<String>> = runs(standin)
        .into_iter()
        .filter(|a| a.first().is_some_and(|c| c == "create"))
        .collect();
    let dry = creates
        .iter()
        .filter(|a| a.iter().any(|x| x == "--dry-run"))
        .count();
    (dry, creates.len())
}

/// Raw HTTP requests of one principal, in one session once
/// [`Raw::initialize`] has opened it.
struct Raw {
    addr: SocketAddr,
    bearer: String,
    session: Option<String>,
}

impl Raw {
    fn new(addr: SocketAddr, token: &str) -> Self {
        Raw {
            addr,
            bearer: format!("Bearer {token}"),
            session: None,
        }
    }

    fn headers(&self) -> Vec<(&str, &str)> {
        let mut h = vec![
            ("Authorization", self.bearer.as_str()),
            ("MCP-Protocol-Version", "2025-11-25"),
        ];
        if let Some(s) = &self.session {
            h.push(("Mcp-Session-Id", s.as_str()));
        }
        h
    }

    /// `initialize` declaring `capabilities`, then `notifications/initialized`
    /// in the session; the answer.
    fn initialize(&mut self, capabilities: Value) -> Response {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": capabilities,
            "clientInfo": {"name": "a raw initialize-era host", "version": "1"}
        }});
        let r = post_mcp(self.addr, &[("Authorization", self.bearer.as_str())], &body)
            .expect("initialize");
        self.session = r.header("Mcp-Session-Id").map(str::to_owned);
        if self.session.is_some() {
            let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            let n = post_mcp(self.addr, &self.headers(), &note).expect("initialized");
            assert_eq!(n.status, 202, "{n:?}");
        }
        r
    }

    /// One request; the HTTP answer.
    fn send(&self, method: &str, params: Value) -> Response {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        post_mcp(self.addr, &self.headers(), &body).expect("request")
    }

    /// One request; its JSON-RPC answer (the last message of the stream).
    fn post(&self, method: &str, params: Value) -> Value {
        let r = self.send(method, params);
        messages(&r)
            .into_iter()
            .rfind(|m| m.get("id") == Some(&json!(1)))
            .unwrap_or_else(|| panic!("no answer in {r:?}"))
    }

    fn call(&self, tool: &str, args: Value) -> Value {
        self.post("tools/call", json!({"name": tool, "arguments": args}))
    }

    fn tools(&self) -> Vec<Value> {
        self.post("tools/list", json!({}))["result"]["tools"]
            .as_array()
            .expect("tools")
            .clone()
    }
}

fn code(r: &Value) -> &str {
    r["result"]["structuredContent"]["error"]["code"]
        .as_str()
        .unwrap_or("")
}

fn state(r: &Value) -> &str {
    r["result"]["structuredContent"]["approval"]["state"]
        .as_str()
        .unwrap_or("")
}

/// The official Python client in its default `initialize` mode over HTTP,
/// with an elicitation callback: it is asked with the form in its session
/// and the change is applied once after it accepts; a declined change
/// runs nothing. Declaring the MCP Apps extension instead, it is listed
/// the card's tools and `_meta.ui`, and a change shows the card.
#[test]
fn the_python_client_of_the_initialize_era_approves_over_http() {
    let Some(python) =
        mcp_python("sessions::the_python_client_of_the_initialize_era_approves_over_http")
    else {
        return;
    };
    let standin = transaction_standin();
    let server = server(&standin.conda_exe, &[]);
    let report = pyclient::run_script(
        &python,
        "approval_client.py",
        &json!({
            "url": server.url(),
            "token": ALICE,
            "mode": "legacy",
            "elicitation": true,
            "calls": [
                {"tool": "conda_create", "answer": "accept", "arguments": create_args("demo")},
                {"tool": "conda_create", "answer": "decline", "arguments": create_args("other")},
            ],
        }),
    );
    let version = report["protocol_version"].as_str().unwrap_or("");
    assert!(version < "2026-07-28", "{report}");
    let accepted = &report["results"][0];
    assert_eq!(accepted["is_error"], false, "{accepted}");
    assert_eq!(accepted["structured"]["exit_code"], 0, "{accepted}");
    let asked = accepted["questions"].as_array().expect("questions");
    assert_eq!(asked.len(), 1, "one question: {accepted}");
    assert!(
        asked[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Command: conda create zlib=1.3 --name demo --json --yes")),
        "{accepted}"
    );
    assert!(
        env_prefix(&standin, "demo")
            .join("conda-meta")
            .join("standin-transaction.json")
            .exists()
    );
    let declined = &report["results"][1];
    assert_eq!(declined["is_error"], true, "{declined}");
    assert_eq!(
        declined["structured"]["error"]["code"], "declined",
        "{declined}"
    );
    assert!(!env_prefix(&standin, "other").exists());
    // Accepted: a dry run for the question, one for the re-plan, one
    // apply; declined: its dry run only.
    assert_eq!(creates(&standin), (3, 4), "{:?}", runs(&standin));

    let report = pyclient::run_script(
        &python,
        "approval_client.py",
        &json!({
            "url": server.url(),
            "token": ALICE,
            "mode": "legacy",
            "elicitation": false,
            "ui": true,
            "list_tools": true,
            "calls": [{"tool": "conda_create", "answer": "never", "arguments": create_args("card")}],
        }),
    );
    let tools = report["tools"].as_array().expect("tools");
    assert!(tools.iter().any(|t| t["name"] == DECIDE), "{report}");
    assert!(
        tools
            .iter()
            .any(|t| t["name"] == "conda_create" && t["ui"] == true),
        "{report}"
    );
    let shown = &report["results"][0];
    assert_eq!(
        shown["structured"]["error"]["code"], "approval_pending",
        "{shown}"
    );
    assert!(
        shown["structured"]["error"]["details"]["approval"]["id"].is_string(),
        "{shown}"
    );
    assert!(!env_prefix(&standin, "card").exists());
}

/// A raw `initialize`-era host that declares the MCP Apps extension: in
/// its session it is listed the card's tools and `_meta.ui`, a change
/// shows the card, and the person's approval applies it once. Bob cannot
/// use alice's session id (404, as for an id that never existed), nor,
/// from a session of his own, decide or follow her card. Requests without
/// the session id are served as before: with the documented refusal.
#[test]
fn a_session_shows_the_card_and_only_its_principal_can_use_it() {
    let standin = transaction_standin();
    let server = server(&standin.conda_exe, &[]);
    let mut alice = Raw::new(server.addr, ALICE);
    let init = alice.initialize(ui_capabilities());
    assert_eq!(init.status, 200, "{init:?}");
    let session = alice.session.clone().expect("a session id");
    let answer = messages(&init);
    assert_eq!(
        answer[0]["result"]["protocolVersion"], "2025-11-25",
        "{init:?}"
    );

    let tools = alice.tools();
    assert!(tools.iter().any(|t| t["name"] == DECIDE));
    assert!(tools.iter().any(|t| t["name"] == STATUS));
    assert!(
        tools
            .iter()
            .any(|t| t["name"] == "conda_create" && t["_meta"].get("ui").is_some())
    );
    let r = alice.call("conda_create", create_args("demo"));
    assert_eq!(code(&r), "approval_pending", "{r}");
    let id = r["result"]["structuredContent"]["error"]["details"]["approval"]["id"]
        .as_str()
        .expect("approval id")
        .to_owned();
    let env = env_prefix(&standin, "demo");

    // Bob with alice's session id: 404, exactly as an unknown id.
    let mut stolen = Raw::new(server.addr, BOB);
    stolen.session = Some(session.clone());
    let r = stolen.send(
        "tools/call",
        json!({"name": DECIDE,
        "arguments": {"id": id, "decision": "approve"}}),
    );
    let mut unknown = Raw::new(server.addr, BOB);
    unknown.session = Some("00000000-0000-4000-8000-000000000000".into());
    let never = unknown.send("tools/list", json!({}));
    assert_eq!(r.status, 404, "{r:?}");
    assert_eq!((never.status, &never.body), (404, &r.body), "{never:?}");
    let get = request(
        server.addr,
        "GET",
        "/mcp",
        &[
            ("Authorization", stolen.bearer.as_str()),
            ("Accept", "text/event-stream"),
            ("Mcp-Session-Id", session.as_str()),
        ],
        b"",
    )
    .expect("GET");
    assert_eq!(get.status, 404, "{get:?}");
    let delete = request(
        server.addr,
        "DELETE",
        "/mcp",
        &[
            ("Authorization", stolen.bearer.as_str()),
            ("Mcp-Session-Id", session.as_str()),
        ],
        b"",
    )
    .expect("DELETE");
    assert_eq!(delete.status, 404, "{delete:?}");

    // Bob in a session of his own: her card's id is not his.
    let mut bob = Raw::new(server.addr, BOB);
    bob.initialize(ui_capabilities());
    assert!(bob.session.is_some() && bob.session.as_deref() != Some(session.as_str()));
    let r = bob.call(DECIDE, json!({"id": id, "decision": "approve"}));
    assert_eq!(code(&r), "approval_invalid", "{r}");
    let r = bob.call(STATUS, json!({"id": id}));
    assert_eq!(code(&r), "approval_invalid", "{r}");
    assert!(!env.exists());

    // Alice without her session id: the stateless service, as before.
    let sessionless = Raw::new(server.addr, ALICE);
    let r = sessionless.call("conda_create", create_args("elsewhere"));
    assert_eq!(code(&r), "approval_unavailable", "{r}");
    assert!(
        r["result"]["structuredContent"]["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Mcp-Session-Id")),
        "{r}"
    );
    assert!(
        sessionless
            .tools()
            .iter()
            .all(|t| t["name"] != DECIDE && t["_meta"].get("ui").is_none())
    );

    // Alice decides in her session: applied once.
    let r = alice.call(DECIDE, json!({"id": id, "decision": "approve"}));
    assert_eq!(r["result"]["isError"], false, "{r}");
    let deadline = Instant::now() + Duration::from_secs(120);
    let r = loop {
        let r = alice.call(STATUS, json!({"id": id}));
        if !matches!(state(&r), "deciding" | "applying") {
            break r;
        }
        assert!(Instant::now() < deadline, "{r}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(r["result"]["structuredContent"]["exit_code"], 0, "{r}");
    assert!(
        env.join("conda-meta")
            .join("standin-transaction.json")
            .exists()
    );
    let (dry, all) = creates(&standin);
    assert_eq!(all - dry, 1, "one apply: {:?}", runs(&standin));

    // Her DELETE ends the session; its id is then unknown.
    let ended = request(
        server.addr,
        "DELETE",
        "/mcp",
        &[
            ("Authorization", alice.bearer.as_str()),
            ("Mcp-Session-Id", session.as_str()),
        ],
        b"",
    )
    .expect("DELETE");
    assert!(
        (200..300).contains(&ended.status),
        "{ended:?}\n{}",
        server.stderr_text()
    );
    let after = alice.send("tools/list", json!({}));
    assert_eq!(after.status, 404, "{after:?}");
}

/// A request held open on a raw connection: its answer is read as it
/// streams.
struct Open {
    stream: TcpStream,
    read: String,
}

impl Open {
    /// POSTs `body` to `/mcp` with `headers` and leaves the answer unread.
    fn post(addr: SocketAddr, headers: &[(&str, &str)], body: &Value) -> Open {
        let mut stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .expect("timeout");
        let body = body.to_string();
        let mut head = format!("POST /mcp HTTP/1.1\r\nHost: {addr}\r\n");
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str(&format!(
            "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ));
        stream.write_all(head.as_bytes()).expect("send");
        Open {
            stream,
            read: String::new(),
        }
    }

    /// Reads until the answer so far holds `needle`.
    fn until(&mut self, needle: &str) {
        let mut buf = [0u8; 4096];
        while !self.read.contains(needle) {
            let n = self.stream.read(&mut buf).expect("read");
            assert!(n > 0, "the answer ended without {needle:?}: {}", self.read);
            self.read.push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    }
}

/// `--max-sessions 1`: while alice's only session has a call in flight
/// (its question open), bob's `initialize` is refused with 503 and
/// `Retry-After`; once her call has ended, bob's opens a session and
/// closes her idle one (her id is then 404). An `initialize` that declares
/// neither elicitation nor the ui extension opens none and is answered
/// with JSON, as before.
#[test]
fn the_session_table_is_bounded() {
    let standin = transaction_standin();
    let server = server(&standin.conda_exe, &["--max-sessions", "1"]);
    let plain = {
        let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "a scripted client", "version": "1"}}});
        post_mcp(
            server.addr,
            &[("Authorization", &format!("Bearer {BOB}"))],
            &body,
        )
        .expect("initialize")
    };
    assert_eq!(plain.status, 200, "{plain:?}");
    assert!(plain.header("Mcp-Session-Id").is_none(), "{plain:?}");
    assert!(
        plain
            .header("content-type")
            .is_some_and(|c| c.starts_with("application/json")),
        "{plain:?}"
    );

    let mut alice = Raw::new(server.addr, ALICE);
    alice.initialize(json!({"elicitation": {"form": {}}}));
    let session = alice.session.clone().expect("a session");
    let mut held = Open::post(
        server.addr,
        &alice.headers(),
        &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "conda_create", "arguments": create_args("held")}}),
    );
    held.until("elicitation/create");
    // The events are whole lines, chunked or not.
    let question = held
        .read
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
        .find(|m| m["method"] == "elicitation/create")
        .expect("the question");

    let mut bob = Raw::new(server.addr, BOB);
    let refused = bob.initialize(json!({"elicitation": {}}));
    assert_eq!(refused.status, 503, "{refused:?}");
    assert!(refused.header("Retry-After").is_some(), "{refused:?}");
    assert!(refused.body.contains("--max-sessions 1"), "{refused:?}");
    assert!(bob.session.is_none());

    // Alice declines in her session: the held call ends, nothing ran.
    let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": {"action": "decline"}});
    let r = post_mcp(server.addr, &alice.headers(), &answer).expect("answer");
    assert_eq!(r.status, 202, "{r:?}");
    held.until("declined");
    drop(held);
    assert!(!env_prefix(&standin, "held").exists());

    let deadline = Instant::now() + Duration::from_secs(30);
    let opened = loop {
        let r = bob.initialize(json!({"elicitation": {}}));
        if r.status != 503 || Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(opened.status, 200, "{opened:?}");
    assert!(bob.session.is_some(), "{opened:?}");
    let gone = alice.send("tools/list", json!({}));
    assert_eq!(gone.status, 404, "her idle session was closed: {gone:?}");
    assert_ne!(bob.session.as_deref(), Some(session.as_str()));
    let listed = bob.post("tools/list", json!({}));
    assert!(listed["result"]["tools"].is_array(), "{listed}");
}
