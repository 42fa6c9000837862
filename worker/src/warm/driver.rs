//! Noticing that the CUDA driver a warm conda probed may have changed.
//!
//! The zygote runs conda's CUDA virtual-package probe once and every child
//! reads its answer (`zygote.py`, `_probe_cuda`; conda keeps the answer for
//! the life of its process, conda/plugins/virtual_packages/cuda.py
//! `cached_cuda_version`). The probe loads `libcuda.so.1` or `libcuda.so`
//! through the dynamic loader (or one of conda's fixed paths) and asks it
//! for the driver's version, so what a driver installation, upgrade or
//! removal touches is:
//!
//! * the `libcuda.so*` entries of the directories the loader and conda
//!   look in: those of the zygote's `LD_LIBRARY_PATH`, those
//!   `/etc/ld.so.cache` lists a `libcuda.so*` in, the loader's default
//!   directories and conda's own ([`FIXED_DIRS`]); an entry is stamped by
//!   the file it resolves to (a symbolic link followed), a directory by its
//!   modification time, and a directory whose time moved is listed again
//!   (only a different set of `libcuda.so*` entries, or one of them
//!   changed, counts: other libraries come and go there);
//! * `/etc/ld.so.cache` itself (`ldconfig` rewrites it when a driver is
//!   installed);
//! * the text of `/proc/driver/nvidia/version` (the loaded kernel module).
//!
//! The zygote's environment (`LD_LIBRARY_PATH`, `CUDA_VISIBLE_DEVICES`,
//! `CONDA_OVERRIDE_CUDA` and the other `CONDA_OVERRIDE_*` variables) is
//! compared as a whole before every job (`super::Warm`): a different one
//! replaces the zygote. The stamp is taken when the zygote reports its
//! `sys.path`, before it probes, and checked before every job; a moved
//! stamp replaces the zygote, whose successor probes again.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::SystemTime;

/// What one path looked like: modification time, size and inode (of what
/// a symbolic link points to), or absent.
type Seen = Option<(SystemTime, u64, u64)>;

/// Directories watched whatever the loader's configuration: the loader's
/// defaults (x86_64 and 64-bit Debian layouts) and the fixed paths conda's
/// probe tries (conda/plugins/virtual_packages/cuda.py).
pub const FIXED_DIRS: &[&str] = &[
    "/lib",
    "/usr/lib",
    "/lib64",
    "/usr/lib64",
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib64/nvidia",
    "/usr/lib/wsl/lib",
];

/// The loader's cache of library locations (`ldconfig`'s output).
pub const LD_SO_CACHE: &str = "/etc/ld.so.cache";

/// The NVIDIA kernel module's version text.
pub const NVIDIA_VERSION: &str = "/proc/driver/nvidia/version";

/// Largest `/etc/ld.so.cache` read for its `libcuda` directories.
const MAX_CACHE_BYTES: u64 = 16 << 20;

fn seen(path: &Path) -> Seen {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len(), m.ino()))
}

/// One watched directory: its own time and its `libcuda.so*` entries.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Dir {
    path: PathBuf,
    seen: Seen,
    entries: Vec<(OsString, Seen)>,
}

impl Dir {
    fn take(path: PathBuf) -> Dir {
        let seen = seen(&path);
        let entries = libcuda_entries(&path);
        Dir {
            path,
            seen,
            entries,
        }
    }
}

/// The `libcuda.so*` entries of `dir`, sorted, each with what it resolves
/// to.
fn libcuda_entries(dir: &Path) -> Vec<(OsString, Seen)> {
    let Ok(read) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(OsString, Seen)> = read
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .filter(|n| n.as_encoded_bytes().starts_with(b"libcuda.so"))
        .map(|n| {
            let s = seen(&dir.join(&n));
            (n, s)
        })
        .collect();
    found.sort();
    found
}

/// The directories `/etc/ld.so.cache` names a `libcuda.so*` in: the
/// cache's string table holds each library's full path, NUL-terminated.
fn cached_dirs(cache: &Path) -> Vec<PathBuf> {
    use std::io::Read;
    let mut bytes = Vec::new();
    let Ok(file) = std::fs::File::open(cache) else {
        return Vec::new();
    };
    if file.take(MAX_CACHE_BYTES).read_to_end(&mut bytes).is_err() {
        return Vec::new();
    }
    let mut dirs: Vec<PathBuf> = bytes
        .split(|b| *b == 0)
        .filter(|s| s.first() == Some(&b'/'))
        .filter_map(|s| {
            let path = Path::new(OsStr::from_bytes(s));
            let name = path.file_name()?.as_encoded_bytes();
            name.starts_with(b"libcuda.so")
                .then(|| path.parent().map(Path::to_path_buf))
                .flatten()
        })
        .collect();
    dirs.sort();
    dirs.dedup();
    dirs
}

/// What the CUDA driver looked like to a zygote when it probed.
#[derive(Debug)]
pub struct DriverStamp {
    dirs: Mutex<Vec<Dir>>,
    cache: (PathBuf, Seen),
    nvidia: (PathBuf, Option<Vec<u8>>),
}

impl DriverStamp {
    /// Stamps the driver as a process with environment `env` would find it
    /// (its `LD_LIBRARY_PATH`, the system's loader configuration).
    pub fn take(env: &[(OsString, OsString)]) -> DriverStamp {
        Self::take_with(
            env,
            FIXED_DIRS.iter().map(PathBuf::from),
            Path::new(LD_SO_CACHE),
            Path::new(NVIDIA_VERSION),
        )
    }

    /// [`DriverStamp::take`] with the fixed directories, the loader's cache
    /// and the kernel module's version file given (tests).
    pub fn take_with(
        env: &[(OsString, OsString)],
        fixed: impl IntoIterator<Item = PathBuf>,
        cache: &Path,
        nvidia: &Path,
    ) -> DriverStamp {
        let library_path = env
            .iter()
            .find(|(k, _)| k == "LD_LIBRARY_PATH")
            .map(|(_, v)| v.clone())
            .unwrap_or_default();
        let mut paths: Vec<PathBuf> = std::env::split_paths(&library_path)
            .filter(|p| p.is_absolute())
            .collect();
        paths.extend(cached_dirs(cache));
        paths.extend(fixed);
        let mut dirs: Vec<Dir> = Vec::new();
        for p in paths {
            if !dirs.iter().any(|d| d.path == p) {
                dirs.push(Dir::take(p));
            }
        }
        DriverStamp {
            dirs: Mutex::new(dirs),
            cache: (cache.to_path_buf(), seen(cache)),
            nvidia: (nvidia.to_path_buf(), std::fs::read(nvidia).ok()),
        }
    }

    /// Whether the driver may have changed since the stamp was taken: a few
    /// `stat` calls and one small read while nothing moved.
    pub fn changed(&self) -> bool {
        if seen(&self.cache.0) != self.cache.1 {
            return true;
        }
        if std::fs::read(&self.nvidia.0).ok() != self.nvidia.1 {
            return true;
        }
        let mut dirs = self.dirs.lock().unwrap_or_else(|e| e.into_inner());
        for dir in dirs.iter_mut() {
            let now = seen(&dir.path);
            if now == dir.seen {
                if dir
                    .entries
                    .iter()
                    .any(|(n, s)| seen(&dir.path.join(n)) != *s)
                {
                    return true;
                }
            } else {
                if libcuda_entries(&dir.path) != dir.entries {
                    return true;
                }
                // Another library came or went: nothing of the driver.
                dir.seen = now;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(dir: &Path) -> Vec<(OsString, OsString)> {
        vec![("LD_LIBRARY_PATH".into(), dir.as_os_str().to_owned())]
    }

    #[test]
    fn a_driver_file_on_the_library_path_moves_the_stamp() {
        let t = tempfile::tempdir().expect("tempdir");
        let lib = t.path().join("lib");
        std::fs::create_dir(&lib).expect("mkdir");
        let none = t.path().join("none");
        let stamp = |e: &[(OsString, OsString)]| {
            DriverStamp::take_with(e, [t.path().join("fixed")], &none, &none)
        };
        let s = stamp(&env(&lib));
        assert!(!s.changed());
        std::fs::write(lib.join("other.so"), "x").expect("write");
        assert!(!s.changed(), "another library: not the driver");
        std::fs::write(lib.join("libcuda.so.1"), "12.4").expect("write");
        assert!(s.changed(), "a driver appeared");
        let s = stamp(&env(&lib));
        assert!(!s.changed());
        std::fs::write(lib.join("libcuda.so.1"), "12.60").expect("write");
        assert!(s.changed(), "the driver was rewritten");
        let s = stamp(&env(&lib));
        let target = lib.join("libcuda.so.560");
        std::fs::write(&target, "12.6").expect("write");
        std::fs::remove_file(lib.join("libcuda.so.1")).expect("rm");
        std::os::unix::fs::symlink(&target, lib.join("libcuda.so.1")).expect("ln");
        assert!(s.changed(), "the link now names another driver");
        let s = stamp(&[]);
        std::fs::write(lib.join("libcuda.so"), "12.8").expect("write");
        assert!(!s.changed(), "not on this environment's library path");
    }

    #[test]
    fn the_loader_cache_and_the_kernel_module_move_the_stamp() {
        let t = tempfile::tempdir().expect("tempdir");
        let cache = t.path().join("ld.so.cache");
        let cached = t.path().join("cached");
        std::fs::create_dir(&cached).expect("mkdir");
        let mut bytes = b"glibc-ld.so.cache1.1\0libcuda.so.1\0".to_vec();
        bytes.extend_from_slice(cached.join("libcuda.so.1").as_os_str().as_bytes());
        bytes.push(0);
        std::fs::write(&cache, &bytes).expect("write");
        let nvidia = t.path().join("version");
        std::fs::write(&nvidia, "NVRM version: 550.54").expect("write");
        let s = DriverStamp::take_with(&[], [], &cache, &nvidia);
        assert!(!s.changed());
        std::fs::write(cached.join("libcuda.so.1"), "12.4").expect("write");
        assert!(s.changed(), "a directory the loader's cache names");
        let s = DriverStamp::take_with(&[], [], &cache, &nvidia);
        std::fs::write(&nvidia, "NVRM version: 560.10").expect("write");
        assert!(s.changed(), "another kernel module");
        let s = DriverStamp::take_with(&[], [], &cache, &nvidia);
        bytes.extend_from_slice(b"/x/libfoo.so\0");
        std::fs::write(&cache, &bytes).expect("write");
        assert!(s.changed(), "ldconfig rewrote the cache");
    }
}
