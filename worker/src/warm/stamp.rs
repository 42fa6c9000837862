//! Noticing that what a warm conda imported may have changed.
//!
//! A zygote loads conda and its plugins once. Installing, removing or
//! upgrading a package that Python can import (conda itself, a plugin, a
//! `.pth` file) creates, removes or renames entries in one of the
//! directories on the zygote's `sys.path`, which changes that directory's
//! modification time. The stamp is those directories' times, sizes and
//! inodes plus the conda script's and the interpreter's: a few `stat` calls, taken when the zygote
//! reports its `sys.path` (before it imports conda) and compared before
//! every job. A moved stamp replaces the zygote before the next call.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// What one path looked like: modification time, size and inode, or
/// absent.
type Seen = Option<(SystemTime, u64, u64)>;

/// The modification times of the zygote's import locations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    entries: Vec<(PathBuf, Seen)>,
}

fn seen(path: &Path) -> Seen {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len(), m.ino()))
}

impl Stamp {
    /// Stamps `paths` (the zygote's `sys.path`, the conda script, the
    /// interpreter). Empty entries (the current directory) are skipped.
    pub fn take<I, P>(paths: I) -> Stamp
    where
        I: IntoIterator<Item = P>,
        P: Into<PathBuf>,
    {
        let entries = paths
            .into_iter()
            .map(Into::into)
            .filter(|p: &PathBuf| !p.as_os_str().is_empty())
            .map(|p| {
                let s = seen(&p);
                (p, s)
            })
            .collect();
        Stamp { entries }
    }

    /// Whether any stamped path looks different now.
    pub fn changed(&self) -> bool {
        self.entries.iter().any(|(p, s)| seen(p) != *s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adding_an_entry_moves_the_stamp() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("later");
        let stamp = Stamp::take([dir.path().to_path_buf(), missing.clone(), PathBuf::new()]);
        assert!(!stamp.changed());
        std::fs::create_dir(&missing).expect("mkdir");
        assert!(stamp.changed(), "a new directory on the path");
        let stamp = Stamp::take([dir.path().to_path_buf()]);
        std::fs::write(dir.path().join("plugin.pth"), "x").expect("write");
        assert!(stamp.changed(), "a new entry in a path directory");
    }
}
