//! One writer per conda installation, across server processes (docs/writes.md
//! "One writer per installation").
//!
//! Each server serializes its own conda calls (the exec lane), but two
//! servers on one installation (two hosts, two windows of one host) would
//! run conda concurrently against one package cache and one root prefix.
//! A call the policy classifies as a mutation (applies, `conda run`,
//! anything not read-only) therefore holds an exclusive `flock(2)` on a
//! lock file of the installation while conda runs; read-only calls never
//! touch it.
//!
//! * **Key.** The lock file is `install-<sha256(root prefix)>.lock`: the
//!   root prefix is the `sys.prefix` of conda's interpreter as discovery
//!   reported it, so every server on one installation, whatever the path
//!   it was started with (`--conda-exe` through a symlink, `CONDA_EXE`),
//!   meets the same file.
//! * **Where.** `$XDG_RUNTIME_DIR/conda-mcp/` when that variable is an
//!   absolute path (the per-user runtime directory of systemd and most
//!   desktops), else `conda-mcp-locks-<uid>/` in the temporary folder
//!   (`$TMPDIR`, else `/tmp`) ([`default_dir`]); created
//!   with mode 0700. Both are per user: the lock is taken by the server
//!   process (also when `--worker-user` runs conda as another user, the
//!   server takes it around sending the job), so servers of one user meet;
//!   servers of different users on one installation do not.
//! * **Order.** Within one server the writers first queue in an in-process
//!   FIFO (a [`Lane`]: each waiting writer is told how many writers are
//!   ahead of it, as a [`JobUpdate::Queued`]). The head of that FIFO then
//!   takes a ticket of the installation's queue
//!   ([`super::ticket_queue`], the folder `install-<key>.queue/` beside
//!   the lock file) and waits for the tickets ahead of it, and last takes
//!   the file lock (free at once among servers of this version; it still
//!   excludes an older server, polled every [`POLL`]). Every wait can end
//!   on the call's cancel or its time limit ([`InstallLock::acquire`]).
//! * **Fairness.** Across servers the writers are served in the order
//!   they took a ticket, and a server has at most one ticket at a time
//!   (its FIFO's head), so two busy servers take turns call by call: a
//!   server that releases the lock and asks again queues behind the
//!   waiter of the other. The waiter is woken by the kernel when the
//!   ticket ahead is released, not by polling.
//! * **Release.** Dropping the [`WriterGuard`] closes the file, which
//!   releases the lock; a server killed while holding it releases it too
//!   (the kernel drops the locks of a closed file description). The guard
//!   can be held across several jobs (a plan and its apply).
//! * **Windows.** The lock is `LockFileEx` (exclusive, fail immediately)
//!   through std's `File::try_lock`, held by the open file as `flock` is;
//!   the folder is `conda-mcp-locks-<user>` in the user's temporary folder
//!   (`%TEMP%`, already private to the user), since Windows has no
//!   `XDG_RUNTIME_DIR` and no uid. Windows has no ticket queue: a waiter
//!   polls the file lock every [`POLL`], which is not fair between
//!   servers (docs/writes.md says so).

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::worker_client::JobUpdate;
use crate::worker_client::lane::{Lane, Ticket};

/// How often a waiting call retries the file lock held by another process.
pub const POLL: Duration = Duration::from_millis(50);

/// The lock folder: `$XDG_RUNTIME_DIR/conda-mcp` when `XDG_RUNTIME_DIR` is
/// absolute, else `conda-mcp-locks-<uid>` in the temporary folder (see the
/// module docs).
#[cfg(unix)]
pub fn default_dir() -> PathBuf {
    dir_from(
        std::env::var_os("XDG_RUNTIME_DIR"),
        nix::unistd::getuid().as_raw(),
    )
}

/// The lock folder on Windows: `conda-mcp-locks-<USERNAME>` in the user's
/// temporary folder (see the module docs).
#[cfg(windows)]
pub fn default_dir() -> PathBuf {
    let user = std::env::var("USERNAME").unwrap_or_else(|_| "user".into());
    let safe: String = user
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    std::env::temp_dir().join(format!("conda-mcp-locks-{safe}"))
}

/// [`default_dir`] over explicit values.
pub fn dir_from(xdg_runtime_dir: Option<std::ffi::OsString>, uid: u32) -> PathBuf {
    match xdg_runtime_dir
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        Some(d) => d.join("conda-mcp"),
        None => std::env::temp_dir().join(format!("conda-mcp-locks-{uid}")),
    }
}

/// The lock file of the installation whose root prefix is `root` in `dir`.
pub fn lock_path(dir: &Path, root: &Path) -> PathBuf {
    let key = conda_mcp_shared::fingerprint::sha256_hex(root.as_os_str().as_encoded_bytes());
    dir.join(format!("install-{key}.lock"))
}

/// Why no [`WriterGuard`] was obtained.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// The lock folder or file could not be created or locked.
    #[error("the installation's writer lock {path} could not be taken: {source}")]
    Io {
        /// The lock file.
        path: PathBuf,
        /// What failed.
        source: std::io::Error,
    },
    /// The time limit ran out while another conda-mcp held the lock.
    #[error("the time limit ran out while another conda-mcp was writing to this installation")]
    TimedOut,
    /// The call was cancelled while it waited.
    #[error("the call was cancelled while it waited for the installation's writer lock")]
    Cancelled,
}

/// The writer lock of one conda installation (cheap to share: one per
/// server).
#[derive(Debug)]
pub struct InstallLock {
    path: PathBuf,
    /// Writers of this process, in arrival order.
    local: Lane,
}

/// Held while a call may write to the installation: the in-process turn and
/// the file lock. Dropping it releases both.
#[derive(Debug)]
pub struct WriterGuard {
    // Dropped in this order: the lock file, the queue's ticket, the turn.
    _file: Locked,
    #[cfg(unix)]
    _ticket: super::ticket_queue::QueueTicket,
    _turn: Ticket,
}

impl InstallLock {
    /// The lock of the installation with root prefix `root`, its file in
    /// `dir` (created on first use).
    pub fn new(dir: &Path, root: &Path) -> Self {
        Self {
            path: lock_path(dir, root),
            local: Lane::default(),
        }
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder of the installation's ticket queue:
    /// `install-<key>.queue` beside the lock file.
    pub fn queue_dir(&self) -> PathBuf {
        self.path.with_extension("queue")
    }

    /// Takes the lock, waiting for this server's earlier writers and then
    /// for other processes. `on_update` is told the number of this server's
    /// writers ahead ([`JobUpdate::Queued`], the holder included) whenever it
    /// changes, and once [`JobUpdate::WaitingForWriter`] when another
    /// server is ahead (a live ticket ahead in the installation's queue, or
    /// the file lock held by a server without the queue), for progress
    /// messages. Waiting ends at `deadline` or on `cancel`.
    ///
    /// Errors: [`LockError::TimedOut`], [`LockError::Cancelled`],
    /// [`LockError::Io`] (the folder or file cannot be created or locked).
    pub async fn acquire(
        &self,
        deadline: Instant,
        cancel: &CancellationToken,
        mut on_update: impl FnMut(JobUpdate),
    ) -> Result<WriterGuard, LockError> {
        let mut turn = self.local.join();
        let mut told_ahead = None;
        loop {
            match turn.try_start() {
                Ok(()) => break,
                Err(ahead) => {
                    if told_ahead != Some(ahead) {
                        told_ahead = Some(ahead);
                        on_update(JobUpdate::Queued { position: ahead });
                    }
                }
            }
            tokio::select! {
                () = turn.changed() => {}
                () = cancel.cancelled() => return Err(LockError::Cancelled),
                () = tokio::time::sleep_until(deadline) => return Err(LockError::TimedOut),
            }
        }
        let mut told = false;
        #[cfg(unix)]
        let ticket = {
            use super::ticket_queue::{WaitError, take};
            let queue = self.queue_dir();
            let io = |source| LockError::Io {
                path: queue.clone(),
                source,
            };
            let ticket = take(&queue).map_err(io)?;
            let waited = ticket
                .wait_turn(deadline, cancel, || {
                    told = true;
                    tracing::info!(lock = %self.path.display(), "waiting for another conda-mcp on this installation");
                    on_update(JobUpdate::WaitingForWriter);
                })
                .await;
            match waited {
                Ok(()) => ticket,
                Err(WaitError::Cancelled) => return Err(LockError::Cancelled),
                Err(WaitError::TimedOut) => return Err(LockError::TimedOut),
                Err(WaitError::Io(e)) => return Err(io(e)),
            }
        };
        loop {
            if let Some(file) = self.try_file()? {
                return Ok(WriterGuard {
                    _file: file,
                    #[cfg(unix)]
                    _ticket: ticket,
                    _turn: turn,
                });
            }
            if !told {
                told = true;
                tracing::info!(lock = %self.path.display(), "waiting for another conda-mcp on this installation");
                on_update(JobUpdate::WaitingForWriter);
            }
            tokio::select! {
                () = tokio::time::sleep(POLL) => {}
                () = cancel.cancelled() => return Err(LockError::Cancelled),
                () = tokio::time::sleep_until(deadline) => return Err(LockError::TimedOut),
            }
        }
    }

    /// One non-blocking attempt at the file lock: `None` while another
    /// open file description holds it.
    fn try_file(&self) -> Result<Option<Locked>, LockError> {
        let io = |source| LockError::Io {
            path: self.path.clone(),
            source,
        };
        if let Some(dir) = self.path.parent() {
            let mut builder = std::fs::DirBuilder::new();
            builder.recursive(true);
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
            builder.create(dir).map_err(io)?;
        }
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true).truncate(false);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let file = options.open(&self.path).map_err(io)?;
        lock_exclusive_nonblocking(file).map_err(io)
    }
}

/// A file holding the exclusive lock: `flock(2)` on Unix.
#[cfg(unix)]
type Locked = nix::fcntl::Flock<File>;
/// A file holding the exclusive lock: `LockFileEx` on Windows (released
/// when the file closes).
#[cfg(windows)]
type Locked = File;

/// One non-blocking exclusive lock attempt: `None` while another open file
/// holds it.
#[cfg(unix)]
fn lock_exclusive_nonblocking(file: File) -> std::io::Result<Option<Locked>> {
    use nix::errno::Errno;
    use nix::fcntl::{Flock, FlockArg};
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(locked) => Ok(Some(locked)),
        Err((_, Errno::EWOULDBLOCK)) => Ok(None),
        Err((_, e)) => Err(std::io::Error::from(e)),
    }
}

/// One non-blocking exclusive lock attempt (Windows: `LockFileEx` with
/// `LOCKFILE_FAIL_IMMEDIATELY`, through std).
#[cfg(windows)]
fn lock_exclusive_nonblocking(file: File) -> std::io::Result<Option<Locked>> {
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[cfg(unix)]
    #[test]
    fn the_folder_follows_xdg_runtime_dir_or_falls_back_per_user() {
        assert_eq!(
            dir_from(Some("/run/user/7".into()), 7),
            PathBuf::from("/run/user/7/conda-mcp")
        );
        let fallback = dir_from(Some("relative".into()), 7);
        assert!(fallback.ends_with("conda-mcp-locks-7"), "{fallback:?}");
        assert_eq!(dir_from(None, 7), fallback);
        assert_ne!(
            lock_path(Path::new("/l"), Path::new("/opt/conda")),
            lock_path(Path::new("/l"), Path::new("/opt/conda2"))
        );
    }

    #[tokio::test]
    async fn a_second_holder_waits_until_the_first_is_dropped() {
        let d = tempfile::tempdir().expect("tempdir");
        let root = Path::new("/some/conda");
        let a = InstallLock::new(d.path(), root);
        // Another server: its own in-process turn, the same file.
        let b = InstallLock::new(d.path(), root);
        let never = CancellationToken::new();
        let far = Instant::now() + Duration::from_secs(30);
        let held = a.acquire(far, &never, |_| {}).await.expect("first");
        let mut waited = 0;
        let soon = Instant::now() + Duration::from_millis(300);
        let e = b
            .acquire(soon, &never, |_| waited += 1)
            .await
            .expect_err("held elsewhere");
        assert!(matches!(e, LockError::TimedOut), "{e}");
        assert_eq!(waited, 1, "told once that it waits");
        let cancel = CancellationToken::new();
        cancel.cancel();
        let e = b
            .acquire(far, &cancel, |_| {})
            .await
            .expect_err("cancelled");
        assert!(matches!(e, LockError::Cancelled), "{e}");
        drop(held);
        let again = b.acquire(far, &never, |_| {}).await.expect("free again");
        drop(again);
    }

    #[tokio::test]
    async fn writers_of_one_server_are_told_their_position() {
        let d = tempfile::tempdir().expect("tempdir");
        let lock = Arc::new(InstallLock::new(d.path(), Path::new("/some/conda")));
        let never = CancellationToken::new();
        let far = Instant::now() + Duration::from_secs(30);
        let held = lock.acquire(far, &never, |_| {}).await.expect("first");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let second = {
            let lock = lock.clone();
            let never = never.clone();
            tokio::spawn(async move {
                lock.acquire(far, &never, move |u| {
                    let _ = tx.send(u);
                })
                .await
                .map(drop)
            })
        };
        assert_eq!(
            rx.recv().await,
            Some(JobUpdate::Queued { position: 1 }),
            "the second writer waits behind the holder"
        );
        drop(held);
        second.await.expect("joined").expect("taken once released");
    }

    #[cfg(unix)]
    /// The queue folder beside the lock file (the tests build it without
    /// the module's helpers so they also compile against the polling code).
    fn queue_folder(lock: &InstallLock) -> PathBuf {
        lock.path().with_extension("queue")
    }

    #[cfg(unix)]
    /// Waits for the first [`JobUpdate::WaitingForWriter`] on `rx`.
    async fn until_waiting(rx: &mut tokio::sync::mpsc::UnboundedReceiver<JobUpdate>) {
        let wait = async {
            while let Some(u) = rx.recv().await {
                if u == JobUpdate::WaitingForWriter {
                    return;
                }
            }
            panic!("the waiter ended without waiting");
        };
        tokio::time::timeout(Duration::from_secs(5), wait)
            .await
            .expect("told that it waits within 5 s");
    }

    #[cfg(unix)]
    /// Starts `lock.acquire` on its own task: its updates go to the returned
    /// receiver; once it holds the lock it pushes `name` onto `order`, holds
    /// for `hold` and releases.
    fn ask(
        lock: &Arc<InstallLock>,
        name: &'static str,
        order: &Arc<std::sync::Mutex<Vec<&'static str>>>,
        cancel: &CancellationToken,
        hold: Duration,
    ) -> (
        tokio::task::JoinHandle<Result<(), LockError>>,
        tokio::sync::mpsc::UnboundedReceiver<JobUpdate>,
    ) {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let (lock, order, cancel) = (lock.clone(), order.clone(), cancel.clone());
        let task = tokio::spawn(async move {
            let far = Instant::now() + Duration::from_secs(30);
            let guard = lock
                .acquire(far, &cancel, move |u| {
                    let _ = tx.send(u);
                })
                .await?;
            order.lock().expect("order").push(name);
            tokio::time::sleep(hold).await;
            drop(guard);
            Ok(())
        });
        (task, rx)
    }

    #[cfg(unix)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_second_server_is_served_within_one_call_of_asking() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let d = tempfile::tempdir().expect("tempdir");
        let root = Path::new("/some/conda");
        let a = Arc::new(InstallLock::new(d.path(), root));
        let b = InstallLock::new(d.path(), root);
        let never = CancellationToken::new();
        let far = Instant::now() + Duration::from_secs(60);
        let done = Arc::new(AtomicUsize::new(0));
        let backlog = {
            let (a, never, done) = (a.clone(), never.clone(), done.clone());
            tokio::spawn(async move {
                for _ in 0..40 {
                    let g = a.acquire(far, &never, |_| {}).await.expect("A's call");
                    tokio::time::sleep(Duration::from_millis(30)).await;
                    drop(g);
                    done.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        while done.load(Ordering::SeqCst) < 3 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let asked = done.load(Ordering::SeqCst);
        let started = std::time::Instant::now();
        let g = b.acquire(far, &never, |_| {}).await.expect("B's call");
        let served = done.load(Ordering::SeqCst);
        let waited = started.elapsed();
        drop(g);
        backlog.await.expect("A's backlog");
        assert!(
            served - asked <= 2,
            "B asked after {asked} of A's calls and was served after {served} \
             (waited {waited:?}): A's backlog went first"
        );
    }

    #[cfg(unix)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn waiters_of_three_servers_are_served_in_the_order_they_asked() {
        let d = tempfile::tempdir().expect("tempdir");
        let root = Path::new("/some/conda");
        let a = InstallLock::new(d.path(), root);
        let b = Arc::new(InstallLock::new(d.path(), root));
        let c = Arc::new(InstallLock::new(d.path(), root));
        let never = CancellationToken::new();
        let far = Instant::now() + Duration::from_secs(30);
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let held = a.acquire(far, &never, |_| {}).await.expect("A");
        let hold = Duration::from_millis(20);
        let (tb, mut rb) = ask(&b, "B", &order, &never, hold);
        until_waiting(&mut rb).await;
        let (tc, mut rc) = ask(&c, "C", &order, &never, hold);
        until_waiting(&mut rc).await;
        drop(held);
        tb.await.expect("B joined").expect("B served");
        tc.await.expect("C joined").expect("C served");
        assert_eq!(*order.lock().expect("order"), ["B", "C"]);
        let left: Vec<_> = std::fs::read_dir(queue_folder(&a))
            .expect("queue folder")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(left, ["next"], "every ticket is removed when released");
    }

    #[cfg(unix)]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cancelled_waiter_is_skipped() {
        let d = tempfile::tempdir().expect("tempdir");
        let root = Path::new("/some/conda");
        let a = InstallLock::new(d.path(), root);
        let b = Arc::new(InstallLock::new(d.path(), root));
        let c = Arc::new(InstallLock::new(d.path(), root));
        let never = CancellationToken::new();
        let far = Instant::now() + Duration::from_secs(30);
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let held = a.acquire(far, &never, |_| {}).await.expect("A");
        let hold = Duration::from_millis(20);
        let cancel_b = CancellationToken::new();
        let (tb, mut rb) = ask(&b, "B", &order, &cancel_b, hold);
        until_waiting(&mut rb).await;
        let (tc, mut rc) = ask(&c, "C", &order, &never, hold);
        until_waiting(&mut rc).await;
        cancel_b.cancel();
        let e = tb.await.expect("B joined").expect_err("B cancelled");
        assert!(matches!(e, LockError::Cancelled), "{e}");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(order.lock().expect("order").is_empty(), "A still holds");
        drop(held);
        tokio::time::timeout(Duration::from_secs(5), tc)
            .await
            .expect("C served within 5 s of A's release")
            .expect("C joined")
            .expect("C served");
        assert_eq!(*order.lock().expect("order"), ["C"]);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn a_ticket_whose_owner_is_gone_is_skipped_and_removed() {
        let d = tempfile::tempdir().expect("tempdir");
        let a = InstallLock::new(d.path(), Path::new("/some/conda"));
        let q = queue_folder(&a);
        std::fs::create_dir_all(&q).expect("queue folder");
        let stale = q.join(format!("{:020}", 0));
        std::fs::write(&stale, b"").expect("stale ticket");
        std::fs::write(q.join("next"), b"1\n").expect("next");
        let never = CancellationToken::new();
        let soon = Instant::now() + Duration::from_secs(2);
        let mut waited = false;
        let g = a
            .acquire(soon, &never, |u| waited |= u == JobUpdate::WaitingForWriter)
            .await
            .expect("a ticket nobody holds does not block");
        assert!(!waited, "not told to wait for a ticket nobody holds");
        assert!(!stale.exists(), "the stale ticket is removed");
        drop(g);
    }

    /// Figures for docs/benchmarks.md "Writer lock fairness": server A has
    /// a backlog of 200 calls of 10 ms, server B then makes 20 calls one
    /// after the other (each asked when the previous one is released);
    /// prints B's median and longest wait. Two backlogs: 200 writers queued
    /// at once in A's lane, and 200 calls made one after the other (the next
    /// asked as the previous one is released). B gives up after 60 s.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "a measurement: run with --ignored --nocapture"]
    async fn fairness_figures() {
        for queued in [true, false] {
            fairness_run(queued).await;
        }
    }

    async fn fairness_run(queued: bool) {
        let d = tempfile::tempdir().expect("tempdir");
        let root = Path::new("/some/conda");
        let a = Arc::new(InstallLock::new(d.path(), root));
        let b = InstallLock::new(d.path(), root);
        let never = CancellationToken::new();
        let far = Instant::now() + Duration::from_secs(600);
        let hold = Duration::from_millis(10);
        let mut backlog = Vec::new();
        if queued {
            for _ in 0..200 {
                let (a, never) = (a.clone(), never.clone());
                backlog.push(tokio::spawn(async move {
                    let g = a.acquire(far, &never, |_| {}).await.expect("A's call");
                    tokio::time::sleep(hold).await;
                    drop(g);
                }));
            }
            // Let every writer join A's lane (a few may already be done).
            tokio::time::sleep(Duration::from_millis(25)).await;
        } else {
            let (a, never) = (a.clone(), never.clone());
            backlog.push(tokio::spawn(async move {
                for _ in 0..200 {
                    let g = a.acquire(far, &never, |_| {}).await.expect("A's call");
                    tokio::time::sleep(hold).await;
                    drop(g);
                }
            }));
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let started = std::time::Instant::now();
        let cap = Instant::now() + Duration::from_secs(60);
        let mut waits = Vec::new();
        for _ in 0..20 {
            let t = std::time::Instant::now();
            match b.acquire(cap, &never, |_| {}).await {
                Ok(g) => {
                    waits.push(t.elapsed());
                    tokio::time::sleep(hold).await;
                    drop(g);
                }
                Err(LockError::TimedOut) => {
                    eprintln!(
                        "B: {} of 20 calls served; call {} waited more than 60 s",
                        waits.len(),
                        waits.len() + 1
                    );
                    break;
                }
                Err(e) => panic!("{e}"),
            }
        }
        let b_done = started.elapsed();
        for t in backlog {
            t.await.expect("A's calls");
        }
        let a_done = started.elapsed();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        let mut sorted = waits.clone();
        sorted.sort();
        let what = if queued {
            "A: 200 writers queued"
        } else {
            "A: 200 calls one after the other"
        };
        if let (Some(median), Some(longest)) = (sorted.get(sorted.len() / 2), sorted.last()) {
            eprintln!(
                "{what}. B's wait over {} calls: median {:.1} ms, longest {:.1} ms; \
                 B done after {:.0} ms, A's 200 after {:.0} ms",
                sorted.len(),
                ms(*median),
                ms(*longest),
                ms(b_done),
                ms(a_done)
            );
        }
        eprintln!(
            "B's waits (ms): {:?}",
            waits.iter().map(|w| ms(*w).round()).collect::<Vec<_>>()
        );
    }
}
