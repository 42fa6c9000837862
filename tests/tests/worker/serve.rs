//! Hardened deployment (docs/operating.md "Operators"): `conda-mcp-worker serve` listening on a
//! socket, servers connecting with a socket-mode [`WorkerConfig`], peer-uid
//! checks, one connection at a time, `--worker-user` and its home, the
//! environment allowlist, request clamping and surviving a server killed mid-job.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use conda_mcp_server::worker_client::{ExecError, Executor, JobRefusal, WorkerConfig};
use conda_mcp_tests::exec::{alive, gone_within, run_collect, sh, sh_config};
use conda_mcp_tests::tiers::{Tier, missing};

/// A `conda-mcp-worker serve` process whose log goes to a file.
struct Served {
    child: std::process::Child,
    socket: PathBuf,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Served {
    fn start(extra: &[&str], env: &[(&str, &str)]) -> Served {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
            .expect("chmod");
        let socket = dir.path().join("worker.sock");
        let log = dir.path().join("worker.log");
        let mut cmd = Command::new(conda_mcp_tests::bins::worker());
        cmd.arg("serve")
            .arg("--socket")
            .arg(&socket)
            .args(["--conda-exe", "/bin/sh"])
            .args(extra)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("log file"));
        let child = cmd.spawn().expect("spawn serve");
        let t0 = Instant::now();
        // The socket file appears at bind(), before listen() and the chmod:
        // wait for the worker's own "listening" line instead.
        while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("listening")) {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "the worker never listened"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        Served {
            child,
            socket,
            log,
            _dir: dir,
        }
    }

    fn executor(&self) -> Executor {
        let mut cfg = sh_config();
        cfg.socket = Some(self.socket.clone());
        Executor::new(cfg)
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The log once it holds every one of `needles`
    /// ([`conda_mcp_tests::logs::holding`]).
    fn log_holding(&self, needles: &[&str]) -> String {
        conda_mcp_tests::logs::holding(&self.log, needles)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[tokio::test]
async fn a_server_connects_to_a_listening_worker_and_runs_calls() {
    let w = Served::start(&["--allow-uid", "0,4242"], &[]);
    let ex = w.executor();
    ex.connect().await.expect("connects");
    assert_eq!(ex.worker_pid(), Some(w.pid()));
    let r = run_collect(&ex, sh("echo hello", Duration::from_secs(10)))
        .await
        .0
        .expect("result");
    assert_eq!(r.stdout, "hello\n");
    assert_eq!(r.exit_code, Some(0));
    ex.shutdown().await;
    let log = w.log_holding(&["connection accepted", "job started", "job finished"]);
    assert!(
        log.contains("connection accepted") && log.contains("peer_uid=0"),
        "{log}"
    );
    assert!(
        log.contains("job started") && log.contains("program=/bin/sh"),
        "{log}"
    );
    assert!(
        log.contains("job finished") && log.contains("exit_code=0"),
        "{log}"
    );
}

#[tokio::test]
async fn no_socket_is_a_clear_error() {
    let mut cfg = WorkerConfig::new("/bin/sh");
    cfg.socket = Some(PathBuf::from("/nonexistent/conda-mcp/worker.sock"));
    let err = Executor::new(cfg)
        .connect()
        .await
        .expect_err("nothing there");
    assert!(matches!(err, ExecError::WorkerUnavailable(_)), "{err:?}");
    assert!(
        err.to_string()
            .contains("/nonexistent/conda-mcp/worker.sock"),
        "{err}"
    );
}

#[tokio::test]
async fn another_server_process_is_refused_while_one_is_connected() {
    let w = Served::start(&["--allow-uid", "0,65534", "--socket-mode", "666"], &[]);
    let first = w.executor();
    first.connect().await.expect("first connects");
    // The same server process may hold a second connection (its other lane).
    let lane2 = w.executor();
    let r = run_collect(&lane2, sh("echo lane2", Duration::from_secs(10)))
        .await
        .0
        .expect("second lane");
    assert_eq!(r.stdout, "lane2\n");
    // Another process is refused at once.
    let answer = tokio::task::spawn_blocking({
        let s = w.socket.clone();
        move || connect_with_python(&s, None)
    })
    .await
    .expect("join");
    assert!(answer.contains("another server is connected"), "{answer:?}");
    first.shutdown().await;
    lane2.shutdown().await;
    // Once the first server is gone, another process gets in (no refusal:
    // the worker waits for its Hello, which this client never sends).
    let mut admitted = false;
    for _ in 0..50 {
        let s = w.socket.clone();
        let answer = tokio::task::spawn_blocking(move || connect_with_python(&s, Some(0.3)))
            .await
            .expect("join");
        if !answer.contains("another server") {
            admitted = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(admitted, "log: {}", w.log());
    let log = w.log();
    assert!(
        log.contains("connection refused: another server is connected"),
        "{log}"
    );
}

/// A Python that uid 65534 can execute (the one on `PATH` may live in
/// root's home).
const SYSTEM_PYTHON: &str = "/usr/bin/python3";

/// A Python client (another process) connects and prints what it receives
/// until EOF, or until `wait` seconds passed without data.
fn connect_with_python(socket: &Path, wait: Option<f64>) -> String {
    run_python_client(socket, wait, None)
}

/// [`connect_with_python`] under uid 65534.
fn connect_as_nobody(socket: &Path) -> String {
    run_python_client(socket, None, Some(65534))
}

fn run_python_client(socket: &Path, wait: Option<f64>, uid: Option<u32>) -> String {
    let code = r#"
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
if sys.argv[2] != "none":
    s.settimeout(float(sys.argv[2]))
data = b""
try:
    while True:
        chunk = s.recv(4096)
        if not chunk:
            break
        data += chunk
except socket.timeout:
    pass
sys.stdout.write(data.decode("latin-1"))
"#;
    let mut cmd = Command::new(SYSTEM_PYTHON);
    cmd.args(["-c", code])
        .arg(socket)
        .arg(wait.map_or("none".to_string(), |w| w.to_string()))
        .stdin(Stdio::null());
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    let out = cmd.output().expect("run the client");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test]
async fn a_peer_whose_uid_is_not_allowed_is_refused() {
    const TEST: &str = "a_peer_whose_uid_is_not_allowed_is_refused";
    if !nix::unistd::Uid::effective().is_root() {
        missing(
            Tier::Root,
            TEST,
            "not root: a client under a second uid needs it",
        );
        return;
    }
    if !Path::new(SYSTEM_PYTHON).is_file() {
        missing(
            Tier::Root,
            TEST,
            &format!("no {SYSTEM_PYTHON} for the second uid"),
        );
        return;
    }
    let w = Served::start(&["--allow-uid", "0", "--socket-mode", "666"], &[]);
    let mode = std::fs::metadata(&w.socket)
        .expect("socket")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o666);
    let answer = tokio::task::spawn_blocking({
        let s = w.socket.clone();
        move || connect_as_nobody(&s)
    })
    .await
    .expect("join");
    assert!(
        answer.contains("peer uid 65534 is not allowed"),
        "{answer:?}"
    );
    let log = w.log();
    assert!(
        log.contains("connection refused: uid not allowed") && log.contains("peer_uid=65534"),
        "{log}"
    );
    // The allowed uid still gets in.
    let ex = w.executor();
    let r = run_collect(&ex, sh("id -u", Duration::from_secs(10)))
        .await
        .0
        .expect("result");
    assert_eq!(r.stdout.trim(), "0");
    ex.shutdown().await;
}

#[tokio::test]
async fn the_default_socket_mode_is_0660() {
    let w = Served::start(&["--allow-uid", "0"], &[]);
    let mode = std::fs::metadata(&w.socket)
        .expect("socket")
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o660);
}

#[tokio::test]
async fn worker_user_runs_conda_as_that_user() {
    const TEST: &str = "worker_user_runs_conda_as_that_user";
    if !nix::unistd::Uid::effective().is_root() {
        missing(Tier::Root, TEST, "not root: --worker-user needs it");
        return;
    }
    let Ok(Some(nobody)) = nix::unistd::User::from_name("nobody") else {
        missing(Tier::Root, TEST, "no user `nobody`");
        return;
    };
    // A user whose home does not exist (a throw-away one: `nobody`'s home
    // exists on some systems): the worker refuses to run anything for it.
    let Some((homeless, _)) = conda_mcp_tests::users::without_home(TEST, "cmcp-nohome-serve")
    else {
        return;
    };
    {
        // The same user and job twice, the only difference a home: without
        // one the worker refuses before the job (the job's mark is not
        // made); with `--home` it runs.
        let dir = tempfile::tempdir().expect("tempdir");
        // a job that ran as that user could write its mark here
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
            .expect("chmod");
        let ran = dir.path().join("ran");
        let job = || {
            sh(
                &format!("touch '{}'", ran.display()),
                Duration::from_secs(10),
            )
        };
        let mut cfg = sh_config();
        cfg.user = Some(homeless.clone());
        let ex = Executor::new(cfg.clone());
        let err = run_collect(&ex, job())
            .await
            .0
            .expect_err("ran without a home");
        assert!(
            matches!(err, ExecError::WorkerUnavailable(_)),
            "the worker did not start: {err:?}"
        );
        assert!(!ran.exists(), "the job ran without a home");
        ex.shutdown().await;
        cfg.home = Some(dir.path().join("home"));
        let ex = Executor::new(cfg);
        let r = run_collect(&ex, job()).await.0.expect("runs with --home");
        assert_eq!(r.exit_code, Some(0), "{r:?}");
        assert!(ran.exists(), "the job did not run with --home");
        ex.shutdown().await;
    }
    // With --home the directory is created 0700 for nobody and is conda's
    // HOME.
    let base = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(base.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let home = base.path().join("worker-home");
    let mut cfg = sh_config();
    cfg.user = Some("nobody".into());
    cfg.home = Some(home.clone());
    let ex = Executor::new(cfg);
    let r = run_collect(
        &ex,
        sh(
            "id -u; id -g; id -G; echo $HOME; echo $USER; touch \"$HOME/written\" && echo ok",
            Duration::from_secs(10),
        ),
    )
    .await
    .0
    .expect("result");
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines[0], nobody.uid.to_string(), "{}", r.stdout);
    assert_eq!(lines[1], nobody.gid.to_string(), "{}", r.stdout);
    assert_eq!(
        lines[2],
        nobody.gid.to_string(),
        "no supplementary groups: {}",
        r.stdout
    );
    assert_eq!(lines[3], home.display().to_string());
    assert_eq!(lines[4], "nobody");
    assert_eq!(lines[5], "ok", "the home is writable: {r:?}");
    let meta = std::fs::metadata(&home).expect("home");
    {
        use std::os::unix::fs::MetadataExt;
        assert_eq!(meta.uid(), nobody.uid.as_raw());
        assert_eq!(meta.mode() & 0o777, 0o700);
    }
    ex.shutdown().await;
}

#[tokio::test]
async fn serve_refuses_to_start_without_a_writable_home() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(conda_mcp_tests::bins::worker())
        .arg("serve")
        .arg("--socket")
        .arg(dir.path().join("w.sock"))
        .args(["--conda-exe", "/bin/sh", "--allow-uid", "0"])
        .env("HOME", dir.path().join("missing-home"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .expect("run");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("missing-home") && err.contains("does not exist"),
        "{err}"
    );
    assert!(err.contains("--home DIR"), "the fix is named: {err}");
    // --home creates it and conda gets it as HOME.
    let home = dir.path().join("made-home");
    let w = Served::start(
        &["--allow-uid", "0", "--home", home.to_str().expect("utf-8")],
        &[("HOME", "/nonexistent-home")],
    );
    let ex = w.executor();
    let r = run_collect(&ex, sh("echo $HOME; pwd", Duration::from_secs(10)))
        .await
        .0
        .expect("result");
    assert_eq!(r.stdout, format!("{}\n/\n", home.display()));
    ex.shutdown().await;
}

#[tokio::test]
async fn activation_variables_do_not_reach_conda() {
    let activation = [
        ("CONDA_PREFIX", "/opt/env"),
        ("CONDA_PREFIX_1", "/opt/base"),
        ("CONDA_PREFIX_12", "/opt/other"),
        ("CONDA_DEFAULT_ENV", "env"),
        ("CONDA_SHLVL", "2"),
        ("CONDA_PROMPT_MODIFIER", "(env) "),
        ("_CE_M", "x"),
        ("_CE_CONDA", "y"),
    ];
    let mut env = activation.to_vec();
    env.push(("CONDA_MCP_TEST_KEEP", "kept"));
    env.push(("CONDA_PKGS_DIRS", "/tmp/pkgs"));
    env.push(("GITHUB_TOKEN", "ghp_x"));
    env.push(("X_API_KEY", "k"));
    env.push(("OPERATOR_SETTING", "passed"));
    env.push(("PATH", "/opt/env/bin:/usr/bin:/opt/base/bin/:/bin"));
    let w = Served::start(&["--allow-uid", "0", "--pass-env", "OPERATOR_*"], &env);
    let ex = w.executor();
    let r = run_collect(&ex, sh("env", Duration::from_secs(10)))
        .await
        .0
        .expect("result");
    let names: Vec<&str> = r
        .stdout
        .lines()
        .filter_map(|l| l.split('=').next())
        .collect();
    for (name, _) in activation {
        assert!(!names.contains(&name), "{name} reached conda");
    }
    assert!(r.stdout.contains("CONDA_MCP_TEST_KEEP=kept"));
    assert!(r.stdout.contains("CONDA_PKGS_DIRS=/tmp/pkgs"));
    assert!(r.stdout.contains("OPERATOR_SETTING=passed"), "--pass-env");
    // The activated environments' bin directories left PATH.
    assert!(
        r.stdout.lines().any(|l| l == "PATH=/usr/bin:/bin"),
        "{}",
        r.stdout
    );
    for secret in ["GITHUB_TOKEN", "X_API_KEY"] {
        assert!(!names.contains(&secret), "{secret} reached conda");
    }
    ex.shutdown().await;
}

#[tokio::test]
async fn requests_are_clamped_to_the_workers_limits() {
    let w = Served::start(
        &[
            "--allow-uid",
            "0",
            "--max-timeout",
            "1",
            "--max-output-bytes",
            "10",
            "--max-stdin-bytes",
            "4",
        ],
        &[],
    );
    let ex = w.executor();
    let mut job = sh("echo 0123456789abcdef; sleep 300", Duration::from_secs(300));
    job.limits.output_limit_bytes = 1024;
    let t0 = Instant::now();
    let r = run_collect(&ex, job).await.0.expect("result");
    assert!(r.timed_out, "{r:?}");
    // at the worker's 1 s, not the 300 s asked for (30 s is far from both)
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "took {:?}",
        t0.elapsed()
    );
    assert_eq!(r.stdout, "0123456789");
    assert!(r.stdout_truncated);
    let mut job = sh("cat", Duration::from_secs(5));
    job.stdin = Some(b"12345".to_vec());
    let err = run_collect(&ex, job)
        .await
        .0
        .expect_err("stdin over the worker's limit");
    assert_eq!(
        err,
        ExecError::Rejected(JobRefusal::StdinTooLarge {
            len_bytes: 5,
            limit_bytes: 4
        })
    );
    assert!(
        err.to_string().contains("exceeds the limit of 4 bytes"),
        "{err}"
    );
    ex.shutdown().await;
    let log = w.log();
    assert!(
        log.contains("request clamped: timeout")
            && log.contains("requested_ms=300000 clamped_ms=1000"),
        "{log}"
    );
    assert!(log.contains("request clamped: output_limit_bytes"), "{log}");
    assert!(log.contains("request clamped: stdin_limit_bytes"), "{log}");
}

/// Used by [`a_server_killed_mid_job_leaves_no_job_behind`]: runs as a
/// separate "server" process that connects to the socket named in
/// `CONDA_MCP_TEST_SOCKET`, starts a long job, prints the job's pid and
/// waits to be killed.
#[tokio::test]
#[ignore = "helper process for a_server_killed_mid_job_leaves_no_job_behind"]
async fn helper_server_process() {
    let socket = std::env::var_os("CONDA_MCP_TEST_SOCKET").expect("CONDA_MCP_TEST_SOCKET");
    // Socket mode: no worker binary is started (so none is looked up).
    let mut cfg = WorkerConfig::new("/bin/sh");
    cfg.socket = Some(socket.into());
    let ex = Executor::new(cfg);
    let res = ex
        .run(
            sh("sleep 300 & echo $!; sleep 300", Duration::from_secs(300)),
            |u| {
                if let conda_mcp_server::worker_client::JobUpdate::Started { pid } = u {
                    use std::io::Write;
                    let mut out = std::io::stdout();
                    let _ = writeln!(out, "JOBPID {pid}");
                    let _ = out.flush();
                }
            },
        )
        .await;
    panic!("the helper should have been killed, got {res:?}");
}

#[tokio::test]
async fn a_server_killed_mid_job_leaves_no_job_behind() {
    use std::io::BufRead;
    let w = Served::start(&["--allow-uid", "0"], &[]);
    let mut server = conda_mcp_tests::bins::helper_test(module_path!(), "helper_server_process")
        .env("CONDA_MCP_TEST_SOCKET", &w.socket)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("helper server");
    let stdout = server.stdout.take().expect("stdout");
    let job_pid = tokio::task::spawn_blocking(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            let line = line.expect("line");
            // libtest prints "test <name> ... " before it.
            if let Some((_, p)) = line.split_once("JOBPID ") {
                return p.trim().parse::<u32>().expect("pid");
            }
        }
        panic!("the helper printed no job pid");
    });
    let job_pid = match tokio::time::timeout(Duration::from_secs(30), job_pid).await {
        Ok(pid) => pid.expect("join"),
        Err(_) => panic!("the helper started no job in time; worker log: {}", w.log()),
    };
    assert!(alive(job_pid));
    server.kill().expect("kill the server");
    server.wait().expect("reap the server");
    assert!(
        gone_within(job_pid, Duration::from_secs(30)).await,
        "the job survived its server"
    );
    // The worker is still there and takes the next server.
    let ex = w.executor();
    let mut ok = None;
    for _ in 0..50 {
        match run_collect(&ex, sh("echo next", Duration::from_secs(10)))
            .await
            .0
        {
            Ok(r) => {
                ok = Some(r);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    let r = ok.unwrap_or_else(|| panic!("no next connection; log: {}", w.log()));
    assert_eq!(r.stdout, "next\n");
    let log = w.log();
    assert!(
        log.contains("connection ended during a job: killing it"),
        "{log}"
    );
    ex.shutdown().await;
}

#[tokio::test]
async fn json_log_lines_carry_the_job_events_and_never_stdin() {
    let w = Served::start(&["--allow-uid", "0", "--log-format", "json"], &[]);
    let ex = w.executor();
    let mut job = sh("cat >/dev/null; exit 4", Duration::from_secs(10));
    job.stdin = Some(b"SECRET-STDIN-CONTENT".to_vec());
    let r = run_collect(&ex, job).await.0.expect("result");
    assert_eq!(r.exit_code, Some(4));
    ex.shutdown().await;
    let log = w.log_holding(&["job finished"]);
    assert!(!log.contains("SECRET-STDIN-CONTENT"), "{log}");
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let finished = lines
        .iter()
        .find(|l| l["message"] == "job finished")
        .unwrap_or_else(|| panic!("no job finished line: {log}"));
    assert_eq!(finished["exit_code"], "4", "{finished}");
    for field in [
        "job",
        "duration_ms",
        "stdout_kept",
        "stdout_dropped",
        "stderr_kept",
        "stderr_dropped",
        "timed_out",
        "cancelled",
        "descendants_killed",
    ] {
        assert!(finished.get(field).is_some(), "{field} missing: {finished}");
    }
    assert!(
        lines
            .iter()
            .any(|l| l["message"] == "connection accepted" && l["peer_uid"] == "0")
    );
}
