//! Sessions of the `initialize` era over HTTP: the 2025-11-25 Streamable
//! HTTP transport's `Mcp-Session-Id`, for the hosts that can only be asked
//! through one (docs/approval.md "Over HTTP").
//!
//! Why a layer of conda-mcp's own beside rmcp's services, and not rmcp's
//! session mode switched on for everything: rmcp 3.11's session mode answers
//! every sessionless `initialize`-era request other than `initialize` with
//! 400, keeps any number of sessions, and routes a request by its
//! `Mcp-Session-Id` alone, whoever sends it. So `/mcp` is served by
//! [`dispatch`], which picks one of two rmcp services per request:
//!
//! * a POST `initialize` whose client declares what only a session can
//!   serve (elicitation, or the MCP Apps extension: the approval form and
//!   the approval card, [`opens_session`]) goes to the **session service**
//!   (rmcp's `LocalSessionManager`): it answers with an `Mcp-Session-Id`,
//!   which is recorded here with the principal the gate found
//!   ([`crate::principal::Principal`], by name);
//! * a request carrying `Mcp-Session-Id` (POST, GET for the standalone
//!   stream, DELETE to end it) goes there too, but only when its principal
//!   is the one that opened the session; any other, and an id that is not
//!   open, gets 404 with rmcp's own "Session not found" text, so an id
//!   reveals nothing about whether it exists;
//! * everything else (every other `initialize`, every sessionless request
//!   of either protocol era) goes to the **stateless service**, as before:
//!   a client that ignores the returned id keeps working, as it did.
//!
//! In a session, rmcp keeps what the client declared in `initialize`
//! (`peer_info`) and sends `elicitation/create` on the request's SSE
//! stream, so the handler's existing choice between the form, the card and
//! the refusal (`crate::mcp::consent`) sees the host as over stdio.
//!
//! **The bound.** At most [`SessionSettings::max`] sessions are open at
//! once (`--max-sessions`). A session is idle while none of its POSTs is in
//! flight (a GET stream carries no call and does not count); one idle for
//! [`SessionSettings::idle_timeout`] (`--session-idle-timeout`) is closed
//! ([`Sessions::reap`], run periodically). A new session at the bound
//! closes the least recently used idle session of the same principal, else
//! the least recently used idle session of anyone (whose next request gets
//! 404, after which the 2025-11-25 transport has its client start a new
//! session); when every open session has a call in flight, the new one is
//! refused with 503 and `Retry-After` ([`full_response`]). An approval
//! card's id is bound to the principal, not the session, so a session
//! closed under a card does not lose it: the person decides from the next.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, Method, StatusCode, header};
use http_body_util::BodyExt;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest};
use rmcp::transport::streamable_http_server::StreamableHttpService;
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use tokio::time::Instant;

use crate::mcp::CondaMcp;
pub use crate::mcp::SESSION_HEADER;
use crate::principal::Principal;

/// The body of the 404 for a session that is not open or not the
/// requester's: rmcp's own for an unknown id, so the two cannot be told
/// apart.
pub const NOT_FOUND_TEXT: &str = "Not Found: Session not found";

/// `Retry-After` of the 503 for a full session table, in seconds.
pub const RETRY_AFTER_SECONDS: u32 = 5;

/// `--max-sessions` and `--session-idle-timeout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionSettings {
    /// Most sessions open at once (at least 1).
    pub max: usize,
    /// A session with no POST in flight for this long is closed.
    pub idle_timeout: Duration,
}

/// One open session.
#[derive(Debug)]
struct Open {
    /// The name of the principal that opened it.
    owner: String,
    /// When its last request arrived or ended.
    last_seen: Instant,
    /// Its POSTs whose answers are still streaming.
    in_flight: Arc<AtomicUsize>,
}

#[derive(Debug, Default)]
struct Table {
    open: HashMap<String, Open>,
    /// Sessions admitted whose `initialize` is still being answered.
    reserved: usize,
}

/// The open sessions, who opened each, and the bound.
#[derive(Debug)]
pub struct Sessions {
    manager: Arc<LocalSessionManager>,
    table: Mutex<Table>,
    settings: SessionSettings,
}

/// Why a new session is refused: every open one has a call in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("every HTTP session has a call in flight (--max-sessions {0})")]
pub struct SessionsFull(pub usize);

/// A place in the table for one session being opened; given back when
/// dropped unless [`Slot::fill`]ed.
#[derive(Debug)]
struct Slot<'a> {
    sessions: &'a Sessions,
    filled: bool,
}

impl Slot<'_> {
    /// Records session `id` as `owner`'s.
    fn fill(mut self, id: String, owner: String) {
        let mut t = self.sessions.lock();
        t.reserved -= 1;
        t.open.insert(
            id,
            Open {
                owner,
                last_seen: Instant::now(),
                in_flight: Arc::default(),
            },
        );
        self.filled = true;
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if !self.filled {
            self.sessions.lock().reserved -= 1;
        }
    }
}

/// Counts one POST of a session in flight until dropped (when its answer
/// has been sent, or abandoned), then marks the session seen.
#[derive(Debug)]
struct InFlight {
    count: Arc<AtomicUsize>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.count.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Sessions {
    /// An empty table over `manager` (the session service's).
    pub fn new(manager: Arc<LocalSessionManager>, settings: SessionSettings) -> Self {
        Self {
            manager,
            table: Mutex::default(),
            settings,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many sessions are open (or being opened).
    pub fn len(&self) -> usize {
        let t = self.lock();
        t.open.len() + t.reserved
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The in-flight counter of session `id` when `principal` opened it,
    /// marking it seen; `None` for an id that is not open or is another
    /// principal's (the same answer for both).
    fn owned(&self, id: &str, principal: &str) -> Option<Arc<AtomicUsize>> {
        let mut t = self.lock();
        let open = t.open.get_mut(id).filter(|o| o.owner == principal)?;
        open.last_seen = Instant::now();
        Some(open.in_flight.clone())
    }

    /// Marks session `id` seen (an answer just ended).
    fn seen(&self, id: &str) {
        if let Some(o) = self.lock().open.get_mut(id) {
            o.last_seen = Instant::now();
        }
    }

    /// Forgets session `id` (ended by its client, or gone from rmcp).
    fn forget(&self, id: &str) {
        self.lock().open.remove(id);
    }

    /// A place for a new session of `principal`: free, or made by closing
    /// the least recently used idle session (the principal's own first).
    ///
    /// Errors: [`SessionsFull`] when every open session has a POST in
    /// flight.
    async fn admit(&self, principal: &str) -> Result<Slot<'_>, SessionsFull> {
        let evicted = {
            let mut t = self.lock();
            let evicted = if t.open.len() + t.reserved < self.settings.max {
                None
            } else {
                let idle = |o: &&Open| o.in_flight.load(Ordering::SeqCst) == 0;
                let oldest = |own: bool| {
                    t.open
                        .iter()
                        .filter(|(_, o)| !own || o.owner == principal)
                        .filter(|(_, o)| idle(o))
                        .min_by_key(|(_, o)| o.last_seen)
                        .map(|(id, _)| id.clone())
                };
                let Some(id) = oldest(true).or_else(|| oldest(false)) else {
                    return Err(SessionsFull(self.settings.max));
                };
                t.open.remove(&id);
                Some(id)
            };
            t.reserved += 1;
            evicted
        };
        if let Some(id) = evicted {
            tracing::info!(
                max_sessions = self.settings.max,
                "session table full: closing the least recently used idle session"
            );
            self.close(&id).await;
        }
        Ok(Slot {
            sessions: self,
            filled: false,
        })
    }

    /// Closes rmcp's session `id` (its worker ends, its streams close).
    async fn close(&self, id: &str) {
        if let Err(e) = self.manager.close_session(&id.to_owned().into()).await {
            tracing::warn!("cannot close an HTTP session: {e}");
        }
    }

    /// Closes the sessions idle for `--session-idle-timeout` and forgets
    /// those rmcp has already ended (its own keep-alive, a cancelled
    /// server). Returns how many were closed.
    pub async fn reap(&self) -> usize {
        let snapshot_at = Instant::now();
        let live: std::collections::HashSet<String> = self
            .manager
            .sessions
            .read()
            .await
            .keys()
            .map(|k| k.to_string())
            .collect();
        let now = Instant::now();
        let expired: Vec<String> = {
            let mut t = self.lock();
            // A session opened after the snapshot is not in it, but live.
            t.open
                .retain(|id, o| live.contains(id) || o.last_seen >= snapshot_at);
            let expired: Vec<String> = t
                .open
                .iter()
                .filter(|(_, o)| {
                    o.in_flight.load(Ordering::SeqCst) == 0
                        && now.saturating_duration_since(o.last_seen) >= self.settings.idle_timeout
                })
                .map(|(id, _)| id.clone())
                .collect();
            for id in &expired {
                t.open.remove(id);
            }
            expired
        };
        for id in &expired {
            self.close(id).await;
        }
        expired.len()
    }

    /// Runs [`Sessions::reap`] every quarter of the idle timeout (between
    /// 1 and 60 seconds) until `stop` is cancelled.
    pub fn spawn_reaper(self: &Arc<Self>, stop: tokio_util::sync::CancellationToken) {
        let every =
            (self.settings.idle_timeout / 4).clamp(Duration::from_secs(1), Duration::from_secs(60));
        let sessions = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    () = stop.cancelled() => return,
                }
                let Some(s) = sessions.upgrade() else { return };
                let closed = s.reap().await;
                if closed > 0 {
                    tracing::info!(closed, open = s.len(), "closed idle HTTP sessions");
                }
            }
        });
    }
}

/// Whether `body` is an `initialize` request whose client declares what
/// only a session can serve it: the elicitation capability (the approval
/// form) or the MCP Apps extension (the approval card,
/// [`crate::mcp::apps::declares_ui`]).
pub fn opens_session(body: &[u8]) -> bool {
    let Ok(ClientJsonRpcMessage::Request(r)) = serde_json::from_slice::<ClientJsonRpcMessage>(body)
    else {
        return false;
    };
    let ClientRequest::InitializeRequest(init) = &r.request else {
        return false;
    };
    let caps = &init.params.capabilities;
    caps.elicitation.is_some() || crate::mcp::apps::declares_ui(caps)
}

/// What `/mcp` routes to ([`dispatch`]).
#[derive(Clone)]
pub struct Mcp {
    /// Sessionless requests, both protocol eras.
    pub stateless: StreamableHttpService<CondaMcp, NeverSessionManager>,
    /// Sessions (`Mcp-Session-Id`).
    pub sessionful: StreamableHttpService<CondaMcp, LocalSessionManager>,
    /// Who opened which session, and the bound.
    pub sessions: Arc<Sessions>,
    /// Most bytes of a request body (the gate has already refused more).
    pub max_body_bytes: usize,
}

impl std::fmt::Debug for Mcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mcp")
            .field("sessions", &self.sessions)
            .finish_non_exhaustive()
    }
}

/// The `/mcp` route behind the gate: to the session service or the
/// stateless one, as the module docs say.
pub async fn dispatch(State(mcp): State<Arc<Mcp>>, req: Request) -> Response {
    let principal = req
        .extensions()
        .get::<Principal>()
        .map(|p| p.name.clone())
        .unwrap_or_else(|| crate::principal::LOCAL.to_owned());
    let id = req
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if let Some(id) = id {
        return in_session(&mcp, req, id, &principal).await;
    }
    if req.method() != Method::POST {
        return boxed(mcp.stateless.handle(req).await);
    }
    let (parts, body) = req.into_parts();
    let bytes = match axum::body::to_bytes(body, mcp.max_body_bytes).await {
        Ok(b) => b,
        Err(_) => {
            return plain(
                StatusCode::BAD_REQUEST,
                "the request body could not be read",
            );
        }
    };
    if !opens_session(&bytes) {
        let req = Request::from_parts(parts, Body::from(bytes));
        return boxed(mcp.stateless.handle(req).await);
    }
    let slot = match mcp.sessions.admit(&principal).await {
        Ok(s) => s,
        Err(full) => return full_response(full),
    };
    let response = mcp
        .sessionful
        .handle(Request::from_parts(parts, Body::from(bytes)))
        .await;
    if let Some(id) = response
        .headers()
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
    {
        slot.fill(id.to_owned(), principal);
    }
    boxed(response)
}

/// A request naming session `id`: served when `principal` opened it, else
/// 404.
async fn in_session(mcp: &Arc<Mcp>, req: Request, id: String, principal: &str) -> Response {
    let Some(count) = mcp.sessions.owned(&id, principal) else {
        return not_found();
    };
    let session_id = id.clone().into();
    if !mcp
        .sessions
        .manager
        .has_session(&session_id)
        .await
        .unwrap_or(false)
    {
        mcp.sessions.forget(&id);
        return not_found();
    }
    let method = req.method().clone();
    let counted = (method == Method::POST).then(|| {
        count.fetch_add(1, Ordering::SeqCst);
        InFlight { count }
    });
    let response = boxed(mcp.sessionful.handle(req).await);
    if method == Method::DELETE && response.status().is_success() {
        mcp.sessions.forget(&id);
        return response;
    }
    let Some(counted) = counted else {
        return response;
    };
    // The POST stays in flight until its answer has been sent (or
    // abandoned): the body holds the counter and marks the session seen
    // when it goes.
    let (parts, body) = response.into_parts();
    let sessions = Arc::downgrade(&mcp.sessions);
    let done = Done {
        _counted: counted,
        sessions,
        id,
    };
    let body = body.map_frame(move |f| {
        let _ = &done;
        f
    });
    Response::from_parts(parts, Body::new(body))
}

/// Held by a session POST's answer: ends the count and marks the session
/// seen when the answer is dropped.
struct Done {
    _counted: InFlight,
    sessions: std::sync::Weak<Sessions>,
    id: String,
}

impl Drop for Done {
    fn drop(&mut self) {
        if let Some(s) = self.sessions.upgrade() {
            s.seen(&self.id);
        }
    }
}

fn boxed(
    r: http::Response<http_body_util::combinators::BoxBody<Bytes, std::convert::Infallible>>,
) -> Response {
    r.map(Body::new)
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

/// 404 for a session that is not open or not the requester's.
fn not_found() -> Response {
    plain(StatusCode::NOT_FOUND, NOT_FOUND_TEXT)
}

/// 503 with `Retry-After` for a full table whose sessions all have a call
/// in flight.
fn full_response(full: SessionsFull) -> Response {
    let text =
        format!("{full}: retry later (or use the 2026-07-28 lifecycle, which needs no session)");
    let mut r = Response::new(Body::from(text));
    *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECONDS));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(max: usize) -> SessionSettings {
        SessionSettings {
            max,
            idle_timeout: Duration::from_secs(60),
        }
    }

    fn table(max: usize) -> Sessions {
        Sessions::new(Arc::new(LocalSessionManager::default()), settings(max))
    }

    #[test]
    fn only_an_initialize_declaring_elicitation_or_the_ui_extension_opens_a_session() {
        let init = |caps: serde_json::Value| {
            serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": caps,
                "clientInfo": {"name": "t", "version": "1"}}})
            .to_string()
        };
        assert!(opens_session(
            init(serde_json::json!({"elicitation": {}})).as_bytes()
        ));
        assert!(opens_session(
            init(
                serde_json::json!({"extensions": {"io.modelcontextprotocol/ui":
                {"mimeTypes": ["text/html;profile=mcp-app"]}}})
            )
            .as_bytes()
        ));
        assert!(!opens_session(init(serde_json::json!({})).as_bytes()));
        assert!(!opens_session(
            init(serde_json::json!({"roots": {"listChanged": true}})).as_bytes()
        ));
        let list = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
        assert!(!opens_session(list.to_string().as_bytes()));
        assert!(!opens_session(b"not json"));
    }

    #[tokio::test]
    async fn a_session_answers_only_its_own_principal() {
        let s = table(4);
        s.admit("alice")
            .await
            .expect("room")
            .fill("s1".into(), "alice".into());
        assert!(s.owned("s1", "alice").is_some());
        assert!(s.owned("s1", "bob").is_none());
        assert!(s.owned("s2", "alice").is_none());
    }

    #[tokio::test]
    async fn at_the_bound_the_principals_own_idle_session_goes_first() {
        let s = table(2);
        s.admit("alice")
            .await
            .expect("room")
            .fill("a1".into(), "alice".into());
        s.admit("bob")
            .await
            .expect("room")
            .fill("b1".into(), "bob".into());
        // Bob's is the older of the two now.
        s.lock().open.get_mut("b1").expect("b1").last_seen -= Duration::from_secs(10);
        s.admit("alice")
            .await
            .expect("room")
            .fill("a2".into(), "alice".into());
        assert_eq!(s.len(), 2);
        assert!(s.owned("a1", "alice").is_none(), "alice's own went first");
        assert!(s.owned("b1", "bob").is_some());
        assert!(s.owned("a2", "alice").is_some());
    }

    #[tokio::test]
    async fn a_full_table_of_busy_sessions_refuses_and_an_unfilled_slot_is_given_back() {
        let s = table(1);
        s.admit("alice")
            .await
            .expect("room")
            .fill("a1".into(), "alice".into());
        let count = s.owned("a1", "alice").expect("hers");
        count.fetch_add(1, Ordering::SeqCst);
        let busy = InFlight { count };
        assert_eq!(s.admit("bob").await.err(), Some(SessionsFull(1)));
        drop(busy);
        let slot = s.admit("bob").await.expect("the idle one is closed");
        assert_eq!(s.len(), 1);
        drop(slot);
        assert!(s.is_empty());
    }
}
