//! A minimal line-oriented JSON-RPC client for the built `conda-mcp`: for
//! the tests that must control exactly what goes on the wire (a call with
//! or without a progress token, `notifications/cancelled` for a given id)
//! and see exactly what comes back (every frame, in order, and the absence
//! of a response). rmcp's own client puts a progress token on every request
//! and hides responses to cancelled requests, so it cannot show either.
//!
//! Every line the server writes on stdout must be one JSON-RPC message;
//! anything else fails the test at once (nothing but MCP frames on stdout).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tempfile::TempDir;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

use crate::bins;

/// A running server spoken to in raw JSON-RPC (protocol 2025-11-25, the
/// `initialize` lifecycle).
pub struct RawClient {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    /// Private folder: discovery cache and stderr log.
    pub dir: TempDir,
    /// The server's stderr (server and worker logs).
    pub stderr_path: PathBuf,
}

impl RawClient {
    /// Starts `conda-mcp --conda-exe <conda_exe> <args>` with the built
    /// worker and a private cache, and completes `initialize`.
    pub async fn start(conda_exe: &Path, args: &[&str]) -> RawClient {
        Self::start_with_env(conda_exe, args, &[]).await
    }

    /// [`RawClient::start`] with extra environment variables for the
    /// server (`RUST_LOG`, ...).
    pub async fn start_with_env(
        conda_exe: &Path,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> RawClient {
        let mut c = Self::spawn(conda_exe, args, env);
        c.initialize(json!({})).await;
        c
    }

    /// [`RawClient::start`] with a client that declares `capabilities` in
    /// `initialize` (e.g. [`tasks_capabilities`]).
    pub async fn start_with_capabilities(
        conda_exe: &Path,
        args: &[&str],
        capabilities: Value,
    ) -> RawClient {
        let mut c = Self::spawn(conda_exe, args, &[]);
        c.initialize(capabilities).await;
        c
    }

    /// Starts the server like [`RawClient::start`] but sends nothing: the
    /// caller speaks the stateless 2026-07-28 lifecycle (each request
    /// carries its own `_meta`, see [`stateless_meta`]).
    pub async fn start_stateless(conda_exe: &Path, args: &[&str]) -> RawClient {
        Self::spawn(conda_exe, args, &[])
    }

    /// Starts `conda-mcp --conda-exe <conda_exe> <args>` as
    /// [`RawClient::start_with_env`] does, and sends nothing: the test
    /// opens the session itself.
    pub fn spawn(conda_exe: &Path, args: &[&str], env: &[(&str, &str)]) -> RawClient {
        Self::spawn_with_stderr(conda_exe, args, env, None)
    }

    /// [`RawClient::spawn`] with the server's stderr on `stderr` (e.g. a
    /// pipe the test does not read) instead of [`RawClient::stderr_path`],
    /// which then stays empty.
    pub fn spawn_with_stderr(
        conda_exe: &Path,
        args: &[&str],
        env: &[(&str, &str)],
        stderr: Option<Stdio>,
    ) -> RawClient {
        let dir = tempfile::Builder::new()
            .prefix("conda-mcp-raw-")
            .tempdir()
            .expect("tempdir");
        let stderr_path = dir.path().join("stderr.log");
        let file = std::fs::File::create(&stderr_path).expect("stderr log");
        let stderr = stderr.unwrap_or_else(|| Stdio::from(file));
        let mut child = tokio::process::Command::new(bins::server())
            .arg("--conda-exe")
            .arg(conda_exe)
            .arg("--worker-exe")
            .arg(bins::worker())
            .args(args)
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .env("XDG_RUNTIME_DIR", dir.path().join("run"))
            .env_remove("CONDA_EXE")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .expect("spawn conda-mcp");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        RawClient {
            child,
            stdin,
            lines,
            dir,
            stderr_path,
        }
    }

    /// `initialize` (protocol 2025-11-25) declaring `capabilities`, then
    /// `notifications/initialized`; returns the `initialize` result.
    pub async fn initialize(&mut self, capabilities: Value) -> Value {
        self.send(json!({
            "jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": {"name": "conda-mcp-raw-test", "version": "0"}
            }
        }))
        .await;
        let (init, _) = self.response("init", Duration::from_secs(60)).await;
        assert!(
            init.get("result").is_some(),
            "initialize failed: {init}\n{}",
            self.stderr_text()
        );
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        init["result"].clone()
    }

    /// Sends request `method` with `params` as `id` and waits (up to
    /// `within`) for its response; returns it and every other message seen
    /// meanwhile.
    pub async fn request(
        &mut self,
        id: &str,
        method: &str,
        params: Value,
        within: Duration,
    ) -> (Value, Vec<Value>) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.response(id, within).await
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap_or(0)
    }

    /// Everything the server and its worker logged so far.
    pub fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// Writes one message (one line).
    pub async fn send(&mut self, msg: Value) {
        let mut line = msg.to_string();
        line.push('\n');
        self.stdin
            .write_all(line.as_bytes())
            .await
            .expect("write to the server");
        self.stdin.flush().await.expect("flush");
    }

    /// Sends `tools/call` with id `id`; `progress_token` goes into `_meta`.
    pub async fn call_tool(
        &mut self,
        id: &str,
        name: &str,
        args: Value,
        progress_token: Option<&str>,
    ) {
        let mut params = json!({"name": name, "arguments": args});
        if let Some(t) = progress_token {
            params["_meta"] = json!({"progressToken": t});
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}))
            .await;
    }

    /// Sends `notifications/cancelled` for request `id`.
    pub async fn cancel(&mut self, id: &str) {
        self.send(json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "test"}
        }))
        .await;
    }

    /// The next message within `within`, or `None`. Panics on a line that
    /// is not a JSON-RPC 2.0 message, and on EOF.
    pub async fn next(&mut self, within: Duration) -> Option<Value> {
        match tokio::time::timeout(within, self.lines.next_line()).await {
            Err(_) => None,
            Ok(Ok(Some(line))) => {
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|_| panic!("a non-JSON line on the server's stdout: {line:?}"));
                assert_eq!(
                    v.get("jsonrpc"),
                    Some(&json!("2.0")),
                    "not JSON-RPC 2.0: {line}"
                );
                Some(v)
            }
            Ok(Ok(None)) => panic!("the server closed stdout\n{}", self.stderr_text()),
            Ok(Err(e)) => panic!("reading the server's stdout: {e}"),
        }
    }

    /// Reads until the response to `id` (result or error) arrives; returns
    /// it and every other message seen meanwhile. Panics after `within`.
    pub async fn response(&mut self, id: &str, within: Duration) -> (Value, Vec<Value>) {
        let deadline = tokio::time::Instant::now() + within;
        let mut others = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let Some(msg) = self.next(left).await else {
                panic!(
                    "no response to {id} within {within:?}; seen: {others:?}\n{}",
                    self.stderr_text()
                );
            };
            if msg.get("id") == Some(&json!(id)) && msg.get("method").is_none() {
                return (msg, others);
            }
            others.push(msg);
        }
    }

    /// Every message that arrives within `within` (stops early never).
    pub async fn drain(&mut self, within: Duration) -> Vec<Value> {
        let deadline = tokio::time::Instant::now() + within;
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return seen;
            }
            match self.next(left).await {
                Some(m) => seen.push(m),
                None => return seen,
            }
        }
    }

    /// Closes stdin and waits (up to 10 s) for the server to exit; returns
    /// how long it took, `None` when it did not exit.
    pub async fn close(mut self) -> Option<Duration> {
        drop(self.stdin);
        let started = std::time::Instant::now();
        match tokio::time::timeout(Duration::from_secs(10), self.child.wait()).await {
            Ok(Ok(_)) => Some(started.elapsed()),
            _ => None,
        }
    }

    /// Closes stdin, waits for the server to exit (as [`Self::close`]) and
    /// returns everything it and its worker logged: complete then, since
    /// the server writes its log on a thread of its own and may answer a
    /// request before that request's log line is written.
    pub async fn close_and_log(self) -> String {
        // The private folder (which holds the log) lives until this returns.
        let RawClient {
            mut child,
            stdin,
            dir: _dir,
            stderr_path,
            ..
        } = self;
        drop(stdin);
        let _ = tokio::time::timeout(Duration::from_secs(10), child.wait()).await;
        std::fs::read_to_string(stderr_path).unwrap_or_default()
    }

    /// Writes raw bytes (possibly not JSON at all) to the server's stdin.
    pub async fn send_raw(&mut self, bytes: &[u8]) {
        self.stdin
            .write_all(bytes)
            .await
            .expect("write to the server");
        self.stdin.flush().await.expect("flush");
    }
}

/// Client capabilities that declare the MCP tasks extension.
pub fn tasks_capabilities() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
}

/// The `_meta` of a request in the stateless 2026-07-28 lifecycle, with
/// these client capabilities.
pub fn stateless_meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "conda-mcp-raw-test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

/// The `notifications/progress` messages among `msgs` for `token`.
pub fn progress_for<'a>(msgs: &'a [Value], token: &str) -> Vec<&'a Value> {
    msgs.iter()
        .filter(|m| m.get("method") == Some(&json!("notifications/progress")))
        .filter(|m| m["params"]["progressToken"] == json!(token))
        .collect()
}

/// Pids of live processes whose command line mentions `needle` (for
/// finding a stand-in conda started by the worker), leaving out conda-mcp's
/// own processes (whose command lines name the target too).
pub fn pids_with_cmdline(needle: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            let zombie = std::fs::read_to_string(entry.path().join("stat"))
                .map(|s| {
                    s.rsplit(')')
                        .next()
                        .is_some_and(|r| r.trim_start().starts_with('Z'))
                })
                .unwrap_or(false);
            let ours = cmd.contains("conda-mcp-worker") || cmd.contains("/conda-mcp ");
            if cmd.contains(needle) && !zombie && !ours {
                out.push(pid);
            }
        }
    }
    out
}
