//! Workers per OS user ([`Workers`]): in the HTTP mode, a principal mapped
//! to an OS user (the token file's third column) gets a worker of its own,
//! spawned as that user through the same mechanism as `--worker-user`
//! (the worker drops to the user and its primary group; conda's HOME is the
//! user's own home, checked at startup). Each worker is one [`Executor`],
//! so one user's calls run one at a time, in order, while different users'
//! calls run in parallel. Principals without a user share the default
//! worker.
//!
//! A worker idle (no call queued or running) for the idle timeout is
//! stopped ([`Workers::reap_idle`], driven by [`Workers::spawn_reaper`]);
//! the next call of its user starts a fresh one. At most `cap` user workers
//! exist at once: a new user past the cap first takes the place of the
//! longest idle worker, and is refused ([`PoolFull`]) only when every
//! worker is busy.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Executor, WorkerConfig};

/// Every user worker is busy and the cap is reached: retry later.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("all {0} per-user workers are busy (--max-workers); retry later")]
pub struct PoolFull(pub usize);

/// The user workers.
#[derive(Debug)]
pub struct Workers {
    base: WorkerConfig,
    idle: Duration,
    cap: usize,
    slots: Mutex<HashMap<String, Slot>>,
}

#[derive(Debug)]
struct Slot {
    exec: Arc<Executor>,
    leases: usize,
    last_used: Instant,
}

/// The right to queue calls on one user's worker; while any lease lives
/// the worker is not idle.
#[derive(Debug)]
pub struct Lease {
    exec: Arc<Executor>,
    user: String,
    pool: Arc<Workers>,
}

impl Lease {
    /// The user's worker.
    pub fn executor(&self) -> &Arc<Executor> {
        &self.exec
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        let mut slots = self.pool.lock();
        if let Some(slot) = slots.get_mut(&self.user)
            && Arc::ptr_eq(&slot.exec, &self.exec)
        {
            slot.leases = slot.leases.saturating_sub(1);
            slot.last_used = Instant::now();
        }
    }
}

impl Workers {
    /// User workers made from `base` (the default worker's configuration:
    /// the same worker binary, target, interpreter, limits and environment
    /// rules; the user and its own home replace `--worker-user` and
    /// `--worker-home`), stopped after `idle`, at most `cap` at once.
    pub fn new(base: WorkerConfig, idle: Duration, cap: usize) -> Arc<Self> {
        Arc::new(Self {
            base,
            idle,
            cap: cap.max(1),
            slots: Mutex::new(HashMap::new()),
        })
    }

    /// A lease on `user`'s worker, made (not yet started: it starts with
    /// its first job) when there is none.
    ///
    /// Errors: [`PoolFull`] when `user` has no worker, the cap is reached
    /// and none of the workers is idle.
    pub fn lease(self: &Arc<Self>, user: &str) -> Result<Lease, PoolFull> {
        let mut evicted = None;
        let exec = {
            let mut slots = self.lock();
            if !slots.contains_key(user) && slots.len() >= self.cap {
                let idle = slots
                    .iter()
                    .filter(|(_, s)| s.leases == 0)
                    .min_by_key(|(_, s)| s.last_used)
                    .map(|(u, _)| u.clone());
                match idle {
                    Some(u) => evicted = slots.remove(&u).map(|s| s.exec),
                    None => return Err(PoolFull(self.cap)),
                }
            }
            let slot = slots.entry(user.to_owned()).or_insert_with(|| {
                let mut cfg = self.base.clone();
                cfg.user = Some(user.to_owned());
                cfg.home = None;
                cfg.socket = None;
                Slot {
                    exec: Arc::new(Executor::new(cfg)),
                    leases: 0,
                    last_used: Instant::now(),
                }
            });
            slot.leases += 1;
            slot.last_used = Instant::now();
            slot.exec.clone()
        };
        if let Some(old) = evicted {
            tracing::info!("stopping the longest idle user worker to make room");
            tokio::spawn(async move { old.shutdown().await });
        }
        Ok(Lease {
            exec,
            user: user.to_owned(),
            pool: self.clone(),
        })
    }

    /// Whether a call of `user` would get a worker now (it has one, or the
    /// cap leaves room, or an idle worker can make room).
    pub fn would_admit(&self, user: &str) -> bool {
        let slots = self.lock();
        slots.contains_key(user) || slots.len() < self.cap || slots.values().any(|s| s.leases == 0)
    }

    /// How many user workers exist (started or about to start).
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops the workers idle for longer than the idle timeout.
    pub async fn reap_idle(&self) {
        let stale: Vec<(String, Arc<Executor>)> = {
            let mut slots = self.lock();
            let users: Vec<String> = slots
                .iter()
                .filter(|(_, s)| s.leases == 0 && s.last_used.elapsed() >= self.idle)
                .map(|(u, _)| u.clone())
                .collect();
            users
                .into_iter()
                .filter_map(|u| slots.remove(&u).map(|s| (u, s.exec)))
                .collect()
        };
        for (user, exec) in stale {
            tracing::info!(user = %user, "stopping an idle user worker");
            exec.shutdown().await;
        }
    }

    /// A task that calls [`Workers::reap_idle`] a few times per idle
    /// timeout until the pool is dropped.
    pub fn spawn_reaper(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(self);
        let every = (self.idle / 4).max(Duration::from_millis(100));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(pool) = weak.upgrade() else { return };
                pool.reap_idle().await;
            }
        })
    }

    /// Stops every user worker (killing what runs in them).
    pub async fn shutdown(&self) {
        let all: Vec<Arc<Executor>> = self.lock().drain().map(|(_, s)| s.exec).collect();
        futures::future::join_all(all.iter().map(|e| e.shutdown())).await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn users_get_their_own_worker_up_to_the_cap_and_idle_ones_make_room() {
        let pool = Workers::new(WorkerConfig::new("/bin/true"), Duration::ZERO, 2);
        let a = pool.lease("a").expect("a");
        let a2 = pool.lease("a").expect("a again");
        assert!(
            Arc::ptr_eq(a.executor(), a2.executor()),
            "one worker per user"
        );
        assert_eq!(a.executor().config().user.as_deref(), Some("a"));
        let b = pool.lease("b").expect("b");
        assert!(!Arc::ptr_eq(a.executor(), b.executor()));
        assert!(!pool.would_admit("c"));
        assert_eq!(pool.lease("c").expect_err("full"), PoolFull(2));
        drop(b);
        assert!(pool.would_admit("c"));
        let c = pool.lease("c").expect("c takes b's place");
        assert_eq!(pool.len(), 2);
        drop((a, a2, c));
        pool.reap_idle().await;
        assert!(pool.is_empty(), "idle workers are stopped");
    }
}
