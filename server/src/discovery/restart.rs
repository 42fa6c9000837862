//! The restart watch: noticing that conda or its plugins changed.
//!
//! The tools are generated from one discovery, so after a mutation that
//! upgrades conda or adds, removes or upgrades a plugin, the tool list is
//! out of date. After every *successful, non-read-only* call the
//! [`RestartWatch`] re-takes the cheap startup-cache stamp (the target's
//! size and mtime and the listings of its site-packages and `conda-meta`:
//! a few `stat`s and `readdir`s, no Python, no conda). Only when that stamp
//! moved does it rerun discovery through a worker and compare the
//! discovery fingerprint (conda version + plugin records).
//!
//! What a different fingerprint does depends on the mode (docs/using.md
//! "Long calls: progress, cancellation, queueing, restarts"):
//!
//! * **fixed** (the default): the tools stay as they are for the life of
//!   the process, so the flag `restart_required` is set and stays set:
//!   every later result carries `restart_required: true`;
//! * **live** (`--live-tools`): the new discovery becomes the baseline and
//!   is handed to the server ([`RestartWatch::take_changed`]), which
//!   rebuilds its tools; the flag is set until the rebuilt tool list has
//!   been served ([`RestartWatch::clear`]), and a later change is noticed
//!   again.
//!
//! A moved stamp with an unchanged fingerprint (a package installed into
//! the base environment, say) only refreshes the stamp, so the next call
//! pays the cheap check again, not a rediscovery. A failed rediscovery is
//! logged and changes nothing (the next mutation checks again).

use std::sync::Mutex as SyncMutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::Mutex;

use super::{Discovery, DiscoveryOptions, Stamp};

/// Watches the target for changes that make the generated tools stale.
#[derive(Debug)]
pub struct RestartWatch {
    /// How to rediscover (the startup options, with the target and its
    /// interpreter pinned to what startup found).
    options: DiscoveryOptions,
    /// `--live-tools`: a change is handed on and the baseline moves.
    live: bool,
    /// The fingerprint the served tools were generated from.
    fingerprint: SyncMutex<String>,
    /// The stamp of the last discovery (startup or a later check).
    stamp: Mutex<Stamp>,
    /// A changed discovery not yet taken by the server (live mode only).
    changed: SyncMutex<Option<Discovery>>,
    /// `restart_required`: sticky in fixed mode; in live mode set until
    /// [`RestartWatch::clear`].
    required: AtomicBool,
    /// How many rediscoveries ran (observable for tests and logs).
    rediscoveries: AtomicU64,
}

impl RestartWatch {
    /// A watch over what startup discovered; `live` is `--live-tools`.
    pub fn new(options: DiscoveryOptions, found: &Discovery, live: bool) -> Self {
        let mut options = options;
        options.conda_exe = Some(found.target.path.clone());
        options.python = Some(found.python.clone());
        Self {
            options,
            live,
            fingerprint: SyncMutex::new(found.fingerprint().to_owned()),
            stamp: Mutex::new(found.stamp.clone()),
            changed: SyncMutex::new(None),
            required: AtomicBool::new(false),
            rediscoveries: AtomicU64::new(0),
        }
    }

    /// Whether `restart_required` is set.
    pub fn required(&self) -> bool {
        self.required.load(Ordering::Relaxed)
    }

    /// How many times discovery was rerun.
    pub fn rediscoveries(&self) -> u64 {
        self.rediscoveries.load(Ordering::Relaxed)
    }

    /// Called after a successful non-read-only call; returns
    /// [`RestartWatch::required`] afterwards. In live mode a change also
    /// leaves the new discovery for [`RestartWatch::take_changed`].
    pub async fn after_mutation(&self) -> bool {
        if !self.live && self.required() {
            return true;
        }
        let mut stamp = self.stamp.lock().await;
        if !stamp.changed() {
            return self.required();
        }
        self.rediscoveries.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            "the target's package folders changed; rerunning discovery to compare plugins"
        );
        match super::discover(&self.options).await {
            Ok(found) => {
                *stamp = found.stamp.clone();
                let mut baseline = lock(&self.fingerprint);
                if found.fingerprint() != *baseline {
                    if self.live {
                        tracing::info!(
                            conda_version = %found.catalog.conda_version,
                            "conda or its plugins changed: rebuilding the tools"
                        );
                        found.fingerprint().clone_into(&mut baseline);
                        *lock(&self.changed) = Some(found);
                    } else {
                        tracing::warn!(
                            conda_version = %found.catalog.conda_version,
                            "conda or its plugins changed: restart the server to see the new tools"
                        );
                    }
                    self.required.store(true, Ordering::Relaxed);
                }
            }
            Err(e) => tracing::warn!("rediscovery after a mutation failed: {e}"),
        }
        self.required()
    }

    /// Live mode: the discovery of the latest change, once (`None` when
    /// nothing changed since the last take, and always in fixed mode).
    pub fn take_changed(&self) -> Option<Discovery> {
        lock(&self.changed).take()
    }

    /// Clears `restart_required` (live mode: the rebuilt tool list was
    /// served).
    pub fn clear(&self) {
        self.required.store(false, Ordering::Relaxed);
    }
}

/// The guarded value, also after a panic elsewhere poisoned the lock (the
/// values here are replaced whole, never left half-written).
fn lock<T>(m: &SyncMutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
