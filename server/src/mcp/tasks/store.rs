//! The tasks of one server process: who owns each, what it is doing, how it
//! ended, and when it is dropped.
//!
//! Kept in memory only: a restart loses every task (docs/long-calls.md
//! "What a restart loses"). Bounds: a finished task is dropped
//! [`TaskSettings::retention`] after it finished, and when more than
//! [`TaskSettings::max_finished`] tasks have finished the oldest finished
//! ones are dropped first. A working task is never dropped (its call is
//! bounded by `--timeout`, in the queue and while it runs). Expired tasks
//! are swept on every access, so an idle server holds at most the bounded
//! set until the next request.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rmcp::model::{DetailedTask, InputResponses, JsonObject, Task, TaskPayload, TaskStatus};
use rmcp::task_manager::current_timestamp;
use tokio_util::sync::CancellationToken;

use super::TaskSettings;
use super::input::{NotOutstanding, TaskInput};
use crate::mcp::principal::Principal;
use crate::mcp::progress::{Phase, Tracker};

/// Suggested interval between two `tasks/get` of one task, in ms.
pub const POLL_INTERVAL_MS: u64 = 1_000;

/// A task id no principal may see: it never existed, was dropped, or
/// belongs to another principal (the three are indistinguishable).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("unknown task")]
pub struct UnknownTask;

/// Why a `tasks/update` was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpdateError {
    /// As for [`TaskStore::get`].
    #[error(transparent)]
    Unknown(#[from] UnknownTask),
    /// The task waits for input and the update has no response for it.
    #[error(transparent)]
    NotOutstanding(#[from] NotOutstanding),
}

/// How a task ended.
#[derive(Debug, Clone, PartialEq)]
pub enum TaskEnd {
    /// The call's result (a `CallToolResult` as JSON): exactly what the
    /// plain call would have returned, `isError` results included.
    Completed(JsonObject),
    /// `tasks/cancel` stopped it: the process tree was killed, or it was
    /// taken out of the queue before it ran.
    Cancelled,
}

/// What `tasks/get` reports.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskReport {
    /// Status, status message, timestamps, ttl and the final result.
    pub task: DetailedTask,
    /// How many calls are ahead while it waits in the queue.
    pub queued_behind: Option<usize>,
}

/// The tasks of this process (shared by every request; cheap to lock).
#[derive(Debug)]
pub struct TaskStore {
    settings: TaskSettings,
    tasks: Mutex<HashMap<String, Entry>>,
}

#[derive(Debug)]
struct Entry {
    owner: Principal,
    /// What runs (`conda install`), for the status message.
    what: String,
    task: Task,
    created: Instant,
    state: State,
}

/// What a task follows of its call.
#[derive(Debug, Clone)]
pub struct Followed {
    /// The call's phase (`tasks/get`'s message).
    pub tracker: Tracker,
    /// Stops the call (`tasks/cancel`).
    pub cancel: CancellationToken,
    /// The call's question to the client, if it asks one.
    pub input: TaskInput,
}

#[derive(Debug)]
enum State {
    Working {
        tracker: Tracker,
        cancel: CancellationToken,
        input: TaskInput,
    },
    Finished {
        end: TaskEnd,
        at: Instant,
    },
}

impl TaskStore {
    /// An empty store with these bounds.
    pub fn new(settings: TaskSettings) -> Self {
        Self {
            settings,
            tasks: Mutex::new(HashMap::new()),
        }
    }

    /// Registers a working task owned by `owner` for the call named `what`
    /// (followed as [`Followed`] says) and returns its seed state for the `CreateTaskResult`. `longest` is
    /// how long the call can take at most (queue and run), which with the
    /// retention gives the advertised `ttlMs`. The task is visible to
    /// `tasks/get` before this returns.
    pub fn create(
        &self,
        owner: Principal,
        what: String,
        call: Followed,
        longest: Duration,
    ) -> Task {
        let Followed {
            tracker,
            cancel,
            input,
        } = call;
        let now = current_timestamp();
        let id = uuid::Uuid::new_v4().to_string();
        let mut task = Task::new(id.clone(), TaskStatus::Working, now.clone(), now)
            .with_ttl_ms(millis(longest + self.settings.retention))
            .with_poll_interval_ms(POLL_INTERVAL_MS)
            .with_status_message(tracker.message(&what));
        task.status = TaskStatus::Working;
        let entry = Entry {
            owner,
            what,
            task: task.clone(),
            created: Instant::now(),
            state: State::Working {
                tracker,
                cancel,
                input,
            },
        };
        let mut tasks = self.lock();
        self.sweep(&mut tasks);
        tasks.insert(id, entry);
        task
    }

    /// Records how task `id` ended (its call is over). A task already
    /// dropped (it cannot be: working tasks are kept) is ignored.
    pub fn finish(&self, id: &str, end: TaskEnd) {
        let mut tasks = self.lock();
        if let Some(e) = tasks.get_mut(id) {
            let at = Instant::now();
            e.task.status = match end {
                TaskEnd::Completed(_) => TaskStatus::Completed,
                TaskEnd::Cancelled => TaskStatus::Cancelled,
            };
            e.task.status_message = Some(match end {
                TaskEnd::Completed(_) => format!("{}: finished", e.what),
                TaskEnd::Cancelled => format!("{}: cancelled", e.what),
            });
            e.task.last_updated_at = current_timestamp();
            e.task.ttl_ms = Some(millis(at - e.created + self.settings.retention));
            e.state = State::Finished { end, at };
        }
        self.sweep(&mut tasks);
    }

    /// `tasks/get`: the task as `owner` may see it: `input_required` with
    /// its `inputRequests` while a question waits for the client
    /// ([`TaskInput`]), else `working` with the call's progress message, or
    /// how it ended.
    ///
    /// Errors: [`UnknownTask`] for an id that does not exist, was dropped,
    /// or belongs to another principal.
    pub fn get(&self, owner: &Principal, id: &str) -> Result<TaskReport, UnknownTask> {
        let mut tasks = self.lock();
        self.sweep(&mut tasks);
        let e = owned(&mut tasks, owner, id)?;
        Ok(match &e.state {
            State::Working {
                tracker,
                cancel,
                input,
            } => {
                let phase = tracker.phase();
                let (payload, mut message) = match input.outstanding() {
                    Some((input_requests, message)) => {
                        (TaskPayload::InputRequired { input_requests }, message)
                    }
                    None => (TaskPayload::Working, tracker.message(&e.what)),
                };
                if cancel.is_cancelled() {
                    message.push_str("; cancellation requested");
                }
                let mut task = e.task.clone();
                task.status_message = Some(message);
                TaskReport {
                    task: DetailedTask::new(task, payload),
                    queued_behind: match phase {
                        Phase::Queued { ahead } if ahead > 0 => Some(ahead),
                        _ => None,
                    },
                }
            }
            State::Finished { end, .. } => TaskReport {
                task: DetailedTask::new(
                    e.task.clone(),
                    match end {
                        TaskEnd::Completed(result) => TaskPayload::Completed {
                            result: result.clone(),
                        },
                        TaskEnd::Cancelled => TaskPayload::Cancelled,
                    },
                ),
                queued_behind: None,
            },
        })
    }

    /// `tasks/cancel`: stops a working task as `notifications/cancelled`
    /// stops a plain call (its job is cancelled: the process tree is
    /// killed, or it leaves the queue and never runs). The task reports
    /// `cancelled` once that is done. A finished task is left as it is.
    ///
    /// Errors: [`UnknownTask`], as for [`TaskStore::get`].
    pub fn cancel(&self, owner: &Principal, id: &str) -> Result<(), UnknownTask> {
        let mut tasks = self.lock();
        self.sweep(&mut tasks);
        let e = owned(&mut tasks, owner, id)?;
        if let State::Working { cancel, input, .. } = &e.state {
            cancel.cancel();
            // A question waiting for the client is withdrawn with it.
            input.withdraw();
            e.task.last_updated_at = current_timestamp();
        }
        Ok(())
    }

    /// `tasks/update`: delivers `responses` to the question task `id`
    /// waits for ([`TaskInput::respond`]); for a task that waits for
    /// nothing (working or finished) they are ignored, as the extension
    /// says for keys that are not outstanding.
    ///
    /// Errors: [`UpdateError::Unknown`], as for [`TaskStore::get`];
    /// [`UpdateError::NotOutstanding`] when the task waits and `responses`
    /// does not answer it (it goes on waiting).
    pub fn update(
        &self,
        owner: &Principal,
        id: &str,
        responses: InputResponses,
    ) -> Result<(), UpdateError> {
        let mut tasks = self.lock();
        self.sweep(&mut tasks);
        let e = owned(&mut tasks, owner, id)?;
        if let State::Working { input, .. } = &e.state {
            input.respond(responses)?;
            e.task.last_updated_at = current_timestamp();
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Entry>> {
        // A panic while holding the lock leaves the map consistent (every
        // update is a single assignment), so a poisoned lock is used as is.
        self.tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// How many tasks are still working (the `conda_mcp_tasks` metric).
    pub fn working(&self) -> usize {
        self.tasks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .values()
            .filter(|e| matches!(e.state, State::Working { .. }))
            .count()
    }

    /// Drops finished tasks past the retention, then the oldest finished
    /// ones beyond the count bound.
    fn sweep(&self, tasks: &mut HashMap<String, Entry>) {
        let retention = self.settings.retention;
        tasks.retain(|_, e| match e.state {
            State::Finished { at, .. } => at.elapsed() < retention,
            State::Working { .. } => true,
        });
        let mut finished: Vec<(Instant, String)> = tasks
            .iter()
            .filter_map(|(id, e)| match e.state {
                State::Finished { at, .. } => Some((at, id.clone())),
                State::Working { .. } => None,
            })
            .collect();
        if finished.len() > self.settings.max_finished {
            finished.sort();
            let excess = finished.len() - self.settings.max_finished;
            for (_, id) in finished.into_iter().take(excess) {
                tasks.remove(&id);
            }
        }
    }
}

/// The entry `id` when `owner` owns it.
fn owned<'a>(
    tasks: &'a mut HashMap<String, Entry>,
    owner: &Principal,
    id: &str,
) -> Result<&'a mut Entry, UnknownTask> {
    match tasks.get_mut(id) {
        // By name: the same principal's next access token may grant other
        // scopes.
        Some(e) if e.owner.name == owner.name => Ok(e),
        _ => Err(UnknownTask),
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store(retention_ms: u64, max_finished: usize) -> TaskStore {
        TaskStore::new(TaskSettings {
            retention: Duration::from_millis(retention_ms),
            max_finished,
        })
    }

    fn working(s: &TaskStore, owner: &Principal) -> (String, CancellationToken) {
        let cancel = CancellationToken::new();
        let t = s.create(
            owner.clone(),
            "conda install".into(),
            Followed {
                tracker: Tracker::new(),
                cancel: cancel.clone(),
                input: TaskInput::new(),
            },
            Duration::from_secs(10),
        );
        (t.task_id, cancel)
    }

    fn done() -> TaskEnd {
        TaskEnd::Completed(JsonObject::new())
    }

    #[test]
    fn a_task_is_unknown_to_every_other_principal() {
        let s = store(60_000, 10);
        let alice = Principal::named("alice");
        let bob = Principal::named("bob");
        let (id, cancel) = working(&s, &alice);
        assert!(s.get(&alice, &id).is_ok());
        assert_eq!(s.get(&bob, &id), Err(UnknownTask));
        assert_eq!(s.cancel(&bob, &id), Err(UnknownTask));
        assert_eq!(
            s.update(&bob, &id, InputResponses::new()),
            Err(UpdateError::Unknown(UnknownTask))
        );
        assert!(!cancel.is_cancelled(), "bob's cancel reached alice's task");
        assert_eq!(s.get(&alice, "no-such-id"), Err(UnknownTask));
        s.cancel(&alice, &id).expect("own task");
        assert!(cancel.is_cancelled());
    }

    #[test]
    fn a_working_task_reports_its_phase_and_a_finished_one_its_end() {
        let s = store(60_000, 10);
        let me = Principal::stdio();
        let tracker = Tracker::new();
        let t = s.create(
            me.clone(),
            "conda create".into(),
            Followed {
                tracker: tracker.clone(),
                cancel: CancellationToken::new(),
                input: TaskInput::new(),
            },
            Duration::from_secs(10),
        );
        assert_eq!(t.ttl_ms, Some(70_000), "longest call plus retention");
        tracker.update(crate::worker_client::JobUpdate::Queued { position: 2 });
        let r = s.get(&me, &t.task_id).expect("known");
        assert_eq!(r.task.status(), TaskStatus::Working);
        assert_eq!(r.queued_behind, Some(2));
        assert!(
            r.task
                .task
                .status_message
                .as_deref()
                .is_some_and(|m| m.contains("queued at position 3")),
            "{r:?}"
        );
        let mut result = JsonObject::new();
        result.insert("isError".into(), false.into());
        s.finish(&t.task_id, TaskEnd::Completed(result.clone()));
        let r = s.get(&me, &t.task_id).expect("known");
        assert_eq!(r.task.payload, TaskPayload::Completed { result });
        assert_eq!(r.task.status(), TaskStatus::Completed);
        assert_eq!(r.queued_behind, None);
    }

    #[test]
    fn finished_tasks_are_dropped_after_the_retention() {
        // A retention long enough that "kept right after" holds on a
        // loaded machine; the sleeps only need to exceed it.
        let s = store(1_000, 10);
        let me = Principal::stdio();
        let (id, _) = working(&s, &me);
        std::thread::sleep(Duration::from_millis(1_100));
        assert!(s.get(&me, &id).is_ok(), "a working task is never dropped");
        s.finish(&id, done());
        assert!(s.get(&me, &id).is_ok(), "kept right after it finished");
        std::thread::sleep(Duration::from_millis(1_100));
        assert_eq!(s.get(&me, &id), Err(UnknownTask));
    }

    #[test]
    fn past_the_count_bound_the_oldest_finished_tasks_go_first() {
        let s = store(60_000, 2);
        let me = Principal::stdio();
        let ids: Vec<String> = (0..4).map(|_| working(&s, &me).0).collect();
        for id in &ids[..3] {
            s.finish(id, done());
            std::thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(s.get(&me, &ids[0]), Err(UnknownTask), "oldest dropped");
        assert!(s.get(&me, &ids[1]).is_ok());
        assert!(s.get(&me, &ids[2]).is_ok());
        assert!(s.get(&me, &ids[3]).is_ok(), "working tasks do not count");
    }

    #[test]
    fn cancelling_a_finished_task_changes_nothing() {
        let s = store(60_000, 2);
        let me = Principal::stdio();
        let (id, cancel) = working(&s, &me);
        s.finish(&id, TaskEnd::Cancelled);
        s.cancel(&me, &id).expect("known");
        assert!(!cancel.is_cancelled());
        assert_eq!(
            s.get(&me, &id).expect("known").task.status(),
            TaskStatus::Cancelled
        );
    }

    #[tokio::test]
    async fn a_question_shows_as_input_required_and_a_cancel_withdraws_it() {
        use rmcp::model::{ElicitRequest, ElicitRequestParams, ElicitationSchema, InputRequest};
        let s = store(60_000, 10);
        let me = Principal::stdio();
        let input = TaskInput::new();
        let cancel = CancellationToken::new();
        let t = s.create(
            me.clone(),
            "conda create".into(),
            Followed {
                tracker: Tracker::new(),
                cancel: cancel.clone(),
                input: input.clone(),
            },
            Duration::from_secs(10),
        );
        let request = InputRequest::Elicitation(ElicitRequest::new(
            ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: "apply?".into(),
                requested_schema: ElicitationSchema::new(Default::default()),
            },
        ));
        let asking = input.clone();
        let waiting = tokio::spawn(async move {
            asking
                .request("approval", request, "conda create: waiting".into())
                .await
        });
        while input.outstanding().is_none() {
            tokio::task::yield_now().await;
        }
        let r = s.get(&me, &t.task_id).expect("known");
        assert_eq!(r.task.status(), TaskStatus::InputRequired);
        assert_eq!(
            r.task.task.status_message.as_deref(),
            Some("conda create: waiting")
        );
        match &r.task.payload {
            TaskPayload::InputRequired { input_requests } => {
                assert_eq!(input_requests.keys().collect::<Vec<_>>(), ["approval"]);
            }
            other => panic!("{other:?}"),
        }
        // Another key: refused, still waiting.
        let other = InputResponses::from([("x".to_owned(), serde_json::json!({}))]);
        assert!(matches!(
            s.update(&me, &t.task_id, other),
            Err(UpdateError::NotOutstanding(_))
        ));
        assert_eq!(
            s.get(&me, &t.task_id).expect("known").task.status(),
            TaskStatus::InputRequired
        );
        s.cancel(&me, &t.task_id).expect("known");
        assert!(cancel.is_cancelled());
        assert!(waiting.await.expect("joined").is_err(), "withdrawn");
        let r = s.get(&me, &t.task_id).expect("known");
        assert_eq!(r.task.status(), TaskStatus::Working);
        assert!(
            r.task
                .task
                .status_message
                .as_deref()
                .is_some_and(|m| m.ends_with("; cancellation requested")),
            "{r:?}"
        );
    }
}
