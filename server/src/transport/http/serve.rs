//! Binding `--listen`, the router (`/mcp` → [`super::sessions::dispatch`]
//! to rmcp's stateless `StreamableHttpService` or its session service,
//! behind the [`super::gate`]), and the end: on
//! SIGTERM or SIGINT no new connection is accepted, the requests in flight
//! get `--shutdown-grace` to finish, then what still runs is cancelled
//! (the caller then stops the workers, which kill the process trees).

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use super::HttpSettings;
use super::gate::{Gate, gate};
use super::oauth::metadata::WELL_KNOWN;
use super::oauth::{OAuth, OAuthError};
use super::sessions::{Mcp, Sessions, dispatch};
use super::tokens::{TokenFileError, TokenTable};
use crate::mcp::CondaMcp;

/// The path MCP is served at.
pub const MCP_PATH: &str = "/mcp";

/// Why the HTTP mode cannot start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A non-loopback `--listen` without authentication (a usage error).
    #[error(
        "--listen {0} is not a loopback address and neither --auth-tokens nor --oauth-issuer \
         is given: anyone who can reach it could use conda as this server's user; add \
         --auth-tokens FILE (see `conda-mcp token new`) or the --oauth-* options, or listen on \
         127.0.0.1"
    )]
    Unauthenticated(SocketAddr),
    /// The `--auth-tokens` file cannot be used.
    #[error(transparent)]
    Tokens(#[from] TokenFileError),
    /// The OAuth settings cannot be used.
    #[error(transparent)]
    OAuth(#[from] OAuthError),
    /// The TLS certificate or key cannot be used.
    #[error(transparent)]
    Tls(#[from] super::tls::TlsError),
    /// The address cannot be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// `--listen`.
        addr: SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

impl StartError {
    /// Whether the command line itself is wrong (exit status 2).
    pub fn is_usage(&self) -> bool {
        match self {
            StartError::Unauthenticated(_) | StartError::Tokens(TokenFileError::Line { .. }) => {
                true
            }
            StartError::OAuth(e) => e.is_usage(),
            _ => false,
        }
    }
}

/// A bound listener and what serving it needs.
#[derive(Debug)]
pub struct Listening {
    listener: TcpListener,
    tokens: Option<TokenTable>,
    oauth: Option<OAuth>,
    tls: Option<Arc<rustls::ServerConfig>>,
    settings: HttpSettings,
}

/// The HTTP settings checked and their files loaded, nothing bound yet
/// (what `conda-mcp check` reports on).
#[derive(Debug)]
pub struct LoadedFiles {
    tokens: Option<TokenTable>,
    oauth: Option<OAuth>,
    tls: Option<Arc<rustls::ServerConfig>>,
}

impl LoadedFiles {
    /// How many principals the `--auth-tokens` file lists (`None` without
    /// it).
    pub fn token_principals(&self) -> Option<usize> {
        self.tokens.as_ref().map(TokenTable::len)
    }

    /// The principals of the `--auth-tokens` file, in its order, with the
    /// scopes of their policy column (`None`: not narrowed).
    pub fn principals(&self) -> Vec<(String, Option<crate::policy::Scopes>)> {
        self.tokens
            .iter()
            .flat_map(TokenTable::principals)
            .map(|p| (p.name.clone(), p.scopes))
            .collect()
    }

    /// Whether the server speaks HTTPS.
    pub fn tls(&self) -> bool {
        self.tls.is_some()
    }

    /// The distinct OS users the token file and the user map map
    /// principals to.
    pub fn os_users(&self) -> Vec<String> {
        os_users(&self.tokens, &self.oauth)
    }
}

fn os_users(tokens: &Option<TokenTable>, oauth: &Option<OAuth>) -> Vec<String> {
    let mut users: Vec<String> = tokens
        .iter()
        .flat_map(|t| t.os_users())
        .map(str::to_owned)
        .chain(oauth.iter().flat_map(OAuth::os_users))
        .collect();
    users.sort();
    users.dedup();
    users
}

/// Checks the HTTP settings (a non-loopback address needs authentication)
/// and loads the token file, the OAuth settings (the issuer's key set is
/// fetched) and the TLS certificate and key, without binding.
///
/// Errors: [`StartError`] (never [`StartError::Bind`]).
pub async fn load(settings: &HttpSettings) -> Result<LoadedFiles, StartError> {
    let authenticated = settings.auth_tokens.is_some() || settings.oauth.is_some();
    if !settings.listen.ip().is_loopback() && !authenticated {
        return Err(StartError::Unauthenticated(settings.listen));
    }
    let tokens = match &settings.auth_tokens {
        Some(path) => Some(TokenTable::load(path)?),
        None => None,
    };
    let oauth = match &settings.oauth {
        Some(o) => Some(OAuth::load(o).await?),
        None => None,
    };
    let tls = match &settings.tls {
        Some((cert, key)) => Some(super::tls::server_config(cert, key)?),
        None => None,
    };
    Ok(LoadedFiles { tokens, oauth, tls })
}

/// [`load`], then binds the address. Runs before discovery, so a wrong
/// command line fails at once.
///
/// Errors: [`StartError`].
pub async fn bind(settings: &HttpSettings) -> Result<Listening, StartError> {
    let LoadedFiles { tokens, oauth, tls } = load(settings).await?;
    let listener = TcpListener::bind(settings.listen)
        .await
        .map_err(|source| StartError::Bind {
            addr: settings.listen,
            source,
        })?;
    Ok(Listening {
        listener,
        tokens,
        oauth,
        tls,
        settings: settings.clone(),
    })
}

impl Listening {
    /// The address bound (the port chosen when `--listen` asked for 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The distinct OS users the token file and the user map map
    /// principals to.
    pub fn os_users(&self) -> Vec<String> {
        os_users(&self.tokens, &self.oauth)
    }

    /// Serves `server` until `stop` completes, then drains: `/readyz`
    /// answers 503 and new MCP requests 503, the requests in flight get
    /// `--shutdown-grace` to finish, then the open streams are cancelled
    /// (which cancels their calls) and this returns. `ops` holds what
    /// `/healthz`, `/readyz` and `/metrics` read; `workers`, the per-user
    /// workers once startup has made them.
    pub async fn serve(
        self,
        server: CondaMcp,
        stop: impl Future<Output = ()> + Send + 'static,
        ops: Arc<super::ops::Ops>,
        workers: Arc<std::sync::OnceLock<Arc<crate::worker_client::Workers>>>,
    ) {
        let addr = self.local_addr().ok();
        let s = &self.settings;
        let cancel = CancellationToken::new();
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(false)
            .with_json_response(true)
            .with_allowed_hosts(s.allowed_hosts.clone())
            .with_allowed_origins(s.allowed_origins.clone())
            .enforce_origin_validation()
            .with_max_request_body_bytes(s.max_body_bytes)
            .with_cancellation_token(cancel.clone());
        let factory = {
            let server = server.clone();
            move || Ok(server.clone())
        };
        let stateless = StreamableHttpService::new(
            factory.clone(),
            Arc::new(NeverSessionManager::default()),
            config.clone(),
        );
        // rmcp's own idle limit counts only a session's messages, so it
        // must outlast the longest request (a question waiting for the
        // person sends nothing); the idle timeout proper is the table's.
        let mut manager = LocalSessionManager::default();
        manager.session_config.keep_alive =
            Some(s.sessions.idle_timeout.max(s.request_timeout) + Duration::from_secs(60));
        let manager = Arc::new(manager);
        let sessionful = StreamableHttpService::new(
            factory,
            manager.clone(),
            config.with_legacy_session_mode(true),
        );
        let sessions = Arc::new(Sessions::new(manager, s.sessions));
        sessions.spawn_reaper(cancel.clone());
        let mcp = Arc::new(Mcp {
            stateless,
            sessionful,
            sessions,
            max_body_bytes: s.max_body_bytes,
        });
        let metadata = self.oauth.as_ref().map(|o| o.metadata.clone());
        let authentication = match (&self.tokens, &self.oauth) {
            (None, None) => "none",
            (Some(_), None) => "bearer",
            (None, Some(_)) => "oauth",
            (Some(_), Some(_)) => "bearer+oauth",
        };
        let health = ops.health.clone();
        let gate_state = Arc::new(Gate {
            tokens: self.tokens,
            oauth: self.oauth,
            max_body_bytes: s.max_body_bytes,
            request_timeout: s.request_timeout,
            workers,
            metrics: ops.metrics.clone(),
            health: health.clone(),
        });
        let mut app = Router::new()
            .route(MCP_PATH, axum::routing::any(dispatch).with_state(mcp))
            .merge(super::ops::metrics(ops.clone()))
            .layer(axum::middleware::from_fn_with_state(gate_state, gate))
            .merge(super::ops::probes(ops));
        if let Some(doc) = metadata {
            app = app.merge(metadata_routes(doc));
        }
        tracing::info!(
            address = %addr.map(|a| a.to_string()).unwrap_or_default(),
            path = MCP_PATH,
            scheme = if self.tls.is_some() { "https" } else { "http" },
            authentication,
            "listening"
        );
        let end = Drain {
            stop,
            grace: s.shutdown_grace,
            cancel,
            health,
        };
        match self.tls {
            None => serve_plain(self.listener, app, end).await,
            Some(tls) => serve_tls(self.listener, tls, app, end).await,
        }
    }
}

/// The protected-resource metadata `doc` (RFC 9728), without
/// authentication, at the well-known path and its `/mcp`-suffixed form.
fn metadata_routes(doc: String) -> Router {
    let doc: Arc<str> = doc.into();
    let answer = move || {
        let doc = Arc::clone(&doc);
        async move {
            (
                [
                    (http::header::CONTENT_TYPE, "application/json"),
                    (http::header::CACHE_CONTROL, "max-age=3600"),
                ],
                doc.to_string(),
            )
        }
    };
    Router::new()
        .route(WELL_KNOWN, axum::routing::get(answer.clone()))
        .route(
            &format!("{WELL_KNOWN}{MCP_PATH}"),
            axum::routing::get(answer),
        )
}

/// How long a client may take to send its request headers (hyper's
/// `header_read_timeout`; its own default, which needs a timer to take
/// effect). A connection that has not sent a whole header block by then,
/// first request or next one on a kept-alive connection, is closed, so
/// connections that never finish a request (slowloris) cannot pile up.
pub const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Sets hyper's timer and [`HEADER_READ_TIMEOUT`] on `server`'s HTTP/1
/// connections.
fn with_header_timeout<A>(mut server: axum_server::Server<A>) -> axum_server::Server<A> {
    server
        .http_builder()
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    server
}

/// How serving ends: at `stop`, the drain (`health` turns not ready and
/// counts the MCP requests in flight), `grace` for them, then `cancel`.
struct Drain<S> {
    stop: S,
    grace: std::time::Duration,
    cancel: CancellationToken,
    health: Arc<crate::health::Health>,
}

/// Plain HTTP until the drain ([`until_drained`]).
async fn serve_plain<S: Future<Output = ()>>(listener: TcpListener, app: Router, end: Drain<S>) {
    let listener = match listener.into_std() {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("cannot hand the listener to the HTTP server: {e}");
            return;
        }
    };
    let handle = axum_server::Handle::new();
    let serving = with_header_timeout(axum_server::from_tcp(listener))
        .handle(handle.clone())
        .serve(app.into_make_service());
    until_drained(serving, handle, "HTTP", end).await;
}

/// HTTPS (rustls through axum-server) until the drain, as
/// [`serve_plain`].
async fn serve_tls<S: Future<Output = ()>>(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    app: Router,
    end: Drain<S>,
) {
    let listener = match listener.into_std() {
        Ok(l) => l,
        Err(e) => {
            tracing::error!("cannot hand the listener to the TLS server: {e}");
            return;
        }
    };
    let handle = axum_server::Handle::new();
    let config = axum_server::tls_rustls::RustlsConfig::from_config(tls);
    let serving = with_header_timeout(axum_server::tls_rustls::from_tcp_rustls(listener, config))
        .handle(handle.clone())
        .serve(app.into_make_service());
    until_drained(serving, handle, "HTTPS", end).await;
}

/// Drives `serving` (an axum-server future controlled by `handle`; `what`
/// names it in the log) until `end.stop`, then drains: `/readyz` answers
/// 503 and new MCP requests get 503 (connections are still accepted, so a
/// load balancer's probe sees the drain), the MCP requests in flight get
/// `end.grace` to finish; once they have, or past the grace, no new
/// connections are accepted, and past the grace `end.cancel` ends their
/// calls and the serving future is dropped.
async fn until_drained<S: Future<Output = ()>>(
    serving: impl Future<Output = std::io::Result<()>>,
    handle: axum_server::Handle,
    what: &str,
    end: Drain<S>,
) {
    let mut serving = std::pin::pin!(serving);
    tokio::select! {
        r = &mut serving => {
            if let Err(e) = r {
                tracing::warn!("the {what} server stopped: {e}");
            }
            return;
        }
        () = end.stop => {}
    }
    end.health.draining();
    draining(end.grace);
    let deadline = tokio::time::Instant::now() + end.grace;
    tokio::select! {
        r = &mut serving => {
            if let Err(e) = r {
                tracing::warn!("the {what} server stopped: {e}");
            }
            return;
        }
        _ = tokio::time::timeout_at(deadline, end.health.idle()) => {}
    }
    // No deadline of its own: past the grace, `cancel` ends the calls (the
    // log says so) and the serving future is dropped.
    handle.graceful_shutdown(None);
    if tokio::time::timeout_at(deadline, &mut serving)
        .await
        .is_err()
    {
        tracing::warn!("requests still in flight after the grace: cancelling them");
        end.cancel.cancel();
    }
}

fn draining(grace: std::time::Duration) {
    tracing::info!(
        grace_ms = grace.as_millis() as u64,
        "stopping: not ready, new requests refused (503); requests in flight may finish"
    );
}

/// Completes on the first SIGTERM or SIGINT.
///
/// Errors: the signal handlers cannot be installed.
#[cfg(unix)]
pub fn termination() -> std::io::Result<impl Future<Output = ()> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM received"),
            _ = int.recv() => tracing::info!("SIGINT received"),
        }
    })
}

/// Completes on the first Ctrl+C, Ctrl+Break or console close (Windows).
///
/// Errors: the console handlers cannot be installed.
#[cfg(windows)]
pub fn termination() -> std::io::Result<impl Future<Output = ()> + Send + 'static> {
    use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close};
    let mut c = ctrl_c()?;
    let mut b = ctrl_break()?;
    let mut close = ctrl_close()?;
    Ok(async move {
        tokio::select! {
            _ = c.recv() => tracing::info!("Ctrl+C received"),
            _ = b.recv() => tracing::info!("Ctrl+Break received"),
            _ = close.recv() => tracing::info!("console closed"),
        }
    })
}
