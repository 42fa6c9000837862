//! What the handler serves from once startup has finished: the surface,
//! the call pipeline, the result conversion, the server's info and the
//! task store, as one value shared by the handler ([`super::handler`]) and
//! a call's event sink ([`super::sink`]), so neither imports the other.

use rmcp::model::ServerConfig;

use super::live::{LiveTools, Served};
use super::results::Results;
use super::tasks::TaskStore;
use super::watch::{EnvironmentWatch, StampSource};
use crate::call::Pipeline;

/// Everything a call needs.
#[derive(Debug)]
pub struct State {
    /// The catalog, tools and capabilities document served now: fixed at
    /// startup, or replaced as a whole with `--live-tools`.
    pub surface: Served,
    /// `--live-tools`: how the surface is rebuilt and whom to tell; `None`
    /// keeps the surface for the life of the process.
    pub live: Option<LiveTools>,
    /// What every call runs with: the settings calls read, the runner,
    /// the approval card's ids, the metrics, the audit log.
    pub pipeline: Pipeline,
    /// Outcomes as tool results (output-schema checked).
    pub results: Results,
    /// `initialize` / `server/discover` answer.
    pub info: ServerConfig,
    /// The calls answered as MCP tasks (`--task-retention`,
    /// `--max-finished-tasks`).
    pub tasks: TaskStore,
    /// Who hears of changed environments, and the watch of each
    /// principal someone listens as (`--watch-interval`).
    pub watch: std::sync::Arc<EnvironmentWatch>,
}

impl StampSource for State {
    fn stamps<'a>(
        &'a self,
        principal: &'a crate::principal::Principal,
        cancel: tokio_util::sync::CancellationToken,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<
                    Output = Result<crate::inventory::stamps::Stamps, crate::call::NotRun>,
                > + Send
                + 'a,
        >,
    > {
        let limits = self.pipeline.settings.limits;
        Box::pin(self.pipeline.runner.stamps(limits, principal, cancel))
    }
}
