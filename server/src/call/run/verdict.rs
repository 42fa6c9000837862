//! What the checks inside conda's process decided ([`crate::call::plan::checks`]),
//! read from the worker's result: a refusal ended conda before its command
//! acted, and becomes the typed outcome (never a success; the operator's
//! restrictions the same [`Outcome::Restricted`] the server's prediction
//! gives, [`crate::call::plan::restrict`]); a call whose checks enforce something but
//! could not run is not taken as verified.

use conda_mcp_shared::ExecutionResult;
use conda_mcp_shared::guard::{GuardOutcome, GuardRefusal, GuardReport, Setting, SettingSource};

use crate::discovery::config::ForcedKey;

use crate::call::plan::Plan;
use crate::call::plan::restrict::{ChannelSource, Restriction};
use crate::call::shape::error::{ErrorCode, ToolError};
use crate::call::shape::outcome::Outcome;
use crate::call::shape::output::UnmanagedFiles;

/// The guard's report of `result`, when there is one.
pub fn report(result: &ExecutionResult) -> Option<GuardReport> {
    match &result.guard {
        Some(GuardOutcome::Report(r)) => Some((**r).clone()),
        _ => None,
    }
}

/// Where a setting came from, for messages: `the file …`, `the
/// environment variable …`, `the command line`.
pub fn place(setting: &Setting) -> String {
    match &setting.source {
        Some(SettingSource::File(f)) => format!("the file {f}"),
        Some(SettingSource::Variable(v)) => format!("the environment variable {v}"),
        Some(SettingSource::CommandLine) => "the command line".to_owned(),
        None => "no configuration source conda reports".to_owned(),
    }
}

/// The outcome of a call the guard stopped, or whose enforcing checks
/// could not run; `None` when the result stands.
pub fn stopped(plan: &Plan, result: &ExecutionResult) -> Option<Outcome> {
    let checks = plan.checks.as_ref()?;
    let what = plan.what.clone();
    let stop = |error: ToolError| {
        Some(Outcome::Stopped {
            what: what.clone(),
            error: Box::new(error),
        })
    };
    let cannot = |reason: String| {
        let text = format!(
            "{what} was stopped: the checks this call rests on could not run inside conda's process ({reason}); nothing was verified, so it is not reported as done"
        );
        ToolError::new(ErrorCode::CheckFailed, text).with("reason", reason)
    };
    match &result.guard {
        Some(GuardOutcome::Report(r)) => r.refusal.as_ref().map(|f| refused(plan, f)),
        Some(GuardOutcome::Malformed) => stop(cannot("its report could not be read".into())),
        // A worker that runs no guard (Windows): the server's prediction
        // and postconditions stand alone (docs/writes.md).
        Some(GuardOutcome::Unavailable) => None,
        _ if checks.enforces()
            && result.exit_code == Some(0)
            && !result.timed_out
            && !result.cancelled =>
        {
            stop(cannot(
                "conda exited without reaching its command, so the checks never ran".into(),
            ))
        }
        _ => None,
    }
}

/// The refusal `unmanaged_files_present` of `what` for `files`.
pub fn unmanaged_refusal(what: String, files: &UnmanagedFiles) -> Outcome {
    let error = ToolError::new(
        ErrorCode::UnmanagedFilesPresent,
        format!(
            "{what} was stopped before it acted: the environment at {} holds {}, and removing it deletes everything under its prefix; nothing was changed. Move what should be kept, or repeat the call with remove_unmanaged_files: true to delete them too",
            files.prefix,
            files.phrase()
        ),
    )
    .with("prefix", files.prefix.clone())
    .with("count", files.count)
    .with("bytes", files.bytes)
    .with("first", files.first.clone());
    Outcome::Stopped {
        what,
        error: Box::new(error),
    }
}

fn refused(plan: &Plan, refusal: &GuardRefusal) -> Outcome {
    let what = plan.what.clone();
    let stop = |error: ToolError| Outcome::Stopped {
        what: what.clone(),
        error: Box::new(error),
    };
    match refusal {
        GuardRefusal::DryRunNotHonoured { setting } => match &setting.source {
            Some(SettingSource::File(f)) => Outcome::DryRunNotHonoured {
                what,
                forced: ForcedKey {
                    key: setting.key.clone(),
                    source: f.clone(),
                    value: Some(false),
                },
            },
            Some(SettingSource::Variable(_)) => Outcome::DryRunNotHonoured {
                what,
                forced: ForcedKey {
                    key: setting.key.clone(),
                    source: crate::discovery::config::ENV_SOURCE.to_owned(),
                    value: Some(false),
                },
            },
            _ => stop(
                ToolError::new(
                    ErrorCode::DryRunNotHonoured,
                    format!(
                        "{what} was stopped before it acted: conda's resolved dry_run is false (set by {}), so conda would not have honoured --dry-run; nothing was changed",
                        place(setting)
                    ),
                )
                .with("key", setting.key.clone()),
            ),
        },
        GuardRefusal::EnvironmentExists { prefix, packages } => {
            Outcome::EnvironmentExists(crate::target::Environment {
                prefix: prefix.into(),
                packages: usize::try_from(*packages).unwrap_or(usize::MAX),
                root: false,
            })
        }
        GuardRefusal::EnvironmentNotFound { prefix } => stop(
            ToolError::new(
                ErrorCode::EnvironmentNotFound,
                format!(
                    "{what}: conda resolved the environment to {prefix}, and there is no environment there (no conda-meta); check the name or prefix (conda_env_list lists them)"
                ),
            )
            .with("prefix", prefix.clone()),
        ),
        GuardRefusal::TargetDiffers {
            predicted,
            resolved,
        } => stop(
            ToolError::new(
                ErrorCode::PlanChanged,
                format!(
                    "{what} was stopped before it acted: it was to replace the environment at {predicted}, but conda, with the configuration of the user it runs as, resolved {resolved}; nothing was changed. Call again with a --prefix to say which one"
                ),
            )
            .with("predicted", predicted.clone())
            .with("prefix", resolved.clone()),
        ),
        GuardRefusal::UnmanagedFilesPresent { prefix, files } => {
            unmanaged_refusal(what, &UnmanagedFiles::of(prefix, files))
        }
        GuardRefusal::ProtectedEnvironment { prefix, root } => {
            Outcome::Restricted(Restriction::protected(what, prefix.clone(), *root))
        }
        GuardRefusal::ChannelNotAllowed { channel, source } => {
            Outcome::Restricted(Restriction::ChannelNotAllowed {
                what,
                channel: channel.clone(),
                origin: if source == "call" {
                    ChannelSource::Call
                } else {
                    ChannelSource::Configuration
                },
            })
        }
        GuardRefusal::Unsupported { reason } => stop(
            ToolError::new(
                ErrorCode::CheckFailed,
                format!("{what} was stopped: the checks this call rests on cannot run in this conda ({reason}); nothing was changed"),
            )
            .with("reason", reason.clone()),
        ),
        GuardRefusal::CheckFailed { error } => stop(
            ToolError::new(
                ErrorCode::CheckFailed,
                format!("{what} was stopped before it acted: conda could not resolve what the checks need ({error}); nothing was changed"),
            )
            .with("reason", error.clone()),
        ),
    }
}
