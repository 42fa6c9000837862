//! Support for the black-box tests in `tests/tests/`: locating the built
//! binaries ([`bins`]), running jobs through the worker ([`exec`]), fixture
//! paths ([`paths`]), building stand-in conda prefixes ([`standin`], with
//! its batch argparse oracle), the conda-completion plugin in a prefix
//! ([`completion`]), warm-conda calls ([`warm`]), talking to the server
//! through a real MCP client ([`mcp`]) or raw JSON-RPC ([`rawrpc`]), or
//! over HTTP in its `--listen` mode ([`http`]), waiting for log lines
//! ([`logs`]), the
//! compiler's round trip ([`roundtrip`]), the test tiers ([`tiers`]), the
//! real hosts of the `hosts` tier ([`hosts`]), and
//! the soak and chaos run ([`soak`], with its `/proc` readers [`procfs`]).

pub mod bins;
pub mod completion;
pub mod exec;
pub mod hosts;
pub mod http;
pub mod inventory;
pub mod logs;
pub mod mcp;
pub mod oauth;
pub mod paths;
pub mod procfs;
pub mod pyclient;
pub mod rawrpc;
pub mod results;
pub mod roundtrip;
pub mod soak;
pub mod standin;
pub mod stats;
pub mod tiers;
pub mod users;
pub mod warm;
