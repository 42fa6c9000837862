//! Discovery: from "which conda" to the catalog every tool is generated from
//! (docs/operating.md "Discovery").
//!
//! The MCP server calls [`discover`] once at startup:
//!
//! ```text
//! pub async fn discover(opts: &DiscoveryOptions) -> Result<Discovery, DiscoveryError>
//! ```
//!
//! 1. [`target`]: `--conda-exe`, else `CONDA_EXE`, else `conda` on `PATH`,
//!    canonical ([`resolve_target`]); on Windows also the user's Miniforge
//!    and, last, an installation the registry names ([`registry`]).
//! 2. [`cache`]: unless `--no-cache`, a cache entry for that target whose
//!    [`Stamp`] still matches is used as is: no Python, no worker, no
//!    process at all ([`Discovery::from_cache`]).
//! 3. [`interpreter`]: the target's Python from `--python`, the shebang or
//!    `CONDA_PYTHON_EXE`; failing those, `conda info --json` through a worker
//!    ([`Program::Conda`]) and its `sys.executable`.
//! 4. [`helper`]: the embedded `helper.py` run by that Python through a
//!    worker ([`Program::Python`]) under the discovery timeout; its output is
//!    checked and parsed into a [`Dump`].
//! 5. The stamp is taken over the folders and the configuration places
//!    (conda's `.condarc` search path) the helper reported, the catalog
//!    is built ([`crate::catalog::build()`]) and the cache entry rewritten
//!    atomically.
//!
//! The worker that ran the helper is handed back, still running, as
//! [`Discovery::helper_lane`] (its interpreter fixed to
//! [`Discovery::python`]): the server can keep it as its discovery lane, or
//! drop it (the worker exits when its connection closes) or shut it down.
//! Not waiting for that worker to exit keeps it off the startup path. The
//! `conda info` worker of the fallback is shut down before returning.
//!
//! [`restart`] is the restart watch: after a mutating call it re-takes the
//! stamp (a `stat` and a few directory listings, no Python) and, when it
//! moved, compares the fingerprint of a fresh discovery with
//! [`Discovery::fingerprint`]. A change sets `restart_required`, or, with
//! `--live-tools`, hands the new discovery to the server.
//!
//! Every failure is a [`DiscoveryError`] whose message is meant for the
//! startup diagnostic on stderr; nothing here writes to stdout.

pub mod cache;
pub mod config;
pub mod helper;
pub mod interpreter;
pub mod registry;
pub mod restart;
pub mod stamp;
pub mod target;

use std::path::PathBuf;
use std::time::Duration;

pub use interpreter::{Interpreter, InterpreterError, InterpreterSource, resolve_interpreter};
pub use stamp::Stamp;
pub use target::{Target, TargetError, TargetSource, resolve_target};

use crate::catalog::{self, BuildError, Catalog};
use crate::dump::Dump;
use crate::worker_client::{ExecError, Executor, Job, Limits, Program, WorkerConfig};

/// What [`discover`] needs to know (from the command line).
#[derive(Debug, Clone)]
pub struct DiscoveryOptions {
    /// `--conda-exe`.
    pub conda_exe: Option<PathBuf>,
    /// `--python`.
    pub python: Option<PathBuf>,
    /// `--no-cache`: neither read nor write the startup cache.
    pub no_cache: bool,
    /// The cache folder; `None` = [`cache::default_cache_dir`].
    pub cache_dir: Option<PathBuf>,
    /// Time limit of each process discovery runs (`--timeout`).
    pub timeout: Duration,
    /// How to start or reach workers (`worker_exe`, `log_format`, `socket`,
    /// `user`); `conda_exe` and `python` are filled in by discovery.
    pub worker: WorkerConfig,
}

impl DiscoveryOptions {
    /// Options with the defaults: no flags, the XDG cache, the default
    /// timeout (900 s, [`conda_mcp_shared::limits::Limits::DEFAULT`]), a
    /// worker next to the running binary.
    pub fn new() -> Self {
        DiscoveryOptions {
            conda_exe: None,
            python: None,
            no_cache: false,
            cache_dir: None,
            timeout: conda_mcp_shared::limits::Limits::DEFAULT.timeout,
            worker: WorkerConfig::new(PathBuf::new()),
        }
    }
}

impl Default for DiscoveryOptions {
    fn default() -> Self {
        Self::new()
    }
}

/// The result of discovery: everything the server builds its tools from.
#[derive(Debug, Clone)]
pub struct Discovery {
    /// The target conda.
    pub target: Target,
    /// The target's interpreter (runs the helpers).
    pub python: PathBuf,
    /// Where [`Discovery::python`] came from.
    pub python_source: InterpreterSource,
    /// The helper's document.
    pub dump: Dump,
    /// The catalog built from it.
    pub catalog: Catalog,
    /// The stamp the dump belongs to.
    pub stamp: Stamp,
    /// Whether the dump came from the startup cache (no process started).
    pub from_cache: bool,
    /// The cache file read or written, if any.
    pub cache_file: Option<PathBuf>,
    /// Processes started through workers for this discovery (0 on a cache
    /// hit; 1 for the helper; 2 with the `conda info` fallback).
    pub processes_started: u64,
    /// The executor (one worker, [`Program::Python`] = [`Discovery::python`])
    /// that ran the helper, for reuse as the server's discovery lane; `None`
    /// on a cache hit (nothing was started).
    pub helper_lane: Option<Executor>,
}

impl Discovery {
    /// The discovery fingerprint (conda version + plugins).
    pub fn fingerprint(&self) -> &str {
        &self.catalog.fingerprint
    }

    /// Whether the target or its package folders changed since this
    /// discovery (cheap: no Python, no process).
    pub fn stamp_changed(&self) -> bool {
        self.stamp.changed()
    }
}

/// Why discovery failed. Each message is a complete startup diagnostic.
#[derive(Debug, thiserror::Error)]
pub enum DiscoveryError {
    /// No usable target.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// No usable interpreter.
    #[error(transparent)]
    Interpreter(#[from] InterpreterError),
    /// The worker could not run a discovery process.
    #[error("discovery could not run {what} through the worker: {source}")]
    Worker {
        /// What was to be run.
        what: &'static str,
        /// The worker client's error.
        source: ExecError,
    },
    /// A discovery process ended badly.
    #[error("{what} {how} (run by {python}); its last stderr lines:\n{stderr_tail}")]
    ProcessFailed {
        /// What ran (`the discovery helper`, `conda info --json`).
        what: &'static str,
        /// `exited with status 1`, `timed out after 900 s`, ...
        how: String,
        /// The interpreter (or conda) that ran it.
        python: String,
        /// The end of its stderr.
        stderr_tail: String,
    },
    /// The helper ran but its output is not a usable dump.
    #[error("{source} (interpreter {python}); its last stderr lines:\n{stderr_tail}")]
    HelperOutput {
        /// What is wrong with the output.
        source: helper::HelperOutputError,
        /// The interpreter.
        python: String,
        /// The end of its stderr.
        stderr_tail: String,
    },
    /// The dump is unusable as a whole.
    #[error(transparent)]
    Catalog(#[from] BuildError),
    /// The target is conda, and conda failed: its `info --json` ended
    /// badly after printing conda's own JSON error document
    /// (`{"exception_name": ..., "message": ...}`, what conda prints for
    /// an error under `--json`). Only the exception's class is repeated:
    /// its message can hold a channel's credentials.
    #[error(
        "conda failed: `{ran}` {how} with conda's own error {exception} (a `.condarc` conda \
         cannot load, a broken installation, ...); run `{ran}` yourself to read conda's message"
    )]
    CondaFailed {
        /// What ran (`/opt/conda/bin/conda info --json`).
        ran: String,
        /// How it went (`exited with status 1`).
        how: String,
        /// conda's exception class (`ConfigurationLoadError`), or `of a
        /// class it did not name plainly`.
        exception: String,
    },
    /// The target ran but does not behave like conda: its `info --json`
    /// failed or printed no `sys.executable`, or the Python its first line
    /// names cannot import conda. The message says what ran, what
    /// discovery expects ([`NOT_CONDA_EXPECTED`]) and what to check; the
    /// stderr tail comes after the first line.
    #[error(
        "{target} does not behave like conda: `{ran}` {how}. {NOT_CONDA_EXPECTED} Check that {check}; its last stderr lines:\n{stderr_tail}"
    )]
    NotConda {
        /// Where the target came from and its path (`--conda-exe /bin/true`).
        target: String,
        /// What ran (`/bin/true info --json`).
        ran: String,
        /// How it went (`exited with status 2`, `printed no JSON document`).
        how: String,
        /// What to check, naming the flag or variable the target came from.
        check: String,
        /// The end of its stderr.
        stderr_tail: String,
    },
}

/// What discovery runs and expects of a conda, in the message of
/// [`DiscoveryError::NotConda`] (docs/operating.md "Discovery").
pub const NOT_CONDA_EXPECTED: &str = "conda-mcp runs the conda it is given as `conda info --json` \
     (unless the script's first line names conda's Python) and expects a JSON document with \
     \"sys.executable\", then runs that Python with its discovery helper, which imports conda and \
     prints a dump of conda's argument parser.";

impl DiscoveryError {
    /// [`DiscoveryError::NotConda`] for `target`: `ran` (a command line)
    /// `how`.
    fn not_conda(target: &Target, ran: String, how: String, stderr: &str) -> DiscoveryError {
        let (target_text, named_by) = match target.source {
            TargetSource::Flag => (
                format!("--conda-exe {}", target.given.display()),
                "--conda-exe",
            ),
            TargetSource::Env => (
                format!("CONDA_EXE ({})", target.given.display()),
                "CONDA_EXE",
            ),
            TargetSource::Path => (
                format!("the conda found on PATH ({})", target.given.display()),
                "PATH",
            ),
            TargetSource::UserInstall => (
                format!("the user's Miniforge conda ({})", target.given.display()),
                "%USERPROFILE%\\miniforge3",
            ),
            TargetSource::Registry => (
                format!(
                    "the conda a registered installation holds ({})",
                    target.given.display()
                ),
                "the installer's uninstall entry in the Windows registry",
            ),
        };
        DiscoveryError::NotConda {
            target: target_text,
            ran,
            how,
            check: format!(
                "{named_by} names conda itself (<prefix>/bin/conda or <prefix>/condabin/conda, \
                 not Python or another program) and that `{} info --json` prints conda's information",
                target.given.display()
            ),
            stderr_tail: tail(stderr, 2000),
        }
    }
}

/// Runs discovery (see the module docs).
///
/// Errors: [`DiscoveryError`]; a cache that cannot be read or written is
/// never one (it is logged and bypassed).
pub async fn discover(opts: &DiscoveryOptions) -> Result<Discovery, DiscoveryError> {
    discover_with(opts, |_, _| {}).await
}

/// [`discover`], calling `on_miss(target, python)` once the cache missed
/// and the interpreter is known, just before the helper runs: the server
/// starts the call lane's warm conda there, so that on a cold start conda's
/// imports in the warm conda and in the helper run side by side instead of
/// one after the other (docs/benchmarks.md "First call and memory at
/// rest"). Not called on a cache hit.
///
/// Errors: as [`discover`].
pub async fn discover_with(
    opts: &DiscoveryOptions,
    on_miss: impl FnOnce(&std::path::Path, &std::path::Path),
) -> Result<Discovery, DiscoveryError> {
    let target = resolve_target(opts.conda_exe.as_deref())?;
    let python_flag = opts.python.as_ref().map(|p| {
        if p.is_absolute() {
            p.clone()
        } else {
            std::env::current_dir()
                .map(|d| d.join(p))
                .unwrap_or_else(|_| p.clone())
        }
    });
    let cache_dir = if opts.no_cache {
        None
    } else {
        opts.cache_dir.clone().or_else(cache::default_cache_dir)
    };

    if let Some(dir) = &cache_dir {
        match cache::load(dir, &target.path, python_flag.as_deref()) {
            Ok(entry) => match catalog::build(&entry.dump) {
                Ok(catalog) => {
                    tracing::info!(target = %target.path.display(), "discovery: startup cache hit");
                    log_plugin_failures(&entry.dump);
                    return Ok(Discovery {
                        python: entry.python,
                        python_source: InterpreterSource::Cache,
                        catalog,
                        stamp: entry.stamp,
                        dump: entry.dump,
                        from_cache: true,
                        cache_file: Some(cache::entry_path(dir, &target.path)),
                        processes_started: 0,
                        helper_lane: None,
                        target,
                    });
                }
                Err(e) => tracing::warn!("discovery: cached dump unusable ({e}); rediscovering"),
            },
            Err(miss) => tracing::info!("discovery: {miss}; running the helper"),
        }
    }

    let mut processes_started = 0;
    let (python, python_source) = match resolve_interpreter(&target, python_flag.as_deref())? {
        Interpreter::Found { path, source } => (path, source),
        Interpreter::NeedsCondaInfo => {
            processes_started += 1;
            let p = python_from_conda_info(opts, &target).await?;
            (p, InterpreterSource::CondaInfo)
        }
    };
    tracing::info!(python = %python.display(), source = ?python_source, "discovery: interpreter");
    on_miss(&target.path, &python);

    let (dump, helper_lane) = run_helper(opts, &target, &python, python_source).await?;
    processes_started += 1;
    for w in &dump.warnings {
        tracing::warn!("discovery helper: {w}");
    }
    log_plugin_failures(&dump);
    let stamp_dirs: Vec<PathBuf> = dump.stamp_dirs.iter().map(PathBuf::from).collect();
    let config_places: Vec<PathBuf> = dump
        .config
        .iter()
        .flat_map(|c| c.search_path.iter().map(PathBuf::from))
        .collect();
    let stamp = Stamp::current(&target.path, &stamp_dirs).with_config(&config_places);
    let catalog = catalog::build(&dump)?;

    let mut cache_file = None;
    if let Some(dir) = &cache_dir {
        let entry = cache::CacheEntry {
            cache_format: cache::CACHE_FORMAT.to_owned(),
            conda_mcp_version: env!("CARGO_PKG_VERSION").to_owned(),
            target: target.path.clone(),
            python: python.clone(),
            stamp: stamp.clone(),
            dump: dump.clone(),
        };
        match cache::store(dir, &entry) {
            Ok(p) => cache_file = Some(p),
            Err(e) => {
                tracing::warn!(dir = %dir.display(), "discovery: cannot write the startup cache: {e}")
            }
        }
    }
    Ok(Discovery {
        target,
        python,
        python_source,
        dump,
        catalog,
        stamp,
        from_cache: false,
        cache_file,
        processes_started,
        helper_lane: Some(helper_lane),
    })
}

/// Logs each plugin conda failed to load (a warning: conda still works,
/// without that plugin).
fn log_plugin_failures(dump: &Dump) {
    for f in &dump.plugin_failures {
        tracing::warn!("{}", f.warning());
    }
}

fn tail(text: &str, max_chars: usize) -> String {
    let n = text.chars().count();
    let t: String = text.chars().skip(n.saturating_sub(max_chars)).collect();
    if t.trim().is_empty() {
        "(none)".to_owned()
    } else {
        t
    }
}

fn ended_badly(r: &conda_mcp_shared::ExecutionResult, timeout: Duration) -> Option<String> {
    if r.timed_out {
        Some(format!("timed out after {} s", timeout.as_secs()))
    } else if r.cancelled {
        Some("was cancelled".to_owned())
    } else {
        match r.exit_code {
            Some(0) => None,
            Some(c) => Some(format!("exited with status {c}")),
            None => Some("was killed by a signal".to_owned()),
        }
    }
}

/// The class of conda's own JSON error document on `stdout` (what conda
/// prints for an error under `--json`: an object with `exception_name`,
/// `error`, `message`...), if that is what `stdout` is (an object with a
/// string `exception_name`, which conda's error documents always hold):
/// that name when it is a plain dotted name (at most 100 characters), else
/// `of a class it did not name plainly`. `None` when `stdout` is anything
/// else.
pub fn conda_error_class(stdout: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(stdout.trim()).ok()?;
    let name = value.as_object()?.get("exception_name")?.as_str()?;
    let plain = !name.is_empty()
        && name.len() <= 100
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    Some(if plain {
        name.to_owned()
    } else {
        "of a class it did not name plainly".to_owned()
    })
}

async fn python_from_conda_info(
    opts: &DiscoveryOptions,
    target: &Target,
) -> Result<PathBuf, DiscoveryError> {
    const WHAT: &str = "`conda info --json`";
    // A one-call worker: a warm conda would start only to be thrown away.
    let cfg = WorkerConfig {
        conda_exe: target.path.clone(),
        python: None,
        warm_conda: false,
        ..opts.worker.clone()
    };
    let executor = Executor::new(cfg);
    let mut job = Job::new(Program::Conda, vec!["info".into(), "--json".into()]);
    job.limits.timeout = opts.timeout;
    job.label = "conda info --json (discovery)".into();
    let result = executor.run(job, |_| {}).await;
    executor.shutdown().await;
    let r = result.map_err(|source| DiscoveryError::Worker { what: WHAT, source })?;
    let ran = format!("{} info --json", target.path.display());
    if r.timed_out || r.cancelled {
        let how = ended_badly(&r, opts.timeout).unwrap_or_default();
        return Err(DiscoveryError::ProcessFailed {
            what: WHAT,
            how,
            python: target.path.display().to_string(),
            stderr_tail: tail(&r.stderr, 2000),
        });
    }
    if let Some(how) = ended_badly(&r, opts.timeout) {
        if let Some(exception) = conda_error_class(&r.stdout) {
            return Err(DiscoveryError::CondaFailed {
                ran,
                how,
                exception,
            });
        }
        return Err(DiscoveryError::not_conda(target, ran, how, &r.stderr));
    }
    interpreter::from_conda_info(&r.stdout).map_err(|e| {
        let how = match e {
            InterpreterError::CondaInfo(how) => how,
            other => other.to_string(),
        };
        DiscoveryError::not_conda(target, ran, how, &r.stderr)
    })
}

async fn run_helper(
    opts: &DiscoveryOptions,
    target: &Target,
    python: &std::path::Path,
    python_source: InterpreterSource,
) -> Result<(Dump, Executor), DiscoveryError> {
    const WHAT: &str = "the discovery helper";
    let cfg = WorkerConfig {
        conda_exe: target.path.clone(),
        python: Some(python.to_path_buf()),
        warm_conda: false,
        ..opts.worker.clone()
    };
    let executor = Executor::new(cfg);
    let mut job = Job::new(Program::Python, helper::helper_argv());
    job.stdin = Some(helper::HELPER_SOURCE.as_bytes().to_vec());
    job.limits = Limits {
        timeout: opts.timeout,
        output_limit_bytes: helper::HELPER_OUTPUT_LIMIT_BYTES,
        stdin_limit_bytes: job
            .limits
            .stdin_limit_bytes
            .max(helper::HELPER_SOURCE.len() as u64),
    };
    job.label = "discovery helper".into();
    let result = executor.run(job, |_| {}).await;
    let r = match result {
        Ok(r) => r,
        Err(source) => {
            executor.shutdown().await;
            return Err(DiscoveryError::Worker { what: WHAT, source });
        }
    };
    let py = python.display().to_string();
    if let Some(how) = ended_badly(&r, opts.timeout) {
        executor.shutdown().await;
        if python_source == InterpreterSource::Shebang && r.stderr.contains(helper::NO_CONDA) {
            return Err(DiscoveryError::not_conda(
                target,
                format!("{py} -"),
                format!(
                    "(the discovery helper, run by the Python the first line of {} names) cannot import conda",
                    target.path.display()
                ),
                &r.stderr,
            ));
        }
        return Err(DiscoveryError::ProcessFailed {
            what: WHAT,
            how,
            python: py,
            stderr_tail: tail(&r.stderr, 2000),
        });
    }
    match helper::parse_output(&r.stdout, r.stdout_truncated) {
        Ok(dump) => Ok((dump, executor)),
        Err(source) => {
            executor.shutdown().await;
            Err(DiscoveryError::HelperOutput {
                source,
                python: py,
                stderr_tail: tail(&r.stderr, 2000),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::conda_error_class;

    #[test]
    fn condas_json_error_gives_its_class_and_nothing_else() {
        let doc = r#"{"caused_by": "None", "error": "ConfigurationLoadError: Unable to load configuration file.\n  path: /home/me/.condarc https://user:SECRET@x", "exception_name": "ConfigurationLoadError", "exception_type": "<class 'conda.exceptions.ConfigurationLoadError'>", "message": "Unable to load configuration file."}"#;
        assert_eq!(
            conda_error_class(doc).as_deref(),
            Some("ConfigurationLoadError")
        );
        // A class that is not a plain name is not repeated.
        assert_eq!(
            conda_error_class(r#"{"exception_name": "x y\nSECRET", "error": "e"}"#).as_deref(),
            Some("of a class it did not name plainly")
        );
        for other in [
            "",
            "garbage",
            r#"{"sys.executable": "/p/python"}"#,
            r#"["exception_name"]"#,
            // Any program's JSON error is not conda's.
            r#"{"error": "failed"}"#,
            r#"{"exception_name": 3}"#,
        ] {
            assert_eq!(conda_error_class(other), None, "{other}");
        }
    }
}
