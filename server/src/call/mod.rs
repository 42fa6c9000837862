//! The call pipeline, free of the MCP protocol: every tool call goes
//! through the same steps, in this order.
//!
//! 1. **Plan.** The arguments hosts add to every tool on their own are
//!    dropped first ([`host_args`]). The tool kind turns its arguments into one [`Plan`] (the
//!    program and argv, the lane, the limits, the policy classification and
//!    a label) or an early [`Outcome`] (invalid arguments, refused, not
//!    available). One module per kind: [`generated`] (one tool per conda
//!    command), [`raw`] (`conda_execute`), [`completion`]
//!    (`conda_cli_command`), [`compact_call`] (`--tool-mode compact`). A kind
//!    that works on a conda argv amends it (if it must) *before*
//!    [`plan::authorize`] classifies it, so the policy always decides on
//!    the argv that will run. A create into an existing environment is
//!    refused or turned into a replacement here ([`guard`]), the plan
//!    says what must hold after a write ([`postcondition`]) and what conda's
//!    own process checks before its command acts ([`checks`]).
//! 2. **Run.** [`Runner::run`] runs a plan on its lane and turns what came
//!    back into an [`Outcome`]: every worker result enters the server in
//!    one place ([`run::received`]), and the restart watch runs after a
//!    successful call that was not read-only, and a write that exited 0 is
//!    checked against its postcondition; what the checks inside conda's
//!    process reported is read in [`verdict`] (a refusal is an outcome,
//!    never a success); a call that is not read-only
//!    holds the installation's writer lock ([`install_lock`]) while it
//!    waits and runs. An execution result becomes
//!    the tool output in [`shape`]: `parsed_json` by the result mode
//!    ([`document`]), the typed error ([`error`], [`conda_error`]), one copy
//!    of the output in lean mode, the result budget ([`budget`]).
//! 3. **Answer.** The MCP handler converts the [`Outcome`] into a tool
//!    result in exactly one module (`mcp::results`).
//!
//! Adding a tool kind means adding one planning module here and one route
//! in the tool set; nothing else changes.

pub mod approval;
pub mod approval_card;
pub mod approval_ids;
pub mod budget;
pub mod checks;
pub mod compact_call;
pub mod completion;
pub mod conda_error;
pub mod document;
pub mod error;
pub mod generated;
pub mod guard;
pub mod host_args;
pub mod install_lock;
pub mod outcome;
pub mod output;
pub mod plan;
pub mod postcondition;
pub mod raw;
pub mod restrict;
pub mod run;
pub mod shape;
pub mod typed;
pub mod verdict;

pub use outcome::{NotRun, Outcome, Ran};
pub use output::CallOutput;
pub use plan::{LaneKind, Plan, Reader};
pub use run::Runner;
pub use shape::ResultSettings;
