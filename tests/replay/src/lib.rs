//! What the Windows session test and the warm-spare benchmark share: a
//! fake conda installation around the replay (`conda-replay`, src/main.rs)
//! and a minimal MCP client over the server's stdio.
//!
//! The installation has what the worker and the server look for on
//! Windows (shared/src/conda_cmd.rs), nothing more:
//!
//! ```text
//! <root>\python.exe                           the replay
//! <root>\Lib\site-packages\conda\__main__.py  a marker: "conda is installed here"
//! <root>\Scripts\conda.exe                    the launcher the server is given (a copy
//!                                             of the replay, never run: conda runs
//!                                             through python.exe -m conda)
//! ```
//!
//! The client speaks MCP's stdio transport (one JSON-RPC message a line)
//! by hand: the server's own tests use rmcp's client, which this crate
//! does not build for Windows, to keep the cross build small.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The recorded dump the replay answers the discovery helper with.
pub const DUMP: &str = include_str!("../../fixtures/dumps/standin.json");
/// The recorded `conda info --json` the replay answers with.
pub const INFO: &str = include_str!("../../fixtures/recorded/info.json");
/// The worker's spare conda on Windows (worker/src/spare.rs `SOURCE`: the
/// guard, then spare.py), one of the two programs the replay accepts after
/// `-c`.
pub const SPARE: &str = concat!(
    include_str!("../../../worker/src/guard/guard.py"),
    include_str!("../../../worker/src/spare.py")
);
/// A fresh conda's guard (worker/src/guard/mod.rs `FRESH_SOURCE`), the
/// other.
pub const GUARD: &str = concat!(
    include_str!("../../../worker/src/guard/guard.py"),
    "\nsys.exit(fresh_main())\n"
);
/// `conda-mcp check`'s interpreter probe (server/src/check/mod.rs
/// `INTERPRETER_PROBE`), the third program the replay accepts after `-c`.
pub const PROBE: &str = include_str!("../../../server/src/check/interpreter_probe.py");
/// The exit status of a conda the guard ended (guard.py `REFUSED_STATUS`).
pub const GUARD_REFUSED: u8 = 86;

/// The paths of a fake installation made by [`install`].
#[derive(Debug, Clone)]
pub struct Installation {
    /// The installation root.
    pub root: PathBuf,
    /// `<root>\python.exe`, the replay.
    pub python: PathBuf,
    /// `<root>\Scripts\conda.exe`, the `--conda-exe` to give the server.
    pub conda_exe: PathBuf,
}

/// Makes the fake installation (module docs) under `root` with the replay
/// at `replay`.
///
/// Errors: what creating the folders or copying the replay fails with.
pub fn install(root: &Path, replay: &Path) -> std::io::Result<Installation> {
    let conda_pkg = root.join("Lib").join("site-packages").join("conda");
    std::fs::create_dir_all(&conda_pkg)?;
    std::fs::create_dir_all(root.join("Scripts"))?;
    std::fs::write(
        conda_pkg.join("__main__.py"),
        "# conda-mcp's replay installation (tests/replay): a marker, never run.\n",
    )?;
    let python = root.join("python.exe");
    let conda_exe = root.join("Scripts").join("conda.exe");
    std::fs::copy(replay, &python)?;
    std::fs::copy(replay, &conda_exe)?;
    Ok(Installation {
        root: root.to_path_buf(),
        python,
        conda_exe,
    })
}

/// Makes the fake installation's Unix layout under `root`, for a server
/// session where no Python of the target runs (Linux arm64 under qemu):
///
/// ```text
/// <root>/bin/conda-replay   the replay
/// <root>/bin/python         the replay (a copy), or with `runner` a
///                           `/bin/sh` script that execs `runner` on it
/// <root>/bin/conda          `#!<root>/bin/python`: the launcher the server
///                           is given, never run (the worker reads the
///                           interpreter from its `#!` line and runs
///                           `python -c <guard> CHECKS <conda> ARGS`)
/// ```
///
/// `runner` is an emulator's command line (`/usr/bin/qemu-aarch64 -L
/// /usr/aarch64-linux-gnu`, [`runner`]): where the kernel has no
/// binfmt_misc entry for the target, a process of it cannot exec another
/// (the server its worker, the worker conda), so each goes through a
/// script that starts the emulator ([`wrap`]).
///
/// Errors: what creating the folders, copying or writing fails with.
#[cfg(unix)]
pub fn install_unix(
    root: &Path,
    replay: &Path,
    runner: Option<&str>,
) -> std::io::Result<Installation> {
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin)?;
    let copy = bin.join("conda-replay");
    std::fs::copy(replay, &copy)?;
    let python = match runner {
        Some(r) => wrap(&bin.join("python"), &copy, r)?,
        None => {
            let p = bin.join("python");
            std::fs::copy(replay, &p)?;
            p
        }
    };
    let conda_exe = bin.join("conda");
    std::fs::write(
        &conda_exe,
        format!(
            "#!{}\n# conda-mcp's replay installation (tests/replay): a launcher, never run.\n",
            python.display()
        ),
    )?;
    set_executable(&conda_exe)?;
    Ok(Installation {
        root: root.to_path_buf(),
        python,
        conda_exe,
    })
}

/// The emulator the tests' target runs under, from `CONDA_MCP_TEST_RUNNER`
/// (an absolute program and its arguments, split at whitespace:
/// tests/tools/cross/setup.sh `arm64-test` sets it); `None` when natively.
pub fn runner() -> Option<String> {
    std::env::var("CONDA_MCP_TEST_RUNNER")
        .ok()
        .filter(|r| !r.trim().is_empty())
}

/// A command that runs `program` as the tests' target runs it: through
/// [`runner`]'s emulator when there is one, else directly.
pub fn command(program: &Path) -> Command {
    match runner() {
        Some(r) => {
            let mut words = r.split_whitespace();
            let mut cmd = Command::new(words.next().unwrap_or_default());
            cmd.args(words).arg(program);
            cmd
        }
        None => Command::new(program),
    }
}

/// Writes `script`, a `/bin/sh` script that execs `runner` with `exe` and
/// its own arguments, and returns its path.
///
/// Errors: what writing the script or setting its mode fails with.
#[cfg(unix)]
pub fn wrap(script: &Path, exe: &Path, runner: &str) -> std::io::Result<PathBuf> {
    std::fs::write(
        script,
        format!("#!/bin/sh\nexec {runner} '{}' \"$@\"\n", exe.display()),
    )?;
    set_executable(script)?;
    Ok(script.to_path_buf())
}

#[cfg(unix)]
fn set_executable(p: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755))
}

/// The built executable `name` (`conda-mcp`, `conda-replay`; `.exe` added
/// on Windows) in the target directory `exe` (a test or benchmark binary,
/// in `<target>/<profile>/deps/`) belongs to. `None` when it is not there.
pub fn built(exe: &Path, name: &str) -> Option<PathBuf> {
    let file = format!("{name}{}", std::env::consts::EXE_SUFFIX);
    exe.ancestors()
        .skip(1)
        .take(3)
        .map(|d| d.join(&file))
        .find(|p| p.is_file())
}

/// Builds the workspace's binaries (`cargo build --workspace --bins`, a
/// no-op when they are fresh) into the target directory and profile of
/// `exe`, a test binary in `<target>/<profile>/deps/`. Cargo builds another
/// package's binaries for a package's tests only by accident (a clean
/// checkout has no `conda-mcp` beside this crate's tests), so a native
/// session test calls this before [`built`]; the same rule as the
/// black-box tests' `tests/src/bins.rs`. `--workspace` keeps the features
/// `cargo test --workspace` resolved, so nothing is built twice.
///
/// Errors: cargo could not be started, or the build failed (its errors
/// are on this process's stderr).
pub fn build_workspace_bins(exe: &Path) -> std::io::Result<()> {
    let deps = exe.parent().unwrap_or(exe);
    let profile_dir = if deps.file_name().is_some_and(|n| n == "deps") {
        deps.parent().unwrap_or(deps)
    } else {
        deps
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "--workspace", "--bins"]);
    match profile_dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => {}
        Some("release") => {
            cmd.arg("--release");
        }
        Some(other) => {
            cmd.args(["--profile", other]);
        }
    }
    if let Some(target) = profile_dir.parent() {
        cmd.arg("--target-dir").arg(target);
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let status = cmd
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .status()?;
    if status.success() {
        Ok(())
    } else {
        Err(std::io::Error::other(format!(
            "`cargo build --workspace --bins` failed ({status})"
        )))
    }
}

/// The terminal commands of a dump (parsers without subcommands), each as
/// its path after `conda` (`["env", "create"]`).
pub fn terminal_commands(dump: &Value) -> Vec<Vec<String>> {
    fn walk(parser: &Value, out: &mut Vec<Vec<String>>) {
        let subs = parser["subcommands"].as_array().map(Vec::as_slice);
        match subs {
            Some(subs) if !subs.is_empty() => {
                for s in subs {
                    walk(&s["parser"], out);
                }
            }
            _ => out.push(
                parser["path"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .skip(1)
                    .filter_map(|p| p.as_str().map(str::to_owned))
                    .collect(),
            ),
        }
    }
    let mut out = Vec::new();
    walk(&dump["root"], &mut out);
    out
}

/// An MCP session with a server started over stdio.
#[derive(Debug)]
pub struct Session {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: u64,
    /// How long one answer may take.
    pub timeout: Duration,
}

/// What went wrong in a session.
#[derive(Debug)]
pub enum SessionError {
    /// Starting the server, or writing to it, failed.
    Io(std::io::Error),
    /// No answer within [`Session::timeout`].
    Timeout(String),
    /// The server closed its stdout.
    Closed(String),
    /// A JSON-RPC error answer.
    Rpc(Value),
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionError::Io(e) => write!(f, "i/o: {e}"),
            SessionError::Timeout(m) => write!(f, "no answer to {m} in time"),
            SessionError::Closed(m) => {
                write!(f, "the server closed its stdout before answering {m}")
            }
            SessionError::Rpc(e) => write!(f, "JSON-RPC error {e}"),
        }
    }
}

impl std::error::Error for SessionError {}

impl Session {
    /// Starts `cmd` (the server) with piped stdin and stdout; its stderr
    /// is inherited.
    ///
    /// Errors: [`SessionError::Io`] when it cannot start.
    pub fn start(mut cmd: Command) -> Result<Session, SessionError> {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd.spawn().map_err(SessionError::Io)?;
        let stdin = child.stdin.take();
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| SessionError::Io(std::io::Error::other("no stdout pipe")))?;
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Session {
            child,
            stdin,
            lines,
            next_id: 1,
            timeout: Duration::from_secs(120),
        })
    }

    fn send(&mut self, msg: &Value) -> Result<(), SessionError> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| SessionError::Io(std::io::Error::other("stdin closed")))?;
        let mut line = serde_json::to_vec(msg).map_err(|e| SessionError::Io(e.into()))?;
        line.push(b'\n');
        stdin.write_all(&line).map_err(SessionError::Io)?;
        stdin.flush().map_err(SessionError::Io)
    }

    /// Sends a request and returns its `result`, skipping the server's
    /// notifications and requests in between.
    ///
    /// Errors: [`SessionError`].
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value, SessionError> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let deadline = Instant::now() + self.timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match self.lines.recv_timeout(left) {
                Ok(l) => l,
                Err(RecvTimeoutError::Timeout) => return Err(SessionError::Timeout(method.into())),
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(SessionError::Closed(method.into()));
                }
            };
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if msg.get("method").is_some() || msg["id"] != json!(id) {
                continue;
            }
            if let Some(e) = msg.get("error") {
                return Err(SessionError::Rpc(e.clone()));
            }
            return Ok(msg["result"].clone());
        }
    }

    /// Sends a notification.
    ///
    /// Errors: [`SessionError::Io`].
    pub fn notify(&mut self, method: &str, params: Value) -> Result<(), SessionError> {
        self.send(&json!({"jsonrpc": "2.0", "method": method, "params": params}))
    }

    /// `initialize` (protocol 2025-06-18) and `notifications/initialized`;
    /// returns the initialize result.
    ///
    /// Errors: [`SessionError`].
    pub fn initialize(&mut self) -> Result<Value, SessionError> {
        let r = self.request(
            "initialize",
            json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "conda-mcp-replay", "version": env!("CARGO_PKG_VERSION")}
            }),
        )?;
        self.notify("notifications/initialized", json!({}))?;
        Ok(r)
    }

    /// `tools/call` of `name` with `arguments`; returns the call result.
    ///
    /// Errors: [`SessionError`].
    pub fn call(&mut self, name: &str, arguments: Value) -> Result<Value, SessionError> {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// Closes the server's stdin (its signal to end) and waits up to
    /// `wait` for it to exit; kills it past that.
    ///
    /// Errors: [`SessionError::Io`]; [`SessionError::Timeout`] when it had
    /// to be killed.
    pub fn close(mut self, wait: Duration) -> Result<ExitStatus, SessionError> {
        drop(self.stdin.take());
        let deadline = Instant::now() + wait;
        loop {
            if let Some(status) = self.child.try_wait().map_err(SessionError::Io)? {
                return Ok(status);
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                return Err(SessionError::Timeout("the closed stdin (exit)".into()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
