//! Cost of one policy classification (resolve the raw argv with argparse's
//! rules against the catalog, then apply the table), on the recorded real
//! conda 26 parser when present, else on the in-project stand-in dump.
//!
//! `cargo bench -p conda-mcp-tests --bench policy_classify`

#![allow(missing_docs)]

use conda_mcp_server::catalog;
use conda_mcp_server::dump::Dump;
use conda_mcp_server::policy;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn argv(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_owned).collect()
}

fn bench(c: &mut Criterion) {
    let path = conda_mcp_tests::paths::real_dump();
    let bytes = std::fs::read(&path).expect("read dump");
    let cat = catalog::build(&Dump::from_json(&bytes).expect("dump")).expect("catalog");
    for (name, line) in [
        ("list", "list"),
        (
            "install_dry_run",
            "-v --json install -n env -c conda-forge -dy numpy scipy pandas",
        ),
        ("config_set_prefix", "config --se channel_priority strict"),
        (
            "run_passthrough",
            "run -n base python -c print(1) --flag -x",
        ),
        ("rejected_ambiguous", "install --s numpy"),
    ] {
        let a = argv(line);
        c.bench_function(&format!("classify/{name}"), |b| {
            b.iter(|| policy::classify(black_box(&cat), black_box(&a)))
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
