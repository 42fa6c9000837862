//! The audit log (`--audit-log FILE`, docs/operating.md "Audit log"): one
//! JSON line per attempted change, on stdio and HTTP alike. A change is a
//! call the policy classifies as a mutation or as exec (`conda run`, the
//! raw tool), whatever became of it: applied, failed, declined by the
//! person, refused by the policy, not run. Reads (dry runs included) write
//! nothing.
//!
//! A line holds the time (RFC 3339, UTC), the principal, the OS user conda
//! ran as, the tool, the command and its argv with credentials masked as
//! in the logs (`conda_mcp_shared::mask`), the target prefix, the plan
//! shown (packages linked and unlinked, an environment replaced), the
//! approval answer, the exit code, the outcome, and the prefix's conda
//! revision before and after (the `==> … <==` entries of its
//! `conda-meta/history`, numbered from 0 as `conda list --revisions` does)
//! with the command that undoes it (`conda install --prefix P --revision
//! N`). No token, header or environment value is ever in it: the record
//! has no field that could carry one.
//!
//! Each line is written with one `write` on a file opened for appending
//! (`O_APPEND`: concurrent lines never interleave) and synced to disk
//! (`fdatasync`) before the call's answer is sent. SIGHUP reopens the file
//! by its path, so it can be rotated (`logrotate`'s default rename, then
//! `kill -HUP`).

use std::fs::{File, OpenOptions};
use std::io::Write;
#[cfg(unix)]
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use serde::Serialize;
use serde_json::Value;

use crate::call::{NotRun, Outcome, Ran};
use crate::policy::{Classification, Refusal};

/// Why the audit log cannot be opened or written. Names the file, never
/// anything of a call.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The file cannot be opened for appending.
    #[error("cannot open the --audit-log file {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A line cannot be written or synced.
    #[error("cannot write the --audit-log file {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

/// The open audit log (shared by every call).
#[derive(Debug)]
pub struct AuditLog {
    path: PathBuf,
    file: Mutex<File>,
}

fn open_append(path: &Path) -> Result<File, AuditError> {
    let mut options = OpenOptions::new();
    options.create(true).append(true);
    #[cfg(unix)]
    options.mode(0o600);
    options.open(path).map_err(|source| AuditError::Open {
        path: path.to_owned(),
        source,
    })
}

/// What [`probe`] found: the server's start can open the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// It exists and opens for appending.
    Exists,
    /// It is missing; its folder exists and (Unix) this user may write
    /// there, so [`AuditLog::open`] will create it.
    WouldCreate,
}

/// Whether [`AuditLog::open`] would succeed on `path` for this user,
/// without creating it (`conda-mcp check`: a file made by whoever runs the
/// check could lock out the server's own user). An existing file is opened
/// for appending and closed.
///
/// Errors: [`AuditError::Open`], naming why (the file's open error, its
/// folder missing, or not writable).
pub fn probe(path: &Path) -> Result<Probe, AuditError> {
    let open_error = |source| AuditError::Open {
        path: path.to_owned(),
        source,
    };
    if path.exists() {
        OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(open_error)?;
        return Ok(Probe::Exists);
    }
    let absolute = std::path::absolute(path).map_err(open_error)?;
    let folder = absolute.parent().unwrap_or(Path::new("/"));
    if !folder.is_dir() {
        return Err(open_error(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            format!("its folder {} does not exist", folder.display()),
        )));
    }
    #[cfg(unix)]
    if nix::unistd::access(folder, nix::unistd::AccessFlags::W_OK).is_err() {
        return Err(open_error(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("this user may not write in its folder {}", folder.display()),
        )));
    }
    Ok(Probe::WouldCreate)
}

impl AuditLog {
    /// Opens (creates, mode 0600) `path` for appending.
    ///
    /// Errors: [`AuditError::Open`].
    pub fn open(path: &Path) -> Result<Self, AuditError> {
        Ok(AuditLog {
            path: path.to_owned(),
            file: Mutex::new(open_append(path)?),
        })
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opens the file again by its path (after a rotation moved it away);
    /// on failure the old file stays in use.
    ///
    /// Errors: [`AuditError::Open`].
    pub fn reopen(&self) -> Result<(), AuditError> {
        let fresh = open_append(&self.path)?;
        *self.file.lock().unwrap_or_else(PoisonError::into_inner) = fresh;
        Ok(())
    }

    /// Appends `record` as one line and syncs it to disk (blocking: call
    /// it from [`AuditLog::append`] or a blocking context).
    ///
    /// Errors: [`AuditError::Write`].
    pub fn append_blocking(&self, record: &Record) -> Result<(), AuditError> {
        let mut line = serde_json::to_vec(record).unwrap_or_default();
        line.push(b'\n');
        let file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        let write = |mut f: &File| {
            f.write_all(&line)?;
            f.sync_data()
        };
        write(&file).map_err(|source| AuditError::Write {
            path: self.path.clone(),
            source,
        })
    }

    /// [`AuditLog::append_blocking`] on tokio's blocking pool; a failure is
    /// logged (the change it records has happened: its answer is still
    /// sent).
    pub async fn append(self: &Arc<Self>, record: Record) {
        let log = Arc::clone(self);
        let written = tokio::task::spawn_blocking(move || log.append_blocking(&record)).await;
        match written {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!("{e}"),
            Err(e) => tracing::error!("the audit log write failed: {e}"),
        }
    }

    /// Reopens the file on every SIGHUP, for as long as the runtime runs
    /// (Unix; Windows has no SIGHUP: there a rotation needs a restart,
    /// docs/operating.md).
    ///
    /// Errors: the signal handler cannot be installed.
    #[cfg(not(unix))]
    pub fn reopen_on_sighup(self: &Arc<Self>) -> std::io::Result<()> {
        Ok(())
    }

    /// Reopens the file on every SIGHUP, for as long as the runtime runs
    /// (Unix; Windows has no SIGHUP: there a rotation needs a restart,
    /// docs/operating.md).
    ///
    /// Errors: the signal handler cannot be installed.
    #[cfg(unix)]
    pub fn reopen_on_sighup(self: &Arc<Self>) -> std::io::Result<()> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hup = signal(SignalKind::hangup())?;
        let log = Arc::clone(self);
        tokio::spawn(async move {
            while hup.recv().await.is_some() {
                match log.reopen() {
                    Ok(()) => {
                        tracing::info!(path = %log.path.display(), "audit log reopened (SIGHUP)")
                    }
                    Err(e) => tracing::error!("{e}; still writing to the file opened before"),
                }
            }
        });
        Ok(())
    }
}

/// What kind of change a call is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// A mutation (`--allow-write`).
    Mutation,
    /// An arbitrary program (`--allow-exec`: `conda run`, the raw tool).
    Exec,
}

impl Kind {
    /// The kind of a classified call; `None` for a read (no audit line).
    /// `raw`: the call came through `conda_execute`, which is exec by
    /// itself.
    pub fn of(c: &Classification, raw: bool) -> Option<Kind> {
        if c.requires_exec || raw {
            Some(Kind::Exec)
        } else if !c.read_only || c.requires_write {
            Some(Kind::Mutation)
        } else {
            None
        }
    }

    /// The kind of a refused call: exec when it lacks `--allow-exec` or the
    /// `conda:exec` scope, else a mutation.
    pub fn of_refusal(r: &Refusal) -> Kind {
        if r.missing.contains(&"--allow-exec")
            || r.missing_scopes.contains(&crate::policy::scopes::EXEC)
        {
            Kind::Exec
        } else {
            Kind::Mutation
        }
    }
}

/// How an attempted change ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    /// conda ran and exited 0.
    Applied,
    /// conda ran and failed (non-zero exit, a typed error).
    Failed,
    /// The person said no (or did not answer in time).
    Declined,
    /// The policy, a protected environment, the channel list, the guard
    /// of existing environments or a check inside conda refused it; nothing
    /// was changed.
    Refused,
    /// The call was cancelled (before or while it ran).
    Cancelled,
    /// The time limit ended it.
    TimedOut,
    /// It could not run (worker, lock, approval unavailable, invalid
    /// arguments).
    NotRun,
}

/// The plan the call showed or applied.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Shown {
    /// `name-version-build` of each package linked (conda's `actions.LINK`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub link: Vec<String>,
    /// `name-version-build` of each package unlinked (`actions.UNLINK`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unlink: Vec<String>,
    /// The prefix of an existing environment removed first
    /// (`replace_existing`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced: Option<String>,
    /// Files no package installed that were removed with the environment
    /// (`remove_unmanaged_files: true`), as the guard listed them inside
    /// conda: the prefix, how many, their bytes, the first paths.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub removed_files: Option<crate::call::shape::output::UnmanagedFiles>,
}

impl Shown {
    /// The packages of conda's `--json` plan document (`actions.LINK` and
    /// `actions.UNLINK`, conda's `conda/cli/install.py` `handle_txn`);
    /// empty for anything else.
    pub fn of_document(doc: Option<&Value>) -> Shown {
        let list = |key: &str| -> Vec<String> {
            let mut names: Vec<String> = doc
                .and_then(|d| d.get("actions"))
                .and_then(|a| a.get(key))
                .and_then(Value::as_array)
                .map(|l| l.iter().filter_map(dist_name).collect())
                .unwrap_or_default();
            names.sort();
            names
        };
        Shown {
            link: list("LINK"),
            unlink: list("UNLINK"),
            replaced: None,
            removed_files: None,
        }
    }

    fn is_empty(&self) -> bool {
        self.link.is_empty()
            && self.unlink.is_empty()
            && self.replaced.is_none()
            && self.removed_files.is_none()
    }
}

/// `dist_name`, else `name-version-build` of one package record.
fn dist_name(p: &Value) -> Option<String> {
    if let Some(d) = p.get("dist_name").and_then(Value::as_str) {
        return Some(mask(d));
    }
    let field = |k: &str| p.get(k).and_then(Value::as_str);
    let name = field("name")?;
    let build = field("build_string")
        .or_else(|| field("build"))
        .unwrap_or("");
    Some(mask(&format!(
        "{name}-{}-{build}",
        field("version").unwrap_or("")
    )))
}

fn mask(s: &str) -> String {
    conda_mcp_shared::mask::mask(s).into_owned()
}

/// One line of the audit log.
#[derive(Debug, Clone, Serialize)]
pub struct Record {
    /// When the call ended (RFC 3339, UTC).
    pub time: String,
    /// Who called (`local` on stdio).
    pub principal: String,
    /// The OS user conda ran (or would have run) as, when known.
    pub os_user: Option<String>,
    /// The tool called.
    pub tool: String,
    /// Mutation or exec.
    pub kind: Kind,
    /// The resolved command (`conda install`).
    pub command: String,
    /// The argv after `conda`, credentials masked; empty when the call was
    /// refused before it was compiled.
    pub argv: Vec<String>,
    /// The environment the call targets, as predicted before it ran.
    pub prefix: Option<String>,
    /// The plan shown or applied.
    #[serde(skip_serializing_if = "Shown::is_empty")]
    pub plan: Shown,
    /// With `--approve-writes`: the person's answer (`approve`, `decline`,
    /// `cancel`), or `unavailable` when the host could not ask.
    pub approval: Option<&'static str>,
    /// conda's exit status, when it ran to an end.
    pub exit_code: Option<i32>,
    /// How it ended.
    pub outcome: Ending,
    /// Why it was refused or not run (the refusal's text: names the
    /// missing startup option, never a submitted value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The prefix's conda revision before the call.
    pub revision_before: Option<u64>,
    /// The prefix's conda revision after the call.
    pub revision_after: Option<u64>,
    /// The command that undoes an applied change, when the revisions tell
    /// (`conda install --prefix P --revision N`, or `conda env remove
    /// --prefix P` for an environment the call created).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undo: Option<String>,
}

/// Now, RFC 3339 in UTC with seconds' fraction.
pub fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// The conda revision of `prefix`: the number of `==> DATE <==` entries in
/// its `conda-meta/history`, less one (conda's `History`, `conda list
/// --revisions` numbers them from 0); `None` when it has no history or no
/// entry.
pub fn revision(prefix: &Path) -> Option<u64> {
    let text = std::fs::read_to_string(prefix.join("conda-meta").join("history")).ok()?;
    let entries = text
        .lines()
        .filter(|l| {
            let l = l.trim();
            l.starts_with("==>") && l.ends_with("<==")
        })
        .count() as u64;
    entries.checked_sub(1)
}

/// The command that undoes a change of `prefix` from revision `before`
/// to `after`; `existed`: the prefix held an environment (a `conda-meta/`
/// folder) before. `None` when the revisions do not show one (nothing
/// changed, or an environment without revisions was changed).
pub fn undo(
    prefix: &str,
    existed: bool,
    before: Option<u64>,
    after: Option<u64>,
) -> Option<String> {
    match (existed, before, after) {
        (_, Some(b), Some(a)) if a > b => {
            Some(format!("conda install --prefix {prefix} --revision {b}"))
        }
        (false, None, Some(_)) => Some(format!("conda env remove --prefix {prefix}")),
        _ => None,
    }
}

/// What a call's audit line knows before its outcome.
#[derive(Debug, Clone)]
pub struct Draft {
    principal: String,
    os_user: Option<String>,
    tool: String,
    kind: Kind,
    command: String,
    argv: Vec<String>,
    prefix: Option<PathBuf>,
    existed: bool,
    revision_before: Option<u64>,
}

impl Draft {
    /// The draft of a planned change: `argv` and `classification` are the
    /// plan's, `prefix` the target predicted for it; reads the prefix's
    /// revision now.
    pub fn planned(
        who: (&str, Option<&str>),
        tool: &str,
        kind: Kind,
        classification: &Classification,
        argv: &[String],
        prefix: Option<PathBuf>,
    ) -> Draft {
        let revision_before = prefix.as_deref().and_then(revision);
        let existed = prefix
            .as_deref()
            .is_some_and(|p| p.join("conda-meta").is_dir());
        Draft {
            principal: who.0.to_owned(),
            os_user: who.1.map(str::to_owned),
            tool: tool.to_owned(),
            kind,
            command: classification.command.join(" "),
            argv: argv.iter().map(|a| mask(a)).collect(),
            prefix,
            existed,
            revision_before,
        }
    }

    /// The line of a change refused before it was planned.
    pub fn refused(who: (&str, Option<&str>), tool: &str, refusal: &Refusal) -> Record {
        Record {
            time: now(),
            principal: who.0.to_owned(),
            os_user: who.1.map(str::to_owned),
            tool: tool.to_owned(),
            kind: Kind::of_refusal(refusal),
            command: refusal.command.clone(),
            argv: Vec::new(),
            prefix: None,
            plan: Shown::default(),
            approval: None,
            exit_code: None,
            outcome: Ending::Refused,
            reason: Some(refusal.to_string()),
            revision_before: None,
            revision_after: None,
            undo: None,
        }
    }

    /// The line of this change once it ended with `outcome`; `shown` is the
    /// plan the person was shown (`--approve-writes`), `answer` their
    /// answer.
    pub fn finish(
        self,
        outcome: &Outcome,
        shown: Option<Shown>,
        answer: Option<ApprovalAnswer>,
    ) -> Record {
        let mut exit_code = None;
        let mut applied_plan = None;
        let mut reason = None;
        let ending = match outcome {
            o if o.cancelled() => Ending::Cancelled,
            Outcome::Ran {
                ran: Ran::Execution(out),
                ..
            } => {
                exit_code = out.execution.exit_code;
                let mut plan = Shown::of_document(out.parsed_json.as_ref());
                plan.replaced = out
                    .replaced_environment
                    .as_ref()
                    .filter(|r| r.applied)
                    .map(|r| r.prefix.clone());
                plan.removed_files = out.unmanaged_files.clone().filter(|u| u.removed);
                applied_plan = Some(plan);
                if out.execution.timed_out {
                    Ending::TimedOut
                } else if out.is_error() {
                    Ending::Failed
                } else {
                    Ending::Applied
                }
            }
            Outcome::Ran { .. } | Outcome::Answered { .. } => Ending::Applied,
            Outcome::NotRun {
                reason: NotRun::Declined { .. },
                ..
            } => Ending::Declined,
            Outcome::Refused(r) => {
                reason = Some(r.to_string());
                Ending::Refused
            }
            Outcome::Restricted(r) => {
                reason = Some(r.to_string());
                Ending::Refused
            }
            Outcome::EnvironmentExists(_) | Outcome::DryRunNotHonoured { .. } => {
                reason = Some("refused before it ran".to_owned());
                Ending::Refused
            }
            // Stopped inside conda before its command acted; the error's
            // sentence is the server's (masked like every log line).
            Outcome::Stopped { error, .. } => {
                reason = Some(mask(&error.message));
                Ending::Refused
            }
            Outcome::NotRun { reason: why, .. } => {
                reason = Some(why.to_string());
                Ending::NotRun
            }
            Outcome::InvalidArguments { .. } => Ending::NotRun,
        };
        let prefix = self.prefix.as_ref().map(|p| p.display().to_string());
        let revision_after = self.prefix.as_deref().and_then(revision);
        let undo = match (&prefix, ending) {
            (Some(p), Ending::Applied) => {
                undo(p, self.existed, self.revision_before, revision_after)
            }
            _ => None,
        };
        // The plan applied (conda's own document) when there is one, else
        // the one shown.
        let plan = match (applied_plan, shown) {
            (Some(a), _) if !a.is_empty() => a,
            (_, Some(s)) => s,
            (a, None) => a.unwrap_or_default(),
        };
        Record {
            time: now(),
            principal: self.principal,
            os_user: self.os_user,
            tool: self.tool,
            kind: self.kind,
            command: self.command,
            argv: self.argv,
            prefix,
            plan,
            approval: answer.map(ApprovalAnswer::word),
            exit_code,
            outcome: ending,
            reason,
            revision_before: self.revision_before,
            revision_after,
            undo,
        }
    }
}

/// The person's answer to an approval question, as the audit log (and the
/// metrics) name it.
pub type ApprovalAnswer = crate::call::events::Answered;

/// The audit log's subscriber to one call's events
/// ([`crate::call::events`]): the draft of a change once it is planned
/// (or refused by the restrictions), the plan the person is shown and
/// their first answer, and the line written when the call ends (synced
/// before the answer is sent). A call that is not a change writes nothing,
/// unless the policy refused it (a read refused for lacking `conda:read` is
/// not a change).
#[derive(Debug)]
pub struct Recorder {
    log: Arc<AuditLog>,
    principal: String,
    /// The principal's own OS user, else `--worker-user`; else this
    /// process's user, looked up only for a line that is written.
    os_user: Option<String>,
    tool: String,
    seen: Mutex<Seen>,
}

/// What a [`Recorder`] learned of its call so far.
#[derive(Debug, Default)]
struct Seen {
    draft: Option<Draft>,
    shown: Option<Shown>,
    answer: Option<ApprovalAnswer>,
}

impl Recorder {
    /// The recorder of a call of `tool` by `principal` into `log`;
    /// `worker_user` is `--worker-user` (conda's user for principals
    /// without one of their own).
    pub fn new(
        log: Arc<AuditLog>,
        principal: &crate::principal::Principal,
        worker_user: Option<&str>,
        tool: &str,
    ) -> Self {
        Recorder {
            log,
            principal: principal.name.clone(),
            os_user: principal
                .os_user
                .clone()
                .or_else(|| worker_user.map(str::to_owned)),
            tool: tool.to_owned(),
            seen: Mutex::new(Seen::default()),
        }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.seen.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The OS user conda runs as, for a line.
    fn os_user(&self) -> Option<String> {
        self.os_user.clone().or_else(own_user)
    }

    /// The draft of a planned conda call that is a change.
    fn draft(&self, planned: &crate::call::events::Planned<'_>) -> Option<Draft> {
        let c = planned.plan.classification.as_ref()?;
        let kind = Kind::of(c, planned.raw)?;
        let os_user = self.os_user();
        Some(Draft::planned(
            (&self.principal, os_user.as_deref()),
            &self.tool,
            kind,
            c,
            &planned.plan.argv,
            planned.facts.and_then(|f| f.prefix(planned.dirs)),
        ))
    }
}

impl crate::call::events::Sink for Recorder {
    fn event(&self, event: &crate::call::events::Event<'_>) {
        use crate::call::events::Event;
        match event {
            Event::Planned(p) | Event::Refused(p) => {
                let draft = self.draft(p);
                self.seen().draft = draft;
            }
            Event::Asked { document, replaced } => {
                let mut shown = Shown::of_document(*document);
                shown.replaced = replaced.map(str::to_owned);
                self.seen().shown = Some(shown);
            }
            Event::Answered(answer) => {
                self.seen().answer.get_or_insert(*answer);
            }
            Event::Progress(_) => {}
        }
    }

    fn finished<'a>(&'a self, outcome: &'a Outcome) -> crate::call::events::Finishing<'a> {
        Box::pin(async move {
            let Seen {
                draft,
                shown,
                answer,
            } = std::mem::take(&mut *self.seen());
            let record = match (draft, outcome) {
                (Some(draft), outcome) => draft.finish(outcome, shown, answer),
                // Refused while planning: a change the policy does not
                // allow (a read refused for lacking conda:read is not a
                // change).
                (None, Outcome::Refused(r))
                    if r.missing_scopes != [crate::policy::scopes::READ] =>
                {
                    let os_user = self.os_user();
                    Draft::refused((&self.principal, os_user.as_deref()), &self.tool, r)
                }
                _ => return,
            };
            self.log.append(record).await;
        })
    }
}

/// The name of the user this process runs as (conda's user without
/// `--worker-user`).
#[cfg(unix)]
fn own_user() -> Option<String> {
    nix::unistd::User::from_uid(nix::unistd::Uid::effective())
        .ok()
        .flatten()
        .map(|u| u.name)
}

/// The name of the user this process runs as (Windows: `USERNAME`, which
/// the logon sets).
#[cfg(not(unix))]
fn own_user() -> Option<String> {
    std::env::var("USERNAME").ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn revisions_count_history_entries_from_zero() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(revision(dir.path()), None);
        std::fs::create_dir_all(dir.path().join("conda-meta")).expect("meta");
        let history = dir.path().join("conda-meta").join("history");
        std::fs::write(&history, "").expect("history");
        assert_eq!(revision(dir.path()), None);
        std::fs::write(
            &history,
            "==> 2026-01-01 10:00:00 <==\n# cmd: conda create -n x python\n+python-3.12-h0\n\
             ==> 2026-01-02 10:00:00 <==\n# cmd: conda install numpy\n+numpy-2.0-h0\n",
        )
        .expect("history");
        assert_eq!(revision(dir.path()), Some(1));
        assert_eq!(
            undo("/e", true, Some(0), Some(1)).as_deref(),
            Some("conda install --prefix /e --revision 0")
        );
        assert_eq!(
            undo("/e", false, None, Some(0)).as_deref(),
            Some("conda env remove --prefix /e")
        );
        // An environment without revisions before: no revision to go back to.
        assert_eq!(undo("/e", true, None, Some(0)), None);
        assert_eq!(undo("/e", true, Some(1), Some(1)), None);
    }

    // Unix: Windows renames no open file, and has no file modes.
    #[cfg(unix)]
    #[test]
    fn lines_are_appended_synced_and_survive_a_rotation() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.log");
        let log = AuditLog::open(&path).expect("open");
        let refusal = Refusal {
            command: "conda install".into(),
            triggers: vec![],
            note: None,
            missing: vec!["--allow-write"],
            missing_scopes: vec![],
        };
        let line = Draft::refused(("alice", None), "conda_install", &refusal);
        log.append_blocking(&line).expect("append");
        std::fs::rename(&path, dir.path().join("audit.log.1")).expect("rotate");
        log.append_blocking(&line)
            .expect("append to the moved file");
        log.reopen().expect("reopen");
        log.append_blocking(&line).expect("append to the new file");
        let old = std::fs::read_to_string(dir.path().join("audit.log.1")).expect("old");
        let new = std::fs::read_to_string(&path).expect("new");
        assert_eq!(old.lines().count(), 2);
        assert_eq!(new.lines().count(), 1);
        let v: Value = serde_json::from_str(new.trim()).expect("one JSON line");
        assert_eq!(v["outcome"], "refused");
        assert_eq!(v["kind"], "mutation");
        assert_eq!(v["principal"], "alice");
        assert!(
            v["reason"]
                .as_str()
                .expect("reason")
                .contains("--allow-write")
        );
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    #[test]
    fn a_removal_lists_the_files_no_package_installed_it_took() {
        let catalog = crate::catalog::build(&crate::dump::recorded_conda()).expect("catalog");
        let argv: Vec<String> = ["remove", "-n", "data", "--all", "--yes", "--json"]
            .map(str::to_owned)
            .to_vec();
        let class = crate::policy::classify(&catalog, &argv);
        let draft = Draft::planned(
            ("alice", Some("alice")),
            "conda_remove",
            Kind::Mutation,
            &class,
            &argv,
            None,
        );
        let mut out = crate::call::CallOutput::new(conda_mcp_shared::ExecutionResult {
            exit_code: Some(0),
            duration_ms: 1,
            ..conda_mcp_shared::ExecutionResult::nothing_ran()
        });
        let files = |removed| crate::call::shape::output::UnmanagedFiles {
            prefix: "/e/data".into(),
            count: 1,
            bytes: 7,
            first: vec!["notes/mine.txt".into()],
            removed,
        };
        out.unmanaged_files = Some(files(true));
        let ran = |out: crate::call::CallOutput| Outcome::Ran {
            what: "conda remove".into(),
            ran: Ran::Execution(Box::new(out)),
        };
        let line = draft.clone().finish(&ran(out.clone()), None, None);
        assert_eq!(line.outcome, Ending::Applied);
        assert_eq!(line.plan.removed_files, Some(files(true)));
        let v = serde_json::to_value(&line).expect("JSON");
        assert_eq!(v["plan"]["removed_files"]["first"][0], "notes/mine.txt");
        // A preview's list (nothing removed) is not a removal.
        out.unmanaged_files = Some(files(false));
        let line = draft.finish(&ran(out), None, None);
        assert_eq!(line.plan.removed_files, None);
    }

    #[test]
    fn plans_read_link_and_unlink_with_credentials_masked() {
        let doc = serde_json::json!({"actions": {
            "LINK": [{"name": "numpy", "version": "2.0", "build_string": "h1"},
                     {"dist_name": "a-1-0"}],
            "UNLINK": [{"dist_name": "numpy-1.26-h0"}]}});
        let s = Shown::of_document(Some(&doc));
        assert_eq!(s.link, ["a-1-0", "numpy-2.0-h1"]);
        assert_eq!(s.unlink, ["numpy-1.26-h0"]);
        assert!(Shown::of_document(None).is_empty());
    }
}
