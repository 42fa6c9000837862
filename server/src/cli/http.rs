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

/// `--listen` and its companions.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HttpFlags {
    /// Serve MCP over Streamable HTTP at /mcp on this address and port
    /// (e.g. 127.0.0.1:8765) instead of stdio. Any address that is not
    /// loopback needs --auth-tokens or --oauth-issuer.
    #[arg(long, value_name = "ADDR:PORT", help_heading = "HTTP mode")]
    pub listen: Option<SocketAddr>,

    /// Label the request and tool-call metrics of /metrics with the
    /// principal's name (one series per person; off: no name in any
    /// label).
    #[arg(long, requires = "listen", help_heading = "HTTP mode")]
    pub metrics_principals: bool,

    /// Principals and the SHA-256 of their bearer tokens, one a line:
    /// NAME SHA256_HEX [OS_USER] (# starts a comment). Make a token and
    /// its line with `conda-mcp token new NAME`.
    #[arg(
        long,
        value_name = "FILE",
        requires = "listen",
        help_heading = "HTTP mode"
    )]
    pub auth_tokens: Option<PathBuf>,

    /// Accept OAuth 2.1 access tokens (JWT, RS256 or ES256) from this
    /// authorization server: their `iss` must equal this URL, which the
    /// protected-resource metadata names. Needs --oauth-audience and
    /// --oauth-jwks. A bearer token that matches an --auth-tokens line is
    /// that principal; any other is validated as an access token.
    #[arg(long, value_name = "URL", requires_all = ["listen", "oauth_audience", "oauth_jwks"],
          help_heading = "HTTP mode")]
    pub oauth_issuer: Option<String>,

    /// This server's resource URL (RFC 8707), e.g. `https://conda.lab.org/mcp`;
    /// every access token's `aud` must name it exactly.
    #[arg(
        long,
        value_name = "URL",
        requires = "oauth_issuer",
        help_heading = "HTTP mode"
    )]
    pub oauth_audience: Option<String>,

    /// The issuer's signing keys (a JSON Web Key Set): an https URL,
    /// fetched at startup and again for an unknown key id (at most every 10
    /// seconds), or a FILE read once, for sites without access to the
    /// issuer.
    #[arg(long, value_name = "URL|FILE", value_parser = parse_jwks,
          requires = "oauth_issuer", help_heading = "HTTP mode")]
    pub oauth_jwks: Option<crate::transport::http::oauth::Source>,

    /// The access-token claim (e.g. email, preferred_username) whose value
    /// --user-map maps to the OS user the principal's calls run as.
    #[arg(long, value_name = "CLAIM", requires_all = ["oauth_issuer", "user_map"],
          help_heading = "HTTP mode")]
    pub oauth_user_claim: Option<String>,

    /// OS users of OAuth principals, one a line: CLAIM_VALUE OS_USER (#
    /// starts a comment), looked up by the --oauth-user-claim claim;
    /// unmapped principals run in the server's default worker.
    #[arg(
        long,
        value_name = "FILE",
        requires = "oauth_user_claim",
        help_heading = "HTTP mode"
    )]
    pub user_map: Option<PathBuf>,

    /// Serve HTTPS with this PEM certificate chain (leaf first); needs
    /// --tls-key. Without both, plain HTTP (for loopback, or behind a
    /// reverse proxy that terminates TLS).
    #[arg(long, value_name = "FILE", requires_all = ["listen", "tls_key"],
          help_heading = "HTTP mode")]
    pub tls_cert: Option<PathBuf>,

    /// The PEM private key of --tls-cert.
    #[arg(long, value_name = "FILE", requires_all = ["listen", "tls_cert"],
          help_heading = "HTTP mode")]
    pub tls_key: Option<PathBuf>,

    /// Also accept these Host header values (comma-separated or repeated;
    /// host or host:port). Default: localhost, 127.0.0.1 and ::1 only.
    #[arg(
        long,
        value_name = "HOSTS",
        value_delimiter = ',',
        requires = "listen",
        help_heading = "HTTP mode"
    )]
    pub allowed_hosts: Vec<String>,

    /// Also accept requests carrying these Origin values (comma-separated
    /// or repeated; scheme://host[:port], :* for any port). Default: the
    /// loopback names over http and https, any port. Requests without an
    /// Origin header are not affected.
    #[arg(
        long,
        value_name = "ORIGINS",
        value_delimiter = ',',
        requires = "listen",
        help_heading = "HTTP mode"
    )]
    pub allowed_origins: Vec<String>,

    /// Longest an HTTP request may take, queueing and streaming included,
    /// in seconds; past it the response ends and its call is cancelled
    /// (its process tree killed). Default: --timeout plus 60.
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds, requires = "listen",
          help_heading = "HTTP mode")]
    pub request_timeout: Option<Duration>,

    /// On SIGTERM or SIGINT, how long calls in flight may still finish, in
    /// seconds; then they are cancelled and the server exits.
    #[arg(long, value_name = "SECONDS", default_value = "30", value_parser = parse_seconds,
          help_heading = "HTTP mode")]
    pub shutdown_grace: Duration,

    /// Most workers of principals mapped to an OS user at once (each runs
    /// that user's conda calls, one at a time). Past it a new user's
    /// request gets 503 with Retry-After until a worker is idle.
    #[arg(long, value_name = "N", default_value_t = 16,
          value_parser = clap::value_parser!(u16).range(1..), help_heading = "HTTP mode")]
    pub max_workers: u16,

    /// Stop a user's worker after this many seconds without a call; its
    /// next call starts a fresh one.
    #[arg(long, value_name = "SECONDS", default_value = "600", value_parser = parse_seconds,
          help_heading = "HTTP mode")]
    pub worker_idle_timeout: Duration,
}

/// `--oauth-jwks`: an `http(s)://` URL, else a file.
fn parse_jwks(s: &str) -> Result<crate::transport::http::oauth::Source, String> {
    use crate::transport::http::oauth::Source;
    let lower = s.to_ascii_lowercase();
    if lower.starts_with("https://") || lower.starts_with("http://") {
        url::Url::parse(s)
            .map(Source::Url)
            .map_err(|_| "not a valid URL".to_owned())
    } else if s.is_empty() {
        Err("expected a URL or a file".to_owned())
    } else {
        Ok(Source::File(PathBuf::from(s)))
    }
}

/// Seconds as a finite number ≥ 0, at most one week.
fn parse_seconds(s: &str) -> Result<Duration, String> {
    let secs: f64 = s
        .trim()
        .parse()
        .map_err(|_| "expected a number of seconds, e.g. 30 or 2.5".to_owned())?;
    if !secs.is_finite() || !(0.0..=crate::cli::MAX_TIMEOUT_SECONDS).contains(&secs) {
        return Err("must be a number of seconds from 0 to one week".into());
    }
    Ok(Duration::from_secs_f64(secs))
}
