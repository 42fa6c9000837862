//! Types shared by the conda-mcp server and its worker.
//!
//! The server and the worker are separate processes (ARCHITECTURE.md
//! "Bird's-eye view"): the server owns protocol, catalog and policy, the
//! worker owns spawning, limits and reaping. Everything that crosses the
//! local socket between them lives here, so that both sides agree on it by
//! construction:
//!
//! * [`protocol`]: the handshake, requests and events (the message shapes);
//! * [`framing`]: how a message travels (u32 length prefix + bincode, bounded);
//! * [`guard`]: the checks enforced inside conda's process and their
//!   report;
//! * [`result`]: the one execution result every call returns, which is also
//!   the MCP `outputSchema` of every tool (via schemars);
//! * [`mask`]: credential masking of every output and log line;
//! * [`log_writer`]: stderr behind a bounded queue and a thread of its own,
//!   so logging never blocks the protocol;
//! * [`log_format`]: `--log-format text|json` of both binaries;
//! * [`conda_cmd`]: how conda is run on Windows (its `python.exe -m
//!   conda`, never a batch file);
//! * [`env`](mod@env): the environment and working directory conda gets (the
//!   allowlist the worker applies);
//! * [`home`]: the home directory conda runs with (checked at startup);
//! * [`limits`]: the limits of a call ([`limits::Limits`]: time, output
//!   and stdin bytes), their defaults and the kill grace (ARCHITECTURE.md
//!   "Limits");
//! * [`fingerprint`]: sha256 helpers used for discovery fingerprints and
//!   deterministic names;
//! * `private_pipe` (Windows): the server's named pipe for its worker,
//!   open to the server's own user only.

pub mod conda_cmd;
pub mod env;
pub mod fingerprint;
pub mod framing;
pub mod guard;
pub mod home;
pub mod limits;
pub mod log_format;
pub mod log_writer;
pub mod mask;
#[cfg(windows)]
pub mod private_pipe;
pub mod protocol;
pub mod result;

pub use log_format::LogFormat;
pub use result::{ExecutionResult, NoAnswer, StopSignal};
