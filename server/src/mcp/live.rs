//! `--live-tools`: the served tools follow conda and its plugins.
//!
//! Without the flag the tool set, the catalog it was built from and the
//! `conda://capabilities` document are built once at startup and served for
//! the life of the process; a change sets `restart_required` (see
//! [`crate::discovery::restart`]). With it, when the restart watch hands
//! over a changed discovery after a call ([`LiveTools::apply`]):
//!
//! 1. the catalog, the tools (same [`ToolOptions`] as at startup) and the
//!    capabilities document are built from the new discovery; when the new
//!    tools cannot be built (a broken schema) that is logged and the old
//!    surface stays (and `restart_required` with it);
//! 2. the new [`Surface`] replaces the old one as a whole: every request
//!    routed from then on sees it, and a call already routed (queued or
//!    running) keeps the surface it was validated with, because it holds
//!    its plan (argv, classification) and not the surface;
//! 3. the client is told, before the result of the call that caused the
//!    change is sent: in an `initialize` session with
//!    `notifications/tools/list_changed` and
//!    `notifications/resources/list_changed` (capabilities `tools.listChanged`
//!    and `resources.listChanged`) and, when it subscribed to
//!    `conda://capabilities` (`resources/subscribe`),
//!    `notifications/resources/updated`; in the stateless 2026-07-28
//!    lifecycle the same notifications go to every open
//!    `subscriptions/listen` stream that accepted them (a notification
//!    outside such a stream is not allowed there);
//! 4. `restart_required` stays set until the new tool list has been served
//!    by a `tools/list` ([`LiveTools::listed`]).
//!
//! The `instructions` of `initialize` are sent once and not rebuilt.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};

use rmcp::RoleServer;
use rmcp::service::{Peer, SubscriptionContext, SubscriptionSink};
use tokio_util::sync::CancellationToken;

use super::capabilities::{self, EnvironmentSummary, PolicySummary};
use crate::catalog::Catalog;
use crate::discovery::Discovery;
use crate::discovery::restart::RestartWatch;
use crate::tools::{ToolOptions, ToolSet};

/// What the served tools are built from: fixed at startup, or replaced as a
/// whole by [`LiveTools::apply`].
#[derive(Debug)]
pub struct Surface {
    /// The catalog of the target.
    pub catalog: Arc<Catalog>,
    /// The tools.
    pub tools: ToolSet,
    /// The `conda://capabilities` document, serialized once per surface.
    pub capabilities: Arc<str>,
}

/// The surface served now, replaceable.
#[derive(Debug)]
pub struct Served(RwLock<Arc<Surface>>);

impl Served {
    /// Serves `surface`.
    pub fn new(surface: Surface) -> Self {
        Self(RwLock::new(Arc::new(surface)))
    }

    /// The surface served now (a request keeps this one to its end).
    pub fn get(&self) -> Arc<Surface> {
        self.0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn replace(&self, surface: Surface) {
        *self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(surface);
    }
}

/// `--live-tools`: how to rebuild the surface and whom to tell.
#[derive(Debug)]
pub struct LiveTools {
    /// The tool options of startup.
    options: ToolOptions,
    /// The served conda executable (named in the capabilities document).
    target: PathBuf,
    /// What conda sees (named in the capabilities document).
    environment: EnvironmentSummary,
    /// A rebuilt tool list has not been served yet.
    list_pending: AtomicBool,
    /// One rebuild at a time; a call that finds another call rebuilding
    /// waits for it, so its result never precedes the new surface.
    rebuilding: tokio::sync::Mutex<()>,
    /// The `initialize` client subscribed to `conda://capabilities`.
    capabilities_subscribed: AtomicBool,
    /// Open `subscriptions/listen` streams (stateless lifecycle).
    listeners: Mutex<Vec<SubscriptionSink>>,
    /// Cancelled when the session ends (stdin closed): open streams end
    /// then, so they do not hold up the exit.
    closing: CancellationToken,
}

impl LiveTools {
    /// Rebuilds with the startup `options`, naming `target` and
    /// `environment` in the capabilities document.
    pub fn new(options: ToolOptions, target: PathBuf, environment: EnvironmentSummary) -> Self {
        Self {
            options,
            target,
            environment,
            list_pending: AtomicBool::new(false),
            rebuilding: tokio::sync::Mutex::new(()),
            capabilities_subscribed: AtomicBool::new(false),
            listeners: Mutex::new(Vec::new()),
            closing: CancellationToken::new(),
        }
    }

    /// The surface of `catalog` with the startup options.
    ///
    /// Errors: a generated schema is broken.
    pub fn surface(&self, catalog: Arc<Catalog>) -> Result<Surface, crate::schema::SchemaError> {
        let tools = ToolSet::build(&catalog, &self.options)?;
        let capabilities = capabilities::render(
            &catalog,
            &self.target,
            &tools,
            capabilities::ServedAs {
                policy: PolicySummary::of(&self.options.policy),
                profile: self.options.profile,
                mode: self.options.mode,
            },
            self.environment.clone(),
        )
        .into();
        Ok(Surface {
            catalog,
            tools,
            capabilities,
        })
    }

    /// After a call: when `watch` holds a changed discovery, serves its
    /// surface and tells the client (through `peer` in an `initialize`
    /// session, through the open `subscriptions/listen` streams otherwise).
    /// Returns once the new surface is served, or at once when nothing
    /// changed and no rebuild is under way.
    pub async fn apply(&self, served: &Served, watch: &RestartWatch, peer: &Peer<RoleServer>) {
        let _one = self.rebuilding.lock().await;
        let Some(found) = watch.take_changed() else {
            return;
        };
        self.rebuild(served, found);
        self.notify(peer).await;
    }

    fn rebuild(&self, served: &Served, found: Discovery) {
        let surface = match self.surface(Arc::new(found.catalog)) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!("the new tools cannot be built; keeping the old ones: {e}");
                return;
            }
        };
        tracing::info!(
            conda_version = %surface.catalog.conda_version,
            tools = surface.tools.listed.len(),
            "serving the rebuilt tools"
        );
        served.replace(surface);
        // After the swap: a tools/list between swap and this store serves
        // the new list without clearing, the next one clears.
        self.list_pending.store(true, Ordering::Relaxed);
    }

    /// The list-changed notifications (and `resources/updated` for a
    /// subscriber). A notification that cannot be sent is logged; the
    /// client still sees the new tools on its next `tools/list`.
    async fn notify(&self, peer: &Peer<RoleServer>) {
        if peer.peer_info().is_some() {
            // An initialize session.
            if let Err(e) = peer.notify_tool_list_changed().await {
                tracing::warn!("cannot send notifications/tools/list_changed: {e}");
            }
            if let Err(e) = peer.notify_resource_list_changed().await {
                tracing::warn!("cannot send notifications/resources/list_changed: {e}");
            }
            if self.capabilities_subscribed.load(Ordering::Relaxed)
                && let Err(e) = peer
                    .notify_resource_updated(rmcp::model::ResourceUpdatedNotificationParam::new(
                        capabilities::URI,
                    ))
                    .await
            {
                tracing::warn!("cannot send notifications/resources/updated: {e}");
            }
        }
        let sinks = self
            .listeners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        for sink in sinks {
            let accepted = sink.accepted().clone();
            if accepted.tools_list_changed == Some(true) {
                let _ = sink.notify_tool_list_changed().await;
            }
            if accepted.resources_list_changed == Some(true) {
                let _ = sink.notify_resource_list_changed().await;
            }
            if accepted
                .resource_subscriptions
                .as_ref()
                .is_some_and(|uris| uris.iter().any(|u| u == capabilities::URI))
            {
                let _ = sink.notify_resource_updated(capabilities::URI).await;
            }
        }
    }

    /// A `tools/list` served the surface it read: once a rebuilt list has
    /// been served, `restart_required` is cleared.
    pub fn listed(&self, watch: &RestartWatch) {
        if self.list_pending.swap(false, Ordering::Relaxed) {
            watch.clear();
        }
    }

    /// `resources/subscribe` (`true`) or `resources/unsubscribe` (`false`)
    /// of `conda://capabilities`.
    pub fn subscribe_capabilities(&self, on: bool) {
        self.capabilities_subscribed.store(on, Ordering::Relaxed);
    }

    /// Cancel it when the session ends: every open `subscriptions/listen`
    /// stream ends (with its final result).
    pub fn closing(&self) -> CancellationToken {
        self.closing.clone()
    }

    /// Keeps one `subscriptions/listen` stream open until the client
    /// cancels it or the session ends ([`LiveTools::closing`]).
    pub async fn listen(&self, context: SubscriptionContext) {
        let sink = context.sink().clone();
        let id = sink.id().clone();
        self.listeners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(sink);
        tokio::select! {
            () = context.cancelled() => {}
            () = self.closing.cancelled() => {}
        }
        self.listeners
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .retain(|s| *s.id() != id);
    }
}
