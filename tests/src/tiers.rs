//! Test tiers: tests that need something this machine may not have.
//!
//! The default tier needs Rust and `python3` with `venv` only. A test that
//! needs more belongs to a [`Tier`]; the tiers a run claims are declared in
//! one variable, `CONDA_MCP_TEST_TIERS` (comma-separated names, e.g.
//! `real,root,network,hosts,apps`; `windows` on a real Windows). When a test finds its need missing it calls
//! [`missing`]:
//!
//! * tier declared: the test **fails** (a run that claims a tier must run
//!   it; `.ci/run` declares the tiers it claims);
//! * tier not declared: the test prints `SKIPPED <test>: <why> (tier
//!   <name>; ...)` on stderr (and appends it to the file named by
//!   [`SKIP_LOG_VAR`], if any) and returns.
//!
//! An unknown name in the variable is an error, so a typo cannot turn a
//! tier off.

/// A tier: what a group of tests needs beyond the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tier {
    /// A real conda, named by `CONDA_MCP_TEST_CONDA`.
    Real,
    /// Running as root (a second uid, `--worker-user`).
    Root,
    /// Network access to PyPI (the conda-completion plugin, the Python MCP
    /// client) and to the npm registry (the official MCP bundle CLI).
    Network,
    /// The real MCP hosts (Claude Code, Gemini CLI, Codex CLI) from npm at
    /// the versions of `tests/hosts/versions.txt`, installed by
    /// `tests/hosts/install.sh`, and `unshare` for their loopback-only
    /// network namespace ([`crate::hosts`]).
    Hosts,
    /// A headless Chromium (`/usr/bin/chromium`, Debian's package) and
    /// puppeteer-core from npm (`tests/apps/install.sh`, into
    /// `target/apps-npm/`): the approval card in a real browser.
    Apps,
    /// A real Windows, not wine: what wine does not implement
    /// (docs/testing.md "macOS and Windows").
    Windows,
}

/// The environment variable that declares the tiers a run claims.
pub const TIERS_VAR: &str = "CONDA_MCP_TEST_TIERS";

impl Tier {
    /// Every tier.
    pub const ALL: [Tier; 6] = [
        Tier::Real,
        Tier::Root,
        Tier::Network,
        Tier::Hosts,
        Tier::Apps,
        Tier::Windows,
    ];

    /// The tier's name in [`TIERS_VAR`].
    pub fn name(self) -> &'static str {
        match self {
            Tier::Real => "real",
            Tier::Root => "root",
            Tier::Network => "network",
            Tier::Hosts => "hosts",
            Tier::Apps => "apps",
            Tier::Windows => "windows",
        }
    }

    /// Whether [`TIERS_VAR`] declares this tier.
    ///
    /// Panics when the variable holds a name that is not a tier.
    pub fn declared(self) -> bool {
        let value = std::env::var(TIERS_VAR).unwrap_or_default();
        let mut found = false;
        for name in value.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let tier = Tier::ALL
                .into_iter()
                .find(|t| t.name() == name)
                .unwrap_or_else(|| {
                    let known: Vec<&str> = Tier::ALL.iter().map(|t| t.name()).collect();
                    panic!(
                        "{TIERS_VAR} names the unknown tier {name:?} (known: {})",
                        known.join(", ")
                    )
                });
            found |= tier == self;
        }
        found
    }
}

/// Reports that `test` cannot run because its tier's need is missing
/// (`why`): fails the test when the tier is declared, otherwise prints a
/// skip line on stderr. The caller returns right after.
pub fn missing(tier: Tier, test: &str, why: &str) {
    if tier.declared() {
        panic!(
            "{test}: the {} tier is declared in {TIERS_VAR} but {why}",
            tier.name()
        );
    }
    let line = format!(
        "SKIPPED {test}: {why} (tier {}; declare it in {TIERS_VAR} to make this a failure)",
        tier.name()
    );
    eprintln!("{line}");
    // libtest keeps a passing test's stderr to itself: a run that wants
    // the skips (`.ci/run` counts them per tier) names a file for them.
    if let Some(log) = std::env::var_os(SKIP_LOG_VAR) {
        use std::io::Write;
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = appended {
            panic!("{test}: cannot append its skip to {SKIP_LOG_VAR}: {e}");
        }
    }
}

/// The environment variable naming a file [`missing`] appends each skip
/// line to (one line per skip, as printed on stderr).
pub const SKIP_LOG_VAR: &str = "CONDA_MCP_TEST_SKIP_LOG";

/// The real conda of the `real` tier (`CONDA_MCP_TEST_CONDA`), or `None`
/// after [`missing`] when it is not set or not a file.
pub fn real_conda(test: &str) -> Option<std::path::PathBuf> {
    match std::env::var_os("CONDA_MCP_TEST_CONDA").map(std::path::PathBuf::from) {
        Some(p) if p.is_file() => Some(p),
        Some(p) => {
            missing(
                Tier::Real,
                test,
                &format!("CONDA_MCP_TEST_CONDA={} is not a file", p.display()),
            );
            None
        }
        None => {
            missing(Tier::Real, test, "CONDA_MCP_TEST_CONDA is not set");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in Tier::ALL {
            assert_eq!(Tier::ALL.iter().filter(|o| o.name() == t.name()).count(), 1);
        }
    }
}
