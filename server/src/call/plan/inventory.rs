//! `conda_inventory`: the inventory helper ([`Plan::helper`]: never behind
//! a running conda), in the worker of the calling principal (a
//! principal mapped to an OS user reads what its own conda reads). It
//! needs no policy option: it only reads what `conda list` and `conda env
//! list` read ([`crate::inventory`]).

use std::time::Duration;

use serde_json::Value;

use crate::inventory::{self, InventoryError};
use conda_mcp_shared::limits::Limits;

use super::{Plan, Reader};
use crate::call::shape::outcome::{NotRun, Outcome, Ran};

/// Longest the helper may run: reading every environment's records is
/// seconds even for hundreds of environments; the server's own `--timeout`
/// applies when it is shorter.
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(120);

fn invalid(path: &str, rule: &str) -> Outcome {
    Outcome::invalid_argument(inventory::TOOL_NAME, path, rule)
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
    Ok(Plan::helper(
        inventory::TOOL_NAME.to_owned(),
        format!("conda_inventory helper ({})", query.kind()),
        inventory::helper_argv(&query),
        limits,
        HELPER_TIMEOUT,
        Reader::InventoryAnswer,
    ))
}

/// The plan of the environment watch's `stamps` request
/// ([`inventory::stamps`]): the helper ([`Plan::helper`]), within
/// [`HELPER_TIMEOUT`] (and the server's `--timeout`).
pub fn stamps_plan(limits: Limits) -> Plan {
    Plan::helper(
        "environment watch".to_owned(),
        "conda_inventory helper (stamps)".to_owned(),
        inventory::stamps::helper_argv(),
        limits,
        HELPER_TIMEOUT,
        Reader::InventoryAnswer,
    )
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
