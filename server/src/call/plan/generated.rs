//! Generated tools (one per conda command): validate the arguments against
//! the tool's full input schema, prepare the typed call (compile, amend,
//! authorize; [`super::typed`]), plan it on the exec lane.

use serde_json::Value;

use crate::catalog::Catalog;
use crate::policy::Policy;
use crate::tools::GeneratedTool;

use super::Plan;
use super::typed::Early;
use crate::call::shape::outcome::Outcome;

/// The plan of a call to `tool` with `args`: validated against the full
/// schema, then prepared by [`super::typed::prepare`] (absolute paths,
/// `conda_run`'s server options and `--no-capture-output`, run-time
/// required options, confirmation by dry run, the prediction of
/// existing environments, the policy check), with the checks of its success
/// ([`crate::call::run::postcondition`]).
///
/// Errors: [`Outcome::InvalidArguments`] (schema violations, relative
/// paths, unmet run-time rules, or a value the compiler cannot put on
/// conda's command line), [`Outcome::Refused`],
/// [`Outcome::EnvironmentExists`].
pub fn plan(
    catalog: &Catalog,
    policy: &Policy,
    settings: super::typed::TypedSettings,
    tool: &GeneratedTool,
    args: &Value,
) -> Result<Plan, Outcome> {
    if let Err(errors) = tool.validator.validate(args) {
        return Err(Outcome::InvalidArguments {
            tool: tool.name.clone(),
            errors,
        });
    }
    let empty = serde_json::Map::new();
    let typed = super::typed::prepare(
        catalog,
        policy,
        tool.cmd,
        args.as_object().unwrap_or(&empty),
        settings,
    )
    .map_err(|early| match early {
        Early::Invalid(errors) => Outcome::InvalidArguments {
            tool: tool.name.clone(),
            errors,
        },
        Early::Refused(refusal) => {
            tracing::info!(tool = %tool.name, "refused: {refusal}");
            Outcome::Refused(refusal)
        }
        Early::Exists(env) => {
            tracing::info!(tool = %tool.name, "refused: an environment exists at the target");
            Outcome::EnvironmentExists(env)
        }
    })?;
    let what = catalog.commands[tool.cmd].display_path();
    let mut limits = settings.limits;
    if let Some(t) = typed.timeout {
        limits.timeout = t;
    }
    let mut plan = Plan::conda(what, typed.argv, limits, typed.classification);
    plan.stdin = typed.stdin;
    plan.confirmation_required = typed.confirmation_required;
    plan.approval = typed.approval;
    plan.apply_requires = typed.apply_requires;
    plan.replacement = typed.replacement;
    let cwd = std::path::Path::new(conda_mcp_shared::env::FIXED_CWD);
    plan.postcondition = crate::call::run::postcondition::of(catalog, &plan.argv, cwd);
    let allow = super::checks::Allowances {
        replaces: plan.replacement.as_ref(),
        remove_unmanaged_files: typed.remove_unmanaged_files,
    };
    if let Some(c) = &plan.classification {
        let resolved = crate::argparse::resolve(catalog, &plan.argv);
        plan.checks = Some(super::checks::of(catalog, &resolved, c, cwd, allow));
    }
    if let Some(preview) = plan.approval.as_mut().and_then(|a| a.preview.as_mut()) {
        let resolved = crate::argparse::resolve(catalog, &preview.argv);
        // The preview of a replacement is solved for a fresh prefix.
        let allow = super::checks::Allowances {
            replaces: None,
            ..allow
        };
        preview.checks = super::checks::of(catalog, &resolved, &preview.classification, cwd, allow);
    }
    Ok(plan)
}
