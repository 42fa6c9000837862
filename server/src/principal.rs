//! Who is calling: a [`Principal`], a value that travels with a call from
//! the transport that authenticated it (HTTP with `--auth-tokens` or an
//! OAuth access token, see `crate::transport::http`) through the MCP handler to the
//! log line of the request.
//! On stdio, and over HTTP without authentication, every call is the
//! [`Principal::local`] one: whoever started the server.

use std::fmt;

use crate::policy::Scopes;

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    /// The name it was given (the first column of the `--auth-tokens`
    /// file; `oauth:` and the `sub` claim of an access token); `local` for
    /// [`Principal::local`].
    pub name: String,
    /// The OS user its calls should run as (the token file's third
    /// column, or `--user-map`), when it has one.
    pub os_user: Option<String>,
    /// The scopes its access token grants, which narrow the startup
    /// policy for its calls ([`crate::policy::Policy::narrowed`]); `None`
    /// (stdio, static tokens): not narrowed.
    pub scopes: Option<Scopes>,
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
            scopes: None,
        }
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}
