//! bins support (to be written).
