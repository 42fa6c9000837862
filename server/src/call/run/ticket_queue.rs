//! A fair queue of writers across processes (Unix): the order in which the
//! servers on one installation take its writer lock (docs/writes.md "One
//! writer per installation").
//!
//! Why: a bare `flock(2)` is not fair. A server that releases the lock and
//! asks again at once wins it again before a waiter in another process
//! notices, so one busy server could starve another for minutes.
//!
//! How: the queue is a folder (`install-<key>.queue/`, mode 0700) of ticket
//! files named by a 20-digit number, and a counter file `next`.
//!
//! * **Taking a ticket.** Under an exclusive `flock` on `next` (held only
//!   for these steps), the counter is read and written back plus one, and
//!   the ticket file is created and locked (`flock`, exclusive) by its
//!   owner. Every lower ticket is therefore locked by its owner by the time
//!   a new one exists.
//! * **Waiting.** A waiter looks for the highest lower ticket whose lock is
//!   held (its owner is alive and has not released it), and blocks on that
//!   ticket's lock in a blocking thread; when it is granted (the owner
//!   released or died), the waiter lets it go and looks again. A lower
//!   ticket nobody holds (its owner crashed) is removed on the way. With no
//!   live lower ticket the waiter is at the front: it holds the
//!   installation. No polling: the kernel wakes the waiter.
//! * **Releasing.** Dropping a [`QueueTicket`] removes its file, then closes it,
//!   which releases its lock and wakes the one waiter behind it. A waiter
//!   that gives up (cancel, time limit) releases its ticket the same way,
//!   and the waiter behind it looks past it.
//!
//! A waiter that gave up may leave a blocking thread waiting for the lock
//! of the ticket ahead; when that lock is granted the thread lets it go at
//! once (nothing waits for its answer).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Why waiting for a turn ended without it.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// Reading the queue folder or locking a ticket failed.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The deadline passed first.
    #[error("the deadline passed while waiting for a turn")]
    TimedOut,
    /// The cancellation token fired first.
    #[error("cancelled while waiting for a turn")]
    Cancelled,
}

/// One place in the queue: its file, locked for as long as the value
/// lives. Dropping it removes the file and releases the lock.
#[derive(Debug)]
pub struct QueueTicket {
    number: u64,
    path: PathBuf,
    dir: PathBuf,
    file: Option<Flock<File>>,
}

impl Drop for QueueTicket {
    fn drop(&mut self) {
        // Removed first, so that nobody opens it after the lock is gone.
        let _ = std::fs::remove_file(&self.path);
        drop(self.file.take());
    }
}

/// The folder's tickets: `(number, path)`, any order.
fn tickets(dir: &Path) -> std::io::Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.len() == 20
            && name.bytes().all(|b| b.is_ascii_digit())
            && let Ok(n) = name.parse::<u64>()
        {
            out.push((n, entry.path()));
        }
    }
    Ok(out)
}

fn open_private(path: &Path, create_new: bool) -> std::io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true);
    if create_new {
        options.create_new(true);
    } else {
        options.create(true).truncate(false);
    }
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}

fn flock(file: File, arg: FlockArg) -> Result<Flock<File>, (File, Errno)> {
    Flock::lock(file, arg)
}

/// Takes the next ticket of the queue in `dir` (created, mode 0700, when
/// missing).
///
/// Errors: the folder, the counter or the ticket file cannot be created,
/// read, written or locked.
pub fn take(dir: &Path) -> std::io::Result<QueueTicket> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    let next = open_private(&dir.join("next"), false)?;
    let mut next =
        flock(next, FlockArg::LockExclusive).map_err(|(_, e)| std::io::Error::from(e))?;
    let mut text = String::new();
    next.read_to_string(&mut text)?;
    let counted = text.trim().parse::<u64>().unwrap_or(0);
    // A counter lost or reset must not hand out a number already queued.
    let above = tickets(dir)?
        .iter()
        .map(|(n, _)| n.saturating_add(1))
        .max()
        .unwrap_or(0);
    let number = counted.max(above);
    next.set_len(0)?;
    next.rewind()?;
    writeln!(next, "{}", number.saturating_add(1))?;
    let path = dir.join(format!("{number:020}"));
    let file = open_private(&path, true)?;
    let file = match flock(file, FlockArg::LockExclusiveNonblock) {
        Ok(f) => f,
        Err((_, e)) => {
            let _ = std::fs::remove_file(&path);
            return Err(e.into());
        }
    };
    drop(next);
    Ok(QueueTicket {
        number,
        path,
        dir: dir.to_path_buf(),
        file: Some(file),
    })
}

impl QueueTicket {
    /// The highest lower ticket whose owner still holds it, opened (for
    /// waiting on its lock); lower tickets nobody holds are removed.
    fn live_predecessor(&self) -> std::io::Result<Option<File>> {
        let mut lower: Vec<(u64, PathBuf)> = tickets(&self.dir)?
            .into_iter()
            .filter(|(n, _)| *n < self.number)
            .collect();
        lower.sort_by_key(|(n, _)| std::cmp::Reverse(*n));
        for (_, path) in lower {
            let file = match OpenOptions::new().read(true).open(&path) {
                Ok(f) => f,
                // Released (and removed) since the folder was read.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            match flock(file, FlockArg::LockExclusiveNonblock) {
                // Nobody holds it: its owner is gone without removing it.
                Ok(stale) => {
                    let _ = std::fs::remove_file(&path);
                    drop(stale);
                }
                Err((file, Errno::EWOULDBLOCK)) => return Ok(Some(file)),
                Err((_, e)) => return Err(e.into()),
            }
        }
        Ok(None)
    }

    /// Waits until every lower ticket is released: then this ticket's
    /// owner holds the installation. `on_wait` is called once, when a live
    /// lower ticket is first found (the caller reports that it waits).
    ///
    /// Errors: [`WaitError::TimedOut`] at `deadline`, [`WaitError::Cancelled`]
    /// on `cancel`, [`WaitError::Io`] when the folder cannot be read or a
    /// ticket locked. The ticket stays queued on error: drop it to leave.
    pub async fn wait_turn(
        &self,
        deadline: Instant,
        cancel: &CancellationToken,
        mut on_wait: impl FnMut(),
    ) -> Result<(), WaitError> {
        let mut told = false;
        loop {
            let Some(ahead) = self.live_predecessor()? else {
                return Ok(());
            };
            if !told {
                told = true;
                on_wait();
            }
            // Granted when the owner releases or dies; let go at once.
            let granted = tokio::task::spawn_blocking(move || {
                flock(ahead, FlockArg::LockExclusive)
                    .map(drop)
                    .map_err(|(_, e)| std::io::Error::from(e))
            });
            tokio::select! {
                r = granted => r.map_err(std::io::Error::other)??,
                () = cancel.cancelled() => return Err(WaitError::Cancelled),
                () = tokio::time::sleep_until(deadline) => return Err(WaitError::TimedOut),
            }
        }
    }
}
