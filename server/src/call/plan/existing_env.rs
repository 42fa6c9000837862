//! The server's prediction for existing environments: a call that creates an environment
//! (`create`, `env create`; typed, compact `conda_call` or raw
//! `conda_execute`) whose target already holds one is refused before conda
//! runs, unless it sets the server argument `replace_existing: true`.
//!
//! Why: conda's own guard is a prompt ("Remove existing environment?"),
//! which `--json` skips and `env create` answers yes by default; repeating
//! a confirmation dry run with `yes: true` would remove the environment and
//! every file under its prefix.
//!
//! With `replace_existing: true`:
//! * a dry run (the confirmation preview, or `dry_run: true`) runs against
//!   a fresh, non-existing prefix (conda refuses `create --dry-run` on an
//!   existing environment, and once it has removed the old one it solves
//!   for an empty prefix, which is what this plan shows); the result's
//!   `replaced_environment` says what would be removed and linked;
//! * an applied call runs as given: conda removes the prefix and creates
//!   the environment with the previewed request (the argv differs from the
//!   preview's only in the prefix and `--yes` for `--dry-run`).
//!
//! `conda_execute` is never amended, so its dry runs cannot preview a
//! replacement (the typed tools do); it may apply one.
//!
//! The target is determined by [`crate::target`]; what counts as an
//! existing environment is a `conda-meta/` folder.

use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::argparse::Resolved;
use crate::catalog::Catalog;
use crate::target::{self, Environment};

/// A replacement of an existing environment, previewed or applied (the
/// result's `replaced_environment`).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Replacement {
    /// The prefix of the environment that is (or would be) removed.
    pub prefix: String,
    /// Its package count (`conda-meta/*.json`) before the call.
    pub packages: u64,
    /// True when the call applied the replacement; false for a preview.
    pub applied: bool,
    /// Preview only: the fresh, non-existing prefix the plan was solved
    /// for (conda refuses a dry run on an existing environment).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_for: Option<String>,
    /// Preview only: the names of the packages conda's plan links
    /// (`actions.LINK` of its `--json` document), when it printed one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub linked: Vec<String>,
}

impl Replacement {
    /// A replacement of `env`; `planned_for` is the preview's prefix.
    pub fn of(env: &Environment, planned_for: Option<&Path>) -> Self {
        Replacement {
            prefix: env.prefix.display().to_string(),
            packages: env.packages as u64,
            applied: planned_for.is_none(),
            planned_for: planned_for.map(|p| p.display().to_string()),
            linked: Vec::new(),
        }
    }

    /// Fills `linked` from conda's `--json` plan document.
    pub fn read_plan(&mut self, document: Option<&Value>) {
        if self.applied {
            return;
        }
        let links = document
            .and_then(|d| d.pointer("/actions/LINK"))
            .and_then(Value::as_array);
        self.linked = links
            .into_iter()
            .flatten()
            .filter_map(|l| l.get("name").and_then(Value::as_str).map(str::to_owned))
            .collect();
    }

    /// The sentence a result's summary starts with (`failed`: the call
    /// ended as an error).
    pub fn sentence(&self, failed: bool) -> String {
        let n = self.packages;
        if self.applied && failed {
            return format!(
                "This call was to replace the environment at {} ({n} package(s) before) and failed: conda may have removed the old environment before failing; check the prefix.",
                self.prefix
            );
        }
        if self.applied {
            return format!(
                "Replaced the environment at {} ({n} package(s) before): conda removed it, everything under the prefix included, and created it anew.",
                self.prefix
            );
        }
        let links = if self.linked.is_empty() {
            "what conda's plan below links".to_owned()
        } else {
            self.linked.join(", ")
        };
        format!(
            "Nothing was changed. Applying this call (replace_existing: true and yes: true) removes the environment at {} with {n} package(s), every file under that prefix included, and creates it anew, linking: {links}. conda refuses a dry run on an existing environment, so this plan was solved for an empty prefix at {} (nothing was created there), which is what conda solves for once the old environment is removed.",
            self.prefix,
            self.planned_for.as_deref().unwrap_or("a fresh path")
        )
    }
}

/// What the prediction decided for a create (or a rename's destination).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Not a create, or nothing exists at its target: run as planned.
    Clear,
    /// An environment exists and `replace_existing` is not set (or it is
    /// the root prefix, which is never replaced): refuse.
    Exists(Environment),
    /// An environment exists and the call may replace it.
    Replaces(Environment),
}

/// The prediction's decision for a resolved argv that conda runs in `cwd`.
pub fn decide(
    catalog: &Catalog,
    resolved: &Resolved,
    cwd: &Path,
    replace_existing: bool,
) -> Decision {
    let Some(spec) = target::create_target(catalog, resolved, cwd) else {
        return Decision::Clear;
    };
    let Some(mut env) = spec
        .prefix(&catalog.environments)
        .and_then(|p| target::environment_at(&p))
    else {
        return Decision::Clear;
    };
    // conda refuses to replace its root prefix ("The target prefix is the
    // base prefix"): no preview can say otherwise.
    env.root = catalog.environments.is_root(&env.prefix);
    if replace_existing && !env.root {
        Decision::Replaces(env)
    } else {
        Decision::Exists(env)
    }
}

/// A fresh prefix path for the preview of replacing `prefix`, as conda
/// makes one for a dry run without a target (`mktemp()` +
/// `unused-env-name`): under the temporary directory, never created.
pub fn preview_prefix(prefix: &Path) -> PathBuf {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let base = prefix
        .file_name()
        .map_or_else(|| "env".into(), |n| n.to_string_lossy().into_owned());
    let mut n = 0u32;
    loop {
        let dir = std::env::temp_dir().join(format!(
            "conda-mcp-preview-{}-{nanos}-{n}",
            std::process::id()
        ));
        if !dir.exists() {
            return dir.join(base);
        }
        n += 1;
    }
}
