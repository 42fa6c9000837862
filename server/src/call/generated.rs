//! Generated tools (one per conda command): validate the arguments against
//! the tool's full input schema, compile them into conda's argv, authorize
//! the argv, plan it on the exec lane.

use serde_json::Value;

use crate::catalog::Catalog;
use crate::mcp::Limits;
use crate::mcp::tools::GeneratedTool;
use crate::policy::Policy;

use super::outcome::Outcome;
use super::plan::{self, Check, Plan};

/// The plan of a call to `tool` with `args`.
///
/// Errors: [`Outcome::InvalidArguments`] (schema violations, or a value the
/// compiler cannot put on conda's command line), [`Outcome::Refused`].
pub fn plan(
    catalog: &Catalog,
    policy: &Policy,
    limits: Limits,
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
    let argv = crate::compile::compile(catalog, tool.cmd, args.as_object().unwrap_or(&empty))
        .map_err(|e| Outcome::InvalidArguments {
            tool: tool.name.clone(),
            errors: vec![e],
        })?;
    // A kind that amends the compiled argv does it here, before the policy
    // sees it.
    let classification = plan::authorize(catalog, policy, &tool.name, &argv, Check::Typed)?;
    let what = catalog.commands[tool.cmd].display_path();
    Ok(Plan::conda(what, argv, limits, classification))
}
