//! Benchmark of what docs/writes.md adds to a call:
//! `cargo bench -p conda-mcp-tests --bench writes`.
//!
//! 1. In process: taking and releasing the installation's writer lock
//!    (uncontended `flock`), and the configuration watch's look at conda's
//!    search path when nothing changed (the `stat`s of every place of real
//!    conda 26's `SEARCH_PATH` as this user expands it), medians of 2,000.
//! 2. Through the built server against the stand-in conda: a read-only
//!    call (`conda_info`, which never takes the lock) and a write
//!    (`conda_env_create` with `yes: true` into a fresh prefix, which holds
//!    it), with `--allow-write`, medians of interleaved rounds. With
//!    `CONDA_MCP_BENCH_BASE_BIN_DIR` naming a folder with the `conda-mcp`
//!    and `conda-mcp-worker` of another build (the previous commit, say),
//!    both servers run interleaved on the same stand-in and the differences
//!    are printed. `CONDA_MCP_BIN_DIR` picks the measured build as for the
//!    tests (a release build: `cargo build --release --bins`).

// A bench binary reports its figures on stdout (it is not the server).
#![allow(clippy::print_stdout)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use conda_mcp_server::call::run::install_lock::InstallLock;
use conda_mcp_server::discovery::stamp::{config_changed, config_paths};
use conda_mcp_tests::bins;
use conda_mcp_tests::standin::StandinPrefix;
use conda_mcp_tests::stats::{median, ms, us};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio_util::sync::CancellationToken;

struct Raw {
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
    next_id: u64,
    _dir: tempfile::TempDir,
}

impl Raw {
    /// `server` and `worker` for `conda_exe` with `--allow-write`, a
    /// private discovery cache and lock folder.
    async fn start(server: &Path, worker: &Path, conda_exe: &Path) -> Raw {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut child = tokio::process::Command::new(server)
            .arg("--conda-exe")
            .arg(conda_exe)
            .arg("--worker-exe")
            .arg(worker)
            .arg("--allow-write")
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .env("XDG_RUNTIME_DIR", dir.path().join("run"))
            .env_remove("CONDA_EXE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn conda-mcp");
        let stdin = child.stdin.take().expect("stdin");
        let lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut raw = Raw {
            child,
            stdin,
            lines,
            next_id: 1,
            _dir: dir,
        };
        raw.request("initialize", json!({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}))
            .await;
        raw.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await;
        raw
    }

    async fn send(&mut self, v: &Value) {
        self.stdin
            .write_all(format!("{v}\n").as_bytes())
            .await
            .expect("write");
    }

    async fn request(&mut self, method: &str, params: Value) -> String {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
        loop {
            let line = tokio::time::timeout(Duration::from_secs(120), self.lines.next_line())
                .await
                .expect("answer in time")
                .expect("read")
                .expect("server closed stdout");
            let v: Value = serde_json::from_str(&line).expect("JSON");
            if v.get("id") == Some(&json!(id)) {
                return line;
            }
        }
    }

    /// One timed `tools/call` that must succeed.
    async fn timed(&mut self, name: &str, arguments: Value) -> Duration {
        let t = Instant::now();
        let r = self
            .request("tools/call", json!({"name": name, "arguments": arguments}))
            .await;
        let d = t.elapsed();
        assert!(r.contains("\"isError\":false"), "{r}");
        d
    }

    async fn close(mut self) {
        drop(self.stdin);
        let _ = tokio::time::timeout(Duration::from_secs(5), self.child.wait()).await;
    }
}

/// Real conda 26's `SEARCH_PATH` (conda/base/constants.py, POSIX) as this
/// user's environment expands it.
fn real_search_path(root: &Path) -> Vec<PathBuf> {
    let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
    let xdg = std::env::var("XDG_CONFIG_HOME").unwrap_or_else(|_| format!("{home}/.config"));
    let mut v: Vec<PathBuf> = [
        "/etc/conda/.condarc",
        "/etc/conda/condarc",
        "/etc/conda/condarc.d/",
        "/var/lib/conda/.condarc",
        "/var/lib/conda/condarc",
        "/var/lib/conda/condarc.d/",
    ]
    .iter()
    .map(PathBuf::from)
    .collect();
    for f in [".condarc", "condarc", "condarc.d"] {
        v.push(root.join(f));
    }
    for f in [".condarc", "condarc", "condarc.d"] {
        v.push(Path::new(&xdg).join("conda").join(f));
    }
    for d in [".config/conda", ".conda"] {
        for f in [".condarc", "condarc", "condarc.d"] {
            v.push(Path::new(&home).join(d).join(f));
        }
    }
    v.push(Path::new(&home).join(".condarc"));
    v
}

async fn in_process(standin: &StandinPrefix) {
    let dir = tempfile::tempdir().expect("tempdir");
    let lock = InstallLock::new(dir.path(), &standin.prefix);
    let never = CancellationToken::new();
    let far = tokio::time::Instant::now() + Duration::from_secs(60);
    let n = 2000;
    let mut takes = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let g = lock.acquire(far, &never, |_| {}).await.expect("lock");
        drop(g);
        takes.push(t.elapsed());
    }
    let places = real_search_path(&standin.prefix);
    let stamped = config_paths(&places);
    let mut looks = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        assert!(!config_changed(&stamped));
        looks.push(t.elapsed());
    }
    println!(
        "in process ({n} each): writer lock take + release median {:.1} µs; configuration look ({} places of conda 26's search path, unchanged) median {:.1} µs",
        us(median(&mut takes)),
        places.len(),
        us(median(&mut looks))
    );
}

async fn through_the_server(standin: &StandinPrefix) {
    let mut builds: Vec<(String, Raw)> = vec![(
        "this build".to_owned(),
        Raw::start(&bins::server(), &bins::worker(), &standin.conda_exe).await,
    )];
    if let Some(base) = std::env::var_os("CONDA_MCP_BENCH_BASE_BIN_DIR").map(PathBuf::from) {
        builds.push((
            format!("base ({})", base.display()),
            Raw::start(
                &base.join("conda-mcp"),
                &base.join("conda-mcp-worker"),
                &standin.conda_exe,
            )
            .await,
        ));
    }
    let prefixes = tempfile::tempdir().expect("tempdir");
    let mut n = 0;
    let mut fresh = || {
        n += 1;
        json!({"prefix": prefixes.path().join(format!("p{n}")).display().to_string(), "yes": true})
    };
    for (_, raw) in &mut builds {
        for _ in 0..5 {
            raw.timed("conda_info", json!({})).await;
            raw.timed("conda_env_create", fresh()).await;
        }
    }
    let rounds = 100;
    let mut reads = vec![Vec::new(); builds.len()];
    let mut writes = vec![Vec::new(); builds.len()];
    for round in 0..rounds {
        // Alternate which build goes first, so neither always follows the
        // other's write.
        let order: Vec<usize> = if round % 2 == 0 {
            (0..builds.len()).collect()
        } else {
            (0..builds.len()).rev().collect()
        };
        for i in order {
            let raw = &mut builds[i].1;
            reads[i].push(raw.timed("conda_info", json!({})).await);
            writes[i].push(raw.timed("conda_env_create", fresh()).await);
        }
    }
    let medians: Vec<(f64, f64)> = (0..builds.len())
        .map(|i| (ms(median(&mut reads[i])), ms(median(&mut writes[i]))))
        .collect();
    for (i, (name, _)) in builds.iter().enumerate() {
        println!(
            "through the server ({rounds} interleaved rounds, stand-in conda, warm conda, --allow-write), {name}: read-only conda_info median {:.2} ms, write conda_env_create yes median {:.2} ms",
            medians[i].0, medians[i].1
        );
    }
    if medians.len() == 2 {
        println!(
            "this build minus base: read-only {:+.2} ms, write {:+.2} ms",
            medians[0].0 - medians[1].0,
            medians[0].1 - medians[1].1
        );
    }
    for (_, raw) in builds {
        raw.close().await;
    }
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        // `cargo test --benches` asks the harness for its benchmarks.
        return;
    }
    let standin = StandinPrefix::standard();
    in_process(&standin).await;
    through_the_server(&standin).await;
}
