//! What conda sees of the machine: the environment and the working directory
//! of every process the worker starts.
//!
//! conda does not get the worker's whole environment (which, in the spawned
//! deployment, is the MCP host's: API keys, tokens, an activated shell's
//! `PATH`). It gets an **allowlist**, applied by the worker in every
//! deployment ([`child_environment`]):
//!
//! * `PATH`, with the directories an activated conda environment put there
//!   removed (conda's activator prepends `<prefix>/bin` on POSIX, see
//!   `conda/activate.py` `_get_path_dirs`, for `CONDA_PREFIX` and every
//!   stacked `CONDA_PREFIX_<N>`), and with every empty or relative entry
//!   removed: POSIX reads an empty entry (`PATH=`, `/usr/bin:`, `a::b`) as
//!   the current directory, so a program named by `conda run` could be
//!   taken from the directory it runs in. When nothing is left, or the
//!   worker has no `PATH`, conda gets [`DEFAULT_PATH`];
//! * `HOME`, `USER`, `LOGNAME`, `LANG`, `LANGUAGE`, `LC_*`, `TZ`, `TMPDIR`,
//!   `XDG_*` (not when conda runs as another user than the worker was
//!   started as: those directories belong to the first user);
//! * on Windows also what a Windows process needs to start and find its
//!   user's folders ([`WINDOWS_NAMES`]: `SYSTEMROOT`, `USERPROFILE`,
//!   `APPDATA`, `TEMP`, `PATHEXT`, ...); Windows variable names are
//!   case-insensitive (`Path` is `PATH`), so there names are compared in
//!   upper case, and an activation's directories are the ones conda's
//!   activator prepends on Windows (`<prefix>`, `<prefix>\Library\bin`,
//!   `<prefix>\Scripts`, ...);
//! * proxies and certificates: `*_PROXY` / `*_proxy` (`HTTPS_PROXY`,
//!   `http_proxy`, `ALL_PROXY`, ...), `NO_PROXY`, `no_proxy`, `SSL_CERT_*`,
//!   `REQUESTS_CA_BUNDLE`, `CURL_CA_BUNDLE`;
//! * conda's and pip's own configuration: `CONDA_*` (other than the
//!   activation state in [`ACTIVATION_VARIABLES`], which describes the shell
//!   the server was started from and would make conda act on the wrong
//!   environment), `CONDARC`, `MAMBA_*`, `PIP_*`, `PYTHONNOUSERSITE`;
//! * whatever the operator names with `--pass-env NAME` (repeatable; `*`
//!   matches any run of characters), activation state excepted.
//!
//! Variables whose name is not valid UTF-8 are never passed.
//!
//! The working directory is fixed ([`FIXED_CWD`]): the directory a host
//! happened to start the server in is no contract. Only the raw
//! `conda_execute` tool's explicit `cwd` changes it.

use std::ffi::{OsStr, OsString};

/// The working directory of every process the worker starts, unless a raw
/// call names one: the filesystem root. Nothing relative resolves to a
/// directory that depends on how the server was started, and a discovery
/// helper run as `python -` cannot import modules from a random directory.
#[cfg(unix)]
pub const FIXED_CWD: &str = "/";
/// The working directory of every process the worker starts (Windows): the
/// root of the system drive, for the reasons given on Unix.
#[cfg(windows)]
pub const FIXED_CWD: &str = "C:\\";

/// conda's `PATH` when the worker's has no absolute entry (or none at all):
/// the system directories, never the current directory.
#[cfg(unix)]
pub const DEFAULT_PATH: &str = "/usr/bin:/bin";
/// conda's `PATH` when the worker's has no absolute entry (Windows): the
/// system directories.
#[cfg(windows)]
pub const DEFAULT_PATH: &str = "C:\\Windows\\System32;C:\\Windows";

/// Names also passed on Windows, by exact (case-insensitive) match: what
/// a process needs to start there (`SYSTEMROOT`: Python's sockets and
/// random source fail without it; `PATHEXT`, `COMSPEC` for `conda run`)
/// and the user's folders conda reads (`USERPROFILE` is `~`, `APPDATA`,
/// `LOCALAPPDATA`, `TEMP`, `TMP`).
pub const WINDOWS_NAMES: &[&str] = &[
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "PATHEXT",
    "USERPROFILE",
    "USERNAME",
    "USERDOMAIN",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "TEMP",
    "TMP",
    "OS",
    "NUMBER_OF_PROCESSORS",
    "PROCESSOR_ARCHITECTURE",
];

/// Variables that carry a shell's conda activation state (`CONDA_PREFIX_<N>`,
/// stacked activations, is matched by pattern, see [`is_activation_variable`]).
/// They never reach conda, not even through `--pass-env`.
pub const ACTIVATION_VARIABLES: &[&str] = &[
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "CONDA_SHLVL",
    "CONDA_PROMPT_MODIFIER",
    "_CE_M",
    "_CE_CONDA",
];

/// Names passed by exact match (see the module docs).
pub const ALLOWED_NAMES: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "NO_PROXY",
    "no_proxy",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "CONDARC",
    "PYTHONNOUSERSITE",
];

/// Name prefixes passed (see the module docs); `XDG_` only when conda runs
/// as the worker's own user.
pub const ALLOWED_PREFIXES: &[&str] = &["LC_", "XDG_", "SSL_CERT_", "CONDA_", "MAMBA_", "PIP_"];

/// Whether `name` is conda activation state (see [`ACTIVATION_VARIABLES`]).
pub fn is_activation_variable(name: &str) -> bool {
    ACTIVATION_VARIABLES.contains(&name)
        || name
            .strip_prefix("CONDA_PREFIX_")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether the built-in allowlist passes `name`. `foreign_user`: conda runs
/// as another user than the one whose environment this is (then `XDG_*` is
/// not passed).
pub fn allowed_by_default(name: &str, foreign_user: bool) -> bool {
    if is_activation_variable(name) {
        return false;
    }
    if ALLOWED_NAMES.contains(&name) || (cfg!(windows) && WINDOWS_NAMES.contains(&name)) {
        return true;
    }
    if name.len() > "_PROXY".len() && name.to_ascii_uppercase().ends_with("_PROXY") {
        return true;
    }
    ALLOWED_PREFIXES
        .iter()
        .any(|p| name.starts_with(p) && !(foreign_user && *p == "XDG_"))
}

/// A `--pass-env` pattern: a variable name in which `*` matches any run of
/// characters (possibly empty).
///
/// Errors: [`PatternError`], a sentence naming the rule, when the pattern
/// is empty or holds anything but ASCII letters, digits, `_` and `*`.
pub fn check_pattern(pattern: &str) -> Result<(), PatternError> {
    if pattern.is_empty() {
        return Err(PatternError::Empty);
    }
    if let Some(c) = pattern
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '*'))
    {
        return Err(PatternError::Character(c));
    }
    Ok(())
}

/// Why a `--pass-env` pattern was refused ([`check_pattern`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    /// The pattern is empty.
    #[error("an environment variable name must not be empty")]
    Empty,
    /// The pattern holds this character, which no variable name may.
    #[error(
        "environment variable names hold only letters, digits, '_' (and '*' as a wildcard), not {0:?}"
    )]
    Character(char),
}

/// Whether `name` matches the glob `pattern` (`*` = any run of characters,
/// everything else literal, case-sensitive).
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut pi, mut ni) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ni < n.len() {
        if pi < p.len() && p[pi] != b'*' && p[pi] == n[ni] {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some(pi);
            mark = ni;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ni = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&b| b == b'*')
}

/// What decides the environment of a child (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvRules {
    /// `--pass-env` patterns, checked with [`check_pattern`].
    pub pass_env: Vec<String>,
    /// conda runs as another user than the one whose environment this is
    /// (`--user` of the worker): `XDG_*` is not passed.
    pub foreign_user: bool,
    /// Set after the allowlist (for a worker that changed user: that user's
    /// `HOME`, `USER`, `LOGNAME`).
    pub overrides: Vec<(OsString, OsString)>,
}

impl EnvRules {
    /// Whether a variable of this name is passed.
    pub fn passes(&self, name: &str) -> bool {
        let name = &*canonical_name(name);
        !is_activation_variable(name)
            && (allowed_by_default(name, self.foreign_user)
                || self.pass_env.iter().any(|p| glob_match(p, name)))
    }
}

/// A variable's name as the allowlist compares it: as it is on Unix, in
/// upper case on Windows (where `Path` and `PATH` are one variable).
pub fn canonical_name(name: &str) -> std::borrow::Cow<'_, str> {
    if cfg!(windows) {
        std::borrow::Cow::Owned(name.to_ascii_uppercase())
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}

/// The directories conda's activator prepends to `PATH` for `prefix`
/// (`conda/activate.py`, `_get_path_dirs`): `<prefix>/bin` on Unix; on
/// Windows `<prefix>`, `Library\mingw-w64\bin`, `Library\usr\bin`,
/// `Library\bin`, `Scripts` and `bin` under it.
pub fn activated_dirs(prefix: &std::path::Path) -> Vec<std::path::PathBuf> {
    if cfg!(windows) {
        vec![
            prefix.to_path_buf(),
            prefix.join("Library").join("mingw-w64").join("bin"),
            prefix.join("Library").join("usr").join("bin"),
            prefix.join("Library").join("bin"),
            prefix.join("Scripts"),
            prefix.join("bin"),
        ]
    } else {
        vec![prefix.join("bin")]
    }
}

/// The environment of a child, computed from `vars` (the worker's own
/// environment): the allowlist of the module docs, `PATH` cleaned of the
/// activated environments' directories and of entries that mean the current
/// directory (or [`DEFAULT_PATH`]), then [`EnvRules::overrides`].
/// Sorted by name, so the result does not depend on the order of `vars`.
pub fn child_environment(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    rules: &EnvRules,
) -> Vec<(OsString, OsString)> {
    let vars: Vec<(OsString, OsString)> = vars.into_iter().collect();
    // Directories an activation prepended: <prefix>/bin of every activation
    // state variable naming a prefix.
    let activated: Vec<std::path::PathBuf> = vars
        .iter()
        .filter(|(k, _)| {
            k.to_str().map(canonical_name).is_some_and(|k| {
                k == "CONDA_PREFIX"
                    || (k.starts_with("CONDA_PREFIX_") && is_activation_variable(&k))
            })
        })
        .filter(|(_, v)| !v.is_empty())
        .flat_map(|(_, v)| activated_dirs(std::path::Path::new(v)))
        .collect();
    let mut out: Vec<(OsString, OsString)> = Vec::new();
    for (k, v) in vars {
        let Some(name) = k.to_str() else { continue };
        if !rules.passes(name) {
            continue;
        }
        if canonical_name(name) == "PATH" {
            if let Some(path) = clean_path(&v, &activated) {
                out.push(("PATH".into(), path));
            }
        } else {
            out.push((k, v));
        }
    }
    if !out.iter().any(|(k, _)| k == "PATH") {
        out.push(("PATH".into(), DEFAULT_PATH.into()));
    }
    for (k, v) in &rules.overrides {
        out.retain(|(n, _)| n != k);
        out.push((k.clone(), v.clone()));
    }
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

/// `PATH` without the entries in `drop` (compared as paths, so a trailing
/// `/` does not matter) and without empty or relative entries (the current
/// directory); `None` when no entry is left.
fn clean_path(path: &OsStr, drop: &[std::path::PathBuf]) -> Option<OsString> {
    let kept: Vec<std::path::PathBuf> = std::env::split_paths(path)
        .filter(|entry| entry.is_absolute())
        .filter(|entry| !drop.iter().any(|d| same_dir(d, entry)))
        .collect();
    if kept.is_empty() {
        return None;
    }
    // An absolute entry with ':' cannot come out of split_paths.
    std::env::join_paths(kept).ok()
}

/// Whether two `PATH` entries name one directory, compared by components
/// (a trailing separator does not matter); on Windows without regard to
/// case, as its filesystems compare names.
fn same_dir(a: &std::path::Path, b: &std::path::Path) -> bool {
    if cfg!(windows) {
        let low = |p: &std::path::Path| p.to_string_lossy().to_lowercase();
        std::path::Path::new(&low(a))
            .components()
            .eq(std::path::Path::new(&low(b)).components())
    } else {
        a.components().eq(b.components())
    }
}

/// The names (never the values) of the variables a child gets from `vars`
/// under `rules`, sorted: what `conda://capabilities` lists.
pub fn passed_names(
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    rules: &EnvRules,
) -> Vec<String> {
    child_environment(vars, rules)
        .into_iter()
        .filter_map(|(k, _)| k.into_string().ok())
        .collect()
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
    fn activation_variables() {
        for v in [
            "CONDA_PREFIX",
            "CONDA_PREFIX_1",
            "CONDA_PREFIX_12",
            "_CE_M",
            "CONDA_SHLVL",
        ] {
            assert!(is_activation_variable(v), "{v}");
        }
        for v in [
            "CONDA_PREFIX_",
            "CONDA_PREFIX_X",
            "CONDA_EXE",
            "CONDA_PKGS_DIRS",
            "PATH",
        ] {
            assert!(!is_activation_variable(v), "{v}");
        }
    }

    #[test]
    fn allowlist() {
        for v in [
            "PATH",
            "HOME",
            "LC_ALL",
            "XDG_CACHE_HOME",
            "https_proxy",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "no_proxy",
            "SSL_CERT_FILE",
            "CONDA_PKGS_DIRS",
            "CONDA_EXE",
            "CONDARC",
            "MAMBA_ROOT_PREFIX",
            "PIP_INDEX_URL",
            "PYTHONNOUSERSITE",
        ] {
            assert!(allowed_by_default(v, false), "{v}");
        }
        for v in [
            "GITHUB_TOKEN",
            "X_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "LD_PRELOAD",
            "PYTHONPATH",
            "CONDA_PREFIX",
            "CONDA_PREFIX_2",
            "_PROXY",
            "SSH_AUTH_SOCK",
        ] {
            assert!(!allowed_by_default(v, false), "{v}");
        }
        assert!(!allowed_by_default("XDG_CONFIG_HOME", true));
    }

    #[test]
    fn globs() {
        assert!(glob_match("MY_*", "MY_VAR"));
        assert!(glob_match("MY_*", "MY_"));
        assert!(!glob_match("MY_*", "XMY_VAR"));
        assert!(glob_match("*_KEY", "X_API_KEY"));
        assert!(glob_match("A*B*C", "AxxBxxC"));
        assert!(!glob_match("A*B*C", "AxxBxx"));
        assert!(glob_match("EXACT", "EXACT"));
        assert!(!glob_match("EXACT", "EXACTLY"));
        assert!(glob_match("*", "ANY"));
        assert!(check_pattern("MY_*").is_ok());
        assert!(check_pattern("").is_err());
        assert!(check_pattern("A=B").is_err());
        assert!(check_pattern("A B").is_err());
    }

    #[cfg(unix)]
    #[test]
    fn environment_of_a_child() {
        let env = vars(&[
            ("PATH", "/envs/A/bin:/usr/bin:/envs/B/bin/:/bin"),
            ("CONDA_PREFIX", "/envs/A"),
            ("CONDA_PREFIX_1", "/envs/B"),
            ("CONDA_SHLVL", "2"),
            ("GITHUB_TOKEN", "ghp_x"),
            ("X_API_KEY", "k"),
            ("MY_SETTING", "1"),
            ("HOME", "/home/me"),
            ("XDG_CONFIG_HOME", "/home/me/.config"),
            ("CONDA_PKGS_DIRS", "/pkgs"),
        ]);
        let rules = EnvRules {
            pass_env: vec!["MY_*".into()],
            ..EnvRules::default()
        };
        let out = child_environment(env.clone(), &rules);
        let names: Vec<&str> = out
            .iter()
            .map(|(k, _)| k.to_str().expect("utf-8"))
            .collect();
        assert_eq!(
            names,
            [
                "CONDA_PKGS_DIRS",
                "HOME",
                "MY_SETTING",
                "PATH",
                "XDG_CONFIG_HOME"
            ]
        );
        let path = &out.iter().find(|(k, _)| k == "PATH").expect("PATH").1;
        assert_eq!(path, "/usr/bin:/bin");
        let foreign = EnvRules {
            foreign_user: true,
            overrides: vec![("HOME".into(), "/var/lib/worker".into())],
            ..EnvRules::default()
        };
        let out = child_environment(env, &foreign);
        let home = &out.iter().find(|(k, _)| k == "HOME").expect("HOME").1;
        assert_eq!(home, "/var/lib/worker");
        assert!(!out.iter().any(|(k, _)| k == "XDG_CONFIG_HOME"));
        assert!(!out.iter().any(|(k, _)| k == "MY_SETTING"));
    }

    #[cfg(unix)]
    #[test]
    fn path_never_names_the_current_directory() {
        let path_of = |env: &[(&str, &str)]| {
            let out = child_environment(vars(env), &EnvRules::default());
            let found: Vec<&OsString> = out
                .iter()
                .filter(|(k, _)| k == "PATH")
                .map(|(_, v)| v)
                .collect();
            assert_eq!(found.len(), 1, "{out:?}");
            found[0].to_str().expect("utf-8").to_owned()
        };
        assert_eq!(path_of(&[]), DEFAULT_PATH);
        assert_eq!(path_of(&[("PATH", "")]), DEFAULT_PATH);
        assert_eq!(path_of(&[("PATH", ":.:bin::")]), DEFAULT_PATH);
        assert_eq!(
            path_of(&[("PATH", ":/opt/x/bin::.:/usr/bin:")]),
            "/opt/x/bin:/usr/bin"
        );
        // The activated environment's directory was the only one.
        assert_eq!(
            path_of(&[("PATH", "/envs/A/bin:"), ("CONDA_PREFIX", "/envs/A")]),
            DEFAULT_PATH
        );
    }

    /// Windows: `;` separates `PATH`, names are case-insensitive (`Path`),
    /// drive letters make a path absolute, and an activation's directories
    /// (`<prefix>`, `Library\bin`, `Scripts`, ...) are dropped whatever
    /// their case.
    #[cfg(windows)]
    #[test]
    fn windows_path_and_names() {
        let env = vars(&[
            (
                "Path",
                r"C:\envs\A;C:\Windows\System32;c:\envs\a\Library\bin;.;relative\dir;;C:\envs\A\Scripts\;D:\Tools",
            ),
            ("CONDA_PREFIX", r"C:\envs\A"),
            ("SystemRoot", r"C:\Windows"),
            ("UserProfile", r"C:\Users\me"),
            ("SECRET_TOKEN", "x"),
        ]);
        let out = child_environment(env, &EnvRules::default());
        let names: Vec<String> = out
            .iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect();
        assert!(names.contains(&"PATH".to_string()), "{names:?}");
        assert!(names.contains(&"SystemRoot".to_string()), "{names:?}");
        assert!(names.contains(&"UserProfile".to_string()), "{names:?}");
        assert!(
            !names
                .iter()
                .any(|n| n == "SECRET_TOKEN" || n == "CONDA_PREFIX")
        );
        let path = &out.iter().find(|(k, _)| k == "PATH").expect("PATH").1;
        assert_eq!(path, r"C:\Windows\System32;D:\Tools");
        let bare = child_environment(vars(&[("PATH", ".;x")]), &EnvRules::default());
        assert_eq!(
            bare.iter().find(|(k, _)| k == "PATH").expect("PATH").1,
            DEFAULT_PATH
        );
    }
}
