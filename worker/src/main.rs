//! `conda-mcp-worker`: runs conda for the conda-mcp server under limits.

fn main() -> std::process::ExitCode {
    eprintln!("conda-mcp-worker: not implemented yet");
    std::process::ExitCode::FAILURE
}
