//! Which interpreter runs a conda executable: the `#!` line of a Python
//! entry-point script.
//!
//! Only the plain form `#!/absolute/path/to/python` (no interpreter
//! arguments, no `/usr/bin/env`, no `#!/bin/sh` relauncher) is accepted: for
//! it the kernel runs exactly `<interpreter> <script> <args>`, which the warm
//! conda reproduces. Anything else is "not a Python conda" and runs as a
//! fresh process.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Why a conda executable has no Python interpreter to run it with.
#[derive(Debug, thiserror::Error)]
pub enum ShebangError {
    /// The script could not be read.
    #[error("cannot read {}: {source}", script.display())]
    Read {
        /// The conda executable.
        script: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Its first line is not `#!/absolute/path/to/python...` alone (a
    /// binary, `/usr/bin/env`, a shell relauncher, interpreter arguments).
    #[error("{} does not start with a #! line naming an absolute Python interpreter", script.display())]
    NotPython {
        /// The conda executable.
        script: PathBuf,
    },
}

/// The interpreter named by `script`'s `#!` line, or why there is none.
pub fn python_of(script: &Path) -> Result<PathBuf, ShebangError> {
    let mut head = [0u8; 512];
    let n = std::fs::File::open(script)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|source| ShebangError::Read {
            script: script.to_path_buf(),
            source,
        })?;
    parse(&head[..n]).ok_or_else(|| ShebangError::NotPython {
        script: script.to_path_buf(),
    })
}

/// The interpreter of a `#!` line: an absolute path whose file name starts
/// with `python`, and no arguments.
fn parse(head: &[u8]) -> Option<PathBuf> {
    let rest = head.strip_prefix(b"#!")?;
    let line = &rest[..rest.iter().position(|b| *b == b'\n')?];
    let line = std::str::from_utf8(line).ok()?.trim();
    if line.is_empty() || line.contains(char::is_whitespace) || !line.starts_with('/') {
        return None;
    }
    let path = PathBuf::from(line);
    let name = path.file_name()?.to_str()?;
    name.starts_with("python").then_some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_python_shebangs_only() {
        assert_eq!(
            parse(b"#!/opt/conda/bin/python\nimport sys\n"),
            Some(PathBuf::from("/opt/conda/bin/python"))
        );
        assert_eq!(
            parse(b"#! /x/bin/python3.12 \n"),
            Some(PathBuf::from("/x/bin/python3.12"))
        );
        for bad in [
            &b"#!/usr/bin/env python\n"[..],
            b"#!/bin/sh\n'''exec' /x/python \"$0\"\n",
            b"#!/x/bin/python -E\n",
            b"#!python\n",
            b"\x7fELF",
            b"#!/x/bin/python",
        ] {
            assert_eq!(parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
