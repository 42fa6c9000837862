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
use crate::principal::Principal;
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

/// The MCP server (cheap to clone).
#[derive(Debug, Clone)]
pub struct CondaMcp {
    state: Arc<State>,
}

impl CondaMcp {
    /// Wraps the startup state.
    pub fn new(state: State) -> Self {
        Self {
            state: Arc::new(state),
        }
    }

    /// The shared state (for shutdown and tests).
    pub fn state(&self) -> &Arc<State> {
        &self.state
    }

    /// The plan of a call routed to `route` on surface `sf`, or its early
    /// outcome.
    fn plan(&self, sf: &Surface, route: Route, args: &Value) -> Result<Plan, Outcome> {
        let st = &self.state.settings;
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
    async fn call(&self, route: Route, args: Value, call: CallContext) -> Outcome {
        let plan = match self.plan(&call.surface, route, &args) {
            Ok(plan) => plan,
            Err(early) => return early,
        };
        let peer = call.peer.clone();
        let outcome = self.run(plan, call).await;
        if let Some(live) = &self.state.live {
            live.apply(&self.state.surface, &self.state.runner.restart, &peer)
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
    pub async fn run(&self, plan: Plan, call: CallContext) -> Outcome {
        let progress = match call.progress {
            Some((peer, token)) if plan.reports_progress => {
                Progress::start_with(peer, token, plan.what.clone())
            }
            _ => Progress::inert(),
        };
        let outcome = self
            .state
            .runner
            .run(plan, &call.principal, progress.observer(), call.ct)
            .await;
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
    /// Who is calling (over HTTP, whom the token names; else
    /// [`Principal::local`]).
    pub principal: Principal,
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
        self.state.info.clone()
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
        let surface = self.state.surface.get();
        if let Some(live) = &self.state.live {
            live.listed(&self.state.runner.restart);
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
        let surface = self.state.surface.get();
        let Some(route) = surface.tools.route(&request.name) else {
            return Err(unknown("tool"));
        };
        let name = request.name.to_string();
        let args = Value::Object(request.arguments.unwrap_or_default());
        let this = self.clone();
        let call = CallContext {
            ct: context.ct.clone(),
            progress: context
                .meta
                .get_progress_token()
                .map(|t| (context.peer.clone(), t)),
            peer: context.peer.clone(),
            surface,
            principal: crate::http::principal_of(&context.extensions),
        };
        let task = tokio::spawn(async move { this.call(route, args, call).await });
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
        let restart_required = self.state.runner.restart.required();
        Ok(self
            .state
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
            .with_size(self.state.surface.get().capabilities.len() as u64);
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
        self.subscription(&request.uri, true)
    }

    /// `resources/unsubscribe` (`initialize` sessions).
    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscription(&request.uri, false)
    }

    /// `subscriptions/listen` (2026-07-28): served with `--live-tools` only
    /// (without it nothing ever changes, and it is "method not found").
    fn accepted_subscription_filter(
        &self,
        _requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        self.state
            .live
            .as_ref()
            .map(|_| LiveTools::accepted_filter())
    }

    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        match &self.state.live {
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
                text: self.state.surface.get().capabilities.to_string(),
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
    fn subscription(&self, uri: &str, on: bool) -> Result<(), McpError> {
        let Some(live) = &self.state.live else {
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
