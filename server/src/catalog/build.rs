//! Dump → catalog. (Owned by the discovery work: see issue 3.)

use super::Catalog;
use crate::dump::Dump;

/// Errors that make a dump unusable as a whole (a single unrepresentable
/// action never is one: it makes its command raw-only).
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// The root parser is not `conda`, or the tree is malformed.
    #[error("the discovery dump has no usable root parser: {0}")]
    NoRoot(String),
}

/// Builds the catalog from a dump.
///
/// Errors: [`BuildError`] only when the tree as a whole is unusable.
pub fn build(dump: &Dump) -> Result<Catalog, BuildError> {
    let _ = dump;
    Err(BuildError::NoRoot(
        "catalog building is not implemented yet".into(),
    ))
}
