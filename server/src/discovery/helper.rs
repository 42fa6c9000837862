//! The embedded discovery helper (`helper.py`, standard library only,
//! Python ≥ 3.10) and the reading of what it prints.
//!
//! The script is compiled into the binary and run as `python -` with the
//! source on stdin, through the worker ([`helper_argv`], [`HELPER_SOURCE`]):
//! no temporary file, and no 10 KB argv item in process listings and logs.
//! It writes the
//! dump last, between two marker lines, with `sys.stdout` pointed at stderr
//! while conda and its plugins are imported, so that noise on stdout cannot
//! corrupt it ([`parse_output`] takes the last complete marked block).

use crate::dump::{Dump, DumpError};

/// The helper's source (`server/src/discovery/helper.py`).
pub const HELPER_SOURCE: &str = include_str!("helper.py");

/// The line before the dump document.
pub const BEGIN_MARKER: &str = "=====CONDA-MCP-DUMP-BEGIN=====";
/// The line after the dump document.
pub const END_MARKER: &str = "=====CONDA-MCP-DUMP-END=====";

/// The helper's stderr line when its Python has no `conda` to import
/// (`main` in `helper.py` reports the exception as
/// `conda-mcp discovery helper failed: <class>: <text>`).
pub const NO_CONDA: &str =
    "conda-mcp discovery helper failed: ModuleNotFoundError: No module named 'conda'";

/// Bytes of helper stdout the worker keeps: far above any real dump
/// (conda 26 with two plugins: ~250 KiB compact) and within the worker's
/// own ceiling (16 MiB).
pub const HELPER_OUTPUT_LIMIT_BYTES: u64 = 16 * 1024 * 1024;

/// argv for the target's Python (after the interpreter itself): read the
/// program from stdin, which carries [`HELPER_SOURCE`].
pub fn helper_argv() -> Vec<String> {
    vec!["-".to_owned()]
}

/// Why the helper's output is not a usable dump.
#[derive(Debug, thiserror::Error)]
pub enum HelperOutputError {
    /// No complete marked block on stdout.
    #[error("the discovery helper printed no complete dump{0}")]
    NoDocument(String),
    /// The block is not a valid dump.
    #[error(transparent)]
    Invalid(#[from] DumpError),
}

/// Extracts and checks the dump from the helper's stdout: the text between
/// the last [`BEGIN_MARKER`] line and the [`END_MARKER`] line after it.
///
/// Errors: [`HelperOutputError::NoDocument`] (no markers, cut off: say so
/// when `truncated`), [`HelperOutputError::Invalid`] (not a
/// `conda-parser-dump/1` document).
pub fn parse_output(stdout: &str, truncated: bool) -> Result<Dump, HelperOutputError> {
    let begin_line = format!("\n{BEGIN_MARKER}\n");
    let end_line = format!("\n{END_MARKER}");
    let Some(start) = stdout.rfind(&begin_line) else {
        return Err(HelperOutputError::NoDocument(if truncated {
            " (its output was cut at the byte limit)".into()
        } else {
            String::new()
        }));
    };
    let body = &stdout[start + begin_line.len()..];
    let Some(end) = body.find(&end_line) else {
        return Err(HelperOutputError::NoDocument(
            " (the document is incomplete)".into(),
        ));
    };
    Ok(Dump::from_json(&body.as_bytes()[..end])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str =
        r#"{"format":"conda-parser-dump/1","conda_version":"1","root":{"path":["conda"]}}"#;

    #[test]
    fn takes_the_marked_document_despite_noise() {
        let out =
            format!("plugin says hi\n{{\"not\": 1}}\n{BEGIN_MARKER}\n{DOC}\n{END_MARKER}\nbye\n");
        let out = format!("\n{out}");
        let d = parse_output(&out, false).expect("parses");
        assert_eq!(d.conda_version, "1");
    }

    #[test]
    fn missing_partial_and_invalid_documents() {
        assert!(
            matches!(parse_output("", false), Err(HelperOutputError::NoDocument(m)) if m.is_empty())
        );
        assert!(
            matches!(parse_output("xx", true), Err(HelperOutputError::NoDocument(m)) if m.contains("cut"))
        );
        let partial = format!("\n{BEGIN_MARKER}\n{{\"format\":");
        assert!(
            matches!(parse_output(&partial, false), Err(HelperOutputError::NoDocument(m)) if m.contains("incomplete"))
        );
        let wrong = format!(
            "\n{BEGIN_MARKER}\n{{\"format\":\"x\",\"conda_version\":\"1\",\"root\":{{\"path\":[]}}}}\n{END_MARKER}\n"
        );
        let e = parse_output(&wrong, false).expect_err("fails");
        assert!(e.to_string().contains("expected"), "{e}");
        let garbage = format!("\n{BEGIN_MARKER}\nnot json\n{END_MARKER}\n");
        assert!(matches!(
            parse_output(&garbage, false),
            Err(HelperOutputError::Invalid(_))
        ));
    }

    #[test]
    fn the_embedded_source_uses_the_same_markers() {
        assert!(HELPER_SOURCE.contains(BEGIN_MARKER) && HELPER_SOURCE.contains(END_MARKER));
    }
}
