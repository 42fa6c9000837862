//! The `conda-mcp` command line (clap) and startup sequence.

use std::process::ExitCode;

/// Entry point of the `conda-mcp` binary.
pub fn main() -> ExitCode {
    eprintln!("conda-mcp: not implemented yet");
    ExitCode::FAILURE
}
