//! `conda_execute`, the raw tool (served only with `--allow-exec`): its
//! argv is checked (`mcp::execute::check`), classified by the same
//! classifier as the generated tools' compiled argv, and needs
//! `--allow-exec` itself ([`Check::Raw`]).

use serde_json::Value;

use crate::catalog::Catalog;
use crate::mcp::execute;
use crate::mcp::tools::EXECUTE_TOOL;
use crate::policy::Policy;
use crate::schema::ArgumentValidator;
use conda_mcp_shared::limits::Limits;

use super::outcome::{NotRun, Outcome};
use super::plan::{self, Check, Plan};

/// The plan of a `conda_execute` call; `validator` is `None` when the
/// server was started without `--allow-exec`.
///
/// Errors: [`Outcome::NotRun`] without `--allow-exec`,
/// [`Outcome::InvalidArguments`], [`Outcome::Refused`].
pub fn plan(
    catalog: &Catalog,
    policy: &Policy,
    limits: Limits,
    validator: Option<&ArgumentValidator>,
    args: &Value,
) -> Result<Plan, Outcome> {
    let Some(validator) = validator else {
        return Err(Outcome::NotRun {
            what: EXECUTE_TOOL.to_owned(),
            reason: NotRun::Unavailable("the server was not started with --allow-exec"),
        });
    };
    let invalid = |errors| Outcome::InvalidArguments {
        tool: EXECUTE_TOOL.to_owned(),
        errors,
    };
    validator.validate(args).map_err(invalid)?;
    let call = execute::check(args, limits.stdin_limit_bytes, limits.timeout)
        .map_err(|e| invalid(vec![e]))?;
    let classification = plan::authorize(catalog, policy, EXECUTE_TOOL, &call.argv, Check::Raw)?;
    let what = format!("conda_execute ({})", classification.command.join(" "));
    let mut limits = limits;
    limits.timeout = call.timeout;
    let approval = policy
        .needs_approval(&classification)
        .then_some(super::approval::Approval { preview: None });
    let mut plan = Plan::conda(what, call.argv, limits, classification);
    plan.approval = approval;
    plan.cwd = call.cwd;
    plan.stdin = call.stdin;
    Ok(plan)
}
