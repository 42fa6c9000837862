//! compile (to be written).
