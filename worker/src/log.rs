//! The worker's log: one line per event on stderr (never stdout, never stdin
//! content), as text or JSON, level from `RUST_LOG` (default `info`). Every
//! line goes through the credential mask ([`conda_mcp_shared::mask`]).
//!
//! A spawned worker shares the server's stderr, so a host that does not
//! read it would block the worker's job loop as it would the server's
//! protocol: stderr is written by a thread of its own behind a bounded
//! queue ([`conda_mcp_shared::log_writer`]); lines that do not fit are
//! dropped and counted, and reported as `log lines dropped` once stderr is
//! read again.

use conda_mcp_shared::LogFormat;
use conda_mcp_shared::log_writer::{self, LogGuard};
use tracing_subscriber::EnvFilter;

/// Installs the global tracing subscriber writing to stderr, and returns
/// the guard `main` holds until the process ends (dropping it writes what
/// is queued, waiting at most [`log_writer::FLUSH_TIMEOUT`]). `None` when
/// the writing thread could not be started: the worker then runs without a
/// log rather than with one that can block it.
pub fn init(format: LogFormat) -> Option<LogGuard> {
    let (writer, guard) = log_writer::install_stderr(|dropped, total| {
        tracing::warn!(
            dropped,
            total,
            "log lines dropped: stderr was not read while they were written"
        );
    })
    .ok()?;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_target(false);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
    Some(guard)
}
