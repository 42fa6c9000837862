//! `conda_cli_command`: the completion helper ([`Plan::helper`]: never
//! behind a running conda). It needs no policy option: it only reads a file
//! conda-completion wrote.

use std::time::Duration;

use serde_json::Value;

use crate::catalog::Catalog;
use crate::completion::{self, AnswerError};
use conda_mcp_shared::limits::Limits;

use super::{Plan, Reader};
use crate::call::shape::outcome::{NotRun, Outcome, Ran};

/// Longest the helper may run: reading one msgpack file takes well under a
/// second; the server's own `--timeout` applies when it is shorter.
pub const HELPER_TIMEOUT: Duration = Duration::from_secs(60);

fn invalid(path: &str, rule: &str) -> Outcome {
    Outcome::invalid_argument(completion::TOOL_NAME, path, rule)
}

fn input_error(e: completion::InputError) -> Outcome {
    let completion::InputError::Invalid { path, reason } = e;
    invalid(&path, reason)
}

/// The plan of a call with `args`; `available` is false when the target has
/// no conda-completion ≥ 0.3 (the tool is then not served).
///
/// Errors: [`Outcome::NotRun`] when the tool is not available,
/// [`Outcome::InvalidArguments`] naming the JSON path.
pub fn plan(
    catalog: &Catalog,
    available: bool,
    limits: Limits,
    args: &Value,
) -> Result<Plan, Outcome> {
    if !available {
        return Err(Outcome::NotRun {
            what: completion::TOOL_NAME.to_owned(),
            reason: NotRun::Unavailable("this tool is not available"),
        });
    }
    let Some(object) = args.as_object() else {
        return Err(invalid("/", "must be an object"));
    };
    let path = completion::parse_input(object).map_err(input_error)?;
    Ok(Plan::helper(
        completion::TOOL_NAME.to_owned(),
        "conda_cli_command helper".to_owned(),
        completion::helper_argv(catalog, &path),
        limits,
        HELPER_TIMEOUT,
        Reader::CompletionAnswer,
    ))
}

/// The outcome of the helper's execution result.
pub fn read(result: &conda_mcp_shared::ExecutionResult) -> Outcome {
    match completion::read_answer(result) {
        Ok(answer) => Outcome::Ran {
            what: completion::TOOL_NAME.to_owned(),
            ran: Ran::Answer(Box::new(answer)),
        },
        Err(AnswerError::UnknownPath(e)) => input_error(e),
        Err(e @ AnswerError::Helper(_)) => Outcome::NotRun {
            what: completion::TOOL_NAME.to_owned(),
            reason: NotRun::Helper(e),
        },
    }
}
