//! Path-like options of the typed tools must be absolute.
//!
//! conda runs in a fixed working directory (`/`, see
//! `conda_mcp_shared::env::FIXED_CWD`), not in the directory the host
//! started the server in, so a relative path would silently mean something
//! else than the caller thinks. A value of a path-like option must start
//! with `/`, with `~` (conda expands it to the home directory), or be a URL
//! (`scheme://...`: environment files may be fetched). The raw
//! `conda_execute` tool keeps its explicit `cwd` and is not checked.

use serde_json::{Map, Value};

use crate::catalog::{Command, PropertySource};
use crate::schema::ArgumentError;

/// Dests (argparse names) of conda options whose values are filesystem
/// paths, across conda's commands: `-p/--prefix`, `-f/--file` (and
/// `compare`'s file positional, `config --file`, `export --file`), `run
/// --cwd`, `package --which`, `completion --cache-dir`.
pub const PATH_DESTS: &[&str] = &["prefix", "file", "cwd", "which", "cache_dir"];

/// Whether a path value is acceptable (see the module docs).
pub fn is_anchored(value: &str) -> bool {
    value.starts_with('/')
        || value.starts_with('~')
        || value.split_once("://").is_some_and(|(scheme, _)| {
            !scheme.is_empty()
                && scheme
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        })
}

/// Checks every value of the command's path-like properties in `args`.
///
/// Errors: an [`ArgumentError`] naming the JSON path of the first relative
/// value (never quoting it).
pub fn check_paths(command: &Command, args: &Map<String, Value>) -> Result<(), ArgumentError> {
    for prop in &command.properties {
        let PropertySource::Action { arg } = prop.source else {
            continue;
        };
        if !PATH_DESTS.contains(&command.arguments[arg].dest.as_str()) {
            continue;
        }
        let Some(value) = args.get(&prop.name) else {
            continue;
        };
        let at = format!("/{}", prop.name.replace('~', "~0").replace('/', "~1"));
        let bad = match value {
            Value::String(s) => (!is_anchored(s)).then(|| at.clone()),
            Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
                v.as_str()
                    .is_some_and(|s| !is_anchored(s))
                    .then(|| format!("{at}/{i}"))
            }),
            _ => None,
        };
        if let Some(path) = bad {
            return Err(ArgumentError {
                path,
                rule: format!(
                    "must be an absolute path (starting with / or ~): conda runs in {}, not in the directory the server was started from",
                    conda_mcp_shared::env::FIXED_CWD
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchored_values() {
        for ok in [
            "/etc/env.yml",
            "~/env.yml",
            "~",
            "https://example.org/env.yml",
            "file:///tmp/x",
        ] {
            assert!(is_anchored(ok), "{ok}");
        }
        for bad in [
            "env.yml",
            "./env.yml",
            "../x",
            "",
            "a/b",
            "://x",
            "sub dir://x",
        ] {
            assert!(!is_anchored(bad), "{bad}");
        }
    }
}
