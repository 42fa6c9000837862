//! The in-process checks: what conda's own process verifies after conda has
//! parsed its arguments and read its configuration, as the user it runs as,
//! and before the command acts (docs/writes.md "Two layers").
//!
//! The server predicts from outside (its own user, its startup cache); a
//! prediction can be wrong wherever conda's view differs: another user's
//! `~/.condarc` or `~/.conda/envs`, a variable, a file written since
//! startup. So every guarantee that rests on conda's view travels with the
//! job as [`InProcessChecks`] and is enforced by the worker's guard inside
//! the conda process (`worker/src/guard/guard.py`): it wraps conda's
//! `conda.cli.conda_argparse.do_call`, the point where conda's entry
//! (`conda.cli.main.main_subshell`) hands the parsed arguments to the
//! command once `context.__init__(argparse_args=args)` has run. The guard
//! answers with one [`GuardReport`] on a pipe of its own (never on stdout or
//! stderr), and a [`GuardRefusal`] ends conda there, before the command
//! acts, with [`REFUSED_STATUS`].
//!
//! The JSON the guard writes is the serde form of [`GuardReport`]
//! (externally tagged enums, snake_case), and the checks reach it as the
//! serde JSON of [`InProcessChecks`]; bincode carries both between server
//! and worker.

use serde::{Deserialize, Serialize};

/// The exit status of a conda process the guard ended before the command
/// acted (the report says why; the server never reads this number alone).
pub const REFUSED_STATUS: i32 = 86;

/// At most this many paths are listed in [`UnmanagedFiles::first`].
pub const UNMANAGED_LISTED: usize = 10;

/// Largest report the worker reads from the guard's pipe (bytes); a longer
/// one is discarded as malformed.
pub const MAX_REPORT_BYTES: usize = 64 * 1024;

/// What the guard checks in conda's process for one job. The default
/// checks nothing and only reports (conda's `dry_run` and `json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InProcessChecks {
    /// The call is read-only only as a dry run: conda's resolved
    /// `dry_run` must be true, else [`GuardRefusal::DryRunNotHonoured`].
    pub require_dry_run: bool,
    /// Which prefix the command works on, resolved by conda's own functions
    /// (reported as [`GuardReport::prefix`]); `None`: none is resolved.
    pub target: Option<TargetRule>,
    /// What must hold of that prefix (needs `target`).
    pub expect: Option<Expectation>,
    /// The prefix the server predicted: when set and conda resolved
    /// another one, [`GuardRefusal::TargetDiffers`] (for an approved or
    /// explicitly allowed replacement, which must hit what was shown).
    pub predicted_prefix: Option<String>,
    /// Files under the prefix that no `conda-meta/*.json` record lists
    /// (needs `target`).
    pub unmanaged: UnmanagedRule,
    /// Environments the command must not change (the operator's
    /// `--allow-base-writes`, `--protect-env`; docs/safety.md): the prefix
    /// the command changes, as conda resolves it (the `ArgumentsOrFile`
    /// rule of `target` when it has one, else `--prefix`, `--name` or
    /// conda's default prefix; for `rename` its destination too), is
    /// compared with each of these resolved by conda (symbolic links
    /// resolved on both sides), else [`GuardRefusal::ProtectedEnvironment`].
    /// Empty: none is protected, nothing is resolved.
    #[serde(default)]
    pub protected: Vec<Protected>,
    /// The channels a solve may use, canonical ([`canonical_channel`]):
    /// each of conda's `context.channels` for this call (its `.condarc`
    /// files and variables, `-c`, `--use-local`; without the configured
    /// ones under `--override-channels`) must be among them, else
    /// [`GuardRefusal::ChannelNotAllowed`]. `None`: any channel.
    #[serde(default)]
    pub allowed_channels: Option<Vec<String>>,
}

/// An environment the guard keeps a command from changing, resolved inside
/// conda's process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Protected {
    /// conda's root prefix (`context.root_prefix`, `base`).
    Root,
    /// An environment name, resolved as conda resolves `--name` (its
    /// envs directories for the user it runs as).
    Name(String),
    /// An absolute prefix.
    Prefix(String),
}

/// conda's default `channel_alias`: a channel URL under it is the channel
/// of the name that follows.
pub const CHANNEL_ALIAS: &str = "https://conda.anaconda.org/";

/// A channel as the allowed list compares it: credentials masked
/// ([`crate::mask::mask`]), no trailing `/`, and a URL under
/// [`CHANNEL_ALIAS`] replaced by its name (`conda-forge`; an anaconda.org
/// `/t/TOKEN/` dropped). The guard computes the same form in Python
/// (`_canonical` in `worker/src/guard/guard.py`).
pub fn canonical_channel(channel: &str) -> String {
    let masked = crate::mask::mask(channel.trim());
    let mut c = masked.trim_end_matches('/').to_owned();
    if let Some(rest) = c.strip_prefix(CHANNEL_ALIAS) {
        // `https://conda.anaconda.org/t/<TOKEN>/conda-forge`.
        let rest = match rest.strip_prefix("t/") {
            Some(after) => after.split_once('/').map_or("", |(_, name)| name),
            None => rest,
        };
        c = rest.to_owned();
    }
    c
}

impl InProcessChecks {
    /// Whether a missing report leaves a guarantee unchecked: any check
    /// beyond reporting. The server turns "no report" into a refusal then.
    pub fn enforces(&self) -> bool {
        self.require_dry_run
            || self.expect.is_some()
            || self.predicted_prefix.is_some()
            || self.unmanaged == UnmanagedRule::Refuse
            || !self.protected.is_empty()
            || self.allowed_channels.is_some()
    }
}

/// How the guard finds the prefix a command works on (conda's own rules,
/// with conda's own functions: `conda.base.context.determine_target_prefix`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TargetRule {
    /// `--prefix`, else `--name` through conda's envs directories, else
    /// conda's default prefix (`context.target_prefix`).
    Arguments,
    /// As `Arguments`; when neither `--name` nor `--prefix` was given, the
    /// one environment file's `name:` (else `prefix:`), read by conda's
    /// `conda.cli.common.get_name_prefix_from_env_file` when conda has it,
    /// else these values, which the server read from the file.
    ArgumentsOrFile {
        /// The file's `name:` as the server read it.
        name: Option<String>,
        /// The file's `prefix:` as the server read it.
        prefix: Option<String>,
    },
    /// `rename`: its positional `destination` (a path when it contains a
    /// path separator, else a name through conda's envs directories).
    RenameDestination,
}

/// What must hold of the resolved prefix before the command acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expectation {
    /// No environment there (no `conda-meta/`): a create must not replace
    /// one, else [`GuardRefusal::EnvironmentExists`].
    Absent,
    /// An environment there: a read about it must not answer for nothing,
    /// else [`GuardRefusal::EnvironmentNotFound`].
    Present,
}

/// What the guard does about files no package record lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnmanagedRule {
    /// Not looked at.
    #[default]
    Off,
    /// Listed in the report ([`GuardReport::unmanaged`]).
    Report,
    /// Listed, and any such file refuses the call
    /// ([`GuardRefusal::UnmanagedFilesPresent`]).
    Refuse,
}

/// Where conda's value of a setting came from (the source that decided it
/// in `context.raw_data`: the last one, or the first marked final).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SettingSource {
    /// A configuration file (its path).
    File(String),
    /// An environment variable (its name, e.g. `CONDA_DRY_RUN`).
    Variable(String),
    /// The command line.
    CommandLine,
}

/// One setting conda decided, and where from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Setting {
    /// The key (`dry_run`, `json`).
    pub key: String,
    /// Where its value came from; `None` when no source set it.
    pub source: Option<SettingSource>,
    /// Whether that source marks it final (`#!final`, `!important`).
    #[serde(rename = "final")]
    pub final_: bool,
}

/// Files under a prefix that no `conda-meta/*.json` record lists (its
/// `files`), `conda-meta/` itself left out; a `__pycache__/*.pyc` of a
/// listed `.py` counts as listed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnmanagedFiles {
    /// How many (files and symbolic links).
    pub count: u64,
    /// Their sizes summed (bytes, `lstat`).
    pub bytes: u64,
    /// The first [`UNMANAGED_LISTED`] of them in byte order, relative to
    /// the prefix, `/`-separated.
    pub first: Vec<String>,
}

/// Why the guard ended conda before the command acted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GuardRefusal {
    /// The call rests on `--dry-run` and conda's resolved `dry_run` is
    /// false (the setting says which file or variable decided it).
    DryRunNotHonoured {
        /// conda's `dry_run` and its source.
        setting: Setting,
    },
    /// An environment is at the prefix conda resolved.
    EnvironmentExists {
        /// That prefix.
        prefix: String,
        /// Its `conda-meta/*.json` count.
        packages: u64,
    },
    /// No environment is at the prefix conda resolved.
    EnvironmentNotFound {
        /// That prefix.
        prefix: String,
    },
    /// conda resolved another prefix than the one the server predicted
    /// (and showed).
    TargetDiffers {
        /// The server's prediction.
        predicted: String,
        /// conda's.
        resolved: String,
    },
    /// Files no package installed are under the prefix.
    UnmanagedFilesPresent {
        /// The prefix.
        prefix: String,
        /// The files.
        files: UnmanagedFiles,
    },
    /// The command would change a protected environment (as conda
    /// resolved its prefix).
    ProtectedEnvironment {
        /// The prefix conda resolved for the command.
        prefix: String,
        /// Whether it is conda's root prefix (`base`), which
        /// `--allow-base-writes` allows; else a `--protect-env`.
        root: bool,
    },
    /// One of conda's channels for this call is not among the allowed ones.
    ChannelNotAllowed {
        /// The channel, canonical ([`canonical_channel`]).
        channel: String,
        /// Where it came from: `call` (`-c`, `--use-local`) or
        /// `configuration` (conda's `channels`).
        source: String,
    },
    /// This conda has no point where the guard can run (its entry does not
    /// call `conda.cli.conda_argparse.do_call`), or conda could not be
    /// imported: the checks cannot be enforced.
    Unsupported {
        /// What is missing.
        reason: String,
    },
    /// Resolving what a check needs raised an exception in conda's code
    /// (its type and message).
    CheckFailed {
        /// `Type: message`.
        error: String,
    },
}

/// What the guard reports of one conda process: written once, before the
/// command acts. A field the guard leaves out takes its default.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct GuardReport {
    /// The prefix conda resolved by the job's [`TargetRule`].
    pub prefix: Option<String>,
    /// Whether an environment (`conda-meta/`) is at `prefix`.
    pub prefix_is_environment: bool,
    /// conda's resolved `dry_run`.
    pub dry_run: bool,
    /// Set when `--json` was given and conda's resolved `json` is false:
    /// where that came from (conda prints text then).
    pub json_forced_off: Option<Setting>,
    /// The files no package installed, when the checks asked for them and
    /// `prefix` is an environment.
    pub unmanaged: Option<UnmanagedFiles>,
    /// Set when the guard ended conda before the command acted.
    pub refusal: Option<GuardRefusal>,
}

/// What the worker learned from the guard of one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum GuardOutcome {
    /// The guard's report.
    Report(Box<GuardReport>),
    /// The process ended without a report: conda never reached the point
    /// where its command starts (a usage error, `--help`, `--version`,
    /// `conda shell.*`) or died before it.
    NoReport,
    /// What the guard wrote is not a report (more than
    /// [`MAX_REPORT_BYTES`], or not its JSON).
    Malformed,
    /// The guard could not run for this job and its checks only report: a
    /// Windows conda run as a plain `.exe`, not through an installation's
    /// `python.exe`. The job ran as it is, and only the server's prediction
    /// and postconditions stand (docs/writes.md).
    Unavailable,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The JSON forms the Python guard reads and writes.
    #[test]
    fn json_forms_are_the_ones_the_guard_uses() {
        let checks = InProcessChecks {
            require_dry_run: true,
            target: Some(TargetRule::ArgumentsOrFile {
                name: Some("x".into()),
                prefix: None,
            }),
            expect: Some(Expectation::Absent),
            predicted_prefix: None,
            unmanaged: UnmanagedRule::Refuse,
            protected: vec![
                Protected::Root,
                Protected::Name("lab".into()),
                Protected::Prefix("/p".into()),
            ],
            allowed_channels: Some(vec!["conda-forge".into()]),
        };
        assert_eq!(
            serde_json::to_value(&checks).expect("JSON"),
            serde_json::json!({
                "require_dry_run": true,
                "target": {"arguments_or_file": {"name": "x", "prefix": null}},
                "expect": "absent",
                "predicted_prefix": null,
                "unmanaged": "refuse",
                "protected": ["root", {"name": "lab"}, {"prefix": "/p"}],
                "allowed_channels": ["conda-forge"]
            })
        );
        // A job from before these fields reads as none protected, any channel.
        let old: InProcessChecks =
            serde_json::from_value(serde_json::json!({"require_dry_run": false, "target": null,
                "expect": null, "predicted_prefix": null, "unmanaged": "off"}))
            .expect("checks without the restriction fields");
        assert_eq!(old, InProcessChecks::default());
        let refusal: GuardRefusal = serde_json::from_value(serde_json::json!(
            {"channel_not_allowed": {"channel": "bioconda", "source": "configuration"}}))
        .expect("the guard's channel refusal");
        assert_eq!(
            refusal,
            GuardRefusal::ChannelNotAllowed {
                channel: "bioconda".into(),
                source: "configuration".into()
            }
        );
        let refusal: GuardRefusal = serde_json::from_value(serde_json::json!(
            {"protected_environment": {"prefix": "/r", "root": true}}))
        .expect("the guard's protection refusal");
        assert!(matches!(
            refusal,
            GuardRefusal::ProtectedEnvironment { root: true, .. }
        ));
        assert_eq!(
            serde_json::to_value(TargetRule::RenameDestination).expect("JSON"),
            serde_json::json!("rename_destination")
        );
        let report: GuardReport = serde_json::from_value(serde_json::json!({
            "prefix": "/p",
            "prefix_is_environment": true,
            "dry_run": false,
            "json_forced_off": null,
            "unmanaged": null,
            "refusal": {"dry_run_not_honoured": {"setting": {
                "key": "dry_run", "source": {"file": "/h/.condarc"}, "final": true}}}
        }))
        .expect("a report");
        assert_eq!(
            report.refusal,
            Some(GuardRefusal::DryRunNotHonoured {
                setting: Setting {
                    key: "dry_run".into(),
                    source: Some(SettingSource::File("/h/.condarc".into())),
                    final_: true
                }
            })
        );
        assert!(checks.enforces());
        assert!(!InProcessChecks::default().enforces());
        let protecting = InProcessChecks {
            protected: vec![Protected::Root],
            ..InProcessChecks::default()
        };
        assert!(protecting.enforces());
    }

    #[test]
    fn channels_are_compared_by_their_canonical_name() {
        assert_eq!(canonical_channel("conda-forge"), "conda-forge");
        assert_eq!(
            canonical_channel("https://conda.anaconda.org/conda-forge/"),
            "conda-forge"
        );
        assert_eq!(
            canonical_channel("https://conda.anaconda.org/t/tk-123-456/private"),
            "private"
        );
        let c = canonical_channel("https://user:secret@repo.example.org/conda/");
        assert_eq!(c, "https://user:***@repo.example.org/conda");
    }
}
