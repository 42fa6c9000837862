//! The worker's log: one line per event on stderr (never stdout, never stdin
//! content), as text or JSON, level from `RUST_LOG` (default `info`). Every
//! line goes through the credential mask ([`MaskedStderr`]).

use conda_mcp_shared::LogFormat;
use conda_mcp_shared::mask::MaskedStderr;
use tracing_subscriber::EnvFilter;

/// Installs the global tracing subscriber writing to stderr.
pub fn init(format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(|| MaskedStderr)
        .with_ansi(false)
        .with_target(false);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().flatten_event(true).init(),
    }
}
