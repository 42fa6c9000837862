//! The two transports, side by side above the MCP handler ([`crate::mcp`]):
//! both hand every request to the same [`crate::mcp::CondaMcp`], so the
//! tools, policy and results never depend on how a request arrived.
//!
//! * [`stdio`]: one JSON-RPC message per line on stdin/stdout (the default);
//! * [`http`]: MCP over Streamable HTTP (`--listen`), with its gate,
//!   tokens, OAuth and TLS;
//! * [`undecodable`]: a message that cannot be decoded (a lone surrogate
//!   escape, a batch, an unknown request shape) answered as an invalid
//!   request with its id, on both transports alike;
//! * [`request_log`]: the one log line per request both transports write.

pub mod http;
pub mod request_log;
pub mod stdio;
pub mod undecodable;
