//! Support for the black-box tests in `tests/tests/`: locating the built
//! binaries ([`bins`]), running jobs through the worker ([`exec`]), fixture paths ([`paths`]), building stand-in conda
//! prefixes ([`standin`]), warm-conda calls ([`warm`]) and talking to the server through a real MCP
//! client ([`mcp`]).

pub mod bins;
pub mod completion;
pub mod exec;
pub mod mcp;
pub mod paths;
pub mod rawrpc;
pub mod results;
pub mod roundtrip;
pub mod standin;
pub mod warm;
