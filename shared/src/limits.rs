//! Default limits of a call (README.md "Flags"; ARCHITECTURE.md "Limits").

use std::time::Duration;

/// Default time limit per call (and for discovery): 900 s.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(900);
/// Default number of bytes kept per output stream: 1 MiB.
pub const DEFAULT_OUTPUT_LIMIT_BYTES: u64 = 1024 * 1024;
/// Default number of stdin bytes a call may supply: 1 MiB.
pub const DEFAULT_STDIN_LIMIT_BYTES: u64 = 1024 * 1024;
/// Grace between SIGTERM and SIGKILL to the process group: 2 s.
pub const KILL_GRACE: Duration = Duration::from_secs(2);
