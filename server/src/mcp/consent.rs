//! `--approve-writes` on the wire: a change is shown to the person through
//! the host and applied exactly as shown, or not at all (docs/approval.md).
//! What the question says is decided by [`crate::call::approval`]; this
//! module carries it in both protocol eras and runs the steps.
//!
//! * **`initialize` sessions** (protocol before 2026-07-28): the server asks
//!   during the call with one `elicitation/create` request (form mode) and
//!   waits for the answer.
//! * **The stateless lifecycle** (2026-07-28): server-to-client requests are
//!   not allowed, so the call answers with an input-required result (SEP-2322,
//!   rmcp's `model/mrtr.rs`) carrying the same form under the key
//!   [`INPUT_KEY`], and the question's digest as `requestState`. The client
//!   asks the person and calls again with the answer in `inputResponses`
//!   and the `requestState` echoed.
//!
//! * **Inside a task** (either era, a client that declared the tasks
//!   extension as well as elicitation): the call answers with a task handle at once; once the
//!   preview has run, the task reports `input_required` with the same form
//!   under [`INPUT_KEY`] in `inputRequests` (`super::tasks::input`), and the
//!   client answers with `tasks/update` carrying `inputResponses`
//!   (SEP-2663). `tasks/cancel` while it waits ends the task `cancelled`.
//!
//! Waiting for the person's answer (by elicitation or inside a task) does
//! not count against the call's time limit, but is bounded by it: no answer
//! within the limit counts as no (`declined`), so the installation's lock is
//! never held for longer than that on a question nobody answers.
//!
//! The steps ([`approved`], a function of the runner and the call's
//! context): plan (conda's dry run, when the
//! command has one) → ask → on approval, plan again just before applying:
//! a plan whose digest differs from the one shown ends with `plan_changed`
//! and nothing applied; otherwise the call's own argv (with `--yes`) runs.
//! Decline or cancel ends with `declined`; a client that cannot be asked
//! (no elicitation capability, no capabilities on the request, a question
//! that failed) gets `approval_unavailable` naming that one cause, with the
//! question it would have been asked (conda's dry-run plan), and nothing
//! applied. These answers report the milliseconds the call spent (the dry
//! run, the wait) as `duration_ms`.
//! A `requestState` is only ever compared with the digest of a fresh plan,
//! so an altered one cannot apply anything the person was not shown.

use rmcp::RoleServer;
use rmcp::model::{
    BooleanSchema, CallToolRequestParams, ClientResult, ElicitRequest, ElicitRequestParams,
    ElicitationSchema, InputRequest, InputRequests, InputRequiredResult, PrimitiveSchemaDefinition,
    ProtocolVersion, ServerRequest,
};
use rmcp::service::{Peer, RequestContext};
use serde_json::Value;

use super::context::CallContext;
use super::tasks::TaskInput;
use super::tasks::input::NoResponse;
use crate::audit::ApprovalAnswer as AuditApproval;
use crate::call::approval::{self, APPROVE_FIELD, Answer, Approval, Question};
use crate::call::error::ErrorCode;
use crate::call::install_lock::WriterGuard;
use crate::call::outcome::Unasked;
use crate::call::{CallOutput, NotRun, Outcome, Plan, Ran, Runner};
use crate::worker_client::{ExecError, JobUpdate};
use conda_mcp_shared::guard::UnmanagedRule;

/// The key of the approval form in an input-required result's
/// `inputRequests` (and of its answer in the retry's `inputResponses`).
pub const INPUT_KEY: &str = "approval";

/// How the person's answer to a call's question can arrive.
#[derive(Debug, Clone)]
pub enum Consent {
    /// The client cannot be asked (why).
    Unavailable(Unasked),
    /// Ask now, while the call waits for the answer.
    Ask(Asker),
    /// Stateless lifecycle, first request: answer with the question.
    Defer,
    /// An MCP Apps host without elicitation: answer with the approval
    /// card (the question, shown in the view; [`super::apps`]). The
    /// person's decision comes back through the card's tool as
    /// [`Consent::Answered`].
    Card,
    /// Stateless lifecycle, the retry: the person's answer to the question
    /// whose digest the client echoed.
    Answered {
        /// What they chose.
        answer: Answer,
        /// The echoed `requestState` (the digest of the question shown).
        shown: String,
    },
}

/// Where a question is asked while the call waits for its answer.
#[derive(Debug, Clone)]
pub enum Asker {
    /// `initialize` session: an `elicitation/create` request to the client.
    Elicit(Peer<RoleServer>),
    /// A call answered as a task: the task's `input_required` status,
    /// answered by `tasks/update`.
    Task(TaskInput),
}

/// What an approved call ends with.
#[derive(Debug)]
pub enum Reply {
    /// An outcome, as for any call.
    Done(Outcome),
    /// Stateless lifecycle: the question goes back to the client.
    Ask(Question),
    /// The approval card: the question goes back to the client's view
    /// (the handler issues its id); nothing changed.
    Card {
        /// The question (its plan, text and digest).
        question: Question,
        /// How long its dry run took, in milliseconds.
        duration_ms: u64,
    },
}

impl Consent {
    /// How the answer to this request's question can arrive: by its
    /// protocol version and the client's capabilities (per request in the
    /// stateless lifecycle, from `initialize` otherwise). `task` is the
    /// input slot of the task the call becomes when it asks (a client that
    /// declared the tasks extension): then the question is asked inside
    /// the task, in either era.
    pub fn of(
        request: &CallToolRequestParams,
        context: &RequestContext<RoleServer>,
        task: Option<&TaskInput>,
    ) -> Consent {
        let stateless = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        let capabilities = context.client_capabilities();
        let elicits = capabilities
            .as_ref()
            .and_then(|c| c.elicitation.as_ref())
            // No mode named means form (the 2025-06-18 shape).
            .is_some_and(|e| e.form.is_some() || e.url.is_none());
        if !elicits {
            // Over HTTP (the gate's request parts are there) a request of
            // the `initialize` era stands alone: what the client declared
            // in its `initialize` is not known here.
            let over_http = context.extensions.get::<http::request::Parts>().is_some();
            let why = if capabilities.is_none() || (over_http && !stateless) {
                Unasked::NoCapabilities
            } else if capabilities.as_ref().is_some_and(super::apps::declares_ui) {
                return Consent::Card;
            } else {
                Unasked::NoElicitation
            };
            return Consent::Unavailable(why);
        }
        if let Some(input) = task {
            return Consent::Ask(Asker::Task(input.clone()));
        }
        if !stateless {
            return Consent::Ask(Asker::Elicit(context.peer.clone()));
        }
        let answer = request
            .input_responses
            .as_ref()
            .and_then(|r| r.get(INPUT_KEY));
        match (answer, &request.request_state) {
            (Some(answer), Some(shown)) => Consent::Answered {
                answer: read(answer),
                shown: shown.clone(),
            },
            _ => Consent::Defer,
        }
    }

    /// Whether the question is asked inside a task (the call answers with
    /// a task handle at once).
    pub fn in_task(&self) -> bool {
        matches!(self, Consent::Ask(Asker::Task(_)))
    }
}

/// An elicitation result (`{action, content}`) as an [`Answer`].
fn read(result: &Value) -> Answer {
    approval::read_answer(
        result.get("action").and_then(Value::as_str).unwrap_or(""),
        result.get("content"),
    )
}

/// The form of a question: its message and one required yes/no field.
pub fn form(q: &Question) -> ElicitRequestParams {
    let schema = ElicitationSchema::new(
        [(
            APPROVE_FIELD.to_owned(),
            PrimitiveSchemaDefinition::Boolean(
                BooleanSchema::new()
                    .title("Apply this change")
                    .description("Yes applies exactly the change shown; no changes nothing.")
                    .with_default(false),
            ),
        )]
        .into_iter()
        .collect(),
    )
    .with_required(vec![APPROVE_FIELD.to_owned()]);
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: q.message.clone(),
        requested_schema: schema,
    }
}

/// The form of a question as an input request (of an input-required
/// result, or of a task's `inputRequests`).
fn input_request(q: &Question) -> InputRequest {
    InputRequest::Elicitation(ElicitRequest::new(form(q)))
}

/// The input-required result of a question (stateless lifecycle).
pub fn input_required(q: &Question) -> InputRequiredResult {
    let mut requests = InputRequests::new();
    requests.insert(INPUT_KEY.to_owned(), input_request(q));
    InputRequiredResult::new(Some(requests), Some(q.digest.clone()))
}

/// [`NotRun::Declined`] before [`approved`] sets its duration.
const DECLINED: NotRun = NotRun::Declined { duration_ms: 0 };

/// [`NotRun::ApprovalUnavailable`] for `why`, with the question's text
/// when the dry run could be made; its duration is set by [`approved`].
fn unavailable(why: Unasked, plan: Option<String>) -> NotRun {
    NotRun::ApprovalUnavailable {
        why,
        plan,
        duration_ms: 0,
    }
}

fn not_run(plan: &Plan, reason: NotRun) -> Outcome {
    Outcome::NotRun {
        what: plan.what.clone(),
        reason,
    }
}

/// Runs `plan`, which needs the person's approval, through the steps of
/// the module docs; `tool` and `args` are the call's, bound into the
/// question's digest. An answer that applied nothing reports the time the
/// call spent ([`NotRun::took`]).
pub async fn approved(
    runner: &Runner,
    plan: Plan,
    approval: Approval,
    tool: &str,
    args: &Value,
    consent: Consent,
    call: CallContext,
) -> Reply {
    let started = std::time::Instant::now();
    match steps(runner, plan, approval, tool, args, consent, call).await {
        Reply::Done(Outcome::NotRun { what, reason }) => Reply::Done(Outcome::NotRun {
            what,
            reason: reason.took(started.elapsed().as_millis() as u64),
        }),
        Reply::Card { question, .. } => Reply::Card {
            question,
            duration_ms: started.elapsed().as_millis() as u64,
        },
        other => other,
    }
}

/// The steps of [`approved`].
async fn steps(
    runner: &Runner,
    plan: Plan,
    approval: Approval,
    tool: &str,
    args: &Value,
    consent: Consent,
    call: CallContext,
) -> Reply {
    let mut writer = None;
    let trail = call.trail.clone();
    let shown = match consent {
        // The dry run still runs, so the answer shows what would have
        // changed; nothing is applied.
        Consent::Unavailable(why) => {
            let asked = match question(runner, &plan, &approval, tool, args, &call).await {
                Ok(q) => q.message,
                Err(outcome) => return Reply::Done(outcome),
            };
            trail.answered(AuditApproval::Unavailable);
            return Reply::Done(not_run(&plan, unavailable(why, Some(asked))));
        }
        Consent::Answered {
            answer: answer @ (Answer::Decline | Answer::Cancel),
            ..
        } => {
            trail.answered(AuditApproval::Answered(answer));
            return Reply::Done(not_run(&plan, DECLINED));
        }
        Consent::Defer => {
            return match question(runner, &plan, &approval, tool, args, &call).await {
                Ok(q) => Reply::Ask(q),
                Err(outcome) => Reply::Done(outcome),
            };
        }
        // The card is the answer; the decision is a later call, which
        // re-plans under the lock (as the stateless retry below).
        Consent::Card => {
            return match question(runner, &plan, &approval, tool, args, &call).await {
                Ok(question) => Reply::Card {
                    question,
                    duration_ms: 0,
                },
                Err(outcome) => Reply::Done(outcome),
            };
        }
        // From the preview to the apply, the installation must not
        // change under the plan shown: the installation's writer lock
        // is held for the rest of this function (no other conda-mcp
        // writes in between; read-only calls still run).
        Consent::Ask(asker) => {
            writer = match hold_writer(runner, &plan, &call).await {
                Ok(w) => w,
                Err(outcome) => return Reply::Done(outcome),
            };
            let q = match question(runner, &plan, &approval, tool, args, &call).await {
                Ok(q) => q,
                Err(outcome) => return Reply::Done(outcome),
            };
            match ask(&asker, &q, &plan, &call).await {
                Ok(Answer::Approve) => {
                    trail.answered(AuditApproval::Answered(Answer::Approve));
                    q.digest
                }
                Ok(answer @ (Answer::Decline | Answer::Cancel)) => {
                    trail.answered(AuditApproval::Answered(answer));
                    return Reply::Done(not_run(&plan, DECLINED));
                }
                Err(reason) => {
                    if matches!(reason, NotRun::ApprovalUnavailable { .. }) {
                        trail.answered(AuditApproval::Unavailable);
                    }
                    return Reply::Done(not_run(&plan, reason));
                }
            }
        }
        Consent::Answered {
            answer: Answer::Approve,
            shown,
        } => {
            trail.answered(AuditApproval::Answered(Answer::Approve));
            shown
        }
    };
    // Stateless lifecycle: the question was answered in a later request,
    // so the lock is held from the re-plan to the apply (the digest
    // check below proves the plan is still the one shown).
    if writer.is_none() {
        writer = match hold_writer(runner, &plan, &call).await {
            Ok(w) => w,
            Err(outcome) => return Reply::Done(outcome),
        };
    }
    let again = match question(runner, &plan, &approval, tool, args, &call).await {
        Ok(q) => q,
        Err(outcome) => return Reply::Done(outcome),
    };
    if again.digest != shown {
        tracing::info!(tool = %tool, "approved plan changed before the apply; not applied");
        return Reply::Done(not_run(&plan, NotRun::PlanChanged { duration_ms: 0 }));
    }
    tracing::info!(tool = %tool, "change approved by the person; applying");
    let outcome = match &writer {
        Some(guard) => {
            runner
                .run_holding(
                    plan,
                    &call.principal,
                    guard,
                    call.tracker.observer(),
                    call.cancel.clone(),
                )
                .await
        }
        None => call.run(runner, plan).await,
    };
    Reply::Done(outcome)
}

/// Takes the installation's writer lock for an approved change, waiting
/// (with the "waiting for another conda-mcp" progress) at most the
/// plan's time limit; `Ok(None)` when the server has no lock.
///
/// Errors: the outcome [`NotRun::InstallLock`] (timed out, cancelled,
/// lock file unusable): nothing ran.
async fn hold_writer(
    runner: &Runner,
    plan: &Plan,
    call: &CallContext,
) -> Result<Option<WriterGuard>, Outcome> {
    let mut observe = call.tracker.observer();
    runner
        .take_writer(plan.limits.timeout, &call.cancel, move || {
            observe(JobUpdate::WaitingForWriter)
        })
        .await
        .map_err(|e| not_run(plan, NotRun::InstallLock(e)))
}

/// The question for `plan`: runs its preview (conda's dry run), when
/// there is one, and describes it.
///
/// Errors: the preview's outcome when it did not show a plan
/// ([`previewed`]: conda's own error, a timeout, a cancel): nothing is
/// asked.
async fn question(
    runner: &Runner,
    plan: &Plan,
    approval: &Approval,
    tool: &str,
    args: &Value,
    call: &CallContext,
) -> Result<Question, Outcome> {
    let mut unmanaged = None;
    let document = match &approval.preview {
        None => None,
        Some(preview) => {
            let mut dry = plan.clone();
            dry.argv = preview.argv.clone();
            dry.classification = Some(preview.classification.clone());
            dry.checks = Some(preview.checks.clone());
            dry.approval = None;
            // The apply's checks are not the dry run's.
            dry.postcondition = None;
            dry.replacement = None;
            match call.run(runner, dry).await {
                Outcome::Ran {
                    ran: Ran::Execution(out),
                    ..
                } if previewed(&out) => {
                    unmanaged = out.unmanaged_files.clone();
                    out.parsed_json
                }
                other => return Err(other),
            }
        }
    };
    call.trail.shown(
        document.as_ref(),
        plan.replacement.as_ref().map(|r| r.prefix.as_str()),
    );
    // An apply that its own checks would refuse is not put to the person:
    // the answer is the refusal, at once.
    if let Some(u) = &unmanaged
        && plan.checks.as_ref().map(|c| c.unmanaged) == Some(UnmanagedRule::Refuse)
    {
        return Err(crate::call::verdict::unmanaged_refusal(
            plan.what.clone(),
            u,
        ));
    }
    Ok(approval::question_with(
        tool,
        args,
        &plan.argv,
        document.as_ref(),
        plan.replacement.as_ref(),
        unmanaged.as_ref(),
    ))
}

/// Whether a dry run showed its plan: it exited 0, or printed its success
/// document and then died at exit (`crashed_after_success`, conda 26 with
/// the rattler solver; the plan printed is complete).
fn previewed(out: &CallOutput) -> bool {
    match &out.error {
        None => out.execution.exit_code == Some(0),
        Some(e) => e.code == ErrorCode::CrashedAfterSuccess,
    }
}

/// Asks the person `q` about `plan` and waits for the answer, at most the
/// plan's time limit (no answer by then is [`Answer::Cancel`]), or until the
/// call is cancelled.
///
/// Errors: [`NotRun::ApprovalUnavailable`] when the client could not ask
/// (an error answer, a closed connection); a cancelled call (its
/// cancellation, or `tasks/cancel` withdrawing the task's question).
async fn ask(
    asker: &Asker,
    q: &Question,
    plan: &Plan,
    call: &CallContext,
) -> Result<Answer, NotRun> {
    let bound = plan.limits.timeout;
    let asked = async {
        match asker {
            Asker::Elicit(peer) => elicit(peer, q).await,
            Asker::Task(input) => {
                let waiting = format!("{}: waiting for the person's approval", plan.what);
                match input.request(INPUT_KEY, input_request(q), waiting).await {
                    Ok(response) => Ok(read(&response)),
                    Err(NoResponse::Withdrawn) => Err(NotRun::Exec(ExecError::Cancelled)),
                    // One question per call: never reached.
                    Err(NoResponse::KeyReused) => {
                        Err(NotRun::Internal("an internal error occurred"))
                    }
                }
            }
        }
    };
    tokio::select! {
        r = tokio::time::timeout(bound, asked) => r.unwrap_or_else(|_| {
            tracing::info!(
                seconds = bound.as_secs_f64(),
                "the approval question was not answered within the call's time limit; not applied"
            );
            Ok(Answer::Cancel)
        }),
        () = call.cancel.cancelled() => Err(NotRun::Exec(ExecError::Cancelled)),
    }
}

/// Asks the person with `elicitation/create` and waits for the answer.
///
/// Errors: [`NotRun::ApprovalUnavailable`] when the client could not ask
/// (an error answer, a closed connection).
async fn elicit(peer: &Peer<RoleServer>, q: &Question) -> Result<Answer, NotRun> {
    let request = ServerRequest::ElicitRequest(ElicitRequest::new(form(q)));
    match peer.send_request(request).await {
        Ok(ClientResult::ElicitResult(r)) => {
            Ok(read(&serde_json::to_value(&r).unwrap_or(Value::Null)))
        }
        Ok(_) => {
            tracing::warn!("the client answered the approval question with another result");
            Err(unavailable(
                Unasked::QuestionFailed,
                Some(q.message.clone()),
            ))
        }
        Err(_) => {
            // The client's error text is not logged: it may echo the form.
            tracing::warn!("the approval question failed");
            Err(unavailable(
                Unasked::QuestionFailed,
                Some(q.message.clone()),
            ))
        }
    }
}
