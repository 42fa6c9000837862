//! Cost of the restart check after a mutation when nothing changed: re-take
//! the startup-cache stamp (the target's size and mtime, the listings of
//! site-packages and `conda-meta`) and compare. Target: under 10 ms
//! (docs/benchmarks.md). Measured on a stand-in prefix, and on the real conda named
//! by `CONDA_MCP_TEST_CONDA` when set (its site-packages is a real one).
//!
//! `cargo bench -p conda-mcp-tests --bench restart_stamp`

#![allow(missing_docs)]

use std::path::{Path, PathBuf};

use conda_mcp_server::discovery::Stamp;
use conda_mcp_tests::standin::StandinPrefix;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn stamp_dirs(prefix: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![prefix.join("conda-meta")];
    if let Ok(lib) = std::fs::read_dir(prefix.join("lib")) {
        for e in lib.flatten() {
            let sp = e.path().join("site-packages");
            if sp.is_dir() {
                dirs.push(sp);
            }
        }
    }
    dirs
}

fn bench(c: &mut Criterion) {
    let standin = StandinPrefix::standard();
    let mut targets = vec![(
        "standin".to_owned(),
        standin.conda_exe.clone(),
        standin.prefix.clone(),
    )];
    if let Some(conda) = std::env::var_os("CONDA_MCP_TEST_CONDA") {
        let exe = PathBuf::from(conda);
        if let Some(prefix) = exe.parent().and_then(Path::parent) {
            targets.push(("real_conda".to_owned(), exe.clone(), prefix.to_path_buf()));
        }
    }
    for (name, exe, prefix) in targets {
        let dirs = stamp_dirs(&prefix);
        let entries: usize = dirs
            .iter()
            .filter_map(|d| std::fs::read_dir(d).ok())
            .map(|r| r.count())
            .sum();
        eprintln!("{name}: {} stamp dirs, {entries} entries", dirs.len());
        let stamp = Stamp::current(&exe, &dirs);
        assert!(!stamp.changed());
        c.bench_function(&format!("restart_check_unchanged/{name}"), |b| {
            b.iter(|| black_box(&stamp).changed())
        });
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
