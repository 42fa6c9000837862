//! CONTRIBUTING.md's tier table ("Tiers") against the code: every test that
//! can reach a tier's skip is listed in that tier's row, and nothing else
//! is. A test reaches a tier when its body names `Tier::<Name>` or calls,
//! directly or through other functions of the tests, one that does
//! (`tiers::real_conda`, `pyclient::mcp_python`, `hosts::installed`, a
//! file's own helper such as `root_python`). The failure prints the rows as
//! the code has them, to paste into the table.
//!
//! The reading of the code is lexical (comments and string literals blanked,
//! functions found by `fn NAME` and their braces, calls by `NAME(`, method
//! calls left out), which is all the tests' code needs: a qualified call
//! (`http::root_python(`) resolves in the file of that name, an unqualified
//! one in its own file, else in the tests' library (tests/src).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use conda_mcp_tests::paths::workspace_root;
use conda_mcp_tests::tiers::Tier;

/// The tier mechanism's own tests: they name every tier, and skip none.
const MECHANISM: [&str; 2] = [
    "tests/tests/library/tiers.rs",
    "tests/tests/library/tier_table.rs",
];

/// One function of the scanned code.
struct Func {
    /// Repository-relative path of its file.
    file: String,
    name: String,
    is_test: bool,
    /// Tiers its body names (`Tier::Real`, ...).
    tiers: BTreeSet<&'static str>,
    /// Calls in its body: (last qualifier, if any; name).
    calls: Vec<(Option<String>, String)>,
}

/// `src` with comments, string and char literals replaced by spaces (same
/// length, so positions keep their meaning).
fn blank(src: &str) -> Vec<u8> {
    let b = src.as_bytes();
    let mut out = b.to_vec();
    let mut i = 0;
    let wipe = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                let end = src[i..].find('\n').map_or(b.len(), |e| i + e);
                wipe(&mut out, i, end);
                i = end;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let end = src[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                wipe(&mut out, i, end);
                i = end;
            }
            b'r' if (b.get(i + 1) == Some(&b'#') || b.get(i + 1) == Some(&b'"'))
                && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_')) =>
            {
                let hashes = b[i + 1..].iter().take_while(|&&c| c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let close = format!("\"{}", "#".repeat(hashes));
                let start = i + 2 + hashes;
                let end = src[start..]
                    .find(&close)
                    .map_or(b.len(), |e| start + e + close.len());
                wipe(&mut out, i, end);
                i = end;
            }
            b'"' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                wipe(&mut out, i, j + 1);
                i = j + 1;
            }
            b'\'' => {
                // a char literal ('x', '\n', '\''), not a lifetime ('a)
                let len = if b.get(i + 1) == Some(&b'\\') {
                    b[i + 2..].iter().position(|&c| c == b'\'').map(|p| p + 3)
                } else {
                    let ch = src[i + 1..].chars().next().map_or(1, char::len_utf8);
                    (b.get(i + 1 + ch) == Some(&b'\'')).then_some(ch + 2)
                };
                match len {
                    Some(n) => {
                        wipe(&mut out, i, i + n);
                        i += n;
                    }
                    None => i += 1,
                }
            }
            _ => i += 1,
        }
    }
    out
}

fn ident_at(b: &[u8], mut i: usize) -> (String, usize) {
    let start = i;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        i += 1;
    }
    (String::from_utf8_lossy(&b[start..i]).into_owned(), i)
}

/// The functions of one file.
fn functions(root: &Path, path: &Path) -> Vec<Func> {
    let src = std::fs::read_to_string(path).expect("read a test source");
    let file = path
        .strip_prefix(root)
        .expect("under the workspace")
        .display()
        .to_string();
    let b = blank(&src);
    let text = String::from_utf8_lossy(&b).into_owned();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = text[from..].find("fn ") {
        let at = from + at;
        from = at + 3;
        if at > 0 && (b[at - 1].is_ascii_alphanumeric() || b[at - 1] == b'_') {
            continue;
        }
        let (name, after) = ident_at(&b, at + 3);
        if name.is_empty() {
            continue;
        }
        // its body: the braces after the signature (none: a declaration)
        let Some(open) = text[after..].find(['{', ';']).map(|o| after + o) else {
            continue;
        };
        if b[open] == b';' {
            continue;
        }
        let mut depth = 0usize;
        let mut close = open;
        for (k, &c) in b[open..].iter().enumerate() {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = open + k;
                        break;
                    }
                }
                _ => {}
            }
        }
        // attributes: the text since the previous item's end
        let head_start = text[..at].rfind(['}', ';']).map_or(0, |p| p + 1);
        let head = &src[head_start..at];
        let is_test = head.contains("#[test]") || head.contains("#[tokio::test");
        let body = &text[open..=close];
        let mut tiers = BTreeSet::new();
        for t in Tier::ALL {
            let spelled = format!("{t:?}");
            if body.contains(&format!("Tier::{spelled}"))
                && body
                    .match_indices(&format!("Tier::{spelled}"))
                    .any(|(p, m)| {
                        !body[p + m.len()..]
                            .starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
                    })
            {
                tiers.insert(t.name());
            }
        }
        let mut calls = Vec::new();
        let bb = body.as_bytes();
        let mut k = 0;
        while k < bb.len() {
            if (bb[k].is_ascii_alphabetic() || bb[k] == b'_')
                && (k == 0 || !(bb[k - 1].is_ascii_alphanumeric() || bb[k - 1] == b'_'))
            {
                let (id, end) = ident_at(bb, k);
                if bb.get(end) == Some(&b'(') && (k == 0 || bb[k - 1] != b'.') {
                    let qualifier = body[..k]
                        .strip_suffix("::")
                        .map(|q| {
                            let (_, last) = q
                                .rsplit_once(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                                .unwrap_or(("", q));
                            last.to_owned()
                        })
                        .filter(|q| !q.is_empty());
                    calls.push((qualifier, id));
                }
                k = end;
            } else {
                k += 1;
            }
        }
        out.push(Func {
            file: file.clone(),
            name,
            is_test,
            tiers,
            calls,
        });
        // nested functions are scanned too (their bodies are inside)
        from = open + 1;
    }
    out
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.expect("entry").path();
        if p.is_dir() {
            rs_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Tier name → "file: test" entries, as the code has them.
fn tiers_in_code(root: &Path) -> BTreeMap<&'static str, BTreeSet<(String, String)>> {
    let mut files = Vec::new();
    for dir in ["tests/tests", "tests/src", "shared/tests"] {
        rs_files(&root.join(dir), &mut files);
    }
    files.sort();
    let funcs: Vec<Func> = files.iter().flat_map(|f| functions(root, f)).collect();
    let stem = |f: &str| {
        Path::new(f)
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    // what a call in `file` resolves to
    let resolve = |file: &str, q: &Option<String>, name: &str| -> Vec<usize> {
        let named = |pred: &dyn Fn(&Func) -> bool| -> Vec<usize> {
            funcs
                .iter()
                .enumerate()
                .filter(|(_, f)| f.name == name && !f.is_test && pred(f))
                .map(|(i, _)| i)
                .collect()
        };
        if let Some(q) = q {
            return named(&|f: &Func| stem(&f.file) == *q);
        }
        let own = named(&|f: &Func| f.file == file);
        if !own.is_empty() {
            return own;
        }
        named(&|f: &Func| f.file.starts_with("tests/src/"))
    };
    // the tiers each function reaches, to a fixed point
    let mut reach: Vec<BTreeSet<&'static str>> = funcs.iter().map(|f| f.tiers.clone()).collect();
    loop {
        let mut changed = false;
        for (i, f) in funcs.iter().enumerate() {
            for (q, name) in &f.calls {
                for j in resolve(&f.file, q, name) {
                    if j != i {
                        let add: Vec<_> = reach[j].difference(&reach[i]).copied().collect();
                        changed |= !add.is_empty();
                        reach[i].extend(add);
                    }
                }
            }
        }
        if !changed {
            break;
        }
    }
    let mut table: BTreeMap<&'static str, BTreeSet<(String, String)>> = BTreeMap::new();
    for (i, f) in funcs.iter().enumerate() {
        if f.is_test && !f.file.starts_with("tests/src/") && !MECHANISM.contains(&f.file.as_str()) {
            for t in &reach[i] {
                table
                    .entry(t)
                    .or_default()
                    .insert((f.file.clone(), f.name.clone()));
            }
        }
    }
    table
}

/// Tier name → "file: test" entries, as CONTRIBUTING.md's table lists them:
/// in the row's tests cell, a backticked path starts a file's group and the
/// backticked names after it are its tests.
fn tiers_in_table(contributing: &str) -> BTreeMap<String, BTreeSet<(String, String)>> {
    let section = contributing
        .split_once("### Tiers")
        .expect("CONTRIBUTING.md has a Tiers section")
        .1;
    let mut table = BTreeMap::new();
    for line in section.lines().take_while(|l| !l.starts_with("#")) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // | `tier` | needs | tests |
        if cells.len() < 5 || !cells[1].starts_with('`') {
            continue;
        }
        let tier = cells[1].trim_matches('`').to_owned();
        let mut entries = BTreeSet::new();
        let mut file: Option<String> = None;
        for (n, token) in cells[3].split('`').enumerate() {
            if n % 2 == 0 {
                continue;
            }
            if token.ends_with(".rs") {
                file = Some(token.to_owned());
            } else if let Some(f) = &file {
                entries.insert((f.clone(), token.to_owned()));
            }
        }
        table.insert(tier, entries);
    }
    table
}

/// A tests cell as the table wants it.
fn cell(entries: &BTreeSet<(String, String)>) -> String {
    let mut by_file: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (f, t) in entries {
        by_file.entry(f).or_default().push(t);
    }
    by_file
        .iter()
        .map(|(f, ts)| {
            let names: Vec<String> = ts.iter().map(|t| format!("`{t}`")).collect();
            format!("`{f}`: {}", names.join(", "))
        })
        .collect::<Vec<_>>()
        .join("; ")
}

#[test]
fn the_tier_table_lists_every_test_that_can_skip() {
    let root = workspace_root();
    let code = tiers_in_code(&root);
    let contributing =
        std::fs::read_to_string(root.join("CONTRIBUTING.md")).expect("CONTRIBUTING.md");
    let table = tiers_in_table(&contributing);
    // the scan finds what is known to be there
    assert!(
        code.get("real").is_some_and(|e| e.len() >= 5)
            && code.get("root").is_some_and(|e| e.len() >= 3),
        "the scan of the tests found too little: {code:?}"
    );
    let mut wrong = Vec::new();
    for t in Tier::ALL {
        let listed = table.get(t.name()).cloned().unwrap_or_default();
        let found = code.get(t.name()).cloned().unwrap_or_default();
        if listed != found {
            let missing: Vec<_> = found.difference(&listed).collect();
            let extra: Vec<_> = listed.difference(&found).collect();
            wrong.push(format!(
                "tier {}: not in the table {missing:?}; in the table, not in the code {extra:?}\n  the cell as the code has it:\n  {}",
                t.name(),
                cell(&found)
            ));
        }
    }
    for name in table.keys() {
        assert!(
            Tier::ALL.iter().any(|t| t.name() == name),
            "the table has a row for the unknown tier {name}"
        );
    }
    assert!(
        wrong.is_empty(),
        "CONTRIBUTING.md's tier table disagrees with the code:\n{}",
        wrong.join("\n")
    );
}
