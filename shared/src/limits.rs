//! The limits of a call: one type for the server's flags, the job the
//! server hands its worker client, the request on the wire and the worker's
//! own ceilings (docs/reference.md "Flags"; ARCHITECTURE.md "Limits").
//!
//! A call runs under three limits: time, bytes kept per output stream and
//! bytes of stdin. The server takes them from `--timeout`,
//! `--output-limit-bytes` and `--stdin-limit-bytes`; they travel in every
//! `protocol::RunRequest`; the worker clamps each to its own ceilings
//! (`--max-timeout`, `--max-output-bytes`, `--max-stdin-bytes`, also a
//! [`Limits`]) with [`Limits::clamped_to`], so a listening worker bounds
//! every server that connects.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Most bytes one argument of a process may have, its terminating NUL
/// included: Linux's `MAX_ARG_STRLEN` (32 pages of 4 KiB,
/// `include/uapi/linux/binfmts.h`). `execve` fails with `E2BIG` on a longer
/// one, so the server refuses it before anything runs ([`arg_fits`]).
pub const ARG_MAX_BYTES: usize = 128 * 1024;

/// Most bytes conda's whole argv may take, counted as the kernel counts it
/// ([`argv_bytes`]): 1 MiB, half of Linux's default `ARG_MAX` (a quarter of
/// the default 8 MiB stack limit), the other half left to the environment
/// the worker passes (`env.rs`) and the program's own path.
pub const ARGV_MAX_BYTES: usize = 1024 * 1024;

/// Whether `arg` fits in one argument of a process ([`ARG_MAX_BYTES`],
/// with its NUL).
pub fn arg_fits(arg: &str) -> bool {
    arg.len() < ARG_MAX_BYTES
}

/// The bytes `argv` takes on a new process's stack as Linux counts them
/// against `ARG_MAX`: each argument, its NUL and its 8-byte pointer.
pub fn argv_bytes<S: AsRef<str>>(argv: &[S]) -> usize {
    argv.iter().map(|a| a.as_ref().len() + 1 + 8).sum()
}

/// Grace between SIGTERM and SIGKILL to the process group: 2 s.
pub const KILL_GRACE: Duration = Duration::from_secs(2);

/// The three limits of one call.
///
/// On the wire (bincode, inside `protocol::RunRequest`) the fields travel
/// in this order as three `u64`: the time limit in whole milliseconds
/// (rounded down), then the two byte counts; a nested struct adds nothing
/// to bincode's encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    /// Time limit, counted from spawn (the server also bounds a queued
    /// call's wait with it). On the wire: whole milliseconds.
    #[serde(with = "millis")]
    pub timeout: Duration,
    /// Bytes kept per output stream (stdout and stderr each); the rest is
    /// read and discarded, and the text is cut at a UTF-8 boundary.
    pub output_limit_bytes: u64,
    /// Most bytes of stdin a call may supply; more is refused before
    /// anything runs.
    pub stdin_limit_bytes: u64,
}

impl Limits {
    /// The server's defaults: 900 s, 1 MiB per output stream, 1 MiB of
    /// stdin.
    pub const DEFAULT: Limits = Limits {
        timeout: Duration::from_secs(900),
        output_limit_bytes: 1024 * 1024,
        stdin_limit_bytes: 1024 * 1024,
    };

    /// The worker's default ceilings: one week, 16 MiB per output stream,
    /// 16 MiB of stdin.
    pub const WORKER_CEILINGS: Limits = Limits {
        timeout: Duration::from_secs(7 * 24 * 3600),
        output_limit_bytes: 16 * 1024 * 1024,
        stdin_limit_bytes: 16 * 1024 * 1024,
    };

    /// Each limit at most the same limit of `ceilings`.
    pub fn clamped_to(self, ceilings: Limits) -> Limits {
        Limits {
            timeout: self.timeout.min(ceilings.timeout),
            output_limit_bytes: self.output_limit_bytes.min(ceilings.output_limit_bytes),
            stdin_limit_bytes: self.stdin_limit_bytes.min(ceilings.stdin_limit_bytes),
        }
    }

    /// The time limit in whole milliseconds (as on the wire; saturating).
    pub fn timeout_ms(&self) -> u64 {
        u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX)
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

/// A [`Duration`] as whole milliseconds (a `u64`, rounded down,
/// saturating).
mod millis {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_argument_fits_with_its_nul() {
        assert!(arg_fits(&"x".repeat(ARG_MAX_BYTES - 1)));
        assert!(!arg_fits(&"x".repeat(ARG_MAX_BYTES)));
        assert_eq!(argv_bytes(&["ab", ""]), 3 + 8 + 1 + 8);
    }

    #[test]
    fn clamping_takes_each_smaller_limit() {
        let asked = Limits {
            timeout: Duration::from_secs(10),
            output_limit_bytes: 5,
            stdin_limit_bytes: 100,
        };
        let ceilings = Limits {
            timeout: Duration::from_secs(3),
            output_limit_bytes: 50,
            stdin_limit_bytes: 7,
        };
        assert_eq!(
            asked.clamped_to(ceilings),
            Limits {
                timeout: Duration::from_secs(3),
                output_limit_bytes: 5,
                stdin_limit_bytes: 7,
            }
        );
        assert_eq!(
            Limits::DEFAULT.clamped_to(Limits::WORKER_CEILINGS),
            Limits::DEFAULT
        );
    }

    #[test]
    fn the_time_limit_is_whole_milliseconds() {
        let l = Limits {
            timeout: Duration::from_micros(2_500_900),
            ..Limits::DEFAULT
        };
        assert_eq!(l.timeout_ms(), 2500);
        let max = Limits {
            timeout: Duration::MAX,
            ..Limits::DEFAULT
        };
        assert_eq!(max.timeout_ms(), u64::MAX);
    }
}
