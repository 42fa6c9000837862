//! Who sent a request, as the MCP side sees it: the owner of the tasks it
//! creates and the one whose worker runs its calls.
//!
//! A task is visible only to the principal that created it (its
//! `tasks/get`, `tasks/update` and `tasks/cancel`); anyone else is told the
//! task is unknown, exactly as for an id that never existed, so an id
//! reveals nothing. On stdio there is one principal, the process at the
//! other end of the pipe ([`Principal::stdio`]), in both protocol eras: the
//! stateless lifecycle's requests come from the same peer. Over HTTP the
//! gate (`crate::transport::http::gate`) puts the principal a bearer token names into
//! the HTTP request's extensions, which rmcp hands to the handler inside
//! the request's `http::request::Parts`; [`Principal::of`] reads it from
//! there (or from the request's own extensions, where a transport put it
//! directly).
//!
//! The type itself is [`crate::principal::Principal`] (name and OS user).

use rmcp::RoleServer;
use rmcp::service::RequestContext;

pub use crate::principal::Principal;

impl Principal {
    /// The one client of a stdio server (the same as
    /// [`Principal::local`]).
    pub fn stdio() -> Self {
        Self::local()
    }

    /// The principal of `context`: the one its transport put into the
    /// request (directly, or in the HTTP request's parts), else the stdio
    /// client.
    pub fn of(context: &RequestContext<RoleServer>) -> Self {
        match context.extensions.get::<Principal>() {
            Some(p) => p.clone(),
            None => Self::in_http_parts(&context.extensions),
        }
    }

    /// The principal the HTTP gate (`crate::transport::http::gate`) put into
    /// the HTTP request behind `extensions`, or [`Principal::local`] (stdio,
    /// or a request that did not come through the gate).
    pub fn in_http_parts(extensions: &rmcp::model::Extensions) -> Self {
        extensions
            .get::<http::request::Parts>()
            .and_then(|p| p.extensions.get::<Principal>())
            .cloned()
            .unwrap_or_else(Principal::local)
    }
}
