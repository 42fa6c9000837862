//! `conda-mcp-worker`: the process that runs conda for `conda-mcp` (see the
//! `conda_mcp_worker` library). Built by this package so that every install
//! puts it next to `conda-mcp`, where the server looks for it first.

fn main() -> std::process::ExitCode {
    conda_mcp_worker::main()
}
