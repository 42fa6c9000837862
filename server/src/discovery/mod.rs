//! discovery (to be written).
