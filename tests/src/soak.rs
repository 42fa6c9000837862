//! The soak and chaos run (docs/testing.md, soak and chaos test): one built
//! `conda-mcp` on a stand-in conda, many mixed `tools/call` requests kept in
//! flight over raw JSON-RPC on stdio, random SIGKILLs of the worker process
//! and `notifications/cancelled` for calls that are still queued; then the
//! checks: every request answered exactly once (a cancelled one at most
//! once, a cancelled queued one never run), the server alive and answering,
//! its and the worker's descriptors, threads and resident memory back near
//! the start, no zombie, no process left over, nothing left in the worker
//! socket directory.
//!
//! [`run`] does it for a [`Plan`] and returns a [`Report`];
//! `tests/tests/mcp/soak.rs` runs [`Plan::short`], the `soak` binary of this
//! crate ([`Plan::full`] by default, counts as flags) prints
//! [`Report::table`].
//!
//! The stand-in's control file gives the commands their roles: `search`
//! fails (exit 1), `clean` crashes (SIGKILL after printing), `env config
//! vars list` sleeps [`Plan::slow_seconds`] (the calls that others queue
//! behind, and the targets of random cancels), `run` sleeps 30 s and is
//! only called with a 0.4 s limit (`conda_run`, `conda_execute`: timeouts),
//! `plugins list` leaves a sleeping grandchild behind (which the worker must
//! kill). Everything else answers at once.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin};
use tokio::sync::mpsc;

use crate::bins;
use crate::procfs::{self, Figures, Proc};
use crate::standin::{ControlRule, StandinPrefix};

/// What to do: counts, pacing and the bounds the end state is held to.
#[derive(Debug, Clone)]
pub struct Plan {
    /// `tools/call` requests in the mix (the queued-cancel pairs included).
    pub calls: usize,
    /// SIGKILLs of the worker process at random moments.
    pub kills: usize,
    /// `notifications/cancelled` for a call queued behind a slow one.
    pub queued_cancels: usize,
    /// Requests kept in flight at once (the rest wait on the client side).
    pub window: usize,
    /// Seed of the pseudo-random mix and timing (same seed, same plan).
    pub seed: u64,
    /// How long the slow command (`env config vars list`) sleeps, in seconds.
    pub slow_seconds: f64,
    /// Extra server flags (after `--allow-exec --timeout 60`).
    pub server_args: Vec<String>,
    /// A request not answered this long after it was sent is a hang.
    pub answer_within: Duration,
    /// Most extra open descriptors (server, worker) at the end.
    pub fd_slack: usize,
    /// Most extra threads (server, worker) at the end.
    pub thread_slack: u64,
    /// Most extra resident memory (server, worker) at the end, in KiB.
    pub rss_slack_kib: u64,
    /// Copy the server's stderr (server and worker logs) here at the end.
    pub keep_log: Option<PathBuf>,
}

impl Plan {
    /// 2,000 calls, 20 worker kills, 10 cancels of queued calls.
    pub fn full(seed: u64) -> Plan {
        Plan {
            calls: 2000,
            kills: 20,
            queued_cancels: 10,
            window: 4,
            seed,
            slow_seconds: 0.8,
            server_args: Vec::new(),
            answer_within: Duration::from_secs(90),
            fd_slack: 2,
            thread_slack: 2,
            rss_slack_kib: 16 * 1024,
            keep_log: None,
        }
    }

    /// 200 calls, 3 worker kills, 3 cancels of queued calls (the `cargo
    /// test` version).
    pub fn short(seed: u64) -> Plan {
        Plan {
            calls: 200,
            kills: 3,
            queued_cancels: 3,
            slow_seconds: 0.6,
            ..Plan::full(seed)
        }
    }
}

/// What kind of call a request is, which decides the tool, the arguments
/// and the outcomes that are acceptable for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// `conda_info`, `conda_env_list`, `conda_config --show`: exit 0.
    ReadOnly,
    /// `conda_install` / `conda_remove` without `yes`: a dry run.
    DryRun,
    /// `conda_search`: the stand-in exits 1.
    Failing,
    /// `conda_clean`: the stand-in kills itself with SIGKILL.
    Crash,
    /// Arguments that break the tool's schema.
    Invalid,
    /// A tool that does not exist: a JSON-RPC error.
    UnknownTool,
    /// A mutation on a server without `--allow-write`.
    Refused,
    /// `conda_run` / `conda_execute` with a 0.4 s limit on a 30 s command.
    TimedOut,
    /// `conda_plugins_list`, whose stand-in leaves a grandchild sleeping.
    Grandchild,
    /// A slow call cancelled after a random delay (queued, running or done).
    Cancelled,
    /// The slow call a queued victim waits behind.
    Slow,
    /// A call cancelled while it waits in the queue: never runs.
    QueuedVictim,
}

impl Kind {
    const MIX: [(Kind, u32); 10] = [
        (Kind::ReadOnly, 30),
        (Kind::DryRun, 14),
        (Kind::Failing, 10),
        (Kind::Crash, 4),
        (Kind::Invalid, 12),
        (Kind::UnknownTool, 4),
        (Kind::Refused, 12),
        (Kind::TimedOut, 3),
        (Kind::Grandchild, 5),
        (Kind::Cancelled, 3),
    ];

    /// Short name for tables.
    pub fn name(self) -> &'static str {
        match self {
            Kind::ReadOnly => "read-only",
            Kind::DryRun => "dry-run",
            Kind::Failing => "failing",
            Kind::Crash => "crash",
            Kind::Invalid => "invalid",
            Kind::UnknownTool => "unknown-tool",
            Kind::Refused => "refused",
            Kind::TimedOut => "timed-out",
            Kind::Grandchild => "grandchild",
            Kind::Cancelled => "cancelled",
            Kind::Slow => "slow",
            Kind::QueuedVictim => "queued-cancel",
        }
    }

    /// Whether the call reaches the worker (so a worker kill may end it).
    fn runs(self) -> bool {
        !matches!(self, Kind::Invalid | Kind::UnknownTool | Kind::Refused)
    }

    /// Outcomes acceptable for this kind ([`Outcome::WorkerLost`] for
    /// every kind that runs: a kill may hit it).
    fn accepts(self, o: Outcome) -> bool {
        use Outcome::*;
        if o == WorkerLost && self.runs() {
            return true;
        }
        match self {
            Kind::ReadOnly | Kind::Grandchild | Kind::Slow => o == Ok,
            Kind::DryRun => o == DryRun,
            Kind::Failing | Kind::Crash => o == Failed,
            Kind::Invalid => o == Invalid,
            Kind::UnknownTool => o == RpcError,
            Kind::Refused => o == Refused,
            Kind::TimedOut => o == TimedOut,
            Kind::Cancelled => matches!(o, Ok | Cancelled | NoAnswer),
            Kind::QueuedVictim => o == NoAnswer,
        }
    }

    /// The tool and arguments of call number `n`.
    fn request(self, rng: &mut Rng, n: usize) -> (&'static str, Value) {
        match self {
            Kind::ReadOnly => match rng.below(3) {
                0 => ("conda_info", json!({})),
                1 => ("conda_env_list", json!({"json": true})),
                _ => ("conda_config", json!({"show": ["channels"], "json": true})),
            },
            Kind::DryRun => match rng.below(2) {
                0 => ("conda_install", json!({"packages": [format!("pkg{n}")]})),
                _ => (
                    "conda_remove",
                    json!({"package_names": ["numpy"], "name": "base"}),
                ),
            },
            Kind::Failing => ("conda_search", json!({"match_spec": format!("spec{n}")})),
            Kind::Crash => ("conda_clean", json!({"all": true})),
            Kind::Invalid => match rng.below(4) {
                0 => ("conda_install", json!({"packages": [""]})),
                1 => ("conda_install", json!({"packages": 5})),
                2 => ("conda_info", json!({"no_such_option": true})),
                _ => ("conda_execute", json!({"argv": "info"})),
            },
            Kind::UnknownTool => ("conda_no_such_tool", json!({})),
            Kind::Refused => match rng.below(3) {
                0 => ("conda_install", json!({"packages": ["numpy"], "yes": true})),
                1 => (
                    "conda_config",
                    json!({"set": [["channel_priority", "strict"]]}),
                ),
                _ => ("conda_execute", json!({"argv": ["install", "-y", "numpy"]})),
            },
            Kind::TimedOut => match rng.below(2) {
                0 => (
                    "conda_run",
                    json!({"executable_call": ["true"], "timeout_seconds": 0.4}),
                ),
                _ => (
                    "conda_execute",
                    json!({"argv": ["run", "true"], "timeout_seconds": 0.4}),
                ),
            },
            Kind::Grandchild => ("conda_plugins_list", json!({})),
            Kind::Cancelled | Kind::Slow => ("conda_env_config_vars_list", json!({})),
            Kind::QueuedVictim => ("conda_search", json!({"match_spec": victim_marker(n)})),
        }
    }
}

/// The match spec of queued victim `n`: found in the stand-in's run log
/// only if it ran.
fn victim_marker(n: usize) -> String {
    format!("soakvictim{n}x")
}

/// How a request ended, read from its response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    /// Exit status 0.
    Ok,
    /// Exit status 0, run as a dry run (`confirmation_required`).
    DryRun,
    /// A non-zero exit status (or death by signal).
    Failed,
    /// `timed_out`.
    TimedOut,
    /// `cancelled` (a cancel that reached a running call answered anyway).
    Cancelled,
    /// A policy refusal.
    Refused,
    /// Invalid arguments.
    Invalid,
    /// A JSON-RPC error.
    RpcError,
    /// The worker went away during the call (or could not be reached).
    WorkerLost,
    /// Any other error result.
    Other,
    /// No response (only acceptable after a cancel).
    NoAnswer,
}

impl Outcome {
    const ALL: [Outcome; 11] = [
        Outcome::Ok,
        Outcome::DryRun,
        Outcome::Failed,
        Outcome::TimedOut,
        Outcome::Cancelled,
        Outcome::Refused,
        Outcome::Invalid,
        Outcome::RpcError,
        Outcome::WorkerLost,
        Outcome::Other,
        Outcome::NoAnswer,
    ];

    fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::DryRun => "dry_run",
            Outcome::Failed => "failed",
            Outcome::TimedOut => "timed_out",
            Outcome::Cancelled => "cancelled",
            Outcome::Refused => "refused",
            Outcome::Invalid => "invalid",
            Outcome::RpcError => "rpc_err",
            Outcome::WorkerLost => "worker_lost",
            Outcome::Other => "other",
            Outcome::NoAnswer => "no_answer",
        }
    }

    /// Classifies one JSON-RPC response.
    pub fn of(response: &Value) -> Outcome {
        if response.get("error").is_some() {
            return Outcome::RpcError;
        }
        let result = &response["result"];
        let sc = &result["structuredContent"];
        if sc["timed_out"] == json!(true) {
            return Outcome::TimedOut;
        }
        if sc["cancelled"] == json!(true) {
            return Outcome::Cancelled;
        }
        match sc["exit_code"].as_i64() {
            Some(0) if sc["confirmation_required"] == json!(true) => return Outcome::DryRun,
            Some(0) => return Outcome::Ok,
            Some(_) => return Outcome::Failed,
            None => {}
        }
        let text: String = result["content"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["text"].as_str())
            .collect();
        if text.contains("conda-mcp worker") {
            Outcome::WorkerLost
        } else if text.starts_with("Refused") {
            Outcome::Refused
        } else if text.starts_with("Invalid arguments") {
            Outcome::Invalid
        } else {
            Outcome::Other
        }
    }
}

/// A small seeded generator (splitmix64): the same seed gives the same
/// mix, kill points and delays.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// A duration in `0..max`.
    pub fn delay(&mut self, max: Duration) -> Duration {
        let ms = u64::try_from(max.as_millis()).unwrap_or(u64::MAX).max(1);
        Duration::from_millis(self.below(ms))
    }

    /// `k` distinct numbers of `lo..hi` (fewer when the range is smaller).
    pub fn distinct(&mut self, k: usize, lo: usize, hi: usize) -> BTreeSet<usize> {
        let mut out = BTreeSet::new();
        let span = hi.saturating_sub(lo);
        while out.len() < k.min(span) {
            out.insert(lo + self.below(span as u64) as usize);
        }
        out
    }
}

/// Resource figures of the server and its worker, at one moment.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Snapshot {
    /// The server process.
    pub server: Figures,
    /// The worker process (a fresh one after kills).
    pub worker: Figures,
    /// The worker's warm conda (zygote), when there is one.
    pub zygote: Option<Figures>,
    /// What the server's and the worker's descriptors point to (for the
    /// message when a bound is broken).
    #[serde(skip)]
    pub fd_targets: [Vec<String>; 2],
}

/// What a run saw, and every violation of the checks.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// The plan's seed.
    pub seed: u64,
    /// Requests sent, by kind.
    pub sent: BTreeMap<Kind, usize>,
    /// Outcomes, by kind.
    pub outcomes: BTreeMap<Kind, BTreeMap<Outcome, usize>>,
    /// Worker kills delivered.
    pub kills: usize,
    /// Worker kills dropped because no call was left to start a worker.
    pub kills_skipped: usize,
    /// Whether the idle worker was killed after the soak (then checked for
    /// a zombie before the next call).
    pub idle_kill: bool,
    /// Distinct worker processes seen.
    pub workers_seen: usize,
    /// Cancels sent to queued calls (that were still queued when sent).
    pub queued_cancels: usize,
    /// Responses received in all (the warm-up calls, `initialize` and
    /// `ping` included).
    pub responses: usize,
    /// Soak calls answered exactly once.
    pub answered_once: usize,
    /// Soak calls answered more than once (a violation).
    pub answered_twice: usize,
    /// Soak calls never answered (each one cancelled, else a violation).
    pub unanswered: usize,
    /// Notifications (and other messages that are not responses) received.
    pub notifications: usize,
    /// Figures after the warm-up, before the soak.
    pub start: Snapshot,
    /// Figures after the soak and the same warm-up.
    pub end: Snapshot,
    /// Entries of the worker socket directory while the server was alive
    /// at the end, and after it exited.
    pub socket_dir: (Vec<String>, Vec<String>),
    /// Processes seen in the server's tree during the run.
    pub processes_seen: usize,
    /// How long the soak part took.
    pub elapsed: Duration,
    /// How long the server took to exit once its stdin closed.
    pub exit_after: Option<Duration>,
    /// Every check that failed (empty = passed).
    pub violations: Vec<String>,
}

impl Report {
    /// The figures table (plain text).
    pub fn table(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        let total: usize = self.sent.values().sum();
        let _ = writeln!(
            s,
            "soak: {total} calls, {} worker kills{} ({} worker processes), {} cancels of queued calls, seed {}, {:.1} s",
            self.kills,
            if self.idle_kill {
                " + 1 while idle"
            } else {
                ""
            },
            self.workers_seen,
            self.queued_cancels,
            self.seed,
            self.elapsed.as_secs_f64()
        );
        let used: Vec<Outcome> = Outcome::ALL
            .into_iter()
            .filter(|o| self.outcomes.values().any(|m| m.contains_key(o)))
            .collect();
        let _ = write!(s, "{:<14}{:>6}", "kind", "sent");
        for o in &used {
            let _ = write!(s, "{:>12}", o.name());
        }
        s.push('\n');
        for (kind, n) in &self.sent {
            let _ = write!(s, "{:<14}{:>6}", kind.name(), n);
            for o in &used {
                let c = self
                    .outcomes
                    .get(kind)
                    .and_then(|m| m.get(o))
                    .copied()
                    .unwrap_or(0);
                let _ = write!(s, "{c:>12}");
            }
            s.push('\n');
        }
        if self.kills_skipped > 0 {
            let _ = writeln!(
                s,
                "{} kills dropped: no call was left to start a worker",
                self.kills_skipped
            );
        }
        let _ = writeln!(
            s,
            "calls answered once {}, twice or more {}, never (cancelled) {}; responses in all {}, notifications {}; processes seen in the server's tree {}",
            self.answered_once,
            self.answered_twice,
            self.unanswered,
            self.responses,
            self.notifications,
            self.processes_seen
        );
        let _ = writeln!(s, "{:<24}{:>10}{:>10}", "figure", "start", "end");
        let rows: [(&str, Figures, Figures); 2] = [
            ("server", self.start.server, self.end.server),
            ("worker", self.start.worker, self.end.worker),
        ];
        for (who, a, b) in rows {
            let _ = writeln!(
                s,
                "{:<24}{:>10}{:>10}",
                format!("{who} open fds"),
                a.fds,
                b.fds
            );
            let _ = writeln!(
                s,
                "{:<24}{:>10}{:>10}",
                format!("{who} threads"),
                a.threads,
                b.threads
            );
            let _ = writeln!(
                s,
                "{:<24}{:>10}{:>10}",
                format!("{who} VmRSS KiB"),
                a.rss_kib,
                b.rss_kib
            );
        }
        let z = |f: Option<Figures>| f.map_or_else(|| "-".to_string(), |f| f.rss_kib.to_string());
        let _ = writeln!(
            s,
            "{:<24}{:>10}{:>10}",
            "warm conda VmRSS KiB",
            z(self.start.zygote),
            z(self.end.zygote)
        );
        let _ = writeln!(
            s,
            "socket dir entries: {} while serving ({}), {} after exit; server exit after stdin closed: {}",
            self.socket_dir.0.len(),
            self.socket_dir.0.join(", "),
            self.socket_dir.1.len(),
            self.exit_after
                .map(|d| format!("{} ms", d.as_millis()))
                .unwrap_or_else(|| "did not exit".into())
        );
        if self.violations.is_empty() {
            let _ = writeln!(
                s,
                "checks: every request answered exactly once (cancelled: at most once, queued-cancelled never ran), server alive, figures within bounds, no zombie, no leftover process, socket dir clean: PASS"
            );
        } else {
            let _ = writeln!(s, "checks: FAIL ({} violations)", self.violations.len());
            for v in &self.violations {
                let _ = writeln!(s, "  - {v}");
            }
        }
        s
    }
}

/// The stand-in prefix with the soak's control rules.
pub fn prefix(plan: &Plan) -> std::io::Result<StandinPrefix> {
    let prefix = StandinPrefix::create(&crate::standin::standin_dump())?;
    prefix.set_control(&[
        ControlRule {
            exit_code: Some(1),
            stderr_text: Some("PackagesNotFoundError: soak\n".into()),
            ..ControlRule::for_commands(&["search"])
        },
        ControlRule {
            kill_self: Some(9),
            ..ControlRule::for_commands(&["clean"])
        },
        ControlRule {
            sleep_seconds: Some(plan.slow_seconds),
            ..ControlRule::for_commands(&["env config vars list"])
        },
        ControlRule {
            sleep_seconds: Some(30.0),
            ..ControlRule::for_commands(&["run"])
        },
        ControlRule {
            spawn_grandchild: Some(true),
            grandchild_sleep_seconds: Some(60.0),
            ..ControlRule::for_commands(&["plugins list"])
        },
    ])?;
    Ok(prefix)
}

/// One request in flight or done.
#[derive(Debug)]
struct Request {
    kind: Kind,
    n: usize,
    sent_at: Instant,
    cancelled: bool,
    answers: usize,
    outcome: Option<Outcome>,
}

enum Timer {
    Kill,
    Cancel(String),
}

/// The server under test and the client side of its stdio.
struct Session {
    child: Child,
    pid: i32,
    stdin: Option<ChildStdin>,
    rx: mpsc::UnboundedReceiver<Result<Value, String>>,
    stderr_path: PathBuf,
    requests: HashMap<String, Request>,
    order: Vec<String>,
    seen: HashMap<(i32, u64), Proc>,
    workers: HashSet<(i32, u64)>,
    /// Workers alive when `initialize` was answered (the discovery
    /// helper's lane, idle): not the exec lane's worker.
    initial_workers: HashSet<(i32, u64)>,
    responses: usize,
    notifications: usize,
    violations: Vec<String>,
}

impl Session {
    async fn start(conda: &Path, plan: &Plan, dir: &Path, tmp: &Path) -> Session {
        let stderr_path = dir.join("stderr.log");
        let stderr = std::fs::File::create(&stderr_path).expect("stderr log");
        let mut cmd = tokio::process::Command::new(bins::server());
        cmd.arg("--conda-exe")
            .arg(conda)
            .arg("--worker-exe")
            .arg(bins::worker())
            .args(["--allow-exec", "--timeout", "60"])
            .args(&plan.server_args)
            .env("XDG_CACHE_HOME", dir.join("cache"))
            // The installation's writer lock folder (lock files stay by
            // design) is not the worker socket directory checked here.
            .env("XDG_RUNTIME_DIR", dir.join("run"))
            .env("TMPDIR", tmp)
            .env_remove("CONDA_EXE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .process_group(0)
            .kill_on_drop(true);
        let mut child = cmd.spawn().expect("spawn conda-mcp");
        let pid = child.id().expect("pid") as i32;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            loop {
                let item = match lines.next_line().await {
                    Ok(Some(line)) => serde_json::from_str::<Value>(&line)
                        .map_err(|_| format!("a line on stdout that is not JSON: {line:?}")),
                    Ok(None) => Err("EOF".to_string()),
                    Err(e) => Err(format!("reading stdout: {e}")),
                };
                let end = item.as_ref().is_err_and(|e| !e.starts_with("a line"));
                if tx.send(item).is_err() || end {
                    return;
                }
            }
        });
        let mut s = Session {
            child,
            pid,
            stdin,
            rx,
            stderr_path,
            requests: HashMap::new(),
            order: Vec::new(),
            seen: HashMap::new(),
            workers: HashSet::new(),
            initial_workers: HashSet::new(),
            responses: 0,
            notifications: 0,
            violations: Vec::new(),
        };
        s.send(json!({
            "jsonrpc": "2.0", "id": "init", "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "conda-mcp-soak", "version": "0"}
            }
        }))
        .await;
        let init = s.wait_for("init", Duration::from_secs(120)).await;
        assert!(
            init.as_ref().is_some_and(|r| r.get("result").is_some()),
            "initialize failed: {init:?}\n{}",
            s.stderr_text()
        );
        s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        s.snapshot();
        s.initial_workers = s.workers.clone();
        s
    }

    fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    async fn send(&mut self, msg: Value) {
        let mut line = msg.to_string();
        line.push('\n');
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin
            .write_all(line.as_bytes())
            .await
            .expect("write to the server");
        stdin.flush().await.expect("flush");
    }

    async fn call(&mut self, id: String, kind: Kind, n: usize, tool: &str, args: Value) {
        self.send(json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": args}
        }))
        .await;
        self.order.push(id.clone());
        self.requests.insert(
            id,
            Request {
                kind,
                n,
                sent_at: Instant::now(),
                cancelled: false,
                answers: 0,
                outcome: None,
            },
        );
    }

    async fn cancel(&mut self, id: &str) {
        self.send(json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": id, "reason": "soak"}
        }))
        .await;
        if let Some(r) = self.requests.get_mut(id) {
            r.cancelled = true;
        }
    }

    /// Records one message from the server; returns a response's id.
    fn record(&mut self, item: Result<Value, String>) -> Option<(String, Value)> {
        let msg = match item {
            Ok(m) => m,
            Err(e) => {
                self.violations.push(format!("server stdout: {e}"));
                return None;
            }
        };
        if msg.get("jsonrpc") != Some(&json!("2.0")) {
            self.violations
                .push(format!("a message that is not JSON-RPC 2.0: {msg}"));
        }
        if msg.get("method").is_some() {
            self.notifications += 1;
            return None;
        }
        self.responses += 1;
        let id = match msg.get("id") {
            Some(Value::String(s)) => s.clone(),
            other => {
                self.violations
                    .push(format!("a response with id {other:?}: {msg}"));
                return None;
            }
        };
        match self.requests.get_mut(&id) {
            Some(r) => {
                r.answers += 1;
                if r.answers == 1 {
                    r.outcome = Some(Outcome::of(&msg));
                } else {
                    self.violations
                        .push(format!("request {id} answered {} times", r.answers));
                }
            }
            None if id == "init" || id.starts_with("post-") => {}
            None => self
                .violations
                .push(format!("a response to an id never sent: {id}")),
        }
        Some((id, msg))
    }

    /// Reads until the response to `id`; `None` after `within`.
    async fn wait_for(&mut self, id: &str, within: Duration) -> Option<Value> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let item = tokio::time::timeout_at(deadline, self.rx.recv())
                .await
                .ok()??;
            if let Some((got, msg)) = self.record(item)
                && got == id
            {
                return Some(msg);
            }
        }
    }

    /// Requests in flight that count against the window (a cancelled one
    /// no longer does: it may never be answered).
    fn in_flight(&self) -> usize {
        self.requests
            .values()
            .filter(|r| r.answers == 0 && !r.cancelled)
            .count()
    }

    /// Snapshots the server's descendants into `seen`.
    fn snapshot(&mut self) -> Vec<Proc> {
        let table = procfs::all();
        let desc = procfs::descendants(self.pid, &table);
        for p in &desc {
            if is_worker(p, self.pid) {
                self.workers.insert((p.pid, p.starttime));
            }
            self.seen.insert((p.pid, p.starttime), p.clone());
        }
        desc
    }

    /// The exec lane's live worker: the newest live worker child of the
    /// server that was not there when `initialize` was answered.
    fn worker(&mut self) -> Option<Proc> {
        let server = self.pid;
        let desc = self.snapshot();
        desc.into_iter()
            .filter(|p| {
                is_worker(p, server) && !self.initial_workers.contains(&(p.pid, p.starttime))
            })
            .max_by_key(|p| p.starttime)
    }

    /// The worker's warm conda (a child of the worker in its own group).
    fn zygote(&mut self, worker: &Proc) -> Option<Proc> {
        self.snapshot()
            .into_iter()
            .find(|p| is_zygote_of(p, worker))
    }

    /// Sends the warm-up set (one call of each kind that runs quickly,
    /// in order) and waits for each answer; returns the figures after a
    /// quiet second.
    async fn warm_up(&mut self, tag: &str) -> Snapshot {
        let set: [(&str, Value); 6] = [
            ("conda_info", json!({})),
            ("conda_env_list", json!({"json": true})),
            ("conda_install", json!({"packages": ["numpy"]})),
            ("conda_search", json!({"match_spec": "numpy"})),
            ("conda_install", json!({"packages": ["numpy"], "yes": true})),
            ("conda_plugins_list", json!({})),
        ];
        for round in 0..2 {
            for (i, (tool, args)) in set.iter().enumerate() {
                let id = format!("post-{tag}-{round}-{i}");
                self.send(json!({
                    "jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": tool, "arguments": args}
                }))
                .await;
                match self.wait_for(&id, Duration::from_secs(60)).await {
                    Some(r) if r.get("result").is_some() => {}
                    other => self.violations.push(format!(
                        "warm-up call {tool} ({tag}) not answered with a result: {other:?}"
                    )),
                }
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let Some(worker) = self.worker() else {
            self.violations
                .push(format!("no live worker after the warm-up ({tag})"));
            return Snapshot::default();
        };
        let zygote = self.zygote(&worker);
        Snapshot {
            server: procfs::figures(self.pid).unwrap_or_default(),
            worker: procfs::figures(worker.pid).unwrap_or_default(),
            zygote: zygote.and_then(|z| procfs::figures(z.pid)),
            fd_targets: [procfs::fd_targets(self.pid), procfs::fd_targets(worker.pid)],
        }
    }
}

/// Runs `plan` against the built binaries and returns what it saw.
///
/// Panics when the stand-in prefix or the server cannot be started.
pub async fn run(plan: &Plan) -> Report {
    let prefix = prefix(plan).expect("stand-in prefix");
    let dir = tempfile::Builder::new()
        .prefix("conda-mcp-soak-")
        .tempdir()
        .expect("tempdir");
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).expect("TMPDIR");
    let mut s = Session::start(&prefix.conda_exe, plan, dir.path(), &tmp).await;
    let mut rng = Rng::new(plan.seed);
    let mut report = Report {
        seed: plan.seed,
        ..Report::default()
    };

    report.start = s.warm_up("start").await;

    // Where the kills and the queued cancels go.
    let lo = plan.calls / 20;
    let hi = (plan.calls * 9 / 10).max(lo + 1);
    let kill_at = rng.distinct(plan.kills, lo, hi);
    let cancel_at = rng.distinct(plan.queued_cancels, lo, hi);
    let weight_total: u32 = Kind::MIX.iter().map(|(_, w)| w).sum();

    let started = Instant::now();
    let mut timers: Vec<(Instant, Timer)> = Vec::new();
    let mut n = 0usize;
    // The pending queued-cancel pair: (slow id, victim id), until the
    // cancel is sent.
    let mut episode: Option<(String, String)> = None;
    let mut last_hang_check = Instant::now();
    loop {
        // Send while the window has room.
        while n < plan.calls && s.in_flight() < plan.window {
            if kill_at.contains(&n) {
                let at = Instant::now() + rng.delay(Duration::from_millis(300));
                timers.push((at, Timer::Kill));
            }
            if cancel_at.contains(&n) && episode.is_none() && n + 1 < plan.calls {
                let slow = format!("c{n}");
                let (tool, args) = Kind::Slow.request(&mut rng, n);
                s.call(slow.clone(), Kind::Slow, n, tool, args).await;
                n += 1;
                if kill_at.contains(&n) {
                    // (Deferred until the cancel is sent, below.)
                    let at = Instant::now() + rng.delay(Duration::from_millis(300));
                    timers.push((at, Timer::Kill));
                }
                let victim = format!("c{n}");
                let (tool, args) = Kind::QueuedVictim.request(&mut rng, n);
                s.call(victim.clone(), Kind::QueuedVictim, n, tool, args)
                    .await;
                n += 1;
                timers.push((
                    Instant::now() + Duration::from_millis(150),
                    Timer::Cancel(victim.clone()),
                ));
                episode = Some((slow, victim));
                continue;
            }
            let mut pick = rng.below(u64::from(weight_total)) as u32;
            let kind = Kind::MIX
                .iter()
                .find(|(_, w)| {
                    if pick < *w {
                        true
                    } else {
                        pick -= w;
                        false
                    }
                })
                .map(|(k, _)| *k)
                .unwrap_or(Kind::ReadOnly);
            let id = format!("c{n}");
            let (tool, args) = kind.request(&mut rng, n);
            s.call(id.clone(), kind, n, tool, args).await;
            if kind == Kind::Cancelled {
                let after = rng.delay(Duration::from_secs_f64(plan.slow_seconds + 0.4));
                timers.push((Instant::now() + after, Timer::Cancel(id)));
            }
            n += 1;
        }
        let outstanding = s.in_flight();
        if n >= plan.calls && outstanding == 0 && timers.is_empty() {
            break;
        }
        // Fire due timers.
        let now = Instant::now();
        let (ready, later): (Vec<_>, Vec<_>) = std::mem::take(&mut timers)
            .into_iter()
            .partition(|(at, _)| *at <= now);
        timers = later;
        let fired = ready.into_iter().map(|(_, t)| t);
        for t in fired {
            match t {
                Timer::Cancel(id) => {
                    let queued_pair = episode.as_ref().is_some_and(|(_, v)| *v == id);
                    if queued_pair {
                        let (slow, victim) = episode.take().expect("episode");
                        // The victim is queued as long as the slow call it
                        // waits behind has not been answered.
                        let slow_done = s.requests.get(&slow).is_some_and(|r| r.answers > 0);
                        s.cancel(&victim).await;
                        if slow_done {
                            s.violations.push(format!(
                                "queued cancel {victim}: the slow call {slow} was already answered (the victim may have run)"
                            ));
                        } else {
                            report.queued_cancels += 1;
                        }
                    } else if s.requests.get(&id).is_some_and(|r| r.answers == 0) {
                        s.cancel(&id).await;
                    }
                }
                Timer::Kill => {
                    // Not while a queued-cancel pair waits for its cancel
                    // (the victim must still be queued then).
                    let worker = if episode.is_none() { s.worker() } else { None };
                    match worker {
                        Some(w) => {
                            let _ = nix::sys::signal::kill(
                                nix::unistd::Pid::from_raw(w.pid),
                                nix::sys::signal::Signal::SIGKILL,
                            );
                            report.kills += 1;
                        }
                        None if n >= plan.calls && s.in_flight() == 0 => {
                            // No call left to start a worker.
                        }
                        None => {
                            timers.push((Instant::now() + Duration::from_millis(50), Timer::Kill))
                        }
                    }
                }
            }
        }
        // Wait for a message or the next timer.
        let next_timer = timers
            .iter()
            .map(|(at, _)| *at)
            .min()
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(1));
        let wait = next_timer
            .saturating_duration_since(Instant::now())
            .min(Duration::from_secs(1));
        // (After the sends above, the window is full or every call is sent.)
        match tokio::time::timeout(wait, s.rx.recv()).await {
            Ok(Some(item)) => {
                let eof = item.as_ref().is_err_and(|e| e == "EOF");
                s.record(item);
                if eof {
                    s.violations
                        .push("the server closed its stdout during the soak".into());
                    break;
                }
                if s.responses % 3 == 0 {
                    s.snapshot();
                }
            }
            Ok(None) => {
                s.violations
                    .push("the server's stdout ended during the soak".into());
                break;
            }
            Err(_) => {}
        }
        if last_hang_check.elapsed() > Duration::from_secs(1) {
            last_hang_check = Instant::now();
            let hung: Vec<String> = s
                .requests
                .iter()
                .filter(|(_, r)| {
                    r.answers == 0 && !r.cancelled && r.sent_at.elapsed() > plan.answer_within
                })
                .map(|(id, _)| id.clone())
                .collect();
            if !hung.is_empty() {
                s.violations.push(format!(
                    "requests not answered within {:?}: {hung:?}",
                    plan.answer_within
                ));
                break;
            }
        }
    }
    report.elapsed = started.elapsed();

    // Late or duplicate answers.
    let quiet_until = tokio::time::Instant::now() + Duration::from_secs(1);
    while let Ok(Some(item)) = tokio::time::timeout_at(quiet_until, s.rx.recv()).await {
        s.record(item);
    }

    // The server is alive and answering.
    s.send(json!({"jsonrpc": "2.0", "id": "post-ping", "method": "ping"}))
        .await;
    match s.wait_for("post-ping", Duration::from_secs(10)).await {
        Some(r) if r.get("result").is_some() => {}
        other => s.violations.push(format!("ping after the soak: {other:?}")),
    }
    // A worker killed while no call runs: nothing may stay behind (no
    // zombie waiting for the next call to notice).
    if let Some(w) = s.worker() {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(w.pid),
            nix::sys::signal::Signal::SIGKILL,
        );
        report.idle_kill = true;
        let killed = Instant::now();
        loop {
            match procfs::proc(w.pid) {
                Some(p) if p.starttime == w.starttime => {
                    if killed.elapsed() > Duration::from_secs(3) {
                        s.violations.push(format!(
                            "the worker killed while idle is still there 3 s later (state {})",
                            p.state
                        ));
                        break;
                    }
                }
                _ => break,
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    report.end = s.warm_up("end").await;
    report.responses = s.responses;
    report.notifications = s.notifications;

    check_requests(&s, &prefix, &mut report);
    check_figures(plan, &mut report);
    report.processes_seen = s.seen.len();
    report.workers_seen = s.workers.len();

    // Processes while serving: only live workers (each with its socket
    // folder) and their warm condas.
    settle_processes(&mut s, true).await;
    report.socket_dir.0 = entries(&tmp);
    let live_folders: HashSet<PathBuf> = procfs::descendants(s.pid, &procfs::all())
        .iter()
        .filter(|p| is_worker(p, s.pid))
        .filter_map(|p| socket_folder(p.pid))
        .collect();
    let stray: Vec<PathBuf> = std::fs::read_dir(&tmp)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    let stray: Vec<String> = stray
        .into_iter()
        .filter(|p| !live_folders.contains(p))
        .map(|p| p.display().to_string())
        .collect();
    if !stray.is_empty() {
        s.violations.push(format!(
            "worker socket directory holds what no live worker uses: {stray:?}"
        ));
    }

    // Close stdin: the server and everything it started must go.
    drop(s.stdin.take());
    let closed = Instant::now();
    match tokio::time::timeout(Duration::from_secs(10), s.child.wait()).await {
        Ok(Ok(_)) => report.exit_after = Some(closed.elapsed()),
        _ => s
            .violations
            .push("the server did not exit within 10 s of its stdin closing".into()),
    }
    settle_processes(&mut s, false).await;
    report.socket_dir.1 = entries(&tmp);
    if !report.socket_dir.1.is_empty() {
        s.violations.push(format!(
            "files left in the worker socket directory after exit: {:?}",
            report.socket_dir.1
        ));
    }
    report.violations.append(&mut s.violations);
    if let Some(to) = &plan.keep_log
        && let Err(e) = std::fs::copy(&s.stderr_path, to)
    {
        report
            .violations
            .push(format!("copying the log to {}: {e}", to.display()));
    }
    if !report.violations.is_empty() {
        let log = s.stderr_text();
        let tail: Vec<&str> = log.lines().rev().take(40).collect();
        report.violations.push(format!(
            "server stderr (last 40 lines):\n{}",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        ));
    }
    drop(prefix);
    report
}

/// Every request answered exactly once with an outcome its kind accepts
/// (a cancelled one at most once); a cancelled queued call never ran.
fn check_requests(s: &Session, prefix: &StandinPrefix, report: &mut Report) {
    let runs = std::fs::read_to_string(prefix.prefix.join("standin-runs.log")).unwrap_or_default();
    let mut bad = Vec::new();
    for id in &s.order {
        let r = &s.requests[id];
        *report.sent.entry(r.kind).or_default() += 1;
        match r.answers {
            0 => report.unanswered += 1,
            1 => report.answered_once += 1,
            _ => report.answered_twice += 1,
        }
        let outcome = r.outcome.unwrap_or(Outcome::NoAnswer);
        *report
            .outcomes
            .entry(r.kind)
            .or_default()
            .entry(outcome)
            .or_default() += 1;
        if r.answers == 0 && !r.cancelled {
            bad.push(format!("{id} ({}) never answered", r.kind.name()));
        }
        if !(r.kind.accepts(outcome) || (r.cancelled && outcome == Outcome::NoAnswer)) {
            bad.push(format!("{id} ({}) ended {}", r.kind.name(), outcome.name()));
        }
        if r.kind == Kind::QueuedVictim && runs.contains(&victim_marker(r.n)) {
            bad.push(format!("{id}: cancelled while queued, yet it ran"));
        }
    }
    if !bad.is_empty() {
        report
            .violations
            .push(format!("requests: {} wrong: {}", bad.len(), bad.join("; ")));
    }
}

fn check_figures(plan: &Plan, report: &mut Report) {
    let pairs = [
        ("server", report.start.server, report.end.server, 0),
        ("worker", report.start.worker, report.end.worker, 1),
    ];
    for (who, a, b, i) in pairs {
        if b.fds > a.fds + plan.fd_slack {
            report.violations.push(format!(
                "{who} open fds {} -> {}: {:?} -> {:?}",
                a.fds, b.fds, report.start.fd_targets[i], report.end.fd_targets[i]
            ));
        }
        if b.threads > a.threads + plan.thread_slack {
            report
                .violations
                .push(format!("{who} threads {} -> {}", a.threads, b.threads));
        }
        if b.rss_kib > a.rss_kib + plan.rss_slack_kib {
            report.violations.push(format!(
                "{who} VmRSS {} KiB -> {} KiB",
                a.rss_kib, b.rss_kib
            ));
        }
    }
}

/// Waits (up to 5 s) until no process is left over and reports what is:
/// zombies in the server's tree, seen processes still there, processes in
/// a seen process group. While `serving`, the server, its live worker and
/// that worker's warm conda are expected; after exit, nothing.
async fn settle_processes(s: &mut Session, serving: bool) -> Vec<Proc> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let table = procfs::all();
        let mut expected: HashSet<i32> = HashSet::new();
        let mut detached = Vec::new();
        if serving {
            // The server, each live worker (the exec lane's, the idle
            // discovery helper's) and each worker's warm conda.
            expected.insert(s.pid);
            let desc = procfs::descendants(s.pid, &table);
            for w in desc.iter().filter(|p| is_worker(p, s.pid)) {
                expected.insert(w.pid);
                if let Some(dir) = socket_folder(w.pid)
                    && !dir.exists()
                {
                    detached.push(format!(
                        "worker {} runs detached (its socket folder {} is gone)",
                        w.pid,
                        dir.display()
                    ));
                }
                for z in desc.iter().filter(|p| is_zygote_of(p, w)) {
                    expected.insert(z.pid);
                }
            }
        }
        let seen_pgids: HashSet<i32> = s.seen.values().map(|p| p.pgid).collect();
        let by_pid: HashMap<i32, &Proc> = table.iter().map(|p| (p.pid, p)).collect();
        let mut problems = detached;
        for p in procfs::descendants(s.pid, &table) {
            if !expected.contains(&p.pid) {
                problems.push(format!(
                    "{} {} ({}) in the server's tree",
                    p.pid,
                    p.comm,
                    if p.is_zombie() { "zombie" } else { "alive" }
                ));
            }
        }
        for ((pid, start), old) in &s.seen {
            if let Some(now) = by_pid.get(pid)
                && now.starttime == *start
                && !expected.contains(pid)
                && now.ppid != s.pid
            {
                problems.push(format!(
                    "{pid} {} (state {}, parent {}) still there",
                    old.comm, now.state, now.ppid
                ));
            }
        }
        for p in &table {
            if seen_pgids.contains(&p.pgid)
                && !expected.contains(&p.pid)
                && p.pid != s.pid
                && !s.seen.contains_key(&(p.pid, p.starttime))
                && (p.pgid != s.pid || serving)
            {
                problems.push(format!(
                    "{} {} in process group {} (state {})",
                    p.pid, p.comm, p.pgid, p.state
                ));
            }
        }
        if problems.is_empty() {
            return table
                .into_iter()
                .filter(|p| expected.contains(&p.pid))
                .collect();
        }
        if Instant::now() > deadline {
            s.violations.push(format!(
                "processes left {} ({}): {}",
                if serving {
                    "while serving"
                } else {
                    "after exit"
                },
                problems.len(),
                problems.join("; ")
            ));
            return Vec::new();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The private folder of a spawned worker's socket (`--socket PATH`).
fn socket_folder(pid: i32) -> Option<PathBuf> {
    let args = procfs::cmdline(pid);
    let i = args.iter().position(|a| a == "--socket")?;
    Path::new(args.get(i + 1)?).parent().map(Path::to_path_buf)
}

/// A live `conda-mcp-worker` child of `server`.
fn is_worker(p: &Proc, server: i32) -> bool {
    p.ppid == server && p.comm.starts_with("conda-mcp-work") && !p.is_zombie()
}

/// A live warm conda of `worker`: its child, leading its own process group.
fn is_zygote_of(p: &Proc, worker: &Proc) -> bool {
    p.ppid == worker.pid && p.pgid == p.pid && !p.is_zombie()
}

fn entries(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .flat_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    let mut v = vec![name.clone()];
                    if let Ok(inner) = std::fs::read_dir(e.path()) {
                        v.extend(
                            inner
                                .flatten()
                                .map(|i| format!("{name}/{}", i.file_name().to_string_lossy())),
                        );
                    }
                    v
                })
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}
