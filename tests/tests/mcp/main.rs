//! The `mcp` test binary: the built `conda-mcp` as a host runs it. A real
//! MCP client (rmcp) or raw JSON-RPC speaks to it over stdio, its `check`
//! command runs as a person runs it, and the installed and packaged
//! binaries are used the way an MCP host uses them. Every module here goes
//! through the server's process boundary, never through its library.
//!
//! One binary for all of them (not one per file) so the server library and
//! its dependencies are linked once; run one module with a filter, e.g.
//! `cargo test -p conda-mcp-tests --test mcp surface::`.

mod agent;
mod approval;
mod apps;
mod apps_browser;
mod check;
mod cli_command;
mod conda_plugin;
mod condarc;
mod docs;
mod environment_watch;
mod guard;
mod host_compat;
mod hosts;
mod http;
mod installed;
mod inventory;
mod log;
mod long_calls;
mod oauth;
mod packaging;
mod prompts;
mod reads;
mod real_conda;
mod results;
mod server;
mod sessions;
mod settings;
mod soak;
mod startup;
mod surface;
mod tasks;
mod team;
mod trust;
mod writer_lock;
mod writes;
