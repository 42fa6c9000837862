//! `--approve-writes` through the approval card (docs/approval.md "The
//! approval card"): a client that declares the MCP Apps extension
//! (`io.modelcontextprotocol/ui`) but not elicitation is shown each change
//! as a view's data with a single-use approval id, and decides through the
//! app-only tool `conda_approval_decide`. Raw JSON-RPC over stdio (the
//! `initialize` era) and over HTTP with two principals (the stateless
//! lifecycle), against the stand-in conda with its `transaction` switch.
//! The `initialize` era over HTTP (a session) is `sessions.rs`; the same
//! flow in a real browser is `apps_browser.rs`.

use std::time::Duration;

use serde_json::{Value, json};

use conda_mcp_server::transport::http::tokens::file_line;
use conda_mcp_tests::http::{HttpServer, post_stateless, tempdir};
use conda_mcp_tests::rawrpc::{RawClient, stateless_meta};
use conda_mcp_tests::standin::StandinPrefix;

use super::approval::{env_prefix, runs, transaction_standin};

const DECIDE: &str = "conda_approval_decide";
const STATUS: &str = "conda_approval_status";
const VIEW: &str = "ui://conda-mcp/approval";

/// Client capabilities of an MCP Apps host without elicitation.
pub(crate) fn ui_capabilities() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}})
}

const WAIT: Duration = Duration::from_secs(120);

async fn call(c: &mut RawClient, id: &str, tool: &str, args: Value) -> Value {
    let (r, _) = c
        .request(
            id,
            "tools/call",
            json!({"name": tool, "arguments": args}),
            WAIT,
        )
        .await;
    r
}

async fn tools(c: &mut RawClient) -> Vec<Value> {
    let (r, _) = c.request("list", "tools/list", json!({}), WAIT).await;
    r["result"]["tools"].as_array().expect("tools").clone()
}

fn code(r: &Value) -> &str {
    r["result"]["structuredContent"]["error"]["code"]
        .as_str()
        .unwrap_or("")
}

/// The stage an answer of the decide or status tool reports
/// (`structuredContent.approval.state`), or "" for a final result.
fn state(r: &Value) -> &str {
    r["result"]["structuredContent"]["approval"]["state"]
        .as_str()
        .unwrap_or("")
}

/// Follows an accepted decision with the status tool until it reports no
/// decision in progress; that answer (the applied call's result, or the
/// id's `pending` stage).
async fn followed(c: &mut RawClient, id: &str) -> Value {
    for n in 0.. {
        let r = call(c, &format!("s{n}"), STATUS, json!({"id": id})).await;
        if !matches!(state(&r), "deciding" | "applying") {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    unreachable!()
}

fn create_args(name: &str) -> Value {
    json!({"name": name, "packages": ["zlib=1.3"], "json": true})
}

/// The card's plan and id of a result that shows the card.
fn card(r: &Value) -> (String, Value) {
    assert_eq!(code(r), "approval_pending", "{r}");
    let a = &r["result"]["structuredContent"]["error"]["details"]["approval"];
    assert_eq!(a["decide_tool"], DECIDE, "{a}");
    (a["id"].as_str().expect("id").to_owned(), a["plan"].clone())
}

/// `name version build channel` of a package list (the card's, or the
/// stand-in's transaction record with conda's keys), sorted.
pub(crate) fn rows_of(list: &Value) -> Vec<String> {
    rows(list)
}

fn rows(list: &Value) -> Vec<String> {
    let mut v: Vec<String> = list
        .as_array()
        .expect("list")
        .iter()
        .map(|p| {
            let build = p
                .get("build")
                .or_else(|| p.get("build_string"))
                .and_then(Value::as_str)
                .unwrap_or("");
            format!(
                "{} {} {build} {}",
                p["name"].as_str().unwrap_or(""),
                p["version"].as_str().unwrap_or(""),
                p["channel"].as_str().unwrap_or("")
            )
        })
        .collect();
    v.sort();
    v
}

/// conda's own dry run of the call, run by the test itself: its `LINK`.
pub(crate) fn dry_run_link(standin: &StandinPrefix, name: &str) -> Vec<String> {
    let out = std::process::Command::new(&standin.conda_exe)
        .args(["create", "zlib=1.3", "--name", name, "--json", "--dry-run"])
        .env_remove("CONDA_EXE")
        .output()
        .expect("run the stand-in");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "dry run: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    rows(&doc["actions"]["LINK"])
}

fn creates(standin: &StandinPrefix) -> (usize, usize) {
    let c: Vec<Vec<String>> = runs(standin)
        .into_iter()
        .filter(|a| a.first().is_some_and(|c| c == "create"))
        .collect();
    let dry = c
        .iter()
        .filter(|a| a.iter().any(|x| x == "--dry-run"))
        .count();
    (dry, c.len() - dry)
}

/// The whole card flow over stdio: the listing with and without the
/// extension, the view, the card equal to conda's dry run, decline,
/// approve applying exactly the plan shown, and ids refused when used
/// twice or expired.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_card_shows_conda_plan_and_applies_exactly_it_once() {
    let standin = transaction_standin();
    let exe = &standin.conda_exe;

    // A client without the extension: today's list and answer.
    let mut plain = RawClient::start(exe, &["--approve-writes"]).await;
    let listed = tools(&mut plain).await;
    assert!(listed.iter().all(|t| t["name"] != DECIDE), "hidden");
    assert!(
        listed.iter().all(|t| t["_meta"].get("ui").is_none()),
        "no _meta.ui without the extension"
    );
    let r = call(&mut plain, "c0", "conda_create", create_args("demo")).await;
    assert_eq!(code(&r), "approval_unavailable", "{r}");
    let r = call(
        &mut plain,
        "d0",
        DECIDE,
        json!({"id": "x", "decision": "approve"}),
    )
    .await;
    assert_eq!(r["error"]["code"], -32602, "an unknown tool: {r}");
    plain.close().await;

    // An MCP Apps client.
    let mut c =
        RawClient::start_with_capabilities(exe, &["--approve-writes"], ui_capabilities()).await;
    let listed = tools(&mut c).await;
    let decide = listed.iter().find(|t| t["name"] == DECIDE).expect("listed");
    assert_eq!(
        decide["_meta"]["ui"]["visibility"],
        json!(["app"]),
        "{decide}"
    );
    let create = listed
        .iter()
        .find(|t| t["name"] == "conda_create")
        .expect("conda_create");
    assert_eq!(create["_meta"]["ui"]["resourceUri"], VIEW, "{create}");
    let info = listed
        .iter()
        .find(|t| t["name"] == "conda_info")
        .expect("info");
    assert!(
        info["_meta"].get("ui").is_none(),
        "read-only tools show no card: {info}"
    );
    let (res, _) = c
        .request("r", "resources/read", json!({"uri": VIEW}), WAIT)
        .await;
    let view = &res["result"]["contents"][0];
    assert_eq!(view["mimeType"], "text/html;profile=mcp-app", "{res}");
    assert_eq!(view["_meta"]["ui"]["csp"]["connectDomains"], json!([]));
    assert!(
        view["text"]
            .as_str()
            .expect("html")
            .starts_with("<!DOCTYPE html>")
    );

    // The card: conda's dry run, nothing changed.
    let env = env_prefix(&standin, "demo");
    let r = call(&mut c, "c1", "conda_create", create_args("demo")).await;
    let (id, plan) = card(&r);
    assert_eq!(
        r["result"]["isError"], false,
        "hosts hide a view of an error result: {r}"
    );
    let text = r["result"]["content"][0]["text"].as_str().expect("text");
    assert!(
        text.contains("a person must approve or decline this change in the approval card")
            && text.contains("nothing has changed yet"),
        "{text}"
    );
    assert_eq!(
        plan["command"],
        "conda create zlib=1.3 --name demo --json --yes"
    );
    assert_eq!(plan["environment"], env.display().to_string());
    assert_eq!(rows(&plan["link"]), dry_run_link(&standin, "demo"));
    assert!(!env.exists(), "nothing applied");
    // The plain client's dry run, the card's, and the test's own.
    assert_eq!(
        creates(&standin),
        (3, 0),
        "the card's one dry run, no apply"
    );

    // Decline: nothing changes, and the id is spent.
    let r = call(
        &mut c,
        "d1",
        DECIDE,
        json!({"id": id, "decision": "decline"}),
    )
    .await;
    assert_eq!(code(&r), "declined", "{r}");
    let r = call(
        &mut c,
        "d2",
        DECIDE,
        json!({"id": id, "decision": "approve"}),
    )
    .await;
    assert_eq!(code(&r), "approval_invalid", "{r}");
    assert!(!env.exists());
    assert_eq!(creates(&standin), (3, 0));

    // Approve: re-planned, applied exactly as shown, once.
    let r = call(&mut c, "c2", "conda_create", create_args("demo")).await;
    let (id, plan) = card(&r);
    let r = call(
        &mut c,
        "d3",
        DECIDE,
        json!({"id": id, "decision": "approve"}),
    )
    .await;
    // Accepted at once, not an error; the card follows it.
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert!(matches!(state(&r), "deciding" | "applying"), "{r}");
    assert_eq!(
        r["result"]["structuredContent"]["approval"]["status_tool"],
        STATUS
    );
    let r = followed(&mut c, &id).await;
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(r["result"]["structuredContent"]["exit_code"], 0, "{r}");
    let applied: Value = serde_json::from_slice(
        &std::fs::read(env.join("conda-meta").join("standin-transaction.json")).expect("applied"),
    )
    .expect("json");
    assert_eq!(
        rows(&applied["link"]),
        rows(&plan["link"]),
        "applied = shown"
    );
    assert_eq!(
        creates(&standin),
        (5, 1),
        "the new card's dry run, the re-plan, one apply"
    );
    let r = call(
        &mut c,
        "d4",
        DECIDE,
        json!({"id": id, "decision": "approve"}),
    )
    .await;
    assert_eq!(code(&r), "approval_invalid", "never twice: {r}");
    assert_eq!(creates(&standin), (5, 1));
    // The applied result stays readable for the card.
    let r = call(&mut c, "s-again", STATUS, json!({"id": id})).await;
    assert_eq!(r["result"]["structuredContent"]["exit_code"], 0, "{r}");

    // Arguments the schema refuses are named by path, not echoed.
    let r = call(
        &mut c,
        "d5",
        DECIDE,
        json!({"id": id, "decision": "approve", "tool": "conda_remove"}),
    )
    .await;
    assert_eq!(code(&r), "invalid_arguments", "{r}");
    assert!(!r.to_string().contains("conda_remove"), "{r}");
    c.close().await;

    // An id expires with --timeout.
    let mut c = RawClient::start_with_capabilities(
        exe,
        &["--approve-writes", "--timeout", "3"],
        ui_capabilities(),
    )
    .await;
    let r = call(&mut c, "c3", "conda_create", create_args("late")).await;
    let (id, _) = card(&r);
    assert_eq!(
        r["result"]["structuredContent"]["error"]["details"]["approval"]["expires_in_seconds"],
        3
    );
    tokio::time::sleep(Duration::from_millis(3200)).await;
    let r = call(
        &mut c,
        "d6",
        DECIDE,
        json!({"id": id, "decision": "approve"}),
    )
    .await;
    assert_eq!(code(&r), "approval_invalid", "{r}");
    let message = r["result"]["structuredContent"]["error"]["message"]
        .as_str()
        .unwrap_or("");
    assert!(message.contains("expired"), "{message}");
    assert!(!env_prefix(&standin, "late").exists());
    c.close().await;
}

/// Over HTTP, an id is bound to the principal it was shown to: another
/// principal's decision is refused and does not spend it; the owner's
/// still applies. A principal whose client lacks the extension is never
/// listed the decision tool.
#[test]
fn another_principal_cannot_decide_a_card() {
    let standin = transaction_standin();
    let dir = tempdir();
    let file = dir.path().join("tokens");
    let (alice, bob) = ("cmcp_apps_alice_0123456789", "cmcp_apps_bob_0123456789ab");
    std::fs::write(
        &file,
        [file_line("alice", alice, None), file_line("bob", bob, None)].join("\n"),
    )
    .expect("token file");
    let server = HttpServer::start_in(
        dir,
        &standin.conda_exe,
        &[
            "--auth-tokens",
            file.to_str().expect("utf-8"),
            "--approve-writes",
        ],
    );
    let call = |token: &str, caps: Value, tool: &str, args: Value| -> Value {
        post_stateless(
            server.addr,
            token,
            "tools/call",
            Some(tool),
            json!({"name": tool, "arguments": args, "_meta": stateless_meta(caps)}),
        )
    };
    let list = |caps: Value| -> Vec<String> {
        let r = post_stateless(
            server.addr,
            bob,
            "tools/list",
            None,
            json!({"_meta": stateless_meta(caps)}),
        );
        r["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|t| t["name"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    assert!(!list(json!({})).iter().any(|n| n == DECIDE));
    assert!(list(ui_capabilities()).iter().any(|n| n == DECIDE));

    let env = env_prefix(&standin, "demo");
    let r = call(
        alice,
        ui_capabilities(),
        "conda_create",
        create_args("demo"),
    );
    let (id, _) = card(&r);
    let decide = json!({"id": id, "decision": "approve"});
    let r = call(bob, ui_capabilities(), DECIDE, decide.clone());
    assert_eq!(
        code(&r),
        "approval_invalid",
        "{r}\n{}",
        server.stderr_text()
    );
    assert!(!env.exists());
    let status = json!({"id": id});
    let r = call(bob, ui_capabilities(), STATUS, status.clone());
    assert_eq!(code(&r), "approval_invalid", "bob cannot follow it: {r}");
    let r = call(alice, ui_capabilities(), DECIDE, decide);
    assert_eq!(
        r["result"]["isError"],
        false,
        "{r}\n{}",
        server.stderr_text()
    );
    let r = loop {
        let r = call(alice, ui_capabilities(), STATUS, status.clone());
        if !matches!(state(&r), "deciding" | "applying") {
            break r;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(r["result"]["structuredContent"]["exit_code"], 0, "{r}");
    assert!(
        env.join("conda-meta")
            .join("standin-transaction.json")
            .exists()
    );
}
