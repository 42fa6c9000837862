//! Argument completion for the prompts (`completion/complete`): the values
//! that are known without running conda.
//!
//! * environments: `base` and every folder of conda's `envs_dirs` that is
//!   an environment (holds `conda-meta/`), as discovery reported them
//!   ([`crate::catalog::EnvironmentDirs`], which `crate::target` resolves
//!   names through);
//! * project files: the environment files under the server's working
//!   folder (two levels deep; hidden folders, `node_modules` and `target`
//!   skipped): `environment*.yml`/`.yaml`, `*requirements*.txt`,
//!   `pyproject.toml`, as paths relative to that folder;
//! * fixed choices: the values themselves.
//!
//! Each list keeps the values that start with what was typed, sorted, at
//! most [`MAX_VALUES`] (MCP's limit for one answer).

use std::path::Path;

use super::{ValueKind, find};
use crate::catalog::EnvironmentDirs;

/// Most values in one answer (MCP `CompletionInfo`'s limit).
pub const MAX_VALUES: usize = 100;

/// The values for `argument` of `prompt` starting with `typed`, and the
/// total before the cut at [`MAX_VALUES`]. Empty for an unknown prompt or
/// argument, or an argument whose values are not known (modules, specs).
pub fn complete(
    prompt: &str,
    argument: &str,
    typed: &str,
    dirs: &EnvironmentDirs,
    project: &Path,
) -> (Vec<String>, usize) {
    let Some(kind) = find(prompt)
        .and_then(|p| p.arguments.iter().find(|a| a.name == argument))
        .map(|a| a.kind)
    else {
        return (Vec::new(), 0);
    };
    let values = match kind {
        ValueKind::Environment => environment_names(dirs),
        ValueKind::ProjectFile => project_files(project),
        ValueKind::Choice(c) => c.iter().map(|s| (*s).to_owned()).collect(),
        ValueKind::Module | ValueKind::Specs => Vec::new(),
    };
    names_starting_with(values, typed)
}

/// `values` starting with `typed`, sorted and without repeats, and their
/// total before the cut at [`MAX_VALUES`].
pub fn names_starting_with(mut values: Vec<String>, typed: &str) -> (Vec<String>, usize) {
    values.retain(|v| v.starts_with(typed));
    values.sort();
    values.dedup();
    let total = values.len();
    values.truncate(MAX_VALUES);
    (values, total)
}

/// `base` (when the root prefix is known) and the environments in the
/// envs directories, by name.
pub fn environment_names(dirs: &EnvironmentDirs) -> Vec<String> {
    let mut out = Vec::new();
    if dirs.root_prefix.is_some() {
        out.push("base".to_owned());
    }
    for d in &dirs.envs_dirs {
        let Ok(entries) = std::fs::read_dir(d) else {
            continue;
        };
        for e in entries.flatten() {
            if e.path().join("conda-meta").is_dir()
                && let Some(name) = e.file_name().to_str()
            {
                out.push(name.to_owned());
            }
        }
    }
    out
}

/// Whether `name` is a file conda can build an environment from.
fn is_environment_file(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower == "pyproject.toml"
        || (lower.starts_with("environment")
            && (lower.ends_with(".yml") || lower.ends_with(".yaml")))
        || (lower.contains("requirements") && lower.ends_with(".txt"))
}

/// The environment files under `project`, two levels deep, relative and
/// `/`-separated.
pub fn project_files(project: &Path) -> Vec<String> {
    let mut out = Vec::new();
    walk(project, "", 0, &mut out);
    out
}

fn walk(dir: &Path, rel: &str, depth: usize, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let Some(name) = e.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let path = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            let skipped = name.starts_with('.') || name == "node_modules" || name == "target";
            if depth < 2 && !skipped {
                walk(&e.path(), &path, depth + 1, out);
            }
        } else if is_environment_file(&name) {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn environments_files_and_choices_complete() {
        let t = tempfile::tempdir().expect("tmp");
        let envs = t.path().join("envs");
        for n in ["ml", "mlops", "web"] {
            std::fs::create_dir_all(envs.join(n).join("conda-meta")).expect("mkdir");
        }
        std::fs::create_dir_all(envs.join("not-an-env")).expect("mkdir");
        let dirs = EnvironmentDirs {
            root_prefix: Some(t.path().to_path_buf()),
            envs_dirs: vec![envs, PathBuf::from("/nonexistent")],
        };
        let project = t.path().join("project");
        std::fs::create_dir_all(project.join("ci")).expect("mkdir");
        std::fs::create_dir_all(project.join(".git")).expect("mkdir");
        for f in [
            "environment.yml",
            "pyproject.toml",
            "ci/requirements-dev.txt",
            ".git/environment.yml",
            "README.md",
        ] {
            std::fs::write(project.join(f), "").expect("write");
        }
        let c = |p: &str, a: &str, typed: &str| complete(p, a, typed, &dirs, &project).0;
        assert_eq!(c("diagnose_import", "environment", "ml"), ["ml", "mlops"]);
        assert_eq!(
            c("update_environment", "environment", ""),
            ["base", "ml", "mlops", "web"]
        );
        assert_eq!(
            c("setup_environment", "file", ""),
            [
                "ci/requirements-dev.txt",
                "environment.yml",
                "pyproject.toml"
            ]
        );
        assert_eq!(c("reproduce_environment", "format", "ex"), ["explicit"]);
        assert!(c("diagnose_import", "module", "n").is_empty());
        assert!(c("no_such_prompt", "environment", "").is_empty());
    }
}
