//! A message that is JSON but cannot be decoded: valid UTF-8 and valid
//! JSON grammar (RFC 8259), holding a value serde_json will not decode: a
//! lone UTF-16 surrogate escape (`"\ud800"`: the grammar allows it, but it
//! is no Unicode text, RFC 8259 §8.2), a number beyond a double, or
//! nesting deeper than serde_json's 128 levels. Such a message is a
//! JSON-RPC 2.0 *Invalid Request* (-32600), not a parse error, and its id
//! can be answered when the id itself can be read: the top-level fields
//! are read leniently, every other value only checked against the grammar
//! (iteratively: no depth limit, no stack) and skipped. Both transports
//! answer it the same way (`stdio.rs`, `crate::http::gate`).

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
}
