//! The FIFO queue of one executor lane.
//!
//! Each call takes a ticket; the ticket at the front runs when nothing else
//! does. Waiting calls learn their position (jobs ahead, the running one
//! included) from a watch channel bumped on every change. A ticket is given
//! back on drop, whether its call finished, was cancelled, timed out in the
//! queue or its future was dropped, so the queue never stalls.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::watch;

#[derive(Debug, Default)]
struct State {
    next: u64,
    waiting: VecDeque<u64>,
    running: Option<u64>,
    /// Tickets of light jobs ([`Lane::join_light`]).
    light: std::collections::HashSet<u64>,
}

/// A FIFO lane: one running ticket at a time.
#[derive(Debug, Clone)]
pub struct Lane {
    state: Arc<Mutex<State>>,
    changed: Arc<watch::Sender<u64>>,
}

impl Default for Lane {
    fn default() -> Self {
        Lane {
            state: Default::default(),
            changed: Arc::new(watch::channel(0).0),
        }
    }
}

/// A place in the lane; leaves it on drop.
#[derive(Debug)]
pub struct Ticket {
    lane: Lane,
    id: u64,
    rx: watch::Receiver<u64>,
}

impl Lane {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn bump(&self) {
        self.changed.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// Joins the end of the queue.
    pub fn join(&self) -> Ticket {
        let rx = self.changed.subscribe();
        let id = {
            let mut s = self.lock();
            let id = s.next;
            s.next += 1;
            s.waiting.push_back(id);
            id
        };
        self.bump();
        Ticket {
            lane: self.clone(),
            id,
            rx,
        }
    }

    /// Joins the end of the queue as a light job (a helper the worker runs
    /// warm: tens of milliseconds) when every ticket waiting or running is
    /// one too; `None` (nothing joined) when any is not, so that a light
    /// job never waits behind a heavy one. Checked and joined under one
    /// lock.
    pub fn join_light(&self) -> Option<Ticket> {
        let rx = self.changed.subscribe();
        let id = {
            let mut s = self.lock();
            let heavy = |t: &u64| !s.light.contains(t);
            if s.running.as_ref().is_some_and(heavy) || s.waiting.iter().any(heavy) {
                return None;
            }
            let id = s.next;
            s.next += 1;
            s.waiting.push_back(id);
            s.light.insert(id);
            id
        };
        self.bump();
        Some(Ticket {
            lane: self.clone(),
            id,
            rx,
        })
    }

    /// Number of calls waiting or running.
    pub fn len(&self) -> usize {
        let s = self.lock();
        s.waiting.len() + usize::from(s.running.is_some())
    }

    /// Whether no call is waiting or running.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Ticket {
    /// Takes the lane if this ticket is at the front and nothing runs
    /// (`Ok(())`), else returns the number of jobs ahead (`Err(n)`).
    pub fn try_start(&mut self) -> Result<(), usize> {
        self.rx.borrow_and_update();
        let mut s = self.lane.lock();
        let pos = s.waiting.iter().position(|t| *t == self.id).unwrap_or(0);
        let running = usize::from(s.running.is_some_and(|r| r != self.id));
        if s.running == Some(self.id) {
            return Ok(());
        }
        if pos == 0 && running == 0 {
            s.waiting.pop_front();
            s.running = Some(self.id);
            drop(s);
            self.lane.bump();
            Ok(())
        } else {
            Err(pos + running)
        }
    }

    /// Resolves when the lane changed since the last [`Ticket::try_start`].
    pub async fn changed(&mut self) {
        // The sender lives as long as the lane, which this ticket holds.
        let _ = self.rx.changed().await;
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        {
            let mut s = self.lane.lock();
            if s.running == Some(self.id) {
                s.running = None;
            }
            s.waiting.retain(|t| *t != self.id);
            s.light.remove(&self.id);
        }
        self.lane.bump();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_positions_and_release() {
        let lane = Lane::default();
        let mut a = lane.join();
        let mut b = lane.join();
        let mut c = lane.join();
        assert_eq!(b.try_start(), Err(1));
        assert_eq!(a.try_start(), Ok(()));
        assert_eq!(b.try_start(), Err(1));
        assert_eq!(c.try_start(), Err(2));
        drop(b); // cancelled while queued
        assert_eq!(c.try_start(), Err(1));
        drop(a);
        assert_eq!(c.try_start(), Ok(()));
        drop(c);
        assert!(lane.is_empty());
    }

    #[test]
    fn light_jobs_queue_only_behind_light_jobs() {
        let lane = Lane::default();
        let mut first = lane.join_light().expect("an empty lane takes a light job");
        assert_eq!(first.try_start(), Ok(()));
        let mut second = lane.join_light().expect("behind a light job");
        assert_eq!(second.try_start(), Err(1));
        let heavy = lane.join();
        assert!(lane.join_light().is_none(), "never behind a heavy job");
        drop(first);
        assert_eq!(second.try_start(), Ok(()));
        drop(second);
        assert!(lane.join_light().is_none(), "the heavy job is next");
        drop(heavy);
        assert!(lane.join_light().is_some());
        assert!(lane.is_empty(), "a dropped light ticket leaves");
    }
}
