//! conda-mcp: an MCP server that exposes an installed conda as typed tools.
//!
//! Data flows one way (ARCHITECTURE.md "Bird's-eye view"):
//!
//! * at startup: target → [`discovery`] (dump, cached) → [`catalog`] →
//!   tools ([`schema`], names, annotations from [`policy`]);
//! * per call ([`call`], free of the protocol): plan (validate with
//!   [`schema`], compile with [`compile`], classify and enforce with
//!   [`policy`]) → run through the worker ([`worker_client`]) → one
//!   outcome, which [`mcp`] turns into a tool result.
//!
//! What conda sees of the host (environment allowlist, working directory,
//! home, `CONDARC`) is checked at startup by [`host_env`].
//!
//! The binary (`conda-mcp`, `src/main.rs`) is a thin layer over [`app`],
//! the composition root: it parses the flags ([`cli`]), resolves them once
//! into the [`settings::Settings`] every other module takes, and runs
//! startup and the stdio session, or `conda-mcp check`.

pub mod app;
pub mod argparse;
pub mod audit;
pub mod call;
pub mod catalog;
pub mod check;
pub mod cli;
pub mod cli_http;
pub mod compile;
pub mod completion;
pub mod discovery;
pub mod dump;
pub mod health;
pub mod host_env;
pub mod http;
pub mod logging;
pub mod mcp;
pub mod metrics;
pub mod policy;
pub mod principal;
pub mod schema;
pub mod settings;
pub mod target;
pub mod typed;
pub mod worker_client;
