//! Health and readiness of the serving process, for a supervisor, a load
//! balancer or a Kubernetes probe (docs/operating.md "Health and
//! readiness"), served in the HTTP mode at `/healthz` and `/readyz`
//! without a token.
//!
//! * **Live** (`/healthz`): the process serves HTTP. Always 200 while it
//!   answers at all; the body says nothing about the installation.
//! * **Ready** (`/readyz`): the catalog is loaded (startup has finished)
//!   and a worker answers: the exec lane's worker is alive and
//!   handshaken, or one can be started now (a worker that died is
//!   replaced by the probe, as the next call would replace it); a worker
//!   busy with a call answers by definition. 503 before startup has
//!   finished, after it failed, when no worker can be had, and from the
//!   moment the drain begins (SIGTERM), so a load balancer stops sending
//!   new requests while those in flight finish.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use crate::worker_client::Executor;

/// How long a readiness probe waits for a worker (a fresh one's start and
/// handshake take tens of milliseconds).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

const STARTING: u8 = 0;
const READY: u8 = 1;
const DRAINING: u8 = 2;
const FAILED: u8 = 3;

/// Where the process is in its life (shared by the HTTP routes and the
/// composition root that moves it on), and how many MCP requests are in
/// flight (what the drain waits for).
#[derive(Debug)]
pub struct Health {
    phase: AtomicU8,
    exec: OnceLock<Executor>,
    in_flight: tokio::sync::watch::Sender<usize>,
}

impl Default for Health {
    fn default() -> Self {
        Health {
            phase: AtomicU8::new(STARTING),
            exec: OnceLock::new(),
            in_flight: tokio::sync::watch::Sender::new(0),
        }
    }
}

/// One MCP request in flight; leaves the count when dropped.
#[derive(Debug)]
pub struct InFlight(Arc<Health>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// A readiness answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeAnswer {
    /// Ready to serve calls.
    Ready,
    /// Not ready, and why (one word for the body: `starting`,
    /// `startup_failed`, `draining`, `no_worker`).
    NotReady(&'static str),
}

impl Health {
    /// A process that is starting.
    pub fn new() -> Arc<Self> {
        Arc::new(Health::default())
    }

    /// Startup finished: calls run on `exec`.
    pub fn ready(&self, exec: Executor) {
        let _ = self.exec.set(exec);
        let _ = self
            .phase
            .compare_exchange(STARTING, READY, Ordering::SeqCst, Ordering::SeqCst);
    }

    /// Startup failed: never ready.
    pub fn failed(&self) {
        self.phase.store(FAILED, Ordering::SeqCst);
    }

    /// The drain began: not ready from now on.
    pub fn draining(&self) {
        self.phase.store(DRAINING, Ordering::SeqCst);
    }

    /// Whether the drain has begun.
    pub fn is_draining(&self) -> bool {
        self.phase.load(Ordering::SeqCst) == DRAINING
    }

    /// Counts one MCP request in flight until the value is dropped.
    pub fn enter(self: &Arc<Self>) -> InFlight {
        self.in_flight.send_modify(|n| *n += 1);
        InFlight(Arc::clone(self))
    }

    /// Completes when no MCP request is in flight.
    pub async fn idle(&self) {
        let mut rx = self.in_flight.subscribe();
        let _ = rx.wait_for(|n| *n == 0).await;
    }

    /// Whether the process is ready now (probes the worker).
    pub async fn readiness(&self) -> ProbeAnswer {
        match self.phase.load(Ordering::SeqCst) {
            STARTING => return ProbeAnswer::NotReady("starting"),
            DRAINING => return ProbeAnswer::NotReady("draining"),
            FAILED => return ProbeAnswer::NotReady("startup_failed"),
            _ => {}
        }
        let Some(exec) = self.exec.get() else {
            return ProbeAnswer::NotReady("starting");
        };
        match tokio::time::timeout(PROBE_TIMEOUT, exec.probe()).await {
            Ok(Ok(())) => ProbeAnswer::Ready,
            Ok(Err(e)) => {
                tracing::warn!("readiness: no worker answers: {e}");
                ProbeAnswer::NotReady("no_worker")
            }
            Err(_) => ProbeAnswer::NotReady("no_worker"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn idle_waits_for_the_requests_in_flight() {
        let h = Health::new();
        h.idle().await;
        let one = h.enter();
        let two = h.enter();
        drop(one);
        let waiting = tokio::time::timeout(Duration::from_millis(50), h.idle()).await;
        assert!(waiting.is_err(), "one request is still in flight");
        drop(two);
        h.idle().await;
    }

    #[tokio::test]
    async fn phases_move_one_way_into_draining() {
        let h = Health::new();
        assert_eq!(h.readiness().await, ProbeAnswer::NotReady("starting"));
        h.draining();
        assert!(h.is_draining());
        assert_eq!(h.readiness().await, ProbeAnswer::NotReady("draining"));
        let h = Health::new();
        h.failed();
        assert_eq!(h.readiness().await, ProbeAnswer::NotReady("startup_failed"));
    }
}
