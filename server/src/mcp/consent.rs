//! `--approve-writes` on the wire: a change is shown to the person through
//! the host and applied exactly as shown, or not at all (docs/approval.md).
//! What the question says, and the steps from the preview to the apply, are
//! the call pipeline's ([`crate::call::approve`]); this module carries the
//! question in both protocol eras: it decides how the answer can arrive
//! ([`consent`]) and implements the pipeline's [`Asker`] for the two ways
//! to ask while the call waits.
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
//! The steps themselves are `crate::call::approve::flow`'s. A `requestState` is
//! only ever compared with the digest of a fresh plan, so an altered one
//! cannot apply anything the person was not shown.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{
    BooleanSchema, CallToolRequestParams, ClientResult, ElicitRequest, ElicitRequestParams,
    ElicitationSchema, InputRequest, InputRequests, InputRequiredResult, PrimitiveSchemaDefinition,
    ProtocolVersion, RequestId, ServerRequest,
};
use rmcp::service::{OriginatingRequestId, Peer, RequestContext};
use serde_json::Value;

use super::tasks::TaskInput;
use super::tasks::input::NoResponse;
use crate::call::approve::{
    APPROVE_FIELD, AskError, Asker, Asking, Consent, Question, read_answer,
};
use crate::call::shape::outcome::Unasked;

/// The key of the approval form in an input-required result's
/// `inputRequests` (and of its answer in the retry's `inputResponses`).
pub const INPUT_KEY: &str = "approval";

/// How the answer to this request's question can arrive: by its protocol
/// version and the client's capabilities (per request in the stateless
/// lifecycle, from `initialize` otherwise). `task` is the input slot of
/// the task the call becomes when it asks (a client that declared the
/// tasks extension): then the question is asked inside the task, in either
/// era, and the second value is `true`.
pub fn consent(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    task: Option<&TaskInput>,
) -> (Consent, bool) {
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
        // the `initialize` era outside a session (no `Mcp-Session-Id`)
        // stands alone: what the client declared in its `initialize` is
        // not known here. In a session it is (`peer_info`).
        let sessionless = context
            .extensions
            .get::<http::request::Parts>()
            .is_some_and(|p| !p.headers.contains_key(super::SESSION_HEADER));
        let why = if capabilities.is_none() || (sessionless && !stateless) {
            Unasked::NoCapabilities
        } else if capabilities.as_ref().is_some_and(super::apps::declares_ui) {
            return (Consent::Card, false);
        } else {
            Unasked::NoElicitation
        };
        return (Consent::Unavailable(why), false);
    }
    if let Some(input) = task {
        return (Consent::Ask(Arc::new(TaskAsker(input.clone()))), true);
    }
    if !stateless {
        return (
            Consent::Ask(Arc::new(Elicit {
                peer: context.peer.clone(),
                origin: context.id.clone(),
            })),
            false,
        );
    }
    let answer = request
        .input_responses
        .as_ref()
        .and_then(|r| r.get(INPUT_KEY));
    let consent = match (answer, &request.request_state) {
        (Some(answer), Some(shown)) => Consent::Answered {
            answer: read(answer),
            shown: shown.clone(),
            claim: None,
        },
        _ => Consent::Defer,
    };
    (consent, false)
}

/// An elicitation result (`{action, content}`) as an answer.
fn read(result: &Value) -> crate::call::approve::Answer {
    read_answer(
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

/// `initialize` session: asks with one `elicitation/create` request to the
/// client, sent on the stream of the call that asks (over HTTP, the
/// POST's SSE stream).
#[derive(Debug)]
struct Elicit {
    peer: Peer<RoleServer>,
    /// The id of the `tools/call` that asks. rmcp associates a request
    /// sent from a handler with its originating request through a
    /// task-local that does not cross the `tokio::spawn` the call runs in,
    /// so the marker (SEP-2260, `OriginatingRequestId`) is set here; without
    /// it rmcp's session sends the question on the standalone GET stream,
    /// which a host need not open.
    origin: RequestId,
}

impl Asker for Elicit {
    /// Errors: [`AskError::Failed`] when the client could not ask (an error
    /// answer, another result, a closed connection).
    fn ask<'a>(&'a self, q: &'a Question, _what: &'a str) -> Asking<'a> {
        Box::pin(async move {
            let mut request = ElicitRequest::new(form(q));
            request
                .extensions
                .insert(OriginatingRequestId(self.origin.clone()));
            match self
                .peer
                .send_request(ServerRequest::ElicitRequest(request))
                .await
            {
                Ok(ClientResult::ElicitResult(r)) => {
                    Ok(read(&serde_json::to_value(&r).unwrap_or(Value::Null)))
                }
                Ok(_) => {
                    tracing::warn!("the client answered the approval question with another result");
                    Err(AskError::Failed)
                }
                Err(_) => {
                    // The client's error text is not logged: it may echo the form.
                    tracing::warn!("the approval question failed");
                    Err(AskError::Failed)
                }
            }
        })
    }
}

/// A call answered as a task: asks with the task's `input_required`
/// status, answered by `tasks/update`.
#[derive(Debug)]
struct TaskAsker(TaskInput);

impl Asker for TaskAsker {
    /// Errors: [`AskError::Withdrawn`] (`tasks/cancel`);
    /// [`AskError::Internal`] for a second question of one call (never
    /// reached: one question per call).
    fn ask<'a>(&'a self, q: &'a Question, what: &'a str) -> Asking<'a> {
        Box::pin(async move {
            let waiting = format!("{what}: waiting for the person's approval");
            match self.0.request(INPUT_KEY, input_request(q), waiting).await {
                Ok(response) => Ok(read(&response)),
                Err(NoResponse::Withdrawn) => Err(AskError::Withdrawn),
                Err(NoResponse::KeyReused) => Err(AskError::Internal),
            }
        })
    }
}
