//! The replay answers exactly what it recorded and refuses the rest (run
//! on every platform; under wine for Windows by tests/tools/cross/setup.sh).

use std::io::Write;
use std::process::{Command, Output, Stdio};

use conda_mcp_replay::{DUMP, INFO};
use serde_json::Value;

const HELPER: &str = include_str!("../../../server/src/discovery/helper.py");
const SPARE: &str = include_str!("../../../worker/src/spare.py");

fn replay(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_conda-replay"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the replay");
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
