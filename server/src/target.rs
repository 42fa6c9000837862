//! Which environment a conda call targets, determined the way conda does,
//! and what is there now: the facts behind the prediction of existing
//! environments (`replace_existing`, [`crate::call::plan::existing_env`]) and the
//! postcondition checks ([`crate::call::run::postcondition`]).
//!
//! conda's rules (`conda/base/context.py` `determine_target_prefix`,
//! `conda/core/prefix_data.py` `PrefixData.from_name`,
//! `conda/cli/main_create.py`):
//!
//! * `--prefix P`: `P` (`~` expanded; a relative path is relative to conda's
//!   working directory);
//! * `--name N`: `base` and `root` are the root prefix; otherwise the first
//!   of conda's envs directories (`context.envs_dirs`, reported by the
//!   discovery helper) that holds a folder `N`; otherwise the new
//!   environment goes into the first writable envs directory, where nothing
//!   named `N` exists yet;
//! * neither, for `create --file F` and `env create --file F` with exactly
//!   one file: the file's `name:` (preferred) or `prefix:`
//!   (`get_name_prefix_from_env_file`). `env create` reads
//!   `environment.yml` in conda's working directory when no file is given.
//!
//! What is there: conda calls a prefix with `conda-meta/history` an
//! environment; the guard is stricter and counts any prefix with a
//! `conda-meta/` folder, its package count being the number of
//! `conda-meta/*.json` records.

use std::path::{Path, PathBuf};

use crate::argparse::Resolved;
use crate::catalog::Catalog;
use crate::catalog::EnvironmentDirs;

/// The command path of `conda rename`, whose `--yes` removes an existing
/// environment at its destination.
pub const RENAME_PATH: &[&str] = &["rename"];

/// How a call names its target environment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetSpec {
    /// A prefix path (absolute).
    Prefix(PathBuf),
    /// An environment name, looked up in conda's envs directories.
    Name(String),
}

impl TargetSpec {
    /// The prefix it names now, if it can be told (a name that does not
    /// exist yet cannot).
    pub fn prefix(&self, dirs: &EnvironmentDirs) -> Option<PathBuf> {
        match self {
            TargetSpec::Prefix(p) => Some(p.clone()),
            TargetSpec::Name(n) => dirs.locate(n),
        }
    }
}

/// An environment found at a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    /// Its prefix.
    pub prefix: PathBuf,
    /// Number of `conda-meta/*.json` package records.
    pub packages: usize,
    /// It is conda's root prefix (the base environment), which conda
    /// never replaces.
    pub root: bool,
}

/// The environment at `prefix`, if it has a `conda-meta/` folder.
pub fn environment_at(prefix: &Path) -> Option<Environment> {
    let meta = prefix.join("conda-meta");
    let entries = std::fs::read_dir(&meta).ok()?;
    let packages = entries
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .count();
    Some(Environment {
        prefix: prefix.to_path_buf(),
        packages,
        root: false,
    })
}

/// Whether conda calls `prefix` an environment: `conda-meta/history` is a
/// file (`PrefixData.is_environment`).
pub fn has_history(prefix: &Path) -> bool {
    prefix.join("conda-meta").join("history").is_file()
}

/// `path` as conda's `expand`: `~` is the home directory, a relative path
/// is relative to `cwd` (conda's working directory).
fn expand(path: &str, cwd: &Path) -> PathBuf {
    let p = match path.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map_or_else(|| PathBuf::from(path), |h| PathBuf::from(h).join(rest)),
        None => PathBuf::from(path),
    };
    if p.is_absolute() { p } else { cwd.join(p) }
}

/// The command path (without `conda`) a resolved argv reached.
pub fn subpath(catalog: &Catalog, resolved: &Resolved) -> Vec<String> {
    catalog
        .commands
        .get(resolved.command())
        .map(|c| c.subpath().to_vec())
        .unwrap_or_default()
}

/// Whether the resolved argv creates an environment (the table's
/// `creates`, [`crate::policy::commands`]).
pub fn creates(catalog: &Catalog, resolved: &Resolved) -> bool {
    crate::policy::commands::holds(&subpath(catalog, resolved), |c| c.creates)
}

/// The `--prefix`/`--name` a resolved argv gives its command (`cwd`:
/// conda's working directory for a relative prefix).
pub fn given(catalog: &Catalog, resolved: &Resolved, cwd: &Path) -> Option<TargetSpec> {
    if let Some(p) = resolved.last_value(catalog, "prefix") {
        return Some(TargetSpec::Prefix(expand(p, cwd)));
    }
    resolved
        .last_value(catalog, "name")
        .map(|n| TargetSpec::Name(n.to_owned()))
}

/// The environment a create (`create`, `env create`) targets: `--prefix`,
/// `--name`, else the one environment file's `name:`/`prefix:`; for
/// `rename`, its `destination` (a path when it holds a `/`, else a name,
/// as conda's `main_rename.validate_destination` reads it), which conda
/// removes first with `--yes`. `None` when the argv is none of these or
/// conda could not tell either (conda then refuses the call itself).
pub fn create_target(catalog: &Catalog, resolved: &Resolved, cwd: &Path) -> Option<TargetSpec> {
    if subpath(catalog, resolved) == RENAME_PATH {
        return resolved
            .last_value(catalog, "destination")
            .map(|d| match d.contains('/') {
                true => TargetSpec::Prefix(expand(d, cwd)),
                false => TargetSpec::Name(d.to_owned()),
            });
    }
    if !creates(catalog, resolved) {
        return None;
    }
    if let Some(t) = given(catalog, resolved, cwd) {
        return Some(t);
    }
    let files: Vec<&String> = resolved
        .occurrences(catalog, "file")
        .into_iter()
        .flatten()
        .collect();
    let file = match files.as_slice() {
        [one] => expand(one, cwd),
        [] if subpath(catalog, resolved) == ["env", "create"] => cwd.join("environment.yml"),
        _ => return None,
    };
    let (name, prefix) = file_name_prefix(&file);
    match (name, prefix) {
        (Some(n), _) => Some(TargetSpec::Name(n)),
        (None, Some(p)) => Some(TargetSpec::Prefix(expand(&p, cwd))),
        (None, None) => None,
    }
}

/// The top-level `name:` and `prefix:` strings of an environment file (a
/// YAML mapping, as conda's environment.yml reader takes it); `(None,
/// None)` for a file that cannot be read or is not a YAML mapping.
pub fn file_name_prefix(path: &Path) -> (Option<String>, Option<String>) {
    use yaml_rust2::{Yaml, YamlLoader};
    let Ok(text) = std::fs::read_to_string(path) else {
        return (None, None);
    };
    let Ok(docs) = YamlLoader::load_from_str(&text) else {
        return (None, None);
    };
    let Some(Yaml::Hash(map)) = docs.into_iter().next() else {
        return (None, None);
    };
    let get = |key: &str| match map.get(&Yaml::String(key.to_owned())) {
        Some(Yaml::String(s)) if !s.is_empty() => Some(s.clone()),
        _ => None,
    };
    (get("name"), get("prefix"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_environment_file_gives_its_name_and_prefix() {
        let t = tempfile::tempdir().expect("tmp");
        let f = t.path().join("environment.yml");
        std::fs::write(&f, "name: lab\nprefix: /opt/x\ndependencies:\n  - python\n").expect("w");
        assert_eq!(
            file_name_prefix(&f),
            (Some("lab".to_owned()), Some("/opt/x".to_owned()))
        );
        std::fs::write(&f, "- not a mapping\n").expect("w");
        assert_eq!(file_name_prefix(&f), (None, None));
        assert_eq!(file_name_prefix(&t.path().join("missing")), (None, None));
    }

    #[test]
    fn packages_are_the_json_records_of_conda_meta() {
        let t = tempfile::tempdir().expect("tmp");
        assert_eq!(environment_at(t.path()), None);
        let meta = t.path().join("conda-meta");
        std::fs::create_dir_all(&meta).expect("mkdir");
        for f in ["a-1-0.json", "b-2-0.json", "history"] {
            std::fs::write(meta.join(f), "{}").expect("w");
        }
        assert_eq!(environment_at(t.path()).map(|e| e.packages), Some(2));
        assert!(has_history(t.path()));
    }
}
