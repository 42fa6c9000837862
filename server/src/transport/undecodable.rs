//! A message that is JSON but cannot be decoded: valid UTF-8 and valid
//! JSON grammar (RFC 8259), holding a value serde_json will not decode: a
//! lone UTF-16 surrogate escape (`"\ud800"`: the grammar allows it, but it
//! is no Unicode text, RFC 8259 §8.2), a number beyond a double, or
//! nesting deeper than serde_json's 128 levels. Such a message is a
//! JSON-RPC 2.0 *Invalid Request* (-32600), not a parse error, and its id
//! can be answered when the id itself can be read: the top-level fields
//! are read leniently, every other value only checked against the grammar
//! (iteratively: no depth limit, no stack) and skipped. Both transports
//! answer it the same way (`stdio.rs`, `crate::transport::http::gate`).

use serde::Deserialize;
use serde_json::Value;

/// The text of the error answer (it never quotes the message).
pub const MESSAGE: &str = "Invalid Request: a value in the message cannot be decoded (a lone UTF-16 surrogate escape, a number beyond a double, or nesting deeper than 128 levels)";

/// The JSON-RPC error code of the answer: Invalid Request.
pub const CODE: i64 = -32600;

/// What kind of undecodable message it is.
#[derive(Debug, Clone, PartialEq)]
pub enum Undecodable {
    /// A `method` and no `id`: a notification, which gets no answer.
    Notification,
    /// Anything else: answered with this id (a string or number as sent,
    /// else `null`).
    Request(Value),
}

/// The top-level fields a lenient read keeps.
#[derive(Deserialize)]
struct Envelope {
    /// `Some(Value::Null)` for `"id": null`, `None` when there is no id.
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "present_skipped")]
    method: bool,
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

fn present_skipped<'de, D: serde::Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

/// `Some` when `bytes` is a JSON object that cannot be decoded as above;
/// `None` when it decodes, or is not UTF-8, not JSON, or not an object whose
/// id can be read (a parse error, id `null`).
pub fn classify(bytes: &[u8]) -> Option<Undecodable> {
    let text = std::str::from_utf8(bytes).ok()?;
    if !text.trim_start().starts_with('{')
        || serde_json::from_str::<serde::de::IgnoredAny>(text).is_err()
        || serde_json::from_str::<Value>(text).is_ok()
    {
        return None;
    }
    let envelope = serde_json::from_str::<Envelope>(text).ok()?;
    if envelope.method && envelope.id.is_none() {
        return Some(Undecodable::Notification);
    }
    Some(Undecodable::Request(match envelope.id {
        Some(id @ (Value::String(_) | Value::Number(_))) => id,
        _ => Value::Null,
    }))
}

/// The text of the answer to a message that is not JSON at all.
pub const PARSE_ERROR_MESSAGE: &str =
    "Parse error: the message is not valid JSON (or nests deeper than 128 levels)";

/// The text of the answer to JSON that is no JSON-RPC 2.0 message (not an
/// object, a batch array, a missing `jsonrpc` or `method`, ...).
pub const INVALID_MESSAGE: &str = "Invalid Request: not a valid JSON-RPC 2.0 message";

/// How a message that does not decode as a JSON-RPC 2.0 message is
/// answered, the same on both transports (JSON-RPC 2.0, "Error object":
/// -32700 Parse error for what is not JSON, -32600 Invalid Request for the
/// rest). No answer quotes the message.
#[derive(Debug, Clone, PartialEq)]
pub enum UndecodableResponse {
    /// A notification (a `method` and no `id`): on stdio it gets no answer;
    /// over HTTP the POST is still answered (400, id `null`).
    Notification,
    /// An error answer.
    Answer {
        /// The request's id when it can be read (a string or number),
        /// else `null`.
        id: Value,
        /// -32700 or -32600.
        code: i64,
        /// [`PARSE_ERROR_MESSAGE`], [`MESSAGE`] or [`INVALID_MESSAGE`].
        message: &'static str,
    },
}

/// How to answer `bytes`, a message that did not decode as a JSON-RPC 2.0
/// message.
pub fn rejection(bytes: &[u8]) -> UndecodableResponse {
    match classify(bytes) {
        Some(Undecodable::Notification) => return UndecodableResponse::Notification,
        Some(Undecodable::Request(id)) => {
            return UndecodableResponse::Answer {
                id,
                code: CODE,
                message: MESSAGE,
            };
        }
        None => {}
    }
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return UndecodableResponse::Answer {
            id: Value::Null,
            code: -32700,
            message: PARSE_ERROR_MESSAGE,
        };
    };
    if v.get("method").is_some() && v.get("id").is_none() {
        return UndecodableResponse::Notification;
    }
    let id = match v.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
        _ => Value::Null,
    };
    UndecodableResponse::Answer {
        id,
        code: CODE,
        message: INVALID_MESSAGE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_valid_json_that_cannot_be_decoded_is_classified() {
        let request = |id: Value| Some(Undecodable::Request(id));
        let deep = format!(r#"{{"id":3,"p":{}{}}}"#, "[".repeat(200), "]".repeat(200));
        for (line, want) in [
            (
                r#"{"id":9,"method":"m","params":{"a":"\ud800"}}"#.to_owned(),
                request(9.into()),
            ),
            (
                r#"{"id":"x","params":[1e999999]}"#.to_owned(),
                request("x".into()),
            ),
            (deep, request(3.into())),
            (
                r#"{"method":"m","params":"\udc00"}"#.to_owned(),
                Some(Undecodable::Notification),
            ),
            (
                r#"{"id":null,"method":"m","params":"\udc00"}"#.to_owned(),
                request(Value::Null),
            ),
            (
                r#"{"id":[1],"params":"\udc00"}"#.to_owned(),
                request(Value::Null),
            ),
            // The id itself cannot be read: a parse error.
            (r#"{"id":"\ud800","method":"m"}"#.to_owned(), None),
            // Decodes, or is no JSON at all.
            (r#"{"id":1,"method":"m"}"#.to_owned(), None),
            (r#"{"id":1,"method":"m""#.to_owned(), None),
            (r#"["\ud800"]"#.to_owned(), None),
            (r#"[5,1e999999]"#.to_owned(), None),
        ] {
            assert_eq!(classify(line.as_bytes()), want, "{line}");
        }
        assert_eq!(classify(b"{\"id\":1,\"p\":\"\xff\"}"), None);
    }

    #[test]
    fn every_rejection_has_its_code_and_the_readable_id() {
        let answer = |id: Value, code, message| UndecodableResponse::Answer { id, code, message };
        for (line, want) in [
            (
                r#"{"jsonrpc":"#.as_bytes(),
                answer(Value::Null, -32700, PARSE_ERROR_MESSAGE),
            ),
            (
                b"\xff{}".as_slice(),
                answer(Value::Null, -32700, PARSE_ERROR_MESSAGE),
            ),
            (
                r#"{"id":7,"a":1}"#.as_bytes(),
                answer(7.into(), CODE, INVALID_MESSAGE),
            ),
            (
                r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#.as_bytes(),
                answer(Value::Null, CODE, INVALID_MESSAGE),
            ),
            (
                r#"{"id":5,"p":"\ud800"}"#.as_bytes(),
                answer(5.into(), CODE, MESSAGE),
            ),
            (
                r#"{"method":7}"#.as_bytes(),
                UndecodableResponse::Notification,
            ),
        ] {
            assert_eq!(rejection(line), want, "{}", String::from_utf8_lossy(line));
        }
    }
}
