//! The result's shape: the [`Outcome`] of a call (invalid arguments,
//! refused, not run, ran) and the tool output ([`CallOutput`]) an execution
//! becomes: `parsed_json` and `parsed_json_error` under the result mode
//! ([`document`]), the typed error ([`error`]; conda's exceptions mapped by
//! a data table, [`conda_error`]), one copy of the output in lean mode,
//! and the result budget ([`budget`]).

pub mod budget;
pub mod conda_error;
pub mod document;
pub mod error;
pub mod outcome;
pub mod output;

pub use outcome::Outcome;

use conda_mcp_shared::ExecutionResult;

use budget::Cut;
use document::ResultMode;
use error::{ErrorCode, ToolError};
use output::CallOutput;

/// How results are shaped, fixed at startup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResultSettings {
    /// `--result-mode`.
    pub mode: ResultMode,
    /// `--max-result-bytes`: most bytes of the serialized structured
    /// result; `None` = unbounded.
    pub max_result_bytes: Option<usize>,
    /// Mask credentials (off with `--no-mask-credentials`): the worker's
    /// streams on arrival (`run::received`), and `parsed_json` here.
    pub mask_credentials: bool,
}

impl ResultSettings {
    /// The default budget of lean mode: under the size at which hosts warn
    /// (about 10,000 tokens).
    pub const LEAN_DEFAULT_MAX_RESULT_BYTES: usize = 40_000;

    /// The settings of `mode` with `max_result_bytes` when given, else the
    /// mode's default (lean: [`Self::LEAN_DEFAULT_MAX_RESULT_BYTES`];
    /// default: unbounded), masking credentials.
    pub fn new(mode: ResultMode, max_result_bytes: Option<u64>) -> Self {
        let max = match (mode, max_result_bytes) {
            (_, Some(n)) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            (ResultMode::Lean, None) => Some(Self::LEAN_DEFAULT_MAX_RESULT_BYTES),
            (ResultMode::Default, None) => None,
        };
        ResultSettings {
            mode,
            max_result_bytes: max,
            mask_credentials: true,
        }
    }
}

impl Default for ResultSettings {
    fn default() -> Self {
        Self::new(ResultMode::Default, None)
    }
}

/// What the shaping needs to know of the call.
#[derive(Debug, Clone, Copy)]
pub struct CallFacts<'a> {
    /// The command path (`["conda", "search"]`), for the narrowing hint.
    pub command: &'a [String],
    /// The call's time limit in milliseconds (it counts running time only).
    pub timeout_ms: u64,
    /// How long the call waited before it ran (for the writer lock, in the
    /// queue), in milliseconds.
    pub waited_ms: u64,
    /// The argv that ran (after the conda executable), for the narrowing
    /// hint of a cut result; never echoed.
    pub argv: &'a [String],
    /// The call asked conda for detail (`verbosity`: `-v`, `--verbose`,
    /// `--debug` in its argv): lean mode then keeps Python tracebacks.
    pub verbose: bool,
}

/// Whether a conda argv asks for detail (`-v`, `-vv`, `--verbose`,
/// `--debug`) before any `--`.
pub fn asks_for_detail(argv: &[String]) -> bool {
    argv.iter().take_while(|a| a.as_str() != "--").any(|a| {
        a == "--verbose"
            || a == "--debug"
            || (a.len() > 1
                && a.starts_with('-')
                && !a.starts_with("--")
                && a[1..].chars().all(|c| c == 'v'))
    })
}

/// The tool output of `exec`.
pub fn shape(exec: ExecutionResult, settings: ResultSettings, facts: CallFacts<'_>) -> CallOutput {
    let parsed = document::parse(&exec.stdout, exec.stdout_truncated, settings.mode);
    // conda's --json error or success document is its last one, whatever
    // the mode's rule for parsed_json.
    let last = match (&parsed.document, settings.mode) {
        (Some(d), _) => Some(d.value.clone()),
        (None, ResultMode::Lean) => None,
        (None, ResultMode::Default) => {
            document::parse(&exec.stdout, exec.stdout_truncated, ResultMode::Lean)
                .document
                .map(|d| d.value)
        }
    };
    let error = if exec.timed_out && exec.stopped_by.is_none() {
        // Timed out without a process to stop: it never left the queue.
        Some(ToolError::new(
            ErrorCode::QueueTimeout,
            "the time limit ran out while the call waited for earlier conda calls to finish; nothing ran; retry when they are done",
        ).with("timeout_ms", facts.timeout_ms))
    } else {
        conda_error::of_execution(&exec, last.as_ref(), facts.timeout_ms, facts.waited_ms)
    };
    let mut error = error;
    let mut masked = 0;
    if settings.mask_credentials {
        // conda's error text comes from the streams masked on arrival; a
        // value of its JSON error document is masked here, once parsed.
        if let Some(e) = &mut error {
            masked += conda_mcp_shared::mask::mask_string(&mut e.message);
            for v in e.details.values_mut() {
                masked += conda_mcp_shared::mask::mask_json(v);
            }
        }
    }
    let mut out = CallOutput::new(exec);
    out.error = error;
    out.parsed_json_error = parsed.error;
    if let Some(found) = parsed.document {
        if let Some(rest) = parsed.rest {
            // Lean mode: one copy.
            out.execution.stdout = rest;
            out.stdout_omitted = true;
        }
        let mut value = found.value;
        if settings.mask_credentials {
            // stdout was masked as text on arrival; this catches what only
            // the parsed value shows (JSON escapes inside a URL).
            masked += conda_mcp_shared::mask::mask_json(&mut value);
        }
        out.parsed_json = Some(value);
    }
    if settings.mode == ResultMode::Lean {
        lean_error(&mut out, facts.verbose);
    }
    out.credentials_masked = u32::try_from(masked).unwrap_or(u32::MAX);
    if let Some(max) = settings.max_result_bytes {
        fit(&mut out, max, facts);
    }
    out
}

/// Lean mode's one copy of conda's error: the message of conda's `--json`
/// error document is in `error.message`, so `parsed_json` drops its
/// `error` (the same text after the exception name) and `message` (unless
/// `error.message` had to shorten it); Python tracebacks (`traceback` of
/// the document, the frames of a traceback on stderr) are left out unless
/// the call asked for detail. `error.details.left_out` names what was
/// dropped of `parsed_json`.
fn lean_error(out: &mut CallOutput, verbose: bool) {
    let Some(error) = &mut out.error else {
        return;
    };
    if !verbose {
        let (folded, dropped) = conda_error::fold_tracebacks(&out.execution.stderr);
        if dropped > 0 {
            out.execution.stderr = folded;
        }
    }
    let Some(serde_json::Value::Object(doc)) = &mut out.parsed_json else {
        return;
    };
    if !conda_error::is_error_document(&serde_json::Value::Object(doc.clone())) {
        return;
    }
    let mut left_out = Vec::new();
    let mut drop = |key: &str, doc: &mut serde_json::Map<String, serde_json::Value>| {
        if doc.remove(key).is_some() {
            left_out.push(serde_json::Value::from(key));
        }
    };
    drop("error", doc);
    if !error.message.ends_with('…') {
        drop("message", doc);
    }
    if !verbose {
        drop("traceback", doc);
    }
    if !left_out.is_empty() {
        error
            .details
            .insert("left_out".to_owned(), serde_json::Value::Array(left_out));
    }
}

/// Cuts `out` so that its serialization is at most `max` bytes (see
/// [`budget`]).
fn fit(out: &mut CallOutput, max: usize, facts: CallFacts<'_>) {
    let command = facts.command;
    if budget::json_len(out) <= max {
        return;
    }
    let stdout = std::mem::take(&mut out.execution.stdout);
    let stderr = std::mem::take(&mut out.execution.stderr);
    let doc = out.parsed_json.take();
    let base = budget::json_len(out) + budget::CUT_RECORD_RESERVE;
    let avail = max.saturating_sub(base);
    let need_err = budget::json_len(stderr.as_str());
    let need_out = budget::json_len(stdout.as_str()) + doc.as_ref().map_or(0, budget::json_len);
    let err_share = need_err.min((avail / 4).max(avail.saturating_sub(need_out)));
    let out_share = avail - err_share;
    let mut cut = Cut {
        max_result_bytes: max as u64,
        parsed_json: None,
        stdout: None,
        stderr: None,
        narrow: budget::narrow_hint(command, facts.argv),
    };
    let (text, c) = budget::tail(&stderr, err_share);
    out.execution.stderr = text;
    cut.stderr = c;
    let mut stdout_share = out_share;
    if let Some(doc) = doc {
        // Text around the document (a banner, progress records) gets at
        // most a quarter of the share; the document gets the rest.
        let text_len = budget::json_len(stdout.as_str());
        let text_share = text_len.min(out_share / 4);
        match budget::cut_document(&doc, out_share - text_share, budget::kept_end(command)) {
            Some((value, c)) => {
                let used = budget::json_len(&value);
                out.parsed_json = Some(value);
                cut.parsed_json = c;
                stdout_share = out_share.saturating_sub(used);
            }
            None => {
                let size = budget::json_len(&doc);
                out.parsed_json_error = Some(format!(
                    "the JSON document ({size} bytes) does not fit the result budget of {max} bytes with any of its keys or items; stdout is cut as text instead"
                ));
                if out.stdout_omitted {
                    // Lean mode dropped the document from stdout: cut the
                    // document's text instead.
                    out.stdout_omitted = false;
                    let text = serde_json::to_string(&doc).unwrap_or_default();
                    let (t, c) = budget::head_and_tail(&text, out_share);
                    out.execution.stdout = t;
                    cut.stdout = c;
                    out.cut = Some(cut);
                    return;
                }
            }
        }
    }
    let (text, c) = budget::head_and_tail(&stdout, stdout_share);
    out.execution.stdout = text;
    cut.stdout = c;
    out.cut = Some(cut);
}
