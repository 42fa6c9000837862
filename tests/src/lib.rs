//! Support for the black-box tests in `tests/tests/`: locating the built
//! binaries, building stand-in conda prefixes, and talking to the server
//! through a real MCP client.
