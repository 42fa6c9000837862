//! `conda_inventory`: the inventory helper on the discovery lane (never
//! behind a running conda), in the worker of the calling principal (a
//! principal mapped to an OS user reads what its own conda reads). It
//! needs no policy option: it only reads what `conda list` and `conda env
//! list` read ([`crate::inventory`]).

use std::time::Duration;

use serde_json::Value;

use crate::inventory::{self, InventoryError};
use crate::schema::ArgumentError;
use crate::worker_client::Program;
use conda_mcp_shared::limits::Limits;

use super::{LaneKind, Plan, Reader};
use crate::call::shape::outcome::{NotRun, Outcome, Ran};

/// Longest the helper may run: reading every environment's records is
/// seconds even for hundreds of environments; the server's own `--timeout`
/// applies when it is shorter.
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(120);

fn invalid(path: &str, rule: &str) -> Outcome {
    Outcome::InvalidArguments {
        tool: inventory::TOOL_NAME.to_owned(),
        errors: vec![ArgumentError {
            path: path.to_owned(),
            rule: rule.to_owned(),
        }],
    }
}

/// The plan of a call with `args`.
///
/// Errors: [`Outcome::InvalidArguments`] naming the JSON path (never the
/// value).
pub fn plan(limits: Limits, args: &Value) -> Result<Plan, Outcome> {
    let Some(object) = args.as_object() else {
        return Err(invalid("/", "must be an object"));
    };
    let query = inventory::parse_input(object).map_err(|e| {
        let inventory::QueryError::Invalid { path, reason } = e;
        invalid(&path, reason)
    })?;
    let mut limits = limits;
    limits.timeout = limits.timeout.min(HELPER_TIMEOUT);
    Ok(Plan {
        what: inventory::TOOL_NAME.to_owned(),
        label: format!("conda_inventory helper ({})", query.kind()),
        program: Program::Python,
        argv: inventory::helper_argv(&query),
        cwd: None,
        stdin: None,
        lane: LaneKind::Discovery,
        limits,
        classification: None,
        reader: Reader::InventoryAnswer,
        reports_progress: false,
        confirmation_required: false,
        approval: None,
        apply_requires: Vec::new(),
        replacement: None,
        postcondition: None,
        checks: None,
    })
}

/// The plan of the environment watch's `stamps` request
/// ([`inventory::stamps`]): the helper on the discovery lane, within
/// [`HELPER_TIMEOUT`] (and the server's `--timeout`).
pub fn stamps_plan(limits: Limits) -> Plan {
    let mut limits = limits;
    limits.timeout = limits.timeout.min(HELPER_TIMEOUT);
    Plan {
        what: "environment watch".to_owned(),
        label: "conda_inventory helper (stamps)".to_owned(),
        program: Program::Python,
        argv: inventory::stamps::helper_argv(),
        cwd: None,
        stdin: None,
        lane: LaneKind::Discovery,
        limits,
        classification: None,
        reader: Reader::InventoryAnswer,
        reports_progress: false,
        confirmation_required: false,
        approval: None,
        apply_requires: Vec::new(),
        replacement: None,
        postcondition: None,
        checks: None,
    }
}

/// The outcome of the helper's execution result, its rows cut to
/// `budget` bytes ([`inventory::InventoryAnswer::fit`]).
pub fn read(result: &conda_mcp_shared::ExecutionResult, budget: usize) -> Outcome {
    match inventory::read_answer(result) {
        Ok(mut answer) => {
            answer.fit(budget);
            Outcome::Ran {
                what: inventory::TOOL_NAME.to_owned(),
                ran: Ran::Inventory(Box::new(answer)),
            }
        }
        Err(InventoryError::Invalid { path, reason }) => invalid(&path, &reason),
        Err(e @ InventoryError::Helper(_)) => Outcome::NotRun {
            what: inventory::TOOL_NAME.to_owned(),
            reason: NotRun::Inventory(e),
        },
    }
}
