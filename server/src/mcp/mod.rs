//! The MCP side of the server: the rmcp handler on stdio, serving both
//! protocol eras rmcp 3.11 knows (`initialize` sessions up to 2025-11-25 and
//! the stateless 2026-07-28 lifecycle opened by `server/discover`).
//!
//! * [`stdio`]: the stdio transport (one JSON-RPC message per line; answers
//!   malformed lines itself), and [`request_log`], its one log line per
//!   request;
//! * [`handler`]: the [`rmcp::ServerHandler`];
//! * [`tools`]: the tool set built once at startup (generated tools,
//!   `conda_execute`, `conda_cli_command`), narrowed by [`filter`]
//!   (`--tools`, `--exclude-tools`); [`compact`]: the three tools of
//!   `--tool-mode compact`;
//! * [`execute`]: the raw tool's input and checks;
//! * [`cli_command`]: the `conda_cli_command` tool's definition (one command
//!   of the conda-completion plugin's manifest);
//! * [`live`]: the served [`live::Surface`] (catalog, tools, capabilities)
//!   and `--live-tools`, which rebuilds it when conda or its plugins change;
//! * [`progress`]: `notifications/progress` for long calls, and the phase
//!   of a call ([`progress::Tracker`]) that tasks report too;
//! * [`tasks`]: the MCP tasks extension (long calls answered with a task
//!   handle, `tasks/get`, `tasks/cancel`), owned by a [`principal`];
//! * [`results`]: call outcomes as tool results (output-schema checked);
//! * [`capabilities`]: the `conda://capabilities` resource.
//!
//! Startup (discovery, workers, building the [`State`]) and the process
//! lifecycle around the stdio session are the composition root's
//! (`crate::app`); this module only speaks the protocol.

pub mod capabilities;
pub mod cli_command;
pub mod compact;
pub mod execute;
pub mod filter;
pub mod handler;
pub mod live;
pub mod principal;
pub mod progress;
pub mod request_log;
pub mod results;
pub mod stdio;
pub mod tasks;
pub mod tools;

use rmcp::ServiceExt;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use tokio_util::sync::CancellationToken;

pub use handler::{CondaMcp, State};

/// The `initialize` / `server/discover` answer: conda-mcp and its version,
/// tools and resources, and instructions that state once what many tools
/// share (the help of common options, one meaning per name; the result
/// fields; how to read errors and, in lean mode, cut results).
///
/// `warnings` (startup problems a model should know of, e.g. a `CONDARC`
/// conda will not load) are appended, one sentence each. `live`
/// (`--live-tools`) advertises `tools.listChanged`, `resources.listChanged`
/// and `resources.subscribe` and says in the instructions that the tools
/// can change.
pub fn server_config(
    shared: &crate::schema::SharedHelp,
    mode: tools::ToolMode,
    result_mode: crate::call::document::ResultMode,
    warnings: &[String],
    live: bool,
) -> ServerConfig {
    let mut instructions = String::from(match mode {
        tools::ToolMode::Typed => {
            "Typed tools for the installed conda: one tool per conda command (conda_<command>), \
             arguments as in the conda CLI with dashes as underscores."
        }
        tools::ToolMode::Compact => {
            "Tools for the installed conda: conda_commands lists the commands, conda_describe \
             gives one command's arguments (as in the conda CLI with dashes as underscores), \
             conda_call runs it."
        }
    });
    instructions.push_str(
        " A boolean whose conda flag has a --no- form passes that form when false. \
         The policy is fixed at startup; a tool it limits says so first in its description, \
         and a refused call names the startup option it needs. Every call returns exit_code, \
         stdout, stderr, duration_ms, parsed_json (conda's JSON answer), \
         timed_out, cancelled, stdout_truncated, stderr_truncated, restart_required, \
         confirmation_required (true when a change ran as a dry run because yes: true was not \
         set), replaced_environment (when a create replaces, or previews replacing, an \
         existing environment), and on failure error. \
         Pass json: true wherever a command has it: conda's answer then arrives as parsed_json. \
         When a result has isError, read error.code first (error.retryable says whether repeating \
         the same call can help; error.details has the facts). \
         conda://capabilities describes the catalog, the policy and the full result schema.",
    );
    if result_mode == crate::call::document::ResultMode::Lean {
        instructions.push_str(
            " Results are lean: when stdout was parsed it is not repeated (stdout_omitted), and a \
             result over the size budget is cut (cut says what was kept of how many): narrow the \
             call with the tool's own options as the summary line says, instead of repeating it.",
        );
    }
    if !shared.entries.is_empty() {
        instructions.push_str(" Options shared by many tools: ");
        instructions.push_str(&shared.describe());
        instructions.push('.');
    }
    if live {
        instructions.push_str(
            " The tools are rebuilt when conda or its plugins change \
             (notifications/tools/list_changed): list them again then.",
        );
    }
    for w in warnings {
        instructions.push_str(" Warning: ");
        instructions.push_str(w);
        instructions.push('.');
    }
    // The tasks extension is always offered; only clients that declare it
    // get task handles (`tasks`).
    let capabilities = if live {
        ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_resources_subscribe()
            .enable_tasks()
            .build()
    } else {
        ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_tasks()
            .build()
    };
    ServerConfig::new(capabilities)
        .with_server_info(
            Implementation::new("conda-mcp", env!("CARGO_PKG_VERSION")).with_title("conda-mcp"),
        )
        .with_instructions(instructions)
}

/// Serves `server` on stdin/stdout until the session ends (stdin closed or
/// a transport error). `eof` is cancelled as soon as stdin closes, before
/// rmcp has waited for the calls in flight; `max_line` bounds one incoming
/// message ([`stdio::line_limit`]).
///
/// Errors: why the session ended when it was not a clean end of stdin (a
/// sentence for the log).
pub async fn serve_stdio(
    server: CondaMcp,
    eof: CancellationToken,
    max_line: usize,
) -> Result<(), String> {
    match server.serve(stdio::stdio(eof, max_line)).await {
        Ok(running) => running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}
