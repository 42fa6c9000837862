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
    fingerprint: String,
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
            fingerprint: found.fingerprint().to_owned(),
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
                if found.fingerprint() != self.fingerprint {
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
}
