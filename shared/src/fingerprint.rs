//! sha256 helpers: discovery fingerprints, cache keys and name suffixes.

use sha2::{Digest, Sha256};

/// Lower-case hex sha256 of `bytes` (64 characters).
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}
