//! Why the worker could not start or serve: the error of its `run`, logged
//! as "worker failed" before the process exits with status 1. Each variant
//! names the flag, the path or the OS call involved, and the fix when
//! there is one.

#[cfg(unix)]
use std::path::PathBuf;

/// See the module docs.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// A flag this mode needs was not given (`--conda-exe`, `--socket`).
    #[error("{0} is required")]
    Missing(&'static str),
    /// (Windows) What needs Unix users: `serve`, `--user`.
    #[cfg(windows)]
    #[error("{0} {not}", not = crate::NOT_ON_WINDOWS)]
    NotOnWindows(&'static str),
    /// (Linux) The worker could not become its jobs' child subreaper.
    #[error("PR_SET_CHILD_SUBREAPER: {0}")]
    Subreaper(#[source] std::io::Error),
    /// The handlers of SIGTERM and SIGINT (Windows: the console's control
    /// events) could not be installed.
    #[error(transparent)]
    Signals(std::io::Error),
    /// `--home` could not be made, or the home is not one the worker's
    /// user can use (the user, the directory and the fix).
    #[error(transparent)]
    Home(#[from] conda_mcp_shared::home::HomeError),
    /// The worker's user has no home directory at all.
    #[error("the worker user {user} has no home ({why}); pass --home DIR")]
    NoHome {
        /// The worker's user.
        user: String,
        /// Where it was looked for.
        why: &'static str,
    },
    /// (Unix) `--socket` is not a socket path.
    #[cfg(unix)]
    #[error("socket path: {0}")]
    SocketPath(#[source] std::io::Error),
    /// (Windows) `--socket` is not a pipe name.
    #[cfg(windows)]
    #[error("pipe name: {0}")]
    PipeName(#[source] std::io::Error),
    /// (Unix) The server's socket could not be connected to.
    #[cfg(unix)]
    #[error("cannot connect to {}: {source}", socket.display())]
    Connect {
        /// `--socket`.
        socket: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// (Windows) The server's named pipe could not be connected to.
    #[cfg(windows)]
    #[error("cannot connect to the pipe {pipe}: {source}")]
    ConnectPipe {
        /// `--socket` as given.
        pipe: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// (Unix) The socket's listener is not the worker's own user, so it is
    /// not the server that started the worker.
    #[cfg(unix)]
    #[error("the socket's listener has uid {peer:?}, expected {me}")]
    ListenerUid {
        /// The listener's uid, when the kernel said.
        peer: Option<u32>,
        /// The worker's uid.
        me: u32,
    },
    /// (Unix) `--user` could not be taken on.
    #[cfg(unix)]
    #[error(transparent)]
    PrivDrop(#[from] crate::privdrop::PrivDropError),
    /// (Unix, `serve`) The socket could not be listened on.
    #[cfg(unix)]
    #[error("cannot listen on {}: {source}", socket.display())]
    Listen {
        /// The socket path.
        socket: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// (Unix, `serve`) The socket's mode could not be set.
    #[cfg(unix)]
    #[error("chmod {mode:o} {}: {source}", socket.display())]
    SocketMode {
        /// `--socket-mode`.
        mode: u32,
        /// The socket path.
        socket: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}
