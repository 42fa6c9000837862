//! standin support (to be written).
