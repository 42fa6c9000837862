//! The issuer's signing keys (`--oauth-jwks URL|FILE`, a JSON Web Key Set,
//! RFC 7517 §5), cached in memory.
//!
//! * A URL is fetched at startup (a failure is logged; the next token
//!   fetches again) and again when a token names a key id (`kid`) the
//!   cache does not hold — the issuer rotated its keys — or when the cache
//!   is older than [`MAX_AGE`] (a key the issuer withdrew stops being
//!   trusted). Fetches are at least [`MIN_REFETCH`] apart, whatever
//!   arrives: a flood of tokens with made-up key ids costs the issuer one
//!   request per interval, and concurrent requests wait for the same
//!   fetch. Only `https`, or `http` to a loopback host; no redirects; at
//!   most [`MAX_BYTES`] of body within [`FETCH_TIMEOUT`]; TLS is rustls
//!   with the ring provider and the system's trusted roots; the proxy of
//!   `HTTPS_PROXY`/`ALL_PROXY` (and `NO_PROXY`) is used, except for a
//!   loopback URL. A build without the `jwks-fetch` feature
//!   (server/Cargo.toml) has no HTTPS client and refuses a URL at startup
//!   ([`JwksError::NoFetch`]).
//! * A FILE (air-gapped sites) is read once at startup; an unusable file is
//!   a startup error.
//!
//! Only keys this server can verify with are kept: RSA keys (RS256) and
//! P-256 keys (ES256), whose `use` is absent or `sig` and whose `alg` is
//! absent or that algorithm. Symmetric (`oct`) keys are never kept, so no
//! HMAC verification can happen whatever a token's header says.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use url::Url;

/// Shortest time between two fetches of a JWKS URL.
pub const MIN_REFETCH: Duration = Duration::from_secs(10);
/// A cached key set older than this is fetched again before it is used
/// (at most every [`MIN_REFETCH`]; on failure the old set stays).
pub const MAX_AGE: Duration = Duration::from_secs(3600);
/// Time limit of one fetch, connection included.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest key set document accepted.
pub const MAX_BYTES: usize = 1024 * 1024;

/// Where the keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `https://…` (or `http://` to a loopback host).
    Url(Url),
    /// A local file.
    File(PathBuf),
}

/// Why the key set cannot be had.
#[derive(Debug, thiserror::Error)]
pub enum JwksError {
    /// A URL that is neither https nor http to a loopback host.
    #[error("--oauth-jwks: a URL must be https (http only to a loopback host such as 127.0.0.1)")]
    Insecure,
    /// The file cannot be read.
    #[error("cannot read the --oauth-jwks file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The document is not a JSON Web Key Set.
    #[error("the --oauth-jwks key set is not a JSON Web Key Set ({0})")]
    NotKeySet(&'static str),
    /// The set holds no RS256 or ES256 signing key.
    #[error("the --oauth-jwks key set holds no RSA or P-256 signing key")]
    NoUsableKey,
    /// The HTTP client cannot be built (TLS roots).
    #[error("cannot set up the HTTPS client for --oauth-jwks: {0}")]
    Client(String),
    /// This build has no HTTPS client (built without the `jwks-fetch`
    /// feature, server/Cargo.toml), so a URL cannot be used.
    #[error(
        "--oauth-jwks URL: this conda-mcp was built without its HTTPS client (the jwks-fetch feature); pass --oauth-jwks FILE, a local copy of the issuer's key set"
    )]
    NoFetch,
    /// The fetch failed (connection, TLS, status, size, time).
    #[error("fetching the --oauth-jwks key set failed: {0}")]
    Fetch(String),
}

/// One usable verification key.
#[derive(Clone)]
pub struct Key {
    /// Its `kid`, when it has one.
    pub kid: Option<String>,
    /// The one algorithm it verifies.
    pub alg: Algorithm,
    /// The key.
    pub key: DecodingKey,
}

impl std::fmt::Debug for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Key")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

/// The cache.
#[derive(Debug)]
pub struct Jwks {
    source: Source,
    client: Option<Client>,
    keys: RwLock<Arc<Vec<Key>>>,
    /// When the last fetch started (`None`: never), held across a fetch so
    /// concurrent requests wait for it instead of fetching again.
    fetched: tokio::sync::Mutex<Option<Instant>>,
    /// When the keys held now were fetched.
    loaded: RwLock<Option<Instant>>,
}

impl Jwks {
    /// The cache for `source`: a file is read now; a URL is fetched now,
    /// and a failure only logged (the issuer may be down at startup).
    ///
    /// Errors: [`JwksError`] for an insecure URL, a client that cannot be
    /// built, an unusable file.
    pub async fn load(source: Source) -> Result<Self, JwksError> {
        let (keys, client) = match &source {
            Source::File(path) => (read_file(path)?, None),
            Source::Url(url) => {
                if !secure(url) {
                    return Err(JwksError::Insecure);
                }
                (Vec::new(), Some(client(is_loopback(url))?))
            }
        };
        let jwks = Jwks {
            source,
            client,
            loaded: RwLock::new((!keys.is_empty()).then(Instant::now)),
            keys: RwLock::new(Arc::new(keys)),
            fetched: tokio::sync::Mutex::new(None),
        };
        if matches!(jwks.source, Source::Url(_)) {
            jwks.refresh().await;
        }
        Ok(jwks)
    }

    /// The key for a token signed with `alg` naming `kid`: from the cache,
    /// else after a fetch when one is due ([`MIN_REFETCH`]).
    pub async fn key(&self, kid: Option<&str>, alg: Algorithm) -> Option<Key> {
        let stale = self
            .loaded
            .read()
            .map(|l| l.is_none_or(|t| t.elapsed() > MAX_AGE))
            .unwrap_or(true);
        if !stale && let Some(k) = find(&self.current(), kid, alg) {
            return Some(k);
        }
        if matches!(self.source, Source::Url(_)) {
            self.refresh().await;
        }
        find(&self.current(), kid, alg)
    }

    /// How many usable keys the cache holds.
    pub fn len(&self) -> usize {
        self.current().len()
    }

    /// Whether the cache holds no usable key.
    pub fn is_empty(&self) -> bool {
        self.current().is_empty()
    }

    fn current(&self) -> Arc<Vec<Key>> {
        self.keys.read().map(|k| Arc::clone(&k)).unwrap_or_default()
    }

    /// Fetches the URL again unless a fetch started less than
    /// [`MIN_REFETCH`] ago; keeps the old keys when it fails.
    async fn refresh(&self) {
        let (Source::Url(url), Some(client)) = (&self.source, &self.client) else {
            return;
        };
        let mut fetched = self.fetched.lock().await;
        if fetched.is_some_and(|t| t.elapsed() < MIN_REFETCH) {
            return;
        }
        *fetched = Some(Instant::now());
        match fetch(client, url).await {
            Ok(keys) => {
                tracing::info!(keys = keys.len(), "fetched the --oauth-jwks key set");
                if let Ok(mut k) = self.keys.write() {
                    *k = Arc::new(keys);
                }
                if let Ok(mut l) = self.loaded.write() {
                    *l = Some(Instant::now());
                }
            }
            Err(e) => tracing::warn!("{e}; the keys held so far stay in use"),
        }
    }
}

/// The key for `kid` and `alg`: the key with that id (a token without
/// `kid`: the first key without an id) whose algorithm is `alg`.
fn find(keys: &[Key], kid: Option<&str>, alg: Algorithm) -> Option<Key> {
    keys.iter()
        .find(|k| k.kid.as_deref() == kid && k.alg == alg)
        .cloned()
}

/// `https`, or `http` to a loopback host.
pub fn secure(url: &Url) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => is_loopback(url),
        _ => false,
    }
}

/// Whether `url`'s host is `localhost` or a loopback address.
fn is_loopback(url: &Url) -> bool {
    url.host_str().is_some_and(|h| {
        h.eq_ignore_ascii_case("localhost")
            || h.trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    })
}

/// The HTTPS client of a URL source.
#[cfg(feature = "jwks-fetch")]
type Client = reqwest::Client;

/// No HTTPS client in a build without the `jwks-fetch` feature: the type
/// has no value, so no fetch can happen.
#[cfg(not(feature = "jwks-fetch"))]
#[derive(Debug)]
enum Client {}

/// Errors: [`JwksError::NoFetch`], always, in a build without the
/// `jwks-fetch` feature.
#[cfg(not(feature = "jwks-fetch"))]
fn client(_loopback: bool) -> Result<Client, JwksError> {
    Err(JwksError::NoFetch)
}

#[cfg(not(feature = "jwks-fetch"))]
async fn fetch(client: &Client, _url: &Url) -> Result<Vec<Key>, JwksError> {
    match *client {}
}

/// The HTTPS client: rustls with the ring provider, the platform's roots,
/// no redirects, [`FETCH_TIMEOUT`]; the environment's proxy unless
/// `loopback`.
#[cfg(feature = "jwks-fetch")]
fn client(loopback: bool) -> Result<Client, JwksError> {
    use rustls_platform_verifier::BuilderVerifierExt as _;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|b| b.with_platform_verifier())
        .map_err(|e| JwksError::Client(e.to_string()))?
        .with_no_client_auth();
    let builder = reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .redirect(reqwest::redirect::Policy::none())
        .timeout(FETCH_TIMEOUT);
    let builder = if loopback {
        builder.no_proxy()
    } else {
        builder
    };
    builder
        .build()
        .map_err(|e| JwksError::Client(e.to_string()))
}

#[cfg(feature = "jwks-fetch")]
async fn fetch(client: &Client, url: &Url) -> Result<Vec<Key>, JwksError> {
    let fail = |e: reqwest::Error| JwksError::Fetch(e.without_url().to_string());
    let mut response = client.get(url.clone()).send().await.map_err(fail)?;
    if !response.status().is_success() {
        return Err(JwksError::Fetch(format!("HTTP {}", response.status())));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(fail)? {
        if body.len() + chunk.len() > MAX_BYTES {
            return Err(JwksError::Fetch(format!("larger than {MAX_BYTES} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    parse(&body)
}

fn read_file(path: &Path) -> Result<Vec<Key>, JwksError> {
    let bytes = std::fs::read(path).map_err(|source| JwksError::Read {
        path: path.to_owned(),
        source,
    })?;
    parse(&bytes)
}

/// The usable keys of a JWKS document. Keys that do not parse, or that
/// this server does not verify with, are skipped.
///
/// Errors: not a JWKS document, or no usable key in it.
pub fn parse(bytes: &[u8]) -> Result<Vec<Key>, JwksError> {
    let doc: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|_| JwksError::NotKeySet("not JSON"))?;
    let list = doc
        .get("keys")
        .and_then(serde_json::Value::as_array)
        .ok_or(JwksError::NotKeySet("no \"keys\" array"))?;
    let keys: Vec<Key> = list
        .iter()
        .filter_map(|v| serde_json::from_value::<Jwk>(v.clone()).ok())
        .filter_map(|jwk| usable(&jwk))
        .collect();
    if keys.is_empty() {
        return Err(JwksError::NoUsableKey);
    }
    Ok(keys)
}

/// The key of `jwk` when it is an RS256 or ES256 signing key.
fn usable(jwk: &Jwk) -> Option<Key> {
    let alg = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(p) if p.curve == EllipticCurve::P256 => Algorithm::ES256,
        _ => return None,
    };
    let declared_ok = match jwk.common.key_algorithm {
        None => true,
        Some(KeyAlgorithm::RS256) => alg == Algorithm::RS256,
        Some(KeyAlgorithm::ES256) => alg == Algorithm::ES256,
        Some(_) => false,
    };
    let use_ok = matches!(
        jwk.common.public_key_use,
        None | Some(PublicKeyUse::Signature)
    );
    if !declared_ok || !use_ok {
        return None;
    }
    let key = DecodingKey::from_jwk(jwk).ok()?;
    Some(Key {
        kid: jwk.common.key_id.clone(),
        alg,
        key,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_rs256_and_es256_signing_keys_are_kept() {
        // A 2048-bit modulus's shape (the values are not checked here).
        let n = format!("w{}", "A".repeat(341));
        let doc = serde_json::json!({"keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "h", "alg": "HS256"},
            {"kty": "RSA", "n": n, "e": "AQAB", "kid": "r", "use": "sig"},
            {"kty": "RSA", "n": n, "e": "AQAB", "kid": "enc", "use": "enc"},
            {"kty": "EC", "crv": "P-256", "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU", "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0", "kid": "e"},
            {"kty": "EC", "crv": "P-384", "x": "AA", "y": "AA", "kid": "p384"},
            {"not": "a key"}
        ]});
        let keys = parse(doc.to_string().as_bytes()).expect("usable keys");
        let got: Vec<(Option<&str>, Algorithm)> =
            keys.iter().map(|k| (k.kid.as_deref(), k.alg)).collect();
        assert_eq!(
            got,
            vec![(Some("r"), Algorithm::RS256), (Some("e"), Algorithm::ES256)]
        );
        assert!(find(&keys, Some("r"), Algorithm::ES256).is_none());
        assert!(find(&keys, Some("e"), Algorithm::ES256).is_some());
        assert!(matches!(
            parse(br#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#),
            Err(JwksError::NoUsableKey)
        ));
        assert!(matches!(parse(b"[]"), Err(JwksError::NotKeySet(_))));
    }

    #[test]
    fn plain_http_only_to_loopback() {
        let ok = |u: &str| secure(&Url::parse(u).expect("url"));
        assert!(ok("https://idp.example.org/jwks"));
        assert!(ok("http://127.0.0.1:8080/jwks"));
        assert!(ok("http://[::1]/jwks"));
        assert!(ok("http://localhost/jwks"));
        assert!(!ok("http://idp.example.org/jwks"));
        assert!(!ok("ftp://127.0.0.1/jwks"));
    }
}
