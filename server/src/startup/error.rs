//! Why the server did not start, and its exit status.
//!
//! Exit statuses of `conda-mcp` (docs/reference.md "Flags"): 0 after a session
//! that ended with stdin; 2 for a usage error, i.e. the command line
//! itself is wrong ([`EXIT_USAGE`]: clap's status for invalid flags and
//! values, also used for a `--tools` entry that matches no tool of the
//! conda found); 1 for every other startup failure ([`EXIT_FAILURE`]).
//! Each message is one sentence for the log (stderr); none carries a
//! secret or a value the process did not choose itself.

use crate::discovery::DiscoveryError;
use crate::host_env::WorkerHomeError;
use crate::schema::SchemaError;
use crate::tools::filter::UnmatchedEntry;
use crate::worker_client::ExecError;

/// Exit status of a usage error (clap's, for invalid flags and values).
pub const EXIT_USAGE: u8 = 2;
/// Exit status of any other failure to start.
pub const EXIT_FAILURE: u8 = 1;

/// A failure before the server answers anything.
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    /// The async runtime could not be built (threads, timers, I/O driver).
    #[error("cannot start the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    /// `--worker-user`'s home (or `--worker-home`) cannot be used; the
    /// text says why and which flag helps.
    #[error(transparent)]
    WorkerHome(#[from] WorkerHomeError),
    /// The `--auth-tokens` file or the `--user-map` maps principals to OS
    /// users, and the server does not run as root.
    #[error(
        "the --auth-tokens file or the --user-map maps principals to OS users, which needs \
         the server to run as root (each user's worker changes to that user, as with \
         --worker-user)"
    )]
    MappedUsersNeedRoot,
    /// Windows: the `--auth-tokens` file or the `--user-map` maps
    /// principals to OS users, and Windows runs no worker under another
    /// user (`host_env::NOT_ON_WINDOWS`).
    #[error(
        "the --auth-tokens file or the --user-map maps principals to OS users, which needs          a worker under each user; Windows runs conda as the server's own user only"
    )]
    MappedUsersNotOnWindows,
    /// A principal is mapped to an OS user whose home conda cannot use.
    #[error(
        "the --auth-tokens file or the --user-map maps a principal to OS user {user}, \
         which cannot run conda: {source}"
    )]
    MappedUserHome {
        /// The OS user (from the operator's file).
        user: String,
        /// Why its home cannot be used.
        #[source]
        source: WorkerHomeError,
    },
    /// No usable conda: the message says how to point at one and where to
    /// get one.
    #[error("{0}")]
    NoConda(#[source] crate::discovery::TargetError),
    /// Discovery failed: no interpreter, the helper failed, or its dump
    /// did not make a catalog.
    #[error("discovery failed: {0}")]
    Discovery(#[source] DiscoveryError),
    /// A `--tools` or `--exclude-tools` entry matches no tool or command of
    /// the conda found: a usage error.
    #[error(transparent)]
    UnmatchedToolEntry(#[from] UnmatchedEntry),
    /// A generated schema is not a valid JSON Schema document.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// The output schemas of the tool results could not be compiled.
    #[error(transparent)]
    ResultSchemas(#[from] crate::mcp::results::SchemaCompileError),
    /// The listening worker of `--worker-socket` is absent or refuses this
    /// server.
    #[error("{0}")]
    Worker(#[source] ExecError),
    /// The startup task itself failed (a panic inside it: a bug).
    #[error("startup failed: {0}")]
    Internal(#[source] tokio::task::JoinError),
    /// The HTTP mode cannot start (`--listen`): an unauthenticated
    /// non-loopback address or a malformed token file (usage errors), an
    /// unreadable token file, an address that cannot be bound.
    #[error(transparent)]
    Http(#[from] crate::transport::http::StartError),
    /// The `--audit-log` file cannot be opened, or SIGHUP cannot be
    /// watched for its rotation.
    #[error(transparent)]
    Audit(#[from] crate::call::audit::AuditError),
}

impl StartupError {
    /// The process exit status for this error: [`EXIT_USAGE`] when the
    /// command line does not fit the conda found, [`EXIT_FAILURE`]
    /// otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            StartupError::UnmatchedToolEntry(_) => EXIT_USAGE,
            StartupError::Http(e) if e.is_usage() => EXIT_USAGE,
            _ => EXIT_FAILURE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usage_errors_exit_2_and_the_rest_1() {
        let unmatched = StartupError::UnmatchedToolEntry(UnmatchedEntry {
            flag: "--tools",
            entry: "conda_instal".into(),
        });
        assert_eq!(unmatched.exit_code(), EXIT_USAGE);
        assert!(
            unmatched
                .to_string()
                .starts_with("--tools entry \"conda_instal\" matches no tool"),
            "{unmatched}"
        );
        let home = StartupError::WorkerHome(WorkerHomeError::NoSuchUser("nobody2".into()));
        assert_eq!(home.exit_code(), EXIT_FAILURE);
        assert_eq!(home.to_string(), "no such user: nobody2 (--worker-user)");
        let worker = StartupError::Worker(ExecError::WorkerUnavailable("gone".into()));
        assert_eq!(
            worker.to_string(),
            "cannot start or reach the conda-mcp worker: gone"
        );
    }
}
