//! Progress notifications for long calls (MCP `notifications/progress`).
//!
//! conda create and install run for minutes, and many hosts abort a call
//! after 60 s of silence. When a `tools/call` carries a progress token
//! (`_meta.progressToken`), a [`Progress`] reporter sends a notification
//! whenever the call's phase changes (queued at a new position, started)
//! and otherwise at least every [`HEARTBEAT`] until the result, so a host
//! hears from the call at least every 10 s. A call that is
//! over within [`FIRST_AFTER`] and never waited in the queue sends nothing
//! (rmcp's client puts a token on every request; quick calls stay quiet).
//!
//! `progress` is the number of seconds since the call arrived (millisecond
//! resolution, forced strictly rising, as the MCP spec asks); `total` is
//! never set because conda cannot say how long a solve takes. The message
//! says what the call is doing: its queue position while it waits behind
//! another conda call, then the elapsed seconds, the bytes of output so far
//! and, when conda emits `--json` progress records, their fraction.
//!
//! Without a token nothing is sent and no ticker runs.
//!
//! The phase itself is a [`Tracker`], separate from the notifications: a
//! call answered as an MCP task (`super::tasks`) has no request left to
//! notify, and `tasks/get` reports the same message from the same tracker.

use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::worker_client::JobUpdate;

/// Longest silence between two notifications of one call.
pub const HEARTBEAT: Duration = Duration::from_secs(5);
/// A call that ends sooner than this sends nothing (unless it waited in the
/// queue), so quick calls stay quiet.
pub const FIRST_AFTER: Duration = Duration::from_secs(1);
/// Output counters alone trigger a notification at most this often.
const OUTPUT_MIN_GAP: Duration = Duration::from_secs(2);

/// What the call is doing, as last reported by the worker client.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase {
    /// Not yet queued or started.
    Arrived,
    /// Waiting for another conda-mcp writing to the same installation.
    WaitingForWriter,
    /// Waiting behind `ahead` other conda calls.
    Queued {
        /// Calls ahead of this one (the running one included).
        ahead: usize,
    },
    /// conda runs.
    Running {
        /// Time since spawn.
        elapsed: Duration,
        /// Bytes read from stdout so far.
        stdout_bytes: u64,
        /// Bytes read from stderr so far.
        stderr_bytes: u64,
        /// Fraction done from conda's `--json` progress records, if any.
        fraction: Option<f64>,
    },
}

impl Phase {
    /// Whether the call waits behind another one (of this server, or
    /// another server's write to the same installation).
    pub fn waiting(&self) -> bool {
        matches!(self, Phase::Queued { ahead } if *ahead > 0) || *self == Phase::WaitingForWriter
    }

    /// Whether going from `self` to `next` is a change sent at once (queue
    /// position, start) rather than output counters, which are throttled.
    fn urgent_change_to(&self, next: &Phase) -> bool {
        match (self, next) {
            (Phase::Running { .. }, Phase::Running { .. }) => false,
            (a, b) => a != b,
        }
    }
}

/// The phase of one call, shared by whoever reports it: the progress
/// notifications of a plain call ([`Progress`]) and `tasks/get` of a task
/// (`super::tasks`). Cheap to clone; all clones see the same phase.
#[derive(Debug, Clone)]
pub struct Tracker {
    phase: watch::Sender<Phase>,
    arrived: Instant,
}

impl Default for Tracker {
    fn default() -> Self {
        Self::new()
    }
}

impl Tracker {
    /// A call that has just arrived.
    pub fn new() -> Self {
        Self {
            phase: watch::Sender::new(Phase::Arrived),
            arrived: Instant::now(),
        }
    }

    /// Takes the worker client's `update` (cheap; never blocks).
    pub fn update(&self, update: JobUpdate) {
        let next = match update {
            JobUpdate::WaitingForWriter => Phase::WaitingForWriter,
            JobUpdate::Queued { position } => Phase::Queued { ahead: position },
            JobUpdate::Started { .. } => Phase::Running {
                elapsed: Duration::ZERO,
                stdout_bytes: 0,
                stderr_bytes: 0,
                fraction: None,
            },
            JobUpdate::Output {
                stdout_bytes,
                stderr_bytes,
                elapsed,
                progress_fraction,
            } => Phase::Running {
                elapsed,
                stdout_bytes,
                stderr_bytes,
                fraction: progress_fraction,
            },
        };
        self.phase.send_replace(next);
    }

    /// The phase now.
    pub fn phase(&self) -> Phase {
        self.phase.borrow().clone()
    }

    /// Waits until the call has left [`Phase::Arrived`] (it was queued or
    /// started) and returns the phase it reached.
    pub async fn left_arrival(&self) -> Phase {
        let mut rx = self.phase.subscribe();
        match rx.wait_for(|p| *p != Phase::Arrived).await {
            Ok(p) => p.clone(),
            // The sender lives in `self`: never closed while we wait.
            Err(_) => self.phase(),
        }
    }

    /// The message of the phase now (what a progress notification would
    /// say), for the call named `what`.
    pub fn message(&self, what: &str) -> String {
        message(what, &self.phase())
    }

    /// When the call arrived.
    pub fn arrived(&self) -> Instant {
        self.arrived
    }
}

/// The progress reporter of one call (inert without a progress token).
#[derive(Debug)]
pub struct Progress {
    active: Option<Active>,
}

#[derive(Debug)]
struct Active {
    done: CancellationToken,
    ticker: JoinHandle<u64>,
}

impl Progress {
    /// A reporter that sends nothing (the request had no progress token).
    pub fn inert() -> Self {
        Self { active: None }
    }

    /// Starts sending notifications for `token` to `peer` about the call
    /// `tracker` follows; `what` names the call in messages (`conda
    /// install`).
    pub fn start(
        peer: Peer<RoleServer>,
        token: ProgressToken,
        what: String,
        tracker: &Tracker,
    ) -> Self {
        let done = CancellationToken::new();
        let ticker = tokio::spawn(tick(peer, token, what, tracker.clone(), done.clone()));
        Self {
            active: Some(Active { done, ticker }),
        }
    }

    /// Stops reporting before the result is sent; returns how many
    /// notifications were sent.
    pub async fn finish(self) -> u64 {
        let Some(active) = self.active else {
            return 0;
        };
        active.done.cancel();
        active.ticker.await.unwrap_or(0)
    }
}

async fn tick(
    peer: Peer<RoleServer>,
    token: ProgressToken,
    what: String,
    tracker: Tracker,
    done: CancellationToken,
) -> u64 {
    let arrived = tracker.arrived();
    let mut rx = tracker.phase.subscribe();
    let mut last_value = 0.0_f64;
    let mut last_sent: Option<(Instant, Phase)> = None;
    let mut sent = 0u64;
    loop {
        let next_beat = match &last_sent {
            None => arrived + FIRST_AFTER,
            Some((t, _)) => *t + HEARTBEAT,
        };
        tokio::select! {
            biased;
            () = done.cancelled() => return sent,
            changed = rx.changed() => {
                if changed.is_err() {
                    return sent;
                }
                let phase = rx.borrow_and_update().clone();
                // A quick call stays silent; a call waiting in the queue says
                // so at once.
                if last_sent.is_none() && arrived.elapsed() < FIRST_AFTER && !phase.waiting() {
                    continue;
                }
                let urgent = match &last_sent {
                    None => true,
                    Some((_, before)) => before.urgent_change_to(&phase),
                };
                if !urgent && last_sent.as_ref().is_some_and(|(t, _)| t.elapsed() < OUTPUT_MIN_GAP) {
                    continue;
                }
            }
            () = tokio::time::sleep_until(next_beat.into()) => {}
        }
        let phase = rx.borrow_and_update().clone();
        // Strictly rising: seconds since arrival, at least 1 ms above the last.
        let value = (arrived.elapsed().as_millis() as f64 / 1000.0).max(last_value + 0.001);
        last_value = value;
        let note = ProgressNotificationParam::new(token.clone(), value)
            .with_message(message(&what, &phase));
        last_sent = Some((Instant::now(), phase));
        if peer.notify_progress(note).await.is_err() {
            return sent;
        }
        sent += 1;
    }
}

/// The human message of a phase.
fn message(what: &str, phase: &Phase) -> String {
    match phase {
        Phase::Arrived => format!("{what}: waiting for the worker"),
        Phase::WaitingForWriter => format!(
            "{what}: waiting for another conda-mcp on this installation (one writer at a time)"
        ),
        Phase::Queued { ahead } => format!(
            "{what}: queued at position {} ({ahead} conda call{} ahead; conda runs one call at a time)",
            ahead + 1,
            if *ahead == 1 { "" } else { "s" }
        ),
        Phase::Running {
            elapsed,
            stdout_bytes,
            stderr_bytes,
            fraction,
        } => {
            let mut m = format!(
                "{what}: running for {} s, {} bytes of output so far",
                elapsed.as_secs(),
                stdout_bytes + stderr_bytes
            );
            if let Some(f) = fraction {
                m.push_str(&format!(", conda reports {:.0}% done", f * 100.0));
            }
            m
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_queue_position_and_the_output() {
        assert_eq!(
            message("conda install", &Phase::Queued { ahead: 1 }),
            "conda install: queued at position 2 (1 conda call ahead; conda runs one call at a time)"
        );
        let m = message(
            "conda create",
            &Phase::Running {
                elapsed: Duration::from_secs(12),
                stdout_bytes: 100,
                stderr_bytes: 20,
                fraction: Some(0.5),
            },
        );
        assert_eq!(
            m,
            "conda create: running for 12 s, 120 bytes of output so far, conda reports 50% done"
        );
    }
}
