//! The tool output of a conda execution (`structuredContent` of generated
//! tools and `conda_execute`, and their `outputSchema`): the worker's
//! [`ExecutionResult`] plus the fields only the server knows.
//!
//! New server-only fields go here, never into the worker's result: the
//! worker reports what the process did, the server adds what it decided.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use conda_mcp_shared::ExecutionResult;

use super::budget::Cut;
use super::error::ToolError;

fn is_false(b: &bool) -> bool {
    !*b
}

/// What a generated tool or `conda_execute` returns: the execution's fields
/// (flattened, so the JSON shape is one object) and the server's own.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallOutput {
    /// What the process did, as the worker reported it.
    #[serde(flatten)]
    pub execution: ExecutionResult,
    /// stdout as JSON: in the default result mode when stdout is exactly one
    /// complete JSON document and was not truncated; in lean mode the last
    /// complete top-level JSON document of stdout (after progress records
    /// or a banner). Absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parsed_json: Option<Value>,
    /// Why stdout gave no `parsed_json` although it looks like JSON (one
    /// line, never its content): text before the document, progress
    /// records, several documents, an incomplete document, a syntax error,
    /// or a document too large for the result budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parsed_json_error: Option<String>,
    /// Lean mode: stdout held the document now in `parsed_json`, so it is
    /// not repeated; `stdout` keeps only the text around it (usually
    /// nothing). Absent when false.
    #[serde(default, skip_serializing_if = "is_false")]
    pub stdout_omitted: bool,
    /// True once a successful mutation changed conda or its plugins (the
    /// discovery fingerprint): by default the tools are fixed at startup, so
    /// the server must be restarted to see the change, and once true it
    /// stays true. With `--live-tools` it is true until the rebuilt tool
    /// list has been served.
    pub restart_required: bool,
    /// The call changed nothing: it was a mutation of a command that has
    /// conda's `yes` option, called without `yes: true`, so the server ran
    /// it as a dry run, and conda's plan (in the output) awaits
    /// confirmation; when `apply_requires` is absent, repeating the call
    /// with `yes: true` applies it. False when that dry run failed: a
    /// failed plan cannot be confirmed (the result is an error).
    pub confirmation_required: bool,
    /// The server ran the call as a dry run because it did not set
    /// `yes: true` (whether or not conda's plan succeeded): what the
    /// summary line says first. Not part of the output.
    #[serde(skip)]
    pub dry_run_for_confirmation: bool,
    /// With `confirmation_required`: the startup options this server lacks
    /// to apply the change (`--allow-write`); the call with `yes: true` is
    /// refused until the server is restarted with them. Absent when the
    /// change can be applied here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub apply_requires: Vec<String>,
    /// How many credentials (a URL's `user:password@`, a conda `/t/<token>/`)
    /// the server masked in `stdout`, `stderr` and `parsed_json` before
    /// sending them; absent when none were (and always with
    /// `--no-mask-credentials`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub credentials_masked: u32,
    /// Why the call failed, on every result with `isError` (and only
    /// there): a stable `code`, a `message`, whether it is `retryable`, and
    /// `details` by code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
    /// The call replaced (or, as a preview, would replace) an existing
    /// environment: its prefix and package count, and for a preview the
    /// fresh prefix the plan was solved for and the packages it links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced_environment: Option<crate::call::plan::existing_env::Replacement>,
    /// Files under the environment's prefix that no package installed
    /// (conda's own process listed them before a `remove --all` or `env
    /// remove`): a preview names what the removal would delete besides the
    /// packages; an apply with `remove_unmanaged_files: true` what it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unmanaged_files: Option<UnmanagedFiles>,
    /// Present when the result was cut to fit `--max-result-bytes`: what was
    /// kept of each field, the totals, and how to narrow the call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut: Option<Cut>,
}

/// Files no package installed under a prefix (the result's
/// `unmanaged_files`, and the details of `unmanaged_files_present`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UnmanagedFiles {
    /// The environment's prefix, as conda resolved it.
    pub prefix: String,
    /// How many files (and symbolic links).
    pub count: u64,
    /// Their sizes summed, in bytes.
    pub bytes: u64,
    /// The first few, relative to the prefix, in byte order.
    pub first: Vec<String>,
    /// True when the call removed them (an apply that succeeded); false
    /// for a preview.
    pub removed: bool,
}

impl UnmanagedFiles {
    /// The guard's list for `prefix`.
    pub fn of(prefix: &str, files: &conda_mcp_shared::guard::UnmanagedFiles) -> Self {
        UnmanagedFiles {
            prefix: prefix.to_owned(),
            count: files.count,
            bytes: files.bytes,
            first: files.first.clone(),
            removed: false,
        }
    }

    /// "3 file(s), 120 bytes, that no package installed (notes.txt, …)".
    pub fn phrase(&self) -> String {
        let mut s = format!(
            "{} file(s), {} bytes, that no package installed",
            self.count, self.bytes
        );
        if !self.first.is_empty() {
            s.push_str(&format!(" ({}", self.first.join(", ")));
            if (self.first.len() as u64) < self.count {
                s.push_str(", …");
            }
            s.push(')');
        }
        s
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl CallOutput {
    /// The output of `execution` before the server added anything.
    pub fn new(execution: ExecutionResult) -> Self {
        CallOutput {
            execution,
            parsed_json: None,
            parsed_json_error: None,
            stdout_omitted: false,
            restart_required: false,
            confirmation_required: false,
            dry_run_for_confirmation: false,
            apply_requires: Vec::new(),
            credentials_masked: 0,
            error: None,
            replaced_environment: None,
            unmanaged_files: None,
            cut: None,
        }
    }

    /// The output of a call that ran nothing (invalid arguments, refused,
    /// not run): no exit code, no output, `error` says why.
    pub fn nothing_ran(error: ToolError) -> Self {
        let mut out = Self::new(ExecutionResult::nothing_ran());
        out.error = Some(error);
        out
    }

    /// Whether the MCP tool result carrying this output sets `isError`: a
    /// non-zero (or missing) exit code, a timeout or a cancellation, or a
    /// typed error the server found in a call that exited 0
    /// (`postcondition_failed`).
    pub fn is_error(&self) -> bool {
        self.execution.is_error() || self.error.is_some()
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
            "parsed_json_error",
            "restart_required",
            "confirmation_required",
            "error",
            "cut",
            "stopped_by",
        ] {
            assert!(props.contains_key(field), "{field}: {schema}");
        }
    }
}
