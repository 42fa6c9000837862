//! The startup cache: one file per target holding the helper's dump and the
//! stamp it was taken under (docs/operating.md "Discovery", step 5).
//!
//! * Where: `$XDG_CACHE_HOME/conda-mcp` (when absolute), else
//!   `~/.cache/conda-mcp`, or an explicit folder; created with mode 0700.
//! * File: `discovery-<sha256(target path)>.json` ([`CacheEntry`]).
//! * A hit needs the same cache format, the same conda-mcp version, the
//!   same target and, when `--python` was given, the same interpreter, and a
//!   stamp equal to the current one. Anything else (missing, unreadable,
//!   corrupt, stale) is a miss, and the entry is rewritten after discovery.
//! * Writes go to a temporary file in the same folder that is then renamed
//!   over the entry (atomic on POSIX): concurrent starts may both rediscover,
//!   but a reader never sees a partial file.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::stamp::Stamp;
use crate::dump::Dump;

/// Tag of the cache file format.
pub const CACHE_FORMAT: &str = "conda-mcp-discovery-cache/3";

/// The user's cache folder for conda-mcp, from `XDG_CACHE_HOME` and `HOME`;
/// `None` when neither gives an absolute path.
pub fn default_cache_dir() -> Option<PathBuf> {
    cache_dir_from(std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME"))
}

/// [`default_cache_dir`] over explicit values.
pub fn cache_dir_from(
    xdg_cache_home: Option<std::ffi::OsString>,
    home: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    if let Some(x) = xdg_cache_home
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
    {
        return Some(x.join("conda-mcp"));
    }
    home.map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .map(|h| h.join(".cache").join("conda-mcp"))
}

/// The cache file of a target inside `dir`.
pub fn entry_path(dir: &Path, target: &Path) -> PathBuf {
    let key = conda_mcp_shared::fingerprint::sha256_hex(target.as_os_str().as_encoded_bytes());
    dir.join(format!("discovery-{key}.json"))
}

/// One cache file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CacheEntry {
    /// Always [`CACHE_FORMAT`].
    pub cache_format: String,
    /// The conda-mcp version that wrote it (another version rediscovers:
    /// the helper or the dump reading may have changed).
    pub conda_mcp_version: String,
    /// The canonical target.
    pub target: PathBuf,
    /// The interpreter that ran the helper.
    pub python: PathBuf,
    /// The stamp the dump was taken under.
    pub stamp: Stamp,
    /// The helper's dump.
    pub dump: Dump,
}

/// Why a cache entry was not used (for the startup log line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Miss {
    /// No entry.
    Absent,
    /// Unreadable or not a valid entry (it will be replaced).
    Corrupt(String),
    /// Written for another target, conda-mcp version or interpreter.
    Mismatch(String),
    /// The stamp changed.
    Stale,
}

impl std::fmt::Display for Miss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Miss::Absent => f.write_str("no cache entry"),
            Miss::Corrupt(why) => write!(f, "unusable cache entry ({why})"),
            Miss::Mismatch(why) => write!(f, "cache entry for {why}"),
            Miss::Stale => f.write_str(
                "the target, its packages, its configuration files or the variables that decide conda's configuration changed",
            ),
        }
    }
}

/// Looks up the entry of `target` in `dir`: `Ok` on a hit whose stamp
/// matches the file system now.
pub fn load(dir: &Path, target: &Path, python: Option<&Path>) -> Result<CacheEntry, Miss> {
    let path = entry_path(dir, target);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Miss::Absent),
        Err(e) => return Err(Miss::Corrupt(e.to_string())),
    };
    let entry: CacheEntry =
        serde_json::from_slice(&bytes).map_err(|e| Miss::Corrupt(e.to_string()))?;
    if entry.cache_format != CACHE_FORMAT || entry.dump.format != crate::dump::DUMP_FORMAT {
        return Err(Miss::Corrupt(format!("format {:?}", entry.cache_format)));
    }
    if entry.conda_mcp_version != env!("CARGO_PKG_VERSION") {
        return Err(Miss::Mismatch(format!(
            "conda-mcp {}",
            entry.conda_mcp_version
        )));
    }
    if entry.target != target || entry.stamp.target != target {
        return Err(Miss::Mismatch(format!("target {}", entry.target.display())));
    }
    if let Some(p) = python
        && p != entry.python
    {
        return Err(Miss::Mismatch(format!(
            "interpreter {}",
            entry.python.display()
        )));
    }
    if entry.stamp.changed() {
        return Err(Miss::Stale);
    }
    Ok(entry)
}

/// Writes an entry atomically (temporary file + rename), creating `dir`
/// (mode 0700) when needed.
///
/// Errors: the folder or file could not be written.
pub fn store(dir: &Path, entry: &CacheEntry) -> std::io::Result<PathBuf> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)?;
    let path = entry_path(dir, &entry.target);
    let mut tmp = tempfile::Builder::new()
        .prefix(".discovery-")
        .suffix(".tmp")
        .tempfile_in(dir)?;
    serde_json::to_writer(&mut tmp, entry).map_err(std::io::Error::other)?;
    // No fsync: after a crash the entry may be empty or partial, which
    // [`load`] treats as corrupt (a miss, then rewritten); the rename keeps
    // concurrent readers from ever seeing a partial file.
    tmp.flush()?;
    tmp.persist(&path).map_err(|e| e.error)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cache_dir_rules() {
        assert_eq!(
            cache_dir_from(Some("/x/cache".into()), Some("/home/u".into())),
            Some(PathBuf::from("/x/cache/conda-mcp"))
        );
        assert_eq!(
            cache_dir_from(Some("relative".into()), Some("/home/u".into())),
            Some(PathBuf::from("/home/u/.cache/conda-mcp"))
        );
        assert_eq!(cache_dir_from(None, None), None);
    }

    #[test]
    fn entry_paths_differ_per_target() {
        let d = Path::new("/c");
        assert_ne!(
            entry_path(d, Path::new("/a/conda")),
            entry_path(d, Path::new("/b/conda"))
        );
        assert_eq!(
            entry_path(d, Path::new("/a/conda")),
            entry_path(d, Path::new("/a/conda"))
        );
    }
}
