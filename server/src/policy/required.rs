//! Options a command needs at run time, as data: rules that conda's code
//! (not its argparse parser) checks after parsing, so a tool's input schema
//! cannot require them and conda would start, fail and exit 2.
//!
//! Keyed like [`super::table`]: by command path and argparse *dest*. Each
//! rule names where conda checks it (conda 26.9). The typed tools say the
//! rule in their description ([`Requirement::sentence`]) and the server
//! refuses a call that does not meet it before running anything
//! ([`unmet`]); the raw `conda_execute` tool passes its argv unchanged.
//!
//! Left out on purpose: rules that depend on conda's configuration as well
//! as on the command line (`update` accepts no package when the configured
//! `update_modifier` is `update_all`; `env create` takes the name from its
//! environment file), since refusing those could refuse a call conda runs.

use crate::argparse::Resolved;
use crate::catalog::Catalog;

/// One rule: at least one of `one_of` must be given, unless one of `unless`
/// is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requirement {
    /// Command path without `conda`, space-separated (`"create"`).
    pub path: &'static str,
    /// Dests of which at least one must be given.
    pub one_of: &'static [&'static str],
    /// Dests that waive the rule when given.
    pub unless: &'static [&'static str],
    /// Where conda checks it.
    pub source: &'static str,
}

/// Every rule.
pub const REQUIREMENTS: &[Requirement] = &[
    Requirement {
        path: "create",
        one_of: &["name", "prefix"],
        // A file may name the environment; a dry run or a download-only run
        // uses a temporary prefix.
        unless: &["file", "dry_run", "download_only"],
        source: "conda/cli/main_create.py: \"one of the arguments -n/--name -p/--prefix is required\"",
    },
    Requirement {
        path: "install",
        one_of: &["packages", "file", "revision"],
        unless: &[],
        source: "conda/cli/main_install.py: \"too few arguments, must supply one of command line packages, --file or --revision\"",
    },
    Requirement {
        path: "remove",
        one_of: &["package_names", "all"],
        unless: &[],
        source: "conda/cli/main_remove.py: \"no package names supplied\"",
    },
    Requirement {
        path: "clean",
        one_of: &[
            "all",
            "tarballs",
            "index_cache",
            "packages",
            "tempfiles",
            "logfiles",
        ],
        // Checked first, and returns before the rule.
        unless: &["force_pkgs_dirs"],
        source: "conda/cli/main_clean.py: \"At least one removal target must be given\"",
    },
    Requirement {
        path: "run",
        one_of: &["executable_call"],
        unless: &[],
        source: "conda/cli/main_run.py: \"No command specified. Please provide a command to run.\"",
    },
];

impl Requirement {
    /// The rule for a command path (without `conda`), if there is one.
    pub fn for_path(path: &[String]) -> Option<&'static Requirement> {
        let joined = path.join(" ");
        REQUIREMENTS.iter().find(|r| r.path == joined)
    }

    /// The rule as a phrase after the command, by property name (the dest):
    /// `needs one of: name, prefix (not needed with file, dry_run or
    /// download_only)`.
    pub fn phrase(&self) -> String {
        let mut s = if self.one_of.len() == 1 {
            format!("needs {}", self.one_of[0])
        } else {
            format!("needs one of: {}", self.one_of.join(", "))
        };
        if !self.unless.is_empty() {
            s.push_str(" (not needed with ");
            s.push_str(&words(self.unless));
            s.push(')');
        }
        s
    }

    /// The rule as a sentence for the tool description (`Needs one of:
    /// name, prefix (...).`).
    pub fn sentence(&self) -> String {
        let phrase = self.phrase();
        let mut chars = phrase.chars();
        let first = chars.next().map(|c| c.to_ascii_uppercase());
        format!(
            "{}{}.",
            first.map(String::from).unwrap_or_default(),
            chars.as_str()
        )
    }

    /// Whether the resolved command line meets the rule.
    pub fn met_by(&self, catalog: &Catalog, resolved: &Resolved) -> bool {
        self.one_of
            .iter()
            .chain(self.unless)
            .any(|dest| resolved.has(catalog, dest))
    }
}

/// `a`, `a or b`, `a, b or c`.
fn words(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The rule the resolved command line breaks, if any (only for a command
/// argparse accepted, and only in the deepest command reached).
pub fn unmet(catalog: &Catalog, resolved: &Resolved) -> Option<&'static Requirement> {
    let cmd = &catalog.commands[resolved.command()];
    let rule = Requirement::for_path(cmd.subpath())?;
    (!rule.met_by(catalog, resolved)).then_some(rule)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentences() {
        let create = Requirement::for_path(&["create".to_owned()]).expect("create");
        assert_eq!(
            create.sentence(),
            "Needs one of: name, prefix (not needed with file, dry_run or download_only)."
        );
        let run = Requirement::for_path(&["run".to_owned()]).expect("run");
        assert_eq!(run.sentence(), "Needs executable_call.");
    }
}
