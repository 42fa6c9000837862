//! The MCP side of the server: the rmcp handler, serving both protocol
//! eras rmcp 3.11 knows (`initialize` sessions up to 2025-11-25 and the
//! stateless 2026-07-28 lifecycle opened by `server/discover`), for either
//! transport ([`crate::transport`]: stdio, Streamable HTTP), which sit
//! above it and import it, never the other way round.
//!
//! * [`handler`]: the [`rmcp::ServerHandler`]; [`ready`]: the server
//!   before startup finished;
//! * [`consent`]: `--approve-writes` in both protocol eras (how the
//!   person's answer can arrive, the form, the pipeline's `Asker`s);
//! * [`sink`]: the MCP side's subscriber to a call's events (progress,
//!   the plan's summary for the request, `--live-tools` after a change);
//! * [`live`]: the served [`live::Surface`] (catalog, tools, capabilities)
//!   and `--live-tools`, which rebuilds it when conda or its plugins change;
//! * [`progress`]: `notifications/progress` for long calls, and the phase
//!   of a call ([`progress::Tracker`]) that tasks report too;
//! * [`tasks`]: the MCP tasks extension (long calls answered with a task
//!   handle, `tasks/get`, `tasks/cancel`), owned by a [`principal`];
//! * [`principal`] and [`call_note`]: what a transport put into the
//!   request (who is calling; where the HTTP gate wants to hear whether a
//!   tool call failed), read here so the handler imports no transport;
//! * [`results`]: call outcomes as tool results (output-schema checked);
//! * [`capabilities`]: the `conda://capabilities` resource;
//! * [`listing`]: `tools/list`, the tool surface rendered into the
//!   protocol's `Tool` (the only place the two types meet).
//!
//! The tools themselves (names, schemas, routes, modes and filters) are the
//! protocol-free [`crate::tools`]; calls are planned and run by
//! [`crate::call`]. Startup (discovery, workers, building the [`State`]) is
//! [`crate::startup`]'s, and the process lifecycle around a transport the
//! composition root's (`crate::app`); this module only speaks the protocol.

pub mod apps;
pub mod call_note;
pub mod capabilities;
pub mod consent;
pub mod environments;
pub mod handler;
pub mod icon;
pub mod listing;
pub mod live;
pub mod principal;
pub mod progress;
pub mod prompts;
pub mod ready;
pub mod results;
pub mod roots;
pub mod sink;
pub mod state;
pub mod tasks;
pub mod watch;

/// The session header (MCP 2025-11-25, "Session Management"; HTTP header
/// names are case-insensitive).
pub const SESSION_HEADER: &str = "mcp-session-id";

use rmcp::model::{Implementation, ServerCapabilities, ServerConfig};

pub use call_note::{CallNote, Noted};
pub use ready::{CondaMcp, Readiness};
pub use state::State;

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
/// `resources.listChanged` and `resources.subscribe` are always
/// advertised (conda's environments change: [`watch`]); `live`
/// (`--live-tools`) advertises `tools.listChanged` too. `approve`
/// (`--approve-writes`) says that each change is asked of the person.
pub fn server_config(
    shared: Option<&crate::schema::SharedHelp>,
    mode: crate::tools::ToolMode,
    result_mode: crate::call::shape::document::ResultMode,
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
            .enable_prompts()
            .enable_completions()
            .enable_tasks()
            .build()
    } else {
        ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_resources_subscribe()
            .enable_prompts()
            .enable_completions()
            .enable_tasks()
            .build()
    };
    ServerConfig::new(capabilities)
        .with_server_info(
            Implementation::new("conda-mcp", env!("CARGO_PKG_VERSION"))
                .with_title("conda-mcp")
                .with_icons(icon::icons()),
        )
        .with_instructions(instructions)
}

/// The instructions of [`server_config`].
pub fn instructions(
    shared: Option<&crate::schema::SharedHelp>,
    mode: crate::tools::ToolMode,
    result_mode: crate::call::shape::document::ResultMode,
    warnings: &[String],
    live: bool,
    approve: bool,
) -> String {
    let mut s = String::from(match mode {
        crate::tools::ToolMode::Typed => {
            "Typed tools for the installed conda: one tool per conda command (conda_<command>), \
             arguments as in the conda CLI with dashes as underscores."
        }
        crate::tools::ToolMode::Compact => {
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
    if result_mode == crate::call::shape::document::ResultMode::Lean {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Catalog;
    use crate::tools::{ToolMode, ToolOptions, ToolSet};

    fn real() -> Catalog {
        crate::catalog::build(&crate::dump::recorded_conda()).expect("catalog")
    }

    fn standin() -> Catalog {
        let bytes = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/dumps/standin.json"
        ))
        .expect("stand-in dump");
        crate::catalog::build(&crate::dump::Dump::from_json(&bytes).expect("dump"))
            .expect("catalog")
    }

    /// Why `text` reads as cut inside a phrase, if it does: an ellipsis, an
    /// unclosed parenthesis, bracket or backquote, a final `,` `;` `:`, or
    /// a last word that cannot end a phrase (`of`, `the`, `e.g.`, ...).
    fn cut_mid_phrase(text: &str) -> Option<&'static str> {
        const DANGLING: &[&str] = &[
            "a", "an", "the", "of", "or", "and", "than", "that", "if", "when", "e.g", "i.e",
            "e.g.", "i.e.",
        ];
        let t = text.trim_end_matches('.').trim_end();
        let last = t
            .rsplit([' ', '('])
            .next()
            .unwrap_or("")
            .to_ascii_lowercase();
        if text.contains('…') {
            Some("an ellipsis")
        } else if text.matches('(').count() != text.matches(')').count()
            || text.matches('[').count() != text.matches(']').count()
        {
            Some("an unclosed parenthesis or bracket")
        } else if text.matches('`').count() % 2 == 1 {
            Some("an unclosed backquote")
        } else if t.ends_with([',', ';', ':']) {
            Some("a final separator")
        } else if DANGLING.contains(&last.as_str()) {
            Some("a dangling last word")
        } else {
            None
        }
    }

    /// Every `description` in a schema, with its JSON path.
    fn schema_descriptions(path: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    let p = format!("{path}/{k}");
                    match (k.as_str(), x) {
                        ("description", serde_json::Value::String(d)) => {
                            out.push((p, d.clone()));
                        }
                        _ => schema_descriptions(&p, x, out),
                    }
                }
            }
            serde_json::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    schema_descriptions(&format!("{path}/{i}"), x, out);
                }
            }
            _ => {}
        }
    }

    /// On the recorded real conda and the stand-in, in both tool modes: no
    /// property description in `tools/list` and no item of the
    /// instructions' shared-options list is cut inside a phrase (help is
    /// shortened at sentence and clause ends, `schema::input::clause_ends`),
    /// and the list is made of whole shared helps.
    #[test]
    fn no_description_or_shared_option_is_cut_mid_phrase() {
        use crate::call::shape::document::ResultMode;
        for (label, cat) in [("recorded conda", real()), ("stand-in", standin())] {
            let mut checked = 0;
            for mode in [ToolMode::Typed, ToolMode::Compact] {
                let set = ToolSet::build(
                    &cat,
                    &ToolOptions {
                        mode,
                        ..ToolOptions::writes(ToolOptions::default().profile, true)
                    },
                )
                .expect("builds");
                for t in set.listed.iter() {
                    let mut found = Vec::new();
                    let schema = serde_json::Value::Object((*t.input_schema).clone());
                    schema_descriptions(&t.name, &schema, &mut found);
                    for (path, d) in found {
                        checked += 1;
                        assert_eq!(cut_mid_phrase(&d), None, "{label}: {path}: {d:?}");
                    }
                }
                for (name, help) in &set.shared_help.entries {
                    assert_eq!(
                        cut_mid_phrase(help),
                        None,
                        "{label}: shared {name}: {help:?}"
                    );
                }
                let text = instructions(
                    Some(&set.shared_help),
                    mode,
                    ResultMode::Default,
                    &[],
                    true,
                    true,
                );
                let list = text
                    .split("Options many tools share (not repeated in their schemas): ")
                    .nth(1)
                    .expect("the shared-options list");
                let list = list
                    .strip_suffix("; the others in shared_options.")
                    .or_else(|| list.strip_suffix('.'))
                    .expect("the list's end");
                // The list is whole entries in order, joined by "; " (a help
                // may itself hold "; "): none is cut.
                let mut rest = list;
                for (name, help) in &set.shared_help.entries {
                    let item = format!("{name}: {help}");
                    if let Some(after) = rest.strip_prefix(item.as_str()) {
                        rest = after.strip_prefix("; ").unwrap_or(after);
                    }
                }
                assert_eq!(rest, "", "{label}: not whole shared helps: {list:?}");
            }
            assert!(checked > 50, "{label}: {checked} descriptions");
        }
    }

    /// The rule's own cases: what reads as cut and what does not.
    #[test]
    fn cut_mid_phrase_catches_the_cuts_it_names() {
        for cut in [
            "Package specs, e.g…",
            "Threads to use (one of 1, 2, 4, 8",
            "Remove all packages, i.e",
            "Write to the system file of",
            "Use `sys.executable",
            "Install all packages,",
        ] {
            assert!(cut_mid_phrase(cut).is_some(), "{cut}");
        }
        for whole in [
            "Remove all packages.",
            "Shell to uninstall from (auto-detected if omitted)",
            "Shell to uninstall from",
            "Environment name.",
        ] {
            assert_eq!(cut_mid_phrase(whole), None, "{whole}");
        }
    }

    /// Hosts cut instructions and descriptions at 2,048 characters: on the
    /// recorded real conda (or `CONDA_MCP_REAL_DUMP`) and the stand-in,
    /// under every mode, none is longer, and the instructions begin with
    /// the essentials.
    #[test]
    fn instructions_and_descriptions_fit_hosts_limits() {
        use crate::call::shape::document::ResultMode;
        let warning = ["CONDARC names a file conda will not load (/x/y.condarc)".to_owned()];
        for (label, cat) in [("recorded conda", real()), ("stand-in", standin())] {
            for mode in [ToolMode::Typed, ToolMode::Compact] {
                for allow in [false, true] {
                    let set = ToolSet::build(
                        &cat,
                        &ToolOptions {
                            mode,
                            ..ToolOptions::writes(ToolOptions::default().profile, allow)
                        },
                    )
                    .expect("builds");
                    let mut longest = 0;
                    for t in set.listed.iter() {
                        let n = t.description.chars().count();
                        longest = longest.max(n);
                        assert!(
                            n <= MAX_HOST_TEXT_CHARS,
                            "{label}: {} is {n} characters",
                            t.name
                        );
                    }
                    for t in &set.generated {
                        let n = t.description.chars().count();
                        assert!(
                            n <= MAX_HOST_TEXT_CHARS,
                            "{label}: {} is {n} characters",
                            t.name
                        );
                    }
                    for result_mode in [ResultMode::Default, ResultMode::Lean] {
                        for (live, approve) in [(false, false), (true, true)] {
                            for warnings in [&[][..], &warning[..]] {
                                for shared in [Some(&set.shared_help), None] {
                                    let text = instructions(
                                        shared,
                                        mode,
                                        result_mode,
                                        warnings,
                                        live,
                                        approve,
                                    );
                                    let n = text.chars().count();
                                    assert!(n <= MAX_HOST_TEXT_CHARS, "{label}: instructions {n}");
                                    // The essentials, in the first part.
                                    let head: String = text.chars().take(1000).collect();
                                    for needle in ["policy", "json: true", "error.code"] {
                                        assert!(head.contains(needle), "{needle}: {text}");
                                    }
                                    if warnings.is_empty() {
                                        assert!(!text.ends_with('…'), "{text}");
                                    }
                                }
                            }
                        }
                    }
                    eprintln!(
                        "{label} {mode:?} allow={allow}: longest description {longest} characters, instructions {} (lean, live)",
                        instructions(
                            Some(&set.shared_help),
                            mode,
                            ResultMode::Lean,
                            &[],
                            true,
                            true
                        )
                        .chars()
                        .count()
                    );
                }
            }
        }
    }
}
