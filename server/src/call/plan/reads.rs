//! The files a call makes conda read (docs/safety.md "Files a call
//! reads"): an option that names a file conda reads (`create --file`,
//! `env create --file`, `compare`'s file, ...: the dests of
//! [`crate::policy::commands::CommandFacts::reads`]) is the caller's request
//! to read that file, and conda reads it as the user it runs as, on a
//! read-only server too (a file that is no package list comes back in
//! conda's error as a missing package's name). So such a path must lie in a
//! place the caller may read:
//!
//! * the home of the OS user the call runs as (a principal's own OS user,
//!   else `--worker-user`, else the server's own user: `HOME`);
//! * a root the client declared (MCP `roots/list`, `file://` roots);
//! * a directory of `--allow-read-path` (repeatable);
//!
//! and never in `/etc`, `/proc`, `/sys`, `/dev` or another user's home
//! (a directory that is the home, in the user database, of the user who
//! owns it), unless an `--allow-read-path` directory inside that place
//! names it. The path is read as conda would: `~` is the caller's home
//! (`~user` that user's), a relative path is taken against the call's
//! working directory, a `file://` URL is its path; `..` is taken away as
//! Python's `abspath` does, then symlinks are resolved (for a path that does
//! not exist, on its nearest existing parent). A value with a `$` is
//! refused: conda expands variables in it, with values the server does not
//! see. A URL of another scheme is no local file and passes.
//!
//! `env create` and `env update` without `--file` read `environment.yml`
//! from conda's working directory; when it exists there it is checked as
//! if given.
//!
//! Decided on the argv that runs, so the typed, compact and raw
//! (`conda_execute`) tools follow the same rule; what the resolver cannot
//! read (a greedy plugin's arguments) is not checked. `conda run` runs any
//! program and is out of scope (`--allow-exec`).

use std::path::{Component, Path, PathBuf};

use crate::argparse::Resolved;
use crate::catalog::Catalog;
use crate::policy::commands;
use crate::target;

/// Places no call reads, unless an `--allow-read-path` inside them names
/// the directory.
pub const NEVER: &[&str] = &["/etc", "/proc", "/sys", "/dev"];

/// Whose call it is, for the rule: the home conda expands `~` to and the
/// user conda runs as.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// The home of the OS user the call runs as (`None`: unknown, then
    /// only the roots and `--allow-read-path` are readable).
    pub home: Option<PathBuf>,
    /// That user's uid (Unix): its own home is no other user's.
    pub uid: Option<u32>,
}

impl Caller {
    /// The caller of calls that run as the server's worker: `--worker-user`
    /// `user` (its home `home` when `--worker-home` gave one, else the
    /// user database's), or the server's own user (`HOME`, else the user
    /// database's).
    pub fn own(user: Option<&str>, home: Option<&Path>) -> Self {
        match user {
            Some(u) => {
                let mut c = Self::of_user(u);
                if let Some(h) = home {
                    c.home = Some(h.to_path_buf());
                }
                c
            }
            None => Self::this_process(),
        }
    }

    /// The caller whose calls run as the OS user `name` (a principal mapped
    /// to it): that user's home and uid in the user database.
    #[cfg(unix)]
    pub fn of_user(name: &str) -> Self {
        match nix::unistd::User::from_name(name) {
            Ok(Some(u)) => Caller {
                home: Some(u.dir),
                uid: Some(u.uid.as_raw()),
            },
            _ => Caller::default(),
        }
    }

    /// Windows: no other OS users (`crate::host_env::NOT_ON_WINDOWS`).
    #[cfg(not(unix))]
    pub fn of_user(_name: &str) -> Self {
        Self::this_process()
    }

    fn this_process() -> Self {
        #[cfg(unix)]
        let uid = Some(nix::unistd::Uid::effective().as_raw());
        #[cfg(not(unix))]
        let uid = None;
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                #[cfg(unix)]
                return nix::unistd::User::from_uid(nix::unistd::Uid::effective())
                    .ok()
                    .flatten()
                    .map(|u| u.dir);
                #[cfg(not(unix))]
                None
            });
        Caller { home, uid }
    }
}

/// Why a file option was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadRule {
    /// Not under the caller's home, a client root or `--allow-read-path`.
    Outside,
    /// Under `/etc`, `/proc`, `/sys` or `/dev`.
    System,
    /// In another user's home.
    OtherHome,
    /// The value holds a `$` (conda expands variables the server does not
    /// see).
    Variable,
}

impl ReadRule {
    /// The rule's word (the error's `details.rule`).
    pub fn word(self) -> &'static str {
        match self {
            ReadRule::Outside => "outside_allowed_places",
            ReadRule::System => "system_directory",
            ReadRule::OtherHome => "other_users_home",
            ReadRule::Variable => "variable",
        }
    }

    /// The rule, for the refusal's sentence.
    pub fn describe(self) -> &'static str {
        match self {
            ReadRule::Outside => {
                "it is not under the caller's home, a root the client declared, or a directory of --allow-read-path; start the server with --allow-read-path DIR to allow a directory"
            }
            ReadRule::System => {
                "it is under /etc, /proc, /sys or /dev, which no call reads; start the server with --allow-read-path naming a directory inside them to allow one"
            }
            ReadRule::OtherHome => {
                "it is in another user's home; start the server with --allow-read-path naming a directory inside it to allow one"
            }
            ReadRule::Variable => {
                "it holds a $ variable, which conda expands with values the server does not see; give the path itself"
            }
        }
    }
}

/// A refused file option: names the option and the rule, never the path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: the file that {option} names may not be read: {}; nothing was run", .rule.describe())]
pub struct ReadRefused {
    /// What was to run (`conda create`).
    pub what: String,
    /// The option (`--file`; a positional by its dest).
    pub option: String,
    /// The rule it breaks.
    pub rule: ReadRule,
}

/// A boxed future of a [`ClientRoots`] listing.
pub type Listing<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Vec<PathBuf>> + Send + 'a>>;

/// The roots a client declared (MCP `roots/list`), asked only for a call
/// that has file options.
pub trait ClientRoots: Send + Sync + std::fmt::Debug {
    /// The client's `file://` roots as local paths (none when the client
    /// could not answer; the caller bounds the wait).
    fn roots(&self) -> Listing<'_>;
}

/// Whether `argv`, run in `cwd`, makes conda read a file the rule checks
/// (the client's roots are asked only then).
pub fn reads_files(catalog: &Catalog, argv: &[String], cwd: &Path) -> bool {
    let resolved = crate::argparse::resolve(catalog, argv);
    !files_read(catalog, &resolved, cwd).is_empty()
}

/// The file options of `resolved` ([`file_options`]), or, without one,
/// the command's default file when it exists in `cwd`, named by `--file`.
fn files_read<'a>(
    catalog: &'a Catalog,
    resolved: &'a Resolved,
    cwd: &Path,
) -> Vec<(String, &'a str)> {
    let mut given = file_options(catalog, resolved);
    let path = target::subpath(catalog, resolved);
    if given.is_empty()
        && let Some(default) = commands::command(&path).and_then(|r| r.reads_default)
        && cwd.join(default).exists()
    {
        given.push(("--file".to_owned(), default));
    }
    given
}

/// `--allow-read-path` and the client's roots, with the caller.
#[derive(Debug, Clone, Copy)]
pub struct ReadPlaces<'a> {
    /// The caller.
    pub caller: &'a Caller,
    /// The client's roots (local paths).
    pub roots: &'a [PathBuf],
    /// `--allow-read-path`.
    pub allowed: &'a [PathBuf],
}

/// The file options of `resolved`: each option (its long spelling,
/// `--file`, or a positional's dest) with its values, in argv order.
pub fn file_options<'a>(catalog: &'a Catalog, resolved: &'a Resolved) -> Vec<(String, &'a str)> {
    let path = target::subpath(catalog, resolved);
    let Some(row) = commands::command(&path) else {
        return Vec::new();
    };
    let cmd = resolved.command();
    let mut out = Vec::new();
    for t in resolved.taken.iter().filter(|t| t.command == cmd) {
        let arg = &catalog.commands[cmd].arguments[t.arg];
        if !row.reads.contains(&arg.dest.as_str()) {
            continue;
        }
        // Named by its long spelling (`--file` for `-f`), a positional by
        // its dest.
        let option = arg
            .option_strings
            .iter()
            .find(|o| o.starts_with("--"))
            .or(arg.option_strings.first())
            .cloned()
            .unwrap_or_else(|| arg.dest.clone());
        out.extend(t.strings.iter().map(|s| (option.clone(), s.as_str())));
    }
    out
}

/// Checks every file option of `argv` (what follows `conda`), run in
/// `cwd`, against `places`; `what` names the call in the refusal.
///
/// Errors: the first [`ReadRefused`].
pub fn check(
    catalog: &Catalog,
    argv: &[String],
    cwd: &Path,
    places: ReadPlaces<'_>,
    what: &str,
) -> Result<(), ReadRefused> {
    let resolved = crate::argparse::resolve(catalog, argv);
    for (option, value) in files_read(catalog, &resolved, cwd) {
        if let Err(rule) = check_value(value, cwd, places) {
            return Err(ReadRefused {
                what: what.to_owned(),
                option,
                rule,
            });
        }
    }
    Ok(())
}

/// The rule one value breaks, if any (see the module docs).
pub fn check_value(value: &str, cwd: &Path, places: ReadPlaces<'_>) -> Result<(), ReadRule> {
    if value.contains('$') {
        return Err(ReadRule::Variable);
    }
    let Some(path) = local_path(value, cwd, places.caller) else {
        return Ok(());
    };
    let lexical = resolve(&normalize(&path));
    check_resolved(&lexical, places)?;
    // The kernel's reading of a `..` after a symlink may differ from
    // Python's `abspath`: both must pass.
    if let Ok(real) = std::fs::canonicalize(&path) {
        check_resolved(&real, places)?;
    }
    Ok(())
}

/// The local path a value names, absolute; `None` for a URL that is no
/// local file.
fn local_path(value: &str, cwd: &Path, caller: &Caller) -> Option<PathBuf> {
    if let Some((scheme, _)) = value.split_once("://")
        && !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    {
        if !scheme.eq_ignore_ascii_case("file") {
            return None;
        }
        // An unreadable file URL is checked as the (relative) text it is.
        return Some(match url::Url::parse(value).ok()?.to_file_path() {
            Ok(p) => p,
            Err(()) => cwd.join(value),
        });
    }
    if let Some(rest) = value.strip_prefix('~') {
        let (user, tail) = rest.split_once('/').unwrap_or((rest, ""));
        let home = if user.is_empty() {
            caller.home.clone()
        } else {
            Caller::of_user(user).home.filter(|_| cfg!(unix))
        };
        if let Some(home) = home {
            return Some(home.join(tail));
        }
        // Python's expanduser leaves it as it is.
    }
    Some(cwd.join(value))
}

/// `..` and `.` taken away lexically (Python's `os.path.abspath`).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Symlinks resolved: the path itself when it exists, else its nearest
/// existing parent with the rest appended.
fn resolve(path: &Path) -> PathBuf {
    let mut base = path.to_path_buf();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&base) {
            return rest.iter().rev().fold(real, |p, c| p.join(c));
        }
        match (base.file_name().map(ToOwned::to_owned), base.parent()) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                base = parent.to_path_buf();
            }
            _ => return path.to_path_buf(),
        }
    }
}

/// A directory resolved for comparison (symlinks, when it exists).
fn place(dir: &Path) -> PathBuf {
    resolve(&normalize(dir))
}

fn check_resolved(path: &Path, places: ReadPlaces<'_>) -> Result<(), ReadRule> {
    let allowed: Vec<PathBuf> = places.allowed.iter().map(|d| place(d)).collect();
    // An --allow-read-path inside a forbidden place opens that directory.
    let named_inside = |forbidden: &Path| {
        allowed
            .iter()
            .any(|a| a.starts_with(forbidden) && path.starts_with(a))
    };
    if cfg!(unix) {
        for never in NEVER {
            let never = place(Path::new(never));
            if path.starts_with(&never) && !named_inside(&never) {
                return Err(ReadRule::System);
            }
        }
    }
    if let Some(home) = other_home(path, places.caller.uid)
        && !named_inside(&home)
    {
        return Err(ReadRule::OtherHome);
    }
    let home = places.caller.home.as_deref().map(place);
    let inside = home.iter().chain(&allowed).any(|d| path.starts_with(d))
        || places.roots.iter().any(|r| path.starts_with(place(r)));
    if inside {
        Ok(())
    } else {
        Err(ReadRule::Outside)
    }
}

/// The other user's home `path` lies in, if any: an existing directory on
/// its way whose owner (not the caller `uid`) has it as home in the user
/// database.
#[cfg(unix)]
fn other_home(path: &Path, uid: Option<u32>) -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt;
    for dir in path.ancestors() {
        let Ok(meta) = std::fs::metadata(dir) else {
            continue;
        };
        if !meta.is_dir() || Some(meta.uid()) == uid {
            continue;
        }
        let owner = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(meta.uid()));
        if let Ok(Some(u)) = owner
            && place(&u.dir) == dir
        {
            return Some(dir.to_path_buf());
        }
    }
    None
}

#[cfg(not(unix))]
fn other_home(_path: &Path, _uid: Option<u32>) -> Option<PathBuf> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn file_options_come_from_the_facts_table() {
        let c = crate::catalog::build(&crate::dump::recorded_conda()).expect("catalog");
        let options = |line: &str| {
            let a = argv(line);
            let r = crate::argparse::resolve(&c, &a);
            file_options(&c, &r)
                .into_iter()
                .map(|(o, v)| format!("{o}={v}"))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            options("create -n x --file /a --file=/b --dry-run"),
            ["--file=/a", "--file=/b"]
        );
        assert_eq!(options("install -n x -f /a"), ["--file=/a"]);
        assert_eq!(options("env create -f /a /b"), ["--file=/a", "--file=/b"]);
        assert_eq!(options("env update -f /a"), ["--file=/a"]);
        assert_eq!(options("compare -n x /a"), ["file=/a"]);
        assert_eq!(options("config --file /a --show"), ["--file=/a"]);
        // Written, not read: `export --file`.
        assert!(options("export -n x --file /a").is_empty());
        assert!(options("list -n x").is_empty());
    }

    #[test]
    fn the_default_environment_file_is_checked_when_it_exists() {
        let c = crate::catalog::build(&crate::dump::recorded_conda()).expect("catalog");
        let t = tempfile::tempdir().expect("tmp");
        let home = t.path().join("home");
        let other = t.path().join("other");
        std::fs::create_dir_all(&home).expect("mkdir");
        std::fs::create_dir_all(&other).expect("mkdir");
        let caller = Caller {
            home: Some(home.clone()),
            uid: None,
        };
        let places = ReadPlaces {
            caller: &caller,
            roots: &[],
            allowed: &[],
        };
        let run = |line: &str, cwd: &Path| check(&c, &argv(line), cwd, places, "conda env create");
        // Absent: conda has nothing to read, nothing to check.
        assert!(run("env create -n x", &other).is_ok());
        std::fs::write(other.join("environment.yml"), "name: x\n").expect("write");
        let e = run("env create -n x", &other).expect_err("outside");
        assert_eq!((e.option.as_str(), e.rule), ("--file", ReadRule::Outside));
        assert!(run("env update -n x", &other).is_err());
        std::fs::write(home.join("environment.yml"), "name: x\n").expect("write");
        assert!(run("env create -n x", &home).is_ok());
        // A given file replaces the default.
        let given = format!("env create -n x --file {}/environment.yml", home.display());
        assert!(run(&given, &other).is_ok());
    }

    #[test]
    fn home_roots_and_allowed_directories_are_readable_and_nothing_else() {
        let t = tempfile::tempdir().expect("tmp");
        let home = t.path().join("home");
        let root = t.path().join("root");
        let extra = t.path().join("extra");
        let elsewhere = t.path().join("elsewhere");
        for d in [&home, &root, &extra, &elsewhere] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        std::fs::write(home.join("env.yml"), "x").expect("write");
        let caller = Caller {
            home: Some(home.clone()),
            uid: None,
        };
        let roots = [root.clone()];
        let allowed = [extra.clone()];
        let places = ReadPlaces {
            caller: &caller,
            roots: &roots,
            allowed: &allowed,
        };
        let cwd = Path::new("/");
        let check = |v: &str| check_value(v, cwd, places);
        for ok in [
            home.join("env.yml"),
            home.join("missing/deeper.txt"),
            root.join("specs.txt"),
            extra.join("a/b.txt"),
        ] {
            assert_eq!(check(ok.to_str().expect("utf-8")), Ok(()), "{ok:?}");
        }
        assert_eq!(check("~/env.yml"), Ok(()));
        assert_eq!(check("https://example.org/env.yml"), Ok(()));
        let url = url::Url::from_file_path(home.join("env.yml")).expect("url");
        assert_eq!(check(url.as_str()), Ok(()));
        // Relative: against the call's cwd.
        assert_eq!(check_value("env.yml", &home, places), Ok(()));
        assert_eq!(
            check_value("env.yml", &elsewhere, places),
            Err(ReadRule::Outside)
        );
        let out = elsewhere.join("token");
        assert_eq!(check(out.to_str().expect("utf-8")), Err(ReadRule::Outside));
        // `..` and symlinks are resolved first.
        let dotdot = format!("{}/../elsewhere/token", home.display());
        assert_eq!(check(&dotdot), Err(ReadRule::Outside));
        let dotdot_missing = format!("{}/nope/../../elsewhere/token", home.display());
        assert_eq!(check(&dotdot_missing), Err(ReadRule::Outside));
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&elsewhere, home.join("link")).expect("symlink");
            let through = home.join("link/token");
            assert_eq!(
                check(through.to_str().expect("utf-8")),
                Err(ReadRule::Outside)
            );
            std::os::unix::fs::symlink("/etc/hostname", home.join("host")).expect("symlink");
            assert_eq!(
                check(home.join("host").to_str().expect("utf-8")),
                Err(ReadRule::System)
            );
            for system in ["/etc/hostname", "/proc/self/environ", "/sys/x", "/dev/null"] {
                assert_eq!(check(system), Err(ReadRule::System), "{system}");
            }
            let etc_url = "file:///etc/hostname";
            assert_eq!(check(etc_url), Err(ReadRule::System));
        }
        assert_eq!(check("$HOME/env.yml"), Err(ReadRule::Variable));
    }

    #[cfg(unix)]
    #[test]
    fn system_places_open_only_to_an_allowed_directory_inside_them() {
        let caller = Caller {
            home: Some(PathBuf::from("/")),
            uid: None,
        };
        let wide = [PathBuf::from("/")];
        let places = ReadPlaces {
            caller: &caller,
            roots: &wide,
            allowed: &wide,
        };
        // A home, root or allowed directory of `/` does not open /etc.
        assert_eq!(
            check_value("/etc/hostname", Path::new("/"), places),
            Err(ReadRule::System)
        );
        let inside = [PathBuf::from("/etc")];
        let places = ReadPlaces {
            allowed: &inside,
            ..places
        };
        assert_eq!(check_value("/etc/hostname", Path::new("/"), places), Ok(()));
    }

    #[cfg(unix)]
    #[test]
    fn another_users_home_is_refused_and_ones_own_is_not() {
        // root's home belongs to root: another user's home for anyone else.
        let Ok(Some(root)) = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(0)) else {
            return;
        };
        if !root.dir.is_dir() || root.dir == Path::new("/") {
            return;
        }
        let everything = [PathBuf::from("/")];
        let someone = Caller {
            home: None,
            uid: Some(65534),
        };
        let places = ReadPlaces {
            caller: &someone,
            roots: &[],
            allowed: &everything,
        };
        let file = root.dir.join(".token");
        let file = file.to_str().expect("utf-8");
        assert_eq!(
            check_value(file, Path::new("/"), places),
            Err(ReadRule::OtherHome)
        );
        let owner = Caller {
            home: Some(root.dir.clone()),
            uid: Some(0),
        };
        let places = ReadPlaces {
            caller: &owner,
            ..places
        };
        assert_eq!(check_value(file, Path::new("/"), places), Ok(()));
    }
}
