//! The server's top-level modules form no circle (ARCHITECTURE.md "Code
//! map"): read from the `crate::…` paths of every file under
//! `server/src` (and `super::…` paths that reach the crate root), leaving
//! out comments, doc comments (so intra-doc links) and string literals,
//! module A depends on module B when code in A names `crate::B`. The test
//! fails naming every circle, each edge with one file and line that makes
//! it, so the import to move is in the message.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One dependency edge between top-level modules, with where it was seen.
type Edges = BTreeMap<String, BTreeMap<String, String>>;

fn server_src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../server/src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read server/src")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file below `server/src` (`["mcp", "handler"]`;
/// `lib.rs`, `main.rs` and `worker_main.rs` are the crate root, `[]`).
fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).expect("below src");
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().expect("file name");
    let stem = last.trim_end_matches(".rs");
    if parts.is_empty() && matches!(stem, "lib" | "main" | "worker_main") {
        return Vec::new();
    }
    if stem != "mod" {
        parts.push(stem.to_owned());
    }
    parts
}

/// A token of Rust source that matters here: identifiers, `::`, braces,
/// and `,`/`;` (everything else is punctuation), with its line.
#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Path,
    Open,
    Close,
    Other(char),
}

/// The tokens of `text` without comments, strings and character literals.
fn tokens(text: &str) -> Vec<(Tok, usize)> {
    let b: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            // Block comments nest in Rust.
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if b[i] == '\n' {
                        line += 1;
                    }
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('#') || next == Some('"')) && raw_string_start(&b, i) {
            // r"…" or r#"…"#: ends at a quote followed by as many hashes.
            let mut j = i + 1;
            let mut hashes = 0;
            while b[j] == '#' {
                hashes += 1;
                j += 1;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '\n' {
                    line += 1;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            i = j;
        } else if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' {
                if b[i] == '\\' {
                    i += 1;
                }
                if b.get(i) == Some(&'\n') {
                    line += 1;
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{1F}') or a lifetime ('a).
            if next == Some('\\') {
                i += 2;
                while i < b.len() && b[i] != '\'' {
                    i += 1;
                }
                i += 1;
            } else if b.get(i + 2) == Some(&'\'') {
                i += 3;
            } else {
                i += 1;
            }
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_') {
                i += 1;
            }
            let word: String = b[start..i].iter().collect();
            // `$crate` in a macro is the defining crate, not a module path.
            if start > 0 && b[start - 1] == '$' {
                out.push((Tok::Other('$'), line));
            } else {
                out.push((Tok::Ident(word), line));
            }
        } else if c == ':' && next == Some(':') {
            out.push((Tok::Path, line));
            i += 2;
        } else {
            out.push((
                match c {
                    '{' => Tok::Open,
                    '}' => Tok::Close,
                    other => Tok::Other(other),
                },
                line,
            ));
            i += 1;
        }
    }
    out
}

/// Whether `r` at `i` opens a raw string (not the end of an identifier
/// such as `for`).
fn raw_string_start(b: &[char], i: usize) -> bool {
    if i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_') {
        return false;
    }
    let mut j = i + 1;
    while j < b.len() && b[j] == '#' {
        j += 1;
    }
    b.get(j) == Some(&'"')
}

/// The first segments reached from the crate root at token `i` (just past
/// `crate::` or the `super::`s that reach the root): one name, or every
/// name of a `{…}` group.
fn first_segments(toks: &[(Tok, usize)], i: usize) -> Vec<String> {
    match toks.get(i) {
        Some((Tok::Ident(name), _)) => vec![name.clone()],
        Some((Tok::Open, _)) => {
            let mut names = Vec::new();
            let mut depth = 0;
            let mut expect_name = true;
            for (t, _) in &toks[i..] {
                match t {
                    Tok::Open => {
                        depth += 1;
                        expect_name = depth == 1;
                    }
                    Tok::Close => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    Tok::Other(',') if depth == 1 => expect_name = true,
                    Tok::Ident(n) if depth == 1 && expect_name => {
                        names.push(n.clone());
                        expect_name = false;
                    }
                    _ => {
                        if depth == 1 {
                            expect_name = false;
                        }
                    }
                }
            }
            names
        }
        _ => Vec::new(),
    }
}

/// The edges between top-level modules named by the code of `server/src`.
fn edges(src: &Path, top: &BTreeSet<String>) -> Edges {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut edges = Edges::new();
    for file in files {
        let module = module_of(src, &file);
        let text = std::fs::read_to_string(&file).expect("read source");
        let toks = tokens(&text);
        let rel = file
            .strip_prefix(src)
            .expect("below src")
            .display()
            .to_string();
        // Inline `mod name { … }` blocks: a `super::` inside one starts
        // from that block, not from the file's module.
        let mut inline: Vec<usize> = Vec::new();
        let mut depth = 0usize;
        let mut i = 0;
        while i < toks.len() {
            match &toks[i].0 {
                Tok::Open => depth += 1,
                Tok::Close => {
                    depth = depth.saturating_sub(1);
                    if inline.last() == Some(&depth) {
                        inline.pop();
                    }
                }
                Tok::Ident(w) if w == "mod" => {
                    if let (Some((Tok::Ident(_), _)), Some((Tok::Open, _))) =
                        (toks.get(i + 1), toks.get(i + 2))
                    {
                        inline.push(depth);
                        depth += 1;
                        i += 3;
                        continue;
                    }
                }
                _ => {}
            }
            let from_root = match &toks[i].0 {
                Tok::Ident(w)
                    if w == "crate" && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Path) =>
                {
                    Some(i + 2)
                }
                Tok::Ident(w) if w == "super" => {
                    let prev_is_path = i > 0 && toks[i - 1].0 == Tok::Path;
                    let mut j = i;
                    let mut ups = 0;
                    while let (Some((Tok::Ident(w), _)), Some((Tok::Path, _))) =
                        (toks.get(j), toks.get(j + 1))
                    {
                        if w != "super" {
                            break;
                        }
                        ups += 1;
                        j += 2;
                    }
                    let level = module.len() + inline.len();
                    (!prev_is_path && ups > 0 && ups == level).then_some(j)
                }
                _ => None,
            };
            if let Some(at) = from_root {
                let line = toks[i].1;
                let from = module.first().cloned().unwrap_or_default();
                for to in first_segments(&toks, at) {
                    if !from.is_empty() && to != from && top.contains(&to) {
                        edges
                            .entry(from.clone())
                            .or_default()
                            .entry(to)
                            .or_insert_with(|| format!("{rel}:{line}"));
                    }
                }
            }
            i += 1;
        }
    }
    edges
}

/// The top-level modules `lib.rs` declares.
fn top_modules(src: &Path) -> BTreeSet<String> {
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let toks = tokens(&lib);
    toks.windows(3)
        .filter_map(|w| match (&w[0].0, &w[1].0, &w[2].0) {
            (Tok::Ident(m), Tok::Ident(name), Tok::Other(';')) if m == "mod" => Some(name.clone()),
            _ => None,
        })
        .collect()
}

/// Every elementary circle, each once (starting at its smallest module).
fn circles(edges: &Edges) -> Vec<Vec<String>> {
    fn walk(
        start: &str,
        at: &str,
        edges: &Edges,
        path: &mut Vec<String>,
        out: &mut Vec<Vec<String>>,
    ) {
        for next in edges.get(at).into_iter().flat_map(|m| m.keys()) {
            if next == start {
                out.push(path.clone());
            } else if next.as_str() > start && !path.contains(next) {
                path.push(next.clone());
                walk(start, next, edges, path, out);
                path.pop();
            }
        }
    }
    let mut out = Vec::new();
    for start in edges.keys() {
        walk(start, start, edges, &mut vec![start.clone()], &mut out);
    }
    out
}

#[test]
fn top_level_modules_of_the_server_form_no_circle() {
    let src = server_src();
    let top = top_modules(&src);
    assert!(
        top.len() > 10 && top.contains("call") && top.contains("mcp"),
        "lib.rs declares the server's modules: {top:?}"
    );
    let edges = edges(&src, &top);
    // The reader sees the layering: the protocol-free pipeline below the
    // protocol, and the composition root above everything it composes.
    assert!(edges["mcp"].contains_key("call"), "{edges:?}");
    assert!(edges["app"].contains_key("startup"), "{edges:?}");
    let found = circles(&edges);
    let described: Vec<String> = found
        .iter()
        .map(|c| {
            let mut hops = Vec::new();
            for (k, from) in c.iter().enumerate() {
                let to = &c[(k + 1) % c.len()];
                hops.push(format!("{from} → {to} ({})", edges[from][to]));
            }
            hops.join(", ")
        })
        .collect();
    assert!(
        found.is_empty(),
        "circles between the top-level modules of server/src:\n{}",
        described.join("\n")
    );
}

#[test]
fn the_reader_sees_through_comments_strings_and_groups() {
    let text = r##"
        //! Links such as [`crate::b`] are docs, not imports.
        use crate::{a::X, c};
        /* crate::d */ const S: &str = "crate::e"; const R: &str = r#"crate::f"#;
        fn f() -> char { let _ = crate::g::h(); '"' }
        mod tests { use super::*; fn x() { super::super::i::j(); } }
    "##;
    let dir = tempfile::tempdir().expect("tmp");
    std::fs::write(
        dir.path().join("lib.rs"),
        "mod a; mod b; mod c; mod d; mod e; mod f; mod g; mod i; mod m;",
    )
    .expect("lib");
    std::fs::create_dir(dir.path().join("m")).expect("dir");
    std::fs::write(dir.path().join("m/mod.rs"), text).expect("mod");
    let top = top_modules(dir.path());
    let e = edges(dir.path(), &top);
    let seen: BTreeSet<&str> = e["m"].keys().map(String::as_str).collect();
    assert_eq!(seen, BTreeSet::from(["a", "c", "g", "i"]));
    // A circle is reported with each of its hops.
    let mut circle = Edges::new();
    circle
        .entry("x".into())
        .or_default()
        .insert("y".into(), "x.rs:1".into());
    circle
        .entry("y".into())
        .or_default()
        .insert("x".into(), "y.rs:2".into());
    assert_eq!(circles(&circle), vec![vec!["x".to_owned(), "y".to_owned()]]);
}

/// The public type names (`pub struct`, `pub enum`, `pub trait`, `pub
/// type`) of the files under `src`, each with the files that declare it.
fn public_types(src: &Path) -> BTreeMap<String, Vec<String>> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("read source");
        let toks = tokens(&text);
        let rel = file
            .strip_prefix(src)
            .expect("below src")
            .display()
            .to_string();
        for w in toks.windows(3) {
            if let (Tok::Ident(vis), Tok::Ident(kind), Tok::Ident(name)) =
                (&w[0].0, &w[1].0, &w[2].0)
                && vis == "pub"
                && matches!(kind.as_str(), "struct" | "enum" | "trait" | "type")
            {
                names
                    .entry(name.clone())
                    .or_default()
                    .push(format!("{rel}:{}", w[2].1));
            }
        }
    }
    names
}

#[test]
fn each_public_type_name_of_the_server_has_one_meaning() {
    let names = public_types(&server_src());
    assert!(
        names.contains_key("Outcome") && names.contains_key("Settings"),
        "the reader finds the server's types: {} names",
        names.len()
    );
    let twice: Vec<String> = names
        .iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(name, at)| format!("{name}: {}", at.join(", ")))
        .collect();
    assert!(
        twice.is_empty(),
        "public type names declared more than once in server/src:\n{}",
        twice.join("\n")
    );
}

#[test]
fn only_the_protocol_layers_name_the_mcp_library() {
    // The tool surface, the call pipeline and everything below them are
    // free of the MCP library's types (ARCHITECTURE.md "Code map"): only the
    // handler (`mcp/`), the transports and the composition root name it.
    let src = server_src();
    let allowed = ["mcp", "transport", "app"];
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut named = Vec::new();
    let mut checked = 0;
    for file in files {
        let module = module_of(&src, &file);
        if module
            .first()
            .is_some_and(|m| allowed.contains(&m.as_str()))
        {
            continue;
        }
        checked += 1;
        let text = std::fs::read_to_string(&file).expect("read source");
        for (tok, line) in tokens(&text) {
            if tok == Tok::Ident("rmcp".into()) {
                let rel = file.strip_prefix(&src).expect("below src").display();
                named.push(format!("{rel}:{line}"));
            }
        }
    }
    assert!(
        checked > 50,
        "the reader finds the server's files: {checked}"
    );
    assert!(
        named.is_empty(),
        "the MCP library is named outside {allowed:?}: {}",
        named.join(", ")
    );
}

/// The `crate::…` paths named by `toks`, joined by `::` (a `{…}` group
/// gives one path per name it opens with), each with its line.
fn crate_paths(toks: &[(Tok, usize)]) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for i in 0..toks.len() {
        let (Tok::Ident(w), line) = &toks[i] else {
            continue;
        };
        if w != "crate" || toks.get(i + 1).map(|t| &t.0) != Some(&Tok::Path) {
            continue;
        }
        let mut prefix = Vec::new();
        let mut j = i + 2;
        while let (Some((Tok::Ident(n), _)), Some((Tok::Path, _))) = (toks.get(j), toks.get(j + 1))
        {
            prefix.push(n.clone());
            j += 2;
        }
        for last in first_segments(toks, j) {
            let mut path = prefix.clone();
            path.push(last);
            out.push((path.join("::"), *line));
        }
        if !matches!(toks.get(j), Some((Tok::Ident(_) | Tok::Open, _))) && !prefix.is_empty() {
            out.push((prefix.join("::"), *line));
        }
    }
    out
}

#[test]
fn the_protocol_layer_decides_no_policy_approval_or_audit() {
    // `mcp/` speaks the protocol (ARCHITECTURE.md "A call's way"): the
    // call pipeline (`call/`) plans, decides the approval, records the
    // audit line and counts the call; `mcp/` implements the pipeline's
    // `Asker` and `Sink` and renders the outcome. So `mcp/` names none of
    // the modules that decide.
    let deciders = [
        "policy::classify",
        "policy::table",
        "policy::commands",
        "call::approve::flow",
        "call::approve::on_conda",
        "call::approve::ids",
        "call::audit",
        "call::counted",
        "call::plan::restrict::Restrictions",
    ];
    let src = server_src();
    let mut files = Vec::new();
    rust_files(&src.join("mcp"), &mut files);
    let mut named = Vec::new();
    let mut paths = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("read source");
        for (path, line) in crate_paths(&tokens(&text)) {
            paths += 1;
            if deciders
                .iter()
                .any(|d| path == *d || path.starts_with(&format!("{d}::")))
            {
                let rel = file.strip_prefix(&src).expect("below src").display();
                named.push(format!("{rel}:{line} names crate::{path}"));
            }
        }
    }
    assert!(
        files.len() > 10 && paths > 30,
        "the reader finds mcp/'s paths: {} files, {paths} paths",
        files.len()
    );
    assert!(named.is_empty(), "{}", named.join("\n"));
}

#[test]
fn crate_paths_are_read_whole_and_through_groups() {
    let toks = tokens(
        "use crate::call::approve::{Asker, flow::Steps};\n\
         fn f() { crate::call::audit::Recorder::new(); } // crate::call::counted\n",
    );
    let paths: Vec<String> = crate_paths(&toks).into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        paths,
        [
            "call::approve::Asker",
            "call::approve::flow",
            "call::audit::Recorder::new"
        ]
    );
}
