//! A loopback OAuth issuer for the tests of `--oauth-*`: signing keys the
//! test mints itself (RS256 with RustCrypto's `rsa`, ES256 with `rcgen`),
//! access tokens signed with them (`jsonwebtoken`), forged ones (`alg:
//! none`, HS256 keyed with the RSA public key), and a tiny HTTP server on
//! 127.0.0.1 that serves the key set (JWKS) and counts its fetches.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use rsa::pkcs1::EncodeRsaPrivateKey as _;
use rsa::pkcs8::EncodePublicKey as _;
use rsa::traits::PublicKeyParts as _;
use serde_json::{Value, json};

/// The path the issuer serves its key set at.
pub const JWKS_PATH: &str = "/jwks.json";

/// A signing key with its public JWK.
pub struct SigningKey {
    /// Its key id.
    pub kid: String,
    /// RS256 or ES256.
    pub alg: Algorithm,
    /// The public key as a JWK (with `kid`, `use` and `alg`).
    pub jwk: Value,
    /// The public key as PEM (SubjectPublicKeyInfo), for the HMAC
    /// confusion attack.
    pub public_pem: String,
    encoding: EncodingKey,
}

impl SigningKey {
    /// A fresh 2048-bit RSA key (RS256).
    pub fn rsa(kid: &str) -> SigningKey {
        let key = rsa::PrivateKey::new(&mut getrandom_sys_rng::SysRng, 2048).expect("RSA key");
        let der = key.to_pkcs1_der().expect("PKCS#1");
        let public = key.to_public_key();
        let spki = public.to_public_key_der().expect("SPKI");
        SigningKey {
            kid: kid.to_owned(),
            alg: Algorithm::RS256,
            jwk: json!({
                "kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256",
                "n": URL_SAFE_NO_PAD.encode(public.n_bytes()),
                "e": URL_SAFE_NO_PAD.encode(public.e_bytes()),
            }),
            public_pem: pem("PUBLIC KEY", spki.as_bytes()),
            encoding: EncodingKey::from_rsa_der(der.as_bytes()),
        }
    }

    /// A fresh P-256 key (ES256).
    pub fn ec(kid: &str) -> SigningKey {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).expect("P-256 key");
        let raw = pair.public_key_raw();
        assert_eq!(raw.len(), 65, "an uncompressed P-256 point");
        SigningKey {
            kid: kid.to_owned(),
            alg: Algorithm::ES256,
            jwk: json!({
                "kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
                "x": URL_SAFE_NO_PAD.encode(&raw[1..33]),
                "y": URL_SAFE_NO_PAD.encode(&raw[33..]),
            }),
            public_pem: pair.public_key_pem(),
            encoding: EncodingKey::from_ec_der(&pair.serialize_der()),
        }
    }

    /// `claims` signed with this key, the header naming its `kid`.
    pub fn sign(&self, claims: &Value) -> String {
        self.sign_as(&self.kid, claims)
    }

    /// `claims` signed with this key, the header naming `kid`.
    pub fn sign_as(&self, kid: &str, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("sign")
    }
}

/// The JWKS document of `keys`.
pub fn jwks(keys: &[&SigningKey]) -> Value {
    json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()})
}

/// Seconds since the epoch.
pub fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Claims of an access token valid for ten minutes from now.
pub fn claims(issuer: &str, audience: &str, sub: &str, scope: &str) -> Value {
    let now = now();
    json!({
        "iss": issuer, "aud": audience, "sub": sub, "scope": scope,
        "iat": now, "nbf": now - 5, "exp": now + 600,
    })
}

/// An unsigned token (`alg: none`, empty signature).
pub fn unsigned(kid: &str, claims: &Value) -> String {
    let header = json!({"alg": "none", "typ": "JWT", "kid": kid});
    format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

/// A token signed with HS256 and `secret` (the confusion attack: the
/// secret is the issuer's public key).
pub fn hs256(kid: &str, secret: &[u8], claims: &Value) -> String {
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some(kid.to_owned());
    let key = EncodingKey::from_secret(secret).expect("HMAC key");
    jsonwebtoken::encode(&header, claims, &key).expect("sign HS256")
}

fn pem(label: &str, der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for chunk in b64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or_default());
        out.push('\n');
    }
    out.push_str(&format!("-----END {label}-----\n"));
    out
}

/// The loopback issuer: serves its JWKS at [`JWKS_PATH`]; stopped when
/// dropped.
pub struct Issuer {
    addr: SocketAddr,
    doc: Arc<Mutex<String>>,
    fetches: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
}

impl Issuer {
    /// Starts serving `jwks`.
    pub fn start(jwks: &Value) -> Issuer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the issuer");
        let addr = listener.local_addr().expect("issuer address");
        let issuer = Issuer {
            addr,
            doc: Arc::new(Mutex::new(jwks.to_string())),
            fetches: Arc::new(AtomicUsize::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let (doc, fetches, stop) = (
            Arc::clone(&issuer.doc),
            Arc::clone(&issuer.fetches),
            Arc::clone(&issuer.stop),
        );
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(conn) = conn {
                    answer(conn, &doc, &fetches);
                }
            }
        });
        issuer
    }

    /// `http://127.0.0.1:PORT` (the `iss` of its tokens).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The URL of its key set.
    pub fn jwks_url(&self) -> String {
        format!("{}{JWKS_PATH}", self.url())
    }

    /// Serves `jwks` from now on (a key rotation).
    pub fn set_jwks(&self, jwks: &Value) {
        *self.doc.lock().expect("issuer document") = jwks.to_string();
    }

    /// How many times the key set was fetched.
    pub fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

impl Drop for Issuer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
    }
}

fn answer(mut conn: TcpStream, doc: &Mutex<String>, fetches: &AtomicUsize) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head);
    let response = if head.starts_with(&format!("GET {JWKS_PATH} ")) {
        fetches.fetch_add(1, Ordering::SeqCst);
        let body = doc.lock().map(|d| d.clone()).unwrap_or_default();
        format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
             Connection: close\r\n\r\n{body}",
            body.len()
        )
    } else {
        "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned()
    };
    let _ = conn.write_all(response.as_bytes());
}
