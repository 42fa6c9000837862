//! The documentation as a reader follows it: every relative link and
//! `#anchor` in README.md, docs/*.md, ARCHITECTURE.md and CONTRIBUTING.md
//! resolves (GitHub's anchor rules), the README stays a front page (at most
//! 15,000 bytes), and every flag the built `conda-mcp --help` and
//! `conda-mcp check --help` print has its place in docs/reference.md.
//!
//! Links are read with a CommonMark parser (pulldown-cmark), so a link in a
//! table counts and a `[x](y)` inside a code span or block does not.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use conda_mcp_tests::bins;
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// The most bytes README.md may have: a page a newcomer reads in five
/// minutes; the rest lives in docs/.
const README_MAX_BYTES: usize = 15_000;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate sits in the workspace")
        .to_path_buf()
}

/// The pages the checker reads: the README, the contributor pages and every
/// Markdown file of docs/.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = ["README.md", "ARCHITECTURE.md", "CONTRIBUTING.md"]
        .iter()
        .map(|p| root.join(p))
        .collect();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|e| e.expect("docs/ entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// What one Markdown page offers and points at.
struct Page {
    /// Heading anchors, as GitHub makes them.
    anchors: HashSet<String>,
    /// Link destinations with the line they are on.
    links: Vec<(String, usize)>,
}

/// GitHub's heading anchor: the heading's text lowercased, every character
/// that is not a letter, a digit, a space, `-` or `_` dropped, spaces
/// turned into `-`. A repeated anchor gets `-1`, `-2`, ... (see [`parse`]).
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_'))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn parse(text: &str) -> Page {
    let mut anchors = HashSet::new();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut links = Vec::new();
    let mut heading: Option<String> = None;
    let line_of = |offset: usize| text[..offset].matches('\n').count() + 1;
    for (event, range) in Parser::new_ext(text, Options::ENABLE_TABLES).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::Text(t) | Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let base = slug(&heading.take().unwrap_or_default());
                let n = seen.entry(base.clone()).or_insert(0);
                let anchor = if *n == 0 {
                    base.clone()
                } else {
                    format!("{base}-{n}")
                };
                *n += 1;
                anchors.insert(anchor);
            }
            Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                links.push((dest_url.to_string(), line_of(range.start)));
            }
            _ => {}
        }
    }
    Page { anchors, links }
}

/// `a/./b/../c` → `a/c`, without touching the file system.
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Every broken relative link or anchor of `pages` (paths under `root`),
/// one line each: `page:line: target: why`.
fn broken_links(root: &Path, pages: &[PathBuf]) -> Vec<String> {
    let mut parsed: HashMap<PathBuf, Page> = HashMap::new();
    let mut read = |p: &Path| -> Option<HashSet<String>> {
        if !parsed.contains_key(p) {
            let text = std::fs::read_to_string(p).ok()?;
            parsed.insert(p.to_path_buf(), parse(&text));
        }
        parsed.get(p).map(|page| page.anchors.clone())
    };
    let mut broken = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(page)
            .unwrap_or_else(|e| panic!("read {}: {e}", page.display()));
        let rel = page
            .strip_prefix(root)
            .unwrap_or(page)
            .display()
            .to_string();
        for (target, line) in parse(&text).links {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (path, fragment) = match target.split_once('#') {
                Some((p, f)) => (p, Some(f)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                page.clone()
            } else {
                normalize(&page.parent().expect("page folder").join(path))
            };
            let mut fail = |why: &str| broken.push(format!("{rel}:{line}: {target}: {why}"));
            if !file.starts_with(root) {
                fail("points outside the repository");
                continue;
            }
            if !file.exists() {
                fail("no such file");
                continue;
            }
            let Some(fragment) = fragment else { continue };
            if file.extension().is_none_or(|e| e != "md") {
                fail("an anchor into a file that is not Markdown");
                continue;
            }
            match read(&file) {
                Some(anchors) if anchors.contains(fragment) => {}
                Some(_) => fail("no heading with this anchor"),
                None => fail("cannot read the target"),
            }
        }
    }
    broken
}

#[test]
fn every_relative_link_and_anchor_resolves() {
    let root = repo_root();
    let pages = pages(&root);
    assert!(
        pages.len() >= 9,
        "README, ARCHITECTURE, CONTRIBUTING and the docs/ pages: {pages:?}"
    );
    let broken = broken_links(&root, &pages);
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_docs_page_is_linked_from_the_docs_index() {
    let root = repo_root();
    let index = parse(&std::fs::read_to_string(root.join("docs/README.md")).expect("index"));
    let linked: HashSet<String> = index
        .links
        .iter()
        .map(|(t, _)| t.split('#').next().unwrap_or("").to_owned())
        .collect();
    let missing: Vec<String> = pages(&root)
        .iter()
        .filter(|p| p.parent() == Some(&root.join("docs")))
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .filter(|n| n != "README.md" && !linked.contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/README.md does not link {missing:?}"
    );
}

#[test]
fn the_checker_finds_a_missing_file_a_missing_anchor_and_an_escape() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().canonicalize().expect("canonical tempdir");
    std::fs::create_dir(root.join("docs")).expect("docs");
    std::fs::write(
        root.join("docs/a.md"),
        "# A page\n\n## Same\n\n## Same\n\n## `conda_execute` (only with `--allow-exec`)\n",
    )
    .expect("a.md");
    std::fs::write(
        root.join("README.md"),
        "# Front\n\n\
         [ok](docs/a.md) [ok](docs/a.md#same-1) [ok](#front) \
         [ok](docs/a.md#conda_execute-only-with---allow-exec) [web](https://example.invalid/x)\n\n\
         | t |\n| --- |\n| [gone](docs/gone.md) |\n\n\
         [no anchor](docs/a.md#same-2) [out](../elsewhere.md) `[code](docs/gone.md)`\n\n\
         ```\n[fenced](docs/gone.md)\n```\n",
    )
    .expect("README.md");
    let broken = broken_links(&root, &[root.join("README.md")]);
    assert_eq!(
        broken,
        [
            "README.md:7: docs/gone.md: no such file",
            "README.md:9: docs/a.md#same-2: no heading with this anchor",
            "README.md:9: ../elsewhere.md: points outside the repository",
        ],
    );
}

#[test]
fn github_anchor_rules() {
    for (heading, anchor) in [
        (
            "Long calls: progress, cancellation, queueing, restarts",
            "long-calls-progress-cancellation-queueing-restarts",
        ),
        (
            "Resource conda://capabilities",
            "resource-condacapabilities",
        ),
        (
            "Operators: running the worker under its own user",
            "operators-running-the-worker-under-its-own-user",
        ),
        (
            "One real session against conda 26.7.1",
            "one-real-session-against-conda-2671",
        ),
        (
            "Warm conda against fresh processes",
            "warm-conda-against-fresh-processes",
        ),
    ] {
        assert_eq!(slug(heading), anchor, "{heading}");
    }
}

#[test]
fn the_readme_is_a_front_page() {
    let readme = std::fs::read(repo_root().join("README.md")).expect("README.md");
    assert!(
        readme.len() <= README_MAX_BYTES,
        "README.md has {} bytes, at most {README_MAX_BYTES}: move detail into docs/",
        readme.len()
    );
}

/// The long flags (`--name`) of the option lines of a clap `--help` text:
/// lines indented by fewer than 8 spaces that start with `-` (`  -h, --help`,
/// `      --conda-exe <PATH>`); description lines are indented further.
fn flags_in_help(args: &[&str]) -> BTreeSet<String> {
    let out = Command::new(bins::server())
        .args(args)
        .output()
        .expect("run conda-mcp --help");
    assert!(out.status.success(), "conda-mcp {args:?} failed");
    let help = String::from_utf8(out.stdout).expect("help is UTF-8");
    help.lines()
        .filter(|l| {
            let body = l.trim_start();
            body.starts_with('-') && l.len() - body.len() < 8
        })
        .flat_map(|l| l.split([' ', ',', '=']))
        .filter(|w| w.starts_with("--") && w.len() > 2)
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_flag_of_the_help_is_in_the_reference() {
    let reference =
        std::fs::read_to_string(repo_root().join("docs/reference.md")).expect("reference");
    let server = flags_in_help(&["--help"]);
    let check = flags_in_help(&["check", "--help"]);
    for f in ["--conda-exe", "--allow-write", "--result-mode", "--help"] {
        assert!(server.contains(f), "{f} missing from --help: {server:?}");
    }
    // check takes the server's flags, but its help lists only its own.
    for f in ["--host", "--format", "--verbose"] {
        assert!(check.contains(f), "check --help: {check:?}");
    }
    assert!(!check.contains("--conda-exe"), "check --help: {check:?}");
    let missing: Vec<&String> = server
        .iter()
        .chain(&check)
        .filter(|f| !reference.contains(&format!("`{f}")))
        .collect();
    assert!(
        missing.is_empty(),
        "flags of `conda-mcp --help` / `conda-mcp check --help` without a `--flag` entry in docs/reference.md: {missing:?}"
    );
}

/// `conda-mcp --help` lists every subcommand a newcomer needs: `check`,
/// and `token` (how to make a bearer token for `--listen`), and says the
/// server also speaks HTTP; `conda-mcp token --help` works.
#[test]
fn the_help_lists_the_check_and_token_subcommands() {
    let out = Command::new(bins::server())
        .arg("--help")
        .output()
        .expect("run conda-mcp --help");
    let help = String::from_utf8_lossy(&out.stdout);
    let commands = help
        .split("Commands:")
        .nth(1)
        .and_then(|s| s.split("Options:").next())
        .unwrap_or_else(|| panic!("a Commands section: {help}"));
    for c in ["check", "token"] {
        assert!(
            commands
                .lines()
                .any(|l| l.trim_start().starts_with(&format!("{c} "))),
            "{c} missing from the Commands section: {commands}"
        );
    }
    assert!(help.contains("--listen"), "{help}");
    let token = Command::new(bins::server())
        .args(["token", "--help"])
        .output()
        .expect("run conda-mcp token --help");
    assert!(token.status.success(), "{token:?}");
    assert!(
        String::from_utf8_lossy(&token.stdout).contains("new"),
        "{token:?}"
    );
}
