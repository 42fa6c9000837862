//! The call pipeline, free of the MCP protocol: a call from the routed
//! tool to its [`Outcome`], through the same steps in this order
//! ([`pipeline::Pipeline::call`]).
//!
//! 1. **Plan** ([`plan`]): the arguments to one [`Plan`] or an early
//!    [`Outcome`]; the policy classifies the argv that will run; the
//!    operator's restrictions are checked on the plan and carried into the
//!    checks conda's own process enforces.
//! 2. **Approve** ([`approve`]): with `--approve-writes`, a change is shown
//!    to the person (conda's dry run) and applied only as shown; one state
//!    machine for every way the answer arrives.
//! 3. **Run** ([`run`]): [`Runner::run`] runs a plan on its lane; every
//!    worker result enters the server in one place.
//! 4. **Shape** ([`shape`]): an execution becomes the tool output, and every
//!    call ends as one [`Outcome`].
//!
//! What happens to a call is one stream of [`events`] (planned, asked,
//! answered, progress, finished) that the progress notifications and tasks
//! (the MCP side's [`events::Sink`]), the audit log and the metrics each
//! subscribe to. The MCP handler converts the [`Outcome`] into a tool
//! result in exactly one module (`mcp::results`).
//!
//! Adding a tool kind means adding one planning module in [`plan`] and one
//! route in the tool set; nothing else changes.

pub mod approve;
pub mod audit;
pub mod counted;
pub mod events;
pub mod pipeline;
pub mod plan;
pub mod run;
pub mod settings;
pub mod shape;

pub use pipeline::Pipeline;
pub use plan::{LaneKind, Plan, Reader};
pub use run::Runner;
pub use settings::CallSettings;
pub use shape::ResultSettings;
pub use shape::outcome::{NotRun, Outcome, Ran};
pub use shape::output::CallOutput;
