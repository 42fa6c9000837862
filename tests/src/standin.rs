//! Stand-in conda prefixes (docs/testing.md "Testing against a stand-in conda").
//!
//! [`StandinPrefix::create`] builds a throw-away "conda installation" for a
//! given dump, shaped like a real one so that target and interpreter
//! resolution, the embedded discovery helper and the worker all meet what
//! they would meet in the field:
//!
//! ```text
//! <prefix>/                      a `python3 -m venv --without-pip` venv
//!   bin/python                   the venv interpreter (a symlink: never canonicalize it)
//!   bin/conda                    `#!<prefix>/bin/python` entry-point script
//!   lib/python3.X/site-packages/
//!     conda_mcp_standin.pth      makes tests/fixtures/standin importable (package `conda`)
//!     <dist>-<ver>.dist-info/    one per plugin: real entry points of group `conda`
//!   conda-meta/history
//!   standin-dump.json            the dump the stand-in builds its parser from
//!   standin-control.json         process-test switches ([`StandinPrefix::set_control`])
//!   standin-starts.log           one line per Python start importing `conda`
//!   standin-grandchild.pids      pids of grandchildren spawned by the switches
//! ```
//!
//! What the executable prints and which switches exist is documented in
//! `tests/fixtures/standin/conda/cli/main.py`; the batch oracle is
//! [`batch_parse`] (`tests/fixtures/standin/batch_parse.py`).
//!
//! The interpreter that builds the venv is `$CONDA_MCP_TEST_PYTHON`, else
//! `python3` (Python ≥ 3.10).

use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::Serialize;
use tempfile::TempDir;

use crate::paths;

/// The in-project dump written for the stand-in (`tests/fixtures/dumps/standin.json`).
pub fn standin_dump() -> PathBuf {
    paths::fixtures().join("dumps").join("standin.json")
}

/// The stand-in package folder (`tests/fixtures/standin`).
pub fn standin_dir() -> PathBuf {
    paths::fixtures().join("standin")
}

/// The Python used to create stand-in venvs and run the batch oracle.
pub fn host_python() -> PathBuf {
    std::env::var_os("CONDA_MCP_TEST_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("python3"))
}

/// One conda plugin distribution: an entry point of group `conda`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct PluginSpec {
    /// Distribution name (`conda-lint`).
    pub distribution: String,
    /// Distribution version (`0.1.0`).
    pub version: String,
    /// Entry-point name.
    pub name: String,
    /// Entry-point value (`module:attr`).
    pub value: String,
}

/// One process-test rule of `<prefix>/standin-control.json`. The first rule
/// whose `commands` matches the parsed command applies (none = every
/// command); every switch is optional. See `conda/cli/main.py` for the order
/// in which they act.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ControlRule {
    /// Canonical command paths without `conda` (`[["env", "create"]]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commands: Option<Vec<Vec<String>>>,
    /// Sleep this long (seconds) before printing the result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sleep_seconds: Option<f64>,
    /// Unless the command is an effective dry run, mark the process as a
    /// writer in this folder while it sleeps; another live writer seen on
    /// entry or exit is appended to `<folder>/overlaps.log`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub writers_dir: Option<PathBuf>,
    /// Write this many bytes (`x`) on stdout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout_bytes: Option<u64>,
    /// Write this many bytes (`x`) on stderr.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_bytes: Option<u64>,
    /// Emit this many conda-style JSON progress records on stdout.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress_records: Option<u32>,
    /// Pause between progress records (seconds; default 0.2).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub progress_interval_seconds: Option<f64>,
    /// Spawn a grandchild that inherits stdout/stderr and sleeps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spawn_grandchild: Option<bool>,
    /// How long the grandchild sleeps (seconds; default 300).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grandchild_sleep_seconds: Option<f64>,
    /// Start the grandchild in a new session (escaping the process group).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grandchild_setsid: Option<bool>,
    /// Ignore SIGTERM.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ignore_sigterm: Option<bool>,
    /// Read stdin to EOF (reported as `stdin_bytes` / `stdin_text`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_stdin: Option<bool>,
    /// Write this text on stderr.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_text: Option<String>,
    /// Print this text on stdout instead of the parsed-namespace object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout_text: Option<String>,
    /// Print this many nested JSON arrays on stdout instead of the object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deep_json_levels: Option<u32>,
    /// Exit with this status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// Replay this file on stdout instead of the JSON object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stdout_file: Option<PathBuf>,
    /// Replay this file on stderr (after everything else).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr_file: Option<PathBuf>,
    /// Die of SIGABRT after the output.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub abort: Option<bool>,
    /// A mutation: install this plugin dist-info (changes the plugin set).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub add_plugin: Option<PluginSpec>,
    /// A mutation: remove the dist-info of this distribution.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remove_plugin: Option<String>,
    /// Set these environment variables in the conda process (as a command
    /// that changes its own environment would).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setenv: Option<std::collections::BTreeMap<String, String>>,
    /// Change the conda process's working directory (as `conda run --cwd`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chdir: Option<String>,
    /// After printing, send this signal to itself (a crash).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kill_self: Option<i32>,
    /// `run` executes its `executable_call` the way conda's `main_run`
    /// does (output captured and printed after the program exits, stdin
    /// closed, unless `--no-capture-output`) instead of printing the parse.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub execute_run: Option<bool>,
    /// Register an atexit handler that writes this text on stderr (what the
    /// interpreter runs at exit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub atexit_stderr: Option<String>,
    /// Start a non-daemon thread that writes this text on stdout after
    /// 0.2 s (the interpreter's exit waits for it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_stdout: Option<String>,
    /// End with `sys.exit(TEXT)` (the text on stderr, status 1) instead of
    /// a status.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_message: Option<String>,
    /// `create` and `install` act as conda's transactions (a `--json`
    /// dry-run plan, or an environment created with its history): `true`,
    /// or `{"extra_link": ["name version build", ...]}` to add packages to
    /// the plan (see `conda/cli/main.py`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transaction: Option<serde_json::Value>,
    /// `create` / `env create` succeed (exit 0, `success: true`) without
    /// writing the environment (a success that did not happen).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skip_create: Option<bool>,
    /// For this command only, conda's envs directories start with these
    /// (`--name` resolves there first): what conda sees differs from what
    /// anyone outside the process predicts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub envs_dirs_first: Option<Vec<PathBuf>>,
    /// `list`, `env list`, `env export` and `info --envs` answer from the environments
    /// as conda does (`conda/cli/listing.py`: the packages of `conda-meta`
    /// and the pip-installed ones, the revisions, the environments conda
    /// knows) instead of printing the parse.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listing: Option<bool>,
}

impl ControlRule {
    /// A rule restricted to the given command paths (`&["env create"]`).
    pub fn for_commands(paths: &[&str]) -> Self {
        Self {
            commands: Some(
                paths
                    .iter()
                    .map(|p| p.split_whitespace().map(str::to_owned).collect())
                    .collect(),
            ),
            ..Self::default()
        }
    }
}

/// A throw-away stand-in conda installation (removed on drop).
#[derive(Debug)]
pub struct StandinPrefix {
    /// Owns the prefix folder.
    pub dir: TempDir,
    /// The prefix (`sys.prefix` of its interpreter).
    pub prefix: PathBuf,
    /// `<prefix>/bin/conda`: the entry-point script, shebang = `python`.
    pub conda_exe: PathBuf,
    /// `<prefix>/bin/python`: the venv interpreter (a symlink; keep it as is).
    pub python: PathBuf,
    /// The venv's site-packages.
    pub site_packages: PathBuf,
    /// `<prefix>/standin-dump.json`.
    pub dump_path: PathBuf,
}

impl StandinPrefix {
    /// Makes every Python of this venv wait, when it starts, until the
    /// file `gate` exists: a conda whose start (its discovery, any call)
    /// takes as long as the test wants (a cold network file system, an
    /// antivirus scan). A `.pth` file in the venv's site-packages.
    ///
    /// Panics when the file cannot be written.
    pub fn hold_python_until(&self, gate: &Path) {
        let line = format!(
            "import os, time; exec({:?})\n",
            format!(
                "while not os.path.exists({:?}):\n    time.sleep(0.05)",
                gate.display().to_string()
            )
        );
        std::fs::write(self.site_packages.join("zz_slow_start.pth"), line).expect("pth");
    }

    /// Builds a prefix serving `dump_path` (copied into the prefix); the
    /// dump's `plugins` are installed as dist-infos.
    ///
    /// Errors: creating the venv or writing a file failed.
    pub fn create(dump_path: &Path) -> io::Result<Self> {
        Self::create_with(dump_path, &host_python())
    }

    /// [`StandinPrefix::create`] with a venv of `python` instead of
    /// [`host_python`] (e.g. one another user can run).
    ///
    /// Errors: creating the venv or writing a file failed.
    pub fn create_with(dump_path: &Path, python: &Path) -> io::Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("standin-conda-")
            .tempdir()?;
        let prefix = dir.path().to_path_buf();
        let status = Command::new(python)
            .args(["-m", "venv", "--without-pip"])
            .arg(&prefix)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .status()?;
        if !status.success() {
            return Err(io::Error::other(format!(
                "python3 -m venv --without-pip {} failed: {status}",
                prefix.display()
            )));
        }
        let site_packages = find_site_packages(&prefix)?;
        std::fs::write(
            site_packages.join("conda_mcp_standin.pth"),
            format!("{}\n", standin_dir().display()),
        )?;
        let python = prefix.join("bin").join("python");
        let conda_exe = prefix.join("bin").join("conda");
        std::fs::write(
            &conda_exe,
            format!(
                "#!{}\n# -*- coding: utf-8 -*-\nimport sys\n\nfrom conda.cli.main import main\n\nif __name__ == \"__main__\":\n    sys.exit(main())\n",
                python.display()
            ),
        )?;
        set_mode(&conda_exe, 0o755)?;
        std::fs::create_dir_all(prefix.join("conda-meta"))?;
        std::fs::write(prefix.join("conda-meta").join("history"), "")?;
        let dump_copy = prefix.join("standin-dump.json");
        std::fs::copy(dump_path, &dump_copy)?;

        let this = Self {
            dir,
            prefix,
            conda_exe,
            python,
            site_packages,
            dump_path: dump_copy,
        };
        let dump: serde_json::Value = serde_json::from_slice(&std::fs::read(dump_path)?)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
        if let Some(plugins) = dump.get("plugins").and_then(|p| p.as_array()) {
            for p in plugins {
                let spec: PluginSpec = serde_json::from_value(p.clone())
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                this.add_plugin(&spec)?;
            }
        }
        Ok(this)
    }

    /// [`StandinPrefix::create`] with the in-project dump; panics on failure
    /// (test convenience).
    pub fn standard() -> Self {
        Self::create(&standin_dump()).expect("create a stand-in conda prefix")
    }

    /// Writes the process-test rules (replacing earlier ones).
    pub fn set_control(&self, rules: &[ControlRule]) -> io::Result<()> {
        let text = serde_json::to_vec_pretty(rules).map_err(io::Error::other)?;
        write_atomic(&self.prefix.join("standin-control.json"), &text)
    }

    /// Removes every process-test rule.
    pub fn clear_control(&self) -> io::Result<()> {
        match std::fs::remove_file(self.prefix.join("standin-control.json")) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    /// The dist-info folder of a plugin distribution.
    pub fn dist_info(&self, distribution: &str, version: &str) -> PathBuf {
        self.site_packages
            .join(format!("{}-{version}.dist-info", normalize(distribution)))
    }

    /// Installs a plugin: a `*.dist-info` declaring one entry point of
    /// group `conda` (seen by `importlib.metadata`) and, unless
    /// site-packages has its top-level package already, the module it
    /// names as an empty plugin (no hooks), so that the plugin manager's
    /// import of it succeeds.
    pub fn add_plugin(&self, p: &PluginSpec) -> io::Result<()> {
        self.add_entry_point(p)?;
        write_plugin_module(&self.site_packages, &p.value)
    }

    /// Declares a plugin's entry point only (its `*.dist-info`): the module
    /// comes from elsewhere (a `.pth`), or is missing, and then conda's
    /// plugin manager fails to load it.
    pub fn add_entry_point(&self, p: &PluginSpec) -> io::Result<()> {
        let dir = self.dist_info(&p.distribution, &p.version);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(
            dir.join("METADATA"),
            format!(
                "Metadata-Version: 2.1\nName: {}\nVersion: {}\n",
                p.distribution, p.version
            ),
        )?;
        std::fs::write(
            dir.join("entry_points.txt"),
            format!("[conda]\n{} = {}\n", p.name, p.value),
        )
    }

    /// Removes every dist-info of a plugin distribution.
    pub fn remove_plugin(&self, distribution: &str) -> io::Result<()> {
        let stem = format!("{}-", normalize(distribution));
        for entry in std::fs::read_dir(&self.site_packages)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(&stem) && name.ends_with(".dist-info") {
                std::fs::remove_dir_all(entry.path())?;
            }
        }
        Ok(())
    }

    /// How many Python processes imported the stand-in `conda` package in
    /// this prefix so far (lines of `standin-starts.log`).
    pub fn python_starts(&self) -> usize {
        std::fs::read_to_string(self.prefix.join("standin-starts.log"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    /// How many conda commands the stand-in ran in this prefix so far, in
    /// fresh processes or forked from a warm conda (lines of
    /// `standin-runs.log`).
    pub fn conda_runs(&self) -> usize {
        std::fs::read_to_string(self.prefix.join("standin-runs.log"))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    /// Pids of the grandchildren spawned by `spawn_grandchild`.
    pub fn grandchild_pids(&self) -> Vec<u32> {
        std::fs::read_to_string(self.prefix.join("standin-grandchild.pids"))
            .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
            .unwrap_or_default()
    }

    /// Runs the stand-in conda directly (not through conda-mcp) and returns
    /// its exit status, stdout and stderr.
    pub fn run(&self, argv: &[&str]) -> io::Result<std::process::Output> {
        Command::new(&self.conda_exe)
            .args(argv)
            .stdin(Stdio::null())
            .output()
    }
}

/// The result of parsing one argv with the batch oracle.
pub type BatchResult = serde_json::Value;

/// The batch argparse oracle: one `tests/fixtures/standin/batch_parse.py`
/// process holding the stand-in's parser for a dump, answering one argv
/// (what follows `conda`) per line, in order. The one driver of that script:
/// [`batch_parse`] for a list, [`Oracle::parse`] for argv drawn one at a
/// time (property tests). The process is killed and reaped on drop.
pub struct Oracle {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Oracle {
    /// Starts the oracle for `dump` with the host Python.
    ///
    /// Errors: the script could not be started.
    pub fn start(dump: &Path) -> io::Result<Oracle> {
        let mut child = Command::new(host_python())
            .arg(standin_dir().join("batch_parse.py"))
            .arg(dump)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child
            .stdin
            .take()
            .ok_or_else(|| io::Error::other("no stdin"))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| io::Error::other("no stdout"))?;
        Ok(Oracle {
            child,
            stdin,
            stdout: BufReader::new(stdout),
        })
    }

    /// Parses one argv: `{"ok": true, "command": [...], "namespace": {...}}`
    /// or `{"ok": false, "error": "..."}`.
    ///
    /// Errors: the oracle died or answered something that is not one JSON
    /// line.
    pub fn parse(&mut self, argv: &[String]) -> io::Result<BatchResult> {
        let mut line = serde_json::to_vec(argv).map_err(io::Error::other)?;
        line.push(b'\n');
        self.stdin.write_all(&line)?;
        self.stdin.flush()?;
        let mut out = String::new();
        if self.stdout.read_line(&mut out)? == 0 {
            return Err(io::Error::other(format!(
                "batch_parse.py ended without answering ({:?})",
                self.child.try_wait()
            )));
        }
        serde_json::from_str(&out).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
    }
}

impl Drop for Oracle {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Parses each argv (what follows `conda`) with the stand-in's parser for
/// `dump` through one [`Oracle`]: per argv,
/// `{"ok": true, "command": [...], "namespace": {...}}` or
/// `{"ok": false, "error": "..."}`.
///
/// Errors: the oracle could not be started or answered out of protocol.
pub fn batch_parse(dump: &Path, argvs: &[Vec<String>]) -> io::Result<Vec<BatchResult>> {
    let mut oracle = Oracle::start(dump)?;
    argvs.iter().map(|argv| oracle.parse(argv)).collect()
}

/// Writes the module an entry point's value names (`pkg.plugin`, or
/// `pkg.plugin:attr`) into `site` as an empty plugin module, with the
/// packages above it, unless `site` already has its top-level package.
fn write_plugin_module(site: &Path, value: &str) -> io::Result<()> {
    let module = value.split(':').next().unwrap_or_default().trim();
    let parts: Vec<&str> = module.split('.').filter(|p| !p.is_empty()).collect();
    let Some((last, packages)) = parts.split_last() else {
        return Ok(());
    };
    let top = packages.first().unwrap_or(last);
    if site.join(top).exists() || site.join(format!("{top}.py")).exists() {
        return Ok(());
    }
    let mut dir = site.to_path_buf();
    for p in packages {
        dir.push(p);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("__init__.py"), "")?;
    }
    std::fs::write(
        dir.join(format!("{last}.py")),
        "\"\"\"A stand-in conda plugin with no hooks.\"\"\"\n",
    )
}

fn normalize(distribution: &str) -> String {
    let mut out = String::with_capacity(distribution.len());
    let mut last_sep = false;
    for c in distribution.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !last_sep {
                out.push('_');
            }
            last_sep = true;
        } else {
            out.push(c);
            last_sep = false;
        }
    }
    out
}

fn find_site_packages(prefix: &Path) -> io::Result<PathBuf> {
    let lib = prefix.join("lib");
    for entry in std::fs::read_dir(&lib)? {
        let p = entry?.path().join("site-packages");
        if p.is_dir() {
            return Ok(p);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::NotFound,
        format!("no site-packages under {}", lib.display()),
    ))
}

fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// A stand-in prefix of the parser `dump` that other users can run (the
/// root tier's workers under another uid): a venv of `python` (one outside
/// root's home, e.g. `/usr/bin/python3`, unlike pyenv's), the stand-in
/// package copied into the prefix (the checkout may be out of their
/// reach), everything readable and writable by all (the stand-in writes
/// its logs there).
///
/// Errors: creating the venv, copying or `chmod` failed.
pub fn shared_prefix(dump: &Path, python: &Path) -> io::Result<StandinPrefix> {
    let p = StandinPrefix::create_with(dump, python)?;
    let package = p.prefix.join("standin-package");
    copy_tree(&standin_dir(), &package)?;
    std::fs::write(
        p.site_packages.join("conda_mcp_standin.pth"),
        format!("{}\n", package.display()),
    )?;
    // The stand-in appends to these as whichever user runs it.
    for log in ["standin-starts.log", "standin-runs.log"] {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p.prefix.join(log))?;
    }
    let status = Command::new("chmod")
        .arg("-R")
        .arg("a+rwX")
        .arg(p.dir.path())
        .status()?;
    if !status.success() {
        return Err(io::Error::other(format!("chmod -R a+rwX failed: {status}")));
    }
    Ok(p)
}

/// Copies the directory tree `from` to `to` (files and directories only).
fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// A conda environment at `prefix` as the guard's tests need it: one
/// package record (`alpha 0.0 0`, which lists `share/alpha.txt` and
/// `lib/alpha.py`; the interpreter's `lib/__pycache__/alpha.*.pyc` cache
/// of the latter counts as listed too), those files, and `marker` (a path
/// relative to `prefix`, holding `keep me`), a file no package installed.
///
/// Panics when a file cannot be written (a test setup failure).
pub fn environment_with_marker(prefix: &Path, marker: &str) {
    std::fs::create_dir_all(prefix.join("conda-meta")).expect("conda-meta");
    std::fs::write(prefix.join("conda-meta/history"), "").expect("history");
    std::fs::write(
        prefix.join("conda-meta/alpha-0.0-0.json"),
        r#"{"name": "alpha", "version": "0.0", "build": "0", "files": ["share/alpha.txt", "lib/alpha.py"]}"#,
    )
    .expect("record");
    std::fs::create_dir_all(prefix.join("share")).expect("share");
    std::fs::create_dir_all(prefix.join("lib/__pycache__")).expect("lib");
    std::fs::write(prefix.join("share/alpha.txt"), "alpha\n").expect("file");
    std::fs::write(prefix.join("lib/alpha.py"), "").expect("file");
    std::fs::write(prefix.join("lib/__pycache__/alpha.cpython-312.pyc"), "c").expect("cache");
    let marker = prefix.join(marker);
    std::fs::create_dir_all(marker.parent().expect("parent")).expect("marker's folder");
    std::fs::write(marker, "keep me").expect("marker");
}
