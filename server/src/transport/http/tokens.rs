//! Static bearer tokens (`--auth-tokens FILE`) and `conda-mcp token new`.
//!
//! The file holds one principal a line, `NAME SHA256_HEX [OS_USER
//! [POLICY]]`, fields separated by spaces or tabs; blank lines and lines
//! starting with `#` are ignored. `OS_USER` `-` is none (the server's own
//! worker). `POLICY` narrows what the token may do as an OAuth access
//! token's scopes do (`crate::policy::scopes`): `conda:read`,
//! `conda:write`, `conda:exec`, comma-separated, or `-` for no tool call
//! at all; without it the token is not narrowed. `SHA256_HEX` is the SHA-256 of the token's UTF-8 bytes
//! as 64 hex digits: the token itself is never stored. A presented token is
//! hashed and compared with every line's hash in constant time (`subtle`),
//! without stopping at the first match, so neither the time nor the order of
//! the lines tells anything about the tokens.
//!
//! A new token is 32 bytes from the operating system's random source
//! (`getrandom`), written as `cmcp_` and 64 hex digits.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::policy::Scopes;
use crate::principal::Principal;

/// The OS user column that names none (the server's own worker), for a
/// line that needs the policy column after it.
pub const NO_OS_USER: &str = "-";

/// Prefix of every token `conda-mcp token new` prints (it makes a leaked
/// token easy to recognise in a secret scanner).
pub const TOKEN_PREFIX: &str = "cmcp_";
/// Bytes of randomness in a new token (256 bits).
pub const TOKEN_BYTES: usize = 32;
/// Longest principal name and OS user name a line may carry.
pub const MAX_NAME: usize = 64;

/// Why a token file cannot be used. The text names the file and the line,
/// never the content of a field.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// The file cannot be read.
    #[error("cannot read the --auth-tokens file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line is not `NAME SHA256_HEX [OS_USER [POLICY]]`.
    #[error(
        "--auth-tokens file {path}, line {line}: {why} (expected NAME SHA256_HEX [OS_USER [POLICY]])"
    )]
    Line {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// What is wrong, without the field's value.
        why: &'static str,
    },
    /// The file has no principal: nobody could call.
    #[error("the --auth-tokens file {0} lists no principal")]
    Empty(PathBuf),
}

/// One line of the file.
#[derive(Debug, Clone)]
struct Entry {
    principal: Principal,
    hash: [u8; 32],
}

/// The principals of an `--auth-tokens` file, by token hash.
#[derive(Debug, Clone)]
pub struct TokenTable {
    entries: Vec<Entry>,
}

impl TokenTable {
    /// Reads and parses `path`.
    ///
    /// Errors: [`TokenFileError`] (unreadable, a malformed line, a repeated
    /// name or hash, no principal).
    pub fn load(path: &Path) -> Result<Self, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses the text of a token file (`path` only names it in errors).
    ///
    /// Errors: as [`TokenTable::load`].
    pub fn parse(text: &str, path: &Path) -> Result<Self, TokenFileError> {
        let mut entries: Vec<Entry> = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |why| TokenFileError::Line {
                path: path.to_owned(),
                line: i + 1,
                why,
            };
            let fields: Vec<&str> = line.split_ascii_whitespace().collect();
            // `conda-mcp token new > FILE` leaves the token itself here.
            if let [alone] = fields.as_slice()
                && alone.starts_with(TOKEN_PREFIX)
            {
                return Err(bad(
                    "a token itself, not its line: the file holds the SHA-256 of each token \
                     (`NAME SHA256_HEX ...`, the line `conda-mcp token new` prints after the \
                     token); give the token to its person and remove it from this file",
                ));
            }
            let (name, hash, os_user, column) = match fields.as_slice() {
                [name, hash] => (*name, *hash, None, None),
                [name, hash, user] => (*name, *hash, Some(*user), None),
                [name, hash, user, policy] => (*name, *hash, Some(*user), Some(*policy)),
                _ => return Err(bad("wrong number of fields")),
            };
            let os_user = os_user.filter(|u| *u != NO_OS_USER);
            let scopes = column.map(Scopes::column).transpose().map_err(bad)?;
            if !is_name(name) {
                return Err(bad(
                    "the name must be 1 to 64 characters of letters, digits, _ . @ -",
                ));
            }
            let hash = parse_hash(hash).ok_or_else(|| bad("the hash is not 64 hex digits"))?;
            if let Some(user) = os_user
                && !is_name(user)
            {
                return Err(bad(
                    "the OS user must be 1 to 64 characters of letters, digits, _ . @ -",
                ));
            }
            if entries.iter().any(|e| e.principal.name == name) {
                return Err(bad("this name is already on an earlier line"));
            }
            if entries.iter().any(|e| e.hash == hash) {
                return Err(bad("this hash is already on an earlier line"));
            }
            entries.push(Entry {
                principal: Principal {
                    name: name.to_owned(),
                    os_user: os_user.map(str::to_owned),
                    scopes,
                },
                hash,
            });
        }
        if entries.is_empty() {
            return Err(TokenFileError::Empty(path.to_owned()));
        }
        Ok(Self { entries })
    }

    /// The principal whose token is `token`, if any. Every line is compared
    /// (in constant time each), whatever matches.
    pub fn verify(&self, token: &str) -> Option<&Principal> {
        let presented: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut found = None;
        for e in &self.entries {
            if bool::from(e.hash.ct_eq(&presented)) {
                found = Some(&e.principal);
            }
        }
        found
    }

    /// How many principals the file lists.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the file lists none (never true for a parsed file).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Every principal of the file, in its order.
    pub fn principals(&self) -> impl Iterator<Item = &Principal> {
        self.entries.iter().map(|e| &e.principal)
    }

    /// The principals that map to an OS user, with that user.
    pub fn os_users(&self) -> impl Iterator<Item = &str> {
        self.entries
            .iter()
            .filter_map(|e| e.principal.os_user.as_deref())
    }
}

/// A principal or OS user name: 1 to [`MAX_NAME`] characters of
/// `[A-Za-z0-9_.@-]` (safe in a log line, no whitespace).
pub fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_NAME
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'@' | b'-'))
}

fn parse_hash(s: &str) -> Option<[u8; 32]> {
    if s.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    hex::decode_to_slice(s, &mut out).ok()?;
    Some(out)
}

/// The hash column of a token: SHA-256 of its UTF-8 bytes, 64 lowercase
/// hex digits.
pub fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A fresh token: [`TOKEN_PREFIX`] and [`TOKEN_BYTES`] random bytes as hex.
///
/// Errors: the operating system's random source failed.
pub fn new_token() -> Result<String, getrandom::Error> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes)?;
    Ok(format!("{TOKEN_PREFIX}{}", hex::encode(bytes)))
}

/// The token file line for `name` (and `os_user`) with `token`'s hash.
pub fn file_line(name: &str, token: &str, os_user: Option<&str>) -> String {
    match os_user {
        Some(user) => format!("{name} {} {user}", token_hash(token)),
        None => format!("{name} {}", token_hash(token)),
    }
}

/// The token file line for `name` with `token`'s hash, `os_user` (or
/// [`NO_OS_USER`]) and the policy column of `scopes`.
pub fn file_line_with_policy(
    name: &str,
    token: &str,
    os_user: Option<&str>,
    scopes: Scopes,
) -> String {
    format!(
        "{name} {} {} {}",
        token_hash(token),
        os_user.unwrap_or(NO_OS_USER),
        scopes.to_column()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> Result<TokenTable, TokenFileError> {
        TokenTable::parse(text, Path::new("tokens"))
    }

    #[test]
    fn lines_comments_and_users_parse_and_tokens_verify() {
        let (a, b) = ("cmcp_alice-secret", "cmcp_bob-secret");
        let text = format!(
            "# team tokens\n\n{}\n  {}  \n",
            file_line("alice", a, None),
            file_line("bob", b, Some("bob_os"))
        );
        let t = table(&text).expect("parses");
        assert_eq!(t.len(), 2);
        assert_eq!(t.verify(a).map(|p| p.name.as_str()), Some("alice"));
        let bob = t.verify(b).expect("bob");
        assert_eq!(bob.os_user.as_deref(), Some("bob_os"));
        assert!(t.verify("cmcp_alice-secreT").is_none());
        assert!(t.verify("").is_none());
        assert_eq!(t.os_users().collect::<Vec<_>>(), ["bob_os"]);
    }

    #[test]
    fn malformed_lines_name_the_line_and_never_the_value() {
        let h = token_hash("x");
        let cases = [
            ("alice".to_owned(), "wrong number of fields"),
            (
                format!("alice {h} bob conda:read extra"),
                "wrong number of fields",
            ),
            (format!("alice {h} bob conda:admin"), "unknown scope"),
            (format!("alice {h} - conda:read,,conda:exec"), "empty item"),
            (format!("al ice {h}"), "hash is not 64 hex"),
            (format!("al!ce {h}"), "name must be"),
            ("alice 0123".to_owned(), "hash is not 64 hex"),
            (format!("alice {}", "g".repeat(64)), "hash is not 64 hex"),
            (format!("alice {h} b/ob"), "OS user must be"),
            (
                format!("alice {h}\nalice {}", token_hash("y")),
                "name is already",
            ),
            (format!("alice {h}\nbob {h}"), "hash is already"),
            (
                format!("{TOKEN_PREFIX}{h}\nalice {h}"),
                "a token itself, not its line",
            ),
        ];
        for (text, want) in cases {
            let e = table(&format!("# c\n{text}\n"))
                .expect_err(&text)
                .to_string();
            assert!(e.contains(want), "{text:?}: {e}");
            assert!(e.contains("line 2") || e.contains("line 3"), "{e}");
            assert!(!e.contains(&h), "the hash is not echoed: {e}");
        }
        assert!(matches!(table("# only\n\n"), Err(TokenFileError::Empty(_))));
    }

    #[test]
    fn new_tokens_are_random_prefixed_and_their_line_verifies() {
        let t1 = new_token().expect("random");
        let t2 = new_token().expect("random");
        assert_ne!(t1, t2);
        assert!(t1.starts_with(TOKEN_PREFIX));
        assert_eq!(t1.len(), TOKEN_PREFIX.len() + 2 * TOKEN_BYTES);
        let line = file_line("carol", &t1, Some("carol"));
        assert!(!line.contains(&t1), "the line carries the hash only");
        let table = table(&line).expect("parses");
        assert_eq!(table.verify(&t1).map(|p| p.name.as_str()), Some("carol"));
        assert!(table.verify(&t2).is_none());
    }

    #[test]
    fn the_policy_column_narrows_the_principal() {
        let text = format!(
            "{}\n{}\n{}\nscraper {} - -\n",
            file_line("plain", "t1", None),
            file_line_with_policy(
                "reader",
                "t2",
                None,
                Scopes::column("conda:read").expect("r")
            ),
            file_line_with_policy(
                "writer",
                "t3",
                Some("wuser"),
                Scopes::column("conda:write").expect("w")
            ),
            token_hash("t4"),
        );
        let t = table(&text).expect("parses");
        assert_eq!(t.verify("t1").expect("plain").scopes, None);
        let reader = t.verify("t2").expect("reader");
        assert_eq!(reader.os_user, None);
        let s = reader.scopes.expect("narrowed");
        assert!(s.read && !s.write && !s.exec);
        let writer = t.verify("t3").expect("writer");
        assert_eq!(writer.os_user.as_deref(), Some("wuser"));
        assert!(writer.scopes.expect("narrowed").write);
        let scraper = t.verify("t4").expect("scraper");
        assert_eq!(scraper.scopes, Some(Scopes::default()));
        assert_eq!(t.os_users().collect::<Vec<_>>(), ["wuser"]);
        assert_eq!(t.principals().count(), 4);
    }
}
