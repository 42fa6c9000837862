//! Protected environments and allowed channels (docs/safety.md
//! "Protected environments and allowed channels"): what a call may not
//! touch or pull from, whatever the policy allows.
//!
//! * **Protected environments.** conda's root prefix (`base`) is protected
//!   unless `--allow-base-writes`; `--protect-env NAME|PREFIX` adds more. A
//!   mutation whose target is a protected environment is refused with
//!   `protected_environment` before anything runs. Reads, dry runs and
//!   `conda run` in it are not changes and pass.
//! * **Allowed channels.** With `--allowed-channel NAME|URL` (repeatable),
//!   a solve (`create`, `install`, `update`, `remove`, `env create`, `env
//!   update`, their dry runs included) whose channels go beyond the list is
//!   refused with `channel_not_allowed`, naming the first such channel.
//!   The channels of a call are those it gives (`--channel`, a spec's
//!   `channel::package`, `--use-local`, an environment file's
//!   `channels:`), and, unless `--override-channels`, those of conda's
//!   configuration (`channels` as conda resolved it: its `.condarc` files
//!   and variables, reported by the discovery helper and re-read when a
//!   `.condarc` changes).
//!
//! Two layers (docs/writes.md "Two layers"). Here, from outside conda,
//! the server predicts, for an early answer that starts nothing: the
//! target the way [`crate::target`] determines it (conda's rules; a call
//! that names no environment targets the root prefix, since the worker
//! never passes an activation), the channels by their canonical name (a
//! URL under `https://conda.anaconda.org/` is the name after it; any other
//! URL is compared without its trailing `/`). A call the prediction lets
//! through carries both restrictions into conda's process
//! ([`Restrictions::arm`]), where the guard decides by conda's own
//! resolution: the prefix conda resolved for the command (its envs
//! directories, its default prefix, for the user it runs as) and the
//! channels conda resolved for that call (`context.channels`: every
//! `.condarc` it read, including one in the target prefix, variables,
//! `-c`, `--override-channels`). What the guard adds nothing to is left to
//! the prediction: a spec's `channel::package`, an environment file's
//! `channels:` (conda adds those in the command's own code, after the
//! guard ran), and any call on a platform that runs no guard (Windows). What
//! neither covers: a package given as a URL or a file path (conda fetches
//! it directly, no channel), and channels an explicit `--file` of specs
//! names (`channel::package` lines).

use std::path::{Path, PathBuf};

use crate::argparse::{Resolved, resolve};
use crate::catalog::Catalog;
use crate::catalog::EnvironmentDirs;
use crate::policy::commands;
use crate::target::{self, TargetSpec};

pub use conda_mcp_shared::guard::{CHANNEL_ALIAS, canonical_channel};
use conda_mcp_shared::guard::{InProcessChecks, Protected};

/// An environment `--protect-env` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtectedEnv {
    /// By name, looked up in conda's envs directories when a call comes.
    Name(String),
    /// By prefix (absolute).
    Prefix(PathBuf),
}

impl ProtectedEnv {
    /// `--protect-env`'s value: a path (it holds a `/`, or on Windows a
    /// `\\`) or a name.
    pub fn parse(value: &str) -> Self {
        if value.contains('/') || (cfg!(windows) && value.contains('\\')) {
            ProtectedEnv::Prefix(PathBuf::from(value))
        } else {
            ProtectedEnv::Name(value.to_owned())
        }
    }
}

/// `--allow-base-writes`, `--protect-env`, `--allowed-channel`,
/// `--allow-read-path`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Restrictions {
    /// `--allow-read-path`: directories every caller's file options may
    /// name besides its home and its client's roots ([`super::reads`]).
    pub read_paths: Vec<PathBuf>,
    /// `--allow-base-writes`: the root prefix is not protected.
    pub allow_base_writes: bool,
    /// `--protect-env`, in order.
    pub protected: Vec<ProtectedEnv>,
    /// `--allowed-channel`, canonical ([`canonical_channel`]); empty: every
    /// channel is allowed.
    pub allowed_channels: Vec<String>,
}

/// Where a channel of a call comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelSource {
    /// The call's own arguments (or its environment file).
    Call,
    /// conda's configuration (`channels`).
    Configuration,
}

impl ChannelSource {
    /// `call` or `configuration` (the error's `details.source`).
    pub fn word(self) -> &'static str {
        match self {
            ChannelSource::Call => "call",
            ChannelSource::Configuration => "configuration",
        }
    }

    /// Where it came from, for messages.
    pub fn describe(self) -> &'static str {
        match self {
            ChannelSource::Call => "given in the call",
            ChannelSource::Configuration => "from conda's configuration (channels)",
        }
    }
}

/// What a conda argv asks of environments and channels, read before it
/// runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// How the call names its target, when it names one.
    pub target: Option<TargetSpec>,
    /// The command works on a prefix (it has `--name`/`--prefix`): with no
    /// target named, conda's default, the root prefix.
    pub has_target: bool,
    /// `rename`'s destination (its `target` is the environment renamed).
    pub destination: Option<TargetSpec>,
    /// The command solves against channels ([`commands::CommandFacts::solves`]).
    pub solves: bool,
    /// `--override-channels`: conda's configured channels are not used.
    pub override_channels: bool,
    /// The channels the call itself gives (canonical), in order.
    pub channels: Vec<String>,
}

/// The facts of `argv` (what follows `conda`) run in `cwd`.
pub fn facts(catalog: &Catalog, argv: &[String], cwd: &Path) -> Facts {
    let resolved = resolve(catalog, argv);
    facts_of(catalog, &resolved, cwd)
}

fn facts_of(catalog: &Catalog, resolved: &Resolved, cwd: &Path) -> Facts {
    let path = target::subpath(catalog, resolved);
    let Some(command) = catalog.commands.get(resolved.command()) else {
        return Facts::default();
    };
    let has_target = commands::holds(&path, |c| c.changes_target)
        && command
            .arguments
            .iter()
            .any(|a| a.dest == "prefix" || a.dest == "name");
    let (target, destination) = if path == target::RENAME_PATH {
        (
            target::given(catalog, resolved, cwd),
            target::create_target(catalog, resolved, cwd),
        )
    } else if path == ["env", "update"] {
        // conda's `env update` takes the file's `name:` (else `prefix:`)
        // when neither `--name` nor `--prefix` is given.
        let file = resolved
            .last_value(catalog, "file")
            .map_or_else(|| cwd.join("environment.yml"), |f| cwd.join(f));
        let from_file = || match target::file_name_prefix(&file) {
            (Some(n), _) => Some(TargetSpec::Name(n)),
            (None, Some(p)) => Some(TargetSpec::Prefix(cwd.join(p))),
            (None, None) => None,
        };
        (
            target::given(catalog, resolved, cwd).or_else(from_file),
            None,
        )
    } else {
        (
            target::create_target(catalog, resolved, cwd)
                .or_else(|| target::given(catalog, resolved, cwd)),
            None,
        )
    };
    let solves = commands::holds(&path, |c| c.solves);
    let mut channels = Vec::new();
    for occurrence in resolved.occurrences(catalog, "channel") {
        channels.extend(occurrence.iter().map(|c| canonical_channel(c)));
    }
    if resolved.has(catalog, "use_local") {
        channels.push("local".to_owned());
    }
    for specs in resolved.occurrences(catalog, "packages") {
        for spec in specs {
            if let Some((channel, _)) = spec.split_once("::") {
                // `conda-forge/linux-64::numpy`: the subdir is not part of
                // the channel.
                let channel = match channel.rsplit_once('/') {
                    Some((c, subdir)) if is_subdir(subdir) => c,
                    _ => channel,
                };
                channels.push(canonical_channel(channel));
            }
        }
    }
    if solves && path.first().is_some_and(|p| p == "env") {
        for files in resolved.occurrences(catalog, "file") {
            for f in files {
                channels.extend(
                    file_channels(&cwd.join(f))
                        .iter()
                        .map(|c| canonical_channel(c)),
                );
            }
        }
    }
    channels.dedup();
    Facts {
        target,
        destination,
        has_target,
        solves,
        override_channels: resolved.has(catalog, "override_channels"),
        channels,
    }
}

impl Facts {
    /// The prefix the call works on, as conda would find it: `--prefix`;
    /// a `--name` that exists, else where conda would create it (the
    /// first envs directory); with neither, the root prefix. `None` for a
    /// command without a target.
    pub fn prefix(&self, dirs: &EnvironmentDirs) -> Option<PathBuf> {
        if !self.has_target {
            return None;
        }
        match &self.target {
            Some(TargetSpec::Prefix(p)) => Some(p.clone()),
            Some(TargetSpec::Name(n)) => dirs
                .locate(n)
                .or_else(|| dirs.envs_dirs.first().map(|d| d.join(n))),
            None => dirs.root_prefix.clone(),
        }
    }
}

/// conda's platform subdirectories (`conda/base/constants.py`
/// `KNOWN_SUBDIRS`, by shape): `noarch` and `OS-ARCH`.
fn is_subdir(s: &str) -> bool {
    s == "noarch"
        || [
            "linux-",
            "osx-",
            "win-",
            "freebsd-",
            "zos-",
            "emscripten-",
            "wasi-",
        ]
        .iter()
        .any(|p| s.starts_with(p))
}

/// The `channels:` list of an environment file (`None`/empty for a file
/// that cannot be read or has none).
fn file_channels(path: &Path) -> Vec<String> {
    use yaml_rust2::{Yaml, YamlLoader};
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    let Ok(docs) = YamlLoader::load_from_str(&text) else {
        return Vec::new();
    };
    let Some(Yaml::Hash(map)) = docs.into_iter().next() else {
        return Vec::new();
    };
    match map.get(&Yaml::String("channels".to_owned())) {
        Some(Yaml::Array(items)) => items
            .iter()
            .filter_map(|i| i.as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

/// Why a call was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Restriction {
    /// The call would change a protected environment.
    #[error(
        "{what} would change the environment at {prefix}, which is protected ({by}); nothing was changed{remedy}"
    )]
    ProtectedEnvironment {
        /// What was to run (`conda install`).
        what: String,
        /// The protected prefix (or the name, when it does not exist yet).
        prefix: String,
        /// Why it is protected: `the base environment, protected by
        /// default` or `--protect-env`.
        by: &'static str,
        /// How an operator allows it, when a flag can.
        remedy: &'static str,
    },
    /// The call's channels go beyond `--allowed-channel`.
    #[error(
        "{what} would use the channel {channel}, {}, which is not among the server's --allowed-channel list; nothing was changed",
        .origin.describe()
    )]
    ChannelNotAllowed {
        /// What was to run.
        what: String,
        /// The channel (canonical, credentials removed).
        channel: String,
        /// Where it came from.
        origin: ChannelSource,
    },
    /// A file option names a file the caller may not read
    /// ([`super::reads`]).
    #[error(transparent)]
    ReadNotAllowed(#[from] super::reads::ReadRefused),
}

impl Restriction {
    /// The refusal `protected_environment` of `what`, whose target is
    /// `prefix` (`root`: conda's root prefix, which `--allow-base-writes`
    /// allows; else a `--protect-env`).
    pub fn protected(what: String, prefix: String, root: bool) -> Self {
        let (by, remedy) = if root {
            (
                "the base environment, protected by default",
                "; start the server with --allow-base-writes to allow changes to base",
            )
        } else {
            ("--protect-env", "")
        };
        Restriction::ProtectedEnvironment {
            what,
            prefix,
            by,
            remedy,
        }
    }
}

impl Restrictions {
    /// Whether anything is restricted at all.
    pub fn any(&self) -> bool {
        !self.allow_base_writes || !self.protected.is_empty() || !self.allowed_channels.is_empty()
    }

    /// Checks a call of `what` whose argv gave `facts`: `mutation` when
    /// the policy classified it a change, `configured` conda's configured
    /// channels now, `dirs` where conda finds environments.
    ///
    /// Errors: the first [`Restriction`] the call breaks.
    pub fn check(
        &self,
        what: &str,
        facts: &Facts,
        mutation: bool,
        configured: &[String],
        dirs: &EnvironmentDirs,
    ) -> Result<(), Restriction> {
        if mutation && facts.has_target {
            self.check_target(what, facts.target.as_ref(), dirs)?;
            if let Some(d) = &facts.destination {
                self.check_target(what, Some(d), dirs)?;
            }
        }
        if facts.solves && !self.allowed_channels.is_empty() {
            let from_config: &[String] = if facts.override_channels {
                &[]
            } else {
                configured
            };
            let all = facts
                .channels
                .iter()
                .map(|c| (c.clone(), ChannelSource::Call))
                .chain(
                    from_config
                        .iter()
                        .map(|c| (canonical_channel(c), ChannelSource::Configuration)),
                );
            for (channel, source) in all {
                if !self.allowed_channels.contains(&channel) {
                    return Err(Restriction::ChannelNotAllowed {
                        what: what.to_owned(),
                        channel,
                        origin: source,
                    });
                }
            }
        }
        Ok(())
    }

    fn check_target(
        &self,
        what: &str,
        target: Option<&TargetSpec>,
        dirs: &EnvironmentDirs,
    ) -> Result<(), Restriction> {
        let prefix = match target {
            Some(spec) => spec.prefix(dirs),
            None => dirs.root_prefix.clone(),
        };
        let refuse =
            |prefix: String, root| Err(Restriction::protected(what.to_owned(), prefix, root));
        if let Some(p) = &prefix
            && !self.allow_base_writes
            && dirs.is_root(p)
        {
            return refuse(p.display().to_string(), true);
        }
        let named = match target {
            Some(TargetSpec::Name(n)) => Some(n.as_str()),
            _ => None,
        };
        for protected in &self.protected {
            let hit = match protected {
                ProtectedEnv::Name(n) => {
                    named == Some(n.as_str())
                        || prefix
                            .as_deref()
                            .zip(dirs.locate(n))
                            .is_some_and(|(p, q)| same_path(p, q.as_path()))
                }
                ProtectedEnv::Prefix(q) => prefix.as_deref().is_some_and(|p| same_path(p, q)),
            };
            if hit {
                let shown = prefix
                    .as_ref()
                    .map(|p| p.display().to_string())
                    .or_else(|| named.map(str::to_owned))
                    .unwrap_or_default();
                return refuse(shown, false);
            }
        }
        Ok(())
    }
}

impl Restrictions {
    /// Carries the restrictions a call of `facts` breaks into the checks
    /// conda's process enforces (`checks`, for the argv that runs):
    /// the protected environments when it is a `mutation` that changes a
    /// prefix, the allowed channels when it solves. Names are resolved by
    /// conda there, not here.
    pub fn arm(&self, checks: &mut InProcessChecks, facts: &Facts, mutation: bool) {
        if mutation && facts.has_target {
            checks.protected = (!self.allow_base_writes)
                .then_some(Protected::Root)
                .into_iter()
                .chain(self.protected.iter().map(|p| match p {
                    ProtectedEnv::Name(n) => Protected::Name(n.clone()),
                    ProtectedEnv::Prefix(p) => Protected::Prefix(p.display().to_string()),
                }))
                .collect();
        }
        if facts.solves && !self.allowed_channels.is_empty() {
            checks.allowed_channels = Some(self.allowed_channels.clone());
        }
    }
}

/// Whether two paths name the same folder (canonical when both exist).
fn same_path(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn base_is_protected_by_default_and_protect_env_adds_more() {
        let catalog = crate::catalog::build(&crate::dump::recorded_conda()).expect("catalog");
        let t = tempfile::tempdir().expect("tmp");
        let root = t.path().to_path_buf();
        std::fs::create_dir_all(root.join("envs/lab")).expect("mkdir");
        let dirs = EnvironmentDirs {
            root_prefix: Some(root.clone()),
            envs_dirs: vec![root.join("envs")],
        };
        let cwd = Path::new("/");
        let r = Restrictions::default();
        let check = |r: &Restrictions, items: &[&str]| {
            let f = facts(&catalog, &argv(items), cwd);
            r.check("conda install", &f, true, &[], &dirs)
        };
        for call in [
            &["install", "-n", "base", "numpy"][..],
            &["install", "numpy"],
            &[
                "install",
                "--prefix",
                root.to_str().expect("utf-8"),
                "numpy",
            ],
        ] {
            let e = check(&r, call).expect_err("base");
            assert!(e.to_string().contains("--allow-base-writes"), "{e}");
        }
        assert!(check(&r, &["install", "-n", "lab", "numpy"]).is_ok());
        // `conda clean` works on no prefix; `config --set` writes a
        // `.condarc`, not base's packages.
        let f = facts(&catalog, &argv(&["clean", "--all"]), cwd);
        assert!(!f.has_target);
        let f = facts(
            &catalog,
            &argv(&["config", "--set", "channel_priority", "strict"]),
            cwd,
        );
        assert!(!f.has_target);
        let open = Restrictions {
            allow_base_writes: true,
            protected: vec![ProtectedEnv::parse("lab")],
            ..Restrictions::default()
        };
        assert!(check(&open, &["install", "-n", "base", "numpy"]).is_ok());
        let e = check(&open, &["install", "-n", "lab", "numpy"]).expect_err("lab");
        assert!(e.to_string().contains("--protect-env"), "{e}");
        let lab = root.join("envs/lab");
        let e = check(
            &open,
            &["remove", "-p", lab.to_str().expect("utf-8"), "--all"],
        )
        .expect_err("lab by prefix");
        assert!(matches!(e, Restriction::ProtectedEnvironment { .. }));
        let by_prefix = Restrictions {
            allow_base_writes: true,
            protected: vec![ProtectedEnv::parse(lab.to_str().expect("utf-8"))],
            ..Restrictions::default()
        };
        assert!(check(&by_prefix, &["install", "-n", "lab", "numpy"]).is_err());
        // A read (not a mutation) in base passes.
        let f = facts(&catalog, &argv(&["install", "-n", "base", "numpy"]), cwd);
        assert!(r.check("conda install", &f, false, &[], &dirs).is_ok());
    }

    #[test]
    fn channels_of_the_call_and_of_the_configuration_are_checked() {
        let catalog = crate::catalog::build(&crate::dump::recorded_conda()).expect("catalog");
        let dirs = EnvironmentDirs::default();
        let cwd = Path::new("/");
        let r = Restrictions {
            allow_base_writes: true,
            allowed_channels: vec!["conda-forge".into()],
            ..Restrictions::default()
        };
        let check = |items: &[&str], configured: &[&str]| {
            let f = facts(&catalog, &argv(items), cwd);
            let configured: Vec<String> = configured.iter().map(|s| (*s).to_owned()).collect();
            r.check("conda install", &f, true, &configured, &dirs)
        };
        assert!(
            check(
                &["install", "-n", "x", "-c", "conda-forge", "numpy"],
                &["conda-forge"]
            )
            .is_ok()
        );
        let e = check(&["install", "-n", "x", "-c", "bioconda", "numpy"], &[]).expect_err("call");
        assert!(
            matches!(&e, Restriction::ChannelNotAllowed { channel, origin, .. }
                if channel == "bioconda" && *origin == ChannelSource::Call),
            "{e}"
        );
        let e = check(&["install", "-n", "x", "bioconda::samtools"], &[]).expect_err("spec");
        assert!(e.to_string().contains("bioconda"), "{e}");
        assert!(check(&["install", "-n", "x", "conda-forge/linux-64::numpy"], &[]).is_ok());
        let e = check(&["install", "-n", "x", "numpy"], &["defaults"]).expect_err("config");
        assert!(
            matches!(&e, Restriction::ChannelNotAllowed { channel, origin, .. }
                if channel == "defaults" && *origin == ChannelSource::Configuration),
            "{e}"
        );
        // --override-channels leaves the configuration out.
        assert!(
            check(
                &[
                    "install",
                    "-n",
                    "x",
                    "--override-channels",
                    "-c",
                    "conda-forge",
                    "numpy"
                ],
                &["defaults"]
            )
            .is_ok()
        );
        // Not a solve: not checked.
        assert!(check(&["list", "-n", "x"], &["defaults"]).is_ok());
    }
}
