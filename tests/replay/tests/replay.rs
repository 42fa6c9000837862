//! The replay answers exactly what it recorded and refuses the rest (run
//! on every platform; under wine for Windows by tests/tools/cross/setup.sh).

use std::io::Write;
use std::path::Path;
use std::process::{Output, Stdio};

use conda_mcp_replay::{DUMP, GUARD, GUARD_REFUSED, INFO, PROBE, SPARE};
use serde_json::{Value, json};

const HELPER: &str = include_str!("../../../server/src/discovery/helper.py");

fn replay(args: &[&str], stdin: &[u8]) -> Output {
    replay_at(Path::new(env!("CARGO_BIN_EXE_conda-replay")), args, stdin)
}

/// Runs the replay at `exe` (the built one, or a copy beside a file it
/// reads) with `args` and `stdin`.
fn replay_at(exe: &Path, args: &[&str], stdin: &[u8]) -> Output {
    // through the emulator where the target runs under one (Linux arm64
    // under qemu: tests/tools/cross/setup.sh arm64-test)
    let spawn = || {
        conda_mcp_replay::command(exe)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
    };
    // A copy just written (the launcher test) can be "busy" for a moment:
    // another test's fork may still hold the writer's descriptor until it
    // execs (ETXTBSY on Linux). Try again briefly; any other error fails.
    let mut tries = 0;
    let mut child = loop {
        match spawn() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 50 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => break other.expect("start the replay"),
        }
    };
    let mut pipe = child.stdin.take().expect("stdin");
    // A refused request may exit before reading: a broken pipe is fine.
    let _ = pipe.write_all(stdin);
    drop(pipe);
    child.wait_with_output().expect("wait")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn the_discovery_helper_gets_the_recorded_dump_between_markers() {
    let out = replay(&["-"], HELPER.as_bytes());
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let begin = "\n=====CONDA-MCP-DUMP-BEGIN=====\n";
    let end = "\n=====CONDA-MCP-DUMP-END=====";
    let start = stdout.find(begin).expect("begin marker") + begin.len();
    let len = stdout[start..].find(end).expect("end marker");
    let got: Value = serde_json::from_str(&stdout[start..start + len]).expect("a JSON dump");
    let want: Value = serde_json::from_str(DUMP).expect("the recorded dump");
    assert_eq!(got, want);
    assert_eq!(got["format"], "conda-parser-dump/1");
}

#[test]
fn another_program_on_stdin_is_refused() {
    let out = replay(&["-"], b"import conda\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = text(&out.stderr);
    assert!(
        err.contains("refused") && err.contains("helper.py"),
        "{err}"
    );
}

#[test]
fn recorded_calls_are_replayed_byte_for_byte() {
    let out = replay(&["-m", "conda", "info", "--json"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), INFO);
    let out = replay(&["-m", "conda", "list", "-n", "no-such-env"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains("EnvironmentLocationNotFound"));
}

/// `python <conda> ARGS` (a fresh conda without the guard on Unix, as
/// `conda-mcp check` runs `conda info --json`) is answered when `<conda>`
/// is the launcher beside the replay, and refused for a `conda` elsewhere.
#[cfg(unix)]
#[test]
fn the_launcher_beside_the_replay_runs_recorded_calls() {
    let dir = std::env::temp_dir().join(format!("conda-replay-launcher-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let elsewhere = dir.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("scratch dir");
    let me = dir.join("python");
    std::fs::copy(env!("CARGO_BIN_EXE_conda-replay"), &me).expect("copy the replay");
    for d in [&dir, &elsewhere] {
        std::fs::write(d.join("conda"), format!("#!{}\n", me.display())).expect("launcher");
    }
    let launcher = dir.join("conda");
    let launcher = launcher.to_str().expect("a UTF-8 path");
    let out = replay_at(&me, &[launcher, "info", "--json"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), INFO);
    let out = replay_at(&me, &[launcher, "install", "numpy"], b"");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let other = elsewhere.join("conda");
    let out = replay_at(
        &me,
        &[other.to_str().expect("UTF-8"), "info", "--json"],
        b"",
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
    assert!(out.stdout.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn checks_interpreter_probe_gets_the_recorded_versions() {
    let out = replay(&["-c", PROBE], b"");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let info: Value = serde_json::from_str(INFO).expect("the recorded info");
    let conda = info["conda_version"].as_str().expect("conda_version");
    // What Python's own `sys.version.split()[0]` is for the recorded
    // `python_version` (3.11.7.final.0).
    assert_eq!(text(&out.stdout), format!("3.11.7 {conda}\n"));
}

#[test]
fn an_unrecorded_call_or_command_line_is_refused() {
    for args in [
        &["-m", "conda", "install", "numpy"][..],
        &["-m", "conda", "info"],
        &["info", "--json"],
        &["-c", "print(1)"],
        &[],
    ] {
        let out = replay(args, b"");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}");
        let err = text(&out.stderr);
        assert!(
            err.starts_with("conda-replay: refused") && err.contains("not a conda"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn the_spare_waits_for_its_job_header_and_answers_the_job() {
    let job = br#"{"argv": ["info", "--json"], "cwd": "."}"#;
    let mut stdin = format!("{}\n", job.len()).into_bytes();
    stdin.extend_from_slice(job);
    let out = replay(&["-c", SPARE], &stdin);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), INFO);
    // Retired before a job: nothing written, status 0 (as spare.py).
    let out = replay(&["-c", SPARE], b"");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
    // A job the recording does not have is refused like a fresh call.
    let job = br#"{"argv": ["install", "x"], "cwd": "."}"#;
    let mut stdin = format!("{}\n", job.len()).into_bytes();
    stdin.extend_from_slice(job);
    let out = replay(&["-c", SPARE], &stdin);
    assert_eq!(out.status.code(), Some(2));
}

/// The guard's side of its report channel (a fresh conda's `-c <guard>
/// CHECKS -m ARGS`, and a spare job with `checks`): the report goes to the
/// checks' `report_pipe` (a named pipe on Windows; an existing file here),
/// then the call is answered; what `guard-report.json` beside the replay
/// says conda decided is reported instead, and its refusal ends the call
/// with the guard's status before anything is answered.
#[test]
fn the_guard_reports_then_answers_or_stops() {
    let dir = std::env::temp_dir().join(format!("conda-replay-guard-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    // The replay beside its own guard-report.json: a copy in the scratch
    // folder (the built one is shared by every test).
    let me = dir.join(format!("python{}", std::env::consts::EXE_SUFFIX));
    std::fs::copy(env!("CARGO_BIN_EXE_conda-replay"), &me).expect("copy the replay");
    let report = dir.join("report");
    let checks = json!({"report_pipe": report}).to_string();
    let run = |args: &[&str], stdin: &[u8]| replay_at(&me, args, stdin);
    let job = json!({"argv": ["info", "--json"], "cwd": ".", "checks": {"report_pipe": report}})
        .to_string();
    let mut spare_stdin = format!("{}\n", job.len()).into_bytes();
    spare_stdin.extend_from_slice(job.as_bytes());
    let fresh: &[&str] = &["-c", GUARD, &checks, "-m", "info", "--json"];
    for (what, args, stdin) in [
        ("fresh", fresh, &b""[..]),
        ("spare", &["-c", SPARE][..], &spare_stdin[..]),
    ] {
        // The pipe exists before conda starts (the worker made it).
        std::fs::write(&report, b"").expect("the report file");
        let out = run(args, stdin);
        assert_eq!(out.status.code(), Some(0), "{what}: {}", text(&out.stderr));
        assert_eq!(text(&out.stdout), INFO, "{what}");
        let written: Value =
            serde_json::from_slice(&std::fs::read(&report).expect("a report")).expect("json");
        assert_eq!(written["dry_run"], json!(false), "{what}: {written}");
        assert!(written["refusal"].is_null(), "{what}: {written}");
    }
    let decided = json!({"dry_run": false,
        "refusal": {"dry_run_not_honoured": {"setting": {"key": "dry_run", "source": null, "final": false}}}});
    std::fs::write(dir.join("guard-report.json"), decided.to_string()).expect("write");
    for (what, args, stdin) in [
        ("fresh", fresh, &b""[..]),
        ("spare", &["-c", SPARE][..], &spare_stdin[..]),
    ] {
        // The pipe exists before conda starts (the worker made it).
        std::fs::write(&report, b"").expect("the report file");
        let out = run(args, stdin);
        assert_eq!(out.status.code(), Some(i32::from(GUARD_REFUSED)), "{what}");
        assert!(
            out.stdout.is_empty(),
            "{what}: conda answered after a refusal"
        );
        assert!(
            text(&out.stderr).contains("stopped before it acted (dry_run_not_honoured)"),
            "{what}: {}",
            text(&out.stderr)
        );
        let written: Value =
            serde_json::from_slice(&std::fs::read(&report).expect("a report")).expect("json");
        assert_eq!(written, decided, "{what}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
