//! `conda-mcp`: see the crate docs of `conda_mcp_server`.

fn main() -> std::process::ExitCode {
    conda_mcp_server::app::main()
}
