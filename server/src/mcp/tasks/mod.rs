//! The MCP tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663, as
//! rmcp 3.11 models it): a `tools/call` that can outlast a host's request
//! timeout answers at once with a task handle (`CreateTaskResult`), and the
//! client polls `tasks/get` for its status and, in the end, its result.
//!
//! Only for clients that declare the extension (in `initialize`'s
//! capabilities, or per request in the stateless lifecycle's `_meta`);
//! every other client sees plain calls, unchanged. Which calls become
//! tasks is decided by the handler (`super::handler`): a call the plan says
//! may run long (`crate::call::Plan::may_run_long`) at once, any other when
//! it has to wait in a queue behind another call, before it starts.
//!
//! * status and message: `working` with the message the call's progress
//!   notification would carry (`super::progress`: queue position, elapsed
//!   seconds, output so far); the queue position also as
//!   `_meta["conda-mcp/queue"].ahead` ([`QUEUE_META_KEY`]);
//! * the end: `completed` with exactly the `CallToolResult` the plain call
//!   would have returned (the same `Outcome` → `super::results` path,
//!   `isError` results included), or `cancelled` after `tasks/cancel`;
//! * `tasks/cancel` cancels the call's job as `notifications/cancelled`
//!   does (the process tree is killed, or the job leaves the queue and
//!   never runs); the task reports `cancelled` once that is done;
//! * `input_required`: with `--approve-writes`, a change answered as a task
//!   asks the person inside the task: `tasks/get` carries the approval form
//!   in `inputRequests` ([`input`]), the client answers with `tasks/update`
//!   and `inputResponses`, and the call goes on (`super::consent`);
//! * a task belongs to its creator's [`Principal`]; to anyone else it is
//!   unknown (-32602, as for an id that never existed);
//! * bounds and loss on restart: [`store`].
//!
//! Nothing of a task hangs off its request's cancellation token (rmcp
//! cancels it after every response): the call has its own token, which only
//! the request's `notifications/cancelled` (while the request is still
//! open) and `tasks/cancel` cancel.

pub mod input;
pub mod store;

use std::time::Duration;

use rmcp::model::{GetTaskResult, MetaObject};

pub use input::TaskInput;
pub use store::{TaskEnd, TaskReport, TaskStore, UnknownTask, UpdateError};

#[cfg(doc)]
use super::principal::Principal;

/// The `_meta` key of `tasks/get` that carries the queue position of a
/// task still waiting: `{"ahead": <calls ahead of it>}`.
pub const QUEUE_META_KEY: &str = "conda-mcp/queue";

/// How long and how many finished tasks are kept (`--task-retention`,
/// `--max-finished-tasks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskSettings {
    /// A finished task is dropped this long after it finished.
    pub retention: Duration,
    /// Most finished tasks kept; past it the oldest finished go first.
    pub max_finished: usize,
}

impl TaskSettings {
    /// The default retention: 10 minutes.
    pub const DEFAULT_RETENTION: Duration = Duration::from_secs(600);
    /// The default bound on finished tasks kept.
    pub const DEFAULT_MAX_FINISHED: usize = 32;
}

impl Default for TaskSettings {
    fn default() -> Self {
        Self {
            retention: Self::DEFAULT_RETENTION,
            max_finished: Self::DEFAULT_MAX_FINISHED,
        }
    }
}

/// The `tasks/get` answer of a report.
pub fn get_result(report: TaskReport) -> GetTaskResult {
    let mut result = GetTaskResult::new(report.task);
    if let Some(ahead) = report.queued_behind {
        let mut meta = MetaObject::new();
        meta.0
            .insert(QUEUE_META_KEY.into(), serde_json::json!({ "ahead": ahead }));
        result.meta = Some(meta);
    }
    result
}
