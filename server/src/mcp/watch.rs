//! Environment change notifications: `notifications/resources/list_changed`
//! when an environment appears or disappears and
//! `notifications/resources/updated` for a subscribed environment resource
//! ([`super::environments`]) when it changes, whoever changed it (a call of
//! this server, or conda run anywhere else as the same user).
//!
//! Who hears them (MCP 2025-11-25 "Resources: subscriptions" and "List
//! changed"; 2026-07-28 `subscriptions/listen`):
//! - an `initialize` session (stdio, or an HTTP session with
//!   `Mcp-Session-Id`) once it has listed the resources (`list_changed`)
//!   or subscribed to one (`resources/subscribe`, both notifications);
//! - an open `subscriptions/listen` stream of the stateless lifecycle that
//!   accepted `resourcesListChanged` or environment resources.
//!
//! How a change is seen, per principal (a principal sees what its worker's
//! conda sees): the inventory helper's `stamps` request
//! ([`crate::inventory::stamps`]) lists the environments and the stat of
//! what changes with them, in the principal's worker; then every
//! `--watch-interval` the server stats those paths (microseconds, no
//! process) and asks the helper again only when one changed. A path the
//! server may not read (the worker runs as another OS user) is left to the
//! helper, asked every [`UNREADABLE_REFRESH`] then. The watch of a
//! principal runs only while someone listens and ends with the last
//! listener or the session.
//!
//! What is not seen: a change that touches none of the watched paths
//! (conda-meta, its history, site-packages, the envs directories,
//! `environments.txt`), such as a file edited inside an environment.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use rmcp::RoleServer;
use rmcp::model::{ResourceUpdatedNotificationParam, SubscriptionFilter};
use rmcp::service::{Peer, RequestContext, SubscriptionSink};
use tokio_util::sync::CancellationToken;

use super::environments::EnvironmentResource;
use crate::call::NotRun;
use crate::inventory::stamps::{Changes, Drift, Stamps};
use crate::principal::Principal;

/// How often the helper is asked when some watched path cannot be read by
/// the server.
pub const UNREADABLE_REFRESH: Duration = Duration::from_secs(30);

/// The default `--watch-interval`.
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(2);

/// Where a watch gets a principal's stamps: the helper's `stamps` request
/// in that principal's worker (the server's `State` implements it with
/// the call runner, `crate::call::Runner::stamps`, and its limits).
pub trait StampSource: Send + Sync + 'static {
    /// The stamps as `principal`'s conda sees them.
    ///
    /// Errors: the [`NotRun`] of a helper that could not run or answer.
    fn stamps<'a>(
        &'a self,
        principal: &'a Principal,
        cancel: CancellationToken,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<Stamps, NotRun>> + Send + 'a>>;
}

/// The environment watches of every principal someone listens as.
#[derive(Debug)]
pub struct EnvironmentWatch {
    /// Between two stats of the watched paths (`--watch-interval`).
    interval: Duration,
    /// One watch per principal.
    watchers: Mutex<HashMap<Principal, Arc<Watcher>>>,
    /// Cancelled when the session ends (stdin closed) or the HTTP server
    /// stops: every watch ends.
    closing: CancellationToken,
}

/// One principal's watch: who listens.
#[derive(Debug, Default)]
struct Watcher {
    audiences: Mutex<Audiences>,
    /// Told when the baseline is taken (a subscribe waits for it).
    baseline: tokio::sync::watch::Sender<bool>,
}

#[derive(Debug, Default)]
struct Audiences {
    sessions: Vec<Session>,
    streams: Vec<SubscriptionSink>,
}

/// A session to tell: its key, its peer and the URIs of one change it
/// subscribed to.
type Told = (Option<String>, Peer<RoleServer>, Vec<String>);

/// An `initialize` session that listed or subscribed.
#[derive(Debug)]
struct Session {
    /// Its `Mcp-Session-Id` (`None`: the stdio session).
    key: Option<String>,
    peer: Peer<RoleServer>,
    /// The resources it subscribed to.
    subscribed: BTreeSet<String>,
}

/// Whether `context` is an `initialize` session notifications can reach,
/// and its key: the stdio session (`Some(None)`), an HTTP session
/// (`Some(Some(id))`); a stateless request (the 2026-07-28 lifecycle, or an
/// HTTP request without a session) is `None`.
pub fn session_of(context: &RequestContext<RoleServer>) -> Option<Option<String>> {
    context.peer.peer_info()?;
    match context.extensions.get::<http::request::Parts>() {
        None => Some(None),
        Some(parts) => parts
            .headers
            .get(super::SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(|id| Some(id.to_owned())),
    }
}

/// Whether a change concerns the resource `uri`.
fn concerns(uri: &str, changes: &Changes) -> bool {
    match EnvironmentResource::parse(uri) {
        Some(EnvironmentResource::List) => changes.any,
        Some(EnvironmentResource::Environment { name, .. }) => changes.updated.contains(&name),
        None => false,
    }
}

/// Whether `uri` is a resource this watch can report on.
pub fn watchable(uri: &str) -> bool {
    EnvironmentResource::parse(uri).is_some()
}

/// What a `subscriptions/listen` stream may carry here, of what it
/// `requested`: `resourcesListChanged`; updates of the environment
/// resources it named; with `live` (`--live-tools`) `toolsListChanged` and
/// updates of `conda://capabilities` too. (rmcp then intersects it with the
/// request and the advertised capabilities.)
pub fn accepted_filter(requested: &SubscriptionFilter, live: bool) -> SubscriptionFilter {
    let mut filter = SubscriptionFilter::builder()
        .resources_list_changed()
        .build();
    if live {
        filter.tools_list_changed = Some(true);
    }
    let uris: Vec<String> = requested
        .resource_subscriptions
        .iter()
        .flatten()
        .filter(|u| watchable(u) || (live && u.as_str() == super::capabilities::URI))
        .cloned()
        .collect();
    filter.resource_subscriptions = (!uris.is_empty()).then_some(uris);
    filter
}

/// Whether a stream that accepted `filter` hears of changed environments.
pub fn hears_environments(filter: &SubscriptionFilter) -> bool {
    filter.resources_list_changed == Some(true)
        || filter
            .resource_subscriptions
            .iter()
            .flatten()
            .any(|u| watchable(u))
}

impl EnvironmentWatch {
    /// Watches with `interval` between two stats.
    pub fn new(interval: Duration) -> Self {
        Self {
            interval,
            watchers: Mutex::new(HashMap::new()),
            closing: CancellationToken::new(),
        }
    }

    /// Cancel it when the session ends: every watch ends.
    pub fn closing(&self) -> CancellationToken {
        self.closing.clone()
    }

    /// The watch of `principal`, started (asking `source`) when it had
    /// none.
    fn watcher(
        self: &Arc<Self>,
        source: &Arc<dyn StampSource>,
        principal: &Principal,
    ) -> Arc<Watcher> {
        let mut watchers = self.watchers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(w) = watchers.get(principal) {
            return w.clone();
        }
        let watcher = Arc::new(Watcher::default());
        watchers.insert(principal.clone(), watcher.clone());
        let run = Run {
            source: Arc::downgrade(source),
            watch: Arc::downgrade(self),
            principal: principal.clone(),
            watcher: watcher.clone(),
        };
        tokio::spawn(run.watch());
        watcher
    }

    /// An `initialize` session (`key`, [`session_of`]) listed the resources
    /// (`subscribe`: `None`) or subscribed to (`Some((uri, true))`) or
    /// unsubscribed from (`Some((uri, false))`) one. Returns once the
    /// watch has its baseline when this was a subscription, so a change
    /// after the answer is reported.
    pub async fn attend_session(
        self: &Arc<Self>,
        source: &Arc<dyn StampSource>,
        principal: &Principal,
        key: Option<String>,
        peer: Peer<RoleServer>,
        subscribe: Option<(&str, bool)>,
    ) {
        let watcher = self.watcher(source, principal);
        {
            let mut audiences = watcher
                .audiences
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let at = match audiences.sessions.iter().position(|s| s.key == key) {
                Some(at) => at,
                None => {
                    audiences.sessions.push(Session {
                        key,
                        peer,
                        subscribed: BTreeSet::new(),
                    });
                    audiences.sessions.len() - 1
                }
            };
            match subscribe {
                Some((uri, true)) => {
                    audiences.sessions[at].subscribed.insert(uri.to_owned());
                }
                Some((uri, false)) => {
                    audiences.sessions[at].subscribed.remove(uri);
                }
                None => {}
            }
        }
        if matches!(subscribe, Some((_, true))) {
            let mut rx = watcher.baseline.subscribe();
            tokio::select! {
                _ = rx.wait_for(|taken| *taken) => {}
                () = self.closing.cancelled() => {}
            }
        }
    }

    /// Keeps `sink` (a `subscriptions/listen` stream of `principal`) told
    /// until [`EnvironmentWatch::leave_stream`].
    pub fn attend_stream(
        self: &Arc<Self>,
        source: &Arc<dyn StampSource>,
        principal: &Principal,
        sink: SubscriptionSink,
    ) {
        let watcher = self.watcher(source, principal);
        watcher
            .audiences
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .streams
            .push(sink);
    }

    /// The stream `sink` of `principal` closed.
    pub fn leave_stream(&self, principal: &Principal, sink: &SubscriptionSink) {
        let watchers = self.watchers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(w) = watchers.get(principal) {
            w.audiences
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .streams
                .retain(|s| s.id() != sink.id());
        }
    }

    /// Ends `principal`'s watch when nobody listens any more; whether it
    /// ended. Under the map's lock, so a listener that arrives meanwhile
    /// starts a new watch.
    fn end_if_unheard(&self, principal: &Principal, watcher: &Arc<Watcher>) -> bool {
        let mut watchers = self.watchers.lock().unwrap_or_else(PoisonError::into_inner);
        let unheard = {
            let a = watcher
                .audiences
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            a.sessions.is_empty() && a.streams.is_empty()
        };
        if unheard || self.closing.is_cancelled() {
            if watchers
                .get(principal)
                .is_some_and(|w| Arc::ptr_eq(w, watcher))
            {
                watchers.remove(principal);
            }
            return true;
        }
        false
    }
}

/// One principal's watch loop.
struct Run {
    source: Weak<dyn StampSource>,
    watch: Weak<EnvironmentWatch>,
    principal: Principal,
    watcher: Arc<Watcher>,
}

impl Run {
    /// The helper's stamps, or `None` (logged) when it could not answer or
    /// the server is gone.
    async fn stamps(&self) -> Option<Stamps> {
        let (source, watch) = (self.source.upgrade()?, self.watch.upgrade()?);
        let cancel = watch.closing.child_token();
        match source.stamps(&self.principal, cancel).await {
            Ok(stamps) => Some(stamps),
            Err(reason) => {
                tracing::warn!(
                    principal = %self.principal,
                    "environment watch: the environments could not be listed: {reason}"
                );
                None
            }
        }
    }

    async fn watch(self) {
        let Some(watch) = self.watch.upgrade() else {
            return;
        };
        let mut known = self.stamps().await;
        self.watcher.baseline.send_replace(true);
        if let Some(k) = &known {
            tracing::info!(
                principal = %self.principal,
                environments = k.environments.len(),
                "environment watch: started"
            );
        }
        let mut asked = Instant::now();
        loop {
            tokio::select! {
                () = tokio::time::sleep(watch.interval) => {}
                () = watch.closing.cancelled() => {}
            }
            if watch.end_if_unheard(&self.principal, &self.watcher) {
                tracing::debug!(principal = %self.principal, "environment watch: ended");
                return;
            }
            let ask = match known.as_ref().map(Stamps::drift) {
                None | Some(Drift::Changed) => true,
                Some(Drift::Unreadable) => asked.elapsed() >= UNREADABLE_REFRESH,
                Some(Drift::None) => false,
            };
            if !ask {
                continue;
            }
            asked = Instant::now();
            let Some(now) = self.stamps().await else {
                continue;
            };
            if let Some(before) = &known {
                let changes = now.compare(before);
                if changes.any {
                    tracing::info!(
                        principal = %self.principal,
                        list_changed = changes.list,
                        updated = changes.updated.len(),
                        "environment watch: environments changed"
                    );
                    self.tell(&changes).await;
                }
            }
            known = Some(now);
        }
    }

    /// Sends the notifications `changes` calls for to each listener that
    /// asked for them; a session whose transport is gone is dropped.
    async fn tell(&self, changes: &Changes) {
        let (sessions, streams): (Vec<Told>, Vec<SubscriptionSink>) = {
            let a = self
                .watcher
                .audiences
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            (
                a.sessions
                    .iter()
                    .map(|s| {
                        let uris = s
                            .subscribed
                            .iter()
                            .filter(|u| concerns(u, changes))
                            .cloned()
                            .collect();
                        (s.key.clone(), s.peer.clone(), uris)
                    })
                    .collect(),
                a.streams.clone(),
            )
        };
        let mut gone = Vec::new();
        for (key, peer, uris) in sessions {
            let mut sent = true;
            if changes.list {
                sent &= peer.notify_resource_list_changed().await.is_ok();
            }
            for uri in uris {
                sent &= peer
                    .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                    .await
                    .is_ok();
            }
            if !sent {
                tracing::info!(principal = %self.principal, "environment watch: a session is gone");
                gone.push(key);
            }
        }
        if !gone.is_empty() {
            self.watcher
                .audiences
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .sessions
                .retain(|s| !gone.contains(&s.key));
        }
        for sink in streams {
            let accepted = sink.accepted().clone();
            if changes.list && accepted.resources_list_changed == Some(true) {
                let _ = sink.notify_resource_list_changed().await;
            }
            for uri in accepted.resource_subscriptions.iter().flatten() {
                if concerns(uri, changes) {
                    let _ = sink.notify_resource_updated(uri.as_str()).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::environments::LIST_URI;
    use super::*;

    #[test]
    fn a_change_concerns_the_listing_and_the_named_environment_only() {
        let changes = Changes {
            list: false,
            updated: BTreeSet::from(["web".to_owned()]),
            any: true,
        };
        assert!(concerns(LIST_URI, &changes));
        assert!(concerns("conda://environments/web/packages", &changes));
        assert!(concerns("conda://environments/web/history", &changes));
        assert!(!concerns("conda://environments/base/packages", &changes));
        assert!(!concerns("conda://capabilities", &changes));
        assert!(!concerns(LIST_URI, &Changes::default()));
        assert!(watchable("conda://environments/web/export"));
        assert!(!watchable("conda://capabilities"));
    }
}
