//! Validation of one access token (a JWT, RFC 7519, as RFC 9068 profiles
//! it for OAuth 2.0 access tokens), by `jsonwebtoken`:
//!
//! 1. at most [`MAX_TOKEN_BYTES`]; the header's `alg` is RS256 or ES256
//!    (`none`, every HMAC and every other algorithm are refused before any
//!    key is looked at);
//! 2. the key is the issuer's key with the header's `kid` and that
//!    algorithm ([`super::jwks`]; an unknown `kid` fetches the key set
//!    again, rate-limited);
//! 3. the signature, then the claims: `iss` equals `--oauth-issuer`, `aud`
//!    contains `--oauth-audience` (RFC 8707), `exp` is required and not
//!    past, `nbf` (when present) not in the future, each with a leeway of
//!    [`LEEWAY_SECONDS`] for clock skew; `sub` is required and is 1 to 255
//!    printable ASCII characters without spaces (it names the principal in
//!    the log line).
//!
//! The token's scopes are read from `scope` (a space-separated string,
//! RFC 8693 §4.2 and RFC 9068 §2.2.3), or else from `scp` (a string or an
//! array of strings, as some identity providers send them).

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::Value;

use super::jwks::Jwks;
use crate::policy::Scopes;

/// Clock skew allowed on `exp` and `nbf`, in seconds.
pub const LEEWAY_SECONDS: u64 = 60;
/// Longest token accepted, in bytes (longer ones are not parsed).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// Longest `sub` accepted.
pub const MAX_SUBJECT: usize = 255;

/// Why a token is not accepted (for the log; the client only learns
/// `invalid_token`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    /// Longer than [`MAX_TOKEN_BYTES`].
    #[error("the token is too long")]
    TooLong,
    /// Not a JWT.
    #[error("the token is not a JWT")]
    Malformed,
    /// `alg` is not RS256 or ES256.
    #[error("the token's algorithm is not RS256 or ES256")]
    Algorithm,
    /// No key of the issuer has the token's `kid` and algorithm.
    #[error("no key of the issuer matches the token's kid and algorithm")]
    UnknownKey,
    /// The signature does not verify.
    #[error("the token's signature does not verify")]
    Signature,
    /// `exp` has passed.
    #[error("the token has expired")]
    Expired,
    /// `nbf` is in the future.
    #[error("the token is not valid yet")]
    NotYetValid,
    /// `iss` is not `--oauth-issuer`.
    #[error("the token is from another issuer")]
    Issuer,
    /// `aud` does not name `--oauth-audience`.
    #[error("the token is for another audience")]
    Audience,
    /// A required claim is missing or malformed.
    #[error("the token's claims are missing or malformed")]
    Claims,
}

/// What an accepted token says about its holder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// `sub`.
    pub subject: String,
    /// The scopes of this server it grants.
    pub scopes: Scopes,
    /// The value of the `--oauth-user-claim` claim, when it is a string.
    pub user_claim: Option<String>,
}

/// The validator: the key cache and the checks.
#[derive(Debug)]
pub struct Validator {
    jwks: Jwks,
    rs256: Validation,
    es256: Validation,
    user_claim: Option<String>,
}

impl Validator {
    /// A validator for tokens of `issuer` for `audience`, with keys from
    /// `jwks`; `user_claim` names the claim `--user-map` looks up.
    pub fn new(jwks: Jwks, issuer: &str, audience: &str, user_claim: Option<String>) -> Self {
        let validation = |alg| {
            let mut v = Validation::new(alg);
            v.set_issuer(&[issuer]);
            v.set_audience(&[audience]);
            v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
            v.leeway = LEEWAY_SECONDS;
            v.validate_exp = true;
            v.validate_nbf = true;
            v
        };
        Self {
            jwks,
            rs256: validation(Algorithm::RS256),
            es256: validation(Algorithm::ES256),
            user_claim,
        }
    }

    /// The key cache.
    pub fn jwks(&self) -> &Jwks {
        &self.jwks
    }

    /// Validates `token`.
    ///
    /// Errors: [`Invalid`], why it is not accepted.
    pub async fn validate(&self, token: &str) -> Result<Grant, Invalid> {
        if token.len() > MAX_TOKEN_BYTES {
            return Err(Invalid::TooLong);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| match e.kind() {
            ErrorKind::InvalidAlgorithmName | ErrorKind::UnsupportedAlgorithm => Invalid::Algorithm,
            _ => Invalid::Malformed,
        })?;
        let validation = match header.alg {
            Algorithm::RS256 => &self.rs256,
            Algorithm::ES256 => &self.es256,
            _ => return Err(Invalid::Algorithm),
        };
        let key = self
            .jwks
            .key(header.kid.as_deref(), header.alg)
            .await
            .ok_or(Invalid::UnknownKey)?;
        let data =
            jsonwebtoken::decode::<Value>(token, &key.key, validation).map_err(|e| {
                match e.kind() {
                    ErrorKind::InvalidSignature
                    | ErrorKind::InvalidEcdsaKey
                    | ErrorKind::InvalidRsaKey(_) => Invalid::Signature,
                    ErrorKind::ExpiredSignature => Invalid::Expired,
                    ErrorKind::ImmatureSignature => Invalid::NotYetValid,
                    ErrorKind::InvalidIssuer => Invalid::Issuer,
                    ErrorKind::InvalidAudience => Invalid::Audience,
                    ErrorKind::InvalidAlgorithm => Invalid::Algorithm,
                    ErrorKind::MissingRequiredClaim(_) | ErrorKind::InvalidClaimFormat(_) => {
                        Invalid::Claims
                    }
                    _ => Invalid::Malformed,
                }
            })?;
        grant(&data.claims, self.user_claim.as_deref())
    }
}

/// The grant of validated `claims`.
///
/// Errors: [`Invalid::Claims`] for a `sub` that is not a usable name.
fn grant(claims: &Value, user_claim: Option<&str>) -> Result<Grant, Invalid> {
    let subject = claims
        .get("sub")
        .and_then(Value::as_str)
        .filter(|s| is_subject(s))
        .ok_or(Invalid::Claims)?
        .to_owned();
    let scopes = match (claims.get("scope"), claims.get("scp")) {
        (Some(Value::String(s)), _) => Scopes::of(s.split(' ')),
        (None, Some(Value::String(s))) => Scopes::of(s.split(' ')),
        (None, Some(Value::Array(a))) => Scopes::of(a.iter().filter_map(Value::as_str)),
        _ => Scopes::default(),
    };
    let user_claim = user_claim
        .and_then(|c| claims.get(c))
        .and_then(Value::as_str)
        .map(str::to_owned);
    Ok(Grant {
        subject,
        scopes,
        user_claim,
    })
}

/// 1 to [`MAX_SUBJECT`] printable ASCII characters, no space.
fn is_subject(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_SUBJECT && s.bytes().all(|b| b.is_ascii_graphic())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_grant_reads_sub_scopes_and_the_user_claim() {
        let g = grant(
            &json!({"sub": "auth0|42", "scope": "openid conda:write", "email": "a@b.org"}),
            Some("email"),
        )
        .expect("grant");
        assert_eq!(g.subject, "auth0|42");
        assert!(g.scopes.write && !g.scopes.exec);
        assert_eq!(g.user_claim.as_deref(), Some("a@b.org"));
        let g = grant(&json!({"sub": "x", "scp": ["conda:exec"]}), Some("email")).expect("scp");
        assert!(g.scopes.exec && !g.scopes.write);
        assert_eq!(g.user_claim, None);
        for bad in [
            json!({}),
            json!({"sub": ""}),
            json!({"sub": "a b"}),
            json!({"sub": 7}),
        ] {
            assert_eq!(grant(&bad, None), Err(Invalid::Claims), "{bad}");
        }
        let long = "x".repeat(MAX_SUBJECT + 1);
        assert_eq!(grant(&json!({"sub": long}), None), Err(Invalid::Claims));
    }
}
