//! Turning captured bytes into the result's text fields.
//!
//! Rules (docs/reference.md "Results"): at most the limit in bytes per stream,
//! cut at a UTF-8 character boundary (a character straddling the limit is
//! dropped whole), invalid UTF-8 replaced by U+FFFD (the replacement may not
//! push the text over the limit either), and a flag when the text is lossy
//! (bytes were replaced, or it holds NUL characters). Reading JSON out of
//! stdout is the server's business, not the worker's.

/// Converts the kept bytes of one stream into text of at most `limit` bytes.
///
/// `dropped` says whether the stream produced more bytes than were kept.
/// Returns the text, whether anything was left out (the stream's
/// `*_truncated` flag) and whether it is lossy (the `*_lossy` flag: invalid
/// UTF-8 replaced by U+FFFD, or NUL characters in it).
pub fn to_text(kept: &[u8], limit: usize, dropped: bool) -> (String, bool, bool) {
    let bytes = if dropped {
        trim_incomplete_tail(kept)
    } else {
        kept
    };
    let lossy = std::str::from_utf8(bytes).is_err() || bytes.contains(&0);
    let mut text = String::from_utf8_lossy(bytes).into_owned();
    let mut truncated = dropped;
    if text.len() > limit {
        let mut cut = limit;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        truncated = true;
    }
    (text, truncated, lossy)
}

/// Drops a UTF-8 sequence that the cut left incomplete at the end of
/// `bytes` (a lead byte followed by fewer continuation bytes than it
/// announces). Anything else is left for lossy replacement.
fn trim_incomplete_tail(bytes: &[u8]) -> &[u8] {
    let len = bytes.len();
    for back in 1..=len.min(3) {
        let i = len - back;
        let b = bytes[i];
        if b & 0b1100_0000 == 0b1000_0000 {
            continue; // continuation byte: keep looking for the lead
        }
        let expected = match b {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => return bytes, // ASCII or invalid lead: nothing incomplete
        };
        return if back < expected { &bytes[..i] } else { bytes };
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn straddling_character_is_dropped_whole() {
        let kept = "ab€".as_bytes(); // € is 3 bytes
        assert_eq!(
            to_text(&kept[..4], 4, true),
            ("ab".to_string(), true, false)
        );
        assert_eq!(
            to_text(&kept[..3], 3, true),
            ("ab".to_string(), true, false)
        );
        assert_eq!(to_text(kept, 5, false), ("ab€".to_string(), false, false));
    }

    #[test]
    fn invalid_bytes_are_replaced_within_the_limit() {
        let (t, trunc, lossy) = to_text(b"a\xffb", 3, false);
        assert!(lossy);
        // U+FFFD is three bytes: "a\u{fffd}b" is 5 bytes, cut to 3.
        assert!(t.len() <= 3 && t.starts_with('a'), "{t:?}");
        assert!(trunc);
        assert_eq!(to_text(b"a\xffb", 10, false).0, "a\u{fffd}b");
        assert_eq!(
            to_text(b"{}\n\0", 10, false),
            ("{}\n\0".to_string(), false, true)
        );
        assert!(!to_text(b"clean", 10, false).2);
    }
}
