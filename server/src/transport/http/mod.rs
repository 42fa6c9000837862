//! MCP over Streamable HTTP (`--listen`), the sibling of the stdio
//! transport ([`crate::transport::stdio`]): the same handler, tools, policy and
//! results, served at `/mcp` by rmcp's `StreamableHttpService` mounted in an
//! axum router: in its stateless mode for every sessionless request of
//! both protocol eras (an `initialize`-era request answered on its own, and
//! the 2026-07-28 lifecycle), and with sessions (`Mcp-Session-Id`, bounded,
//! each bound to the principal that opened it) for an `initialize` whose
//! client can be asked to approve ([`sessions`]).
//!
//! * [`gate`]: what every request passes first (authentication, body
//!   limit, deadline) and its log line;
//! * [`tokens`]: the `--auth-tokens` file and `conda-mcp token new`;
//! * [`oauth`]: the OAuth resource server (`--oauth-*`): access tokens,
//!   the issuer's keys, the protected-resource metadata, `--user-map`;
//! * [`token_command`]: the `conda-mcp token` command line;
//! * [`serve`](mod@serve): binding, the router, and the drain on SIGTERM;
//! * [`sessions`]: the `initialize` era's sessions and the `/mcp` route
//!   that picks the stateless or the session service;
//! * [`ops`]: `/healthz`, `/readyz` and `/metrics`;
//! * [`tls`]: `--tls-cert` / `--tls-key` (rustls).
//!
//! Who is calling is a [`crate::principal::Principal`] the gate puts in the
//! request's extensions; rmcp hands the request's `http::request::Parts` to
//! the handler, which reads it from there (`crate::mcp::principal`). The call
//! pipeline never branches on the transport.

pub mod gate;
pub mod oauth;
pub mod ops;
pub mod serve;
pub mod sessions;
pub mod tls;
pub mod token_command;
pub mod tokens;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use serve::{Listening, StartError, bind};

/// Host header values accepted without `--allowed-hosts` (rmcp's check
/// against DNS rebinding; any port).
pub const DEFAULT_HOSTS: &[&str] = &["localhost", "127.0.0.1", "::1"];
/// Origin values accepted without `--allowed-origins`: the loopback names,
/// http and https, any port.
pub const DEFAULT_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "https://localhost:*",
    "http://127.0.0.1:*",
    "https://127.0.0.1:*",
    "http://[::1]:*",
    "https://[::1]:*",
];
/// Extra time `--request-timeout` allows by default beyond `--timeout`
/// (a call may first wait in the exec lane's queue).
pub const REQUEST_TIMEOUT_MARGIN: Duration = Duration::from_secs(60);

/// The HTTP mode's settings (`--listen` and its companions, resolved by
/// `app/resolve.rs`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpSettings {
    /// `--listen`: where to serve.
    pub listen: SocketAddr,
    /// `--auth-tokens`: the principals' token file.
    pub auth_tokens: Option<PathBuf>,
    /// `--oauth-issuer` and its companions. With neither this nor
    /// `auth_tokens`: no authentication (loopback only).
    pub oauth: Option<oauth::OAuthSettings>,
    /// `--tls-cert` and `--tls-key` (PEM): serve HTTPS; `None` = plain
    /// HTTP.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// [`DEFAULT_HOSTS`] plus `--allowed-hosts`.
    pub allowed_hosts: Vec<String>,
    /// [`DEFAULT_ORIGINS`] plus `--allowed-origins`.
    pub allowed_origins: Vec<String>,
    /// `--request-timeout` (default `--timeout` plus
    /// [`REQUEST_TIMEOUT_MARGIN`]).
    pub request_timeout: Duration,
    /// `--shutdown-grace`.
    pub shutdown_grace: Duration,
    /// `--max-workers`: most per-user workers at once.
    pub max_workers: usize,
    /// `--worker-idle-timeout`.
    pub worker_idle_timeout: Duration,
    /// `--max-sessions` and `--session-idle-timeout`.
    pub sessions: sessions::SessionSettings,
    /// Most bytes of a request body: the stdio line limit for the same
    /// `--stdin-limit-bytes` ([`crate::transport::stdio::line_limit`]).
    pub max_body_bytes: usize,
}
