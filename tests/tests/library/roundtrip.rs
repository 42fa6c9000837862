//! Round trip of the argv compiler through the stand-in conda's real
//! argparse (the compiler's proof): see `conda_mcp_tests::roundtrip`.

use conda_mcp_tests::{paths, roundtrip};

/// Drawn cases per tool (plus one minimal call per tool).
const CASES_PER_TOOL: u32 = 64;

fn check(label: &str, dump: &std::path::Path) {
    let report = roundtrip::run(dump, CASES_PER_TOOL, 7);
    eprintln!(
        "round trip {label}: {} tools, {} cases parsed by argparse ({} option values starting with '-' passed joined), {} properties with raising lazy choices left out, {} failures",
        report.tools,
        report.cases,
        report.joined_dash_values,
        report.skipped_properties,
        report.failures.len()
    );
    assert!(report.tools > 0, "no tools in {label}");
    // Option-like values reach argparse (`--name=-x`), not only plain ones.
    assert!(
        report.joined_dash_values > report.tools,
        "too few option values starting with '-': {}",
        report.joined_dash_values
    );
    assert!(
        report.cases as u32 > report.tools as u32 * CASES_PER_TOOL / 2,
        "too few cases"
    );
    let shown: Vec<&String> = report.failures.iter().take(12).collect();
    assert!(
        report.failures.is_empty(),
        "{} failures in {label}, first ones:\n{}",
        report.failures.len(),
        shown
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn roundtrip_standin_dump() {
    check(
        "standin.json",
        &paths::fixtures().join("dumps").join("standin.json"),
    );
}

#[test]
fn roundtrip_real_conda_26_dump() {
    check("conda-26.json", &paths::real_dump());
}
