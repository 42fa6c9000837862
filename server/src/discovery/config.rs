//! conda's configuration cannot defeat the policy (docs/writes.md "conda's
//! configuration cannot defeat the policy").
//!
//! conda merges its configuration sources in order (the `.condarc` files of
//! its search path, then `CONDA_*` variables, then the command line), the
//! last one winning, except that a key a source marks final (`#!final` in
//! a file, `!important` in a variable) ends the merge there
//! (`LoadedParameter._first_important_matches` in
//! `conda/common/configuration.py`). So `dry_run: false  #!final` makes
//! conda ignore `--dry-run`, and `json: false  #!final` ignores `--json`.
//!
//! The discovery helper reports every final key from conda's own objects
//! (`context.raw_data`, `RawParameter.keyflag()`), with its source
//! ([`crate::dump::ConfigFacts`]); [`ForcedConfig`] keeps those the server's
//! guarantees rely on ([`GUARDED_KEYS`]) and says what they defeat. The
//! [`ConfigWatch`] re-takes the stamp of every place of conda's search path
//! before each conda call (a few `stat`s, no process) and reruns discovery
//! when one changed, so an edited `.condarc` counts from the next call on,
//! without a restart.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;
use tokio::sync::Mutex;

use super::stamp::{ConfigPath, config_changed};
use super::{Discovery, DiscoveryOptions};
use crate::dump::Dump;

/// The configuration keys whose forced value matters to the server:
/// `dry_run` (previews and explicit dry runs are read-only only because of
/// `--dry-run`), `json` (`parsed_json` and conda's typed errors need
/// `--json`), `always_yes` (conda would not stop at its own prompt),
/// `offline` and `quiet` (the server's flags for them would be ignored).
pub const GUARDED_KEYS: &[&str] = &["dry_run", "json", "always_yes", "offline", "quiet"];

/// The source name conda gives `CONDA_*` variables
/// (`EnvRawParameter.source`).
pub const ENV_SOURCE: &str = "envvars";

/// One guarded key whose value a source forces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForcedKey {
    /// The parameter name (`dry_run`).
    pub key: String,
    /// The file that marks it final, or `envvars`.
    pub source: String,
    /// The forced value read as a flag (`None`: not a flag conda would
    /// read as true or false).
    pub value: Option<bool>,
}

impl ForcedKey {
    /// Where the key is forced, for messages: `the file /etc/conda/.condarc`
    /// or `the environment variable CONDA_DRY_RUN`.
    pub fn place(&self) -> String {
        if self.source == ENV_SOURCE {
            format!(
                "the environment variable CONDA_{}",
                self.key.to_ascii_uppercase()
            )
        } else {
            format!("the file {}", self.source)
        }
    }

    /// The file that forces it (`None` for a variable).
    pub fn file(&self) -> Option<&str> {
        (self.source != ENV_SOURCE).then_some(self.source.as_str())
    }
}

/// The guarded keys conda's configuration forces, at one discovery.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForcedConfig {
    /// One entry per guarded key that some source marks final: the first
    /// such source in conda's order (the one conda's merge stops at).
    pub keys: Vec<ForcedKey>,
    /// `channels` as conda resolved it from its configuration (the
    /// discovery helper's `context.channels`, credentials masked): what a
    /// solve uses besides its own channels (`crate::call::plan::restrict`).
    /// `None` when discovery did not report it.
    pub channels: Option<Vec<String>>,
}

impl ForcedConfig {
    /// The guarded keys of the helper's report (none when the dump has no
    /// configuration facts).
    pub fn from_dump(dump: &Dump) -> Self {
        let mut keys: Vec<ForcedKey> = Vec::new();
        for f in dump.config.iter().flat_map(|c| &c.final_keys) {
            if GUARDED_KEYS.contains(&f.key.as_str()) && !keys.iter().any(|k| k.key == f.key) {
                keys.push(ForcedKey {
                    key: f.key.clone(),
                    source: f.source.clone(),
                    value: as_flag(&f.value),
                });
            }
        }
        Self {
            keys,
            channels: dump.config.as_ref().and_then(|c| c.channels.clone()),
        }
    }

    /// The forced key `key`, if any.
    pub fn get(&self, key: &str) -> Option<&ForcedKey> {
        self.keys.iter().find(|k| k.key == key)
    }

    /// `dry_run` forced to anything but true: conda would not honour
    /// `--dry-run` (fail closed: a value that is not a clear flag counts).
    pub fn dry_run_defeated(&self) -> Option<&ForcedKey> {
        self.get("dry_run").filter(|k| k.value != Some(true))
    }

    /// `json` forced to anything but true: conda would not honour `--json`.
    pub fn json_off(&self) -> Option<&ForcedKey> {
        self.get("json").filter(|k| k.value != Some(true))
    }
}

/// A reported value as conda's `typify` reads a flag.
fn as_flag(v: &Value) -> Option<bool> {
    match v {
        Value::Bool(b) => Some(*b),
        Value::Number(n) => n.as_i64().map(|i| i != 0),
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => Some(true),
            "false" | "no" | "off" | "0" => Some(false),
            _ => None,
        },
        _ => None,
    }
}

/// Watches the places of conda's configuration search path (see the
/// module docs).
#[derive(Debug)]
pub struct ConfigWatch {
    /// How to rediscover (the startup options, with the target and its
    /// interpreter pinned to what startup found).
    options: DiscoveryOptions,
    state: Mutex<WatchState>,
    rediscoveries: AtomicU64,
}

#[derive(Debug)]
struct WatchState {
    places: Vec<ConfigPath>,
    forced: Arc<ForcedConfig>,
}

impl ConfigWatch {
    /// A watch over what startup discovered.
    pub fn new(options: DiscoveryOptions, found: &Discovery) -> Self {
        let mut options = options;
        options.conda_exe = Some(found.target.path.clone());
        options.python = Some(found.python.clone());
        let forced = ForcedConfig::from_dump(&found.dump);
        for k in &forced.keys {
            tracing::warn!(key = %k.key, place = %k.place(), "conda's configuration forces a key the server relies on");
        }
        Self {
            options,
            state: Mutex::new(WatchState {
                places: found.stamp.config.clone(),
                forced: Arc::new(forced),
            }),
            rediscoveries: AtomicU64::new(0),
        }
    }

    /// How many times a configuration change reran discovery.
    pub fn rediscoveries(&self) -> u64 {
        self.rediscoveries.load(Ordering::Relaxed)
    }

    /// The forced keys now: when a place of the search path changed since
    /// the last look, discovery runs again first (a failed rediscovery is
    /// logged, keeps the last answer and is retried by the next call).
    pub async fn current(&self) -> Arc<ForcedConfig> {
        let mut state = self.state.lock().await;
        if !config_changed(&state.places) {
            return state.forced.clone();
        }
        self.rediscoveries.fetch_add(1, Ordering::Relaxed);
        tracing::info!("conda's configuration files changed; rerunning discovery to read them");
        match super::discover(&self.options).await {
            Ok(found) => {
                if let Some(lane) = &found.helper_lane {
                    lane.shutdown().await;
                }
                let forced = ForcedConfig::from_dump(&found.dump);
                if *state.forced != forced {
                    for k in &forced.keys {
                        tracing::warn!(key = %k.key, place = %k.place(), "conda's configuration forces a key the server relies on");
                    }
                }
                state.places = found.stamp.config.clone();
                state.forced = Arc::new(forced);
            }
            Err(e) => tracing::warn!("rediscovery after a configuration change failed: {e}"),
        }
        state.forced.clone()
    }
}

/// The forced keys of conda's configuration as OS user `user` reads it
/// (its `~/.condarc`, its variables): the discovery helper run once in a
/// worker of that user made from `base` (the default worker's
/// configuration, its interpreter included), then stopped. For the
/// operator (`check --listen`, the startup log); the guarantees do not
/// rest on it: conda's own process checks each call (`crate::call::plan::checks`).
///
/// Errors: [`ForcedError`], the worker or the helper failed (its words).
pub async fn forced_for_user(
    base: &crate::worker_client::WorkerConfig,
    user: &str,
    timeout: std::time::Duration,
) -> Result<ForcedConfig, ForcedError> {
    use crate::worker_client::{Executor, Job, Program};
    let mut cfg = base.clone();
    cfg.user = Some(user.to_owned());
    cfg.home = None;
    cfg.socket = None;
    cfg.warm_conda = false;
    let executor = Executor::new(cfg);
    let mut job = Job::new(Program::Python, super::helper::helper_argv());
    job.stdin = Some(super::helper::HELPER_SOURCE.as_bytes().to_vec());
    job.limits.timeout = timeout;
    job.limits.output_limit_bytes = super::helper::HELPER_OUTPUT_LIMIT_BYTES;
    job.limits.stdin_limit_bytes = job
        .limits
        .stdin_limit_bytes
        .max(super::helper::HELPER_SOURCE.len() as u64);
    job.label = "discovery helper (forced keys of an OS user)".into();
    let result = executor.run(job, |_| {}).await;
    executor.shutdown().await;
    let r = result?;
    if r.exit_code != Some(0) {
        return Err(ForcedError::HelperFailed(r.exit_code));
    }
    let dump = super::helper::parse_output(&r.stdout, r.stdout_truncated)?;
    Ok(ForcedConfig::from_dump(&dump))
}

/// Why conda's forced keys for an OS user could not be read
/// ([`forced_for_user`]).
#[derive(Debug, thiserror::Error)]
pub enum ForcedError {
    /// The worker of that user could not run the helper (it could not be
    /// started as that user, or it died).
    #[error(transparent)]
    Worker(#[from] crate::worker_client::ExecError),
    /// The helper ran and exited with this status (`None`: by a signal).
    #[error("the discovery helper exited with {0:?}")]
    HelperFailed(Option<i32>),
    /// The helper's output held no readable document.
    #[error(transparent)]
    Output(#[from] super::helper::HelperOutputError),
}

impl ForcedConfig {
    /// One line for the operator: each key and where it is forced, or
    /// `none`.
    pub fn describe(&self) -> String {
        if self.keys.is_empty() {
            return "none".to_owned();
        }
        self.keys
            .iter()
            .map(|k| format!("{} (marked final in {})", k.key, k.place()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dump::{ConfigFacts, FinalKey};
    use serde_json::json;

    fn dump_with(final_keys: Vec<FinalKey>) -> Dump {
        let mut d = crate::dump::recorded_conda();
        d.config = Some(ConfigFacts {
            search_path: vec![],
            files: vec![],
            final_keys,
            channels: None,
        });
        d
    }

    fn key(key: &str, source: &str, value: Value) -> FinalKey {
        FinalKey {
            key: key.into(),
            source: source.into(),
            value,
        }
    }

    #[test]
    fn the_first_final_source_of_a_guarded_key_counts() {
        let d = dump_with(vec![
            key("channels", "/a/.condarc", Value::Null),
            key("dry_run", "/a/.condarc", json!(false)),
            key("dry_run", "/b/.condarc", json!(true)),
            key("json", "envvars", json!("no")),
        ]);
        let f = ForcedConfig::from_dump(&d);
        assert_eq!(f.keys.len(), 2, "{f:?}");
        let dr = f.dry_run_defeated().expect("dry_run forced off");
        assert_eq!(dr.file(), Some("/a/.condarc"));
        let j = f.json_off().expect("json forced off");
        assert_eq!(j.place(), "the environment variable CONDA_JSON");
        assert_eq!(j.file(), None);
    }

    #[test]
    fn only_a_clear_true_leaves_dry_run_and_json_honoured() {
        let forced_true = ForcedConfig::from_dump(&dump_with(vec![
            key("dry_run", "/a/.condarc", json!(true)),
            key("json", "/a/.condarc", json!("yes")),
        ]));
        assert!(forced_true.dry_run_defeated().is_none());
        assert!(forced_true.json_off().is_none());
        let unclear =
            ForcedConfig::from_dump(&dump_with(vec![key("dry_run", "/a/.condarc", Value::Null)]));
        assert!(unclear.dry_run_defeated().is_some(), "fails closed");
        assert!(
            ForcedConfig::from_dump(&crate::dump::recorded_conda())
                .keys
                .is_empty()
        );
    }
}
