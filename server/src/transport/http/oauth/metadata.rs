//! OAuth 2.0 Protected Resource Metadata (RFC 9728), what an MCP client
//! reads to find the authorization server (MCP specification,
//! "Authorization", 2025-06-18 and later): served without authentication
//! at `/.well-known/oauth-protected-resource` and at the path-suffixed
//! form of RFC 9728 §3.1, `/.well-known/oauth-protected-resource/mcp`.
//! Every 401 names the metadata's URL in its challenge (RFC 9728 §5.1).

use serde_json::{Value, json};
use url::Url;

use crate::policy::scopes;

/// The well-known path prefix (RFC 9728 §3).
pub const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The metadata document for the resource `audience` protected by
/// `issuer`.
pub fn document(audience: &str, issuer: &str) -> Value {
    json!({
        "resource": audience,
        "authorization_servers": [issuer],
        "scopes_supported": scopes::SUPPORTED,
        "bearer_methods_supported": ["header"],
        "resource_name": "conda-mcp",
    })
}

/// The URL of the metadata of `resource` (RFC 9728 §3.1): the well-known
/// path inserted between the host and the resource's path, so
/// `https://h/mcp` → `https://h/.well-known/oauth-protected-resource/mcp`.
pub fn url(resource: &Url) -> String {
    let mut u = resource.clone();
    let path = resource.path().trim_end_matches('/');
    u.set_path(&format!("{WELL_KNOWN}{path}"));
    u.set_query(None);
    u.set_fragment(None);
    u.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_url_inserts_the_well_known_path() {
        let u = |s: &str| url(&Url::parse(s).expect("url"));
        assert_eq!(
            u("https://conda.lab.org/mcp"),
            "https://conda.lab.org/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            u("https://conda.lab.org:8443/"),
            "https://conda.lab.org:8443/.well-known/oauth-protected-resource"
        );
        let d = document("https://conda.lab.org/mcp", "https://idp.lab.org");
        assert_eq!(d["authorization_servers"][0], "https://idp.lab.org");
        assert_eq!(d["scopes_supported"][1], "conda:exec");
    }
}
