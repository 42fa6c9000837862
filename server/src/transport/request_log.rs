//! The server's own request log: one line per JSON-RPC request, written
//! when its answer leaves (or when it is cancelled), with the method, the
//! tool (for `tools/call`), the request id, the duration in milliseconds
//! and the outcome:
//!
//! * `ok`: a result;
//! * `tool_error`: a `tools/call` result with `isError` (conda failed, the
//!   arguments were invalid, the policy refused, ...);
//! * `error`: a JSON-RPC error, with its `code`;
//! * `cancelled`: the client cancelled it (`notifications/cancelled`); no
//!   answer is sent.
//!
//! It never logs arguments, results or anything else the client submitted
//! besides the id, the method and the tool name, and those only when they
//! look like names (at most 64 characters of `[A-Za-z0-9_./-]`; an id
//! string is cut to 64 characters): the MCP library's own request logging
//! is filtered out of the log for that reason ([`crate::logging`]).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Instant;

use rmcp::RoleServer;
use rmcp::model::{
    ClientNotification, ClientRequest, JsonRpcMessage, NumberOrString, ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};

/// Longest method, tool name or id written to the log.
const MAX_NAME: usize = 64;

/// Requests awaiting their answer, by id.
#[derive(Debug, Default)]
pub struct RequestLog {
    open: Mutex<HashMap<String, Open>>,
}

#[derive(Debug)]
struct Open {
    method: String,
    tool: Option<String>,
    since: Instant,
}

impl RequestLog {
    /// Notes an incoming message: a request starts its clock, a
    /// cancellation ends it with `cancelled`.
    pub fn received(&self, msg: &RxJsonRpcMessage<RoleServer>) {
        match msg {
            JsonRpcMessage::Request(r) => {
                let tool = match &r.request {
                    ClientRequest::CallToolRequest(c) => Some(name_or_invalid(&c.params.name)),
                    _ => None,
                };
                let open = Open {
                    method: name_or_invalid(r.request.method()),
                    tool,
                    since: Instant::now(),
                };
                self.lock().insert(id_text(&r.id), open);
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification
                    && let Some(id) = &c.params.request_id
                {
                    self.finish(&id_text(id), "cancelled", None);
                }
            }
            JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {}
        }
    }

    /// Notes an outgoing message: a response or error ends its request.
    pub fn sent(&self, msg: &TxJsonRpcMessage<RoleServer>) {
        match msg {
            JsonRpcMessage::Response(r) => {
                let outcome = match &r.result {
                    ServerResult::CallToolResult(c) if c.is_error == Some(true) => "tool_error",
                    _ => "ok",
                };
                self.finish(&id_text(&r.id), outcome, None);
            }
            JsonRpcMessage::Error(e) => {
                if let Some(id) = &e.id {
                    self.finish(&id_text(id), "error", Some(e.error.code.0));
                }
            }
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => {}
        }
    }

    /// How many requests are waiting for their answer.
    pub fn open(&self) -> usize {
        self.lock().len()
    }

    fn finish(&self, id: &str, outcome: &str, code: Option<i32>) {
        let Some(open) = self.lock().remove(id) else {
            return;
        };
        let duration_ms = open.since.elapsed().as_millis() as u64;
        let tool = open.tool.as_deref().unwrap_or("");
        match code {
            Some(code) => tracing::info!(
                method = %open.method, tool, id, duration_ms, outcome, code, "request"
            ),
            None => {
                tracing::info!(method = %open.method, tool, id, duration_ms, outcome, "request")
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Open>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A request id as the log shows it (a string id cut to [`MAX_NAME`]
/// characters).
pub(crate) fn id_text(id: &NumberOrString) -> String {
    match id {
        NumberOrString::Number(n) => n.to_string(),
        NumberOrString::String(s) => s.chars().take(MAX_NAME).collect(),
    }
}

/// A method or tool name when it looks like one, else `(invalid)`.
pub(crate) fn name_or_invalid(name: &str) -> String {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-'));
    if ok {
        name.to_owned()
    } else {
        "(invalid)".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_logged_only_when_they_look_like_names() {
        assert_eq!(name_or_invalid("tools/call"), "tools/call");
        assert_eq!(name_or_invalid("conda_env_list"), "conda_env_list");
        assert_eq!(name_or_invalid("https://a:b@c"), "(invalid)");
        assert_eq!(name_or_invalid("x y"), "(invalid)");
        assert_eq!(name_or_invalid(&"a".repeat(65)), "(invalid)");
        assert_eq!(
            id_text(&NumberOrString::String("z".repeat(100).into())).len(),
            64
        );
    }

    #[test]
    fn a_request_is_open_until_answered_or_cancelled() {
        let log = RequestLog::default();
        let req: RxJsonRpcMessage<RoleServer> = serde_json::from_value(serde_json::json!(
            {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
             "params": {"name": "conda_info", "arguments": {}}}
        ))
        .expect("request");
        log.received(&req);
        log.received(&req);
        assert_eq!(log.open(), 1);
        let cancel: RxJsonRpcMessage<RoleServer> = serde_json::from_value(serde_json::json!(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
        ))
        .expect("cancel");
        log.received(&cancel);
        assert_eq!(log.open(), 0);
        log.received(&req);
        let answer: TxJsonRpcMessage<RoleServer> = serde_json::from_value(serde_json::json!(
            {"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "unknown tool"}}
        ))
        .expect("error");
        log.sent(&answer);
        assert_eq!(log.open(), 0);
    }
}
