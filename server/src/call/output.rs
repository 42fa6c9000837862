//! The tool output of a conda execution (`structuredContent` of generated
//! tools and `conda_execute`, and their `outputSchema`): the worker's
//! [`ExecutionResult`] plus the fields only the server knows.
//!
//! New server-only fields go here, never into the worker's result: the
//! worker reports what the process did, the server adds what it decided.

use schemars::JsonSchema;
use serde::Serialize;

use conda_mcp_shared::ExecutionResult;

/// What a generated tool or `conda_execute` returns: the execution's fields
/// (flattened, so the JSON shape is one object) and the server's own.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallOutput {
    /// What the process did, as the worker reported it.
    #[serde(flatten)]
    pub execution: ExecutionResult,
    /// True once a successful mutation changed conda or its plugins (the
    /// discovery fingerprint): by default the tools are fixed at startup, so
    /// the server must be restarted to see the change, and once true it
    /// stays true. With `--live-tools` it is true until the rebuilt tool
    /// list has been served.
    pub restart_required: bool,
    /// The call changed nothing: it was a mutation of a command that has
    /// conda's `yes` option, called without `yes: true`, so the server ran
    /// it as a dry run (conda's plan is in the output). Repeating the call
    /// with `yes: true` applies it.
    pub confirmation_required: bool,
    /// How many credentials (a URL's `user:password@`, a conda `/t/<token>/`)
    /// the server masked in `stdout`, `stderr` and `parsed_json` before
    /// sending them; absent when none were (and always with
    /// `--no-mask-credentials`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub credentials_masked: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl CallOutput {
    /// The output of `execution` before the server added anything.
    pub fn new(execution: ExecutionResult) -> Self {
        CallOutput {
            execution,
            restart_required: false,
            confirmation_required: false,
            credentials_masked: 0,
        }
    }

    /// Whether the MCP tool result carrying this output sets `isError`: a
    /// non-zero (or missing) exit code, a timeout or a cancellation.
    pub fn is_error(&self) -> bool {
        self.execution.is_error()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_output_schema_is_one_flat_object() {
        let schema = serde_json::to_value(schemars::schema_for!(CallOutput)).expect("json");
        let props = schema["properties"].as_object().expect("properties");
        for field in [
            "exit_code",
            "stdout",
            "parsed_json",
            "restart_required",
            "confirmation_required",
        ] {
            assert!(props.contains_key(field), "{field}: {schema}");
        }
    }
}
