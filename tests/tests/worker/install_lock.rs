//! The call runner and the installation's writer lock, in process against
//! a stand-in conda through the real worker: a write waits for another
//! holder of the lock file (and ends at its time limit when it is never
//! released), a read-only call does not, and a caller that holds the lock
//! across calls (`Runner::take_writer`, `Runner::run_holding`) runs under
//! its guard without taking it again.

use std::sync::Arc;
use std::time::Duration;

use conda_mcp_server::call::run::install_lock::{InstallLock, LockError};
use conda_mcp_server::call::{NotRun, Outcome, Plan, Ran, ResultSettings, Runner};
use conda_mcp_server::discovery::restart::RestartWatch;
use conda_mcp_server::discovery::{DiscoveryOptions, discover};
use conda_mcp_server::policy;
use conda_mcp_server::principal::Principal;
use conda_mcp_server::worker_client::{Executor, WorkerConfig};
use conda_mcp_shared::limits::Limits;
use conda_mcp_tests::bins;
use conda_mcp_tests::standin::StandinPrefix;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

async fn runner(
    p: &StandinPrefix,
    lock_dir: &std::path::Path,
) -> (Runner, conda_mcp_server::catalog::Catalog) {
    let mut worker = WorkerConfig::new(&p.conda_exe);
    worker.worker_exe = bins::worker();
    let opts = DiscoveryOptions {
        conda_exe: Some(p.conda_exe.clone()),
        python: None,
        no_cache: true,
        cache_dir: None,
        timeout: Duration::from_secs(60),
        worker: worker.clone(),
    };
    let found = discover(&opts).await.expect("discovery");
    if let Some(lane) = &found.helper_lane {
        lane.shutdown().await;
    }
    let mut cfg = worker;
    cfg.python = Some(found.python.clone());
    let exec = Arc::new(Executor::new(cfg.clone()));
    let runner = Runner {
        exec,
        workers: None,
        discovery: Arc::new(Executor::new(cfg)),
        restart: RestartWatch::new(opts, &found, false),
        settings: ResultSettings::new(Default::default(), None),
        install_lock: Some(InstallLock::new(lock_dir, &p.prefix)),
        config: None,
    };
    (runner, found.catalog)
}

fn plan(catalog: &conda_mcp_server::catalog::Catalog, argv: &[&str], timeout: Duration) -> Plan {
    let argv: Vec<String> = argv.iter().map(|s| (*s).to_owned()).collect();
    let classification = policy::classify(catalog, &argv);
    let limits = Limits {
        timeout,
        ..Limits::DEFAULT
    };
    Plan::conda("test".into(), argv, limits, classification)
}

fn exit_code(o: &Outcome) -> Option<i64> {
    match o {
        Outcome::Ran {
            ran: Ran::Execution(out),
            ..
        } => out.execution.exit_code.map(i64::from),
        _ => None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_wait_for_the_lock_reads_do_not_and_a_held_guard_serves_several_calls() {
    let p = StandinPrefix::standard();
    let locks = tempfile::tempdir().expect("tempdir");
    let work = tempfile::tempdir().expect("tempdir");
    let (r, catalog) = runner(&p, locks.path()).await;
    let never = CancellationToken::new();
    let far = Instant::now() + Duration::from_secs(30);
    // Another server on the same installation holds the lock.
    let other = InstallLock::new(locks.path(), &p.prefix);
    let held = other.acquire(far, &never, |_| {}).await.expect("other");

    let target = work.path().join("a").display().to_string();
    let write = plan(
        &catalog,
        &["env", "create", "-p", &target, "--json"],
        Duration::from_millis(600),
    );
    assert!(!write.read_only());
    let o = r
        .run(write, &Principal::local(), |_| {}, never.clone())
        .await;
    assert!(
        matches!(
            o,
            Outcome::NotRun {
                reason: NotRun::InstallLock(LockError::TimedOut),
                ..
            }
        ),
        "{o:?}"
    );
    assert_eq!(p.conda_runs(), 0, "conda never started");
    let read = plan(&catalog, &["info", "--json"], Duration::from_secs(30));
    assert!(read.read_only());
    assert_eq!(
        exit_code(
            &r.run(read, &Principal::local(), |_| {}, never.clone())
                .await
        ),
        Some(0)
    );
    drop(held);

    // This server takes the lock for two calls; the other waits meanwhile.
    let guard = r
        .take_writer(Duration::from_secs(30), &never, |_| {})
        .await
        .expect("take")
        .expect("a lock");
    let soon = Instant::now() + Duration::from_millis(300);
    assert!(matches!(
        other.acquire(soon, &never, |_| {}).await,
        Err(LockError::TimedOut)
    ));
    for name in ["a", "b"] {
        let target = work.path().join(name).display().to_string();
        let write = plan(
            &catalog,
            &["env", "create", "-p", &target, "--json"],
            Duration::from_secs(30),
        );
        let o = r
            .run_holding(write, &Principal::local(), &guard, |_| {}, never.clone())
            .await;
        assert_eq!(exit_code(&o), Some(0), "{o:?}");
        assert!(
            work.path()
                .join(name)
                .join("conda-meta")
                .join("history")
                .is_file()
        );
        let soon = Instant::now() + Duration::from_millis(100);
        assert!(
            matches!(
                other.acquire(soon, &never, |_| {}).await,
                Err(LockError::TimedOut)
            ),
            "still held between the calls"
        );
    }
    drop(guard);
    let again = other.acquire(far, &never, |_| {}).await.expect("released");
    drop(again);
}
