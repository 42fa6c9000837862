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

pub mod approval;
pub mod capabilities;
pub mod cli_command;
pub mod compact;
pub mod execute;
pub mod filter;
pub mod handler;
pub mod live;
mod oversight;
pub mod principal;
pub mod progress;
pub mod ready;
pub mod request_log;
pub mod results;
pub mod stdio;
pub mod tasks;
pub mod tools;
pub mod undecodable;

use rmcp::ServiceExt;
use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};
use tokio_util::sync::CancellationToken;

pub use handler::State;
pub use ready::{CondaMcp, Readiness};

/// Most characters of the server's `instructions` and of every tool
/// description: Claude Code cuts both at 2,048 characters without saying
/// so, so what matters comes first and nothing passes the limit.
pub const MAX_HOST_TEXT_CHARS: usize = 2048;

/// The `initialize` / `server/discover` answer: conda-mcp and its version,
/// tools and resources, and instructions of at most
/// [`MAX_HOST_TEXT_CHARS`] characters, essentials first: what the tools
/// are, the policy sentence, `json: true`, how to read `error`, the result
/// fields (and, in lean mode, cut results); then `warnings` (startup
/// problems a model should know of, e.g. a `CONDARC` conda will not load,
/// one sentence each) and, with `live`, that the tools can change; last the
/// help of the options many tools share (left out of their schemas), as
/// many as fit, the rest named in `conda://capabilities`
/// (`shared_options`). `shared` is `None` while discovery has not
/// finished: the instructions then point at `conda://capabilities` for
/// them.
///
/// `live` (`--live-tools`) advertises `tools.listChanged`,
/// `resources.listChanged` and `resources.subscribe`. `approve`
/// (`--approve-writes`) says that each change is asked of the person.
pub fn server_config(
    shared: Option<&crate::schema::SharedHelp>,
    mode: tools::ToolMode,
    result_mode: crate::call::document::ResultMode,
    warnings: &[String],
    live: bool,
    approve: bool,
) -> ServerConfig {
    let instructions = instructions(shared, mode, result_mode, warnings, live, approve);
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

/// The instructions of [`server_config`].
pub fn instructions(
    shared: Option<&crate::schema::SharedHelp>,
    mode: tools::ToolMode,
    result_mode: crate::call::document::ResultMode,
    warnings: &[String],
    live: bool,
    approve: bool,
) -> String {
    let mut s = String::from(match mode {
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
    s.push_str(
        " The policy is fixed at startup; a tool it limits says so first in its description, \
         and a refused call names the startup option it needs. \
         Pass json: true wherever a command has it: conda's answer then arrives as parsed_json. \
         When a result has isError, read error.code first (error.retryable: whether repeating \
         the same call can help; error.details: the facts). \
         Results carry exit_code, stdout, stderr, duration_ms, parsed_json, timed_out, \
         cancelled, stdout_truncated, stderr_truncated, restart_required, \
         confirmation_required (a change ran as a dry run because yes: true was not set), \
         replaced_environment (a create replaces, or previews replacing, an existing \
         environment) and, on failure, error. \
         A boolean whose conda flag has a --no- form passes that form when false.",
    );
    if result_mode == crate::call::document::ResultMode::Lean {
        s.push_str(
            " Results are lean: parsed stdout is not repeated (stdout_omitted), and a result over \
             the size budget is cut (cut says what was kept of how many): narrow the call with the \
             tool's own options as the summary line says instead of repeating it.",
        );
    }
    if approve {
        s.push_str(
            " Each change needs the person's approval: the server shows them conda's plan through \
             the host and applies exactly that plan only if they approve (yes: true does not \
             skip the question). error.code declined: the person said no, do not repeat the \
             call unless they ask; plan_changed: call again to show them the new plan.",
        );
    }
    if live {
        s.push_str(
            " The tools are rebuilt when conda or its plugins change \
             (notifications/tools/list_changed): list them again then.",
        );
    }
    for w in warnings {
        s.push_str(" Warning: ");
        s.push_str(w);
        s.push('.');
    }
    s.push_str(
        " conda://capabilities describes the catalog, the policy, the full result schema and \
         the options many tools share (shared_options).",
    );
    let entries = shared
        .map(|h| h.entries.iter().collect::<Vec<_>>())
        .unwrap_or_default();
    if !entries.is_empty() {
        const HEAD: &str = " Options many tools share (not repeated in their schemas): ";
        const REST: &str = "; the others in shared_options.";
        let room = MAX_HOST_TEXT_CHARS
            .saturating_sub(s.chars().count() + HEAD.chars().count() + REST.chars().count());
        let mut list = String::new();
        let mut all = true;
        for (name, help) in entries {
            let item = format!("{}{name}: {help}", if list.is_empty() { "" } else { "; " });
            if list.chars().count() + item.chars().count() > room {
                all = false;
                continue;
            }
            list.push_str(&item);
        }
        if !list.is_empty() {
            s.push_str(HEAD);
            s.push_str(&list);
            s.push_str(if all { "." } else { REST });
        }
    }
    if s.chars().count() > MAX_HOST_TEXT_CHARS {
        // Only many long warnings get here: keep the essentials first.
        s = s.chars().take(MAX_HOST_TEXT_CHARS - 1).collect();
        s.push('…');
    }
    s
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
