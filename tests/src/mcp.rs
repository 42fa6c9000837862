//! mcp support (to be written).
