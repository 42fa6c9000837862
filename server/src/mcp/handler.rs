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

use rmcp::model::ProgressToken;
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
use super::{Limits, capabilities, execute};
use crate::catalog::Catalog;
use crate::policy::{self, Policy};
use crate::worker_client::{ExecError, Executor, Job, Program};

/// Everything a call needs, fixed at startup.
#[derive(Debug)]
pub struct State {
    /// The catalog of the target.
    pub catalog: Arc<Catalog>,
    /// The tools.
    pub tools: ToolSet,
    /// The startup policy.
    pub policy: Policy,
    /// Limits of every call.
    pub limits: Limits,
    /// The exec lane: conda calls, one at a time, in order.
    pub exec: Arc<Executor>,
    /// The capabilities resource, serialized once.
    pub capabilities: Arc<str>,
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
            Route::Generated(i) => self.call_generated(i, args, call).await,
            Route::Execute => self.call_execute(args, call).await,
            Route::CliCommand => match &self.state.tools.cli_command {
                Some(tool) => {
                    let st = &self.state;
                    tool.call(
                        &st.catalog,
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

    async fn call_generated(&self, i: usize, args: Value, call: CallContext) -> CallToolResult {
        let st = &self.state;
        let tool = &st.tools.generated[i];
        if let Err(errors) = tool.validator.validate(&args) {
            return results::invalid_arguments(&tool.name, &errors);
        }
        let empty = serde_json::Map::new();
        let argv = match crate::compile::compile(
            &st.catalog,
            tool.cmd,
            args.as_object().unwrap_or(&empty),
        ) {
            Ok(argv) => argv,
            Err(e) => return results::invalid_arguments(&tool.name, &[e]),
        };
        let classification = policy::classify(&st.catalog, &argv);
        if let Err(refusal) = st.policy.check(&classification) {
            tracing::info!(tool = %tool.name, "refused: {refusal}");
            return results::refused(&refusal);
        }
        let what = st.catalog.commands[tool.cmd].display_path();
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
        let Some(validator) = &st.tools.execute_validator else {
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
        let classification = policy::classify(&st.catalog, &call.argv);
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
                result.restart_required = if !read_only && result.exit_code == Some(0) {
                    restart.after_mutation().await
                } else {
                    restart.required()
                };
                self.state.results.to_tool_result(what, &result)
            }
            Err(e) => {
                tracing::warn!("{what}: not run: {e}");
                results::not_run(what, &e)
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
        Ok(ListToolsResult::with_all_items(
            self.state.tools.listed.as_ref().clone(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let Some(route) = self.state.tools.route(&request.name) else {
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
            .with_size(self.state.capabilities.len() as u64);
        Ok(ListResourcesResult::with_all_items(vec![r]))
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
                text: self.state.capabilities.to_string(),
                meta: None,
            }])
            .into(),
        )
    }
}
