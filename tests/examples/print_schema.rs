//! Developer tool (not a test): prints one command's full-profile
//! inputSchema and its catalog entry, as the server builds them from a dump.
//!
//! ```text
//! cargo run -p conda-mcp-tests --example print_schema -- env create
//! cargo run -p conda-mcp-tests --example print_schema -- --dump tests/fixtures/dumps/standin.json create
//! ```
//!
//! The dump defaults to the recorded conda 26 parser
//! (`tests/fixtures/dumps/conda-26.json`, or `CONDA_MCP_REAL_DUMP`).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use conda_mcp_server::catalog;
use conda_mcp_server::dump::Dump;
use conda_mcp_server::schema::{Profile, input_schema};

/// Print a conda command's inputSchema (full profile) and catalog entry.
#[derive(Parser)]
struct Args {
    /// The dump to build the catalog from (default: the recorded conda 26
    /// parser, or `CONDA_MCP_REAL_DUMP`).
    #[arg(long, value_name = "PATH")]
    dump: Option<PathBuf>,
    /// The command path without `conda` (`env create`).
    #[arg(required = true, value_name = "WORD")]
    command: Vec<String>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let dump_path = args.dump.unwrap_or_else(conda_mcp_tests::paths::real_dump);
    let dump = match std::fs::read(&dump_path)
        .map_err(|e| e.to_string())
        .and_then(|b| Dump::from_json(&b).map_err(|e| e.to_string()))
    {
        Ok(d) => d,
        Err(e) => {
            eprintln!("print_schema: cannot load {}: {e}", dump_path.display());
            return ExitCode::FAILURE;
        }
    };
    let cat = match catalog::build(&dump) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("print_schema: the catalog does not build: {e}");
            return ExitCode::FAILURE;
        }
    };
    let path: Vec<&str> = std::iter::once("conda")
        .chain(args.command.iter().map(String::as_str))
        .collect();
    let Some(idx) = cat.find(&path) else {
        eprintln!(
            "print_schema: {} is not a command of {}",
            path.join(" "),
            dump_path.display()
        );
        return ExitCode::FAILURE;
    };
    let schema = input_schema(&cat, idx, Profile::Full);
    // A closed stdout (`| head`) ends the output, not in a panic.
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{}\n{}",
        serde_json::to_string_pretty(&schema).unwrap_or_default(),
        serde_json::to_string_pretty(&cat.commands[idx]).unwrap_or_default()
    );
    ExitCode::SUCCESS
}
