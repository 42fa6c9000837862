//! What every HTTP request passes before it reaches the MCP service, and
//! its log line:
//!
//! 1. a token in the URL query is refused (400, `error="invalid_request"`:
//!    URLs end up in logs and histories; RFC 6750 §2.3 leaves it optional);
//! 2. authentication with `--auth-tokens` and/or `--oauth-issuer`:
//!    `Authorization: Bearer TOKEN` (RFC 6750 §2.1). A token that matches a
//!    line of the token file is that principal; otherwise, with OAuth, it
//!    is validated as an access token ([`super::oauth`]). Else 401 with
//!    `WWW-Authenticate: Bearer realm="conda-mcp"`, with OAuth also
//!    `resource_metadata="…"` (RFC 9728 §5.1, what MCP clients follow to
//!    the authorization server), and `error="invalid_token"` for a token
//!    that is refused (RFC 6750 §3.1). The principal found travels in the
//!    request's extensions to the MCP handler; without authentication it
//!    is [`Principal::local`]. The token itself goes nowhere else;
//! 3. a principal mapped to an OS user whose worker cannot be had (every
//!    one of `--max-workers` is busy) gets 503 with `Retry-After`;
//! 4. the body limit: a `Content-Length` or a body past it is 413, read
//!    no further;
//! 5. a POST body that is no JSON-RPC message is answered here as on stdio
//!    (`crate::transport::undecodable`): 400 with the JSON-RPC Parse error
//!    (not JSON) or Invalid Request error (JSON that cannot be decoded, a
//!    batch, an object that is no message) and the request's id when it
//!    can be read (MCP's Streamable HTTP transport: input the server
//!    cannot accept gets an HTTP error status, its body may be a JSON-RPC
//!    error without id). rmcp would answer it 415 with serde's error.
//!    A GET or DELETE (a session's stream or its end,
//!    [`super::sessions`]) has no body and passes on as it is; a GET
//!    stream is not counted in flight (the drain does not wait for it);
//! 6. the request deadline (`--request-timeout`): past it before the
//!    answer starts, 504; past it while the answer streams, the stream
//!    ends with an error. Either way the request's future is dropped, which
//!    cancels its call (rmcp cancels a stateless request whose response is
//!    dropped), and the worker kills its process tree.
//!
//! Host and Origin are checked by rmcp's service behind this gate
//! (`--allowed-hosts`, `--allowed-origins`; 403).
//!
//! The log line, one per request, written when its answer has been sent
//! (or abandoned): the principal's name (never the token), the MCP method,
//! tool and id under the rules of the stdio log
//! ([`crate::transport::request_log`]), the HTTP status, the duration in
//! milliseconds and the outcome: `answered`; for a `tools/call`,
//! `tool_error` (a result with `isError`) or `error` (a JSON-RPC error, with
//! its `code`), as the stdio log says them, from the handler's
//! [`CallNote`]; `refused`, `timeout`, `disconnected`.

use std::future::Future as _;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use http_body::Frame;
use http_body_util::BodyExt;
use rmcp::RoleServer;
use rmcp::model::{ClientRequest, JsonRpcMessage};
use rmcp::service::RxJsonRpcMessage;

use super::oauth::OAuth;
use super::tokens::TokenTable;
use crate::mcp::{CallNote, Noted};
use crate::principal::Principal;
use crate::transport::request_log::{id_text, name_or_invalid};
use crate::transport::undecodable::{self, UndecodableResponse};

/// The `realm` of every challenge.
pub const REALM: &str = "conda-mcp";

/// Query parameter names that carry a token (RFC 6750 §2.3 and common
/// variants): a request with one is refused.
const TOKEN_PARAMS: &[&str] = &["access_token", "token", "auth", "bearer"];

/// What the gate knows.
#[derive(Debug)]
pub struct Gate {
    /// `--auth-tokens`.
    pub tokens: Option<TokenTable>,
    /// `--oauth-issuer` and its companions. Without it and without
    /// [`Gate::tokens`], every request is [`Principal::local`].
    pub oauth: Option<OAuth>,
    /// Most bytes of a request body.
    pub max_body_bytes: usize,
    /// `--request-timeout`.
    pub request_timeout: Duration,
    /// The per-user workers, when principals map to OS users (set once
    /// startup has made them): a request whose user would find no worker
    /// (all `--max-workers` busy) is 503.
    pub workers: Arc<std::sync::OnceLock<Arc<crate::worker_client::Workers>>>,
    /// The request counters of `/metrics`.
    pub metrics: Arc<crate::metrics::Metrics>,
    /// Draining: new MCP requests are 503.
    pub health: Arc<crate::health::Health>,
}

/// `Retry-After` of a 503 for a full worker pool, in seconds.
pub const RETRY_AFTER_SECONDS: u32 = 5;

/// What the log line says of one request.
#[derive(Debug, Default)]
struct Described {
    principal: String,
    method: String,
    tool: String,
    id: String,
    /// What the handler said of a `tools/call`'s answer.
    note: CallNote,
    /// Counted in flight until the log line is written (the drain waits).
    in_flight: Option<crate::health::InFlight>,
}

/// The axum middleware (`axum::middleware::from_fn_with_state`).
pub async fn gate(State(gate): State<Arc<Gate>>, req: Request, next: Next) -> Response {
    let since = Instant::now();
    let deadline = tokio::time::Instant::now() + gate.request_timeout;
    let mut described = Described {
        principal: "-".into(),
        ..Described::default()
    };
    let (mut parts, body) = req.into_parts();
    if query_has_token(parts.uri.query()) {
        let r = gate.challenge(
            StatusCode::BAD_REQUEST,
            Some("invalid_request"),
            "a token in the URL query is refused: send it in the Authorization header",
        );
        return gate.finish(r, described, since, deadline);
    }
    let principal = if gate.tokens.is_none() && gate.oauth.is_none() {
        Principal::local()
    } else {
        match bearer(&parts.headers) {
            Bearer::Missing => {
                let r = gate.challenge(
                    StatusCode::UNAUTHORIZED,
                    None,
                    "authentication required: Authorization: Bearer TOKEN",
                );
                return gate.finish(r, described, since, deadline);
            }
            Bearer::Malformed => {
                let r = gate.challenge(
                    StatusCode::UNAUTHORIZED,
                    Some("invalid_request"),
                    "the Authorization header is not a Bearer token",
                );
                return gate.finish(r, described, since, deadline);
            }
            Bearer::Token(t) => match gate.authenticate(&t).await {
                Some(p) => p,
                None => {
                    let r = gate.challenge(
                        StatusCode::UNAUTHORIZED,
                        Some("invalid_token"),
                        "the token is not valid",
                    );
                    return gate.finish(r, described, since, deadline);
                }
            },
        }
    };
    described.principal = principal.name.clone();
    if parts.uri.path() == super::ops::METRICS_PATH {
        // A scrape: authenticated, no JSON-RPC body, no request counter.
        parts.extensions.insert(principal);
        let r = next.run(Request::from_parts(parts, body)).await;
        described.method = "(metrics)".into();
        return finish(r, described, since, deadline, None);
    }
    if gate.health.is_draining() {
        let mut r = plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is stopping: retry with another instance",
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
        return gate.finish(r, described, since, deadline);
    }
    if let (Some(workers), Some(user)) = (gate.workers.get(), &principal.os_user)
        && !workers.would_admit(user)
    {
        let mut r = plain(
            StatusCode::SERVICE_UNAVAILABLE,
            "every per-user worker is busy (--max-workers): retry later",
        );
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
        return gate.finish(r, described, since, deadline);
    }
    parts.extensions.insert(principal);
    parts.extensions.insert(described.note.clone());
    if parts.method != http::Method::POST {
        // No JSON-RPC body: a session's standalone stream (GET) or its end
        // (DELETE), or a method `/mcp` answers 405 ([`super::sessions`]).
        // A GET stream carries no call, so the drain does not wait for it.
        described.method = match parts.method {
            http::Method::GET => "(stream)".into(),
            http::Method::DELETE => "(end session)".into(),
            _ => "(no body)".into(),
        };
        if parts.method != http::Method::GET {
            described.in_flight = Some(gate.health.enter());
        }
        let req = Request::from_parts(parts, body);
        return match tokio::time::timeout_at(deadline, next.run(req)).await {
            Ok(r) => gate.finish(r, described, since, deadline),
            Err(_) => gate.finish(
                plain(StatusCode::GATEWAY_TIMEOUT, "the request took too long"),
                described,
                since,
                deadline,
            ),
        };
    }
    described.in_flight = Some(gate.health.enter());
    let too_large = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .is_some_and(|n| n > gate.max_body_bytes as u64);
    if too_large {
        return gate.finish(too_large_response(), described, since, deadline);
    }
    let bytes = match read_body(body, gate.max_body_bytes, deadline).await {
        Ok(b) => b,
        Err(r) => return gate.finish(r, described, since, deadline),
    };
    if !describe(&bytes, &mut described) {
        return gate.finish(
            undecodable_response(undecodable::rejection(&bytes), &mut described),
            described,
            since,
            deadline,
        );
    }
    let req = Request::from_parts(parts, Body::from(bytes));
    let response = match tokio::time::timeout_at(deadline, next.run(req)).await {
        Ok(r) => r,
        Err(_) => {
            let r = plain(StatusCode::GATEWAY_TIMEOUT, "the request took too long");
            LogLine {
                described,
                status: r.status().as_u16(),
                since,
                outcome: "timeout",
                metrics: Some(gate.metrics.clone()),
            }
            .write("timeout");
            return r;
        }
    };
    gate.finish(response, described, since, deadline)
}

/// The request body, at most `max` bytes. Errors: the response to send
/// (413 past the limit, 408 past the deadline, 400 for a broken body).
async fn read_body(
    body: Body,
    max: usize,
    deadline: tokio::time::Instant,
) -> Result<Bytes, Response> {
    let limited = http_body_util::Limited::new(body, max);
    match tokio::time::timeout_at(deadline, limited.collect()).await {
        Err(_) => Err(plain(
            StatusCode::REQUEST_TIMEOUT,
            "the request body took too long",
        )),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large_response()),
        Ok(Err(_)) => Err(plain(
            StatusCode::BAD_REQUEST,
            "the request body could not be read",
        )),
    }
}

fn too_large_response() -> Response {
    plain(
        StatusCode::PAYLOAD_TOO_LARGE,
        "the request body is larger than the server accepts",
    )
}

/// The answer to a body that is no JSON-RPC message
/// ([`undecodable::rejection`]): 400 with the JSON-RPC error, carrying the
/// request's id when it can be read; the id goes into the log line.
fn undecodable_response(r: UndecodableResponse, d: &mut Described) -> Response {
    let (id, code, message) = match r {
        UndecodableResponse::Answer { id, code, message } => (id, code, message),
        UndecodableResponse::Notification => (
            serde_json::Value::Null,
            undecodable::CODE,
            undecodable::INVALID_MESSAGE,
        ),
    };
    if let Ok(n) = serde_json::from_value::<rmcp::model::NumberOrString>(id.clone()) {
        d.id = id_text(&n);
    }
    d.method = "(undecodable)".into();
    let body = serde_json::json!({"jsonrpc": "2.0", "id": id,
        "error": {"code": code, "message": message}});
    let mut r = Response::new(Body::from(body.to_string()));
    *r.status_mut() = StatusCode::BAD_REQUEST;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// The method, tool and id of a JSON-RPC request body, as the log may show
/// them. False when the body is no JSON-RPC message (nothing is set).
fn describe(body: &[u8], d: &mut Described) -> bool {
    let Ok(msg) = serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(body) else {
        return false;
    };
    match &msg {
        JsonRpcMessage::Request(r) => {
            d.method = name_or_invalid(r.request.method());
            d.id = id_text(&r.id);
            if let ClientRequest::CallToolRequest(c) = &r.request {
                d.tool = name_or_invalid(&c.params.name);
            }
        }
        JsonRpcMessage::Notification(_) => {
            d.method = "(notification)".into();
        }
        JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_) => {
            d.method = "(response)".into();
        }
    }
    true
}

/// Whether the query names a token parameter.
fn query_has_token(query: Option<&str>) -> bool {
    query.is_some_and(|q| {
        q.split('&').any(|pair| {
            let name = pair.split('=').next().unwrap_or("");
            TOKEN_PARAMS.iter().any(|t| name.eq_ignore_ascii_case(t))
        })
    })
}

enum Bearer {
    Missing,
    Malformed,
    Token(String),
}

/// The bearer token of the `Authorization` header (scheme
/// case-insensitive, RFC 9110 §11.1).
fn bearer(headers: &http::HeaderMap) -> Bearer {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Bearer::Missing;
    };
    if values.next().is_some() {
        return Bearer::Malformed;
    }
    let Ok(text) = value.to_str() else {
        return Bearer::Malformed;
    };
    match text.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => {
            let token = token.trim();
            if token.is_empty() {
                Bearer::Malformed
            } else {
                Bearer::Token(token.to_owned())
            }
        }
        _ => Bearer::Malformed,
    }
}

impl Gate {
    /// The principal of a bearer token: the token file's line it matches,
    /// else (with OAuth) the access token's; `None`: refused (why is
    /// logged, never the token).
    async fn authenticate(&self, token: &str) -> Option<Principal> {
        if let Some(p) = self.tokens.as_ref().and_then(|t| t.verify(token)) {
            return Some(p.clone());
        }
        let oauth = self.oauth.as_ref()?;
        match oauth.authenticate(token).await {
            Ok(p) => Some(p),
            Err(why) => {
                tracing::info!(reason = %why, "access token refused");
                None
            }
        }
    }

    /// A refusal with the `WWW-Authenticate: Bearer` challenge (RFC 6750
    /// §3), naming the protected-resource metadata with OAuth (RFC 9728
    /// §5.1).
    fn challenge(&self, status: StatusCode, error: Option<&str>, text: &'static str) -> Response {
        let mut value = format!("Bearer realm=\"{REALM}\"");
        if let Some(oauth) = &self.oauth {
            value.push_str(&format!(", resource_metadata=\"{}\"", oauth.metadata_url));
        }
        if let Some(e) = error {
            value.push_str(&format!(", error=\"{e}\""));
        }
        let mut r = plain(status, text);
        if let Ok(v) = HeaderValue::from_str(&value) {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
        r
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    let mut r = Response::new(Body::from(text));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

impl Gate {
    /// [`finish`] counting the request in the metrics.
    fn finish(
        &self,
        response: Response,
        described: Described,
        since: Instant,
        deadline: tokio::time::Instant,
    ) -> Response {
        finish(
            response,
            described,
            since,
            deadline,
            Some(self.metrics.clone()),
        )
    }
}

/// The response with its body bound by the deadline and the log line
/// written when the body ends or is dropped (and, with `metrics`, the
/// request counted by its method and outcome).
fn finish(
    response: Response,
    described: Described,
    since: Instant,
    deadline: tokio::time::Instant,
    metrics: Option<Arc<crate::metrics::Metrics>>,
) -> Response {
    let status = response.status();
    let (parts, body) = response.into_parts();
    let outcome = if status.is_client_error() || status == StatusCode::SERVICE_UNAVAILABLE {
        "refused"
    } else {
        "answered"
    };
    let body = Body::new(Bounded {
        inner: body,
        sleep: Box::pin(tokio::time::sleep_until(deadline)),
        log: Some(LogLine {
            described,
            status: status.as_u16(),
            since,
            outcome,
            metrics,
        }),
    });
    Response::from_parts(parts, body)
}

/// A response body that ends with an error at the deadline and writes the
/// request's log line when it ends or is dropped.
struct Bounded {
    inner: Body,
    sleep: Pin<Box<tokio::time::Sleep>>,
    log: Option<LogLine>,
}

struct LogLine {
    described: Described,
    status: u16,
    since: Instant,
    outcome: &'static str,
    metrics: Option<Arc<crate::metrics::Metrics>>,
}

impl LogLine {
    fn write(self, outcome: &str) {
        let d = &self.described;
        let duration_ms = self.since.elapsed().as_millis() as u64;
        let (outcome, code) = match (outcome, d.note.get()) {
            ("answered", Some(Noted::ToolError)) => ("tool_error", None),
            ("answered", Some(Noted::Error(code))) => ("error", Some(code)),
            _ => (outcome, None),
        };
        if let Some(m) = &self.metrics {
            let method = if d.method.is_empty() {
                "(none)"
            } else {
                &d.method
            };
            m.request(method, outcome, &d.principal);
        }
        match code {
            Some(code) => tracing::info!(
                principal = %d.principal,
                method = %d.method,
                tool = %d.tool,
                id = %d.id,
                status = self.status,
                duration_ms,
                outcome,
                code,
                "request"
            ),
            None => tracing::info!(
                principal = %d.principal,
                method = %d.method,
                tool = %d.tool,
                id = %d.id,
                status = self.status,
                duration_ms,
                outcome,
                "request"
            ),
        }
    }
}

/// The deadline passed while the answer streamed.
#[derive(Debug, thiserror::Error)]
#[error("the request took longer than --request-timeout")]
struct DeadlinePassed;

impl http_body::Body for Bounded {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        if self.sleep.as_mut().poll(cx).is_ready() {
            if let Some(log) = self.log.take() {
                log.write("timeout");
            }
            return Poll::Ready(Some(Err(Box::new(DeadlinePassed))));
        }
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(None) = &polled
            && let Some(log) = self.log.take()
        {
            let outcome = log.outcome;
            log.write(outcome);
        }
        polled.map(|f| f.map(|r| r.map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Bounded {
    fn drop(&mut self) {
        if let Some(log) = self.log.take() {
            // A body of known length is not polled past its last frame.
            let outcome = if http_body::Body::is_end_stream(&self.inner) {
                log.outcome
            } else {
                "disconnected"
            };
            log.write(outcome);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_in_the_query_are_recognised() {
        assert!(query_has_token(Some("access_token=abc")));
        assert!(query_has_token(Some("x=1&Token=abc")));
        assert!(!query_has_token(Some("tokens=1&x=access_token")));
        assert!(!query_has_token(None));
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive_and_strict() {
        let h = |v: &str| {
            let mut m = http::HeaderMap::new();
            m.insert(
                header::AUTHORIZATION,
                HeaderValue::from_str(v).expect("value"),
            );
            bearer(&m)
        };
        assert!(matches!(h("Bearer abc"), Bearer::Token(t) if t == "abc"));
        assert!(matches!(h("bearer  abc "), Bearer::Token(t) if t == "abc"));
        assert!(matches!(h("Basic YWJj"), Bearer::Malformed));
        assert!(matches!(h("Bearer "), Bearer::Malformed));
        assert!(matches!(bearer(&http::HeaderMap::new()), Bearer::Missing));
    }
}
