//! The warm conda on Windows (a spare interpreter waiting for one job,
//! worker/src/spare.rs) against a fresh conda per call, under wine, with
//! the replay as the installation's `python.exe`.
//!
//! What it measures: the `tools/call conda_info` round trip through the
//! Windows server and worker, median of [`CALLS`] calls, once with the
//! default warm conda and once with `--no-warm-conda`, and their ratio.
//! The replay starts in a few milliseconds and imports nothing, so the
//! ratio shows what the spare saves of process creation under wine (and
//! costs in its hand-over), not conda's import time, which only a real
//! Windows with Miniforge shows (docs/testing.md "macOS and Windows").
//!
//! Run (the server, worker and replay built for Windows first):
//! `bash tests/tools/cross/setup.sh bench`.

use std::time::Duration;

/// Calls timed per mode (after one untimed call).
const CALLS: usize = 15;
/// Pause between calls, so that the next spare is up (a host's calls are
/// seconds apart).
const PAUSE: Duration = Duration::from_millis(500);

#[cfg(windows)]
fn main() {
    use conda_mcp_replay::{Session, built, install};
    use serde_json::json;
    use std::process::Command;
    use std::time::Instant;

    let me = std::env::current_exe().expect("this benchmark's path");
    let exe = |name: &str| {
        built(&me, name)
            .unwrap_or_else(|| panic!("{name}.exe is not built next to {}", me.display()))
    };
    let scratch = std::env::temp_dir().join(format!("conda-mcp-warm-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let inst = install(&scratch.join("miniforge3"), &exe("conda-replay")).expect("installation");

    let mut medians = Vec::new();
    for (label, extra) in [
        ("spare (warm conda)", &[][..]),
        ("fresh (--no-warm-conda)", &["--no-warm-conda"][..]),
    ] {
        let mut cmd = Command::new(exe("conda-mcp"));
        cmd.arg("--conda-exe")
            .arg(&inst.conda_exe)
            .arg("--no-cache")
            .args(extra)
            .env("CONDA_PYTHON_EXE", &inst.python)
            .env("RUST_LOG", "warn");
        let mut s = Session::start(cmd).expect("start conda-mcp.exe");
        s.initialize().expect("initialize");
        let mut times = Vec::new();
        for i in 0..=CALLS {
            std::thread::sleep(PAUSE);
            let t0 = Instant::now();
            let r = s
                .call("conda_info", json!({"json": true}))
                .expect("tools/call");
            let dt = t0.elapsed();
            assert_eq!(r["structuredContent"]["exit_code"], json!(0), "{r}");
            if i > 0 {
                times.push(dt);
            }
        }
        let _ = s.close(Duration::from_secs(30));
        times.sort();
        let median = times[times.len() / 2];
        println!(
            "{label}: conda_info round trip median {:.1} ms (min {:.1}, max {:.1}, {CALLS} calls)",
            ms(median),
            ms(times[0]),
            ms(times[times.len() - 1])
        );
        medians.push(median);
    }
    println!(
        "spare / fresh: {:.2}",
        medians[0].as_secs_f64() / medians[1].as_secs_f64()
    );
    let _ = std::fs::remove_dir_all(&scratch);
}

#[cfg(windows)]
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[cfg(not(windows))]
fn main() {
    let _ = (CALLS, PAUSE);
    eprintln!("warm_spare: Windows only (run it under wine: tests/tools/cross/setup.sh bench)");
}
