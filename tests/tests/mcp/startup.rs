//! How a host starts the built server, over raw JSON-RPC on stdio: early
//! notifications before the session is open, in both protocol eras.

use std::time::Duration;

use conda_mcp_tests::rawrpc::RawClient;
use conda_mcp_tests::standin::StandinPrefix;
use serde_json::{Value, json};

const WAIT: Duration = Duration::from_secs(60);

/// `_meta` of a request in the stateless 2026-07-28 lifecycle.
fn stateless_meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "conda-mcp-raw-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
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
    c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    c.send(json!({"jsonrpc": "2.0", "id": "list", "method": "tools/list"}))
        .await;
    let (list, _) = c.response("list", WAIT).await;
    assert!(
        list["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{list}"
    );
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
        "params": {"_meta": stateless_meta()}
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
        "params": {"_meta": stateless_meta()}
    }))
    .await;
    let (list, _) = c.response("list", WAIT).await;
    assert!(
        list["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{list}"
    );
    c.close().await;
}
