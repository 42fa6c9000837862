//! `--tools` and `--exclude-tools`: which tools a server serves.
//!
//! Each flag takes a comma-separated list. An entry is a tool name
//! (`conda_env_create`, `conda_execute`) or a command path as conda spells
//! it (`env create`, an alias such as `uninstall` included); `*` matches any
//! run of characters (`conda_env_*`, `env *`, `*`). A tool is served when it
//! matches some `--tools` entry (or `--tools` is absent) and no
//! `--exclude-tools` entry. The filter applies to listing and calling alike:
//! a tool left out is an unknown tool. In `--tool-mode compact` it selects
//! the commands `conda_commands` lists and `conda_call` runs (the three
//! compact tools themselves are always served).
//!
//! An entry that matches no tool this conda could have (every generated
//! tool of the catalog and the server's own tools, whatever the policy) is
//! a startup error (exit status 2) that names it: a typo must not silently
//! serve everything or nothing.

/// One filter entry, as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern(String);

impl Pattern {
    /// The entry as the operator wrote it (trimmed).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether the entry matches a tool `name` or one of its command
    /// `paths` (space-joined, without `conda`).
    pub fn matches(&self, name: &str, paths: &[String]) -> bool {
        glob(&self.0, name) || paths.iter().any(|p| glob(&self.0, p))
    }
}

/// One flag value: its entries, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternList(pub Vec<Pattern>);

/// An empty entry in a comma-separated list (`a,,b`, a trailing comma):
/// the sentence of clap's usage error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("empty entry in the comma-separated list")]
pub struct EmptyEntry;

/// Parses one flag value: comma-separated, entries trimmed, none empty.
///
/// Errors: [`EmptyEntry`].
pub fn parse_flag(s: &str) -> Result<PatternList, EmptyEntry> {
    parse_list(s).map(PatternList)
}

/// [`parse_flag`] without the wrapper.
///
/// Errors: as [`parse_flag`].
pub fn parse_list(s: &str) -> Result<Vec<Pattern>, EmptyEntry> {
    s.split(',')
        .map(|e| {
            let e = e.split_whitespace().collect::<Vec<_>>().join(" ");
            if e.is_empty() {
                Err(EmptyEntry)
            } else {
                Ok(Pattern(e))
            }
        })
        .collect()
}

/// The two lists, as given on the command line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    /// `--tools`: when present, only matching tools are served.
    pub include: Option<Vec<Pattern>>,
    /// `--exclude-tools`: matching tools are never served.
    pub exclude: Vec<Pattern>,
}

/// A filter entry that matches no tool or command of the conda found (a
/// usage error: exit status 2). The entry is the operator's own, so the
/// message names it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{flag} entry {entry:?} matches no tool or command of this conda \
     (entries are tool names such as conda_env_create or command paths \
     such as \"env create\", with * as a wildcard)"
)]
pub struct UnmatchedEntry {
    /// `--tools` or `--exclude-tools`.
    pub flag: &'static str,
    /// The entry as given (trimmed).
    pub entry: String,
}

/// A tool the filter is checked against: its name and its command paths
/// (canonical and through aliases; none for the server's own tools).
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Tool name.
    pub name: String,
    /// Command paths, space-joined, without `conda`.
    pub paths: Vec<String>,
}

impl ToolFilter {
    /// Whether a tool is served.
    pub fn allows(&self, name: &str, paths: &[String]) -> bool {
        let included = self
            .include
            .as_ref()
            .is_none_or(|inc| inc.iter().any(|p| p.matches(name, paths)));
        included && !self.exclude.iter().any(|p| p.matches(name, paths))
    }

    /// Checks every entry against every tool this server could have.
    ///
    /// Errors: the first entry that matches none of `universe`
    /// ([`UnmatchedEntry`], which names it).
    pub fn check(&self, universe: &[Candidate]) -> Result<(), UnmatchedEntry> {
        let lists = self
            .include
            .iter()
            .flatten()
            .map(|p| ("--tools", p))
            .chain(self.exclude.iter().map(|p| ("--exclude-tools", p)));
        for (flag, p) in lists {
            if !universe.iter().any(|c| p.matches(&c.name, &c.paths)) {
                return Err(UnmatchedEntry {
                    flag,
                    entry: p.as_str().to_owned(),
                });
            }
        }
        Ok(())
    }
}

/// Whether `text` matches `pattern`, where `*` matches any run of
/// characters (none included) and every other character itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // Greedy matching with backtracking to the last `*`.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob("*", ""));
        assert!(glob("*", "conda_env_create"));
        assert!(glob("conda_env_*", "conda_env_create"));
        assert!(!glob("conda_env_*", "conda_install"));
        assert!(glob("env *", "env config vars list"));
        assert!(glob("*_list", "conda_env_list"));
        assert!(glob("c*a*e", "conda_execute"));
        assert!(!glob("c*a*x", "conda_execute"));
        assert!(glob("install", "install"));
        assert!(!glob("install", "install2"));
    }

    #[test]
    fn lists_parse_and_reject_empty_entries() {
        let l = parse_list(" conda_list , env  create,*").expect("valid");
        let texts: Vec<&str> = l.iter().map(Pattern::as_str).collect();
        assert_eq!(texts, ["conda_list", "env create", "*"]);
        assert!(parse_list("a,,b").is_err());
        assert!(parse_list("a,").is_err());
    }

    #[test]
    fn include_exclude_and_unknown_entries() {
        let universe = vec![
            Candidate {
                name: "conda_install".into(),
                paths: vec!["install".into()],
            },
            Candidate {
                name: "conda_remove".into(),
                paths: vec!["remove".into(), "uninstall".into()],
            },
            Candidate {
                name: "conda_env_create".into(),
                paths: vec!["env create".into()],
            },
        ];
        let f = ToolFilter {
            include: Some(parse_list("env *,uninstall").expect("ok")),
            exclude: parse_list("conda_env_c*").expect("ok"),
        };
        f.check(&universe).expect("all entries known");
        assert!(!f.allows("conda_env_create", &["env create".into()]));
        assert!(f.allows("conda_remove", &["remove".into(), "uninstall".into()]));
        assert!(!f.allows("conda_install", &["install".into()]));
        let bad = ToolFilter {
            include: None,
            exclude: parse_list("conda_install,conda_instal").expect("ok"),
        };
        let e = bad.check(&universe).expect_err("unknown").to_string();
        assert!(
            e.contains("\"conda_instal\"") && e.starts_with("--exclude-tools"),
            "{e}"
        );
    }
}
