//! Warm conda on Windows: one spare interpreter that has already imported
//! conda waits for a single job.
//!
//! Windows has no fork, so the Unix zygote ([`crate::warm`] there) cannot
//! exist. Instead the worker starts `<root>\python.exe -c <spare.py>`
//! ([`SOURCE`]) ahead of time, contained like any job ([`crate::contain`]:
//! its own job object) and with the environment and working directory a
//! fresh conda gets. It imports conda and loads its plugins, writes nothing,
//! and blocks reading its stdin. A conda job takes it: the worker writes the
//! job (argv, directory) to its stdin, and from then on it *is* the job's
//! process, with the job's pipes, limits and kill; the next spare starts at
//! once. Each spare serves one job, so nothing one call does reaches the
//! next, as with a fresh process.
//!
//! Fallback, never a failure: when conda does not run through an
//! installation's `python.exe` (`conda_mcp_shared::conda_cmd`), the spare is not
//! started yet or has exited, the child environment changed, or the job's
//! request is too large, the job runs as a fresh process. A spare that
//! failed to start [`MAX_START_FAILURES`] times in a row stays off.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, PoisonError};

use conda_mcp_shared::env::FIXED_CWD;
use tokio::io::AsyncWriteExt;

use conda_mcp_shared::guard::InProcessChecks;

use crate::contain;
use crate::guard::windows::ReportPipe;
use crate::spawn::ChildSetup;
use conda_mcp_shared::conda_cmd;

/// The spare's Python source, run with `python -c`: the guard
/// (`guard/guard.py`, for jobs with in-process checks) and `spare.py`.
pub const SOURCE: &str = concat!(include_str!("guard/guard.py"), include_str!("spare.py"));

/// Consecutive failed starts after which the spare stays off.
pub const MAX_START_FAILURES: u32 = 3;

/// Largest job header written to a spare (argv and directory as JSON).
pub const MAX_REQUEST: usize = 128 * 1024;

/// The warm conda of one worker on Windows.
#[derive(Debug)]
pub struct Warm {
    python: PathBuf,
    env: Mutex<Vec<(OsString, OsString)>>,
    slot: Arc<tokio::sync::Mutex<Slot>>,
}

#[derive(Debug, Default)]
struct Slot {
    spare: Option<Spare>,
    failures: u32,
}

#[derive(Debug)]
struct Spare {
    child: contain::Child,
    env: Vec<(OsString, OsString)>,
}

impl Warm {
    /// The warm conda for `conda`, or `None` (logged) when conda does not
    /// run through an installation's interpreter. Nothing starts until
    /// [`Warm::prepare`].
    pub fn new(conda: &Path, env: Vec<(OsString, OsString)>) -> Option<Arc<Warm>> {
        match conda_cmd::resolve(conda) {
            Ok(how) if how.root.is_some() => Some(Arc::new(Warm {
                python: how.program,
                env: Mutex::new(env),
                slot: Default::default(),
            })),
            _ => {
                tracing::info!(
                    "warm conda off: conda is not run through an installation's python.exe; conda calls run as fresh processes"
                );
                None
            }
        }
    }

    /// Nothing to spare on Windows: the spare is in a job object of its
    /// own, which no sweep touches.
    pub fn spared(&self) -> Vec<i32> {
        Vec::new()
    }

    /// Starts a spare unless one is waiting (or replaces one that exited);
    /// never waits.
    pub fn prepare(&self) {
        if let Ok(mut slot) = self.slot.clone().try_lock_owned() {
            self.tend(&mut slot);
        }
    }

    fn tend(&self, slot: &mut Slot) {
        if let Some(s) = &mut slot.spare
            && s.child.try_wait().is_some()
        {
            tracing::info!("the spare conda exited before a job; starting a new one");
            slot.spare = None;
        }
        if slot.spare.is_some() {
            return;
        }
        if slot.failures >= MAX_START_FAILURES {
            return;
        }
        let env = lock(&self.env).clone();
        match self.start(&env) {
            Ok(child) => {
                tracing::info!(pid = child.id(), "spare conda starting");
                slot.failures = 0;
                slot.spare = Some(Spare { child, env });
            }
            Err(e) => {
                slot.failures += 1;
                tracing::warn!(error = %e, "the spare conda did not start; conda calls run as fresh processes");
            }
        }
    }

    fn start(&self, env: &[(OsString, OsString)]) -> std::io::Result<contain::Child> {
        let mut cmd = tokio::process::Command::new(&self.python);
        cmd.arg("-c")
            .arg(SOURCE)
            .current_dir(FIXED_CWD)
            .env_clear()
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        contain::spawn(cmd)
    }

    /// Hands the job (`argv` in `setup`'s directory) to the waiting spare
    /// and returns it as the job's process, with the guard's report pipe
    /// when the job has `checks` (the spare installs the guard, which
    /// reports there), or `None` (the job runs fresh). The next spare
    /// starts before this returns. With `has_stdin`, the job's stdin
    /// follows on the returned process's stdin pipe; otherwise that pipe is
    /// closed here.
    pub async fn take(
        &self,
        argv: &[String],
        setup: &ChildSetup,
        has_stdin: bool,
        checks: Option<&InProcessChecks>,
    ) -> Option<(contain::Child, Option<ReportPipe>)> {
        let Ok(mut slot) = self.slot.clone().try_lock_owned() else {
            return None;
        };
        let report = match checks {
            Some(_) => match ReportPipe::new() {
                Ok(pipe) => Some(pipe),
                Err(e) => {
                    tracing::warn!(error = %e, "the guard's report pipe could not be made; this call runs fresh");
                    return None;
                }
            },
            None => None,
        };
        let checks_json = match (checks, &report) {
            (Some(c), Some(pipe)) => Some(pipe.checks_json(c)),
            _ => None,
        };
        let header = header(argv, &setup.cwd, checks_json.as_deref())?;
        if *lock(&self.env) != setup.env {
            *lock(&self.env) = setup.env.clone();
        }
        let spare = slot.spare.take().map(|mut s| {
            let exited = s.child.try_wait().is_some();
            (s, exited)
        });
        let taken = match spare {
            Some((mut s, false)) if s.env == setup.env => {
                match write_header(&mut s.child, &header, has_stdin).await {
                    Ok(()) => Some((s.child, report)),
                    Err(e) => {
                        tracing::warn!(error = %e, "the spare conda did not take its job; this call runs fresh");
                        None
                    }
                }
            }
            Some(_) => {
                tracing::info!(
                    "the spare conda is stale (it exited, or the environment changed); this call runs fresh"
                );
                None
            }
            None => None,
        };
        self.tend(&mut slot);
        taken
    }
}

/// The job header: its length in decimal, a newline, the JSON object
/// (`argv`, `cwd`, and `checks` when the job runs under the guard: the
/// checks' JSON with the report pipe's path). `None` when it exceeds
/// [`MAX_REQUEST`].
fn header(argv: &[String], cwd: &Path, checks_json: Option<&str>) -> Option<Vec<u8>> {
    let mut job = serde_json::json!({
        "argv": argv,
        "cwd": cwd.to_string_lossy(),
    });
    if let Some(text) = checks_json {
        job["checks"] = serde_json::from_str(text).ok()?;
    }
    let body = serde_json::to_vec(&job).ok()?;
    if body.len() > MAX_REQUEST {
        return None;
    }
    let mut out = format!("{}\n", body.len()).into_bytes();
    out.extend_from_slice(&body);
    Some(out)
}

async fn write_header(
    child: &mut contain::Child,
    header: &[u8],
    has_stdin: bool,
) -> std::io::Result<()> {
    let stdin = child
        .stdin_mut()
        .ok_or_else(|| std::io::Error::other("no stdin pipe"))?;
    stdin.write_all(header).await?;
    stdin.flush().await?;
    if !has_stdin {
        drop(child.take_stdin());
    }
    Ok(())
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_is_a_length_line_and_json() {
        let h = header(&["list".into(), "é 🐍".into()], Path::new(r"C:\x"), None).expect("fits");
        let text = String::from_utf8(h).expect("utf-8");
        let (len, body) = text.split_once('\n').expect("newline");
        assert_eq!(len.parse::<usize>().expect("digits"), body.len());
        let v: serde_json::Value = serde_json::from_str(body).expect("json");
        assert_eq!(v["argv"][1], "é 🐍");
        assert!(v.get("checks").is_none());
        assert!(header(&["x".repeat(MAX_REQUEST)], Path::new("C:\\"), None).is_none());
        let h = header(
            &["info".into()],
            Path::new(r"C:\x"),
            Some(r#"{"report_pipe": "\\\\.\\pipe\\p"}"#),
        )
        .expect("fits");
        let text = String::from_utf8(h).expect("utf-8");
        let v: serde_json::Value =
            serde_json::from_str(text.split_once('\n').expect("newline").1).expect("json");
        assert_eq!(v["checks"]["report_pipe"], r"\\.\pipe\p");
    }
}
