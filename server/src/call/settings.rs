//! The part of the startup settings (`crate::settings::Settings`) that
//! calls read, taken out once by startup: the pipeline sees nothing else
//! of the command line.

use crate::call::plan::{reads, restrict, typed};
use crate::policy::Policy;
use crate::schema::Profile;
use crate::tools::ToolMode;
use conda_mcp_shared::limits::Limits;

/// What calls read of the startup settings.
#[derive(Debug, Clone, PartialEq)]
pub struct CallSettings {
    /// `--allow-write`, `--allow-exec`, `--approve-writes`: the startup
    /// policy (narrowed per call by the principal's scopes).
    pub policy: Policy,
    /// The limits of every call (`--timeout`, `--output-limit-bytes`,
    /// `--stdin-limit-bytes`).
    pub limits: Limits,
    /// `--schema-profile`: `conda_describe` answers in it.
    pub profile: Profile,
    /// `--tool-mode`: an unknown tool's error names `conda_call` in the
    /// compact mode.
    pub mode: ToolMode,
    /// What the server decides for typed calls (confirmation by dry run,
    /// `conda_run`'s server options).
    pub typed: typed::TypedSettings,
    /// `--allow-base-writes`, `--protect-env`, `--allowed-channel`: what a
    /// change may not touch and a solve may not use.
    pub restrictions: restrict::Restrictions,
    /// `--worker-user`: the OS user conda runs as (the audit log's
    /// `os_user` for principals without one of their own).
    pub worker_user: Option<String>,
    /// Whose calls run as the server's worker (principals without an OS
    /// user of their own): the home their file options may name
    /// ([`reads`]).
    pub caller: reads::Caller,
}
