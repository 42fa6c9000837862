//! `restart_required`: noticing that conda or its plugins changed.
//!
//! Tools are fixed at startup, so after a mutation that upgrades conda or
//! adds, removes or upgrades a plugin, the tool list is out of date until
//! the server restarts. After every *successful, non-read-only* call the
//! [`RestartWatch`] re-takes the cheap startup-cache stamp (the target's
//! size and mtime and the listings of its site-packages and `conda-meta`:
//! a few `stat`s and `readdir`s, no Python, no conda). Only when that stamp
//! moved does it rerun discovery through a worker and compare the
//! discovery fingerprint (conda version + plugin records). A different
//! fingerprint sets the flag, and once set it stays set: every later result
//! carries `restart_required: true`.
//!
//! A moved stamp with an unchanged fingerprint (a package installed into
//! the base environment, say) only refreshes the stamp, so the next call
//! pays the cheap check again, not a rediscovery.
//!
//! With `--live-tools` the server rebuilds its tools instead
//! ([`RestartWatch::changed`] hands it the new discovery and moves the
//! baseline to it); the flag then stays set only until the new tool list
//! has been served ([`RestartWatch::clear`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::Mutex;

use crate::discovery::{self, DiscoveryOptions, Stamp};

/// Watches the target for changes that make the generated tools stale.
#[derive(Debug)]
pub struct RestartWatch {
    /// How to rediscover (the startup options, with the target and its
    /// interpreter pinned to what startup found).
    options: DiscoveryOptions,
    /// The fingerprint the tools were generated from.
    fingerprint: std::sync::Mutex<String>,
    /// The stamp of the last discovery (startup or a later check).
    stamp: Mutex<Stamp>,
    /// Sticky flag.
    required: AtomicBool,
    /// How many rediscoveries ran (observable for tests and logs).
    rediscoveries: AtomicU64,
}

impl RestartWatch {
    /// A watch over what startup discovered.
    pub fn new(options: DiscoveryOptions, found: &discovery::Discovery) -> Self {
        let mut options = options;
        options.conda_exe = Some(found.target.path.clone());
        options.python = Some(found.python.clone());
        Self {
            options,
            fingerprint: std::sync::Mutex::new(found.fingerprint().to_owned()),
            stamp: Mutex::new(found.stamp.clone()),
            required: AtomicBool::new(false),
            rediscoveries: AtomicU64::new(0),
        }
    }

    /// Whether a restart is required (sticky).
    pub fn required(&self) -> bool {
        self.required.load(Ordering::Relaxed)
    }

    /// How many times discovery was rerun.
    pub fn rediscoveries(&self) -> u64 {
        self.rediscoveries.load(Ordering::Relaxed)
    }

    /// Called after a successful non-read-only call; returns
    /// [`RestartWatch::required`] afterwards. A failed rediscovery is logged
    /// and leaves the flag as it was (the next mutation checks again).
    pub async fn after_mutation(&self) -> bool {
        if self.required() {
            return true;
        }
        let mut stamp = self.stamp.lock().await;
        if !stamp.changed() {
            return false;
        }
        self.rediscoveries.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            "the target's package folders changed; rerunning discovery to compare plugins"
        );
        match discovery::discover(&self.options).await {
            Ok(found) => {
                *stamp = found.stamp.clone();
                if !self.same_fingerprint(found.fingerprint()) {
                    tracing::warn!(
                        conda_version = %found.catalog.conda_version,
                        "conda or its plugins changed: restart the server to see the new tools"
                    );
                    self.required.store(true, Ordering::Relaxed);
                }
            }
            Err(e) => tracing::warn!("rediscovery after a mutation failed: {e}"),
        }
        self.required()
    }

    /// Whether `fingerprint` is the one the served tools were built from.
    fn same_fingerprint(&self, fingerprint: &str) -> bool {
        self.fingerprint
            .lock()
            .map(|f| *f == fingerprint)
            .unwrap_or(false)
    }

    /// For `--live-tools`: called after a successful non-read-only call.
    /// When conda or its plugins changed, returns the new discovery, makes
    /// its fingerprint the baseline and sets the flag (until
    /// [`RestartWatch::clear`]); `None` when nothing changed or the
    /// rediscovery failed (logged; the next mutation checks again).
    pub async fn changed(&self) -> Option<discovery::Discovery> {
        let mut stamp = self.stamp.lock().await;
        if !stamp.changed() {
            return None;
        }
        self.rediscoveries.fetch_add(1, Ordering::Relaxed);
        tracing::info!(
            "the target's package folders changed; rerunning discovery to compare plugins"
        );
        match discovery::discover(&self.options).await {
            Ok(found) => {
                *stamp = found.stamp.clone();
                if self.same_fingerprint(found.fingerprint()) {
                    return None;
                }
                if let Ok(mut f) = self.fingerprint.lock() {
                    *f = found.fingerprint().to_owned();
                }
                tracing::info!(
                    conda_version = %found.catalog.conda_version,
                    "conda or its plugins changed: rebuilding the tools"
                );
                self.required.store(true, Ordering::Relaxed);
                Some(found)
            }
            Err(e) => {
                tracing::warn!("rediscovery after a mutation failed: {e}");
                None
            }
        }
    }

    /// Clears the flag (`--live-tools`: the new tool list was served).
    pub fn clear(&self) {
        self.required.store(false, Ordering::Relaxed);
    }
}
