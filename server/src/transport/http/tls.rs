//! TLS for `--listen` (`--tls-cert`, `--tls-key`): a rustls server
//! configuration with the ring provider and rustls' safe defaults (TLS 1.2
//! and 1.3), from a PEM certificate chain and a PEM private key (PKCS#8,
//! PKCS#1 or SEC1). Without them the server speaks plain HTTP, for loopback
//! or behind a reverse proxy that terminates TLS (docs/remote.md).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// Why the certificate or key cannot be used. The text names the file,
/// never its content.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The certificate file cannot be read or holds no PEM certificate.
    #[error("--tls-cert {path}: {why}")]
    Cert {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// The key file cannot be read or holds no PEM private key.
    #[error("--tls-key {path}: {why}")]
    Key {
        /// The file.
        path: PathBuf,
        /// Why.
        why: String,
    },
    /// The key is not the private key of the leaf certificate.
    #[error("--tls-key {key} is not the private key of the certificate in --tls-cert {cert}")]
    Mismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
    /// rustls refused the configuration for another reason.
    #[error("--tls-cert and --tls-key: {0}")]
    Config(String),
}

/// The server configuration for `cert` (PEM chain, leaf first) and `key`.
///
/// Errors: [`TlsError`].
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| TlsError::Cert {
            path: cert.to_owned(),
            why: e.to_string(),
        })?
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Cert {
            path: cert.to_owned(),
            why: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Cert {
            path: cert.to_owned(),
            why: "no PEM certificate in it".into(),
        });
    }
    let key_der = PrivateKeyDer::from_pem_file(key).map_err(|e| TlsError::Key {
        path: key.to_owned(),
        why: match e {
            rustls::pki_types::pem::Error::NoItemsFound => {
                "no PEM private key in it (PKCS#8, PKCS#1 or SEC1)".into()
            }
            e => e.to_string(),
        },
    })?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // Loaded here so that a key rustls cannot use is named as such, apart
    // from a key that does not match the certificate.
    provider
        .key_provider
        .load_private_key(key_der.clone_key())
        .map_err(|_| TlsError::Key {
            path: key.to_owned(),
            why: "not a private key rustls can use (RSA, ECDSA P-256/P-384 or Ed25519)".into(),
        })?;
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| TlsError::Config(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key_der)
        .map_err(|e| match e {
            rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch) => {
                TlsError::Mismatch {
                    cert: cert.to_owned(),
                    key: key.to_owned(),
                }
            }
            e => TlsError::Config(e.to_string()),
        })?;
    Ok(Arc::new(config))
}
