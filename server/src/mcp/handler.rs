//! The rmcp [`ServerHandler`]: tools/list, tools/call, resources/list,
//! resources/read, server info. Hand-built tools (no macros): the tool set
//! is data from the catalog.
//!
//! Every call runs in its own task, so a panic in it becomes an error result
//! instead of a hung request; every failure inside (spawn failure, worker
//! death) is a tool result with `isError`.
//!
//! [`CondaMcp::run_job`] is the one place a job meets the worker: progress
//! notifications, cancellation and queue reporting hook in there.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use rmcp::model::{ProgressToken, ResourceUpdatedNotificationParam};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ServerConfig,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use conda_mcp_shared::ExecutionResult;

use super::progress::Progress;
use super::restart::RestartWatch;
use super::results::{self, ResultChecker};
use super::tools::{EXECUTE_TOOL, Route, ToolSet};
use super::{Limits, capabilities, compact, execute};
use crate::catalog::Catalog;
use crate::policy::{self, Policy};
use crate::worker_client::{ExecError, Executor, Job, Program};

/// What the served tools are built from: fixed at startup, or replaced as
/// a whole when `--live-tools` sees conda or its plugins change. A call
/// keeps the surface it was routed with until it ends.
#[derive(Debug)]
pub struct Surface {
    /// The catalog of the target.
    pub catalog: Arc<Catalog>,
    /// The tools.
    pub tools: ToolSet,
    /// The capabilities resource, serialized once per surface.
    pub capabilities: Arc<str>,
}

/// How `--live-tools` rebuilds the surface: the options the tools were
/// built with and what the capabilities resource names.
#[derive(Debug, Clone)]
pub struct LiveTools {
    /// The tool options of startup.
    pub options: super::tools::ToolOptions,
    /// The served conda executable.
    pub target: std::path::PathBuf,
}

/// Everything a call needs.
#[derive(Debug)]
pub struct State {
    /// The served surface (catalog, tools, capabilities); see
    /// [`State::surface`].
    pub surface: std::sync::RwLock<Arc<Surface>>,
    /// `--live-tools`: how to rebuild the surface; `None` keeps it fixed
    /// for the life of the process.
    pub live: Option<LiveTools>,
    /// Set when a rebuilt tool list has not been served yet; the next
    /// `tools/list` clears it and `restart_required` with it.
    pub list_pending: std::sync::atomic::AtomicBool,
    /// Whether the client subscribed to `conda://capabilities`.
    pub capabilities_subscribed: std::sync::atomic::AtomicBool,
    /// The client, for the notifications of a rebuild (the latest request's
    /// peer).
    pub peer: std::sync::Mutex<Option<Peer<RoleServer>>>,
    /// The startup policy.
    pub policy: Policy,
    /// The schema profile (`conda_describe` answers in it).
    pub profile: crate::schema::Profile,
    /// Limits of every call.
    pub limits: Limits,
    /// The exec lane: conda calls, one at a time, in order.
    pub exec: Arc<Executor>,
    /// Output-schema check of results.
    pub results: ResultChecker,
    /// `initialize` / `server/discover` answer.
    pub info: ServerConfig,
    /// The discovery lane: helper scripts (`conda_cli_command`), never
    /// behind a running conda.
    pub discovery_lane: Arc<Executor>,
    /// Restart detection after mutations (stamp and fingerprint of what
    /// startup discovered).
    pub restart: RestartWatch,
}

impl State {
    /// The surface served now.
    pub fn surface(&self) -> Arc<Surface> {
        match self.surface.read() {
            Ok(s) => s.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
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

    async fn call(
        &self,
        name: &str,
        route: Route,
        args: Value,
        call: CallContext,
    ) -> CallToolResult {
        match route {
            Route::Generated(i) => self.call_generated(i, args, call, false).await,
            Route::Compact => self.call_compact(name, args, call).await,
            Route::Execute => self.call_execute(args, call).await,
            Route::CliCommand => match &call.surface.tools.cli_command {
                Some(tool) => {
                    let st = &self.state;
                    tool.call(
                        &call.surface.catalog,
                        &st.discovery_lane,
                        st.limits.timeout,
                        st.limits.output_limit_bytes,
                        &args,
                        call.ct,
                    )
                    .await
                }
                None => results::not_run(name, &"this tool is not available"),
            },
        }
    }

    /// `conda_commands`, `conda_describe` and `conda_call`
    /// ([`super::compact`]): `conda_call` goes through
    /// [`CondaMcp::call_generated`], exactly as the typed tool would.
    async fn call_compact(&self, name: &str, args: Value, call: CallContext) -> CallToolResult {
        let st = &self.state;
        let sf = call.surface.clone();
        if name == compact::COMMANDS_TOOL {
            return CallToolResult::structured(compact::commands(&sf.catalog, &sf.tools));
        }
        let request = match compact::request(&sf.catalog, &sf.tools, &args) {
            Ok(r) => r,
            Err(e) => return results::invalid_arguments(name, &[e]),
        };
        if name == compact::DESCRIBE_TOOL {
            CallToolResult::structured(compact::describe(
                &sf.catalog,
                &sf.tools,
                request.tool,
                st.profile,
            ))
        } else {
            self.call_generated(request.tool, request.arguments, call, true)
                .await
        }
    }

    /// A generated tool's call. `compact`: it came through `conda_call`, so
    /// argument errors name their path under `/arguments`.
    async fn call_generated(
        &self,
        i: usize,
        args: Value,
        call: CallContext,
        compact: bool,
    ) -> CallToolResult {
        let st = &self.state;
        let sf = call.surface.clone();
        let tool = &sf.tools.generated[i];
        let relocate = |errors: Vec<crate::schema::ArgumentError>| -> Vec<_> {
            if compact {
                errors.into_iter().map(compact::under_arguments).collect()
            } else {
                errors
            }
        };
        if let Err(errors) = tool.validator.validate(&args) {
            return results::invalid_arguments(&tool.name, &relocate(errors));
        }
        let empty = serde_json::Map::new();
        let argv = match crate::compile::compile(
            &sf.catalog,
            tool.cmd,
            args.as_object().unwrap_or(&empty),
        ) {
            Ok(argv) => argv,
            Err(e) => return results::invalid_arguments(&tool.name, &relocate(vec![e])),
        };
        let classification = policy::classify(&sf.catalog, &argv);
        if let Err(refusal) = st.policy.check(&classification) {
            tracing::info!(tool = %tool.name, "refused: {refusal}");
            return results::refused(&refusal);
        }
        let what = sf.catalog.commands[tool.cmd].display_path();
        let mut job = Job::new(Program::Conda, argv);
        job.timeout = st.limits.timeout;
        job.output_limit_bytes = st.limits.output_limit_bytes;
        job.stdin_limit_bytes = st.limits.stdin_limit_bytes;
        job.label = what.clone();
        let outcome = self.run_job(job, &what, call).await;
        self.finish(&what, classification.read_only, outcome).await
    }

    async fn call_execute(&self, args: Value, ctx: CallContext) -> CallToolResult {
        let st = &self.state;
        let sf = ctx.surface.clone();
        let Some(validator) = &sf.tools.execute_validator else {
            return results::not_run(
                EXECUTE_TOOL,
                &"the server was not started with --allow-exec",
            );
        };
        if let Err(errors) = validator.validate(&args) {
            return results::invalid_arguments(EXECUTE_TOOL, &errors);
        }
        let call = match execute::check(&args, st.limits.stdin_limit_bytes, st.limits.timeout) {
            Ok(c) => c,
            Err(e) => return results::invalid_arguments(EXECUTE_TOOL, &[e]),
        };
        let classification = policy::classify(&sf.catalog, &call.argv);
        if let Err(refusal) = st.policy.check_raw(&classification) {
            tracing::info!(tool = EXECUTE_TOOL, "refused: {refusal}");
            return results::refused(&refusal);
        }
        let what = format!("conda_execute ({})", classification.command.join(" "));
        let mut job = Job::new(Program::Conda, call.argv);
        job.cwd = call.cwd;
        job.stdin = call.stdin;
        job.timeout = call.timeout;
        job.output_limit_bytes = st.limits.output_limit_bytes;
        job.stdin_limit_bytes = st.limits.stdin_limit_bytes;
        job.label = what.clone();
        let outcome = self.run_job(job, &what, ctx).await;
        self.finish(&what, classification.read_only, outcome).await
    }

    /// The tool result of a finished job. After a successful call that was
    /// not read-only, the restart watch checks whether conda or its plugins
    /// changed; every result carries the (sticky) `restart_required`.
    async fn finish(
        &self,
        what: &str,
        read_only: bool,
        outcome: Result<ExecutionResult, ExecError>,
    ) -> CallToolResult {
        match outcome {
            Ok(mut result) => {
                let restart = &self.state.restart;
                let mutated = !read_only && result.exit_code == Some(0);
                result.restart_required = match &self.state.live {
                    Some(live) if mutated => {
                        if let Some(found) = restart.changed().await {
                            self.rebuild(live, found).await;
                        }
                        restart.required()
                    }
                    _ if mutated => restart.after_mutation().await,
                    _ => restart.required(),
                };
                self.state.results.to_tool_result(what, &result)
            }
            Err(e) => {
                tracing::warn!("{what}: not run: {e}");
                results::not_run(what, &e)
            }
        }
    }

    /// `--live-tools`: builds the tools of a new discovery, serves them
    /// from the next request on, and tells the client
    /// (`notifications/tools/list_changed`, `notifications/resources/list_changed`,
    /// and `notifications/resources/updated` for a subscribed
    /// `conda://capabilities`). Calls already routed keep the surface they
    /// were validated with. A surface that cannot be built (a broken schema)
    /// is logged and the old one stays.
    async fn rebuild(&self, live: &LiveTools, found: crate::discovery::Discovery) {
        let catalog = Arc::new(found.catalog);
        let tools = match ToolSet::build(&catalog, &live.options) {
            Ok(t) => t,
            Err(e) => {
                tracing::error!("the new tools cannot be built; keeping the old ones: {e}");
                return;
            }
        };
        let capabilities: Arc<str> = capabilities::render(
            &catalog,
            &live.target,
            &tools,
            capabilities::PolicySummary {
                allow_write: self.state.policy.allow_write,
                allow_exec: self.state.policy.allow_exec,
            },
            live.options.profile,
            live.options.mode,
        )
        .into();
        tracing::info!(tools = tools.listed.len(), "serving the rebuilt tools");
        let surface = Arc::new(Surface {
            catalog,
            tools,
            capabilities,
        });
        match self.state.surface.write() {
            Ok(mut s) => *s = surface,
            Err(poisoned) => *poisoned.into_inner() = surface,
        }
        self.state.list_pending.store(true, Ordering::Relaxed);
        let peer = self.state.peer.lock().ok().and_then(|p| p.clone());
        if let Some(peer) = peer {
            if let Err(e) = peer.notify_tool_list_changed().await {
                tracing::warn!("cannot send notifications/tools/list_changed: {e}");
            }
            let _ = peer.notify_resource_list_changed().await;
            if self.state.capabilities_subscribed.load(Ordering::Relaxed) {
                let _ = peer
                    .notify_resource_updated(ResourceUpdatedNotificationParam::new(
                        capabilities::URI,
                    ))
                    .await;
            }
        }
    }

    /// Runs one job on the exec lane and waits for its result.
    ///
    /// `call.ct` is the request's cancellation (rmcp cancels it on
    /// `notifications/cancelled`, and also after every response, so it is
    /// only watched while the job runs): it cancels the job, which kills
    /// its process tree (or takes it out of the queue); rmcp then sends no
    /// response. Updates (queue position, start, output counters) become
    /// progress notifications when the request carried a progress token
    /// ([`Progress`]).
    pub async fn run_job(
        &self,
        job: Job,
        what: &str,
        call: CallContext,
    ) -> Result<ExecutionResult, ExecError> {
        let progress = match call.progress {
            Some((peer, token)) => Progress::start_with(peer, token, what.to_owned()),
            None => Progress::inert(),
        };
        let cancel = job.cancel.clone();
        let exec = self.state.exec.clone();
        let run = exec.run(job, progress.observer());
        tokio::pin!(run);
        let outcome = tokio::select! {
            r = &mut run => r,
            () = call.ct.cancelled() => {
                cancel.cancel();
                run.await
            }
        };
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
        let surface = self.state.surface();
        if self.state.list_pending.swap(false, Ordering::Relaxed) {
            // The rebuilt list is served: a restart is no longer needed.
            self.state.restart.clear();
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
        if self.state.live.is_some()
            && let Ok(mut p) = self.state.peer.lock()
        {
            *p = Some(context.peer.clone());
        }
        let surface = self.state.surface();
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
            surface,
        };
        let task = tokio::spawn(async move { this.call(&name, route, args, call).await });
        let result = match task.await {
            Ok(r) => r,
            Err(e) => {
                tracing::error!("a tool call failed internally: {e}");
                results::not_run(&request.name, &"an internal error occurred")
            }
        };
        Ok(result.into())
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
            .with_size(self.state.surface().capabilities.len() as u64);
        Ok(ListResourcesResult::with_all_items(vec![r]))
    }

    /// `resources/subscribe` (initialize era): only `conda://capabilities`,
    /// which changes only with `--live-tools`.
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if request.uri != capabilities::URI {
            return Err(unknown("resource"));
        }
        self.state
            .capabilities_subscribed
            .store(true, Ordering::Relaxed);
        Ok(())
    }

    /// `resources/unsubscribe`.
    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if request.uri != capabilities::URI {
            return Err(unknown("resource"));
        }
        self.state
            .capabilities_subscribed
            .store(false, Ordering::Relaxed);
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
                text: self.state.surface().capabilities.to_string(),
                meta: None,
            }])
            .into(),
        )
    }
}
