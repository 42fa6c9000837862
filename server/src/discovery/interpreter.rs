//! The target's Python, found without starting conda where possible
//! (docs/operating.md "Discovery", step 2).
//!
//! Order: `--python` (explicit, wins); the target's shebang; `CONDA_PYTHON_EXE`
//! when it lies inside the target's installation; otherwise
//! [`Interpreter::NeedsCondaInfo`]: the caller runs `conda info --json`
//! through the worker and takes `sys.executable` ([`from_conda_info`]).
//!
//! Shebang forms understood: `#!/prefix/bin/python [flags]`,
//! `#!/usr/bin/env python3`, `#!/usr/bin/env -S python3 -E`, and conda's
//! long-prefix form (`#!/bin/sh` followed by
//! `'''exec' "/prefix/bin/python" "$0" "$@"`), used when the interpreter
//! path is longer than the kernel's shebang limit. Interpreter flags are not
//! kept: the helper is run as `python -` (source on stdin). A shebang that
//! names no Python (`#!/usr/bin/env bash`: a wrapper such as pyenv's shim)
//! is not taken.
//!
//! The interpreter path is made absolute but NOT canonicalized: a venv's
//! `bin/python` is a symlink whose location is what makes it the venv.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::target::Target;
use crate::worker_client::config::is_executable;

/// Where the interpreter came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InterpreterSource {
    /// `--python`.
    Flag,
    /// The target script's shebang.
    Shebang,
    /// `CONDA_PYTHON_EXE` (same installation).
    CondaPythonExe,
    /// `sys.executable` from `conda info --json`.
    CondaInfo,
    /// The startup cache (the interpreter of the cached discovery).
    Cache,
}

/// Result of [`resolve_interpreter`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interpreter {
    /// Found without running anything.
    Found {
        /// The interpreter (absolute, not canonicalized).
        path: PathBuf,
        /// Where it came from.
        source: InterpreterSource,
    },
    /// Run `conda info --json` and use its `sys.executable`.
    NeedsCondaInfo,
}

/// Errors of interpreter resolution.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InterpreterError {
    /// `--python` names something that is not an executable file.
    #[error("--python {0}: is not an executable file")]
    FlagNotExecutable(PathBuf),
    /// `conda info --json` gave no usable `sys.executable`.
    #[error("cannot find the target's Python: `conda info --json` {0}")]
    CondaInfo(String),
}

/// Resolves the interpreter from the process environment
/// (`CONDA_PYTHON_EXE`, `PATH` for `#!/usr/bin/env` shebangs).
///
/// Errors: [`InterpreterError::FlagNotExecutable`].
pub fn resolve_interpreter(
    target: &Target,
    flag: Option<&Path>,
) -> Result<Interpreter, InterpreterError> {
    resolve_interpreter_with(
        target,
        flag,
        std::env::var_os("CONDA_PYTHON_EXE"),
        std::env::var_os("PATH"),
    )
}

/// [`resolve_interpreter`] over explicit values.
///
/// Errors: [`InterpreterError::FlagNotExecutable`].
pub fn resolve_interpreter_with(
    target: &Target,
    flag: Option<&Path>,
    conda_python_exe: Option<OsString>,
    path_env: Option<OsString>,
) -> Result<Interpreter, InterpreterError> {
    if let Some(flag) = flag {
        let abs = absolute(flag);
        if !is_executable(&abs) {
            return Err(InterpreterError::FlagNotExecutable(flag.to_path_buf()));
        }
        return Ok(Interpreter::Found {
            path: abs,
            source: InterpreterSource::Flag,
        });
    }
    if let Some(p) = shebang_interpreter(&target.path, path_env.as_deref())
        && is_executable(&p)
        && names_python(&p)
    {
        return Ok(Interpreter::Found {
            path: p,
            source: InterpreterSource::Shebang,
        });
    }
    if let Some(v) = conda_python_exe.filter(|v| !v.is_empty()) {
        let p = absolute(Path::new(&v));
        if is_executable(&p) && same_installation(&target.path, &p) {
            return Ok(Interpreter::Found {
                path: p,
                source: InterpreterSource::CondaPythonExe,
            });
        }
    }
    Ok(Interpreter::NeedsCondaInfo)
}

/// Whether a shebang's interpreter is a Python (`python`, `python3`,
/// `python3.12`, `pypy3`...): conda's launchers always name one; a script
/// run by anything else (`bash`, `sh` without conda's long-prefix form) is
/// not conda's launcher, and discovery asks it `info --json` instead.
fn names_python(interpreter: &Path) -> bool {
    interpreter
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("python") || n.starts_with("pypy"))
}

/// The installation prefix of a target: the parent of its `bin`,
/// `condabin` or `Scripts` folder, else its own folder.
pub fn installation_prefix(target: &Path) -> PathBuf {
    let dir = target.parent().unwrap_or(Path::new("/"));
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("bin" | "condabin" | "Scripts") => dir.parent().unwrap_or(dir).to_path_buf(),
        _ => dir.to_path_buf(),
    }
}

fn same_installation(target: &Path, python: &Path) -> bool {
    let prefix = installation_prefix(target);
    // Compare the folder holding the interpreter (canonical) with the prefix:
    // the interpreter itself may be a symlink out of the prefix (venv).
    let holder = python.parent().and_then(|d| std::fs::canonicalize(d).ok());
    let prefix = std::fs::canonicalize(&prefix).unwrap_or(prefix);
    holder.is_some_and(|h| h.starts_with(&prefix))
}

fn absolute(p: &Path) -> PathBuf {
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(p))
            .unwrap_or_else(|_| p.to_path_buf())
    }
}

/// The interpreter a script's first line names, if any (see the module
/// docs for the forms). `path_env` resolves `#!/usr/bin/env NAME`.
pub fn shebang_interpreter(script: &Path, path_env: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = Vec::with_capacity(1024);
    std::fs::File::open(script)
        .ok()?
        .take(1024)
        .read_to_end(&mut head)
        .ok()?;
    let text = String::from_utf8_lossy(&head);
    let mut lines = text.lines();
    let first = lines.next()?.strip_prefix("#!")?.trim();
    let mut words = first.split_whitespace();
    let program = words.next()?;
    let name = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    if name == "env" {
        let mut rest = words.skip_while(|w| w.starts_with('-') || w.contains('='));
        let cmd = rest.next()?;
        return if cmd.contains('/') {
            Some(PathBuf::from(cmd))
        } else {
            which(cmd, path_env)
        };
    }
    if name == "sh" || name == "bash" {
        // conda's long-prefix launcher: '''exec' "/prefix/bin/python" "$0" "$@"
        let second = lines.next()?.trim();
        let rest = second.strip_prefix("'''exec' \"")?;
        let end = rest.find('"')?;
        return Some(PathBuf::from(&rest[..end]));
    }
    Some(PathBuf::from(program))
}

fn which(name: &str, path_env: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    std::env::split_paths(path_env?)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|c| is_executable(c))
}

/// `sys.executable` out of `conda info --json` output (real conda and the
/// stand-in both print it under the key `"sys.executable"`).
///
/// Errors: [`InterpreterError::CondaInfo`] when the output is not one JSON
/// object with a non-empty string `sys.executable`.
pub fn from_conda_info(stdout: &str) -> Result<PathBuf, InterpreterError> {
    let value: serde_json::Value = serde_json::from_str(stdout.trim())
        .map_err(|e| InterpreterError::CondaInfo(format!("printed no JSON document ({e})")))?;
    match value.get("sys.executable").and_then(|v| v.as_str()) {
        Some(s) if !s.is_empty() => Ok(PathBuf::from(s)),
        _ => Err(InterpreterError::CondaInfo(
            "printed no \"sys.executable\"".into(),
        )),
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::discovery::target::TargetSource;
    use std::os::unix::fs::PermissionsExt;

    fn write(p: &Path, text: &str, mode: u32) {
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, text).expect("write");
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).expect("chmod");
    }

    fn target(p: &Path) -> Target {
        Target {
            path: p.to_path_buf(),
            given: p.to_path_buf(),
            source: TargetSource::Flag,
        }
    }

    #[test]
    fn shebang_forms() {
        let d = tempfile::tempdir().expect("tempdir");
        let py = d.path().join("bin/python3");
        write(&py, "", 0o755);
        let conda = d.path().join("bin/conda");
        let cases = [
            format!("#!{}\nimport sys\n", py.display()),
            format!("#!{} -E -s\n", py.display()),
            "#!/usr/bin/env python3\n".to_owned(),
            "#! /usr/bin/env -S PYTHONX=1 python3 -E\n".to_owned(),
            format!(
                "#!/bin/sh\n'''exec' \"{}\" \"$0\" \"$@\"\n' '''\n",
                py.display()
            ),
        ];
        let path = Some(d.path().join("bin").into_os_string());
        for text in &cases {
            write(&conda, text, 0o755);
            let r =
                resolve_interpreter_with(&target(&conda), None, None, path.clone()).expect("ok");
            assert_eq!(
                r,
                Interpreter::Found {
                    path: py.clone(),
                    source: InterpreterSource::Shebang
                },
                "{text}"
            );
        }
    }

    #[test]
    fn flag_wins_and_must_be_executable() {
        let d = tempfile::tempdir().expect("tempdir");
        let py = d.path().join("other/python");
        write(&py, "", 0o755);
        let conda = d.path().join("bin/conda");
        write(&conda, "#!/nonexistent/python\n", 0o755);
        let r = resolve_interpreter_with(&target(&conda), Some(&py), None, None).expect("ok");
        assert_eq!(
            r,
            Interpreter::Found {
                path: py.clone(),
                source: InterpreterSource::Flag
            }
        );
        let bad = d.path().join("other/nothing");
        assert_eq!(
            resolve_interpreter_with(&target(&conda), Some(&bad), None, None),
            Err(InterpreterError::FlagNotExecutable(bad))
        );
    }

    #[test]
    fn conda_python_exe_only_from_the_same_installation() {
        let d = tempfile::tempdir().expect("tempdir");
        let conda = d.path().join("inst/bin/conda");
        write(&conda, "\x7fELF binary", 0o755); // no shebang
        let inside = d.path().join("inst/bin/python");
        write(&inside, "", 0o755);
        let outside = d.path().join("elsewhere/bin/python");
        write(&outside, "", 0o755);
        let t = target(&conda);
        assert_eq!(
            resolve_interpreter_with(&t, None, Some(inside.clone().into()), None).expect("ok"),
            Interpreter::Found {
                path: inside,
                source: InterpreterSource::CondaPythonExe
            }
        );
        assert_eq!(
            resolve_interpreter_with(&t, None, Some(outside.into()), None).expect("ok"),
            Interpreter::NeedsCondaInfo
        );
        // A shebang naming a missing interpreter falls back too.
        write(&conda, "#!/nonexistent/bin/python\n", 0o755);
        assert_eq!(
            resolve_interpreter_with(&t, None, None, None).expect("ok"),
            Interpreter::NeedsCondaInfo
        );
    }

    #[test]
    fn conda_info_output() {
        assert_eq!(
            from_conda_info("{\"sys.executable\": \"/p/bin/python\", \"x\": 1}\n").expect("ok"),
            PathBuf::from("/p/bin/python")
        );
        assert!(matches!(
            from_conda_info("{}"),
            Err(InterpreterError::CondaInfo(_))
        ));
        assert!(matches!(
            from_conda_info("nope"),
            Err(InterpreterError::CondaInfo(_))
        ));
    }
}
