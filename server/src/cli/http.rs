//! The flags of the HTTP mode (`--listen` and what only applies with it),
//! flattened into [`crate::cli::Cli`]. Like `cli/mod.rs`, read only by the
//! composition root (`app/resolve.rs` turns them into
//! [`crate::transport::http::HttpSettings`]); the doc comments are the `--help` text.
// The field docs are the `--help` text, plain prose that clap prints as
// written (`[OS_USER]`, `[:port]`), not rustdoc markup.
#![allow(rustdoc::broken_intra_doc_links)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::{FlagValueError, heading};

/// `--listen` and its companions (headings [`heading::HTTP`] and
/// [`heading::OAUTH`]).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HttpFlags {
    /// Serve MCP over Streamable HTTP on this ADDR:PORT instead of stdio.
    ///
    /// At /mcp on this address and port (e.g. 127.0.0.1:8765). Any address
    /// that is not loopback needs --auth-tokens or --oauth-issuer.
    #[arg(long, value_name = "ADDR:PORT", env = "CONDA_MCP_LISTEN", help_heading = heading::HTTP)]
    pub listen: Option<SocketAddr>,

    /// Bearer tokens: a file of principals and their tokens' SHA-256.
    ///
    /// One a line: NAME SHA256_HEX [OS_USER] (# starts a comment). Make a
    /// token and its line with `conda-mcp token new NAME`.
    #[arg(long, value_name = "FILE", requires = "listen", env = "CONDA_MCP_AUTH_TOKENS",
          help_heading = heading::HTTP)]
    pub auth_tokens: Option<PathBuf>,

    /// Serve HTTPS with this PEM certificate chain (leaf first); needs --tls-key.
    ///
    /// Without both, plain HTTP (for loopback, or behind a reverse proxy
    /// that terminates TLS).
    #[arg(long, value_name = "FILE", requires_all = ["listen", "tls_key"],
          env = "CONDA_MCP_TLS_CERT", help_heading = heading::HTTP, hide_short_help = true)]
    pub tls_cert: Option<PathBuf>,

    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires_all = ["listen", "tls_cert"],
          env = "CONDA_MCP_TLS_KEY", help_heading = heading::HTTP, hide_short_help = true)]
    pub tls_key: Option<PathBuf>,

    /// Also accept these Host header values (comma-separated or repeated).
    ///
    /// host or host:port. Default: localhost, 127.0.0.1 and ::1 only.
    #[arg(long, value_name = "HOSTS", value_delimiter = ',', requires = "listen",
          env = "CONDA_MCP_ALLOWED_HOSTS", help_heading = heading::HTTP, hide_short_help = true)]
    pub allowed_hosts: Vec<String>,

    /// Also accept requests carrying these Origin values (comma-separated or repeated).
    ///
    /// scheme://host[:port], :* for any port. Default: the loopback names
    /// over http and https, any port. Requests without an Origin header are
    /// not affected.
    #[arg(long, value_name = "ORIGINS", value_delimiter = ',', requires = "listen",
          env = "CONDA_MCP_ALLOWED_ORIGINS", help_heading = heading::HTTP,
          hide_short_help = true)]
    pub allowed_origins: Vec<String>,

    /// Longest an HTTP request may take, in seconds (default: --timeout plus 60).
    ///
    /// Queueing and streaming included; past it the response ends and its
    /// call is cancelled (its process tree killed).
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, requires = "listen",
          env = "CONDA_MCP_REQUEST_TIMEOUT", help_heading = heading::HTTP,
          hide_short_help = true)]
    pub request_timeout: Option<Duration>,

    /// On SIGTERM or SIGINT, seconds calls in flight may still finish.
    ///
    /// Then they are cancelled and the server exits.
    #[arg(long, value_name = "SECONDS", default_value = "30", value_parser = parse_seconds,
          env = "CONDA_MCP_SHUTDOWN_GRACE", help_heading = heading::HTTP, hide_short_help = true)]
    pub shutdown_grace: Duration,

    /// Most workers of principals mapped to an OS user at once.
    ///
    /// Each runs that user's conda calls, one at a time. Past it a new
    /// user's request gets 503 with Retry-After until a worker is idle.
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u16).range(1..), env = "CONDA_MCP_MAX_WORKERS",
          help_heading = heading::HTTP, hide_short_help = true)]
    pub max_workers: u16,

    /// Stop a user's worker after this many seconds without a call.
    ///
    /// Its next call starts a fresh one.
    #[arg(long, value_name = "SECONDS", default_value = "600", value_parser = parse_seconds,
          env = "CONDA_MCP_WORKER_IDLE_TIMEOUT", help_heading = heading::HTTP,
          hide_short_help = true)]
    pub worker_idle_timeout: Duration,

    /// Most MCP sessions (Mcp-Session-Id) open at once.
    ///
    /// Opened for an initialize that declares elicitation or MCP Apps (what
    /// approval over HTTP needs). Past it a new one closes the least
    /// recently used idle session (the same principal's first), or gets 503
    /// with Retry-After while every session has a call in flight.
    #[arg(long, value_name = "N", default_value_t = 64,
          value_parser = clap::value_parser!(u16).range(1..),
          env = "CONDA_MCP_MAX_SESSIONS", help_heading = heading::HTTP, hide_short_help = true)]
    pub max_sessions: u16,

    /// Close an MCP session after this many seconds without a request.
    ///
    /// A call in flight keeps it open; its client's next request gets 404
    /// and starts a new session.
    #[arg(long, value_name = "SECONDS", default_value = "1800", value_parser = parse_seconds,
          env = "CONDA_MCP_SESSION_IDLE_TIMEOUT",
          help_heading = heading::HTTP, hide_short_help = true)]
    pub session_idle_timeout: Duration,

    /// Label the metrics of /metrics with the principal's name.
    ///
    /// The request and tool-call metrics, one series per person; off: no
    /// name in any label.
    #[arg(long, requires = "listen", env = "CONDA_MCP_METRICS_PRINCIPALS",
          help_heading = heading::HTTP, hide_short_help = true)]
    pub metrics_principals: bool,

    /// Accept OAuth 2.1 access tokens from this authorization server.
    ///
    /// JWT, RS256 or ES256: their `iss` must equal this URL, which the
    /// protected-resource metadata names. Needs --oauth-audience and
    /// --oauth-jwks. A bearer token that matches an --auth-tokens line is
    /// that principal; any other is validated as an access token.
    #[arg(long, value_name = "URL", requires_all = ["listen", "oauth_audience", "oauth_jwks"],
          env = "CONDA_MCP_OAUTH_ISSUER", help_heading = heading::OAUTH, hide_short_help = true)]
    pub oauth_issuer: Option<String>,

    /// This server's resource URL (RFC 8707), which every token's aud must name.
    ///
    /// E.g. `https://conda.lab.org/mcp`; every access token's `aud` must
    /// name it exactly.
    #[arg(long, value_name = "URL", requires = "oauth_issuer", env = "CONDA_MCP_OAUTH_AUDIENCE",
          help_heading = heading::OAUTH, hide_short_help = true)]
    pub oauth_audience: Option<String>,

    /// The issuer's signing keys (a JSON Web Key Set): an https URL or a FILE.
    ///
    /// A URL is fetched at startup and again for an unknown key id (at most
    /// every 10 seconds); a FILE is read once, for sites without access to
    /// the issuer.
    #[arg(long, value_name = "URL|FILE", value_parser = parse_jwks,
          requires = "oauth_issuer", env = "CONDA_MCP_OAUTH_JWKS",
          help_heading = heading::OAUTH, hide_short_help = true)]
    pub oauth_jwks: Option<crate::transport::http::oauth::Source>,

    /// The access-token claim that --user-map maps to an OS user.
    ///
    /// E.g. email, preferred_username: its value is looked up in
    /// --user-map, and the principal's calls run as that OS user.
    #[arg(long, value_name = "CLAIM", requires_all = ["oauth_issuer", "user_map"],
          env = "CONDA_MCP_OAUTH_USER_CLAIM", help_heading = heading::OAUTH,
          hide_short_help = true)]
    pub oauth_user_claim: Option<String>,

    /// OS users of OAuth principals: CLAIM_VALUE OS_USER a line.
    ///
    /// A # starts a comment; looked up by the --oauth-user-claim claim;
    /// unmapped principals run in the server's default worker.
    #[arg(long, value_name = "FILE", requires = "oauth_user_claim", env = "CONDA_MCP_USER_MAP",
          help_heading = heading::OAUTH, hide_short_help = true)]
    pub user_map: Option<PathBuf>,
}

/// `--oauth-jwks`: an `http(s)://` URL, else a file.
fn parse_jwks(s: &str) -> Result<crate::transport::http::oauth::Source, FlagValueError> {
    use crate::transport::http::oauth::Source;
    let lower = s.to_ascii_lowercase();
    if lower.starts_with("https://") || lower.starts_with("http://") {
        url::Url::parse(s)
            .map(Source::Url)
            .map_err(|_| FlagValueError::NotAUrl)
    } else if s.is_empty() {
        Err(FlagValueError::Empty)
    } else {
        Ok(Source::File(PathBuf::from(s)))
    }
}

/// Seconds as a finite number ≥ 0, at most one week.
fn parse_seconds(s: &str) -> Result<Duration, FlagValueError> {
    let secs: f64 = s.trim().parse().map_err(|_| FlagValueError::NotSeconds)?;
    if !secs.is_finite() || !(0.0..=crate::cli::MAX_TIMEOUT_SECONDS).contains(&secs) {
        return Err(FlagValueError::SecondsOutOfRange);
    }
    Ok(Duration::from_secs_f64(secs))
}
