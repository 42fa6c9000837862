//! Which conda to serve: `--conda-exe`, else `CONDA_EXE`, else `conda` on
//! `PATH` (docs/operating.md "Discovery", step 1).
//!
//! An explicit `--conda-exe` is authoritative: when it is unusable that is
//! the error, nothing else is tried. A `CONDA_EXE` that is set but unusable
//! (a stale activation, say) is skipped with a warning and `PATH` is tried;
//! when nothing works the error names what each of the three gave. The
//! result is canonical (symlinks resolved), so the cache key and the
//! worker's fixed program are the real file.
//!
//! Windows batch launchers (`.bat`, `.cmd`) are refused: they need a shell,
//! and conda-mcp never uses one. The one exception is an installation's
//! own launcher (`condabin\conda.bat`): the worker never runs it but
//! conda's `python.exe -m conda` beside it (`conda_mcp_shared::conda_cmd`).
//!
//! Windows looks in two more places: before `PATH` (which `where conda`
//! searches), the default Miniforge install of the user,
//! `%USERPROFILE%\miniforge3\Scripts\conda.exe`; after it, as a last
//! resort, the installations an installer registered ([`super::registry`]).
//! On `PATH` it takes `conda.exe`, else an installation's `conda.bat` (what
//! `conda init` puts on `PATH`: `<root>\condabin`). Paths are made
//! absolute, not canonical (canonical paths on Windows are `\\?\` verbatim
//! paths, which conda's interpreter would then report as its own).

use crate::worker_client::config::is_executable;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Where the target came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetSource {
    /// `--conda-exe`.
    Flag,
    /// The `CONDA_EXE` environment variable.
    Env,
    /// The first executable `conda` on `PATH`.
    Path,
    /// Windows: the user's default Miniforge install
    /// (`%USERPROFILE%\miniforge3`).
    UserInstall,
    /// Windows: an installation its installer registered (an uninstall
    /// entry in the registry, [`super::registry`]), the last place looked.
    Registry,
}

/// The resolved target conda executable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Canonical path of the executable (symlinks resolved).
    pub path: PathBuf,
    /// The path as given or found, before canonicalization.
    pub given: PathBuf,
    /// Where it came from.
    pub source: TargetSource,
}

/// How to point conda-mcp at a conda, and where to get one: the end of
/// every [`TargetError`] message (the three sources are the ones
/// [`resolve_target`] tries, in its order).
pub const HOW_TO_POINT_AT_CONDA: &str = "Point conda-mcp at one with --conda-exe \
     /path/to/conda (<prefix>/bin/conda), the CONDA_EXE variable, or a PATH that holds \
     conda; to install one, get Miniforge: https://conda-forge.org/download/";

/// Why no usable target was found. Every message ends with
/// [`HOW_TO_POINT_AT_CONDA`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetError {
    /// Nothing to try: `--conda-exe` not given, `CONDA_EXE` not set (or
    /// empty), no executable `conda` on `PATH`.
    #[error("no conda found ({}). {HOW_TO_POINT_AT_CONDA}", searched())]
    NotFound,
    /// A conda was given or found but cannot be used; each field says what
    /// its source gave.
    #[error(
        "no usable conda executable: --conda-exe: {flag}; CONDA_EXE: {env}; PATH: {path}. \
         {HOW_TO_POINT_AT_CONDA}"
    )]
    Unusable {
        /// What `--conda-exe` gave ("not given", or why it is unusable).
        flag: String,
        /// What `CONDA_EXE` gave.
        env: String,
        /// What the `PATH` search gave.
        path: String,
    },
}

/// What was searched when nothing was found, in [`resolve_target`]'s
/// order, for [`TargetError::NotFound`].
fn searched() -> &'static str {
    if cfg!(windows) {
        "--conda-exe not given, CONDA_EXE not set, no %USERPROFILE%\\miniforge3, no conda in \
         PATH's folders, no usable installation in the registry"
    } else {
        "--conda-exe not given, CONDA_EXE not set, no executable `conda` in PATH's folders"
    }
}

/// Resolves the target from the process environment (`CONDA_EXE`, `PATH`).
///
/// Errors: [`TargetError`] naming what each source gave.
pub fn resolve_target(flag: Option<&Path>) -> Result<Target, TargetError> {
    resolve_target_with(
        flag,
        std::env::var_os("CONDA_EXE"),
        std::env::var_os("PATH"),
    )
}

/// Windows: the user's default Miniforge conda, when it is there
/// (`%USERPROFILE%\miniforge3\Scripts\conda.exe`).
fn user_install() -> Option<PathBuf> {
    if !cfg!(windows) {
        return None;
    }
    let profile = std::env::var_os("USERPROFILE").filter(|v| !v.is_empty())?;
    let conda = Path::new(&profile)
        .join("miniforge3")
        .join("Scripts")
        .join("conda.exe");
    conda.is_file().then_some(conda)
}

/// The `conda` a `PATH` folder holds: `conda` on Unix; on Windows
/// `conda.exe`, else an installation's `conda.bat`.
fn conda_in(dir: &Path) -> Option<PathBuf> {
    let names: &[&str] = if cfg!(windows) {
        &["conda.exe", "conda.bat"]
    } else {
        &["conda"]
    };
    names.iter().map(|n| dir.join(n)).find(|c| {
        c.is_file()
            && (is_executable(c)
                || (cfg!(windows) && conda_mcp_shared::conda_cmd::installation_root(c).is_some()))
    })
}

/// [`resolve_target`] over explicit values (for tests and embedding).
///
/// Errors: [`TargetError`].
pub fn resolve_target_with(
    flag: Option<&Path>,
    conda_exe_env: Option<OsString>,
    path_env: Option<OsString>,
) -> Result<Target, TargetError> {
    const SKIPPED: &str = "not consulted (--conda-exe given)";
    if let Some(flag) = flag {
        return check(flag, TargetSource::Flag).map_err(|why| TargetError::Unusable {
            flag: format!("{}: {why}", flag.display()),
            env: SKIPPED.into(),
            path: SKIPPED.into(),
        });
    }
    const NOT_SET: &str = "not set";
    const NONE_ON_PATH: &str = "no executable `conda` in any of its folders";
    let env = match conda_exe_env.filter(|v| !v.is_empty()) {
        None => NOT_SET.to_owned(),
        Some(v) => {
            let p = PathBuf::from(v);
            match check(&p, TargetSource::Env) {
                Ok(t) => return Ok(t),
                Err(why) => {
                    tracing::warn!(
                        conda_exe = %p.display(),
                        "CONDA_EXE is not usable ({why}); looking for conda on PATH"
                    );
                    format!("{}: {why}", p.display())
                }
            }
        }
    };
    if let Some(p) = user_install()
        && let Ok(t) = check(&p, TargetSource::UserInstall)
    {
        return Ok(t);
    }
    let path = match path_env {
        None => NOT_SET.to_owned(),
        Some(path_var) => {
            let mut found = None;
            for dir in std::env::split_paths(&path_var) {
                // An empty PATH entry means the current directory: never
                // pick up a `conda` from wherever we happen to run.
                if dir.as_os_str().is_empty() || !dir.is_absolute() {
                    continue;
                }
                if let Some(candidate) = conda_in(&dir) {
                    found = Some(candidate);
                    break;
                }
            }
            match found {
                Some(c) => match check(&c, TargetSource::Path) {
                    Ok(t) => return Ok(t),
                    Err(why) => format!("{}: {why}", c.display()),
                },
                None => NONE_ON_PATH.to_owned(),
            }
        }
    };
    // The last resort (Windows): an installation an installer registered
    // (also after a CONDA_EXE or PATH conda that is not usable).
    for p in super::registry::registered_condas() {
        match check(&p, TargetSource::Registry) {
            Ok(t) => return Ok(t),
            Err(why) => tracing::warn!(
                conda = %p.display(),
                "a registered conda installation is not usable ({why})"
            ),
        }
    }
    if env == NOT_SET && (path == NOT_SET || path == NONE_ON_PATH) {
        return Err(TargetError::NotFound);
    }
    Err(TargetError::Unusable {
        flag: "not given".into(),
        env,
        path,
    })
}

/// Why a conda executable that was given or found cannot be used: the
/// words after its path in [`TargetError::Unusable`] and in the log.
#[derive(Debug, thiserror::Error)]
enum Unusable {
    /// (Unix) A Windows `.bat`/`.cmd` launcher.
    #[cfg(unix)]
    #[error(
        "a Windows .{0} launcher needs a shell, which conda-mcp never uses; \
         pass the conda executable itself (conda.exe, or <prefix>/bin/conda)"
    )]
    Launcher(String),
    /// Nothing at that path.
    #[error("does not exist")]
    Missing,
    /// The path could not be made absolute (Windows) or canonical (Unix).
    #[error("cannot be resolved ({0})")]
    Unresolvable(std::io::Error),
    /// A directory or another non-file.
    #[error("is not a file")]
    NotAFile,
    /// (Unix) No execute permission.
    #[cfg(unix)]
    #[error("is not executable")]
    NotExecutable,
    /// (Windows) Neither an `.exe` nor an installation's `conda.bat`.
    #[cfg(windows)]
    #[error("is not an .exe")]
    NotAnExe,
    /// (Windows) How conda would be run from it could not be worked out.
    #[cfg(windows)]
    #[error(transparent)]
    Command(#[from] conda_mcp_shared::conda_cmd::CondaCmdError),
}

fn check(p: &Path, source: TargetSource) -> Result<Target, Unusable> {
    #[cfg(windows)]
    return check_windows(p, source);
    #[cfg(unix)]
    check_unix(p, source)
}

/// Windows: an `.exe`, or an installation's `conda.bat` (module docs),
/// made absolute.
#[cfg(windows)]
fn check_windows(p: &Path, source: TargetSource) -> Result<Target, Unusable> {
    let abs = std::path::absolute(p).map_err(Unusable::Unresolvable)?;
    if !abs.exists() {
        return Err(Unusable::Missing);
    }
    if !abs.is_file() {
        return Err(Unusable::NotAFile);
    }
    conda_mcp_shared::conda_cmd::resolve(&abs)?;
    if !is_executable(&abs) && conda_mcp_shared::conda_cmd::installation_root(&abs).is_none() {
        return Err(Unusable::NotAnExe);
    }
    Ok(Target {
        path: abs,
        given: p.to_path_buf(),
        source,
    })
}

#[cfg(unix)]
fn check_unix(p: &Path, source: TargetSource) -> Result<Target, Unusable> {
    if let Some(ext) = p.extension().and_then(|e| e.to_str()) {
        let ext = ext.to_ascii_lowercase();
        if ext == "bat" || ext == "cmd" {
            return Err(Unusable::Launcher(ext));
        }
    }
    let canonical = std::fs::canonicalize(p).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Unusable::Missing,
        _ => Unusable::Unresolvable(e),
    })?;
    if !canonical.is_file() {
        return Err(Unusable::NotAFile);
    }
    if !is_executable(&canonical) {
        return Err(Unusable::NotExecutable);
    }
    Ok(Target {
        path: canonical,
        given: p.to_path_buf(),
        source,
    })
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn exe(dir: &Path, name: &str, mode: u32) -> PathBuf {
        let p = dir.join(name);
        std::fs::write(&p, "#!/bin/sh\n").expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("chmod");
        p
    }

    #[test]
    fn flag_env_path_order() {
        let d = tempfile::tempdir().expect("tempdir");
        let a = exe(d.path(), "a-conda", 0o755);
        let bin = d.path().join("bin");
        std::fs::create_dir(&bin).expect("mkdir");
        let on_path = exe(&bin, "conda", 0o755);
        let path = Some(bin.clone().into_os_string());

        let t = resolve_target_with(Some(&a), Some(on_path.clone().into()), path.clone())
            .expect("flag");
        assert_eq!(
            (t.source, t.path.clone()),
            (TargetSource::Flag, std::fs::canonicalize(&a).expect("c"))
        );
        let t = resolve_target_with(None, Some(a.clone().into()), path.clone()).expect("env");
        assert_eq!(t.source, TargetSource::Env);
        let t = resolve_target_with(None, None, path.clone()).expect("path");
        assert_eq!(
            (t.source, t.path),
            (
                TargetSource::Path,
                std::fs::canonicalize(&on_path).expect("c")
            )
        );
        // A stale CONDA_EXE falls through to PATH.
        let t = resolve_target_with(None, Some(d.path().join("gone").into()), path)
            .expect("fallthrough");
        assert_eq!(t.source, TargetSource::Path);
    }

    #[test]
    fn symlinks_are_canonicalized() {
        let d = tempfile::tempdir().expect("tempdir");
        let real = exe(d.path(), "real-conda", 0o755);
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&real, &link).expect("symlink");
        let t = resolve_target_with(Some(&link), None, None).expect("resolves");
        assert_eq!(t.path, std::fs::canonicalize(&real).expect("c"));
        assert_eq!(t.given, link);
    }

    /// The field of an [`TargetError::Unusable`] that `pick` selects.
    fn unusable(e: &TargetError, pick: fn(&str, &str, &str) -> String) -> String {
        match e {
            TargetError::Unusable { flag, env, path } => pick(flag, env, path),
            TargetError::NotFound => panic!("expected Unusable, got {e}"),
        }
    }

    #[test]
    fn nothing_to_try_says_how_to_point_at_a_conda_and_where_to_get_one() {
        let d = tempfile::tempdir().expect("tempdir");
        for path in [None, Some(d.path().as_os_str().to_owned())] {
            let e = resolve_target_with(None, Some(OsString::new()), path).expect_err("fails");
            assert_eq!(e, TargetError::NotFound);
            let text = e.to_string();
            for word in ["--conda-exe", "CONDA_EXE", "PATH", "Miniforge", "https://"] {
                assert!(text.contains(word), "{text}");
            }
            assert!(!text.contains('\n'), "one line: {text}");
        }
    }

    #[test]
    fn errors_name_all_three() {
        let d = tempfile::tempdir().expect("tempdir");
        let not_exec = exe(d.path(), "conda", 0o644);
        let e = resolve_target_with(Some(&not_exec), None, None).expect_err("fails");
        assert!(
            unusable(&e, |f, _, _| f.into()).contains("is not executable"),
            "{e}"
        );
        let text = e.to_string();
        for word in [
            "--conda-exe",
            "CONDA_EXE",
            "PATH",
            "not consulted",
            "Miniforge",
        ] {
            assert!(text.contains(word), "{text}");
        }
        // Not executable on PATH: skipped.
        let e = resolve_target_with(None, Some(not_exec.clone().into()), Some(d.path().into()))
            .expect_err("fails");
        assert!(
            unusable(&e, |_, env, path| format!("{env} | {path}"))
                .starts_with(&format!("{}: is not executable", not_exec.display())),
            "{e}"
        );
        assert!(e.to_string().contains("not given"), "{e}");
        let e = resolve_target_with(Some(d.path()), None, None).expect_err("fails");
        assert!(
            unusable(&e, |f, _, _| f.into()).contains("is not a file"),
            "{e}"
        );
        let e =
            resolve_target_with(Some(&d.path().join("missing")), None, None).expect_err("fails");
        assert!(
            unusable(&e, |f, _, _| f.into()).contains("does not exist"),
            "{e}"
        );
    }

    #[test]
    fn batch_launchers_are_refused_with_a_hint() {
        let d = tempfile::tempdir().expect("tempdir");
        for name in ["conda.bat", "CONDA.CMD"] {
            let p = exe(d.path(), name, 0o755);
            let e = resolve_target_with(Some(&p), None, None).expect_err("fails");
            assert!(
                unusable(&e, |f, _, _| f.into()).contains("launcher needs a shell"),
                "{e}"
            );
            assert!(e.to_string().contains("conda.exe"), "{e}");
        }
    }
}
