//! A task's question to the client: the one input request a task may have
//! outstanding (SEP-2663 `input_required`), shared by the call that asks
//! and the store that reports it and delivers the answer.
//!
//! The call surfaces a request with [`TaskInput::request`] and waits; while
//! it waits, `tasks/get` reports `input_required` with the request in
//! `inputRequests` under its key ([`TaskInput::outstanding`]); the client's
//! `tasks/update` hands its `inputResponses` to [`TaskInput::respond`],
//! which wakes the call with the response under that key. A request that
//! stops waiting (its call was cancelled, or gave up) is withdrawn: the
//! task is `working` again and a late response finds nothing outstanding.
//!
//! Keys are used once per task (the extension asks keys to be unique over a
//! task's life): a key asked a second time is refused.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use rmcp::model::{InputRequest, InputRequests, InputResponses};
use serde_json::Value;
use tokio::sync::oneshot;

/// The input request slot of one task (cheap to clone; clones share it).
#[derive(Debug, Clone, Default)]
pub struct TaskInput {
    slot: Arc<Mutex<Slot>>,
}

#[derive(Debug, Default)]
struct Slot {
    pending: Option<Pending>,
    used: BTreeSet<String>,
}

#[derive(Debug)]
struct Pending {
    key: String,
    request: InputRequest,
    /// What `tasks/get` says while the request waits.
    message: String,
    reply: oneshot::Sender<Value>,
}

/// Why a request got no response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoResponse {
    /// The key was already used for this task.
    #[error("the input request key was already used for this task")]
    KeyReused,
    /// The request was withdrawn before a response came
    /// ([`TaskInput::withdraw`]).
    #[error("the input request was withdrawn")]
    Withdrawn,
}

/// A `tasks/update` that answered nothing the task waits for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no response for the task's outstanding input request {outstanding:?}")]
pub struct NotOutstanding {
    /// The key the task waits for (server-chosen; never the client's keys).
    pub outstanding: String,
}

impl TaskInput {
    /// An empty slot: nothing outstanding.
    pub fn new() -> Self {
        Self::default()
    }

    /// Surfaces `request` under `key` (with `message` as the task's status
    /// message while it waits) and waits for the client's response to it.
    /// Dropping the returned future withdraws the request.
    ///
    /// Errors: [`NoResponse::KeyReused`] (nothing surfaced),
    /// [`NoResponse::Withdrawn`].
    pub async fn request(
        &self,
        key: &str,
        request: InputRequest,
        message: String,
    ) -> Result<Value, NoResponse> {
        let (reply, answer) = oneshot::channel();
        {
            let mut slot = self.lock();
            if !slot.used.insert(key.to_owned()) {
                return Err(NoResponse::KeyReused);
            }
            slot.pending = Some(Pending {
                key: key.to_owned(),
                request,
                message,
                reply,
            });
        }
        let _withdraw = Withdraw(self);
        answer.await.map_err(|_| NoResponse::Withdrawn)
    }

    /// The outstanding request as `inputRequests` and the status message,
    /// or `None` when nothing is outstanding.
    pub fn outstanding(&self) -> Option<(InputRequests, String)> {
        let slot = self.lock();
        slot.pending.as_ref().map(|p| {
            let mut requests = InputRequests::new();
            requests.insert(p.key.clone(), p.request.clone());
            (requests, p.message.clone())
        })
    }

    /// Delivers `responses` of a `tasks/update`: the response under the
    /// outstanding key wakes the waiting call; other keys are ignored, as
    /// the extension says for keys that are not outstanding. Nothing
    /// outstanding: everything is ignored.
    ///
    /// Errors: [`NotOutstanding`] when a request is outstanding and
    /// `responses` has no response for it (the request stays outstanding).
    pub fn respond(&self, mut responses: InputResponses) -> Result<(), NotOutstanding> {
        let mut slot = self.lock();
        let Some(key) = slot.pending.as_ref().map(|p| p.key.clone()) else {
            return Ok(());
        };
        let Some(response) = responses.remove(&key) else {
            return Err(NotOutstanding { outstanding: key });
        };
        if let Some(p) = slot.pending.take() {
            // The waiting call may have just stopped waiting: then the
            // response has nobody to go to, as if it came too late.
            let _ = p.reply.send(response);
        }
        Ok(())
    }

    /// Withdraws the outstanding request, if any: its waiting call gets
    /// [`NoResponse::Withdrawn`].
    pub fn withdraw(&self) {
        self.lock().pending = None;
    }

    fn lock(&self) -> MutexGuard<'_, Slot> {
        // Every update is a single assignment: a poisoned lock is consistent.
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Withdraws the request when the waiting future ends or is dropped.
struct Withdraw<'a>(&'a TaskInput);

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.0.withdraw();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rmcp::model::{ElicitRequest, ElicitRequestParams, ElicitationSchema};
    use serde_json::json;

    fn request() -> InputRequest {
        InputRequest::Elicitation(ElicitRequest::new(
            ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: "ok?".into(),
                requested_schema: ElicitationSchema::new(Default::default()),
            },
        ))
    }

    #[tokio::test]
    async fn a_response_under_the_outstanding_key_wakes_the_call() {
        let input = TaskInput::new();
        assert!(input.outstanding().is_none());
        let asking = input.clone();
        let call =
            tokio::spawn(async move { asking.request("q", request(), "waiting".into()).await });
        while input.outstanding().is_none() {
            tokio::task::yield_now().await;
        }
        let (requests, message) = input.outstanding().expect("outstanding");
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["q"]);
        assert_eq!(message, "waiting");
        // A response under another key answers nothing: refused, still waiting.
        let wrong = InputResponses::from([("other".to_owned(), json!({"action": "accept"}))]);
        assert_eq!(
            input.respond(wrong),
            Err(NotOutstanding {
                outstanding: "q".into()
            })
        );
        assert!(input.outstanding().is_some());
        let right = InputResponses::from([
            ("q".to_owned(), json!({"action": "decline"})),
            ("extra".to_owned(), json!(1)),
        ]);
        input.respond(right).expect("delivered");
        assert_eq!(
            call.await.expect("joined"),
            Ok(json!({"action": "decline"}))
        );
        assert!(input.outstanding().is_none());
        // Nothing outstanding: a response is ignored; the key is spent.
        input
            .respond(InputResponses::from([("q".to_owned(), json!({}))]))
            .expect("ignored");
        assert_eq!(
            input.request("q", request(), String::new()).await,
            Err(NoResponse::KeyReused)
        );
    }

    #[tokio::test]
    async fn a_withdrawn_or_abandoned_request_is_no_longer_outstanding() {
        let input = TaskInput::new();
        let asking = input.clone();
        let call = tokio::spawn(async move { asking.request("a", request(), String::new()).await });
        while input.outstanding().is_none() {
            tokio::task::yield_now().await;
        }
        input.withdraw();
        assert_eq!(call.await.expect("joined"), Err(NoResponse::Withdrawn));
        // A call that stops waiting (its future dropped) withdraws it too.
        let waiting = input.request("b", request(), String::new());
        let gave_up = tokio::time::timeout(std::time::Duration::from_millis(10), waiting).await;
        assert!(gave_up.is_err());
        assert!(input.outstanding().is_none());
    }
}
