//! `conda-replay`: a stand-in conda for Windows that needs no Python (and
//! for Linux arm64 under qemu, where no arm64 Python runs either: the
//! fake installation's Unix layout, `conda_mcp_replay::install_unix`).
//!
//! No Windows Python can be installed on the project's Linux machine, and
//! wine cannot run the Python stand-in (tests/fixtures/standin/), so the
//! server's Windows session under wine meets this program instead. It is
//! installed as `python.exe` of a fake installation ([`conda_mcp_replay`]'s
//! `install`), which is where the worker runs conda on Windows
//! (`python.exe -m conda ARGS`, shared/src/conda_cmd.rs), and it answers
//! three requests, each recognised exactly:
//!
//! * `python.exe -` with conda-mcp's discovery helper on stdin
//!   (server/src/discovery/helper.py, byte for byte): the recorded dump
//!   tests/fixtures/dumps/standin.json between the helper's marker lines;
//! * `python.exe -m conda ARGS` for the calls in [`RECORDED`]: conda's
//!   recorded output (tests/fixtures/recorded/README.md says how it was
//!   recorded) and exit status; on Unix also `python <conda> ARGS`, where
//!   `<conda>` is the installation's launcher beside this program (a fresh
//!   conda without the guard: `conda-mcp check`'s `conda info --json`);
//! * `python.exe -c <the worker's spare.py>` (worker/src/spare.rs): the
//!   spare conda's protocol: nothing is written until a job header arrives
//!   on stdin (its length in decimal, a newline, `{"argv": [...], "cwd":
//!   ...}`); the job's argv is then answered as `-m conda ARGV` would be. A
//!   stdin closed before the header exits 0, as the spare does;
//! * `python.exe -c <check's interpreter probe>`
//!   (server/src/check/interpreter_probe.py): the recorded Python and conda
//!   versions of [`conda_mcp_replay::INFO`], as the probe prints them;
//! * `python.exe -c <the worker's guard> CHECKS -m ARGS` (a fresh conda
//!   under the guard, worker/src/guard/; on Unix `python -c <guard> CHECKS
//!   CONDA ARGS`), and a spare job with `checks`:
//!   the guard's side of its report channel. It writes a report to the
//!   named pipe the checks name (`report_pipe`; on Unix descriptor 3), as guard.py does before
//!   conda's command acts: the report in `guard-report.json` beside this
//!   program when the installation has one (a test's stand-in for what conda
//!   decided), else one that refuses nothing. A report with a refusal ends
//!   the process with the guard's status ([`GUARD_REFUSED`]) and a line on
//!   stderr, as the guard ends conda; otherwise ARGS are answered as above.
//!
//! Anything else is refused: a message on stderr naming what is recorded,
//! and exit status [`REFUSED`]. It replays; it parses nothing and is not a
//! conda.

use std::io::{Read, Write};
use std::process::ExitCode;

/// conda-mcp's discovery helper, the one program accepted on stdin.
const HELPER: &str = include_str!("../../../server/src/discovery/helper.py");
use conda_mcp_replay::{GUARD, GUARD_REFUSED, INFO, PROBE, SPARE};
/// The dump the helper printed for the Python stand-in.
const DUMP: &str = include_str!("../../fixtures/dumps/standin.json");
/// The helper's marker lines (server/src/discovery/helper.rs).
const BEGIN_MARKER: &str = "=====CONDA-MCP-DUMP-BEGIN=====";
const END_MARKER: &str = "=====CONDA-MCP-DUMP-END=====";

/// Exit status of a refused request (argparse's usage error status).
const REFUSED: u8 = 2;

/// One recorded call: conda's argv (without `conda`), its stdout, its
/// stderr, its exit status.
struct Recorded {
    argv: &'static [&'static str],
    stdout: &'static str,
    stderr: &'static str,
    exit: u8,
}

/// The recorded calls whose argv holds no path of the recording machine
/// (tests/fixtures/recorded/README.md).
const RECORDED: &[Recorded] = &[
    Recorded {
        argv: &["info", "--json"],
        stdout: include_str!("../../fixtures/recorded/info.json"),
        stderr: "",
        exit: 0,
    },
    Recorded {
        argv: &["config", "--show", "--json"],
        stdout: include_str!("../../fixtures/recorded/config-show.json"),
        stderr: "",
        exit: 0,
    },
    Recorded {
        argv: &["list", "-n", "no-such-env", "--json"],
        stdout: include_str!("../../fixtures/recorded/list-noenv.json"),
        stderr: "",
        exit: 1,
    },
    Recorded {
        argv: &["list", "-n", "no-such-env"],
        stdout: "",
        stderr: include_str!("../../fixtures/recorded/list-noenv.stderr"),
        exit: 1,
    },
];

fn main() -> ExitCode {
    let args: Vec<String> = match std::env::args_os()
        .skip(1)
        .map(|a| a.into_string())
        .collect::<Result<_, _>>()
    {
        Ok(a) => a,
        Err(_) => return refuse("an argument is not valid Unicode"),
    };
    match args.first().map(String::as_str) {
        Some("-") if args.len() == 1 => helper(),
        Some("-m") if args.get(1).map(String::as_str) == Some("conda") => conda(&args[2..]),
        Some("-c") if args.len() == 2 && args[1] == SPARE => spare(),
        Some("-c") if args.len() == 2 && args[1] == PROBE => probe(),
        // Windows: `-c <guard> CHECKS -m ARGS`; Unix: `-c <guard> CHECKS
        // <conda> ARGS` (the conda script the worker read this
        // interpreter from, worker/src/guard/mod.rs `fresh_command`).
        Some("-c") if args.len() >= 4 && args[1] == GUARD && (cfg!(unix) || args[3] == "-m") => {
            match serde_json::from_str(&args[2]) {
                Ok(checks) => guarded(&checks, &args[4..]),
                Err(_) => refuse("guard checks that are not JSON"),
            }
        }
        Some("-c") => refuse(
            "`-c` with a program other than the worker's spare.py or guard, or check's probe",
        ),
        // Unix: `python <conda> ARGS`, a fresh conda without the guard
        // (`conda-mcp check`'s `conda info --json`), where <conda> is the
        // installation's launcher beside this program (install_unix).
        Some(script) if cfg!(unix) && is_launcher(script) => conda(&args[1..]),
        _ => refuse(
            "a command line other than `-`, `-m conda ARGS`, `<conda> ARGS` (Unix), `-c <spare.py>`, `-c <probe>` or `-c <guard> CHECKS -m ARGS`",
        ),
    }
}

/// Whether `path` is the fake installation's conda launcher: a file named
/// `conda` in this program's own folder (conda_mcp_replay::install_unix
/// puts `bin/conda` beside `bin/python`).
fn is_launcher(path: &str) -> bool {
    let path = std::path::Path::new(path);
    let here = std::env::current_exe()
        .ok()
        .and_then(|me| me.parent().map(std::path::Path::to_path_buf));
    path.file_name() == Some(std::ffi::OsStr::new("conda"))
        && path.is_file()
        && here.is_some_and(|h| path.parent() == Some(h.as_path()))
}

/// `python.exe -`: the dump, when stdin is the discovery helper.
fn helper() -> ExitCode {
    let mut source = Vec::new();
    if std::io::stdin().read_to_end(&mut source).is_err() || source != HELPER.as_bytes() {
        return refuse(
            "a program on stdin other than conda-mcp's discovery helper (server/src/discovery/helper.py)",
        );
    }
    let dump = DUMP.trim_end();
    write_out(
        format!("\n{BEGIN_MARKER}\n{dump}\n{END_MARKER}\n").as_bytes(),
        b"",
    );
    ExitCode::SUCCESS
}

/// `python.exe -c <probe>`: `PYTHON CONDA` versions as the probe prints
/// them (`sys.version.split()[0]`: `3.11.7` of the recorded
/// `3.11.7.final.0`).
fn probe() -> ExitCode {
    let info: serde_json::Value = match serde_json::from_str(INFO) {
        Ok(v) => v,
        Err(_) => return refuse("the recorded info is not JSON"),
    };
    let (Some(python), Some(conda)) = (
        info["python_version"].as_str(),
        info["conda_version"].as_str(),
    ) else {
        return refuse("the recorded info lacks python_version or conda_version");
    };
    let python: Vec<&str> = python.split('.').take(3).collect();
    write_out(format!("{} {conda}\n", python.join(".")).as_bytes(), b"");
    ExitCode::SUCCESS
}

/// `python.exe -m conda ARGS`: the recorded answer for ARGS.
fn conda(argv: &[String]) -> ExitCode {
    match RECORDED.iter().find(|r| r.argv == argv) {
        Some(r) => {
            write_out(r.stdout.as_bytes(), r.stderr.as_bytes());
            ExitCode::from(r.exit)
        }
        None => refuse(&format!(
            "`conda {}`, which is not recorded",
            argv.join(" ")
        )),
    }
}

/// `python.exe -c <spare.py>`: wait for the job header, then answer the
/// job's argv. Reads byte by byte up to the header's end, so that what
/// follows stays the job's own stdin (as spare.py does).
fn spare() -> ExitCode {
    let mut stdin = std::io::stdin().lock();
    let mut digits = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match stdin.read(&mut byte) {
            // Retired by the worker before any job: nothing was run.
            Ok(0) | Err(_) => return ExitCode::SUCCESS,
            Ok(_) if byte[0] == b'\n' => break,
            Ok(_) if digits.len() < 10 && byte[0].is_ascii_digit() => digits.push(byte[0]),
            Ok(_) => return refuse("a spare job header that is not a decimal length"),
        }
    }
    let len: usize = match std::str::from_utf8(&digits)
        .ok()
        .and_then(|d| d.parse().ok())
    {
        Some(n) => n,
        None => return refuse("an empty spare job header"),
    };
    let mut body = vec![0u8; len];
    if stdin.read_exact(&mut body).is_err() {
        return ExitCode::SUCCESS;
    }
    let job: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(_) => return refuse("a spare job that is not JSON"),
    };
    let argv: Option<Vec<String>> = job["argv"]
        .as_array()
        .and_then(|a| a.iter().map(|v| v.as_str().map(str::to_owned)).collect());
    match (argv, job.get("checks")) {
        (Some(argv), Some(checks)) => guarded(checks, &argv),
        (Some(argv), None) => conda(&argv),
        (None, _) => refuse("a spare job without an argv of strings"),
    }
}

/// A conda under the guard: the report to the checks' `report_pipe`, then
/// the refusal or the recorded answer (module docs).
fn guarded(checks: &serde_json::Value, argv: &[String]) -> ExitCode {
    // The pipe the checks name (`report_pipe`: Windows' named pipe);
    // without one, on Unix, descriptor 3, which the worker maps to its
    // pipe's end (worker/src/guard/mod.rs `REPORT_FD`), opened by its
    // /dev/fd name (no unsafe code).
    let pipe = match checks["report_pipe"].as_str() {
        Some(p) => p,
        None if cfg!(unix) => "/dev/fd/3",
        None => return refuse("guard checks without a report_pipe"),
    };
    let decided = std::env::current_exe()
        .ok()
        .and_then(|me| std::fs::read(me.with_file_name("guard-report.json")).ok());
    let report: serde_json::Value = match decided {
        Some(bytes) => match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(_) => return refuse("a guard-report.json that is not JSON"),
        },
        None => serde_json::json!({
            "dry_run": argv.iter().any(|a| a == "--dry-run" || a == "-d"),
        }),
    };
    let written = std::fs::OpenOptions::new()
        .write(true)
        .open(pipe)
        .and_then(|mut f| f.write_all(report.to_string().as_bytes()));
    if written.is_err() {
        // guard.py ignores a failed write too; the worker then sees no
        // report.
        eprintln!("conda-replay: the guard's report pipe {pipe} could not be written");
    }
    if let Some(refusal) = report["refusal"].as_object() {
        let kind = refusal.keys().next().cloned().unwrap_or_default();
        eprintln!("conda-mcp: conda was stopped before it acted ({kind})");
        return ExitCode::from(GUARD_REFUSED);
    }
    conda(argv)
}

fn write_out(stdout: &[u8], stderr: &[u8]) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(stdout);
    let _ = out.flush();
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(stderr);
    let _ = err.flush();
}

fn refuse(what: &str) -> ExitCode {
    let recorded: Vec<String> = RECORDED
        .iter()
        .map(|r| format!("`conda {}`", r.argv.join(" ")))
        .collect();
    eprintln!(
        "conda-replay: refused {what}. This is a replay of conda-mcp's recorded answers (tests/replay), not a conda: it answers conda-mcp's discovery helper on stdin, the worker's spare conda, and {}.",
        recorded.join(", ")
    );
    ExitCode::from(REFUSED)
}
