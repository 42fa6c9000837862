//! Tool names of the generated tools.
//!
//! `conda_` + the canonical path without `conda`, joined by `_`
//! (`conda_env_create`). Hosts prefix names (`mcp__conda__`) and cap them at
//! 64 characters, and several accept only `[a-z0-9_]`, so a name:
//!
//! * uses only `[a-z0-9_]` and has at most [`MAX_TOOL_NAME_LEN`] characters;
//! * gets a short sha256-derived suffix (`_` + hex of the sha256 of the
//!   canonical path joined by spaces) when it had to be sanitized (a path
//!   element held anything outside `[a-z0-9_]`), was too long, collides with
//!   another tool's name, or is one of [`RESERVED_TOOL_NAMES`];
//! * depends only on the set of paths, never on order or time.

use std::collections::{BTreeMap, BTreeSet};

use conda_mcp_shared::fingerprint::sha256_hex;

/// Longest tool name: 64 (the common host limit) minus room for a host prefix
/// such as `mcp__conda__`.
pub const MAX_TOOL_NAME_LEN: usize = 48;

/// Names the server uses for its own tools (`conda_execute`,
/// `conda_cli_command`, `conda_inventory`, `--tool-mode compact`'s three,
/// and the approval card's `conda_approval_decide` and
/// `conda_approval_status`); a generated
/// tool never takes them, so conda's own `conda commands` is not
/// `conda_commands` in either mode.
pub const RESERVED_TOOL_NAMES: &[&str] = &[
    "conda_execute",
    "conda_cli_command",
    "conda_inventory",
    "conda_commands",
    "conda_describe",
    "conda_call",
    "conda_approval_decide",
    "conda_approval_status",
];

/// Hex digits of the first suffix tried; a suffix that still collides grows.
const SUFFIX_HEX: usize = 6;

/// Assigns a name to every path (each the canonical path WITHOUT the leading
/// `conda`, e.g. `["env", "create"]`). The result is parallel to `paths`.
pub fn tool_names(paths: &[Vec<String>]) -> Vec<String> {
    let bases: Vec<(String, bool)> = paths.iter().map(|p| base_name(p)).collect();
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (b, _) in &bases {
        *counts.entry(b.as_str()).or_default() += 1;
    }
    let mut names: Vec<Option<String>> = vec![None; paths.len()];
    let mut taken: BTreeSet<String> = BTreeSet::new();
    // First the names that need no suffix: they keep their plain form.
    for (i, (b, sanitized)) in bases.iter().enumerate() {
        let plain_ok = !sanitized
            && b.len() <= MAX_TOOL_NAME_LEN
            && counts[b.as_str()] == 1
            && !RESERVED_TOOL_NAMES.contains(&b.as_str());
        if plain_ok {
            taken.insert(b.clone());
            names[i] = Some(b.clone());
        }
    }
    // Then the suffixed ones, in path order (sorted, so independent of input order).
    let mut rest: Vec<usize> = (0..paths.len()).filter(|&i| names[i].is_none()).collect();
    rest.sort_by(|&a, &b| paths[a].cmp(&paths[b]));
    for i in rest {
        let hash = sha256_hex(paths[i].join(" ").as_bytes());
        let mut len = SUFFIX_HEX;
        let name = loop {
            let suffix = &hash[..len.min(hash.len())];
            let keep = MAX_TOOL_NAME_LEN - 1 - suffix.len();
            let mut base: String = bases[i].0.chars().take(keep).collect();
            while base.ends_with('_') && base.len() > "conda".len() {
                base.pop();
            }
            let candidate = format!("{base}_{suffix}");
            if !taken.contains(&candidate) || len >= hash.len() {
                break candidate;
            }
            len += 2;
        };
        taken.insert(name.clone());
        names[i] = Some(name);
    }
    names.into_iter().map(Option::unwrap_or_default).collect()
}

/// `conda_` + elements joined by `_`, with every character outside
/// `[a-z0-9_]` replaced by `_`; the flag says whether anything was replaced.
fn base_name(path: &[String]) -> (String, bool) {
    let mut sanitized = false;
    let mut name = String::from("conda");
    for element in path {
        name.push('_');
        for c in element.chars() {
            if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
                name.push(c);
            } else {
                sanitized = true;
                name.push('_');
            }
        }
    }
    (name, sanitized)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Vec<String> {
        s.split(' ').map(String::from).collect()
    }

    fn valid(n: &str) -> bool {
        n.len() <= MAX_TOOL_NAME_LEN
            && n.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    }

    #[test]
    fn plain_paths_keep_plain_names() {
        let names = tool_names(&[p("env create"), p("list"), p("env config vars set")]);
        assert_eq!(
            names,
            [
                "conda_env_create",
                "conda_list",
                "conda_env_config_vars_set"
            ]
        );
    }

    #[test]
    fn sanitized_long_colliding_and_reserved_names_get_suffixes() {
        let paths = vec![
            p("repo-query"),
            p("repo_query"),
            p("execute"),
            p("a-very-long-plugin-command-name-that-goes-on-and-on forever"),
            p("Upper"),
            p("commands"),
        ];
        let names = tool_names(&paths);
        for n in &names {
            assert!(valid(n), "{n}");
        }
        let unique: BTreeSet<_> = names.iter().collect();
        assert_eq!(unique.len(), names.len(), "{names:?}");
        assert!(
            names[0].starts_with("conda_repo_query_") && names[0].len() == 23,
            "{names:?}"
        );
        assert!(names[1].starts_with("conda_repo_query_"), "{names:?}");
        assert!(names[2].starts_with("conda_execute_"), "{names:?}");
        assert_eq!(names[3].len(), MAX_TOOL_NAME_LEN);
        assert!(names[4].starts_with("conda__pper_"), "{names:?}");
        // conda's `conda commands` never takes compact mode's tool name.
        assert!(names[5].starts_with("conda_commands_"), "{names:?}");
    }

    #[test]
    fn names_do_not_depend_on_order() {
        let mut paths = vec![
            p("repo-query"),
            p("repo_query"),
            p("list"),
            p("cli command"),
        ];
        let a = tool_names(&paths);
        paths.reverse();
        let mut b = tool_names(&paths);
        b.reverse();
        assert_eq!(a, b);
        assert!(a[3].starts_with("conda_cli_command_"), "{a:?}");
    }
}
