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
//! Without a token nothing is sent and no task is started.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::{Peer, RequestContext};
use tokio::sync::Notify;
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
enum Phase {
    /// Not yet queued or started.
    Arrived,
    /// Waiting behind `ahead` other conda calls.
    Queued { ahead: usize },
    /// conda runs.
    Running {
        elapsed: Duration,
        stdout_bytes: u64,
        stderr_bytes: u64,
        fraction: Option<f64>,
    },
}

#[derive(Debug)]
struct Shared {
    phase: Phase,
    /// Whether the change is one that is sent at once (queue position,
    /// start), rather than output counters that are throttled.
    urgent: bool,
}

/// The progress reporter of one call (inert without a progress token).
#[derive(Debug)]
pub struct Progress {
    active: Option<Active>,
}

#[derive(Debug)]
struct Active {
    shared: Arc<Mutex<Shared>>,
    changed: Arc<Notify>,
    done: CancellationToken,
    ticker: JoinHandle<u64>,
}

impl Progress {
    /// Starts reporting for the request of `context` if it carries a
    /// progress token; `what` names the call in messages (`conda install`).
    pub fn start(context: &RequestContext<RoleServer>, what: &str) -> Self {
        let Some(token) = context.meta.get_progress_token() else {
            return Self { active: None };
        };
        Self::start_with(context.peer.clone(), token, what.to_owned(), Instant::now())
    }

    /// A reporter that sends nothing (the request had no progress token).
    pub fn inert() -> Self {
        Self { active: None }
    }

    /// [`Progress::start`] from its parts; `arrived` is when the call
    /// arrived, the origin of the `progress` values, so that several runs
    /// of one call (the preview and the apply of an approved change) report
    /// on one rising scale.
    pub fn start_with(
        peer: Peer<RoleServer>,
        token: ProgressToken,
        what: String,
        arrived: Instant,
    ) -> Self {
        let shared = Arc::new(Mutex::new(Shared {
            phase: Phase::Arrived,
            urgent: false,
        }));
        let changed = Arc::new(Notify::new());
        let done = CancellationToken::new();
        let ticker = tokio::spawn(tick(
            peer,
            token,
            what,
            arrived,
            shared.clone(),
            changed.clone(),
            done.clone(),
        ));
        Self {
            active: Some(Active {
                shared,
                changed,
                done,
                ticker,
            }),
        }
    }

    /// A closure for the worker client's `on_update` (cheap; never blocks).
    pub fn observer(&self) -> impl FnMut(JobUpdate) + Send + 'static {
        let target = self
            .active
            .as_ref()
            .map(|a| (a.shared.clone(), a.changed.clone()));
        move |update| {
            let Some((shared, changed)) = &target else {
                return;
            };
            let (phase, urgent) = match update {
                JobUpdate::Queued { position } => (Phase::Queued { ahead: position }, true),
                JobUpdate::Started { .. } => (
                    Phase::Running {
                        elapsed: Duration::ZERO,
                        stdout_bytes: 0,
                        stderr_bytes: 0,
                        fraction: None,
                    },
                    true,
                ),
                JobUpdate::Output {
                    stdout_bytes,
                    stderr_bytes,
                    elapsed,
                    progress_fraction,
                } => (
                    Phase::Running {
                        elapsed,
                        stdout_bytes,
                        stderr_bytes,
                        fraction: progress_fraction,
                    },
                    false,
                ),
            };
            if let Ok(mut s) = shared.lock() {
                s.urgent |= urgent;
                s.phase = phase;
            }
            changed.notify_one();
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
    arrived: Instant,
    shared: Arc<Mutex<Shared>>,
    changed: Arc<Notify>,
    done: CancellationToken,
) -> u64 {
    let started = Instant::now();
    let mut last_value = 0.0_f64;
    let mut last_sent: Option<Instant> = None;
    let mut sent = 0u64;
    loop {
        let next_beat = match last_sent {
            None => started + FIRST_AFTER,
            Some(t) => t + HEARTBEAT,
        };
        tokio::select! {
            biased;
            () = done.cancelled() => return sent,
            () = changed.notified() => {
                let (urgent, waiting) = match shared.lock() {
                    Ok(s) => (s.urgent, matches!(s.phase, Phase::Queued { ahead } if ahead > 0)),
                    Err(_) => return sent,
                };
                // A quick call stays silent; a call waiting in the queue says
                // so at once.
                if last_sent.is_none() && started.elapsed() < FIRST_AFTER && !waiting {
                    continue;
                }
                if !urgent && last_sent.is_some_and(|t| t.elapsed() < OUTPUT_MIN_GAP) {
                    continue;
                }
            }
            () = tokio::time::sleep_until(next_beat.into()) => {}
        }
        let phase = match shared.lock() {
            Ok(mut s) => {
                s.urgent = false;
                s.phase.clone()
            }
            Err(_) => return sent,
        };
        // Strictly rising: seconds since arrival, at least 1 ms above the last.
        let value = (arrived.elapsed().as_millis() as f64 / 1000.0).max(last_value + 0.001);
        last_value = value;
        last_sent = Some(Instant::now());
        let note = ProgressNotificationParam::new(token.clone(), value)
            .with_message(message(&what, &phase));
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
