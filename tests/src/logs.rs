//! Reading a log that another process writes on a thread of its own (the
//! server's and the worker's stderr): a line may follow the answer it
//! belongs to, so a test waits for the lines it asserts instead of reading
//! once.

use std::path::Path;
use std::time::{Duration, Instant};

/// How long [`holding`] waits for the lines.
pub const LOG_WAIT: Duration = Duration::from_secs(10);

/// The text of the log at `path` once it holds every one of `needles`, or
/// after [`LOG_WAIT`] as it is (the assertion that follows then says what
/// is missing). An unreadable or missing file reads as empty.
pub fn holding(path: &Path, needles: &[&str]) -> String {
    let deadline = Instant::now() + LOG_WAIT;
    loop {
        let log = std::fs::read_to_string(path).unwrap_or_default();
        if needles.iter().all(|n| log.contains(n)) || Instant::now() >= deadline {
            return log;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}
