//! Who is calling: a [`Principal`], a value that travels with a call from
//! the transport that authenticated it (HTTP with `--auth-tokens`, see
//! `crate::http`) through the MCP handler to the log line of the request.
//! On stdio, and over HTTP without authentication, every call is the
//! [`Principal::local`] one: whoever started the server.

use std::fmt;

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    /// The name it was given (the first column of the `--auth-tokens`
    /// file); `local` for [`Principal::local`].
    pub name: String,
    /// The OS user its calls should run as (the token file's third
    /// column), when it has one.
    pub os_user: Option<String>,
}

/// Name of [`Principal::local`].
pub const LOCAL: &str = "local";

impl Principal {
    /// The caller of a server without authentication: the one person who
    /// started it (stdio, or HTTP on loopback without `--auth-tokens`).
    pub fn local() -> Self {
        Self::named(LOCAL)
    }

    /// A principal `name` without an OS user.
    pub fn named(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            os_user: None,
        }
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}
