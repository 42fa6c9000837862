//! How conda is run on Windows: through its own interpreter with conda's
//! entry module (`<root>\python.exe -m conda ARGS`), never through
//! `cmd.exe` or a batch file.
//!
//! Windows passes a command line, not an argv; a batch file's is parsed
//! again by `cmd.exe`, whose quoting no escaping makes safe for arbitrary
//! arguments (the "BatBadBut" class, CVE-2024-24576). conda's own launchers
//! are such files (`condabin\conda.bat`) or a launcher `.exe` that starts
//! the same interpreter (`Scripts\conda.exe`), so the worker goes to the
//! interpreter itself: for a `--conda-exe` in `Scripts`, `condabin`, `bin`
//! or `Library\bin` of an installation whose root holds `python.exe` and
//! the `conda` package, it runs `python.exe -m conda`. Any other `.exe` is
//! run as it is (a standalone conda, the tests' stand-in); a `.bat` or
//! `.cmd` that is not an installation's launcher is refused.
//!
//! Pure path logic, compiled and tested on every platform; used on Windows
//! by the worker (what it starts) and the server (which `--conda-exe` it
//! accepts).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The program and the arguments before conda's own that run conda.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CondaCommand {
    /// The executable started: the installation's `python.exe`, or the
    /// configured `.exe`.
    pub program: PathBuf,
    /// Arguments before the call's own: `-m conda`, or none.
    pub prefix_args: Vec<OsString>,
    /// The installation root, when conda runs through its interpreter (the
    /// spare interpreter of the warm conda needs one).
    pub root: Option<PathBuf>,
}

/// Why a `--conda-exe` cannot be run on Windows.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CondaCmdError {
    /// A batch file outside a conda installation.
    #[error(
        "--conda-exe names a batch file ({0}) that is not the launcher of a conda installation (no python.exe with the conda package at its root); conda is never run through cmd.exe with a call's arguments (batch-file quoting is a command injection, CVE-2024-24576). Pass the installation's Scripts\\conda.exe or condabin\\conda.bat"
    )]
    BatchFile(String),
}

impl From<CondaCmdError> for std::io::Error {
    fn from(e: CondaCmdError) -> Self {
        std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string())
    }
}

/// The installation root of a launcher at `conda`: its directory's parent
/// for `Scripts`, `condabin` and `bin`, two levels up for `Library\bin`;
/// the directory itself when it holds `python.exe` (a `conda.exe` at the
/// root). `None` when that root holds no `python.exe` and `conda` package.
pub fn installation_root(conda: &Path) -> Option<PathBuf> {
    let dir = conda.parent()?;
    let name = dir.file_name()?.to_string_lossy().to_ascii_lowercase();
    let mut candidates = vec![dir.to_path_buf()];
    match name.as_str() {
        "scripts" | "condabin" => candidates.push(dir.parent()?.to_path_buf()),
        "bin" => {
            let up = dir.parent()?;
            if up
                .file_name()
                .is_some_and(|n| n.to_string_lossy().eq_ignore_ascii_case("library"))
            {
                candidates.push(up.parent()?.to_path_buf());
            }
            candidates.push(up.to_path_buf());
        }
        _ => {}
    }
    candidates.into_iter().find(|root| {
        root.join("python.exe").is_file()
            && root
                .join("Lib")
                .join("site-packages")
                .join("conda")
                .join("__main__.py")
                .is_file()
    })
}

/// How to run the conda at `conda` (see the module docs).
///
/// Errors: [`CondaCmdError::BatchFile`] for a batch file outside an
/// installation.
pub fn resolve(conda: &Path) -> Result<CondaCommand, CondaCmdError> {
    if let Some(root) = installation_root(conda) {
        return Ok(CondaCommand {
            program: root.join("python.exe"),
            prefix_args: vec!["-m".into(), "conda".into()],
            root: Some(root),
        });
    }
    let ext = conda
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase());
    if matches!(ext.as_deref(), Some("bat" | "cmd")) {
        return Err(CondaCmdError::BatchFile(conda.display().to_string()));
    }
    Ok(CondaCommand {
        program: conda.to_path_buf(),
        prefix_args: Vec::new(),
        root: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake Windows installation: python.exe and the conda package.
    fn install(root: &Path) {
        std::fs::create_dir_all(root.join("Lib").join("site-packages").join("conda"))
            .expect("mkdir");
        std::fs::write(root.join("python.exe"), b"MZ").expect("python.exe");
        std::fs::write(root.join("Lib/site-packages/conda/__main__.py"), b"").expect("__main__");
        for d in ["Scripts", "condabin", "Library/bin"] {
            std::fs::create_dir_all(root.join(d)).expect("mkdir");
        }
    }

    #[test]
    fn launchers_run_through_the_installation_python() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path().join("miniforge3 é");
        install(&root);
        for launcher in [
            root.join("Scripts").join("conda.exe"),
            root.join("condabin").join("conda.bat"),
            root.join("condabin").join("CONDA.BAT"),
            root.join("Library").join("bin").join("conda.bat"),
            root.join("conda.exe"),
        ] {
            let how = resolve(&launcher).expect("resolved");
            assert_eq!(
                how.program,
                root.join("python.exe"),
                "{}",
                launcher.display()
            );
            assert_eq!(how.prefix_args, vec![OsString::from("-m"), "conda".into()]);
            assert_eq!(how.root.as_deref(), Some(root.as_path()));
        }
    }

    #[test]
    fn a_batch_file_elsewhere_is_refused_an_exe_runs_as_it_is() {
        let tmp = tempfile::tempdir().expect("tmp");
        let bat = tmp.path().join("tools").join("conda.cmd");
        let e = resolve(&bat).expect_err("refused");
        assert!(e.to_string().contains("CVE-2024-24576"), "{e}");
        // A root without the conda package is no installation.
        std::fs::create_dir_all(tmp.path().join("Scripts")).expect("mkdir");
        std::fs::write(tmp.path().join("python.exe"), b"MZ").expect("python");
        assert!(resolve(&tmp.path().join("Scripts").join("conda.bat")).is_err());
        let exe = tmp.path().join("standin").join("conda.exe");
        let how = resolve(&exe).expect("an exe");
        assert_eq!(how.program, exe);
        assert!(how.prefix_args.is_empty() && how.root.is_none());
    }
}
