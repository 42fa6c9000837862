//! `--tool-mode compact` (see `tools::compact` for the tools): `conda_commands`
//! and `conda_describe` are answered from the catalog without running
//! anything; `conda_call` resolves its command to the generated tool and
//! plans it with [`super::generated::plan`] — the very validation,
//! compilation and authorization the typed tool goes through — with the
//! JSON paths of argument errors moved under `/arguments`.

use serde_json::Value;

use crate::catalog::Catalog;
use crate::policy::Policy;
use crate::schema::Profile;
use crate::tools::ToolSet;
use crate::tools::compact::{self, CompactTool};

use super::Plan;
use crate::call::shape::outcome::Outcome;

/// What the compact tools answer from: the catalog, the tool set and the
/// schema profile `conda_describe` answers in.
#[derive(Debug, Clone, Copy)]
pub struct CompactSurface<'a> {
    /// The catalog of the target.
    pub catalog: &'a Catalog,
    /// The tools (`conda_call` resolves to one of its generated tools).
    pub tools: &'a ToolSet,
    /// `--schema-profile`.
    pub profile: Profile,
}

/// The plan of a call to one of the compact tools, or its answer.
///
/// Errors: [`Outcome::Answered`] for `conda_commands` and `conda_describe`;
/// [`Outcome::InvalidArguments`] for an unknown command (at `/command`) or
/// arguments the command's schema refuses (under `/arguments`);
/// [`Outcome::Refused`] as for the typed tool.
pub fn plan(
    surface: CompactSurface<'_>,
    policy: &Policy,
    settings: super::typed::TypedSettings,
    which: CompactTool,
    args: &Value,
) -> Result<Plan, Outcome> {
    let CompactSurface {
        catalog,
        tools,
        profile,
    } = surface;
    let name = match which {
        CompactTool::Commands => {
            compact::no_arguments(args).map_err(|e| Outcome::InvalidArguments {
                tool: compact::COMMANDS_TOOL.to_owned(),
                errors: vec![e],
            })?;
            return Err(Outcome::Answered {
                tool: compact::COMMANDS_TOOL.to_owned(),
                value: compact::commands(catalog, tools),
            });
        }
        CompactTool::Describe => compact::DESCRIBE_TOOL,
        CompactTool::Call => compact::CALL_TOOL,
    };
    let request =
        compact::request(catalog, tools, args).map_err(|e| Outcome::InvalidArguments {
            tool: name.to_owned(),
            errors: vec![e],
        })?;
    if which == CompactTool::Describe {
        return Err(Outcome::Answered {
            tool: name.to_owned(),
            value: compact::describe(catalog, tools, request.tool, profile),
        });
    }
    super::generated::plan(
        catalog,
        policy,
        settings,
        &tools.generated[request.tool],
        &request.arguments,
    )
    .map_err(|outcome| match outcome {
        Outcome::InvalidArguments { tool, errors } => Outcome::InvalidArguments {
            tool,
            errors: errors.into_iter().map(compact::under_arguments).collect(),
        },
        other => other,
    })
}
