//! Cost of one policy classification (resolve the raw argv with argparse's
//! rules against the catalog, then apply the table), on the recorded real
//! conda 26 parser when present, else on the in-project stand-in dump; and
//! what the guard of existing environments and the postcondition checks add
//! to a write (`guard/…`: resolve, target prefix, `conda-meta` listing;
//! `postcondition/…`: resolve, then the `conda-meta/history` stat after
//! the run).
//!
//! `cargo bench -p conda-mcp-tests --bench policy_classify`

#![allow(missing_docs)]

use conda_mcp_server::call::CallOutput;
use conda_mcp_server::call::plan::existing_env;
use conda_mcp_server::call::run::postcondition;
use conda_mcp_server::catalog;
use conda_mcp_server::dump::Dump;
use conda_mcp_server::policy;
use conda_mcp_shared::ExecutionResult;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::path::Path;

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
    bench_guard(c, &cat);
}

/// The guard and the postcondition of `create -p P pkg --json --yes`, for
/// a new prefix and for an existing environment of 50 packages.
fn bench_guard(c: &mut Criterion, cat: &catalog::Catalog) {
    let dir = tempfile::tempdir().expect("tmp");
    let existing = dir.path().join("existing");
    let meta = existing.join("conda-meta");
    std::fs::create_dir_all(&meta).expect("mkdir");
    std::fs::write(meta.join("history"), "").expect("history");
    for i in 0..50 {
        std::fs::write(meta.join(format!("pkg{i}-1.0-0.json")), "{}").expect("record");
    }
    let cwd = Path::new("/");
    for (name, prefix) in [
        ("new_prefix", dir.path().join("new")),
        ("existing_50_packages", existing.clone()),
    ] {
        let a = vec![
            "create".to_owned(),
            "-p".to_owned(),
            prefix.display().to_string(),
            "numpy".to_owned(),
            "--json".to_owned(),
            "--yes".to_owned(),
        ];
        c.bench_function(&format!("guard/create_{name}"), |b| {
            b.iter(|| {
                let r = conda_mcp_server::argparse::resolve(black_box(cat), black_box(&a));
                existing_env::decide(cat, &r, cwd, false)
            })
        });
    }
    let a = vec![
        "create".to_owned(),
        "-p".to_owned(),
        existing.display().to_string(),
        "numpy".to_owned(),
        "--json".to_owned(),
        "--yes".to_owned(),
    ];
    // A read-only call pays the resolve that finds it is not checked.
    let list = argv("list -n base --json");
    c.bench_function("postcondition/read_only_list", |b| {
        b.iter(|| postcondition::of(black_box(cat), black_box(&list), cwd))
    });
    let output = CallOutput::new(ExecutionResult::nothing_ran());
    c.bench_function("postcondition/create_plan_and_check", |b| {
        b.iter(|| {
            postcondition::of(black_box(cat), black_box(&a), cwd)
                .and_then(|pc| pc.failure(&output, None))
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
