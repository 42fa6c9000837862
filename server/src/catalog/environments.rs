//! Where conda puts and finds named environments (`context.root_prefix`,
//! `context.envs_dirs`), as the discovery helper reported them: a fact of
//! the discovered conda that the catalog carries for the call pipeline
//! (`crate::target` resolves `--name` through it).

use std::path::{Path, PathBuf};

/// The names conda maps to its root prefix (`RESERVED_ENV_NAMES`).
pub const RESERVED_NAMES: &[&str] = &["base", "root"];

/// Where conda puts and finds named environments, from discovery.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvironmentDirs {
    /// `context.root_prefix` (absolute); `None` when discovery did not
    /// report it.
    pub root_prefix: Option<PathBuf>,
    /// `context.envs_dirs`, in conda's order (absolute).
    pub envs_dirs: Vec<PathBuf>,
}

impl EnvironmentDirs {
    /// The directories of a discovery dump: the helper's `root_prefix` and
    /// `envs_dirs`; for a dump without them (a recording, an older cache),
    /// conda's defaults for a writable root: `<root>/envs`, then
    /// `~/.conda/envs` (root = the dump's `prefix`).
    pub fn from_dump(dump: &crate::dump::Dump) -> Self {
        let root_prefix = dump
            .root_prefix
            .as_deref()
            .or(dump.prefix.as_deref())
            .map(PathBuf::from);
        let envs_dirs = match &dump.envs_dirs {
            Some(dirs) => dirs.iter().map(PathBuf::from).collect(),
            None => {
                let mut dirs = Vec::new();
                if let Some(root) = &root_prefix {
                    dirs.push(root.join("envs"));
                }
                if let Some(home) = std::env::var_os("HOME") {
                    dirs.push(PathBuf::from(home).join(".conda").join("envs"));
                }
                dirs
            }
        };
        EnvironmentDirs {
            root_prefix,
            envs_dirs,
        }
    }

    /// Whether `prefix` is the root prefix (the same folder).
    pub fn is_root(&self, prefix: &Path) -> bool {
        self.root_prefix.as_deref().is_some_and(|root| {
            match (std::fs::canonicalize(root), std::fs::canonicalize(prefix)) {
                (Ok(a), Ok(b)) => a == b,
                _ => root == prefix,
            }
        })
    }

    /// Where `--name name` points now, when that is an existing folder (or
    /// the root prefix): `None` means conda would create a new folder.
    pub fn locate(&self, name: &str) -> Option<PathBuf> {
        if RESERVED_NAMES.contains(&name) {
            return self.root_prefix.clone();
        }
        if name.is_empty() || name.contains('/') {
            return None;
        }
        self.envs_dirs
            .iter()
            .filter(|d| d.is_dir())
            .map(|d| d.join(name))
            .find(|p| p.is_dir())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_found_in_the_first_envs_dir_that_holds_it() {
        let t = tempfile::tempdir().expect("tmp");
        let (a, b) = (t.path().join("a"), t.path().join("b"));
        std::fs::create_dir_all(b.join("x")).expect("mkdir");
        std::fs::create_dir_all(&a).expect("mkdir");
        let dirs = EnvironmentDirs {
            root_prefix: Some(t.path().to_path_buf()),
            envs_dirs: vec![a.clone(), b.clone()],
        };
        assert_eq!(dirs.locate("x"), Some(b.join("x")));
        std::fs::create_dir_all(a.join("x")).expect("mkdir");
        assert_eq!(dirs.locate("x"), Some(a.join("x")));
        assert_eq!(dirs.locate("new"), None);
        assert_eq!(dirs.locate("base"), Some(t.path().to_path_buf()));
    }
}
