//! The typed error of an execution that failed: from conda's `--json` error
//! document (`exception_name`, `message`, …) or, without `--json`, from the
//! last `SomethingError:` line of stderr, mapped to a code by
//! [`CONDA_ERRORS`], a table kept as data; and from how the process ended
//! (time limit, cancellation, a signal).

use conda_mcp_shared::ExecutionResult;
use serde_json::Value;

use super::error::{ErrorCode, ToolError};

/// One row of the table: conda's exception class name, optionally a piece
/// of its message (for generic classes such as `CondaValueError`), and the
/// code it maps to.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// The class name conda reports (`exception_name`, or the name before
    /// `:` on stderr).
    pub exception: &'static str,
    /// When set, the rule applies only if conda's message contains it.
    pub message_contains: Option<&'static str>,
    /// The code.
    pub code: ErrorCode,
}

const fn rule(exception: &'static str, code: ErrorCode) -> Rule {
    Rule {
        exception,
        message_contains: None,
        code,
    }
}

const fn when(exception: &'static str, contains: &'static str, code: ErrorCode) -> Rule {
    Rule {
        exception,
        message_contains: Some(contains),
        code,
    }
}

/// conda's exception classes (conda 26, its solvers and `conda env`) and
/// their codes; the first matching row wins, anything else is
/// `conda_error`. `details.exception_name` always keeps conda's name.
pub const CONDA_ERRORS: &[Rule] = &[
    rule("PackagesNotFoundError", ErrorCode::PackagesNotFound),
    rule(
        "PackagesNotFoundInChannelsError",
        ErrorCode::PackagesNotFound,
    ),
    rule("PackagesNotFoundInPrefixError", ErrorCode::PackagesNotFound),
    rule("PackageNotInstalledError", ErrorCode::PackagesNotFound),
    rule("ResolvePackageNotFound", ErrorCode::PackagesNotFound),
    rule("SpecNotFound", ErrorCode::PackagesNotFound),
    rule("SpecNotFoundInPackageCache", ErrorCode::PackagesNotFound),
    rule("UnsatisfiableError", ErrorCode::Unsatisfiable),
    rule("RattlerUnsatisfiableError", ErrorCode::Unsatisfiable),
    rule("LibMambaUnsatisfiableError", ErrorCode::Unsatisfiable),
    rule("SpecsConfigurationConflictError", ErrorCode::Unsatisfiable),
    rule(
        "EnvironmentLocationNotFound",
        ErrorCode::EnvironmentNotFound,
    ),
    rule("EnvironmentNameNotFound", ErrorCode::EnvironmentNotFound),
    rule(
        "DirectoryNotACondaEnvironmentError",
        ErrorCode::EnvironmentNotFound,
    ),
    rule("NoBaseEnvironmentError", ErrorCode::EnvironmentNotFound),
    when(
        "CondaValueError",
        "existing conda environment",
        ErrorCode::EnvironmentExists,
    ),
    when(
        "CondaValueError",
        "prefix already exists",
        ErrorCode::EnvironmentExists,
    ),
    when(
        "CondaEnvException",
        "already exists",
        ErrorCode::EnvironmentExists,
    ),
    rule("InvalidSpec", ErrorCode::InvalidSpec),
    rule("InvalidMatchSpec", ErrorCode::InvalidSpec),
    rule("InvalidVersionSpec", ErrorCode::InvalidSpec),
    when(
        "CondaValueError",
        "invalid package specification",
        ErrorCode::InvalidSpec,
    ),
    rule("CondaHTTPError", ErrorCode::Network),
    rule("ProxyError", ErrorCode::Network),
    rule("CondaSSLError", ErrorCode::Network),
    rule("OfflineError", ErrorCode::Network),
    rule("UnavailableInvalidChannel", ErrorCode::Network),
    rule("LockError", ErrorCode::Lock),
    rule("NotWritableError", ErrorCode::Permission),
    rule("EnvironmentNotWritableError", ErrorCode::Permission),
    rule("NoWritableEnvsDirError", ErrorCode::Permission),
    rule("NoWritablePkgsDirError", ErrorCode::Permission),
    rule("EnvironmentIsFrozenError", ErrorCode::Permission),
    rule("PermissionError", ErrorCode::Permission),
    rule("CondaKeyError", ErrorCode::Config),
    rule("ConfigurationLoadError", ErrorCode::Config),
    rule("ConfigurationError", ErrorCode::Config),
    rule("CustomValidationError", ErrorCode::Config),
    rule("MultiValidationError", ErrorCode::Config),
    rule("ValidationError", ErrorCode::Config),
    rule("InvalidTypeError", ErrorCode::Config),
    rule("NoChannelsConfiguredError", ErrorCode::Config),
    rule("LoadError", ErrorCode::Config),
];

/// Which retryability a conda code has: network failures of a channel that
/// does not exist or that conda was told not to reach are not retried.
fn retryable(code: ErrorCode, exception: &str) -> bool {
    code.retryable() && !matches!(exception, "OfflineError" | "UnavailableInvalidChannel")
}

/// The code of conda's exception `name` with `message`.
pub fn code_of(name: &str, message: &str) -> ErrorCode {
    CONDA_ERRORS
        .iter()
        .find(|r| r.exception == name && r.message_contains.is_none_or(|m| message.contains(m)))
        .map_or(ErrorCode::CondaError, |r| r.code)
}

/// Most characters of conda's message kept in `error.message`.
const MESSAGE_CHARS: usize = 600;

/// Whitespace runs collapsed to one space, at most [`MESSAGE_CHARS`].
fn one_line(text: &str) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() <= MESSAGE_CHARS {
        return joined;
    }
    let mut cut: String = joined.chars().take(MESSAGE_CHARS).collect();
    cut.push('…');
    cut
}

/// conda's `--json` error document: an object with `exception_name`.
fn from_document(doc: &Value) -> Option<(String, String)> {
    let m = doc.as_object()?;
    let name = m.get("exception_name")?.as_str()?.to_owned();
    let message = m
        .get("message")
        .or_else(|| m.get("error"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned();
    Some((name, message))
}

/// The class name a stderr line starts with (`PackagesNotFoundError: …`,
/// `conda.exceptions.LockError: …`), when it looks like an exception.
fn exception_prefix(line: &str) -> Option<(&str, &str)> {
    let (head, rest) = line.split_once(':')?;
    let name = head.rsplit('.').next()?;
    let first = name.chars().next()?;
    if !first.is_ascii_uppercase()
        || head.contains(char::is_whitespace)
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return None;
    }
    let known = CONDA_ERRORS.iter().any(|r| r.exception == name);
    let looks = ["Error", "Exception", "NotFound"]
        .iter()
        .any(|s| name.ends_with(s));
    (known || looks).then_some((name, rest))
}

/// The last exception line of stderr and what follows it. A line naming an
/// exception of [`CONDA_ERRORS`] wins over a later one that does not (conda
/// sometimes fails while reporting its own error, and the traceback of that
/// failure comes last).
fn from_stderr(stderr: &str) -> Option<(String, String)> {
    let lines: Vec<&str> = stderr.lines().collect();
    let found = |known_only: bool| {
        lines.iter().enumerate().rev().find_map(|(i, l)| {
            exception_prefix(l.trim_start())
                .filter(|(name, _)| {
                    !known_only || CONDA_ERRORS.iter().any(|r| r.exception == *name)
                })
                .map(|p| (i, p))
        })
    };
    let (i, (name, rest)) = found(true).or_else(|| found(false))?;
    let mut message = rest.trim().to_owned();
    for l in &lines[i + 1..] {
        if l.starts_with("Traceback") || l.starts_with("During handling") {
            break;
        }
        message.push('\n');
        message.push_str(l);
    }
    Some((name.to_owned(), message))
}

/// The first line of a Python traceback (CPython's `traceback` module).
const TRACEBACK_START: &str = "Traceback (most recent call last):";

/// `text` with each Python traceback's frames replaced by one line saying
/// how many lines were left out; the exception line that ends a traceback
/// (not indented, as CPython prints it) and everything outside tracebacks
/// are kept. With the number of lines left out (0: `text` unchanged).
pub fn fold_tracebacks(text: &str) -> (String, usize) {
    let mut out = String::with_capacity(text.len().min(4096));
    let mut dropped = 0;
    let mut lines = text.split_inclusive('\n').peekable();
    while let Some(line) = lines.next() {
        if line.trim_end() != TRACEBACK_START {
            out.push_str(line);
            continue;
        }
        let mut n = 1;
        while let Some(next) = lines.peek() {
            if next.starts_with(char::is_whitespace) && !next.trim().is_empty() {
                n += 1;
                lines.next();
            } else {
                break;
            }
        }
        dropped += n;
        out.push_str(&format!(
            "[Python traceback of {n} lines left out; call again with verbosity to see it]\n"
        ));
    }
    if dropped == 0 {
        return (text.to_owned(), 0);
    }
    (out, dropped)
}

/// Whether `doc` is conda's `--json` error document (it names its
/// exception).
pub fn is_error_document(doc: &Value) -> bool {
    doc.get("exception_name").is_some_and(Value::is_string)
}

fn signal_name(n: i32) -> String {
    #[cfg(unix)]
    return nix::sys::signal::Signal::try_from(n)
        .map_or_else(|_| format!("signal {n}"), |s| s.as_str().to_owned());
    #[cfg(not(unix))]
    format!("signal {n}")
}

/// Whether `doc` is conda's success document (`"success": true`).
fn is_success_document(doc: &Value) -> bool {
    doc.get("success") == Some(&Value::Bool(true))
}

/// The typed error of an execution, `None` when it succeeded. `document`
/// is the last complete JSON document of stdout (whatever the result mode),
/// where conda puts its `--json` error or success document; `timeout_ms`
/// is the call's time limit (running time only) and `waited_ms` how long
/// it waited before it ran (both in the message of a time limit, which
/// says how long the call ran).
pub fn of_execution(
    r: &ExecutionResult,
    document: Option<&Value>,
    timeout_ms: u64,
    waited_ms: u64,
) -> Option<ToolError> {
    let stop = |e: ToolError| match r.stopped_by {
        Some(s) => e.with("signal", s.name()),
        None => e,
    };
    if r.timed_out {
        return Some(stop(
            ToolError::new(
                ErrorCode::Timeout,
                format!(
                    "the call ran for {:.1} s and reached its time limit of {:.1} s (it waited {:.1} s for its turn before that, which the limit does not count) and was stopped; retry with a longer limit, or narrow the call",
                    r.duration_ms as f64 / 1000.0,
                    timeout_ms as f64 / 1000.0,
                    waited_ms as f64 / 1000.0
                ),
            )
            .with("timeout_ms", timeout_ms)
            .with("waited_ms", waited_ms),
        ));
    }
    if r.cancelled {
        return Some(stop(ToolError::new(
            ErrorCode::Cancelled,
            "the call was cancelled and its processes were stopped",
        )));
    }
    let code = r.exit_code?;
    if code == 0 {
        return None;
    }
    if code < 0 {
        let signal = signal_name(-code);
        if document.is_some_and(is_success_document) {
            return Some(
                ToolError::new(
                    ErrorCode::CrashedAfterSuccess,
                    format!(
                        "conda printed its success document and then died of {signal} at exit; \
                         the change was very probably applied: check before repeating it \
                         (conda list -n NAME, or conda env list)"
                    ),
                )
                .with("signal", signal),
            );
        }
        return Some(
            ToolError::new(
                ErrorCode::KilledBySignal,
                format!("conda was killed by {signal}"),
            )
            .with("signal", signal),
        );
    }
    let found = document
        .and_then(from_document)
        .or_else(|| from_stderr(&r.stderr));
    let mut e = match found {
        Some((name, message)) => {
            let code = code_of(&name, &message);
            let text = one_line(&message);
            let mut e = ToolError::new(
                code,
                if text.is_empty() {
                    name.clone()
                } else {
                    format!("{name}: {text}")
                },
            );
            e.retryable = retryable(code, &name);
            e.with("exception_name", name)
        }
        None => {
            let last = r
                .stderr
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .map(one_line)
                .unwrap_or_default();
            ToolError::new(
                ErrorCode::CondaError,
                if last.is_empty() {
                    format!("conda failed with exit code {code}")
                } else {
                    last
                },
            )
        }
    };
    e = e.with("exit_code", code);
    Some(e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn failed(stderr: &str) -> ExecutionResult {
        ExecutionResult {
            exit_code: Some(1),
            stderr: stderr.to_owned(),
            duration_ms: 5,
            ..ExecutionResult::nothing_ran()
        }
    }

    #[test]
    fn the_table_maps_names_and_messages() {
        assert_eq!(
            code_of("PackagesNotFoundError", ""),
            ErrorCode::PackagesNotFound
        );
        assert_eq!(
            code_of("EnvironmentLocationNotFound", ""),
            ErrorCode::EnvironmentNotFound
        );
        assert_eq!(
            code_of(
                "CondaValueError",
                "Cannot `create --dry-run` with an existing conda environment"
            ),
            ErrorCode::EnvironmentExists
        );
        assert_eq!(
            code_of("CondaValueError", "something else"),
            ErrorCode::CondaError
        );
        assert_eq!(code_of("SomethingNew", ""), ErrorCode::CondaError);
        for r in CONDA_ERRORS {
            assert!(
                r.exception.chars().all(|c| c.is_ascii_alphanumeric()),
                "{}",
                r.exception
            );
        }
    }

    #[test]
    fn json_document_wins_over_stderr() {
        let doc = json!({"exception_name": "LockError", "message": "locked\n  by pid 5", "error": "LockError: locked"});
        let e = of_execution(&failed("CondaError: other"), Some(&doc), 1000, 0).expect("error");
        assert_eq!(e.code, ErrorCode::Lock);
        assert!(e.retryable);
        assert_eq!(e.message, "LockError: locked by pid 5");
        assert_eq!(e.details["exception_name"], json!("LockError"));
        assert_eq!(e.details["exit_code"], json!(1));
    }

    #[test]
    fn the_last_exception_line_of_stderr() {
        let stderr = "Channels:\n - x\n\nPackagesNotFoundError: The following packages are not available from current channels:\n\n  - nope\n\n";
        let e = of_execution(&failed(stderr), None, 1000, 0).expect("error");
        assert_eq!(e.code, ErrorCode::PackagesNotFound);
        assert!(!e.retryable);
        assert_eq!(
            e.message,
            "PackagesNotFoundError: The following packages are not available from current channels: - nope"
        );
        let e =
            of_execution(&failed("usage: conda\nconda: error: bad\n"), None, 1, 0).expect("error");
        assert_eq!(e.code, ErrorCode::CondaError);
        assert_eq!(e.message, "conda: error: bad");
        assert!(!e.details.contains_key("exception_name"));
    }

    #[test]
    fn tracebacks_fold_to_one_line_and_keep_the_exception() {
        let stderr = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/fixtures/recorded/search-badspec-json.stderr"
        ))
        .expect("recorded");
        let (folded, dropped) = fold_tracebacks(&stderr);
        assert!(dropped > 20, "{dropped}");
        assert!(folded.len() * 4 < stderr.len(), "{folded}");
        assert!(!folded.contains("File \""), "{folded}");
        assert!(
            folded.contains("conda.exceptions.InvalidMatchSpec: Invalid spec")
                && folded.contains("TypeError: Object of type InvalidMatchSpec"),
            "{folded}"
        );
        assert_eq!(folded.matches("traceback of").count(), 3, "{folded}");
        // What a traceback does not interrupt is kept as it was.
        let plain = "Channels:\n - x\nPackagesNotFoundError: y\n";
        assert_eq!(fold_tracebacks(plain), (plain.to_owned(), 0));
    }

    #[test]
    fn signals_and_success_documents() {
        let mut r = failed("");
        r.exit_code = Some(-6);
        let e = of_execution(&r, Some(&json!({"success": true})), 1, 0).expect("error");
        assert_eq!(e.code, ErrorCode::CrashedAfterSuccess);
        assert!(!e.retryable);
        assert!(e.message.contains("conda list -n NAME"), "{}", e.message);
        let e = of_execution(&r, None, 1, 0).expect("error");
        assert_eq!(e.code, ErrorCode::KilledBySignal);
        assert_eq!(e.details["signal"], json!("SIGABRT"));
        r.exit_code = Some(0);
        assert_eq!(of_execution(&r, None, 1, 0), None);
    }

    #[test]
    fn a_time_limit_says_how_long_the_call_ran_and_waited() {
        let mut r = failed("");
        r.exit_code = None;
        r.timed_out = true;
        r.duration_ms = 20_000;
        let e = of_execution(&r, None, 20_000, 13_600).expect("error");
        assert_eq!(e.code, ErrorCode::Timeout);
        assert!(
            e.message.starts_with(
                "the call ran for 20.0 s and reached its time limit of 20.0 s (it waited 13.6 s"
            ),
            "{}",
            e.message
        );
        assert_eq!(e.details["waited_ms"], json!(13_600));
        assert_eq!(e.details["timeout_ms"], json!(20_000));
    }
}
