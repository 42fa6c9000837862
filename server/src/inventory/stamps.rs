//! What the environment watch compares: the stat of the files and folders
//! that change when an environment changes, appears or disappears.
//!
//! The inventory helper's `stamps` request ([`helper_argv`]) lists the
//! environments conda lists (the same list as `conda env list`, read as the
//! principal's worker reads it) and, for each, the stat of its `conda-meta`
//! folder (a package record added or removed), its `conda-meta/history`
//! (every conda transaction appends to it) and its `site-packages` folders
//! (pip adds or removes a `.dist-info`); and the stat of what changes when
//! an environment appears or disappears (`~/.conda/environments.txt`, the
//! envs directories). The watch then only stats those paths
//! ([`Stamps::drift`]), which costs microseconds, and asks the helper again
//! when one of them changed; [`Stamps::compare`] says what changed between
//! two answers. No package record is read for this.
//!
//! A modification time is a stat's `st_mtime_ns` (nanoseconds since the
//! Unix epoch), a size its `st_size` in bytes: Python's `os.stat` and
//! Rust's [`std::fs::metadata`] read the same fields, so the helper's
//! stat and the server's can be compared.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::UNIX_EPOCH;

use serde::Deserialize;
use serde_json::json;

/// The stat of one path: `[path, mtime_ns, size]`, both `null` when the
/// path does not exist (or the helper could not read it).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PathStamp(pub String, pub Option<i64>, pub Option<i64>);

/// What the server's own stat of a path found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// The path exists: its modification time (ns) and size (bytes).
    Stat(i64, i64),
    /// The path does not exist.
    Missing,
    /// The server may not look (another OS user's files): only the
    /// helper, run as the worker's user, can tell.
    Unreadable,
}

impl Seen {
    /// Stats `path` (following symbolic links, as `os.stat` does).
    pub fn of(path: &Path) -> Seen {
        match std::fs::metadata(path) {
            Ok(meta) => {
                let mtime = meta
                    .modified()
                    .map_or(0, |t| match t.duration_since(UNIX_EPOCH) {
                        Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
                        Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
                    });
                Seen::Stat(mtime, i64::try_from(meta.len()).unwrap_or(i64::MAX))
            }
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Seen::Unreadable,
            Err(_) => Seen::Missing,
        }
    }
}

impl PathStamp {
    /// Whether `seen` is what this stamp recorded.
    fn matches(&self, seen: Seen) -> bool {
        match (seen, self.1, self.2) {
            (Seen::Stat(m, s), Some(rm), Some(rs)) => m == rm && s == rs,
            (Seen::Missing, None, _) | (Seen::Missing, _, None) => true,
            _ => false,
        }
    }
}

/// One environment as the watch sees it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Stamped {
    /// Its name as `conda env list` shows it ("" for one known by prefix
    /// only).
    pub env: String,
    /// Its prefix.
    pub prefix: String,
    /// The stat of what changes when it changes.
    pub watch: Vec<PathStamp>,
}

/// The helper's `stamps` answer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Stamps {
    /// The stat of what changes when an environment appears or
    /// disappears, taken before the environments were listed.
    pub watch: Vec<PathStamp>,
    /// The environments, in `conda env list`'s order.
    pub environments: Vec<Stamped>,
}

/// What [`Stamps::drift`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drift {
    /// Every path is as the helper saw it.
    None,
    /// A path changed: ask the helper again.
    Changed,
    /// Nothing the server can see changed, but some path it may not look
    /// at: only the helper can tell (the watch asks it now and then).
    Unreadable,
}

/// What changed between two [`Stamps`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    /// An environment appeared or disappeared (`resources/list_changed`).
    pub list: bool,
    /// The names of the environments that changed, appeared or
    /// disappeared (their resources are `…/updated`).
    pub updated: BTreeSet<String>,
    /// Anything changed, also in an environment without a name (the
    /// listing resource is `…/updated`).
    pub any: bool,
}

impl Stamps {
    /// Whether any watched path differs now from what the helper saw.
    pub fn drift(&self) -> Drift {
        let mut unreadable = false;
        let every = self
            .watch
            .iter()
            .chain(self.environments.iter().flat_map(|e| e.watch.iter()));
        for stamp in every {
            match Seen::of(Path::new(&stamp.0)) {
                Seen::Unreadable => unreadable = true,
                seen if !stamp.matches(seen) => return Drift::Changed,
                _ => {}
            }
        }
        if unreadable {
            Drift::Unreadable
        } else {
            Drift::None
        }
    }

    /// What changed from `before` to `self`.
    pub fn compare(&self, before: &Stamps) -> Changes {
        let index = |s: &Stamps| -> BTreeMap<(String, String), Vec<PathStamp>> {
            s.environments
                .iter()
                .map(|e| ((e.env.clone(), e.prefix.clone()), e.watch.clone()))
                .collect()
        };
        let (old, new) = (index(before), index(self));
        let list = old.keys().ne(new.keys());
        let mut changes = Changes {
            list,
            any: list,
            ..Changes::default()
        };
        let keys: BTreeSet<&(String, String)> = old.keys().chain(new.keys()).collect();
        for key in keys {
            if old.get(key) != new.get(key) {
                changes.any = true;
                if !key.0.is_empty() {
                    changes.updated.insert(key.0.clone());
                }
            }
        }
        changes
    }
}

/// The helper's argv for a `stamps` request (after the interpreter).
pub fn helper_argv() -> Vec<String> {
    vec![
        "-I".to_owned(),
        "-c".to_owned(),
        super::HELPER.to_owned(),
        json!({"kind": "stamps", "value": null, "max_rows": 0}).to_string(),
    ]
}

/// Reads the helper's `stamps` answer.
///
/// Errors: [`super::InventoryError::Helper`] when the helper failed or
/// printed no such document.
pub fn read(result: &conda_mcp_shared::ExecutionResult) -> Result<Stamps, super::InventoryError> {
    result
        .helper_answer()
        .map_err(|e| super::InventoryError::Helper(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str, prefix: &str, mtime: i64) -> Stamped {
        Stamped {
            env: name.into(),
            prefix: prefix.into(),
            watch: vec![PathStamp(
                format!("{prefix}/conda-meta"),
                Some(mtime),
                Some(4096),
            )],
        }
    }

    fn stamps(envs: Vec<Stamped>) -> Stamps {
        Stamps {
            watch: Vec::new(),
            environments: envs,
        }
    }

    #[test]
    fn an_environment_that_appears_changes_the_list_and_is_updated() {
        let before = stamps(vec![env("base", "/c", 1)]);
        let after = stamps(vec![env("base", "/c", 1), env("web", "/c/envs/web", 2)]);
        let changes = after.compare(&before);
        assert!(changes.list && changes.any);
        assert_eq!(changes.updated, BTreeSet::from(["web".to_owned()]));
        let back = before.compare(&after);
        assert!(back.list);
        assert_eq!(back.updated, BTreeSet::from(["web".to_owned()]));
    }

    #[test]
    fn a_changed_environment_is_updated_without_a_list_change() {
        let before = stamps(vec![env("base", "/c", 1), env("", "/elsewhere", 1)]);
        let after = stamps(vec![env("base", "/c", 2), env("", "/elsewhere", 1)]);
        let changes = after.compare(&before);
        assert!(!changes.list && changes.any);
        assert_eq!(changes.updated, BTreeSet::from(["base".to_owned()]));
        // An unnamed one changes the listing only.
        let after = stamps(vec![env("base", "/c", 1), env("", "/elsewhere", 3)]);
        let changes = after.compare(&before);
        assert!(!changes.list && changes.any && changes.updated.is_empty());
        assert_eq!(before.compare(&before), Changes::default());
    }

    #[test]
    fn the_servers_stat_matches_the_helpers_and_sees_a_change() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("history");
        std::fs::write(&file, "==> 2026 <==\n").expect("write");
        let path = file.to_str().expect("utf-8").to_owned();
        let Seen::Stat(m, s) = Seen::of(&file) else {
            panic!("the file exists")
        };
        let recorded = Stamps {
            watch: vec![PathStamp(path.clone(), Some(m), Some(s))],
            environments: Vec::new(),
        };
        assert_eq!(recorded.drift(), Drift::None);
        std::fs::write(&file, "==> 2026 <==\n+defaults::numpy\n").expect("write");
        assert_eq!(recorded.drift(), Drift::Changed);
        std::fs::remove_file(&file).expect("write");
        assert_eq!(recorded.drift(), Drift::Changed);
        let missing = Stamps {
            watch: vec![PathStamp(path, None, None)],
            environments: Vec::new(),
        };
        assert_eq!(missing.drift(), Drift::None);
    }

    #[test]
    fn the_helpers_answer_is_read() {
        let text = r#"{"query": "stamps", "watch": [["/h/.conda/environments.txt", null, null]],
            "environments": [{"env": "base", "prefix": "/c", "watch": [["/c/conda-meta", 17, 4096]]}]}"#;
        let stamps: Stamps = serde_json::from_str(text).expect("the answer");
        assert_eq!(
            stamps.environments[0].watch[0],
            PathStamp("/c/conda-meta".into(), Some(17), Some(4096))
        );
        assert_eq!(stamps.watch[0].1, None);
    }
}
