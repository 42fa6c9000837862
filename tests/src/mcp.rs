//! Talking to the built `conda-mcp` server through a real MCP client: rmcp's
//! client over its child-process transport, in both protocol eras rmcp 3.11
//! serves on stdio ([`Era`]).
//!
//! Every server started here gets a private discovery cache
//! (`XDG_CACHE_HOME` in a temporary folder), a private folder for the
//! installation's writer lock (`XDG_RUNTIME_DIR`), the freshly built worker
//! (`--worker-exe`), and writes its stderr (server and worker logs) to a file
//! the test can read ([`Server::stderr_text`]).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ErrorData, ProtocolVersion, ReadResourceRequestParams,
    ResourceContents, Tool,
};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};
use serde_json::{Map, Value};
use tempfile::TempDir;

use crate::bins;

/// The most bytes the `tools` array of `tools/list` may have on the
/// recorded real conda 26 parser (`tests/fixtures/dumps/conda-26.json`:
/// conda's own commands and the conda-completion, rattler-solver and
/// menuinst plugins, every one of its 37 tools) with `--allow-write
/// --allow-exec`, typed tools in the portable profile. What each saving
/// that brought it from 48,678 to under this was: docs/benchmarks.md
/// "tools/list size". Checked by the surface tests, printed as met or
/// MISSED by the `mcp_server` bench.
pub const TYPED_LIST_MAX_BYTES: usize = 40_000;

/// The same on the recording that has conda-index and conda-pypi as well
/// (`tests/fixtures/dumps/conda-26-plugins.json`, conda 26.9, 41 tools).
pub const PLUGINS_LIST_MAX_BYTES: usize = 46_000;

/// The same for `--tool-mode compact` with every flag: 4,000 bytes, 200
/// more for the `_meta` keys, and 100 more with `conda_inventory`, listed
/// in every mode (4,281 bytes measured: docs/benchmarks.md "tools/list
/// size").
pub const COMPACT_LIST_MAX_BYTES: usize = 4_300;

/// Which lifecycle the client uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// `initialize` / `notifications/initialized` (protocol 2025-11-25 and older).
    Initialize,
    /// The stateless 2026-07-28 lifecycle (`server/discover`, per-request `_meta`).
    Stateless,
}

impl Era {
    /// Both eras, for loops.
    pub const ALL: [Era; 2] = [Era::Initialize, Era::Stateless];
}

/// A running server with a connected client.
pub struct Server {
    /// The rmcp client.
    pub client: RunningService<RoleClient, ()>,
    /// Private folder: discovery cache and the stderr log.
    pub dir: TempDir,
    /// The stderr log file.
    pub stderr_path: PathBuf,
}

/// The `conda-mcp` command for `conda_exe` with `args`, using the built
/// worker and a private cache under `dir`.
pub fn server_command(conda_exe: &Path, args: &[&str], dir: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new(bins::server());
    cmd.arg("--conda-exe")
        .arg(conda_exe)
        .arg("--worker-exe")
        .arg(bins::worker())
        .args(args)
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("XDG_RUNTIME_DIR", dir.join("run"))
        .env_remove("CONDA_EXE")
        .kill_on_drop(true);
    cmd
}

impl Server {
    /// Starts the server for `conda_exe` with extra `args` and connects in
    /// `era`.
    ///
    /// Panics when the server cannot be started or the handshake fails (the
    /// stderr log is printed).
    pub async fn start(conda_exe: &Path, args: &[&str], era: Era) -> Server {
        Self::start_with_env(conda_exe, args, era, &[]).await
    }

    /// [`Server::start`] with extra environment variables for the server.
    pub async fn start_with_env(
        conda_exe: &Path,
        args: &[&str],
        era: Era,
        env: &[(&str, &str)],
    ) -> Server {
        Self::start_command(
            |dir| {
                let mut cmd = server_command(conda_exe, args, dir);
                for (k, v) in env {
                    cmd.env(k, v);
                }
                cmd
            },
            era,
        )
        .await
    }

    /// Starts the command `build` makes (given the private folder) and
    /// connects in `era`; the command's stderr goes to the log file.
    ///
    /// Panics when the server cannot be started or the handshake fails (the
    /// stderr log is printed).
    pub async fn start_command(
        build: impl FnOnce(&Path) -> tokio::process::Command,
        era: Era,
    ) -> Server {
        let dir = tempfile::Builder::new()
            .prefix("conda-mcp-test-")
            .tempdir()
            .expect("tempdir");
        let stderr_path = dir.path().join("stderr.log");
        let stderr = std::fs::File::create(&stderr_path).expect("stderr log");
        let cmd = build(dir.path());
        let (transport, _) = TokioChildProcess::builder(cmd)
            .stderr(Stdio::from(stderr))
            .spawn()
            .expect("spawn conda-mcp");
        let client = match era {
            Era::Initialize => ().serve(transport).await.map_err(|e| e.to_string()),
            Era::Stateless => ()
                .serve_with_lifecycle(
                    transport,
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    },
                )
                .await
                .map_err(|e| e.to_string()),
        };
        match client {
            Ok(client) => Server {
                client,
                dir,
                stderr_path,
            },
            Err(e) => panic!(
                "MCP handshake ({era:?}) failed: {e}\nserver stderr:\n{}",
                std::fs::read_to_string(&stderr_path).unwrap_or_default()
            ),
        }
    }

    /// A server for `conda` (in `--era` [`Era::Initialize`]) whose
    /// discovery cache is `cache`, shared between servers as two starts of
    /// one user's server share it, with the variables `env` set.
    pub async fn start_with_cache(
        conda: &Path,
        args: &[&str],
        cache: &Path,
        env: &[(&str, &Path)],
    ) -> Server {
        let cache = cache.to_path_buf();
        let env: Vec<(String, PathBuf)> = env
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.to_path_buf()))
            .collect();
        Server::start_command(
            move |dir| {
                let mut cmd = server_command(conda, args, dir);
                cmd.env("XDG_CACHE_HOME", &cache);
                for (k, v) in &env {
                    cmd.env(k, v);
                }
                cmd
            },
            Era::Initialize,
        )
        .await
    }

    /// Everything the server and its worker logged so far.
    pub fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// `tools/list` (all pages).
    pub async fn tools(&self) -> Vec<Tool> {
        self.client.list_all_tools().await.expect("tools/list")
    }

    /// `tools/call` with a JSON object of arguments.
    pub async fn call(&self, name: &str, args: Value) -> Result<CallToolResult, ServiceError> {
        let mut p = CallToolRequestParams::new(name.to_owned());
        if let Value::Object(m) = args {
            p = p.with_arguments(m);
        } else {
            p = p.with_arguments(Map::new());
        }
        self.client.call_tool(p).await
    }

    /// `tools/call` that must produce a tool result (not a JSON-RPC error).
    pub async fn call_ok(&self, name: &str, args: Value) -> CallToolResult {
        match self.call(name, args).await {
            Ok(r) => r,
            Err(e) => panic!(
                "tools/call {name} failed: {e}\nserver stderr:\n{}",
                self.stderr_text()
            ),
        }
    }

    /// `resources/read` of `uri`: the text of its single content.
    pub async fn read_text(&self, uri: &str) -> Result<(String, Option<String>), ServiceError> {
        let r = self
            .client
            .read_resource(ReadResourceRequestParams::new(uri))
            .await?;
        match r.contents.into_iter().next() {
            Some(ResourceContents::TextResourceContents {
                text, mime_type, ..
            }) => Ok((text, mime_type)),
            other => panic!("unexpected resource contents: {other:?}"),
        }
    }

    /// Closes the client (the server's stdin) and waits for the child.
    pub async fn close(self) {
        let _ = self.client.cancel().await;
    }
}

/// The JSON-RPC error inside a [`ServiceError`], if it is one.
pub fn rpc_error(e: &ServiceError) -> Option<&ErrorData> {
    match e {
        ServiceError::McpError(d) => Some(d),
        _ => None,
    }
}

/// The text of a tool result's content items, joined by newlines.
pub fn result_text(r: &CallToolResult) -> String {
    r.content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}
