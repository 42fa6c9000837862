//! The server's log: one line per event on stderr (stdout carries only MCP
//! frames), as text or JSON, level from `RUST_LOG` (default `info`).
//!
//! stderr is written by a thread of its own behind a bounded queue
//! ([`conda_mcp_shared::log_writer`]): a host that does not read the pipe
//! loses lines (counted, and reported as `log lines dropped` once it reads
//! again), never the protocol.
//!
//! Two rules keep submitted values and credentials out of it:
//!
//! * every line goes through the credential mask
//!   ([`conda_mcp_shared::mask`], applied by the writing thread), whatever
//!   logged it;
//! * the MCP library's own events and spans (targets `rmcp` and `rmcp::…`)
//!   are dropped at every level, whatever `RUST_LOG` says: at `info` it logs
//!   whole notifications and the client's info, at `debug` whole requests
//!   and results (tool arguments, conda's output). The server writes its own
//!   line per request instead (`transport::request_log`: method, tool, id,
//!   duration, outcome; never arguments or results).

use conda_mcp_shared::log_writer::{self, LogGuard};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

use conda_mcp_shared::LogFormat;

/// Whether a tracing target belongs to the MCP library (`rmcp`), whose
/// events never reach the log.
pub fn is_mcp_library(target: &str) -> bool {
    target == "rmcp" || target.starts_with("rmcp::")
}

/// Installs the global subscriber (once; later calls change nothing) and
/// returns the guard `main` holds until the process ends (dropping it
/// writes what is still queued, waiting at most
/// [`log_writer::FLUSH_TIMEOUT`]). `None` when the writing thread could not
/// be started: the server then runs without a log rather than with one that
/// can block it.
pub fn init(format: LogFormat, default_filter: &str) -> Option<LogGuard> {
    let (writer, guard) = log_writer::install_stderr(|dropped, total| {
        tracing::warn!(
            dropped,
            total,
            "log lines dropped: stderr was not read while they were written"
        );
    })
    .ok()?;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let not_mcp_library =
        tracing_subscriber::filter::filter_fn(|meta| !is_mcp_library(meta.target()));
    let builder = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .with_env_filter(filter);
    let _ = match format {
        LogFormat::Text => builder.finish().with(not_mcp_library).try_init(),
        LogFormat::Json => builder.json().finish().with(not_mcp_library).try_init(),
    };
    Some(guard)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_rmcp_targets_are_the_library() {
        assert!(is_mcp_library("rmcp"));
        assert!(is_mcp_library("rmcp::service"));
        assert!(!is_mcp_library("rmcpx"));
        assert!(!is_mcp_library("conda_mcp_server::transport::request_log"));
    }
}
