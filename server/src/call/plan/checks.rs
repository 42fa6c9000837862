//! Which in-process checks a conda call carries (docs/writes.md "Two
//! layers"): the server predicts from outside ([`super::existing_env`],
//! [`crate::discovery::config`], [`crate::target`]) for early answers and
//! messages; what a guarantee rests on is enforced again inside the conda
//! process, after conda has read its configuration as the user it runs as
//! ([`conda_mcp_shared::guard`]). Decided from the argv that runs, so the
//! typed, compact and raw tools carry the same checks for the same argv.
//!
//! * a call the policy calls read-only because of `--dry-run`: conda's
//!   resolved `dry_run` must be true;
//! * `create`, `env create` (prefix from `--prefix`, `--name`, or the
//!   environment file) and `rename` (its destination): no environment at
//!   the prefix conda resolves, unless the call replaces one
//!   (`replace_existing: true`), which must then be the one the server
//!   found (and showed);
//! * `export`, `env export`: an environment at the prefix conda resolves
//!   (conda itself answers an empty export for a missing one);
//! * `remove --all`, `env remove`: the files under the prefix that no
//!   package record lists, reported in a dry run, refusing an apply unless
//!   the call sets `remove_unmanaged_files: true`;
//! * `env update`: its prefix (from `--prefix`, `--name` or the file) is
//!   reported;
//! * every call: conda's `dry_run`, and `json` when `--json` was given, are
//!   reported (the result says when `--json` was forced off);
//! * the operator's protected environments and allowed channels are added
//!   by the handler ([`super::restrict::Restrictions::arm`]).

use std::path::Path;

use conda_mcp_shared::guard::{Expectation, InProcessChecks, TargetRule, UnmanagedRule};

use crate::argparse::Resolved;
use crate::catalog::Catalog;
use crate::policy::{Classification, Reason};
use crate::target::{self, TargetSpec};

use super::existing_env::Replacement;

/// The server options of a call that change its checks.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Allowances<'a> {
    /// The call replaces this environment (`replace_existing: true` and
    /// the server found one there).
    pub replaces: Option<&'a Replacement>,
    /// `remove_unmanaged_files: true`.
    pub remove_unmanaged_files: bool,
}

/// Whether a command path (without `conda`) removes a whole environment:
/// `env remove`, or `remove` given `--all` (`all`: it was).
pub fn removes_environment(path: &[String], all: bool) -> bool {
    crate::policy::commands::removes_environment(path, |dest| dest == "all" && all)
}

/// The checks of `resolved` (conda's argv, run in `cwd`), classified as
/// `classification`.
pub fn of(
    catalog: &Catalog,
    resolved: &Resolved,
    classification: &Classification,
    cwd: &Path,
    allow: Allowances<'_>,
) -> InProcessChecks {
    let path = target::subpath(catalog, resolved);
    let dry_run = resolved.has(catalog, "dry_run");
    let mut checks = InProcessChecks {
        require_dry_run: classification.reason == Reason::DryRun,
        ..InProcessChecks::default()
    };
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    match p.as_slice() {
        ["create"] | ["env", "create"] => {
            let (name, prefix) = match target::create_target(catalog, resolved, cwd) {
                Some(TargetSpec::Name(n)) => (Some(n), None),
                Some(TargetSpec::Prefix(p)) => (None, Some(p.display().to_string())),
                None => (None, None),
            };
            checks.target = Some(TargetRule::ArgumentsOrFile { name, prefix });
            expect_absent(&mut checks, allow.replaces, dry_run);
        }
        ["rename"] => {
            checks.target = Some(TargetRule::RenameDestination);
            expect_absent(&mut checks, allow.replaces, dry_run);
        }
        ["env", "update"] => {
            // Reported, and the prefix the protected environments are
            // compared with: conda takes the file's `name:` (else
            // `prefix:`) when neither `--name` nor `--prefix` is given.
            let file = resolved
                .last_value(catalog, "file")
                .map_or_else(|| cwd.join("environment.yml"), |f| cwd.join(f));
            let (name, prefix) = target::file_name_prefix(&file);
            let prefix = prefix.map(|p| cwd.join(p).display().to_string());
            checks.target = Some(TargetRule::ArgumentsOrFile { name, prefix });
        }
        ["export"] | ["env", "export"] => {
            checks.target = Some(TargetRule::Arguments);
            checks.expect = Some(Expectation::Present);
        }
        _ if removes_environment(&path, resolved.has(catalog, "all"))
            && !resolved.has(catalog, "keep_env") =>
        {
            checks.target = Some(TargetRule::Arguments);
            checks.unmanaged = if dry_run || allow.remove_unmanaged_files {
                UnmanagedRule::Report
            } else {
                UnmanagedRule::Refuse
            };
        }
        ["install"] | ["update"] | ["remove"] => {
            // Reported, for the postcondition on conda's own prefix.
            checks.target = Some(TargetRule::Arguments);
        }
        _ => {}
    }
    checks
}

/// A create: nothing may be at conda's prefix, unless the call replaces
/// what the server found, which conda's prefix must then be (a dry run of
/// a replacement is solved for a fresh prefix, where nothing may be).
fn expect_absent(checks: &mut InProcessChecks, replaces: Option<&Replacement>, dry_run: bool) {
    match replaces {
        Some(r) if !dry_run && r.applied => {
            checks.predicted_prefix = Some(r.prefix.clone());
        }
        _ => checks.expect = Some(Expectation::Absent),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        crate::catalog::build(&crate::dump::recorded_conda()).expect("catalog")
    }

    fn checks(c: &Catalog, line: &str, allow: Allowances<'_>) -> InProcessChecks {
        let argv: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        let resolved = crate::argparse::resolve(c, &argv);
        let class = crate::policy::classify(c, &argv);
        of(c, &resolved, &class, Path::new("/work"), allow)
    }

    #[test]
    fn each_command_gets_the_checks_its_guarantees_rest_on() {
        let c = catalog();
        let none = Allowances::default();
        let dry = checks(&c, "create -n lab numpy --dry-run --json", none);
        assert!(dry.require_dry_run);
        assert_eq!(dry.expect, Some(Expectation::Absent));
        assert_eq!(
            dry.target,
            Some(TargetRule::ArgumentsOrFile {
                name: Some("lab".into()),
                prefix: None
            })
        );
        let apply = checks(&c, "create -p rel numpy --yes", none);
        assert!(!apply.require_dry_run);
        assert_eq!(
            apply.target,
            Some(TargetRule::ArgumentsOrFile {
                name: None,
                prefix: Some("/work/rel".into())
            })
        );
        let replacing = Replacement {
            prefix: "/x/lab".into(),
            packages: 2,
            applied: true,
            planned_for: None,
            linked: Vec::new(),
        };
        let replace = checks(
            &c,
            "create -n lab numpy --yes",
            Allowances {
                replaces: Some(&replacing),
                ..none
            },
        );
        assert_eq!(replace.expect, None);
        assert_eq!(replace.predicted_prefix.as_deref(), Some("/x/lab"));
        assert_eq!(
            checks(&c, "rename -n a b", none).target,
            Some(TargetRule::RenameDestination)
        );
        for export in ["export -n e", "env export -n e"] {
            assert_eq!(
                checks(&c, export, none).expect,
                Some(Expectation::Present),
                "{export}"
            );
        }
        let remove = "remove -n e --all --yes";
        assert_eq!(checks(&c, remove, none).unmanaged, UnmanagedRule::Refuse);
        let allowed = Allowances {
            remove_unmanaged_files: true,
            ..none
        };
        assert_eq!(checks(&c, remove, allowed).unmanaged, UnmanagedRule::Report);
        assert_eq!(
            checks(&c, "remove -n e --all --dry-run --json", none).unmanaged,
            UnmanagedRule::Report
        );
        assert_eq!(
            checks(&c, "env remove -n e --yes", none).unmanaged,
            UnmanagedRule::Refuse
        );
        assert_eq!(
            checks(&c, "remove -n e --all --keep-env --yes", none).unmanaged,
            UnmanagedRule::Off
        );
        assert_eq!(
            checks(&c, "remove -n e numpy --yes", none).unmanaged,
            UnmanagedRule::Off
        );
        assert!(!checks(&c, "list --json", none).enforces());
    }
}
