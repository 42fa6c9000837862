//! Credential masking: the one function every output and log line of the
//! server and the worker goes through.
//!
//! Two credential forms are masked, both only inside a URL (a run of
//! non-space characters that starts with `scheme://`, the scheme as
//! RFC 3986 spells it: a letter, then letters, digits, `+`, `-`, `.`):
//!
//! * **userinfo with a password**: `scheme://user:password@host` becomes
//!   `scheme://user:***@host`. The authority ends at the first `/`, `?` or
//!   `#`; the userinfo at its *last* `@` (so a password holding a raw `@` is
//!   masked whole); the user name ends at its first `:` (a raw `@` before
//!   it is the user's, as Python's `urllib.parse` splits it). A bare user
//!   (`ssh://git@host`) and an empty password (`user:@host`) are left as
//!   they are: there is no secret to hide. Nor is an authority that starts
//!   with `[` (an IPv6 literal, or conda's documentation placeholder
//!   `scheme://[user:password@]host` in `conda config --describe`): a
//!   userinfo never holds a raw `[` (RFC 3986 section 3.2.1).
//! * **conda's token path**: `/t/<token>/` (anaconda.org-style channel
//!   tokens, `[A-Za-z0-9_-]+`) becomes `/t/<TOKEN>/`, the placeholder conda
//!   itself prints when it masks a token.
//!
//! A URL ends at whitespace, a control character, a quote (`"`, `'`, `` ` ``),
//! `<`, `>` or `\`, so URLs inside JSON text, Python reprs and log fields are
//! found. Masking is idempotent: `***` and `<TOKEN>` are never masked (nor
//! counted) again. [`mask_text`] counts what it replaced, so results can say
//! how many credentials they hide.
//!
//! The guard, inside conda's process, masks channels with a line-for-line
//! port of these rules (`_masked` in `worker/src/guard/guard.py`);
//! `tests/tests/channel_rules.rs` runs one corpus through both.

use std::borrow::Cow;

/// What a masked password becomes.
pub const MASKED_PASSWORD: &str = "***";
/// What a masked conda token becomes (conda's own placeholder).
pub const MASKED_TOKEN: &str = "<TOKEN>";

/// `text` with every credential masked, and the number of credentials
/// masked (passwords plus tokens). Borrows `text` when there was nothing to
/// mask.
pub fn mask_text(text: &str) -> (Cow<'_, str>, usize) {
    // Fast path: no URL, nothing to do (almost every log line).
    if !text.contains("://") {
        return (Cow::Borrowed(text), 0);
    }
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0; // bytes of `text` already in `out`
    let mut count = 0;
    let mut search = 0;
    while let Some(rel) = text[search..].find("://") {
        let sep = search + rel;
        if scheme_start(bytes, sep).is_none() {
            search = sep + 3;
            continue;
        }
        let body = sep + 3;
        let end = body
            + bytes[body..]
                .iter()
                .position(|b| ends_url(*b))
                .unwrap_or(bytes.len() - body);
        let mut edits: Vec<(usize, usize, &str)> = Vec::new();
        // Authority: up to the first '/', '?' or '#'.
        let auth_end = body
            + bytes[body..end]
                .iter()
                .position(|b| matches!(b, b'/' | b'?' | b'#'))
                .unwrap_or(end - body);
        // conda's token path segments (/t/<token>/ or /t/<token> at the end)
        // are looked for after the authority, and after a password that
        // runs past it, so that no two edits overlap.
        let mut i = auth_end;
        if let Some((colon, at)) = userinfo_password(&bytes[body..end], auth_end - body) {
            let pw = &text[body + colon + 1..body + at];
            if pw != MASKED_PASSWORD {
                edits.push((body + colon + 1, body + at, MASKED_PASSWORD));
            }
            i = i.max(body + at);
        }
        while let Some(rel) = text[i..end].find("/t/") {
            let tok_start = i + rel + 3;
            let tok_len = bytes[tok_start..end]
                .iter()
                .position(|b| !is_token_byte(*b))
                .unwrap_or(end - tok_start);
            let after = tok_start + tok_len;
            let terminated = after == end || matches!(bytes[after], b'/' | b'?' | b'#');
            if tok_len > 0 && terminated {
                edits.push((tok_start, after, MASKED_TOKEN));
            }
            i = tok_start.max(after);
        }
        for (from, to, with) in edits {
            out.push_str(&text[copied..from]);
            out.push_str(with);
            copied = to;
            count += 1;
        }
        search = end.max(sep + 3);
    }
    if count == 0 {
        return (Cow::Borrowed(text), 0);
    }
    out.push_str(&text[copied..]);
    (Cow::Owned(out), count)
}

/// [`mask_text`] without the count.
pub fn mask(text: &str) -> Cow<'_, str> {
    mask_text(text).0
}

/// Masks `s` in place; returns the number of credentials masked.
pub fn mask_string(s: &mut String) -> usize {
    let (masked, n) = mask_text(s);
    if let Cow::Owned(m) = masked {
        *s = m;
    }
    n
}

/// Masks every string of a JSON value in place, object keys included (conda
/// keys some documents by channel URL), so the value stays valid JSON of the
/// same shape. Returns the number of credentials masked.
///
/// Iterative (an explicit stack), so a deeply nested document cannot
/// overflow the thread's stack.
pub fn mask_json(value: &mut serde_json::Value) -> usize {
    use serde_json::Value;
    let mut count = 0;
    let mut stack: Vec<&mut Value> = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => count += mask_string(s),
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(map) => {
                if map.keys().any(|k| k.contains("://")) {
                    let old = std::mem::take(map);
                    for (k, item) in old {
                        let (key, n) = mask_text(&k);
                        count += n;
                        map.insert(key.into_owned(), item);
                    }
                }
                stack.extend(map.values_mut());
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    count
}

/// The scheme before `://` at `sep`: its first byte's index, when it is a
/// letter followed by letters, digits, `+`, `-` or `.`.
fn scheme_start(bytes: &[u8], sep: usize) -> Option<usize> {
    let mut start = sep;
    while start > 0 {
        let b = bytes[start - 1];
        if b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.') {
            start -= 1;
        } else {
            break;
        }
    }
    // The scheme must begin with a letter; skip leading non-letters
    // (`1https://` is `https://` after a digit that is not part of it).
    while start < sep && !bytes[start].is_ascii_alphabetic() {
        start += 1;
    }
    (start < sep).then_some(start)
}

/// Where the password of `url` (the text after `://`, up to the URL's end)
/// lies: the index of the `:` that ends the user name and of the `@` that
/// ends the password, when there is a non-empty password. `auth_end` is the
/// end of the authority (first `/`, `?` or `#`).
///
/// The standard case: the authority holds an `@`; the userinfo ends at the
/// last one. A password holding a raw `/` (invalid in a URL, but written by
/// people) ends the authority early: when the authority has no `@` but
/// reads `user:` followed by something other than a port number, the
/// password runs to the first `@` of the URL.
fn userinfo_password(url: &[u8], auth_end: usize) -> Option<(usize, usize)> {
    if url.first() == Some(&b'[') {
        return None;
    }
    let (user_end, at) = match url[..auth_end].iter().rposition(|b| *b == b'@') {
        // The user name ends at the userinfo's first ':' (a raw '@' before
        // it is the user's, as Python's urllib splits it).
        Some(at) => (url[..at].iter().position(|b| *b == b':')?, at),
        None => {
            let user_end = url[..auth_end].iter().position(|b| *b == b':')?;
            let after = &url[user_end + 1..auth_end];
            if after.is_empty() || after.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let at = auth_end + url[auth_end..].iter().position(|b| *b == b'@')?;
            (user_end, at)
        }
    };
    (at > user_end + 1).then_some((user_end, at))
}

fn ends_url(b: u8) -> bool {
    b.is_ascii_whitespace()
        || b.is_ascii_control()
        || matches!(b, b'"' | b'\'' | b'`' | b'<' | b'>' | b'\\')
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn m(s: &str) -> (String, usize) {
        let (t, n) = mask_text(s);
        (t.into_owned(), n)
    }

    #[test]
    fn passwords_are_masked() {
        assert_eq!(
            m("channels:\n  - https://alice:s3cret-pw@host/private\n"),
            ("channels:\n  - https://alice:***@host/private\n".into(), 1)
        );
        assert_eq!(
            m("x=\"https://a:b@h\",y='ftp://u:p@@q@h:21/x'"),
            ("x=\"https://a:***@h\",y='ftp://u:***@h:21/x'".into(), 2)
        );
        assert_eq!(
            m("s3://k:v@bucket?x=1"),
            ("s3://k:***@bucket?x=1".into(), 1)
        );
        assert_eq!(
            m("https://u:pa/ss@host/x and https://u:p#w@h"),
            ("https://u:***@host/x and https://u:***@h".into(), 2)
        );
        assert_eq!(
            m("git+https://me:tok@example.org"),
            ("git+https://me:***@example.org".into(), 1)
        );
        // A raw '@' in the user name: the password is what follows its
        // first ':', as urllib splits it.
        assert_eq!(
            m("https://us@er:pass@host/c"),
            ("https://us@er:***@host/c".into(), 1)
        );
        // A password running past the authority hides a token path: one
        // edit, the password's.
        assert_eq!(
            m("https://u:p/t/tk/x@host/t/tk2/c"),
            ("https://u:***@host/t/<TOKEN>/c".into(), 2)
        );
    }

    #[test]
    fn tokens_are_masked() {
        assert_eq!(
            m("https://conda.anaconda.org/t/ab-12_cd/chan/linux-64"),
            (
                "https://conda.anaconda.org/t/<TOKEN>/chan/linux-64".into(),
                1
            )
        );
        assert_eq!(m("https://h/t/xyz"), ("https://h/t/<TOKEN>".into(), 1));
        assert_eq!(
            m("https://u:p@h/t/xyz/c and https://h/t/q?x"),
            (
                "https://u:***@h/t/<TOKEN>/c and https://h/t/<TOKEN>?x".into(),
                3
            )
        );
    }

    #[test]
    fn what_is_not_a_credential_is_left_alone() {
        for s in [
            "no url here: user:password@host",
            "ssh://git@github.com/x",
            "https://alice:@host/x",
            "https://host:8443/path/a:b@c",
            "https://host:8443/@scope/pkg",
            "https://host/path:x@y",
            "proxy_servers: {http: scheme://[user:password@]host[:port]}",
            "http://[::1]:8080/a:b@c",
            "/home/t/data/ and file:///tmp/t/",
            "://a:b@c",
            "https://h/t/<TOKEN>/x https://u:***@h",
            "https://h/t//x",
        ] {
            let (t, n) = mask_text(s);
            assert_eq!((t.as_ref(), n), (s, 0), "{s}");
            assert!(matches!(t, Cow::Borrowed(_)));
        }
    }

    #[test]
    fn masking_is_idempotent() {
        let s = "https://u:p@h/t/tok/ https://v:w@x";
        let (once, n) = m(s);
        assert_eq!(n, 3);
        assert_eq!(m(&once), (once.clone(), 0));
    }

    #[test]
    fn json_strings_and_keys_are_masked_and_stay_valid() {
        let mut v = json!({
            "channels": ["https://alice:pw@host/private", "defaults"],
            "https://bob:pw2@h/c": {"url": "https://h/t/tok/c", "n": 1},
            "deep": [[["https://c:d@e"]]]
        });
        assert_eq!(mask_json(&mut v), 4);
        let text = v.to_string();
        assert!(!text.contains("pw") && !text.contains("tok/") && !text.contains(":d@"));
        assert_eq!(v["channels"][0], "https://alice:***@host/private");
        assert_eq!(v["https://bob:***@h/c"]["url"], "https://h/t/<TOKEN>/c");
        assert!(serde_json::from_str::<serde_json::Value>(&text).is_ok());
    }

    #[test]
    fn deep_json_does_not_overflow_the_stack() {
        let mut v = serde_json::Value::String("https://a:b@c".into());
        for _ in 0..100_000 {
            v = serde_json::Value::Array(vec![v]);
        }
        assert_eq!(mask_json(&mut v), 1);
        // Dropping 100,000 levels recursively would overflow: take it apart.
        let mut stack = vec![v];
        while let Some(mut v) = stack.pop() {
            if let serde_json::Value::Array(items) = &mut v {
                stack.append(items);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Whatever surrounds a credential URL, the password never survives,
        /// and masking twice changes nothing.
        #[test]
        fn a_password_never_survives(
            pre in "[ -~\\n]{0,20}",
            scheme in "[a-z][a-z0-9+.-]{0,6}",
            user in "[A-Za-z0-9._~-]{1,8}",
            pw in "[A-Za-z0-9!$&()*+,;=~%-]{6,16}",
            host in "[a-z0-9.-]{1,12}",
            post in "(/[ -~]{0,20})?",
        ) {
            let text = format!("{pre} {scheme}://{user}:{pw}@{host}{post}");
            let (once, n) = mask_text(&text);
            proptest::prop_assert!(n >= 1);
            let expected = format!("{scheme}://{user}:***@");
            proptest::prop_assert!(once.contains(&expected));
            let (twice, n2) = mask_text(&once);
            proptest::prop_assert_eq!(n2, 0);
            proptest::prop_assert_eq!(twice.as_ref(), once.as_ref());
        }

        /// Arbitrary text never panics and keeps its length within the
        /// replacement's bounds.
        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
            let (t, n) = mask_text(&s);
            if n == 0 {
                proptest::prop_assert_eq!(t.as_ref(), s.as_str());
            }
        }
    }
}
