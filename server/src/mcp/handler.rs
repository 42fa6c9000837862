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
//! conversion of the outcome into a tool result ([`super::results`]); and,
//! for clients that declare the tasks extension, the answer with a task
//! handle and `tasks/get`, `tasks/update`, `tasks/cancel` ([`super::tasks`]).
//!
//! The tools, their catalog and the capabilities document are one
//! [`Surface`]: each request reads the one served when it arrives and keeps
//! it to its end. With `--live-tools` a call after which the restart watch
//! saw conda or its plugins change replaces it before its own result is
//! sent ([`super::live`]).

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, CreateTaskResult,
    GetTaskParams, GetTaskResult, JsonObject, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    Resource, ResourceContents, ServerConfig, ServerResult, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::capabilities;
use super::live::Surface;
use super::principal::Principal;
use super::progress::{Progress, Tracker};
use super::sink::RequestSink;
use super::state::State;
use super::tasks::store::Followed;
use super::tasks::{TaskEnd, TaskInput, UpdateError};
use crate::call::approve::{Consent, Reply};
use crate::call::events::Summary;
use crate::call::pipeline::{Call, Decided};
use crate::call::{NotRun, Outcome, Pipeline};
use crate::tools::Route;
use crate::tools::ToolMode;

/// The MCP server once startup has finished (cheap to clone); served
/// through [`super::ready::CondaMcp`], which answers `initialize` before.
#[derive(Debug, Clone)]
pub struct Handler {
    state: Arc<State>,
}

impl Handler {
    /// Wraps the startup state.
    pub fn new(state: Arc<State>) -> Self {
        Self { state }
    }

    /// The shared state (for shutdown and tests).
    pub fn state(&self) -> &Arc<State> {
        &self.state
    }

    /// The call pipeline.
    fn pipeline(&self) -> &Pipeline {
        &self.state.pipeline
    }

    /// Whether this request's client is served the approval card: the
    /// server runs with `--approve-writes` and the client declared the
    /// MCP Apps extension ([`super::apps`]).
    fn serves_cards(&self, context: &RequestContext<RoleServer>) -> bool {
        self.state.pipeline.settings.policy.approve_writes
            && context
                .client_capabilities()
                .as_ref()
                .is_some_and(super::apps::declares_ui)
    }

    /// The card's decision ([`super::apps::DECIDE_TOOL`]) for this
    /// request's principal. Decline runs the bound call with the answer
    /// (nothing runs: `declined`). Approve answers at once with the
    /// decision's stage and runs the bound call apart from this request
    /// (re-plan under the installation's lock, apply only the plan shown,
    /// the id spent as the change starts), so a host that gives up on the
    /// request (its request limit, a cancel) cuts nothing; the card
    /// follows it with [`super::apps::STATUS_TOOL`]. A second Approve
    /// while one runs answers where it is. An id that cannot be used ends
    /// with `approval_invalid`; nothing runs.
    async fn decide(
        &self,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let tool = super::apps::DECIDE_TOOL;
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let principal = Principal::of(context);
        let (pending, consent, claim) = match self.pipeline().decided(tool, &args, &principal) {
            Ok(Decided::Run {
                pending,
                consent,
                claim,
            }) => (pending, consent, claim),
            Ok(Decided::InProgress(stage)) => {
                let id = args["id"].as_str().unwrap_or_default();
                return super::apps::stage_result(id, &stage).into();
            }
            Err(outcome) => return self.tool_result(outcome).into(),
        };
        let surface = self.state.surface.get();
        // With --live-tools the tool may be gone since the card was shown.
        let Some(route) = surface.tools.route(&pending.tool) else {
            let result = self.tool_result(Outcome::NotRun {
                what: pending.what,
                reason: NotRun::PlanChanged { duration_ms: 0 },
            });
            if let Some(claim) = claim {
                claim.finish(kept(&result), std::time::Instant::now());
            }
            return result.into();
        };
        let mut bound = request;
        bound.name = pending.tool.clone().into();
        bound.arguments = match pending.args {
            Value::Object(m) => Some(m),
            _ => None,
        };
        bound.input_responses = None;
        bound.request_state = None;
        let mut call = self.spawn(route, surface, bound, context, Some(consent));
        let Some(claim) = claim else {
            // A decline: nothing runs, the answer is at hand.
            let delivery = call.decide(context).await;
            return self.finish(call, delivery, context).await;
        };
        let Spawned {
            name,
            call: RunningCall { running, .. },
            ..
        } = call;
        let this = self.clone();
        let ended = claim.clone();
        tokio::spawn(async move {
            let outcome = match joined(running.await, name.clone()) {
                Reply::Done(outcome) => outcome,
                // The card's decision carries its answer: never a question.
                Reply::Ask(_) => Outcome::NotRun {
                    what: name,
                    reason: NotRun::Internal("an internal error occurred"),
                },
            };
            let result = this.tool_result(outcome);
            ended.finish(kept(&result), std::time::Instant::now());
        });
        tracing::info!(tool = %pending.tool, "approval accepted; the change runs apart from the request");
        super::apps::stage_result(claim.id(), &crate::call::approve::Stage::Deciding).into()
    }

    /// The card's follow-up ([`super::apps::STATUS_TOOL`]): where the
    /// decision about its id is, or the approved call's result.
    fn approval_status(
        &self,
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let tool = super::apps::STATUS_TOOL;
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        match self
            .pipeline()
            .approval_stage(tool, &args, &Principal::of(context))
        {
            Ok((id, stage)) => super::apps::stage_result(&id, &stage).into(),
            Err(outcome) => self.tool_result(outcome).into(),
        }
    }

    /// The route of tool `name` on `surface`. Errors: an unknown tool,
    /// invalid params (-32602) that does not echo the name (in the compact
    /// mode, it names `conda_call`).
    fn route(&self, surface: &Surface, name: &str) -> Result<Route, McpError> {
        surface.tools.route(name).ok_or_else(|| {
            self.state
                .pipeline
                .metrics
                .tool_call(crate::metrics::UNKNOWN_TOOL, "error", 0.0, "-");
            if self.state.pipeline.settings.mode == ToolMode::Compact {
                unknown(&format!(
                    "tool; {}",
                    crate::tools::compact::UNKNOWN_TOOL_HINT
                ))
            } else {
                unknown(&surface.tools.unknown_tool(name))
            }
        })
    }

    /// Starts the call of `route` in its own task, on its own cancellation
    /// token and tracker, for the principal of `context` (read once here:
    /// it picks the worker and owns the task, if the call becomes one);
    /// `consent` is the person's answer when it is known already (the
    /// approval card's decision), else it is read from the request.
    fn spawn(
        &self,
        route: Route,
        surface: Arc<Surface>,
        request: CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        consent: Option<Consent>,
    ) -> Spawned {
        let name = request.name.to_string();
        let declared_tasks = context
            .client_capabilities()
            .is_some_and(|caps| caps.supports_tasks());
        // A client that declared tasks is asked inside the task; the
        // card's decision brings its answer (`consent`).
        let input = TaskInput::new();
        let (consent, in_task) = match consent {
            Some(consent) => (consent, false),
            None => super::consent::consent(&request, context, declared_tasks.then_some(&input)),
        };
        let args = Value::Object(request.arguments.unwrap_or_default());
        let principal = Principal::of(context);
        let roots = context
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.roots.is_some())
            .then(|| super::roots::PeerRoots(context.peer.clone()));
        let tracker = Tracker::new();
        let cancel = CancellationToken::new();
        let (planned_tx, planned) = oneshot::channel();
        let sink = RequestSink::new(
            tracker.clone(),
            planned_tx,
            self.state.clone(),
            context.peer.clone(),
        );
        let this = self.clone();
        let (tool, who, stop) = (name.clone(), principal.clone(), cancel.clone());
        let running = tokio::spawn(async move {
            let call = Call {
                tool: &tool,
                route,
                catalog: &surface.catalog,
                tools: &surface.tools,
                principal: &who,
                cancel: &stop,
                roots: roots
                    .as_ref()
                    .map(|r| r as &dyn crate::call::plan::reads::ClientRoots),
            };
            this.pipeline()
                .call(&call, args, consent, Arc::new(sink))
                .await
        });
        Spawned {
            name,
            principal,
            declared_tasks,
            in_task,
            planned: Awaited::Pending(planned),
            call: RunningCall {
                tracker,
                cancel,
                input,
                running,
            },
        }
    }

    /// Answers the request as `delivery` says: with a task handle, or with
    /// the call's result once it is done (with progress notifications for
    /// a progress token).
    async fn finish(
        &self,
        spawned: Spawned,
        delivery: Delivery,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResponse {
        let Spawned {
            name,
            principal,
            planned,
            call,
            ..
        } = spawned;
        let planned = match planned {
            Awaited::Known(p) => p,
            Awaited::Pending(_) => None,
        };
        let done = match (delivery, planned) {
            (Delivery::Task, Some(planned)) => {
                let legacy = context
                    .protocol_version()
                    .is_none_or(|v| v.has_initialize());
                return CallToolResponse::Task(self.start_task(principal, legacy, planned, call));
            }
            (Delivery::Done(r), planned) => (Some(r), planned),
            (_, planned) => (None, planned),
        };
        let (done, planned) = done;
        let RunningCall {
            tracker,
            cancel,
            mut running,
            ..
        } = call;
        let progress = match (&planned, context.meta.get_progress_token()) {
            (Some(p), Some(token)) if p.reports_progress && done.is_none() => {
                Progress::start(context.peer.clone(), token, p.what.clone(), &tracker)
            }
            _ => Progress::inert(),
        };
        let request_ct = context.ct.clone();
        let joined_result = match done {
            Some(r) => r,
            None => tokio::select! {
                r = &mut running => r,
                () = request_ct.cancelled() => {
                    cancel.cancel();
                    running.await
                }
            },
        };
        progress.finish().await;
        match joined(joined_result, name.clone()) {
            Reply::Done(outcome) => self.tool_result(outcome).into(),
            Reply::Ask(question) => super::consent::input_required(&question).into(),
        }
    }

    /// `resources/subscribe` / `resources/unsubscribe` of `uri`: served
    /// with `--live-tools` only (without it the capabilities document never
    /// changes and the method is not found, as the capabilities say); only
    /// the capabilities resource exists.
    /// Where the environment watch gets its stamps: this server's state.
    fn stamp_source(&self) -> Arc<dyn super::watch::StampSource> {
        self.state.clone()
    }

    /// `resources/subscribe` (`on`) or `resources/unsubscribe` of `uri`:
    /// `conda://capabilities` (it changes only with `--live-tools`), or an
    /// environment resource ([`super::watch`]; a subscribe answers once
    /// the watch has its baseline, so any later change is reported).
    ///
    /// Errors: invalid params "unknown resource" for any other URI (not
    /// repeated); invalid request when the request comes without a
    /// session notifications can reach (HTTP without `Mcp-Session-Id`:
    /// `subscriptions/listen` is the way there).
    async fn subscription(
        &self,
        uri: &str,
        on: bool,
        context: &RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if uri == capabilities::URI {
            if let Some(live) = &self.state.live {
                live.subscribe_capabilities(on);
            }
            return Ok(());
        }
        if !super::watch::watchable(uri) {
            return Err(unknown("resource"));
        }
        let Some(key) = super::watch::session_of(context) else {
            return Err(McpError::invalid_request(
                "no session to notify: subscribe within an initialize session (stdio, or HTTP \
                 with Mcp-Session-Id), or use subscriptions/listen",
                None,
            ));
        };
        self.state
            .watch
            .attend_session(
                &self.stamp_source(),
                &Principal::of(context),
                key,
                context.peer.clone(),
                Some((uri, on)),
            )
            .await;
        Ok(())
    }

    /// `resources/read` of an environment resource: the read-only tool
    /// call it stands for ([`super::environments::EnvironmentResource::call`]) through
    /// the pipeline, as the request's principal; the tool's output
    /// (`parsed_json`, else stdout) is the content.
    ///
    /// Errors: invalid params "unknown resource" when the tool is not
    /// served (left out by `--tools`), "no such environment" when conda
    /// finds none of that name, and the call's typed error otherwise
    /// (refused, failed); none repeats the URI.
    async fn read_environment(
        &self,
        uri: &str,
        target: &super::environments::EnvironmentResource,
        context: &RequestContext<RoleServer>,
    ) -> Result<ReadResourceResult, McpError> {
        let surface = self.state.surface.get();
        let (command, args) = target.call();
        let (tool, route) = match command {
            None => (
                crate::tools::INVENTORY_TOOL.to_owned(),
                surface.tools.route(crate::tools::INVENTORY_TOOL),
            ),
            Some(path) => match surface.tools.find_command(&surface.catalog, path) {
                Some(i) => (
                    surface.tools.generated[i].name.clone(),
                    Some(Route::Generated(i)),
                ),
                None => (String::new(), None),
            },
        };
        let Some(route) = route else {
            return Err(unknown("resource"));
        };
        let principal = Principal::of(context);
        let cancel = context.ct.clone();
        let call = Call {
            tool: &tool,
            route,
            catalog: &surface.catalog,
            tools: &surface.tools,
            principal: &principal,
            cancel: &cancel,
            roots: None,
        };
        let consent = Consent::Unavailable(crate::call::shape::outcome::Unasked::NoElicitation);
        let reply = self
            .pipeline()
            .call(
                &call,
                args,
                consent,
                Arc::new(crate::call::events::Fanout::new()),
            )
            .await;
        let Reply::Done(outcome) = reply else {
            return Err(McpError::internal_error(
                "a read-only call asked for approval",
                None,
            ));
        };
        let text = resource_text(outcome)?;
        Ok(ReadResourceResult::new(vec![
            ResourceContents::TextResourceContents {
                uri: uri.to_owned(),
                mime_type: Some(target.mime_type().into()),
                text,
                meta: None,
            },
        ]))
    }

    /// The tool result of an outcome (output-schema checked), with the
    /// restart flag as it is now.
    fn tool_result(&self, outcome: Outcome) -> CallToolResult {
        let restart_required = self.state.pipeline.runner.restart.required();
        self.state.results.to_tool_result(outcome, restart_required)
    }

    /// Registers the running call as a task of `owner` and returns its
    /// handle; the task records the call's end when it comes, as the plain
    /// call's answer would carry it to this client (`legacy`: an
    /// `initialize` session, whose results have no `resultType`).
    fn start_task(
        &self,
        owner: Principal,
        legacy: bool,
        planned: Summary,
        call: RunningCall,
    ) -> CreateTaskResult {
        let RunningCall {
            tracker,
            cancel,
            input,
            running,
        } = call;
        let followed = Followed {
            tracker,
            cancel: cancel.clone(),
            input,
        };
        let task = self
            .state
            .tasks
            .create(owner, planned.what.clone(), followed, planned.longest);
        let id = task.task_id.clone();
        tracing::info!(what = %planned.what, "answered with a task");
        let this = self.clone();
        tokio::spawn(async move {
            let outcome = match joined(running.await, planned.what.clone()) {
                Reply::Done(outcome) => outcome,
                // A question goes back as the call's result only when it is
                // not asked inside a task (`consent::consent`).
                Reply::Ask(_) => Outcome::NotRun {
                    what: planned.what,
                    reason: NotRun::Internal("an internal error occurred"),
                },
            };
            let end = if cancel.is_cancelled() && outcome.cancelled() {
                TaskEnd::Cancelled
            } else {
                let mut result = ServerResult::CallToolResult(this.tool_result(outcome));
                if legacy {
                    result.strip_result_type_for_legacy_peer();
                }
                match serde_json::to_value(result) {
                    Ok(Value::Object(result)) => TaskEnd::Completed(result),
                    // A CallToolResult is a JSON object with string keys:
                    // never reached; logged should it ever be.
                    _ => {
                        tracing::error!("a task's result did not serialize as an object");
                        TaskEnd::Completed(JsonObject::new())
                    }
                }
            };
            this.state.tasks.finish(&id, end);
        });
        CreateTaskResult::new(task)
    }
}

/// A call that runs on as a task: what the task follows of it.
struct RunningCall {
    /// Its phase (queue position, output so far).
    tracker: Tracker,
    /// Its own cancellation (`tasks/cancel`).
    cancel: CancellationToken,
    /// Its question to the client, if it asks one.
    input: TaskInput,
    /// The call itself.
    running: JoinHandle<Reply>,
}

/// A call started by [`Handler::spawn`], as its request follows it.
struct Spawned {
    /// The tool's name (for the internal error of a panicked call).
    name: String,
    /// Who is calling (read once per request).
    principal: Principal,
    /// The client declared the tasks extension.
    declared_tasks: bool,
    /// A question of `--approve-writes` is asked inside the task.
    in_task: bool,
    /// What the request learns of the plan.
    planned: Awaited,
    /// The call itself.
    call: RunningCall,
}

/// What the request knows of the call's plan.
enum Awaited {
    /// Not yet: the plan arrives on this channel.
    Pending(oneshot::Receiver<Summary>),
    /// Planned (or `None`: it ended early, or the request was cancelled
    /// before).
    Known(Option<Summary>),
}

impl Spawned {
    /// Waits for the plan (or the request's cancellation, which cancels
    /// the call) and decides how the request is answered: a change that
    /// needs approval asked inside a task, a call that may run long, or
    /// one that has to wait in a queue, gets a task handle when the client
    /// declared tasks; anything else is answered inline.
    async fn decide(&mut self, context: &RequestContext<RoleServer>) -> Delivery {
        // rmcp cancels this on notifications/cancelled, and after the
        // response: watched only while the request is open.
        let request_ct = context.ct.clone();
        let planned = match std::mem::replace(&mut self.planned, Awaited::Known(None)) {
            Awaited::Pending(rx) => tokio::select! {
                p = rx => p.ok(),
                () = request_ct.cancelled() => {
                    self.call.cancel.cancel();
                    None
                }
            },
            Awaited::Known(p) => p,
        };
        let delivery = match &planned {
            Some(p) if p.approval && self.in_task => Delivery::Task,
            Some(p) if p.approval => Delivery::Inline,
            Some(p) if self.declared_tasks && p.long => Delivery::Task,
            Some(_) if self.declared_tasks => tokio::select! {
                phase = self.call.tracker.left_arrival() => {
                    if phase.waiting() { Delivery::Task } else { Delivery::Inline }
                }
                r = &mut self.call.running => Delivery::Done(r),
                () = request_ct.cancelled() => Delivery::Inline,
            },
            _ => Delivery::Inline,
        };
        self.planned = Awaited::Known(planned);
        delivery
    }
}

/// A tool result as the approval ledger keeps it (JSON).
fn kept(result: &CallToolResult) -> Value {
    serde_json::to_value(result).unwrap_or(Value::Null)
}

/// The reply of a call task, or the internal error its panic becomes.
fn joined(r: Result<Reply, tokio::task::JoinError>, what: String) -> Reply {
    r.unwrap_or_else(|e| {
        tracing::error!("a tool call failed internally: {e}");
        Reply::Done(Outcome::NotRun {
            what,
            reason: NotRun::Internal("an internal error occurred"),
        })
    })
}

/// How a call of a client that declared tasks is answered.
enum Delivery {
    /// With a task handle now.
    Task,
    /// With its result when it is done.
    Inline,
    /// It is already done.
    Done(Result<Reply, tokio::task::JoinError>),
}

/// The content of an environment resource from its call's outcome: the
/// inventory's answer or conda's parsed JSON as JSON text, else conda's
/// stdout (`conda env export`'s YAML).
///
/// Errors: invalid params for a call that was refused or invalid, or an
/// environment conda does not find; internal error for one that failed;
/// the message is the call's typed error (it carries no submitted value).
fn resource_text(outcome: Outcome) -> Result<String, McpError> {
    use crate::call::Ran;
    let failed = |code: &str, message: &str| {
        let data = Some(serde_json::json!({"code": code}));
        if code == "environment_not_found" {
            McpError::invalid_params("no such environment", data)
        } else {
            McpError::internal_error(format!("the read failed: {message}"), data)
        }
    };
    match outcome {
        Outcome::Ran {
            ran: Ran::Inventory(answer),
            ..
        } => serde_json::to_string(&answer)
            .map_err(|_| McpError::internal_error("the answer could not be serialized", None)),
        Outcome::Ran {
            ran: Ran::Execution(output),
            ..
        } => {
            if let Some(error) = &output.error {
                let code = serde_json::to_value(error.code)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                let not_found = error
                    .details
                    .get("exception_name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| n == "EnvironmentLocationNotFound");
                return Err(failed(
                    if not_found {
                        "environment_not_found"
                    } else {
                        &code
                    },
                    &error.message,
                ));
            }
            if output.execution.is_error() {
                return Err(failed("conda_error", "conda did not succeed"));
            }
            Ok(match &output.parsed_json {
                Some(v) => v.to_string(),
                None => output.execution.stdout.clone(),
            })
        }
        Outcome::InvalidArguments { .. } => Err(McpError::invalid_params("unknown resource", None)),
        Outcome::Refused(r) => Err(McpError::invalid_params(r.to_string(), None)),
        Outcome::Restricted(r) => Err(McpError::invalid_params(r.to_string(), None)),
        Outcome::NotRun { reason, .. } => Err(McpError::internal_error(
            format!("the read did not run: {reason}"),
            None,
        )),
        _ => Err(McpError::internal_error(
            "the read produced no content",
            None,
        )),
    }
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
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "prompts/list",
    "prompts/get",
    "completion/complete",
];

impl ServerHandler for Handler {
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
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let surface = self.state.surface.get();
        if let Some(live) = &self.state.live {
            live.listed(&self.state.pipeline.runner.restart);
        }
        // The card's tools only to a client that can show the card.
        let tools = if self.serves_cards(&context) {
            super::apps::listed(&surface.tools.listed)
        } else {
            super::listing::render_all(&surface.tools.listed)
        };
        Ok(ListToolsResult::with_all_items(tools))
    }

    /// `tools/call`. Runs the call in its own task (a panic becomes an
    /// internal-error result). A client that declared the tasks extension
    /// gets a task handle at once for a call that may run long, and for any
    /// other that has to wait in a queue before it starts
    /// ([`super::tasks`]); with `--approve-writes` a change of a client that
    /// declared tasks and elicitation is a task too, asking inside it
    /// ([`super::consent`]); otherwise the result comes when the call is
    /// done, with progress notifications for a progress token.
    /// `notifications/cancelled` for the request cancels the call while
    /// the request is open (rmcp then sends no response).
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        if request.name == super::apps::DECIDE_TOOL && self.serves_cards(&context) {
            return Ok(self.decide(request, &context).await);
        }
        if request.name == super::apps::STATUS_TOOL && self.serves_cards(&context) {
            return Ok(self.approval_status(&request, &context));
        }
        let surface = self.state.surface.get();
        let route = self.route(&surface, &request.name)?;
        let mut call = self.spawn(route, surface, request, &context, None);
        let delivery = call.decide(&context).await;
        Ok(self.finish(call, delivery, &context).await)
    }

    /// `tasks/get`: the task's status, message and, once finished, its
    /// result; unknown (-32602) to any principal but its creator.
    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.state
            .tasks
            .get(&Principal::of(&context), &request.task_id)
            .map(super::tasks::get_result)
            .map_err(|_| unknown("task"))
    }

    /// `tasks/update`: delivers the `inputResponses` to the question the
    /// task waits for (the approval of `--approve-writes`); for a task that
    /// waits for nothing they are ignored, as the extension says for keys
    /// that are not outstanding. Unknown (-32602) to any principal but the
    /// task's creator; invalid params (-32602) naming the key the task
    /// waits for when the update has no response under it (the task goes
    /// on waiting).
    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.state
            .tasks
            .update(
                &Principal::of(&context),
                &request.task_id,
                request.input_responses,
            )
            .map_err(|e| match e {
                UpdateError::Unknown(_) => unknown("task"),
                UpdateError::NotOutstanding(n) => McpError::invalid_params(
                    format!(
                        "tasks/update has no response for the task's outstanding input \
                         request; inputResponses must answer the key {:?}",
                        n.outstanding
                    ),
                    None,
                ),
            })
    }

    /// `tasks/cancel`: stops the task's call as `notifications/cancelled`
    /// stops a plain one; acknowledged at once, the task reports
    /// `cancelled` once its process tree is gone (or it left the queue).
    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.state
            .tasks
            .cancel(&Principal::of(&context), &request.task_id)
            .map_err(|_| unknown("task"))
    }

    /// `resources/list`: the capabilities resource, the environments
    /// ([`super::environments`]); for a client served the approval card
    /// ([`super::apps`]) the card's view too.
    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let r = Resource::new(capabilities::URI, "capabilities")
            .with_title("conda-mcp capabilities")
            .with_description("The conda served, its catalog, the generated tools, plugins and discovery fingerprint.")
            .with_mime_type(capabilities::MIME_TYPE)
            .with_size(self.state.surface.get().capabilities.len() as u64);
        // An initialize session that lists the resources hears when the
        // environments change (resources.listChanged).
        if let Some(key) = super::watch::session_of(&context) {
            self.state
                .watch
                .attend_session(
                    &self.stamp_source(),
                    &Principal::of(&context),
                    key,
                    context.peer.clone(),
                    None,
                )
                .await;
        }
        let mut listed = vec![r];
        if self
            .state
            .surface
            .get()
            .tools
            .route(crate::tools::INVENTORY_TOOL)
            .is_some()
        {
            listed.push(super::environments::list_resource());
        }
        if self.serves_cards(&context) {
            listed.push(super::apps::resource());
        }
        Ok(ListResourcesResult::with_all_items(listed))
    }

    /// `resources/subscribe` (`initialize` sessions): only
    /// `conda://capabilities`, which changes only with `--live-tools`.
    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: rmcp::model::SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscription(&request.uri, true, &context).await
    }

    /// `resources/unsubscribe` (`initialize` sessions).
    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: rmcp::model::UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.subscription(&request.uri, false, &context).await
    }

    /// `subscriptions/listen` (2026-07-28): resource changes always, tool
    /// list changes with `--live-tools` ([`super::watch::accepted_filter`]).
    fn accepted_subscription_filter(
        &self,
        requested: &rmcp::model::SubscriptionFilter,
    ) -> Option<rmcp::model::SubscriptionFilter> {
        Some(super::watch::accepted_filter(
            requested,
            self.state.live.is_some(),
        ))
    }

    /// One `subscriptions/listen` stream, as its request's principal: told
    /// of changed environments ([`super::watch`]) and, with
    /// `--live-tools`, of rebuilt tools, until the client cancels it or
    /// the session ends.
    async fn listen(&self, context: rmcp::service::SubscriptionContext) -> Result<(), McpError> {
        let principal = Principal::of(context.request_context());
        let sink = context.sink().clone();
        let environments = super::watch::hears_environments(context.accepted());
        let watch = &self.state.watch;
        if environments {
            watch.attend_stream(&self.stamp_source(), &principal, sink.clone());
        }
        match &self.state.live {
            Some(live) => live.listen(context).await,
            None => {
                let closing = watch.closing();
                tokio::select! {
                    () = context.cancelled() => {}
                    () = closing.cancelled() => {}
                }
            }
        }
        if environments {
            watch.leave_stream(&principal, &sink);
        }
        Ok(())
    }

    /// `prompts/list`: the workflows of [`crate::prompts`].
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        Ok(super::prompts::list())
    }

    /// `prompts/get`: a prompt's text, its arguments checked.
    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        let compact = self.state.pipeline.settings.mode == crate::tools::ToolMode::Compact;
        super::prompts::get(request, compact).map(Into::into)
    }

    /// `resources/templates/list`: the environments' views
    /// ([`super::environments::templates`]).
    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        let surface = self.state.surface.get();
        Ok(rmcp::model::ListResourceTemplatesResult::with_all_items(
            super::environments::templates(|v| serves_view(&surface, v)),
        ))
    }

    /// `completion/complete`: environment names (of a prompt's argument
    /// and of the environments' resource templates), project files,
    /// choices.
    async fn complete(
        &self,
        request: rmcp::model::CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::CompleteResult, McpError> {
        let surface = self.state.surface.get();
        Ok(super::prompts::complete(
            &request,
            &surface.catalog.environments,
            |v| serves_view(&surface, v),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        // The card's view: static HTML, served under --approve-writes.
        if request.uri == super::apps::RESOURCE_URI
            && self.state.pipeline.settings.policy.approve_writes
        {
            return Ok(ReadResourceResult::new(vec![super::apps::contents()]).into());
        }
        if let Some(target) = super::environments::EnvironmentResource::parse(&request.uri) {
            return self
                .read_environment(&request.uri, &target, &context)
                .await
                .map(Into::into);
        }
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

/// Whether `surface` serves the tool a read of environment view `view`
/// calls (`--tools` may leave it out, and the view with it).
fn serves_view(surface: &super::live::Surface, view: super::environments::View) -> bool {
    surface
        .tools
        .find_command(&surface.catalog, view.command())
        .is_some()
}
