//! The tier mechanism itself (`conda_mcp_tests::tiers`, CONTRIBUTING.md
//! "Tiers"), through helper processes: this test binary runs its own
//! ignored helper test with `CONDA_MCP_TEST_TIERS` set as a run would set
//! it, and reads its exit status and output. A declared tier whose need is
//! missing fails the test; an undeclared one prints its SKIPPED line and
//! passes; an unknown tier name is refused.

use std::process::{Command, Output};

use conda_mcp_tests::tiers::{SKIP_LOG_VAR, TIERS_VAR, Tier, missing};

/// The variable that tells [`helper_reports_a_missing_need`] which tier's
/// need to report missing.
const HELPER_TIER: &str = "CONDA_MCP_TIERS_HELPER_TIER";

/// Runs the helper test in a process of its own with `TIERS_VAR` set to
/// `declared` (unset for `None`); its exit status, its stdout and stderr
/// together, and what it appended to its skip log ([`SKIP_LOG_VAR`]).
fn helper(declared: Option<&str>, tier: Tier) -> (Output, String, String) {
    let skips = tempfile::NamedTempFile::new().expect("a skip log");
    let mut cmd = Command::new(std::env::current_exe().expect("this test binary"));
    cmd.args([
        "--exact",
        "tiers::helper_reports_a_missing_need",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(HELPER_TIER, tier.name())
    .env(SKIP_LOG_VAR, skips.path())
    .env_remove(TIERS_VAR);
    if let Some(d) = declared {
        cmd.env(TIERS_VAR, d);
    }
    let out = cmd.output().expect("run the helper test");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("1 passed") || text.contains("1 failed"),
        "the helper test did not run: {text}"
    );
    let logged = std::fs::read_to_string(skips.path()).expect("the skip log");
    (out, text, logged)
}

/// The helper the tests below run in a process of their own (ignored in a
/// plain run: it is not a test by itself).
#[test]
#[ignore = "a helper process of the tier tests in this file, run by them"]
fn helper_reports_a_missing_need() {
    let name = std::env::var(HELPER_TIER).expect("run by the tier tests");
    let tier = Tier::ALL
        .into_iter()
        .find(|t| t.name() == name)
        .expect("a tier name");
    missing(
        tier,
        "tiers::helper",
        "the need is absent (a helper process)",
    );
}

#[test]
fn a_declared_tier_whose_need_is_missing_fails() {
    for (declared, tier) in [
        ("real", Tier::Real),
        ("root,network", Tier::Network),
        (" hosts , apps ", Tier::Apps),
        ("windows", Tier::Windows),
    ] {
        let (out, text, logged) = helper(Some(declared), tier);
        assert!(!out.status.success(), "{declared:?}: passed: {text}");
        assert_eq!(logged, "", "{declared:?}: a failure is not a skip");
        assert!(
            text.contains(&format!(
                "tiers::helper: the {} tier is declared in {TIERS_VAR} but the need is absent",
                tier.name()
            )),
            "{declared:?}: {text}"
        );
        assert!(!text.contains("SKIPPED"), "{declared:?}: {text}");
    }
}

#[test]
fn an_undeclared_tier_whose_need_is_missing_skips_and_says_so() {
    for (declared, tier) in [
        (None, Tier::Real),
        (Some(""), Tier::Root),
        (Some("real,root"), Tier::Hosts),
    ] {
        let (out, text, logged) = helper(declared, tier);
        assert!(out.status.success(), "{declared:?}: failed: {text}");
        let line = format!(
            "SKIPPED tiers::helper: the need is absent (a helper process) (tier {};",
            tier.name()
        );
        assert!(text.contains(&line), "{declared:?}: {text}");
        // one line in the skip log, the one printed
        assert_eq!(logged.lines().count(), 1, "{declared:?}: {logged}");
        assert!(logged.starts_with(&line), "{declared:?}: {logged}");
    }
}

#[test]
fn an_unknown_tier_name_is_refused() {
    for declared in ["reel", "real,rooot", "Real"] {
        let (out, text, _) = helper(Some(declared), Tier::Real);
        assert!(!out.status.success(), "{declared:?}: passed: {text}");
        assert!(
            text.contains(&format!("{TIERS_VAR} names the unknown tier")),
            "{declared:?}: {text}"
        );
        assert!(!text.contains("SKIPPED"), "{declared:?}: {text}");
    }
}
