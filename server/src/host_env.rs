//! What conda sees of the host, from the server's side: startup checks and
//! the facts `conda://capabilities` states. Plain functions, so startup and
//! a setup report can call them alike.
//!
//! * [`env_rules`] / [`child_vars`]: the allowlisted environment the
//!   spawned worker gives conda (the rules themselves live in
//!   [`conda_mcp_shared::env`], applied by the worker);
//! * [`check_worker_home`]: a `--worker-user` needs a writable home, or
//!   `--worker-home DIR`;
//! * [`condarc_warning`]: `CONDARC` naming a file conda will not load.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use conda_mcp_shared::env::{EnvRules, FIXED_CWD, child_environment};
#[cfg(unix)]
use conda_mcp_shared::home::{HomeUser, check_home, prepare_home};

/// The rules the spawned worker applies: `--pass-env` patterns, and whether
/// it runs conda as another user (`--worker-user`; then the server's
/// `XDG_*` directories are not handed on and `home` replaces `HOME`).
pub fn env_rules(pass_env: &[String], worker_user: Option<&str>, home: Option<&Path>) -> EnvRules {
    let mut overrides: Vec<(OsString, OsString)> = Vec::new();
    if let Some(user) = worker_user {
        overrides.push(("USER".into(), user.into()));
        overrides.push(("LOGNAME".into(), user.into()));
    }
    if let Some(home) = home {
        overrides.push(("HOME".into(), home.as_os_str().to_owned()));
    }
    EnvRules {
        pass_env: pass_env.to_vec(),
        foreign_user: worker_user.is_some(),
        overrides,
    }
}

/// Why the worker user's home cannot be used ([`check_worker_home`]).
#[derive(Debug, thiserror::Error)]
pub enum WorkerHomeError {
    /// The user database could not be read.
    #[cfg(unix)]
    #[error("looking up the worker user {user}: {source}")]
    Lookup {
        /// The user looked up (named by the operator's flag).
        user: String,
        /// What the lookup returned.
        #[source]
        source: nix::Error,
    },
    /// No user of that name.
    #[error("no such user: {0} (--worker-user)")]
    NoSuchUser(String),
    /// Windows: no worker under another OS user ([`NOT_ON_WINDOWS`]).
    #[error("--worker-user {0}: {NOT_ON_WINDOWS}")]
    NotOnWindows(String),
    /// The home (or `--worker-home`) is missing, not a directory, or not
    /// writable by the user; the text names the fix.
    #[error(transparent)]
    Home(#[from] conda_mcp_shared::home::HomeError),
}

/// The home conda gets when the worker runs as `user`: `worker_home`
/// (created with mode 0700 and owned by the user when missing; needs root
/// unless the user is the server's own) or the user's home from the user
/// database, which must exist and be writable by the user.
///
/// Errors: [`WorkerHomeError`], one sentence naming the user, the
/// directory and the fix (`--worker-home DIR`, creating the home, or
/// `usermod -d`).
#[cfg(unix)]
pub fn check_worker_home(
    user: &str,
    worker_home: Option<&Path>,
) -> Result<PathBuf, WorkerHomeError> {
    let entry = nix::unistd::User::from_name(user)
        .map_err(|source| WorkerHomeError::Lookup {
            user: user.to_owned(),
            source,
        })?
        .ok_or_else(|| WorkerHomeError::NoSuchUser(user.to_owned()))?;
    let who = HomeUser {
        name: user.to_owned(),
        uid: entry.uid.as_raw(),
        gid: entry.gid.as_raw(),
    };
    match worker_home {
        Some(dir) => Ok(prepare_home(&who, dir, "--worker-home")?),
        None => {
            check_home(&who, &entry.dir, "--worker-home")?;
            Ok(entry.dir)
        }
    }
}

/// Windows: conda runs as the server's own user; a worker under another
/// user is refused ([`NOT_ON_WINDOWS`]).
///
/// Errors: always, naming `--worker-user`.
#[cfg(windows)]
pub fn check_worker_home(
    user: &str,
    _worker_home: Option<&Path>,
) -> Result<PathBuf, WorkerHomeError> {
    Err(WorkerHomeError::NotOnWindows(user.to_owned()))
}

/// Why a worker under another OS user (`--worker-user`, principals mapped
/// to OS users) is refused on Windows.
pub const NOT_ON_WINDOWS: &str = "workers under another OS user are not available on Windows (they change user with Unix uids; run conda-mcp itself as the user conda should run as)";

/// Why conda will not load the file `CONDARC` names, as one sentence, or
/// `None` when it will (or `CONDARC` is unset).
///
/// conda's rule (`conda/common/configuration.py`,
/// `Configuration._expand_search_path`; `$CONDARC` is the last entry of
/// `SEARCH_PATH` in `conda/base/constants.py`): the value is expanded
/// (`$VAR`, `${VAR}`, `%VAR%` from the environment, then a leading `~`) and
/// loaded when it is a regular file named `.condarc` or `condarc` or ending
/// in `.yml`/`.yaml`, or a directory (its `*.yml`/`*.yaml` files, in name
/// order). Anything else is skipped without a word. A relative value is
/// resolved against conda's working directory.
///
/// `vars`: the environment conda gets (see [`conda_mcp_shared::env`]).
pub fn condarc_warning(vars: &[(OsString, OsString)]) -> Option<String> {
    let get = |name: &str| {
        vars.iter()
            .find(|(k, _)| k == name)
            .and_then(|(_, v)| v.to_str())
    };
    let raw = get("CONDARC")?;
    let lead = "CONDARC";
    if raw.is_empty() {
        return Some(format!(
            "{lead} is set but empty; conda then reads the .yml/.yaml files of its working directory ({FIXED_CWD}); unset it or name a .condarc file"
        ));
    }
    let expanded = expand_vars(raw, &get);
    let expanded = match expanded.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => match get("HOME") {
            Some(home) => format!("{home}{rest}"),
            None => expanded.clone(),
        },
        _ => expanded.clone(),
    };
    let path = Path::new(FIXED_CWD).join(&expanded);
    let fix = "name a file called .condarc or condarc, or ending in .yml or .yaml";
    let shown = path.display();
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(_) => {
            return Some(format!(
                "{lead} names {shown}, which does not exist: conda will not load it and runs with its other configuration files"
            ));
        }
    };
    if meta.is_file() {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if name == ".condarc" || name == "condarc" || ext == "yml" || ext == "yaml" {
            return None;
        }
        return Some(format!(
            "{lead} names {shown}, which conda will not load: it loads only files named .condarc or condarc or ending in .yml/.yaml; {fix}"
        ));
    }
    if meta.is_dir() {
        let has_yaml = std::fs::read_dir(&path).ok()?.flatten().any(|e| {
            e.path().is_file()
                && matches!(
                    e.path().extension().and_then(|x| x.to_str()),
                    Some("yml" | "yaml")
                )
        });
        if has_yaml {
            return None;
        }
        return Some(format!(
            "{lead} names the directory {shown}, which holds no .yml/.yaml file: conda loads nothing from it"
        ));
    }
    Some(format!(
        "{lead} names {shown}, which is neither a file nor a directory: conda will not load it; {fix}"
    ))
}

/// `$NAME`, `${NAME}` and `%NAME%` replaced by their values (unknown names
/// stay as written), as conda's `custom_expandvars` does.
fn expand_vars<'a>(s: &str, get: &impl Fn(&str) -> Option<&'a str>) -> String {
    let ident = |t: &str| -> usize {
        let mut n = 0;
        for (i, c) in t.char_indices() {
            let ok = c == '_' || c.is_ascii_alphabetic() || (i > 0 && c.is_ascii_digit());
            if !ok {
                break;
            }
            n = i + c.len_utf8();
        }
        n
    };
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(['$', '%']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        let (name, consumed) = if let Some(t) = tail.strip_prefix("${") {
            match t.find('}') {
                Some(end) if end > 0 && ident(&t[..end]) == end => (Some(&t[..end]), end + 3),
                _ => (None, 1),
            }
        } else if let Some(t) = tail.strip_prefix('$') {
            let n = ident(t);
            if n > 0 {
                (Some(&t[..n]), n + 1)
            } else {
                (None, 1)
            }
        } else {
            let t = &tail[1..];
            let n = ident(t);
            if n > 0 && t[n..].starts_with('%') {
                (Some(&t[..n]), n + 2)
            } else {
                (None, 1)
            }
        };
        match name.and_then(get) {
            Some(v) => out.push_str(v),
            None => out.push_str(&tail[..consumed]),
        }
        rest = &tail[consumed..];
    }
    out.push_str(rest);
    out
}

/// The environment conda gets from the server's environment now, for the
/// spawned worker (see [`env_rules`]).
pub fn child_vars(rules: &EnvRules) -> Vec<(OsString, OsString)> {
    child_environment(std::env::vars_os(), rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn expands_like_conda() {
        let v = vars(&[("A", "x"), ("B_1", "y")]);
        let get = |n: &str| v.iter().find(|(k, _)| k == n).and_then(|(_, v)| v.to_str());
        assert_eq!(
            expand_vars("/$A/${B_1}/%A%/$MISSING/$$/%", &get),
            "/x/y/x/$MISSING/$$/%"
        );
    }

    #[test]
    fn condarc_rules() {
        let dir = tempfile::tempdir().expect("tmp");
        let d = dir.path();
        std::fs::write(d.join("server.rc"), "channels: []\n").expect("write");
        std::fs::write(d.join(".condarc"), "channels: []\n").expect("write");
        std::fs::write(d.join("x.yaml"), "channels: []\n").expect("write");
        std::fs::create_dir(d.join("empty")).expect("mkdir");
        let with = |v: &str| condarc_warning(&vars(&[("CONDARC", v), ("HOME", "/h")]));
        assert_eq!(condarc_warning(&vars(&[("HOME", "/h")])), None);
        let w = with(&d.join("server.rc").display().to_string()).expect("warns");
        assert!(
            w.contains("server.rc") && w.contains("will not load"),
            "{w}"
        );
        assert_eq!(with(&d.join(".condarc").display().to_string()), None);
        assert_eq!(with(&d.join("x.yaml").display().to_string()), None);
        assert_eq!(with(&d.display().to_string()), None);
        let w = with(&d.join("empty").display().to_string()).expect("warns");
        assert!(w.contains("no .yml/.yaml"), "{w}");
        let w = with(&d.join("missing.yml").display().to_string()).expect("warns");
        assert!(w.contains("does not exist"), "{w}");
        let w = with("server.rc").expect("relative");
        assert!(w.contains("/server.rc"), "{w}");
        assert!(with("").expect("empty").contains("empty"));
    }
}
