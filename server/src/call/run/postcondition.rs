//! Successes that did not happen: after a `create`, `env create`,
//! `install`, `update` or `remove` that exits 0, the server checks what it
//! cheaply can, and a failed check turns the result into an error
//! (`postcondition_failed`, with the facts in `details`):
//!
//! * a create (not a dry run, not `--download-only`): the target prefix
//!   holds `conda-meta/history`, the file conda writes into every
//!   environment it creates and calls an environment by
//!   (`PrefixData.is_environment`);
//! * `remove --all` (not `--keep-env`): the prefix is gone;
//! * with `--json`: conda's document says `success: true` where it carries
//!   a `success` key.
//!
//! conda's issue tracker has reports of creates that exit 0 and leave no
//! environment (parallel creates on an empty package cache).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::argparse::{self, Resolved};
use crate::catalog::Catalog;
use crate::catalog::EnvironmentDirs;
use crate::target::{self, TargetSpec};

use crate::call::shape::error::{ErrorCode, ToolError};
use crate::call::shape::output::CallOutput;

/// What must hold after a successful call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// The environment was created: `conda-meta/history` in its prefix.
    Created(TargetSpec),
    /// The environment at this prefix was removed.
    Removed(PathBuf),
}

/// The checks of one call, decided with its plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Postcondition {
    /// What the file system must show.
    pub expect: Option<Expect>,
    /// `--json` was given: conda's document must not say `success: false`.
    pub json: bool,
    /// Where named environments are (to find a created `--name`).
    pub dirs: EnvironmentDirs,
}

/// The checks for `argv` run in `cwd`, or `None` for a call whose success
/// is not checked (another command, a dry run, `--download-only`).
pub fn of(catalog: &Catalog, argv: &[String], cwd: &Path) -> Option<Postcondition> {
    let resolved = argparse::resolve(catalog, argv);
    of_resolved(catalog, &resolved, cwd)
}

/// [`of`] on an argv already resolved.
pub fn of_resolved(catalog: &Catalog, resolved: &Resolved, cwd: &Path) -> Option<Postcondition> {
    let path = target::subpath(catalog, resolved);
    if !crate::policy::commands::holds(&path, |c| c.checked)
        || resolved.has(catalog, "dry_run")
        || resolved.has(catalog, "download_only")
    {
        return None;
    }
    let expect = if target::creates(catalog, resolved) {
        target::create_target(catalog, resolved, cwd).map(Expect::Created)
    } else if crate::policy::commands::removes_environment(&path, |dest| {
        resolved.has(catalog, dest)
    }) && !resolved.has(catalog, "keep_env")
    {
        target::given(catalog, resolved, cwd)
            .and_then(|t| t.prefix(&catalog.environments))
            .filter(|p| p.is_dir())
            .map(Expect::Removed)
    } else {
        None
    };
    Some(Postcondition {
        expect,
        json: resolved.has(catalog, "json"),
        dirs: catalog.environments.clone(),
    })
}

impl Postcondition {
    /// The error of a call that exited 0 but whose effect is not there;
    /// `None` when every check holds. `resolved`: the prefix conda itself
    /// resolved (the in-process report, `crate::call::plan::checks`), which the checks
    /// look at instead of the server's prediction when it is known.
    pub fn failure(&self, output: &CallOutput, resolved: Option<&Path>) -> Option<ToolError> {
        match &self.expect {
            Some(Expect::Created(spec)) => {
                let prefix = resolved
                    .map(Path::to_path_buf)
                    .or_else(|| spec.prefix(&self.dirs));
                let ok = prefix.as_deref().is_some_and(target::has_history);
                if !ok {
                    let mut e = ToolError::new(
                        ErrorCode::PostconditionFailed,
                        "conda exited 0, but the environment it was to create has no conda-meta/history: it was not created (or not completely); check it before relying on it, and repeat the call",
                    )
                    .with("check", "created");
                    if let Some(p) = prefix {
                        e = e.with("prefix", p.display().to_string());
                    }
                    return Some(e);
                }
            }
            Some(Expect::Removed(predicted)) if resolved.unwrap_or(predicted).exists() => {
                let prefix = resolved.unwrap_or(predicted);
                return Some(
                    ToolError::new(
                        ErrorCode::PostconditionFailed,
                        "conda exited 0, but the environment it was to remove is still there",
                    )
                    .with("check", "removed")
                    .with("prefix", prefix.display().to_string()),
                );
            }
            Some(Expect::Removed(_)) | None => {}
        }
        if self.json
            && let Some(success) = output.parsed_json.as_ref().and_then(|d| d.get("success"))
            && success != &Value::Bool(true)
        {
            return Some(
                ToolError::new(
                    ErrorCode::PostconditionFailed,
                    "conda exited 0, but its JSON document does not say success: true",
                )
                .with("check", "success")
                .with("success", success.clone()),
            );
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use conda_mcp_shared::ExecutionResult;

    fn catalog() -> Catalog {
        crate::catalog::build(&crate::dump::recorded_conda()).expect("catalog")
    }

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn which_calls_are_checked_and_for_what() {
        let c = catalog();
        let cwd = Path::new("/work");
        let of = |s: &str| of(&c, &argv(s), cwd);
        let created = of("create -p /x/env numpy --json --yes").expect("checked");
        assert_eq!(
            created.expect,
            Some(Expect::Created(TargetSpec::Prefix("/x/env".into())))
        );
        assert!(created.json);
        // conda's spellings resolve as argparse does; relative to cwd.
        assert_eq!(
            of("create --prefix=rel numpy").and_then(|p| p.expect),
            Some(Expect::Created(TargetSpec::Prefix("/work/rel".into())))
        );
        assert_eq!(
            of("env create -n lab").and_then(|p| p.expect),
            Some(Expect::Created(TargetSpec::Name("lab".into())))
        );
        for unchecked in [
            "create -p /x/env numpy --dry-run --json",
            "create -p /x/env numpy -dy",
            "install -n e numpy --download-only",
            "list --json",
            "env export -n e",
        ] {
            assert_eq!(of(unchecked), None, "{unchecked}");
        }
        let install = of("install -n e numpy --json --yes").expect("checked");
        assert_eq!(install.expect, None);
        assert!(install.json);
        // remove --all of a prefix that is not there: nothing to check.
        assert_eq!(
            of("remove --all -p /nonexistent/x --json").and_then(|p| p.expect),
            None
        );
        let t = tempfile::tempdir().expect("tmp");
        let line = format!("remove --all -p {} --json", t.path().display());
        assert_eq!(
            of(&line).and_then(|p| p.expect),
            Some(Expect::Removed(t.path().to_path_buf()))
        );
        assert_eq!(
            of(&format!("{line} --keep-env")).and_then(|p| p.expect),
            None
        );
    }

    #[test]
    fn a_missing_history_or_success_false_is_a_failure() {
        let t = tempfile::tempdir().expect("tmp");
        let prefix = t.path().join("env");
        let pc = Postcondition {
            expect: Some(Expect::Created(TargetSpec::Prefix(prefix.clone()))),
            json: true,
            dirs: EnvironmentDirs::default(),
        };
        let mut out = CallOutput::new(ExecutionResult::nothing_ran());
        let e = pc.failure(&out, None).expect("not created");
        assert_eq!(e.code, ErrorCode::PostconditionFailed);
        assert!(!e.retryable);
        assert_eq!(e.details["check"], "created");
        std::fs::create_dir_all(prefix.join("conda-meta")).expect("mkdir");
        std::fs::write(prefix.join("conda-meta/history"), "").expect("history");
        assert_eq!(pc.failure(&out, None), None);
        // conda's own prefix decides: created where the server predicted,
        // but conda resolved another one, where nothing is.
        let elsewhere = t.path().join("elsewhere");
        let e = pc
            .failure(&out, Some(&elsewhere))
            .expect("not created where conda resolved");
        assert_eq!(e.details["prefix"], elsewhere.display().to_string());
        out.parsed_json = Some(serde_json::json!({"success": false}));
        assert_eq!(
            pc.failure(&out, None).map(|e| e.details["check"].clone()),
            Some(Value::from("success"))
        );
        out.parsed_json = Some(serde_json::json!({"success": true}));
        assert_eq!(pc.failure(&out, None), None);
    }
}
