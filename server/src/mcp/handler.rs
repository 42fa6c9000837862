//! The rmcp [`ServerHandler`]: tools/list, tools/call, resources/list,
//! resources/read, server info. Hand-built tools (no macros): the tool set
//! is data from the catalog.
//!
//! Every call runs in its own task, so a panic in it becomes an error result
//! instead of a hung request; every failure inside (spawn failure, worker
//! death) is a tool result with `isError`.
//!
//! A call is planned and run by the protocol-free pipeline in
//! [`crate::call`]; this module adds what is MCP's: progress notifications
//! for the request's progress token, the request's cancellation, and the
//! conversion of the outcome into a tool result ([`super::results`]).
//!
//! The tools, their catalog and the capabilities document are one
//! [`Surface`]: each request reads the one served when it arrives and keeps
//! it to its end. With `--live-tools` a call after which the restart watch
//! saw conda or its plugins change replaces it before its own result is
//! sent ([`super::live`]).

use std::sync::Arc;

use rmcp::model::ProgressToken;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ServerConfig,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::capabilities;
use super::live::{LiveTools, Served, Surface};
use super::progress::Progress;
use super::results::Results;
use super::tools::Route;
use crate::call::{self, NotRun, Outcome, Plan, Runner};
use crate::settings::Settings;

/// Everything a call needs.
#[derive(Debug)]
pub struct State {
    /// The catalog, tools and capabilities document served now: fixed at
    /// startup, or replaced as a whole with `--live-tools`.
    pub surface: Served,
    /// `--live-tools`: how the surface is rebuilt and whom to tell; `None`
    /// keeps the surface for the life of the process.
    pub live: Option<LiveTools>,
    /// The settings the server started with: the policy, the limits of
    /// every call, the schema profile (`conda_describe` answers in it),
    /// what the server decides for typed calls (confirmation by dry run,
    /// `conda_run`'s server options).
    pub settings: Settings,
    /// The executors (exec and discovery lanes) and the restart watch.
    pub runner: Runner,
    /// Outcomes as tool results (output-schema checked).
    pub results: Results,
    /// `initialize` / `server/discover` answer.
    pub info: ServerConfig,
}

/// Where startup is: `None` while it runs, then the state or why it
/// failed (one sentence).
type Ready = Option<Result<Arc<State>, String>>;

/// What the server answers before startup has finished.
#[derive(Debug)]
struct Early {
    /// The `initialize` / `server/discover` answer without the catalog's
    /// shared options ([`super::server_config`] with none).
    info: ServerConfig,
    /// How long a request waits for startup (`--timeout`).
    wait: std::time::Duration,
    /// `--live-tools`.
    live: bool,
}

/// The MCP server (cheap to clone). It answers `initialize` and
/// `server/discover` at once, whatever discovery is doing; every other
/// request waits for startup to finish, at most `--timeout`, and fails
/// with a clear error if startup failed or did not finish in time.
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
        self.0.send_replace(Some(Ok(state)));
    }

    /// Startup failed: requests fail with `reason` (one sentence).
    pub fn failed(self, reason: String) {
        self.0.send_replace(Some(Err(reason)));
    }
}

impl CondaMcp {
    /// Wraps the startup state (startup already finished).
    pub fn new(state: State) -> Self {
        let wait = state.settings.limits.timeout;
        let live = state.live.is_some();
        let info = state.info.clone();
        let (tx, rx) = tokio::sync::watch::channel(None);
        Readiness(tx).ready(Arc::new(state));
        Self {
            ready: rx,
            early: Arc::new(Early { info, wait, live }),
        }
    }

    /// A server whose startup is still running: `info` answers
    /// `initialize` meanwhile, requests wait up to `wait` for the
    /// [`Readiness`] to report.
    pub fn pending(info: ServerConfig, wait: std::time::Duration, live: bool) -> (Self, Readiness) {
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
            Some(Ok(s)) => Some(s.clone()),
            _ => None,
        }
    }

    /// The state, waiting for startup at most `--timeout`.
    ///
    /// Errors: an internal error (-32603) saying that startup failed (and
    /// why) or did not finish in time.
    async fn ready(&self) -> Result<Arc<State>, McpError> {
        let mut rx = self.ready.clone();
        let wait = self.early.wait;
        match tokio::time::timeout(wait, rx.wait_for(Option::is_some)).await {
            Ok(Ok(r)) => match &*r {
                Some(Ok(s)) => Ok(s.clone()),
                Some(Err(reason)) => Err(McpError::internal_error(
                    format!("the server could not start: {reason}"),
                    None,
                )),
                None => Err(McpError::internal_error("the server is not ready", None)),
            },
            Ok(Err(_)) => Err(McpError::internal_error(
                "the server stopped before it was ready",
                None,
            )),
            Err(_) => Err(McpError::internal_error(
                format!(
                    "conda discovery did not finish within {:.0} s (--timeout); the conda installation may be on a slow or unreachable file system",
                    wait.as_secs_f64()
                ),
                None,
            )),
        }
    }

    /// The plan of a call routed to `route` on surface `sf`, or its early
    /// outcome.
    fn plan(state: &State, sf: &Surface, route: Route, args: &Value) -> Result<Plan, Outcome> {
        let st = &state.settings;
        match route {
            Route::Generated(i) => call::generated::plan(
                &sf.catalog,
                &st.policy,
                st.typed(),
                &sf.tools.generated[i],
                args,
            ),
            Route::Execute => call::raw::plan(
                &sf.catalog,
                &st.policy,
                st.limits,
                sf.tools.execute_validator.as_ref(),
                args,
            ),
            Route::CliCommand => {
                call::completion::plan(&sf.catalog, sf.tools.cli_command.is_some(), st.limits, args)
            }
            Route::Compact(tool) => call::compact::plan(
                &sf.catalog,
                &st.policy,
                st.typed(),
                &sf.tools,
                st.profile,
                tool,
                args,
            ),
        }
    }

    /// Plans and runs one call on the surface it was routed with; with
    /// `--live-tools`, serves the tools of a change the call caused before
    /// its outcome is returned.
    async fn call(state: &State, route: Route, args: Value, call: CallContext) -> Outcome {
        let plan = match Self::plan(state, &call.surface, route, &args) {
            Ok(plan) => plan,
            Err(early) => return early,
        };
        let peer = call.peer.clone();
        let outcome = Self::run(state, plan, call).await;
        if let Some(live) = &state.live {
            live.apply(&state.surface, &state.runner.restart, &peer)
                .await;
        }
        outcome
    }

    /// Runs one plan and waits for its outcome.
    ///
    /// `call.ct` is the request's cancellation (rmcp cancels it on
    /// `notifications/cancelled`, and also after every response, so it is
    /// only watched while the job runs): it cancels the job, which kills
    /// its process tree (or takes it out of the queue); rmcp then sends no
    /// response. Updates (queue position, start, output counters) become
    /// progress notifications when the request carried a progress token and
    /// the plan reports progress ([`Progress`]).
    pub async fn run(state: &State, plan: Plan, call: CallContext) -> Outcome {
        let progress = match call.progress {
            Some((peer, token)) if plan.reports_progress => {
                Progress::start_with(peer, token, plan.what.clone())
            }
            _ => Progress::inert(),
        };
        let outcome = state.runner.run(plan, progress.observer(), call.ct).await;
        progress.finish().await;
        outcome
    }
}

/// What a call needs of its request besides the arguments.
#[derive(Debug, Clone)]
pub struct CallContext {
    /// Cancelled by rmcp on `notifications/cancelled` (and after the
    /// response).
    pub ct: CancellationToken,
    /// Where progress goes, when the request carried a progress token.
    pub progress: Option<(Peer<RoleServer>, ProgressToken)>,
    /// The client (for the notifications of `--live-tools`).
    pub peer: Peer<RoleServer>,
    /// The surface the call was routed with.
    pub surface: Arc<Surface>,
}

fn unknown(what: &str) -> McpError {
    // Lists nothing of the catalog, and does not echo the name.
    McpError::invalid_params(format!("unknown {what}"), None)
}

/// MCP request methods this server serves: a request for one of them that
/// reaches [`ServerHandler::on_custom_request`] had params rmcp could not
/// read, which is invalid params (-32602), not an unknown method.
const SERVED_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "server/discover",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "resources/subscribe",
    "resources/unsubscribe",
    "subscriptions/listen",
];

impl ServerHandler for CondaMcp {
    fn get_info(&self) -> ServerConfig {
        match &*self.ready.borrow() {
            Some(Ok(state)) => state.info.clone(),
            _ => self.early.info.clone(),
        }
    }

    /// Requests rmcp could not type: malformed params of a served method are
    /// invalid params naming the method; anything else is "method not
    /// found". Neither echoes what was sent.
    async fn on_custom_request(
        &self,
        request: rmcp::model::CustomRequest,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CustomResult, McpError> {
        match SERVED_METHODS.iter().find(|m| **m == request.method) {
            Some(method) => Err(McpError::invalid_params(
                format!("invalid params for {method}"),
                None,
            )),
            None => Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "method not found",
                None,
            )),
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let state = self.ready().await?;
        let surface = state.surface.get();
        if let Some(live) = &state.live {
            live.listed(&state.runner.restart);
        }
        Ok(ListToolsResult::with_all_items(
            surface.tools.listed.as_ref().clone(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let state = self.ready().await?;
        let surface = state.surface.get();
        let Some(route) = surface.tools.route(&request.name) else {
            if state.settings.mode == super::tools::ToolMode::Compact {
                return Err(unknown(&format!(
                    "tool; {}",
                    super::compact::UNKNOWN_TOOL_HINT
                )));
            }
            return Err(unknown("tool"));
        };
        let name = request.name.to_string();
        let args = Value::Object(request.arguments.unwrap_or_default());
        let task_state = state.clone();
        let call = CallContext {
            ct: context.ct.clone(),
            progress: context
                .meta
                .get_progress_token()
                .map(|t| (context.peer.clone(), t)),
            peer: context.peer.clone(),
            surface,
        };
        let task = tokio::spawn(async move { Self::call(&task_state, route, args, call).await });
        let outcome = match task.await {
            Ok(outcome) => outcome,
            Err(e) => {
                tracing::error!("a tool call failed internally: {e}");
                Outcome::NotRun {
                    what: name,
                    reason: NotRun::Internal("an internal error occurred"),
                }
            }
        };
        let restart_required = state.runner.restart.required();
        Ok(state
            .results
            .to_tool_result(outcome, restart_required)
            .into())
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let r = Resource::new(capabilities::URI, "capabilities")
            .with_title("conda-mcp capabilities")
            .with_description("The conda served, its catalog, the generated tools, plugins and discovery fingerprint.")
            .with_mime_type(capabilities::MIME_TYPE)
            .with_size(self.ready().await?.surface.get().capabilities.len() as u64);
        Ok(ListResourcesResult::with_all_items(vec![r]))
    }

    /// `resources/subscribe` (`initialize` sessions): only
    /// `conda://capabilities`, which changes only with `--live-tools`.
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let state = self.ready().await?;
        Self::subscription(&state, &request.uri, true)
    }

    /// `resources/unsubscribe` (`initialize` sessions).
    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let state = self.ready().await?;
        Self::subscription(&state, &request.uri, false)
    }

    /// `subscriptions/listen` (2026-07-28): served with `--live-tools` only
    /// (without it nothing ever changes, and it is "method not found").
    fn accepted_subscription_filter(
        &self,
        _requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        self.early.live.then(LiveTools::accepted_filter)
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        let state = self.ready().await?;
        match &state.live {
            Some(live) => live.listen(context).await,
            None => context.cancelled().await,
        }
        Ok(())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if request.uri != capabilities::URI {
            return Err(unknown("resource"));
        }
        Ok(
            ReadResourceResult::new(vec![ResourceContents::TextResourceContents {
                uri: capabilities::URI.into(),
                mime_type: Some(capabilities::MIME_TYPE.into()),
                text: self.ready().await?.surface.get().capabilities.to_string(),
                meta: None,
            }])
            .into(),
        )
    }
}

impl CondaMcp {
    /// `resources/subscribe` / `resources/unsubscribe` of `uri`: served
    /// with `--live-tools` only (without it the capabilities document never
    /// changes and the method is not found, as the capabilities say); only
    /// the capabilities resource exists.
    fn subscription(state: &State, uri: &str, on: bool) -> Result<(), McpError> {
        let Some(live) = &state.live else {
            return Err(McpError::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "method not found",
                None,
            ));
        };
        if uri != capabilities::URI {
            return Err(unknown("resource"));
        }
        live.subscribe_capabilities(on);
        Ok(())
    }
}
