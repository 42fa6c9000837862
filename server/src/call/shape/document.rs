//! `parsed_json`: finding conda's JSON document in stdout, and saying why
//! there is none.
//!
//! Two rules, by result mode:
//! * **default** (the reference contract): `parsed_json` only when the whole
//!   untruncated stdout is exactly one JSON document (whitespace around it
//!   allowed; serde_json refuses `NaN`/`Infinity`);
//! * **lean**: the last complete top-level JSON object or array of
//!   stdout, whatever precedes it. conda's JSON reporter writes
//!   `{"fetch": …}\n\0` progress records before its final document whenever
//!   its progress bars are enabled, and notices or warnings can precede the
//!   document.
//!
//! In both modes, when stdout looks like JSON (an object or array starts at
//! the beginning of one of its lines) but gives no `parsed_json`,
//! `parsed_json_error` says why in one line, never quoting stdout: text
//! before the document (a banner or notice), progress records, several
//! documents, text after it, a document that does not end (stdout cut by
//! the output limit, or conda stopped mid-document), or a syntax error (its
//! line and column).

use serde_json::Value;

/// How results are shaped (`--result-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ResultMode {
    /// The reference contract: `stdout` and `parsed_json` both present.
    #[default]
    Default,
    /// One copy of the output and a result budget, for hosts with small
    /// tool-output limits.
    Lean,
}

/// A JSON document found in stdout: its byte range and value.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Byte offset of its first character.
    pub start: usize,
    /// Byte offset just past its last character.
    pub end: usize,
    /// The document.
    pub value: Value,
}

/// `parsed_json` of one stdout.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parsed {
    /// The document (with its range in stdout), when there is one under the
    /// mode's rule.
    pub document: Option<Found>,
    /// Why there is none although stdout looks like JSON (one line).
    pub error: Option<String>,
    /// Lean mode, when `document` was found: stdout without it and without
    /// conda's progress records (a banner, notices, earlier documents).
    pub rest: Option<String>,
}

/// What a scan of stdout found.
#[derive(Debug, Default)]
struct Scan {
    documents: Vec<Found>,
    /// Non-blank text before the first document.
    text_before: bool,
    /// Non-blank text after the last document.
    text_after: bool,
    /// A document starts but stdout ends inside it.
    unterminated: bool,
    /// The first syntax error of a would-be document (line, column, 1-based).
    syntax_error: Option<(usize, usize)>,
}

impl Scan {
    fn looks_like_json(&self) -> bool {
        !self.documents.is_empty() || self.unterminated || self.syntax_error.is_some()
    }
}

/// Whether `v` is one of conda's progress records (an object with a
/// `fetch`, `progress` or `fraction` key).
fn is_progress_record(v: &Value) -> bool {
    v.as_object().is_some_and(|m| {
        m.len() <= 4
            && ["fetch", "progress", "fraction"]
                .iter()
                .any(|k| m.contains_key(*k))
    })
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, col)
}

/// Scans `stdout` line by line for top-level JSON objects and arrays. NUL
/// characters count as whitespace (conda's reporter ends records with one).
fn scan(stdout: &str) -> Scan {
    let cleaned = stdout.replace('\0', " ");
    let bytes = cleaned.as_bytes();
    let mut s = Scan::default();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if bytes[i] == b'{' || bytes[i] == b'[' {
            let mut stream = serde_json::Deserializer::from_str(&cleaned[i..]).into_iter::<Value>();
            match stream.next() {
                Some(Ok(value)) => {
                    let end = i + stream.byte_offset();
                    s.text_after = false;
                    s.documents.push(Found {
                        start: i,
                        end,
                        value,
                    });
                    i = end;
                    continue;
                }
                Some(Err(e)) if e.is_eof() => {
                    s.unterminated = true;
                    return s;
                }
                Some(Err(e)) if s.syntax_error.is_none() => {
                    let (line, start_col) = line_col(&cleaned, i);
                    let col = if e.line() == 1 {
                        start_col + e.column() - 1
                    } else {
                        e.column()
                    };
                    s.syntax_error = Some((line + e.line() - 1, col));
                }
                Some(Err(_)) | None => {}
            }
        }
        // Text: up to the end of the line.
        if s.documents.is_empty() {
            s.text_before = true;
        } else {
            s.text_after = true;
        }
        i = cleaned[i..].find('\n').map_or(bytes.len(), |n| i + n + 1);
    }
    s
}

/// Why a scanned stdout gives no single document (one line).
fn why_not(s: &Scan, truncated: bool) -> String {
    let mut reasons = Vec::new();
    if truncated {
        reasons.push(
            "stdout was cut at the output limit (--output-limit-bytes), so its JSON is incomplete"
                .to_owned(),
        );
    } else if s.unterminated {
        reasons.push("stdout ends inside a JSON document (it is incomplete)".to_owned());
    }
    let n = s.documents.len();
    if n >= 2 {
        let records = s.documents[..n - 1]
            .iter()
            .filter(|d| is_progress_record(&d.value))
            .count();
        if records == n - 1 {
            reasons.push(format!(
                "{records} progress record{} precede{} the final JSON document",
                if records == 1 { "" } else { "s" },
                if records == 1 { "s" } else { "" }
            ));
        } else {
            reasons.push(format!("stdout holds {n} JSON documents, not one"));
        }
    }
    if s.text_before && n >= 1 {
        reasons.push("text (a banner or notice) precedes the JSON document".to_owned());
    }
    if s.text_after && n >= 1 {
        reasons.push("text follows the JSON document".to_owned());
    }
    if let Some((line, col)) = s.syntax_error
        && (n == 0 || reasons.is_empty())
    {
        reasons.push(format!(
            "stdout is not valid JSON (syntax error at line {line}, column {col})"
        ));
    }
    if reasons.is_empty() {
        reasons.push("stdout is not exactly one JSON document".to_owned());
    }
    reasons.join("; ")
}

/// `parsed_json` and `parsed_json_error` of `stdout` under `mode`;
/// `truncated` says the output limit cut stdout.
pub fn parse(stdout: &str, truncated: bool, mode: ResultMode) -> Parsed {
    if stdout.trim().is_empty() {
        return Parsed::default();
    }
    if !truncated && let Ok(value) = serde_json::from_str::<Value>(stdout) {
        let start = stdout.len() - stdout.trim_start().len();
        let end = stdout.trim_end().len();
        return Parsed {
            document: Some(Found { start, end, value }),
            error: None,
            rest: (mode == ResultMode::Lean).then(String::new),
        };
    }
    let s = scan(stdout);
    if !s.looks_like_json() {
        return Parsed::default();
    }
    if mode == ResultMode::Lean
        && !truncated
        && !s.unterminated
        && let Some(last) = s.documents.last()
    {
        let mut rest = String::new();
        let mut at = 0;
        for d in &s.documents {
            if d.start == last.start || is_progress_record(&d.value) {
                rest.push_str(&stdout[at..d.start]);
                at = d.end;
            }
        }
        rest.push_str(&stdout[at..]);
        let blank = rest.chars().all(|c| c.is_whitespace() || c == '\0');
        return Parsed {
            document: Some(last.clone()),
            error: None,
            rest: Some(if blank { String::new() } else { rest }),
        };
    }
    Parsed {
        document: None,
        error: Some(why_not(&s, truncated)),
        rest: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn both(stdout: &str, truncated: bool) -> (Parsed, Parsed) {
        (
            parse(stdout, truncated, ResultMode::Default),
            parse(stdout, truncated, ResultMode::Lean),
        )
    }

    #[test]
    fn one_document_in_both_modes() {
        let (d, l) = both("{\"a\": 1}\n", false);
        assert_eq!(d.document.map(|f| f.value), Some(json!({"a": 1})));
        assert_eq!(l.document.map(|f| f.value), Some(json!({"a": 1})));
        assert_eq!(d.error, None);
        // A scalar is a document too (the whole-stdout rule).
        assert_eq!(
            parse("42", false, ResultMode::Default)
                .document
                .map(|f| f.value),
            Some(json!(42))
        );
    }

    #[test]
    fn progress_records_then_the_final_document() {
        let out = "{\"fetch\": \"pkgs/main\", \"finished\": false, \"maxval\": 1, \"progress\": 0.5}\n\0{\"fetch\": \"pkgs/main\", \"finished\": true, \"maxval\": 1, \"progress\": 1.0}\n\0{\"success\": true, \"actions\": {}}\n";
        let (d, l) = both(out, false);
        assert_eq!(d.document, None);
        assert_eq!(
            d.error.as_deref(),
            Some("2 progress records precede the final JSON document")
        );
        assert_eq!(
            l.document.map(|f| f.value),
            Some(json!({"success": true, "actions": {}}))
        );
        assert_eq!(l.error, None);
        assert_eq!(l.rest.as_deref(), Some(""), "progress records are not kept");
    }

    #[test]
    fn banner_then_document() {
        let out = "Notice: a new conda is out.\n  see the release notes\n{\"envs\": []}\n";
        let (d, l) = both(out, false);
        assert_eq!(
            d.error.as_deref(),
            Some("text (a banner or notice) precedes the JSON document")
        );
        assert_eq!(
            l.rest.as_deref(),
            Some("Notice: a new conda is out.\n  see the release notes\n\n")
        );
        let found = l.document.expect("lean takes the document");
        assert_eq!(found.value, json!({"envs": []}));
        assert_eq!(&out[found.start..found.end], "{\"envs\": []}");
    }

    #[test]
    fn two_documents() {
        let (d, l) = both("{\"a\": 1}\n[2]\n", false);
        assert_eq!(
            d.error.as_deref(),
            Some("stdout holds 2 JSON documents, not one")
        );
        assert_eq!(l.document.map(|f| f.value), Some(json!([2])));
    }

    #[test]
    fn garbage_and_plain_text() {
        for mode in [ResultMode::Default, ResultMode::Lean] {
            let p = parse("{\"a\": tru }\n", false, mode);
            assert_eq!(p.document, None);
            assert_eq!(
                p.error.as_deref(),
                Some("stdout is not valid JSON (syntax error at line 1, column 10)")
            );
            // Plain text does not look like JSON: no error.
            assert_eq!(
                parse("# conda environments:\nbase  /opt\n", false, mode),
                Parsed::default()
            );
            assert_eq!(parse("", false, mode), Parsed::default());
            assert_eq!(parse("NaN", false, mode), Parsed::default());
        }
    }

    #[test]
    fn truncated_and_unterminated_documents() {
        for mode in [ResultMode::Default, ResultMode::Lean] {
            let p = parse("{\"a\": [1, 2", true, mode);
            assert_eq!(p.document, None);
            assert!(
                p.error
                    .as_deref()
                    .is_some_and(|e| e.contains("--output-limit-bytes")),
                "{p:?}"
            );
            // Cut by the limit, even a document that happens to parse is
            // not trusted.
            assert_eq!(parse("{\"a\": 1}", true, mode).document, None);
            let p = parse("{\"progress\": 0.1}\n{\"a\": [1, 2", false, mode);
            assert_eq!(
                p.document, None,
                "{mode:?}: an earlier record is not the answer"
            );
            assert!(
                p.error.as_deref().is_some_and(|e| e.contains("incomplete")),
                "{p:?}"
            );
        }
    }
}
