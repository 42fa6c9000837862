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
//! The binary (`conda-mcp`, `src/main.rs`) is a thin layer over [`cli`].

pub mod argparse;
pub mod call;
pub mod catalog;
pub mod cli;
pub mod compile;
pub mod completion;
pub mod discovery;
pub mod dump;
pub mod logging;
pub mod mcp;
pub mod policy;
pub mod schema;
pub mod worker_client;
