//! What the handler tells the HTTP gate about a `tools/call` answer: the
//! gate writes the request's log line after the answer was sent, and only
//! the handler sees whether that answer was an error. The gate puts an
//! empty [`CallNote`] into the HTTP request's extensions; rmcp hands the
//! request's `http::request::Parts` to the handler, which reads the note
//! from there ([`CallNote::of`]) and records the answer. Read here, in the
//! MCP layer, so that the handler never imports a transport.

use std::sync::{Arc, OnceLock};

/// What the MCP handler found in the answer to a `tools/call` that came
/// through the HTTP gate (`crate::transport::http::gate`), for the outcome of the gate's log line: the gate
/// puts one into the HTTP request's extensions, the handler sets it
/// ([`CallNote::record`]) and the gate reads it when the line is written.
/// Empty for every other method and for a result without `isError`.
#[derive(Debug, Clone, Default)]
pub struct CallNote(Arc<OnceLock<Noted>>);

/// What a [`CallNote`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Noted {
    /// A tool result with `isError: true`.
    ToolError,
    /// A JSON-RPC error, with its code.
    Error(i32),
}

impl CallNote {
    /// The note the gate put into the HTTP request behind `extensions`, if
    /// the request came through it.
    pub fn of(extensions: &rmcp::model::Extensions) -> Option<CallNote> {
        extensions
            .get::<http::request::Parts>()
            .and_then(|p| p.extensions.get::<CallNote>())
            .cloned()
    }

    /// Notes the handler's answer to `tools/call` (the first one counts).
    pub fn record(&self, answer: &Result<rmcp::model::CallToolResponse, rmcp::ErrorData>) {
        let noted = match answer {
            Ok(rmcp::model::CallToolResponse::Complete(r)) if r.is_error == Some(true) => {
                Noted::ToolError
            }
            Ok(_) => return,
            Err(e) => Noted::Error(e.code.0),
        };
        let _ = self.0.set(noted);
    }

    /// What was noted, if anything.
    pub fn get(&self) -> Option<Noted> {
        self.0.get().copied()
    }
}
