//! The served MCP handler before and after startup: `initialize` and
//! `server/discover` are answered at once whatever discovery is doing (a
//! conda that takes tens of seconds to start must not exceed a host's
//! 30-60 s connection limit); every other request waits for startup, at
//! most `--timeout`, and is then handled by [`Handler`], or fails with a
//! clear error when startup failed or did not finish in time.
//!
//! A startup that finishes first ([`CondaMcp::new`]) serves exactly as
//! [`Handler`] does, `initialize` included.

use std::sync::Arc;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, ServerConfig, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};

use super::handler::Handler;
use super::state::State;

/// Where startup is: `None` while it runs, then the server or why startup
/// failed.
type Ready = Option<Result<Handler, StartupFailed>>;

/// Why startup failed, as every later request is told (one sentence).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct StartupFailed(pub String);

/// What is answered before startup has finished.
#[derive(Debug)]
struct Early {
    /// The `initialize` / `server/discover` answer without the catalog's
    /// shared options ([`super::server_config`] with none).
    info: ServerConfig,
    /// How long a request waits for startup (`--timeout`).
    wait: Duration,
    /// `--live-tools`.
    live: bool,
}

/// The MCP server (cheap to clone).
#[derive(Debug, Clone)]
pub struct CondaMcp {
    ready: tokio::sync::watch::Receiver<Ready>,
    early: Arc<Early>,
}

/// Startup's end, reported once to a pending [`CondaMcp`].
#[derive(Debug)]
pub struct Readiness(tokio::sync::watch::Sender<Ready>);

impl Readiness {
    /// Startup finished: requests are served with `state`.
    pub fn ready(self, state: Arc<State>) {
        self.0.send_replace(Some(Ok(Handler::new(state))));
    }

    /// Startup failed: requests fail with `reason` (one sentence).
    pub fn failed(self, reason: String) {
        self.0.send_replace(Some(Err(StartupFailed(reason))));
    }
}

impl CondaMcp {
    /// The server of a finished startup.
    pub fn new(state: State) -> Self {
        let (wait, live, info) = (
            state.pipeline.settings.limits.timeout,
            state.live.is_some(),
            state.info.clone(),
        );
        let (server, readiness) = Self::pending(info, wait, live);
        readiness.ready(Arc::new(state));
        server
    }

    /// A server whose startup still runs: `info` answers `initialize` and
    /// `server/discover` meanwhile; other requests wait up to `wait` for
    /// the [`Readiness`] to report.
    pub fn pending(info: ServerConfig, wait: Duration, live: bool) -> (Self, Readiness) {
        let (tx, rx) = tokio::sync::watch::channel(None);
        (
            Self {
                ready: rx,
                early: Arc::new(Early { info, wait, live }),
            },
            Readiness(tx),
        )
    }

    /// The state, once startup has finished (for shutdown and tests).
    pub fn state(&self) -> Option<Arc<State>> {
        match &*self.ready.borrow() {
            Some(Ok(l)) => Some(l.state().clone()),
            _ => None,
        }
    }

    /// The server, waiting for startup at most `--timeout`.
    ///
    /// Errors: an internal error (-32603) saying that startup failed (and
    /// why) or did not finish in time.
    async fn loaded(&self) -> Result<Handler, McpError> {
        let mut rx = self.ready.clone();
        let wait = self.early.wait;
        let failed = |m: String| McpError::internal_error(m, None);
        match tokio::time::timeout(wait, rx.wait_for(Option::is_some)).await {
            Ok(Ok(r)) => match &*r {
                Some(Ok(l)) => Ok(l.clone()),
                Some(Err(reason)) => Err(failed(format!("the server could not start: {reason}"))),
                None => Err(failed("the server is not ready".into())),
            },
            Ok(Err(_)) => Err(failed("the server stopped before it was ready".into())),
            Err(_) => Err(failed(format!(
                "conda discovery did not finish within {:.0} s (--timeout); the conda installation may be on a slow or unreachable file system",
                wait.as_secs_f64()
            ))),
        }
    }
}

impl ServerHandler for CondaMcp {
    fn get_info(&self) -> ServerConfig {
        match &*self.ready.borrow() {
            Some(Ok(l)) => l.get_info(),
            _ => self.early.info.clone(),
        }
    }

    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        self.loaded()
            .await?
            .on_custom_request(request, context)
            .await
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.loaded().await?.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        // Over HTTP the gate's log line says whether the answer was an error.
        let note = super::CallNote::of(&context.extensions);
        let answer = match self.loaded().await {
            Ok(loaded) => loaded.call_tool(request, context).await,
            Err(e) => Err(e),
        };
        if let Some(note) = note {
            note.record(&answer);
        }
        answer
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.loaded().await?.get_task(request, context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.loaded().await?.update_task(request, context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.loaded().await?.cancel_task(request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        self.loaded().await?.list_resources(request, context).await
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.loaded().await?.subscribe(request, context).await
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.loaded().await?.unsubscribe(request, context).await
    }

    /// `subscriptions/listen` (2026-07-28): resource changes always, tool
    /// list changes with `--live-tools` ([`super::watch::accepted_filter`]).
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        Some(super::watch::accepted_filter(requested, self.early.live))
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        self.loaded().await?.listen(context).await
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        self.loaded()
            .await?
            .list_resource_templates(request, context)
            .await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        self.loaded().await?.read_resource(request, context).await
    }

    /// `prompts/list` needs no startup: the prompts are fixed.
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        Ok(super::prompts::list())
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        self.loaded().await?.get_prompt(request, context).await
    }

    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, McpError> {
        self.loaded().await?.complete(request, context).await
    }
}
