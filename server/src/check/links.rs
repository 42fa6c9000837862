//! One-click install links: VS Code's `vscode:mcp/install?{JSON}` (the
//! server's entry with its `name`, percent-encoded as JavaScript's
//! `encodeURIComponent` does) and Cursor's
//! `cursor://anysphere.cursor-deeplink/mcp/install?name=NAME&config={BASE64}`
//! (the entry's JSON in standard base64, then form-encoded). Opening one
//! asks the person to confirm and adds the server to that host's user
//! configuration. `conda-mcp check` prints them beside the host's snippet
//! ([`for_snippet`]), and `conda-mcp setup HOST --link` alone.

use base64::Engine as _;
use serde_json::{Value, json};

use super::host_config::{Host, SERVER_NAME, Snippet};

/// The install link of a host's configuration `snippet` (stdio or HTTP),
/// or `None` for a host without install links (all but VS Code and
/// Cursor).
pub fn for_snippet(snippet: &Snippet) -> Option<String> {
    let key = match snippet.host {
        Host::VsCode => "servers",
        Host::Cursor => "mcpServers",
        _ => return None,
    };
    let doc: Value = serde_json::from_str(&snippet.text).ok()?;
    let entry = doc.get(key)?.get(SERVER_NAME)?;
    Some(match snippet.host {
        Host::VsCode => vscode(entry),
        _ => cursor(entry),
    })
}

/// VS Code's link for the server entry `entry` (`{"type", "command",
/// "args"}`).
pub fn vscode(entry: &Value) -> String {
    let mut v = json!({ "name": SERVER_NAME });
    if let (Value::Object(out), Value::Object(fields)) = (&mut v, entry) {
        out.extend(fields.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    format!(
        "vscode:mcp/install?{}",
        encode_uri_component(&v.to_string())
    )
}

/// Cursor's link for the server entry `entry` (`{"command", "args"}`).
pub fn cursor(entry: &Value) -> String {
    let config = base64::engine::general_purpose::STANDARD.encode(entry.to_string());
    let config: String = url::form_urlencoded::byte_serialize(config.as_bytes()).collect();
    format!("cursor://anysphere.cursor-deeplink/mcp/install?name={SERVER_NAME}&config={config}")
}

/// `s` with every byte but `A-Z a-z 0-9 - _ . ! ~ * ' ( )` as `%XX`
/// (ECMAScript's `encodeURIComponent`).
fn encode_uri_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Value {
        json!({"command": "/opt/my tools/conda-mcp", "args": ["--conda-exe", "/c+d"]})
    }

    #[test]
    fn vscode_links_hold_the_entry_percent_encoded() {
        let link = vscode(&entry());
        let query = link.strip_prefix("vscode:mcp/install?").expect("prefix");
        assert!(
            !query.contains(' ') && !query.contains('"') && !query.contains('+'),
            "{query}"
        );
        let decoded: String = url::form_urlencoded::parse(format!("x={query}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .expect("decoded");
        let v: Value = serde_json::from_str(&decoded).expect("json");
        assert_eq!(v["name"], "conda");
        assert_eq!(v["command"], "/opt/my tools/conda-mcp");
        assert_eq!(v["args"][1], "/c+d");
    }

    #[test]
    fn cursor_links_hold_the_entry_in_base64() {
        let link = cursor(&entry());
        let url = url::Url::parse(&link).expect("a URL");
        assert_eq!(url.scheme(), "cursor");
        let q: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
        assert_eq!(q["name"], "conda");
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&q["config"])
            .expect("base64");
        let v: Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(v, entry());
    }
}
