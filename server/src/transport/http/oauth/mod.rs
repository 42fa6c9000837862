//! The OAuth 2.1 resource server of the HTTP mode (`--oauth-issuer`,
//! `--oauth-audience`, `--oauth-jwks`; docs/remote.md "OAuth"): a bearer
//! token that is not one of `--auth-tokens` is validated as a JWT access
//! token of the issuer, for this server's resource URL.
//!
//! * [`jwks`]: the issuer's keys, fetched and cached (or a file);
//! * [`validate`](mod@validate): one token's signature and claims;
//! * [`metadata`]: the RFC 9728 document and its URL for the challenge;
//! * [`user_map`]: `--user-map`, a claim value → the OS user whose worker
//!   runs the principal's calls.
//!
//! The principal of a token is `oauth:` and its `sub` (the prefix keeps
//! it apart from every `--auth-tokens` name, which cannot contain `:`);
//! its scopes narrow the startup policy ([`crate::policy::scopes`]).

pub mod jwks;
pub mod metadata;
pub mod user_map;
pub mod validate;

use std::path::PathBuf;

use url::Url;

use crate::principal::Principal;
pub use jwks::{Jwks, JwksError, Source};
pub use user_map::{UserMap, UserMapError};
pub use validate::{Invalid, Validator};

/// Prefix of the name of every principal an access token names.
pub const PRINCIPAL_PREFIX: &str = "oauth:";

/// The OAuth settings (`--oauth-*`, `--user-map`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthSettings {
    /// `--oauth-issuer`: the `iss` every token must carry, and the
    /// authorization server the metadata names.
    pub issuer: String,
    /// `--oauth-audience`: this server's resource URL, which every token's
    /// `aud` must name (RFC 8707), exactly as given.
    pub audience: String,
    /// `--oauth-jwks`.
    pub jwks: Source,
    /// `--oauth-user-claim`.
    pub user_claim: Option<String>,
    /// `--user-map`.
    pub user_map: Option<PathBuf>,
}

/// Why the OAuth settings cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum OAuthError {
    /// `--oauth-issuer` or `--oauth-audience` is not https (nor http to a
    /// loopback host).
    #[error("{0} must be an https URL (http only to a loopback host such as 127.0.0.1)")]
    Insecure(&'static str),
    /// The key set cannot be had.
    #[error(transparent)]
    Jwks(#[from] JwksError),
    /// The user map cannot be used.
    #[error(transparent)]
    UserMap(#[from] UserMapError),
}

impl OAuthError {
    /// Whether the command line itself is wrong (exit status 2).
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            OAuthError::Insecure(_)
                | OAuthError::Jwks(JwksError::Insecure)
                | OAuthError::UserMap(UserMapError::Line { .. })
        )
    }
}

/// The resource server: validator, metadata and user map.
#[derive(Debug)]
pub struct OAuth {
    validator: Validator,
    /// The metadata document, serialized.
    pub metadata: String,
    /// The absolute URL of the metadata, for the challenge.
    pub metadata_url: String,
    users: Option<UserMap>,
}

impl OAuth {
    /// Checks the settings, loads the user map and the key set (a URL is
    /// fetched now; a failure is only logged).
    ///
    /// Errors: [`OAuthError`].
    pub async fn load(settings: &OAuthSettings) -> Result<Self, OAuthError> {
        let issuer_ok = Url::parse(&settings.issuer).is_ok_and(|u| jwks::secure(&u));
        if !issuer_ok {
            return Err(OAuthError::Insecure("--oauth-issuer"));
        }
        let resource = Url::parse(&settings.audience)
            .ok()
            .filter(jwks::secure)
            .ok_or(OAuthError::Insecure("--oauth-audience"))?;
        let users = match &settings.user_map {
            Some(path) => Some(UserMap::load(path)?),
            None => None,
        };
        let keys = Jwks::load(settings.jwks.clone()).await?;
        let audience = settings.audience.as_str();
        let validator = Validator::new(
            keys,
            &settings.issuer,
            audience,
            settings.user_claim.clone(),
        );
        Ok(Self {
            validator,
            metadata: metadata::document(audience, &settings.issuer).to_string(),
            metadata_url: metadata::url(&resource),
            users,
        })
    }

    /// The principal of `token`: `oauth:SUB`, with the OS user the user
    /// map gives its user claim and the scopes it grants.
    ///
    /// Errors: [`Invalid`], why the token is refused.
    pub async fn authenticate(&self, token: &str) -> Result<Principal, Invalid> {
        let grant = self.validator.validate(token).await?;
        let os_user = match (&self.users, &grant.user_claim) {
            (Some(map), Some(value)) => map.user(value).map(str::to_owned),
            _ => None,
        };
        Ok(Principal {
            name: format!("{PRINCIPAL_PREFIX}{}", grant.subject),
            os_user,
            scopes: Some(grant.scopes),
        })
    }

    /// The OS users of the user map.
    pub fn os_users(&self) -> Vec<String> {
        self.users
            .as_ref()
            .map(UserMap::os_users)
            .unwrap_or_default()
    }

    /// The validator (for benchmarks).
    pub fn validator(&self) -> &Validator {
        &self.validator
    }
}
