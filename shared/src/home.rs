//! The home directory conda runs with.
//!
//! conda needs a writable `HOME`: its caches (`~/.cache/conda`, notices),
//! `~/.condarc` (where `conda config` writes by default) and the
//! environments created with `-n` (`~/.conda/envs` when the installation's
//! own `envs` is not writable) all live there. A user such as `nobody`,
//! whose home (`/nonexistent`) does not exist, makes every call fail, so the
//! home is checked when the worker starts, not discovered by a failing call:
//!
//! * [`check_home`]: the directory exists, is a directory and is writable by
//!   the user (owner, group or other write bit for the user's uid and
//!   primary group; root may write anywhere);
//! * [`prepare_home`]: the directory given with `--worker-home` (server) or
//!   `--home` (worker) is created with mode 0700 and owned by the user when
//!   it does not exist, then checked.
//!
//! Errors name the user, the directory and the fix ([`HomeError`]).
//!
//! On Windows there are no permission bits to judge and no other user to
//! hand a directory to (per-user workers are Unix-only): writability is
//! probed by creating and removing a file, and a created directory keeps
//! the access rules it inherits from its parent.

#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Who conda runs as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HomeUser {
    /// User name.
    pub name: String,
    /// Numeric user id (Unix; unused on Windows).
    pub uid: u32,
    /// Numeric id of the primary group (Unix; unused on Windows).
    pub gid: u32,
}

/// What is wrong with a home directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HomeProblem {
    /// Nothing exists at the path.
    Missing,
    /// Something other than a directory exists there.
    NotADirectory,
    /// The user may not create files in it.
    NotWritable,
    /// Creating or handing over the directory failed.
    Create(String),
}

/// A home directory conda cannot use. `Display` names the user, the
/// directory, the problem and the fix; `flag` is the option that names
/// another directory (`--worker-home` for the server, `--home` for the
/// worker).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the worker user {user} has no usable home: {dir} {problem}; conda needs a writable home for its caches, ~/.condarc and environments created by name. Fix: {fix}"
)]
pub struct HomeError {
    /// User name.
    pub user: String,
    /// The directory.
    pub dir: String,
    /// What is wrong, as a phrase.
    pub problem: String,
    /// What to do, as a sentence.
    pub fix: String,
}

impl HomeError {
    fn new(user: &HomeUser, dir: &Path, problem: &HomeProblem, flag: &str) -> Self {
        let d = dir.display();
        let name = &user.name;
        let problem_text = match problem {
            HomeProblem::Missing => "does not exist".to_owned(),
            HomeProblem::NotADirectory => "is not a directory".to_owned(),
            HomeProblem::NotWritable => format!("is not writable by {name}"),
            HomeProblem::Create(e) => format!("could not be created: {e}"),
        };
        let fix = match problem {
            HomeProblem::NotWritable => format!(
                "give {name} write access (chown {name}: {d}), or pass {flag} DIR (created with mode 0700 for {name})."
            ),
            _ => format!(
                "pass {flag} DIR (created with mode 0700 for {name}), create this one (mkdir -p {d} && chown {name}: {d}), or give {name} another home (usermod -d DIR -m {name})."
            ),
        };
        HomeError {
            user: name.clone(),
            dir: d.to_string(),
            problem: problem_text,
            fix,
        }
    }
}

/// Whether `meta` (a directory's metadata) lets `user` create files in it,
/// judged by the permission bits (ACLs are not consulted); uid 0 always may.
#[cfg(unix)]
pub fn writable_by(meta: &std::fs::Metadata, user: &HomeUser) -> bool {
    let mode = meta.permissions().mode();
    user.uid == 0
        || (meta.uid() == user.uid && mode & 0o300 == 0o300)
        || (meta.uid() != user.uid && meta.gid() == user.gid && mode & 0o030 == 0o030)
        || (meta.uid() != user.uid && meta.gid() != user.gid && mode & 0o003 == 0o003)
}

/// Checks that `dir` exists, is a directory and is writable by `user`.
///
/// Errors: a [`HomeError`] naming the user, the directory and the fix;
/// `flag` is the option that names another directory.
pub fn check_home(user: &HomeUser, dir: &Path, flag: &str) -> Result<(), HomeError> {
    let problem = match std::fs::metadata(dir) {
        Err(_) => HomeProblem::Missing,
        Ok(m) if !m.is_dir() => HomeProblem::NotADirectory,
        Ok(m) if !writable(dir, &m, user) => HomeProblem::NotWritable,
        Ok(_) => return Ok(()),
    };
    Err(HomeError::new(user, dir, &problem, flag))
}

#[cfg(unix)]
fn writable(_dir: &Path, meta: &std::fs::Metadata, user: &HomeUser) -> bool {
    writable_by(meta, user)
}

/// Windows: a file can be created in `dir` (and removed again); the
/// directory's ACL decides, for the worker's own user.
#[cfg(windows)]
fn writable(dir: &Path, _meta: &std::fs::Metadata, _user: &HomeUser) -> bool {
    let probe = dir.join(format!(".conda-mcp-write-probe-{}", std::process::id()));
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .is_ok();
    made && std::fs::remove_file(&probe).is_ok()
}

/// Creates `dir` (and missing parents) when it does not exist, the last
/// component with mode 0700 and owned by `user` (changing the owner needs
/// root unless `user` is the caller), then [`check_home`]s it. An existing
/// directory is left as it is.
///
/// Errors: a [`HomeError`] as for [`check_home`].
pub fn prepare_home(user: &HomeUser, dir: &Path, flag: &str) -> Result<PathBuf, HomeError> {
    if !dir.is_absolute() {
        return Err(HomeError::new(
            user,
            dir,
            &HomeProblem::Create("it must be an absolute path".into()),
            flag,
        ));
    }
    if std::fs::symlink_metadata(dir).is_err() {
        let create = || -> std::io::Result<()> {
            if let Some(parent) = dir.parent() {
                std::fs::create_dir_all(parent)?;
            }
            #[cfg(unix)]
            {
                std::fs::DirBuilder::new().mode(0o700).create(dir)?;
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
                std::os::unix::fs::chown(dir, Some(user.uid), Some(user.gid))
            }
            #[cfg(windows)]
            {
                std::fs::create_dir(dir)
            }
        };
        if let Err(e) = create() {
            return Err(HomeError::new(
                user,
                dir,
                &HomeProblem::Create(e.to_string()),
                flag,
            ));
        }
    }
    check_home(user, dir, flag)?;
    Ok(dir.to_path_buf())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    /// This process's uid and gid, read from a directory it just created.
    fn me() -> HomeUser {
        let probe = tempfile_dir();
        let m = std::fs::metadata(&probe).expect("probe");
        std::fs::remove_dir(&probe).expect("remove probe");
        HomeUser {
            name: "me".into(),
            uid: m.uid(),
            gid: m.gid(),
        }
    }

    fn tempfile_dir() -> PathBuf {
        let p = std::env::temp_dir().join(format!(
            "conda-mcp-home-probe-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir(&p).expect("probe dir");
        p
    }

    #[test]
    fn missing_home_names_user_dir_and_fix() {
        let user = HomeUser {
            name: "nobody".into(),
            uid: 65534,
            gid: 65534,
        };
        let e = check_home(&user, Path::new("/nonexistent"), "--worker-home").expect_err("missing");
        let text = e.to_string();
        for part in [
            "nobody",
            "/nonexistent",
            "does not exist",
            "--worker-home DIR",
        ] {
            assert!(text.contains(part), "{text}");
        }
    }

    #[test]
    fn prepare_creates_a_private_directory() {
        let user = me();
        let base = tempfile_dir();
        let dir = base.join("a").join("home");
        prepare_home(&user, &dir, "--home").expect("created");
        let m = std::fs::metadata(&dir).expect("exists");
        assert!(m.is_dir());
        assert_eq!(m.permissions().mode() & 0o777, 0o700);
        assert_eq!(m.uid(), user.uid);
        // Existing: left alone and accepted.
        prepare_home(&user, &dir, "--home").expect("existing");
        let e = prepare_home(&user, Path::new("relative/home"), "--home").expect_err("relative");
        assert!(e.to_string().contains("absolute"), "{e}");
        std::fs::remove_dir_all(&base).expect("cleanup");
    }

    #[test]
    fn write_bits_decide_for_other_users() {
        let base = tempfile_dir();
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let m = std::fs::metadata(&base).expect("meta");
        let other = HomeUser {
            name: "other".into(),
            uid: m.uid().wrapping_add(12345),
            gid: m.gid().wrapping_add(12345),
        };
        if other.uid != 0 {
            assert!(!writable_by(&m, &other));
            let e = check_home(&other, &base, "--worker-home").expect_err("not writable");
            assert!(e.to_string().contains("is not writable by other"), "{e}");
        }
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let m = std::fs::metadata(&base).expect("meta");
        assert!(writable_by(&m, &other));
        std::fs::remove_dir_all(&base).expect("cleanup");
    }
}

#[cfg(all(test, windows))]
mod windows_tests {
    use super::*;

    #[test]
    fn probe_and_create_on_windows() {
        let user = HomeUser {
            name: "me".into(),
            uid: 0,
            gid: 0,
        };
        let base = std::env::temp_dir().join(format!("conda-mcp-home-{}", std::process::id()));
        let dir = base.join("a").join("home");
        prepare_home(&user, &dir, "--home").expect("created");
        assert!(dir.is_dir());
        check_home(&user, &dir, "--home").expect("writable");
        let file = base.join("file");
        std::fs::write(&file, "x").expect("write");
        let e = check_home(&user, &file, "--home").expect_err("a file");
        assert!(e.to_string().contains("is not a directory"), "{e}");
        let e = check_home(&user, &base.join("missing"), "--home").expect_err("missing");
        assert!(e.to_string().contains("does not exist"), "{e}");
        std::fs::remove_dir_all(&base).expect("cleanup");
    }
}
