//! The result budget (`--max-result-bytes`): bounds the serialized
//! structured result whatever conda printed.
//!
//! Over budget, the result is cut in this order of concern:
//! * `stderr` gets its own share (at least a quarter of what is left for
//!   the output, or all it needs) and keeps its **tail**: conda's error is
//!   at the end;
//! * `parsed_json` is cut **structurally** and stays valid JSON: the
//!   top-level array, and arrays that are values of the top-level object
//!   (search results per package name, per-key record lists) or one level
//!   further down, each keep the same fraction of their items (a prefix);
//!   the result says what was kept and the totals;
//! * plain text keeps its **head and tail** with a marker of what was
//!   dropped between them.
//!
//! When even empty lists do not fit, `parsed_json` is dropped and stdout is
//! cut as text instead. The worker's `--output-limit-bytes` is how much is
//! read; the budget is what is sent.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// Items kept of one cut array of `parsed_json`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct ArrayCut {
    /// JSON pointer of the array inside `parsed_json` (`""` for the
    /// document itself, `/numpy` for a search result).
    pub path: String,
    /// Items kept (a prefix).
    pub kept: u64,
    /// Items conda returned.
    pub total: u64,
}

/// What a cut of `parsed_json` kept.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct JsonCut {
    /// Items kept over all cut arrays.
    pub kept: u64,
    /// Items conda returned in those arrays.
    pub total: u64,
    /// The cut arrays (at most [`MAX_LISTED_ARRAYS`], largest first).
    pub arrays: Vec<ArrayCut>,
}

/// What a cut of a text field kept.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct TextCut {
    /// Bytes of the original text kept.
    pub kept_bytes: u64,
    /// Bytes of the text before the cut.
    pub total_bytes: u64,
}

/// Present when the result was cut to fit the budget.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Cut {
    /// The budget: most bytes of the serialized structured result.
    pub max_result_bytes: u64,
    /// What `parsed_json` kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parsed_json: Option<JsonCut>,
    /// What `stdout` kept (head and tail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdout: Option<TextCut>,
    /// What `stderr` kept (its tail).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<TextCut>,
    /// How to narrow the call with the tool's own options.
    pub narrow: String,
}

/// Most arrays listed in [`JsonCut::arrays`].
pub const MAX_LISTED_ARRAYS: usize = 20;

/// Bytes set aside for the cut record itself and the flags it changes.
pub const CUT_RECORD_RESERVE: usize = 600 + MAX_LISTED_ARRAYS * 60;

/// How to narrow a call of the command `path` (`["conda", "search"]`),
/// in the tools' argument names.
pub fn narrow_hint(path: &[String]) -> String {
    let sub: Vec<&str> = path.iter().skip(1).map(String::as_str).collect();
    match sub.as_slice() {
        ["search"] => "narrow the call: a more specific match_spec (an exact name, a version such as name>=1.2, a build), subdir for one platform, or fewer channels",
        ["list"] => "narrow the call: regex (a pattern of package names), full_name (one exact name), or one environment (name or prefix)",
        ["config"] => "narrow the call: show with the keys you need (e.g. show: [\"channels\"])",
        ["info"] => "narrow the call: ask for one part (envs, base or system) instead of all",
        ["env", "export"] | ["export"] => "narrow the call: from_history (only what was asked for) or no_builds",
        ["env", "list"] | ["notices"] | ["package"] => "narrow the call: ask for less with the tool's own options",
        _ => "narrow the call with the tool's own options (a more specific argument, a name, a filter)",
    }
    .to_owned()
}

/// Serialized length of `v` (compact JSON).
pub fn json_len<T: Serialize + ?Sized>(v: &T) -> usize {
    serde_json::to_vec(v).map_or(usize::MAX, |b| b.len())
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// The arrays that may be cut: the document if it is an array, and arrays
/// up to two object levels down. Each is named by its pointer.
fn collections(doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match doc {
        Value::Array(_) => out.push(String::new()),
        Value::Object(m) => {
            for (k, v) in m {
                let p = format!("/{}", escape_pointer(k));
                match v {
                    Value::Array(_) => out.push(p),
                    Value::Object(inner) => {
                        for (k2, v2) in inner {
                            if v2.is_array() {
                                out.push(format!("{p}/{}", escape_pointer(k2)));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
        _ => {}
    }
    out
}

/// `doc` with every array of `paths` cut to `ceil(len × f)` items.
fn cut_at(doc: &Value, paths: &[String], f: f64) -> (Value, Vec<ArrayCut>) {
    let mut v = doc.clone();
    let mut cuts = Vec::new();
    for p in paths {
        if let Some(Value::Array(a)) = v.pointer_mut(p) {
            let total = a.len();
            let kept = ((total as f64) * f).ceil() as usize;
            let kept = kept.min(total);
            if kept < total {
                a.truncate(kept);
                cuts.push(ArrayCut {
                    path: p.clone(),
                    kept: kept as u64,
                    total: total as u64,
                });
            }
        }
    }
    (v, cuts)
}

/// `doc` cut structurally to at most `max` serialized bytes, with what was
/// kept; `None` when even empty lists do not fit.
pub fn cut_document(doc: &Value, max: usize) -> Option<(Value, Option<JsonCut>)> {
    if json_len(doc) <= max {
        return Some((doc.clone(), None));
    }
    let paths = collections(doc);
    let (empty, _) = cut_at(doc, &paths, 0.0);
    if paths.is_empty() || json_len(&empty) > max {
        return None;
    }
    // Largest fraction that fits: bisection over [0, 1].
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    for _ in 0..24 {
        let mid = (lo + hi) / 2.0;
        if json_len(&cut_at(doc, &paths, mid).0) <= max {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let (value, mut cuts) = cut_at(doc, &paths, lo);
    let kept = cuts.iter().map(|c| c.kept).sum();
    let total = cuts.iter().map(|c| c.total).sum();
    cuts.sort_by(|a, b| b.total.cmp(&a.total).then_with(|| a.path.cmp(&b.path)));
    cuts.truncate(MAX_LISTED_ARRAYS);
    Some((
        value,
        Some(JsonCut {
            kept,
            total,
            arrays: cuts,
        }),
    ))
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    i = i.min(s.len());
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Serialized length of a string (with quotes and escapes).
fn string_len(s: &str) -> usize {
    json_len(s)
}

/// The longest cut of `text` by `cut(text, n)` whose serialized length is
/// at most `max` (`n` is the number of original bytes to keep), with what
/// was kept of it (`None` when `text` fits whole).
fn fit(text: &str, max: usize, cut: impl Fn(&str, usize) -> String) -> (String, Option<TextCut>) {
    if string_len(text) <= max {
        return (text.to_owned(), None);
    }
    let (mut lo, mut hi) = (0usize, text.len());
    while lo < hi {
        let mid = (lo + hi).div_ceil(2);
        if string_len(&cut(text, mid)) <= max {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    let out = cut(text, lo);
    if lo >= text.len() {
        return (out, None);
    }
    (
        out,
        Some(TextCut {
            kept_bytes: lo as u64,
            total_bytes: text.len() as u64,
        }),
    )
}

fn marker(dropped: usize) -> String {
    format!("\n[… {dropped} bytes cut here to fit the result budget …]\n")
}

/// `text` cut to its head and tail (a quarter and three quarters of what
/// is kept) so that its serialized form fits `max`; with what was kept.
pub fn head_and_tail(text: &str, max: usize) -> (String, Option<TextCut>) {
    let cut = |t: &str, n: usize| {
        if n >= t.len() {
            return t.to_owned();
        }
        let head = floor_boundary(t, n / 4);
        let tail = ceil_boundary(t, t.len() - (n - n / 4));
        let tail = tail.max(head);
        format!("{}{}{}", &t[..head], marker(tail - head), &t[tail..])
    };
    fit(text, max, cut)
}

/// `text` cut to its tail so that its serialized form fits `max`.
pub fn tail(text: &str, max: usize) -> (String, Option<TextCut>) {
    let cut = |t: &str, n: usize| {
        if n >= t.len() {
            return t.to_owned();
        }
        let start = ceil_boundary(t, t.len() - n);
        format!("{}{}", marker(start).trim_start(), &t[start..])
    };
    fit(text, max, cut)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn per_key_record_lists_keep_a_prefix_and_stay_valid() {
        let mut doc = serde_json::Map::new();
        for name in ["a", "b", "c"] {
            let records: Vec<Value> = (0..1000)
                .map(|i| json!({"name": name, "version": format!("1.{i}"), "depends": ["x", "y"]}))
                .collect();
            doc.insert(name.to_owned(), Value::Array(records));
        }
        let doc = Value::Object(doc);
        let (cut, info) = cut_document(&doc, 20_000).expect("fits");
        assert!(json_len(&cut) <= 20_000);
        let info = info.expect("cut");
        assert_eq!(info.total, 3000);
        assert!(info.kept > 0 && info.kept < 3000);
        for a in &info.arrays {
            assert_eq!(
                cut.pointer(&a.path).and_then(Value::as_array).map(Vec::len),
                Some(a.kept as usize)
            );
            assert_eq!(a.total, 1000);
        }
        // The depends lists inside records are not cut.
        assert_eq!(cut["a"][0]["depends"], json!(["x", "y"]));
    }

    #[test]
    fn documents_that_fit_or_cannot_be_cut() {
        let doc = json!({"a": [1, 2, 3]});
        assert_eq!(cut_document(&doc, 1000), Some((doc.clone(), None)));
        let big = json!({"s": "x".repeat(5000)});
        assert_eq!(cut_document(&big, 1000), None);
    }

    #[test]
    fn text_keeps_head_and_tail_within_the_limit() {
        let text: String = (0..2000).map(|i| format!("line {i}\n")).collect();
        let (out, cut) = head_and_tail(&text, 1000);
        assert!(string_len(&out) <= 1000, "{}", string_len(&out));
        assert!(
            out.starts_with("line 0\n") && out.ends_with("line 1999\n"),
            "{out}"
        );
        assert!(out.contains("bytes cut here"));
        let cut = cut.expect("cut");
        assert_eq!(cut.total_bytes, text.len() as u64);
        let (out, cut) = tail(&text, 500);
        assert!(string_len(&out) <= 500 && out.ends_with("line 1999\n"));
        assert!(cut.is_some());
        assert_eq!(tail("short", 100), ("short".to_owned(), None));
    }
}
