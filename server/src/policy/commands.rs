//! What the server acts on about conda's commands besides their policy
//! verdict ([`super::table`]): one row per command path, keyed as the
//! policy table is (without `conda`, space-separated), one column per fact.
//! A new conda command the server has to know about is one row here (and
//! one in the policy table); the test `every_row_is_a_command_of_the_recorded_parser`
//! fails when a row names a path the recorded conda parser does not have.
//!
//! Rows name canonical command paths: an alias (`uninstall`, `upgrade`) is
//! resolved to its command before a lookup (`crate::argparse::resolve`),
//! and a command without a row has none of the facts.

/// When a command removes the environment it targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removes {
    /// Never.
    Never,
    /// Always (`env remove`).
    Always,
    /// When an action with this dest was given (`remove --all`).
    With(&'static str),
}

/// The facts of one command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandFacts {
    /// Command path without `conda`, space-separated (`"env create"`).
    pub path: &'static str,
    /// It solves against channels: `--allowed-channel` is checked on the
    /// channels it uses, and it may run long even as a dry run (the solve
    /// and the channel index download are the slow part).
    pub solves: bool,
    /// It changes the environment it targets (`--name`/`--prefix`, else
    /// conda's default prefix): `--protect-env` and base protection apply.
    /// Others that take `--name`/`--prefix` (`config`, `run`, `list`,
    /// `export`) change no environment's packages.
    pub changes_target: bool,
    /// It creates an environment at its target: the prediction of existing
    /// environments (`replace_existing`) and the postcondition `created`.
    pub creates: bool,
    /// When it removes the environment it targets (the in-process checks
    /// of unmanaged files, the postcondition `removed`).
    pub removes: Removes,
    /// It may run long whatever its arguments (`run`, `search`): a client
    /// that declared tasks gets a task handle at once.
    pub long: bool,
    /// Its success is checked after it exits 0 (`postcondition_failed`).
    pub checked: bool,
    /// Its tool is loaded up front in hosts that defer tools (the ones most
    /// sessions start with, and the ones a request to set something up
    /// ends in; docs/reference.md "Generated tools").
    pub always_loaded: bool,
    /// The dests of its options (or positionals) whose values name files
    /// conda reads: they must lie where the caller may read
    /// (`crate::call::plan::reads`). The test
    /// `every_file_dest_of_the_recorded_parser_is_read_or_written` holds
    /// them against the recorded parser.
    pub reads: &'static [&'static str],
    /// The file conda reads from its working directory when none of
    /// `reads` is given (`env create`, `env update`: `environment.yml`);
    /// checked like a given one when it exists.
    pub reads_default: Option<&'static str>,
}

impl CommandFacts {
    /// Whether this row's path is `path` (its elements, without `conda`).
    pub fn is<S: AsRef<str>>(&self, path: &[S]) -> bool {
        self.path.split(' ').eq(path.iter().map(AsRef::as_ref))
    }
}

/// A row with no facts, the base of the rows below.
const NONE: CommandFacts = CommandFacts {
    path: "",
    solves: false,
    changes_target: false,
    creates: false,
    removes: Removes::Never,
    long: false,
    checked: false,
    always_loaded: false,
    reads: &[],
    reads_default: None,
};

/// The dests that name a file to read (`--file` of the solves and of
/// `config`, `compare`'s positional).
const FILE: &[&str] = &["file"];

/// The environment file `env create` and `env update` read from conda's
/// working directory without `--file` (their help: "default:
/// environment.yml").
const ENV_FILE: Option<&str> = Some("environment.yml");

/// The table (see the module docs), one row per line.
#[rustfmt::skip]
pub const COMMANDS: &[CommandFacts] = &[
    CommandFacts { path: "create", reads: FILE, solves: true, changes_target: true, creates: true, checked: true, always_loaded: true, ..NONE },
    CommandFacts { path: "install", reads: FILE, solves: true, changes_target: true, checked: true, always_loaded: true, ..NONE },
    CommandFacts { path: "update", reads: FILE, solves: true, changes_target: true, checked: true, ..NONE },
    CommandFacts { path: "remove", solves: true, changes_target: true, removes: Removes::With("all"), checked: true, ..NONE },
    CommandFacts { path: "rename", changes_target: true, ..NONE },
    CommandFacts { path: "env create", reads: FILE, reads_default: ENV_FILE, solves: true, changes_target: true, creates: true, checked: true, ..NONE },
    CommandFacts { path: "env update", reads: FILE, reads_default: ENV_FILE, solves: true, changes_target: true, ..NONE },
    CommandFacts { path: "env remove", changes_target: true, removes: Removes::Always, ..NONE },
    CommandFacts { path: "env config vars set", changes_target: true, ..NONE },
    CommandFacts { path: "env config vars unset", changes_target: true, ..NONE },
    CommandFacts { path: "doctor", changes_target: true, ..NONE },
    CommandFacts { path: "run", long: true, ..NONE },
    CommandFacts { path: "search", long: true, always_loaded: true, ..NONE },
    CommandFacts { path: "info", always_loaded: true, ..NONE },
    CommandFacts { path: "list", always_loaded: true, ..NONE },
    CommandFacts { path: "env list", always_loaded: true, ..NONE },
    CommandFacts { path: "compare", reads: FILE, ..NONE },
    CommandFacts { path: "config", reads: FILE, ..NONE },
];

/// Commands whose `file` dest names a file conda writes, not reads
/// (`export --file`): not [`CommandFacts::reads`].
pub const WRITES_FILE: &[&str] = &["export", "env export"];

/// The row of `path` (elements without `conda`), if it has one.
pub fn command<S: AsRef<str>>(path: &[S]) -> Option<&'static CommandFacts> {
    COMMANDS.iter().find(|c| c.is(path))
}

/// Whether `path` removes the environment it targets; `given(dest)` says
/// whether an action with that dest was given (`remove --all`).
pub fn removes_environment<S: AsRef<str>>(path: &[S], given: impl Fn(&str) -> bool) -> bool {
    match command(path).map(|c| c.removes) {
        Some(Removes::Always) => true,
        Some(Removes::With(dest)) => given(dest),
        Some(Removes::Never) | None => false,
    }
}

/// Whether `path` has a row and `fact` holds for it (`false` without a
/// row).
pub fn holds<S: AsRef<str>>(path: &[S], fact: impl Fn(&CommandFacts) -> bool) -> bool {
    command(path).is_some_and(fact)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_a_command_of_the_recorded_parser() {
        let catalog = crate::catalog::build(&crate::dump::recorded_conda()).expect("catalog");
        let mut unknown = Vec::new();
        for row in COMMANDS {
            if !catalog.commands.iter().any(|c| row.is(c.subpath())) {
                unknown.push(row.path);
            }
        }
        assert!(
            unknown.is_empty(),
            "rows that are not commands of the recorded parser: {unknown:?}"
        );
        // A dest a row reasons about exists in its command.
        for row in COMMANDS {
            if let Removes::With(dest) = row.removes {
                let cmd = catalog
                    .commands
                    .iter()
                    .find(|c| row.is(c.subpath()))
                    .expect("checked above");
                assert!(
                    cmd.arguments.iter().any(|a| a.dest == dest),
                    "{}: no dest {dest}",
                    row.path
                );
            }
        }
    }

    /// A dest named `file`, or whose help says it reads a file, is in its
    /// row's `reads`, unless the command writes that file: a new conda
    /// option that reads files fails here until the table knows it.
    #[test]
    fn every_file_dest_of_the_recorded_parser_is_read_or_written() {
        let catalog = crate::catalog::build(&crate::dump::recorded_conda()).expect("catalog");
        for cmd in &catalog.commands {
            let path = cmd.subpath().join(" ");
            for a in &cmd.arguments {
                let help = a.help.as_deref().unwrap_or("").to_lowercase();
                let reads_file = a.dest == "file"
                    || help.starts_with("read ")
                    || help.contains("path to the environment file");
                if !reads_file || WRITES_FILE.contains(&path.as_str()) {
                    continue;
                }
                let row = command(cmd.subpath());
                assert!(
                    row.is_some_and(|r| r.reads.contains(&a.dest.as_str())),
                    "{path}: {} reads a file but is not in its row's reads",
                    a.dest
                );
            }
        }
        for row in COMMANDS {
            let Some(cmd) = catalog.commands.iter().find(|c| row.is(c.subpath())) else {
                continue;
            };
            for dest in row.reads {
                assert!(
                    cmd.arguments.iter().any(|a| a.dest == *dest),
                    "{}: no dest {dest}",
                    row.path
                );
            }
        }
    }

    #[test]
    fn each_path_has_one_row_and_lookups_find_it() {
        for (i, row) in COMMANDS.iter().enumerate() {
            assert!(
                COMMANDS[..i].iter().all(|r| r.path != row.path),
                "{} twice",
                row.path
            );
            let path: Vec<&str> = row.path.split(' ').collect();
            assert_eq!(command(&path), Some(row));
        }
        assert!(holds(&["env", "create"], |c| c.creates));
        assert!(!holds(&["env"], |c| c.creates));
        assert!(!holds(&["info", "x"], |c| c.always_loaded));
        assert!(command::<&str>(&[]).is_none());
    }
}
