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
    /// Items kept (the first ones, or the last ones when
    /// [`JsonCut::kept_end`] is `last`).
    pub kept: u64,
    /// Items conda returned.
    pub total: u64,
}

/// Which end of each cut array is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeptEnd {
    /// The first items (conda's order).
    First,
    /// The last items: conda orders them by version, oldest first
    /// (`conda search`), so these are the newest.
    Last,
}

/// What a cut of `parsed_json` kept.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct JsonCut {
    /// Items kept over all cut arrays.
    pub kept: u64,
    /// Items conda returned in those arrays.
    pub total: u64,
    /// How many arrays were cut (all of them, listed or not).
    pub arrays_cut: u64,
    /// Which end of each cut array was kept.
    pub kept_end: KeptEnd,
    /// The largest cut arrays (at most [`MAX_LISTED_ARRAYS`]).
    pub arrays: Vec<ArrayCut>,
    /// Top-level keys of the document left out because even their emptied
    /// values did not fit; absent when none were.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub keys_dropped: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
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
pub const MAX_LISTED_ARRAYS: usize = 3;

/// Bytes set aside for the cut record itself and the flags it changes.
pub const CUT_RECORD_RESERVE: usize = 700 + MAX_LISTED_ARRAYS * 60;

/// How to narrow a call of the command `path` (`["conda", "search"]`)
/// whose argv was `argv` (it only tells `config --describe` from `config
/// --show`), in the tools' argument names.
pub fn narrow_hint(path: &[String], argv: &[String]) -> String {
    let sub: Vec<&str> = path.iter().skip(1).map(String::as_str).collect();
    let describe = argv
        .iter()
        .take_while(|a| a.as_str() != "--")
        .any(|a| a == "--describe" || a.starts_with("--describe="));
    match sub.as_slice() {
        ["config"] if describe => "narrow the call: describe with the keys you need (e.g. describe: [\"channels\"])",
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

/// Which end of its arrays a cut of the document of `command` keeps:
/// `conda search` lists each package's records oldest version first, so
/// its cut keeps the last (newest) ones; every other command keeps the
/// first.
pub fn kept_end(command: &[String]) -> KeptEnd {
    match command.get(1).map(String::as_str) {
        Some("search") => KeptEnd::Last,
        _ => KeptEnd::First,
    }
}

/// One array that may be filled: its pointer, its items' serialized
/// lengths in the order they are taken, and how many are taken.
struct Fill {
    path: String,
    costs: Vec<usize>,
    taken: usize,
    open: bool,
}

/// `doc` without the top-level keys not in `keep` (objects only).
fn with_keys(doc: &Value, keep: &[bool]) -> Value {
    match doc {
        Value::Object(m) => Value::Object(
            m.iter()
                .zip(keep)
                .filter(|(_, k)| **k)
                .map(|((k, v), _)| (k.clone(), v.clone()))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `doc` cut structurally to at most `max` serialized bytes, with what was
/// kept; `None` when nothing of it fits (no key, no item).
///
/// Every array that may be cut (the document if it is an array, arrays up
/// to two object levels down) is first emptied; when even that skeleton is
/// over `max`, top-level keys are kept in order while their emptied values
/// fit and the rest are dropped. Then the arrays are filled again one item
/// per array per round (round robin in document order), from the end
/// `end` names, each array until its next item no longer fits: every array
/// keeps some items before any keeps all, and the budget is filled.
pub fn cut_document(doc: &Value, max: usize, end: KeptEnd) -> Option<(Value, Option<JsonCut>)> {
    if json_len(doc) <= max {
        return Some((doc.clone(), None));
    }
    let paths = collections(doc);
    let mut skeleton = doc.clone();
    for p in &paths {
        if let Some(Value::Array(a)) = skeleton.pointer_mut(p) {
            a.clear();
        }
    }
    let mut keys_dropped = 0u64;
    let mut kept_keys: Option<Vec<bool>> = None;
    if json_len(&skeleton) > max {
        let Value::Object(m) = &skeleton else {
            return None;
        };
        let mut size = 2; // {}
        let mut keep = Vec::with_capacity(m.len());
        for (k, v) in m {
            let entry = json_len(k) + 1 + json_len(v) + usize::from(size > 2);
            let fits = size + entry <= max;
            if fits {
                size += entry;
            } else {
                keys_dropped += 1;
            }
            keep.push(fits);
        }
        skeleton = with_keys(&skeleton, &keep);
        kept_keys = Some(keep);
    }
    let source = match &kept_keys {
        Some(keep) => with_keys(doc, keep),
        None => doc.clone(),
    };
    let mut fills: Vec<Fill> = paths
        .into_iter()
        .filter_map(|path| {
            let a = source.pointer(&path)?.as_array()?;
            let mut costs: Vec<usize> = a.iter().map(json_len).collect();
            if end == KeptEnd::Last {
                costs.reverse();
            }
            Some(Fill {
                path,
                costs,
                taken: 0,
                open: true,
            })
        })
        .collect();
    let mut size = json_len(&skeleton);
    let mut open = fills.iter().any(|f| !f.costs.is_empty());
    while open {
        open = false;
        for f in fills.iter_mut().filter(|f| f.open) {
            let Some(cost) = f.costs.get(f.taken) else {
                f.open = false;
                continue;
            };
            let cost = cost + usize::from(f.taken > 0);
            if size + cost <= max {
                size += cost;
                f.taken += 1;
                open = true;
            } else {
                f.open = false;
            }
        }
    }
    let mut value = source;
    let mut cuts = Vec::new();
    for f in &fills {
        if let Some(Value::Array(a)) = value.pointer_mut(&f.path) {
            let total = a.len();
            if f.taken < total {
                match end {
                    KeptEnd::First => a.truncate(f.taken),
                    KeptEnd::Last => {
                        a.drain(..total - f.taken);
                    }
                }
                cuts.push(ArrayCut {
                    path: f.path.clone(),
                    kept: f.taken as u64,
                    total: total as u64,
                });
            }
        }
    }
    let kept: u64 = cuts.iter().map(|c| c.kept).sum();
    let kept_any_key = kept_keys
        .as_ref()
        .is_none_or(|k| k.iter().any(|kept| *kept));
    let is_array = doc.is_array();
    if (is_array && kept == 0) || !kept_any_key {
        return None;
    }
    let total = cuts.iter().map(|c| c.total).sum();
    let arrays_cut = cuts.len() as u64;
    cuts.sort_by(|a, b| {
        (b.total - b.kept)
            .cmp(&(a.total - a.kept))
            .then_with(|| a.path.cmp(&b.path))
    });
    cuts.truncate(MAX_LISTED_ARRAYS);
    Some((
        value,
        Some(JsonCut {
            kept,
            total,
            arrays_cut,
            kept_end: end,
            arrays: cuts,
            keys_dropped,
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

    /// `names` keys of `per_name` search-like records each.
    fn search_doc(names: usize, per_name: usize) -> Value {
        let mut doc = serde_json::Map::new();
        for n in 0..names {
            let name = format!("pkg-{n:03}");
            let records: Vec<Value> = (0..per_name)
                .map(|i| json!({"name": name, "version": format!("1.{i}"), "depends": ["x", "y"], "url": format!("https://example.invalid/{name}-1.{i}.conda")}))
                .collect();
            doc.insert(name, Value::Array(records));
        }
        Value::Object(doc)
    }

    #[test]
    fn per_key_record_lists_are_filled_fairly_and_stay_valid() {
        let doc = search_doc(3, 1000);
        let (cut, info) = cut_document(&doc, 20_000, KeptEnd::First).expect("fits");
        let used = json_len(&cut);
        assert!(used <= 20_000, "{used}");
        let info = info.expect("cut");
        assert_eq!((info.total, info.arrays_cut), (3000, 3));
        // The budget is filled: no room left for one more record.
        let record = json_len(&doc["pkg-000"][0]) + 1;
        assert!(used + record > 20_000, "{used} + {record}");
        let lens: Vec<usize> = ["pkg-000", "pkg-001", "pkg-002"]
            .iter()
            .map(|k| cut[k].as_array().map_or(0, Vec::len))
            .collect();
        assert!(
            lens.iter().max().expect("max") - lens.iter().min().expect("min") <= 1,
            "{lens:?}"
        );
        assert_eq!(info.kept, lens.iter().sum::<usize>() as u64);
        for a in &info.arrays {
            assert_eq!(
                cut.pointer(&a.path).and_then(Value::as_array).map(Vec::len),
                Some(a.kept as usize)
            );
            assert_eq!(a.total, 1000);
        }
        // A prefix, and the depends lists inside records are not cut.
        assert_eq!(cut["pkg-000"][0], doc["pkg-000"][0]);
        assert_eq!(cut["pkg-000"][0]["depends"], json!(["x", "y"]));
    }

    #[test]
    fn many_small_lists_each_keep_their_newest_before_any_keeps_all() {
        // 111 packages x 10 versions, as a wide conda search: a cut by one
        // common fraction kept nothing of it.
        let doc = search_doc(111, 10);
        let (cut, info) = cut_document(&doc, 38_000, KeptEnd::Last).expect("fits");
        assert!(json_len(&cut) <= 38_000);
        let info = info.expect("cut");
        assert_eq!(info.total, 1110);
        assert!(info.kept >= 111, "{info:?}");
        assert!(info.arrays.len() <= MAX_LISTED_ARRAYS);
        for (name, records) in cut.as_object().expect("object") {
            let records = records.as_array().expect("array");
            assert!(!records.is_empty(), "{name} keeps something");
            // The newest: the last records conda printed.
            let all = doc[name].as_array().expect("array");
            assert_eq!(records.last(), all.last(), "{name}");
            assert_eq!(records[0], all[all.len() - records.len()]);
        }
        // The cut report stays small, whatever the number of arrays.
        assert!(json_len(&info) < 400, "{}", json_len(&info));
    }

    #[test]
    fn a_skeleton_over_budget_keeps_the_keys_that_fit() {
        let doc = search_doc(300, 2);
        let (cut, info) = cut_document(&doc, 3_000, KeptEnd::First).expect("some keys");
        assert!(json_len(&cut) <= 3_000);
        let info = info.expect("cut");
        let kept_keys = cut.as_object().expect("object").len() as u64;
        assert!(kept_keys > 0 && info.keys_dropped > 0, "{info:?}");
        assert_eq!(kept_keys + info.keys_dropped, 300);
        // A document without arrays: keys, not a text cut.
        let flat: Value = (0..400)
            .map(|i| (format!("key_{i}"), json!(format!("value {i}"))))
            .collect::<serde_json::Map<_, _>>()
            .into();
        let (cut, info) = cut_document(&flat, 1_000, KeptEnd::First).expect("some keys");
        assert!(json_len(&cut) <= 1_000 && cut["key_0"] == json!("value 0"));
        assert!(info.expect("cut").keys_dropped > 300);
    }

    #[test]
    fn config_describe_gets_its_own_hint() {
        let path = ["conda".to_owned(), "config".to_owned()];
        let argv = |a: &[&str]| a.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert!(narrow_hint(&path, &argv(&["config", "--describe"])).contains("describe: ["));
        assert!(narrow_hint(&path, &argv(&["config", "--show"])).contains("show: ["));
    }

    #[test]
    fn documents_that_fit_or_cannot_be_cut() {
        let doc = json!({"a": [1, 2, 3]});
        assert_eq!(
            cut_document(&doc, 1000, KeptEnd::First),
            Some((doc.clone(), None))
        );
        let big = json!({"s": "x".repeat(5000)});
        assert_eq!(cut_document(&big, 1000, KeptEnd::First), None);
        let big_items = json!(["x".repeat(5000), "y".repeat(5000)]);
        assert_eq!(cut_document(&big_items, 1000, KeptEnd::Last), None);
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
