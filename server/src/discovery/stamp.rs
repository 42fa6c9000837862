//! The cache stamp: what must be unchanged for a cached dump to still
//! describe the target (docs/operating.md "Discovery", step 5).
//!
//! The target's path, size and modification time, plus the sorted entry
//! names of the folders the helper reported as `stamp_dirs` (site-packages,
//! the prefix's `conda-meta`): installing, removing or upgrading conda or a
//! plugin adds or renames entries there (`conda-26.9.0.dist-info`,
//! `conda-26.9.0-py311_0.json`). Computing it reads a few directory
//! listings and starts no process, so [`Stamp::changed`] is cheap enough to
//! run after every mutating call (restart detection).
//!
//! It also covers conda's configuration: every place of conda's search
//! path the helper reported (`config.search_path`), as a [`ConfigPath`]
//! (size, modification time and inode of a file; the same for each entry
//! of a `condarc.d` folder; absent when nothing is there). Editing,
//! adding or removing a `.condarc` moves the stamp, so a cached startup
//! rediscovers and [`super::config::ConfigWatch`] sees the change before
//! the next call.
//!
//! And it covers the variables that decide where conda looks for its
//! configuration and what it reads as settings ([`config_environment`]):
//! `HOME` (`~/.condarc`, `~/.conda/.condarc`, `~/.config/conda/`),
//! `XDG_CONFIG_HOME`, `CONDARC`, and every `CONDA_*` variable (conda reads
//! `CONDA_<KEY>` as the setting `<key>`; `CONDA_PREFIX` and `CONDA_ROOT`
//! are places of its search path). Each is kept as a sha256 of its value,
//! never the value (a `CONDA_CHANNELS` may hold a token): a cache made
//! under one environment is never used under another.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

/// One stamp folder and its sorted entry names (`None`: it could not be
/// listed, e.g. it vanished).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirListing {
    /// The folder.
    pub path: PathBuf,
    /// Its entry names, sorted; `None` when it could not be read.
    pub entries: Option<Vec<String>>,
}

/// What is at one place of conda's configuration search path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigPath {
    /// The place (a file, or a `condarc.d` folder).
    pub path: PathBuf,
    /// `None`: nothing there; else the file (or, for a folder, each entry
    /// by name) as `(name, size, mtime_ns, inode)`; a file has one entry
    /// with an empty name.
    pub state: Option<Vec<(String, u64, u128, u64)>>,
}

impl ConfigPath {
    /// The place as the file system is now.
    pub fn current(path: &Path) -> ConfigPath {
        let state = std::fs::metadata(path).ok().map(|m| {
            if m.is_dir() {
                let mut entries: Vec<_> = std::fs::read_dir(path)
                    .map(|rd| {
                        rd.filter_map(|e| e.ok())
                            .filter_map(|e| {
                                let name = e.file_name().to_string_lossy().into_owned();
                                std::fs::metadata(e.path())
                                    .ok()
                                    .map(|m| file_state(name, &m))
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                entries.sort();
                entries
            } else {
                vec![file_state(String::new(), &m)]
            }
        });
        ConfigPath {
            path: path.to_path_buf(),
            state,
        }
    }
}

fn file_state(name: String, m: &std::fs::Metadata) -> (String, u64, u128, u64) {
    // The inode on Unix (a replaced file with the same size and time);
    // Windows has no stable file id through std, so 0 there.
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(m);
    #[cfg(not(unix))]
    let ino = 0;
    let mtime = m
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    (name, m.len(), mtime, ino)
}

/// The stamps of `paths`, in order.
pub fn config_paths(paths: &[PathBuf]) -> Vec<ConfigPath> {
    paths.iter().map(|p| ConfigPath::current(p)).collect()
}

/// The names of the variables outside `CONDA_*` that decide conda's
/// configuration search path (see the module docs).
pub const CONFIG_VARIABLES: &[&str] = &["HOME", "XDG_CONFIG_HOME", "CONDARC"];

/// Whether `name` is part of the cache key ([`config_environment`]).
pub fn is_config_variable(name: &str) -> bool {
    CONFIG_VARIABLES.contains(&name) || name.starts_with("CONDA_")
}

/// The variables of this process that decide conda's configuration, by
/// name (sorted), each with the sha256 (hex) of its value.
pub fn config_environment() -> Vec<(String, String)> {
    let mut vars: Vec<(String, String)> = std::env::vars_os()
        .filter_map(|(k, v)| {
            let k = k.into_string().ok()?;
            is_config_variable(&k).then(|| {
                let hash = conda_mcp_shared::fingerprint::sha256_hex(v.as_encoded_bytes());
                (k, hash)
            })
        })
        .collect();
    vars.sort();
    vars
}

/// Whether any of `stamped` no longer matches the file system.
pub fn config_changed(stamped: &[ConfigPath]) -> bool {
    stamped.iter().any(|c| ConfigPath::current(&c.path) != *c)
}

/// See the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp {
    /// The canonical target executable.
    pub target: PathBuf,
    /// Its size in bytes (`None`: it could not be read).
    pub size: Option<u64>,
    /// Its modification time in nanoseconds since the Unix epoch.
    pub mtime_ns: Option<u128>,
    /// The stamp folders, in the helper's order.
    pub dirs: Vec<DirListing>,
    /// The places of conda's configuration search path, in its order.
    #[serde(default)]
    pub config: Vec<ConfigPath>,
    /// The variables that decide conda's configuration: names and the
    /// sha256 of each value ([`config_environment`]).
    #[serde(default)]
    pub environment: Vec<(String, String)>,
}

impl Stamp {
    /// The stamp as the file system is now.
    pub fn current(target: &Path, stamp_dirs: &[PathBuf]) -> Stamp {
        let meta = std::fs::metadata(target).ok();
        Stamp {
            target: target.to_path_buf(),
            size: meta.as_ref().map(|m| m.len()),
            mtime_ns: meta
                .and_then(|m| m.modified().ok())
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_nanos()),
            dirs: stamp_dirs
                .iter()
                .map(|d| DirListing {
                    path: d.clone(),
                    entries: list(d),
                })
                .collect(),
            config: Vec::new(),
            environment: Vec::new(),
        }
    }

    /// The stamp with the places of conda's configuration search path and
    /// the variables that decide it.
    pub fn with_config(mut self, search_path: &[PathBuf]) -> Stamp {
        self.config = config_paths(search_path);
        self.environment = config_environment();
        self
    }

    /// The configuration places of this stamp.
    pub fn config_paths(&self) -> Vec<PathBuf> {
        self.config.iter().map(|c| c.path.clone()).collect()
    }

    /// The stamp folders.
    pub fn dir_paths(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|d| d.path.clone()).collect()
    }

    /// Whether the file system no longer matches this stamp (no Python, no
    /// process: a `stat` and a few directory listings). A stamp whose target
    /// could not be read always counts as changed.
    pub fn changed(&self) -> bool {
        self.size.is_none()
            || Stamp::current(&self.target, &self.dir_paths()).with_config(&self.config_paths())
                != *self
    }
}

fn list(dir: &Path) -> Option<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_listing_and_target_changes() {
        let d = tempfile::tempdir().expect("tempdir");
        let target = d.path().join("conda");
        std::fs::write(&target, "#!/bin/sh\n").expect("write");
        let site = d.path().join("site");
        std::fs::create_dir(&site).expect("mkdir");
        std::fs::write(site.join("b"), "").expect("write");
        std::fs::write(site.join("a"), "").expect("write");
        let s = Stamp::current(&target, std::slice::from_ref(&site)).with_config(&[]);
        assert_eq!(
            s.dirs[0].entries.as_deref(),
            Some(&["a".to_owned(), "b".to_owned()][..])
        );
        assert!(!s.changed());
        std::fs::write(site.join("plugin-1.0.dist-info"), "").expect("write");
        assert!(s.changed());
        let s = Stamp::current(&target, std::slice::from_ref(&site)).with_config(&[]);
        std::fs::write(&target, "#!/bin/sh\n# longer\n").expect("write");
        assert!(s.changed(), "size changed");
        let s = Stamp::current(&target, std::slice::from_ref(&site)).with_config(&[]);
        std::fs::remove_dir_all(&site).expect("rm");
        assert!(s.changed(), "folder vanished");
        std::fs::remove_file(&target).expect("rm");
        assert!(Stamp::current(&target, &[]).changed(), "unreadable target");
    }

    #[test]
    fn detects_configuration_files_appearing_changing_and_going() {
        let d = tempfile::tempdir().expect("tempdir");
        let target = d.path().join("conda");
        std::fs::write(&target, "#!/bin/sh\n").expect("write");
        let rc = d.path().join(".condarc");
        let rcd = d.path().join("condarc.d");
        let places = [rc.clone(), rcd.clone()];
        let s = Stamp::current(&target, &[]).with_config(&places);
        assert!(!s.changed());
        std::fs::write(&rc, "json: false  #!final\n").expect("write");
        assert!(s.changed(), "a file appeared");
        let s = Stamp::current(&target, &[]).with_config(&places);
        std::fs::write(&rc, "json: false\n").expect("write");
        assert!(s.changed(), "the file changed");
        std::fs::create_dir(&rcd).expect("mkdir");
        let s = Stamp::current(&target, &[]).with_config(&places);
        std::fs::write(rcd.join("a.yml"), "dry_run: false #!final\n").expect("write");
        assert!(s.changed(), "a folder entry appeared");
        let s = Stamp::current(&target, &[]).with_config(&places);
        std::fs::remove_file(&rc).expect("rm");
        assert!(s.changed(), "the file went");
    }
}
