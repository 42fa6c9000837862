//! `--user-map FILE`: which OS user the principal of an access token runs
//! as, by the value of the `--oauth-user-claim` claim. One mapping a line,
//! `CLAIM_VALUE OS_USER`, fields separated by spaces or tabs; blank lines
//! and lines starting with `#` are ignored. A value that no line lists
//! runs in the server's default worker.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::transport::http::tokens::is_name;

/// Why the map cannot be used. The text names the file and the line,
/// never a field's value.
#[derive(Debug, thiserror::Error)]
pub enum UserMapError {
    /// The file cannot be read.
    #[error("cannot read the --user-map file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line is not `CLAIM_VALUE OS_USER`.
    #[error("--user-map file {path}, line {line}: {why} (expected CLAIM_VALUE OS_USER)")]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong, without the field's value.
        why: &'static str,
    },
}

/// Claim values and their OS users.
#[derive(Debug, Clone, Default)]
pub struct UserMap {
    users: HashMap<String, String>,
}

impl UserMap {
    /// Reads and parses `path`.
    ///
    /// Errors: [`UserMapError`].
    pub fn load(path: &Path) -> Result<Self, UserMapError> {
        let text = std::fs::read_to_string(path).map_err(|source| UserMapError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses the text of a map (`path` only names it in errors).
    ///
    /// Errors: a malformed line, an OS user that is not a plain name, a
    /// claim value listed twice.
    pub fn parse(text: &str, path: &Path) -> Result<Self, UserMapError> {
        let mut users = HashMap::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why| UserMapError::Line {
                path: path.to_owned(),
                line: i + 1,
                why,
            };
            let fields: Vec<&str> = line.split_ascii_whitespace().collect();
            let [value, user] = fields.as_slice() else {
                return Err(bad("wrong number of fields"));
            };
            if !is_name(user) {
                return Err(bad(
                    "the OS user must be 1 to 64 characters of letters, digits, _ . @ -",
                ));
            }
            if users
                .insert((*value).to_owned(), (*user).to_owned())
                .is_some()
            {
                return Err(bad("this claim value is already on an earlier line"));
            }
        }
        Ok(Self { users })
    }

    /// The OS user of a claim value.
    pub fn user(&self, value: &str) -> Option<&str> {
        self.users.get(value).map(String::as_str)
    }

    /// Every OS user the map names (sorted, distinct).
    pub fn os_users(&self) -> Vec<String> {
        let mut u: Vec<String> = self.users.values().cloned().collect();
        u.sort();
        u.dedup();
        u
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_parse_and_mistakes_name_the_line_only() {
        let m = UserMap::parse(
            "# who runs as whom\n\nalice@lab.org  alice\nbob@lab.org\tbob\n",
            Path::new("map"),
        )
        .expect("parses");
        assert_eq!(m.user("alice@lab.org"), Some("alice"));
        assert_eq!(m.user("carol@lab.org"), None);
        assert_eq!(m.os_users(), ["alice", "bob"]);
        for (text, want) in [
            ("secret-value", "wrong number of fields"),
            ("secret-value a b", "wrong number of fields"),
            ("secret-value b/ob", "OS user must be"),
            (
                "secret-value a\nsecret-value b",
                "already on an earlier line",
            ),
        ] {
            let e = UserMap::parse(text, Path::new("map"))
                .expect_err(text)
                .to_string();
            assert!(e.contains(want), "{e}");
            assert!(!e.contains("secret-value"), "{e}");
        }
    }
}
