//! mcp (to be written).
