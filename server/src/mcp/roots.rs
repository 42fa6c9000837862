//! The client's roots (MCP `roots/list`), asked for a call whose file
//! options must lie where the caller may read
//! (`crate::call::plan::reads`). rmcp marks roots deprecated (the
//! protocol's SEP-2577 plans to remove them); clients still declare and
//! answer them, so they are read while a client does.
#![allow(deprecated)]

use std::path::PathBuf;

use rmcp::{Peer, RoleServer};

use crate::call::plan::reads::{ClientRoots, Listing};

/// The roots of the client at `Peer` (one that declared the `roots`
/// capability).
#[derive(Debug, Clone)]
pub struct PeerRoots(pub Peer<RoleServer>);

impl ClientRoots for PeerRoots {
    /// The `file://` roots as local paths; none when the client answers
    /// with an error (or not at all).
    fn roots(&self) -> Listing<'_> {
        Box::pin(async move {
            match self.0.list_roots().await {
                Ok(list) => list.roots.iter().filter_map(|r| local(&r.uri)).collect(),
                Err(e) => {
                    tracing::info!("the client's roots/list failed: {e}");
                    Vec::new()
                }
            }
        })
    }
}

/// The local path of a `file://` root URI; `None` for anything else.
fn local(uri: &str) -> Option<PathBuf> {
    let url = url::Url::parse(uri).ok()?;
    (url.scheme() == "file")
        .then(|| url.to_file_path().ok())
        .flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_file_roots_are_places() {
        assert_eq!(
            local("file:///home/me/project"),
            Some(PathBuf::from("/home/me/project"))
        );
        assert_eq!(local("https://example.org/x"), None);
        assert_eq!(local("not a uri"), None);
    }
}
