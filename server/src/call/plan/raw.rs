//! `conda_execute`, the raw tool (served only with `--allow-exec`): its
//! argv is checked (`tools::execute::check`), classified by the same
//! classifier as the generated tools' compiled argv, and needs
//! `--allow-exec` itself ([`Check::Raw`]). A create into an existing
//! environment needs `replace_existing: true` ([`super::existing_env`]); the
//! success of a write is checked ([`crate::call::run::postcondition`]).

use serde_json::Value;

use crate::catalog::Catalog;
use crate::policy::Policy;
use crate::schema::ArgumentValidator;
use crate::tools::EXECUTE_TOOL;
use crate::tools::execute;
use conda_mcp_shared::limits::Limits;

use std::path::PathBuf;

use crate::schema::ArgumentError;

use super::existing_env::{self, Decision, Replacement};
use super::{Check, Plan};
use crate::call::run::postcondition;
use crate::call::shape::outcome::{NotRun, Outcome};

/// The plan of a `conda_execute` call; `validator` is `None` when the
/// server was started without `--allow-exec`.
///
/// Errors: [`Outcome::NotRun`] without `--allow-exec`,
/// [`Outcome::InvalidArguments`], [`Outcome::Refused`],
/// [`Outcome::EnvironmentExists`].
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
    let classification = super::authorize(catalog, policy, EXECUTE_TOOL, &call.argv, Check::Raw)?;
    let cwd = call
        .cwd
        .clone()
        .unwrap_or_else(|| PathBuf::from(conda_mcp_shared::env::FIXED_CWD));
    let resolved = crate::argparse::resolve(catalog, &call.argv);
    let replacement = match existing_env::decide(catalog, &resolved, &cwd, call.replace_existing) {
        Decision::Clear => None,
        Decision::Exists(env) => {
            tracing::info!(tool = %EXECUTE_TOOL, "refused: an environment exists at the target");
            return Err(Outcome::EnvironmentExists(env));
        }
        Decision::Replaces(_) if resolved.has(catalog, "dry_run") => {
            return Err(invalid(vec![ArgumentError {
                path: "/replace_existing".into(),
                rule: "conda refuses a dry run on an existing environment and conda_execute runs its argv unchanged: preview the replacement with the typed tool (conda_create or conda_env_create with replace_existing: true), or apply it here without --dry-run".into(),
            }]));
        }
        Decision::Replaces(env) => Some(Replacement::of(&env, None)),
    };
    let postcondition = postcondition::of_resolved(catalog, &resolved, &cwd);
    let checks = super::checks::of(
        catalog,
        &resolved,
        &classification,
        &cwd,
        super::checks::Allowances {
            replaces: replacement.as_ref(),
            remove_unmanaged_files: call.remove_unmanaged_files,
        },
    );
    let what = format!("conda_execute ({})", classification.command.join(" "));
    let mut limits = limits;
    limits.timeout = call.timeout;
    let approval = policy
        .needs_approval(&classification)
        .then_some(crate::call::approve::question::Approval { preview: None });
    let mut plan = Plan::conda(what, call.argv, limits, classification);
    plan.approval = approval;
    plan.cwd = call.cwd;
    plan.stdin = call.stdin;
    plan.replacement = replacement;
    plan.postcondition = postcondition;
    plan.checks = Some(checks);
    Ok(plan)
}
