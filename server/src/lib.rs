//! conda-mcp: an MCP server that exposes an installed conda as typed tools.
//!
//! Data flows one way (ARCHITECTURE.md "Bird's-eye view"), and the
//! top-level modules form no circle (a test reads their imports:
//! `tests/tests/library/layering.rs`):
//!
//! * at startup ([`startup`]): target → [`discovery`] (dump, cached) →
//!   [`catalog`] → [`tools`] (the protocol-free tool surface: [`schema`],
//!   names, annotations from [`policy`]);
//! * per call ([`call`], free of the protocol): plan (validate with
//!   [`schema`], compile with [`compile`], classify and enforce with
//!   [`policy`]) → run through the worker ([`worker_client`]) → one
//!   outcome, which [`mcp`] turns into a tool result;
//! * the transports ([`transport`]: stdio, Streamable HTTP) sit above
//!   [`mcp`] and hand it every request.
//!
//! What conda sees of the host (environment allowlist, working directory,
//! home, `CONDARC`) is checked at startup by [`host_env`].
//!
//! The binary (`conda-mcp`, `src/main.rs`) is a thin layer over [`app`],
//! the composition root: it parses the flags ([`cli`]), resolves them once
//! into the [`settings::Settings`] every other module takes, and runs
//! [`startup`] and a transport, or `conda-mcp check` ([`check`], which runs
//! the same startup steps).

pub mod app;
pub mod argparse;
pub mod call;
pub mod catalog;
pub mod check;
pub mod cli;
pub mod compile;
pub mod completion;
pub mod discovery;
pub mod dump;
pub mod health;
pub mod host_env;
pub mod inventory;
pub mod logging;
pub mod mcp;
pub mod metrics;
pub mod policy;
pub mod principal;
pub mod prompts;
pub mod schema;
pub mod settings;
pub mod setup;
pub mod startup;
pub mod target;
pub mod tools;
pub mod transport;
pub mod worker_client;
