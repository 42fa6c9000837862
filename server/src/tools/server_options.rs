//! The server's own additions to the typed tools, shared by the tool set
//! that lists them ([`crate::tools`]) and the call pipeline that reads them
//! back (`crate::call::plan::typed`, `crate::call::plan::existing_env`): `conda_run`'s server
//! options (`stdin`, `timeout_seconds`), `replace_existing` of the tools
//! that create an environment, which commands carry them, and the
//! sentences a tool description adds for confirmation by dry run and for
//! `--approve-writes`. Facts of the catalog only: nothing here plans or
//! runs a call.

use crate::policy::commands::{self, Removes};
use serde_json::Value;

use crate::catalog::{ArgKind, Command, PropertySource};

/// The server argument of `conda_create`, `conda_env_create` (and
/// `conda_call` for them) and `conda_execute`.
pub const REPLACE_EXISTING: &str = "replace_existing";

/// Its description in the input schemas (one sentence).
pub const REPLACE_EXISTING_DESCRIPTION: &str =
    "Server option: true replaces an existing environment (its whole prefix); else refused.";

/// The server argument of the tools that remove a whole environment
/// (`conda_remove`, `conda_env_remove`, `conda_call` for them) and
/// `conda_execute`.
pub const REMOVE_UNMANAGED: &str = "remove_unmanaged_files";

/// Its description in the input schemas (one sentence).
pub const REMOVE_UNMANAGED_DESCRIPTION: &str =
    "Server option: true also deletes files no package installed; else refused.";

/// The command path (without `conda`) of `conda run`, whose tool carries
/// the server options [`STDIN_PROPERTY`] and [`TIMEOUT_PROPERTY`].
pub const RUN_PATH: &[&str] = &["run"];
/// `conda_run`'s server option: text for the program's stdin.
pub const STDIN_PROPERTY: &str = "stdin";
/// `conda_run`'s server option: the call's time limit in seconds.
pub const TIMEOUT_PROPERTY: &str = "timeout_seconds";

/// The description of the `yes` property of a tool whose mutations run
/// as a dry run without `yes: true` (`crate::call::plan::typed`, step 5).
pub const CONFIRM_YES_DESCRIPTION: &str = "Apply the change (else a dry run).";

/// The sentence tool descriptions carry for a tool that may change
/// something, with `--approve-writes`.
pub const APPROVE_SENTENCE: &str = "Each change needs your approval: the person is shown conda's \
     plan through the host and asked before anything is applied (yes: true does not skip the \
     question).";

/// The property of `command` for the store-true action with this dest.
pub fn flag_property<'a>(command: &'a Command, dest: &str) -> Option<&'a str> {
    command.properties.iter().find_map(|p| match p.source {
        PropertySource::Action { arg }
            if command.arguments[arg].dest == dest
                && command.arguments[arg].kind == ArgKind::StoreTrue =>
        {
            Some(p.name.as_str())
        }
        _ => None,
    })
}

/// The property of `command` for the first action with this dest.
pub fn dest_property<'a>(command: &'a Command, dest: &str) -> Option<&'a str> {
    command.properties.iter().find_map(|p| match p.source {
        PropertySource::Action { arg } if command.arguments[arg].dest == dest => {
            Some(p.name.as_str())
        }
        _ => None,
    })
}

/// Whether the command creates an environment, so its tool carries the
/// server option [`REPLACE_EXISTING`] (`create`, `env create`).
pub fn creates_environment(command: &Command) -> bool {
    commands::holds(command.subpath(), |c| c.creates)
}

/// Whether the command can remove a whole environment, so its tool carries
/// the server option [`REMOVE_UNMANAGED`] (`remove`, `env remove`).
pub fn removes_environment(command: &Command) -> bool {
    commands::holds(command.subpath(), |c| c.removes != Removes::Never)
}

/// Whether `command` has both conda's `yes` and `dry_run` options, so a
/// mutation without `yes: true` can run as a dry run (the property names).
pub fn confirm_properties(command: &Command) -> Option<(&str, &str)> {
    Some((
        flag_property(command, "yes")?,
        flag_property(command, "dry_run")?,
    ))
}

/// Whether the command is `conda run` (see [`RUN_PATH`]).
pub fn is_run(command: &Command) -> bool {
    command.subpath() == RUN_PATH
}

/// The JSON Schema properties of `conda_run`'s server options (added to
/// its input schema in both profiles).
pub fn server_option_schemas() -> [(&'static str, Value); 2] {
    [
        (
            STDIN_PROPERTY,
            serde_json::json!({
                "type": "string",
                "description": "Server option: text for the program's stdin (at most the server's stdin limit in bytes). Default: none."
            }),
        ),
        (
            TIMEOUT_PROPERTY,
            serde_json::json!({
                "type": "number",
                "minimum": 0,
                "description": "Server option: time limit in seconds (> 0), capped to the server's --timeout."
            }),
        ),
    ]
}
