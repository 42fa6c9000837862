//! Who sent a request: the owner of the tasks it creates.
//!
//! A task is visible only to the principal that created it (its
//! `tasks/get`, `tasks/update` and `tasks/cancel`); anyone else is told the
//! task is unknown, exactly as for an id that never existed, so an id
//! reveals nothing. On stdio there is one principal, the process at the
//! other end of the pipe ([`Principal::stdio`]), in both protocol eras: the
//! stateless lifecycle's requests come from the same peer. A transport
//! that authenticates its clients puts the [`Principal`] it mapped a
//! request to into the request's extensions (`RequestContext::extensions`),
//! and [`Principal::of`] reads it from there.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::RequestContext;

/// The identity a request acts as (compared by value; never logged).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(Arc<str>);

impl Principal {
    /// The one client of a stdio server.
    pub fn stdio() -> Self {
        Self::named("stdio")
    }

    /// A principal a transport authenticated (its stable name: a token's
    /// subject, an OS user).
    pub fn named(name: &str) -> Self {
        Self(Arc::from(name))
    }

    /// The principal of `context`: the one its transport put into the
    /// request's extensions, else the stdio client.
    pub fn of(context: &RequestContext<RoleServer>) -> Self {
        context
            .extensions
            .get::<Principal>()
            .cloned()
            .unwrap_or_else(Self::stdio)
    }
}
