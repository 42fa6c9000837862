//! The classification table: every conda command the policy knows, as data.
//!
//! One [`Entry`] per command path (without the leading `conda`; `""` is the
//! root parser), keyed by argparse *dest* — the name under which conda's
//! code reads an option (`args.dry_run`), so aliases and abbreviations of
//! one option all land on the same row. Each entry is checked against
//! conda's sources (conda 26.9, `conda/cli/main_*.py`,
//! `conda/plugins/subcommands/*`, and the conda-completion plugin's parser);
//! the notes say where a non-obvious rule comes from. The test
//! `table_covers_the_recorded_parser` fails when the recorded conda parser
//! has a command or an action (dest) the table does not cover, so a new
//! conda release is a red test, not silent drift.
//!
//! How an entry decides ([`super::classify`](mod@super::classify)):
//! 1. any taken action whose dest the entry does not list fails closed
//!    (mutation);
//! 2. otherwise the first clause whose condition holds gives the verdict,
//!    in the order conda's code checks them;
//! 3. otherwise [`Entry::default`].

/// What running a command does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Reads only (may print, may read files and, when open-world, the
    /// network).
    ReadOnly,
    /// Changes environments, packages, configuration, caches or files:
    /// needs `--allow-write`.
    Mutation,
    /// Runs an arbitrary program: needs `--allow-exec`.
    Exec,
}

/// A condition on the resolved command line, by dest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum When {
    /// An action with this dest was given (an option, or a positional that
    /// took at least one value).
    Present(&'static str),
    /// An action with this dest was given with at least one value
    /// (`config --get KEY`, as opposed to a bare `--get`).
    HasValues(&'static str),
}

/// Whether the command reaches beyond the machine (MCP `openWorldHint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenWorld {
    /// Never.
    Never,
    /// Always.
    Always,
    /// Unless an action with this dest is present (`--offline`,
    /// `--no-repodata`).
    UnlessPresent(&'static str),
}

/// The policy of one command.
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    /// Command path without `conda`, space-separated (`"env config vars
    /// set"`); `""` is the root parser.
    pub path: &'static str,
    /// Ordered clauses: the first that holds decides.
    pub clauses: &'static [(When, Verdict)],
    /// The verdict when no clause holds.
    pub default: Verdict,
    /// Dests that never change the verdict (besides [`COMMON_NEUTRAL`]).
    pub neutral: &'static [&'static str],
    /// Dests of options that are the reason a call is a mutation, named in
    /// refusals (`conda config --set requires --allow-write`). Informative
    /// only: the verdict comes from the clauses and the default.
    pub writes: &'static [&'static str],
    /// Network access.
    pub open_world: OpenWorld,
    /// A mutation may remove or overwrite (MCP `destructiveHint`).
    pub destructive: bool,
}

/// Dests shared by (nearly) every conda parser that never change what a
/// command does: help, version, output format and verbosity, the prompt
/// answer, and the subparser choice itself.
pub const COMMON_NEUTRAL: &[&str] = &[
    "help",
    "version",
    "json",
    "console",
    "verbosity",
    "debug",
    "trace",
    "quiet",
    "yes",
    "no_plugins",
    "cmd",
    "subcmd",
    "subcommand",
    "==SUPPRESS==",
];

/// Options of the solver-driven commands (`create`, `install`, `update`,
/// `remove`): channels, solver and networking knobs, package and
/// environment selection. None of them changes whether the command mutates;
/// `dry_run` and `offline` have their own roles.
const SOLVER_NEUTRAL: &[&str] = &[
    "name",
    "prefix",
    "channel",
    "use_local",
    "override_channels",
    "repodata_fns",
    "experimental",
    "no_lock",
    "repodata_use_zst",
    "repodata_use_shards",
    "channel_priority",
    "deps_modifier",
    "ignore_pinned",
    "exclude_newer",
    "force",
    "copy",
    "shortcuts",
    "shortcuts_only",
    "clobber",
    "use_index_cache",
    "ssl_verify",
    "offline",
    "download_only",
    "show_channel_urls",
    "force_pscheck",
    "unknown",
    "file",
    "environment_specifier",
    "packages",
    "solver",
    "subdir",
    "dev",
    "protect_frozen_envs",
    "prune",
    "force_reinstall",
    "update_modifier",
    "revision",
    "clone",
    "no_default_packages",
    "features",
    "force_remove",
    "all",
    "keep_env",
    "package_names",
];

const DRY_RUN: &[(When, Verdict)] = &[(When::Present("dry_run"), Verdict::ReadOnly)];

/// `conda config` (conda/cli/main_config.py `execute_config`): `--show-sources`,
/// `--show`, `--describe`, `--validate` print and return first;
/// `--write-default` writes; `--get KEY...` only reads (the third exclusive
/// group keeps it apart from every writing option); everything else —
/// including a bare `conda config`, a bare `--get` and the file selectors
/// alone — ends in `rc_config.write()`, which (re)writes the rc file.
const CONFIG: &[(When, Verdict)] = &[
    (When::Present("show_sources"), Verdict::ReadOnly),
    (When::Present("show"), Verdict::ReadOnly),
    (When::Present("describe"), Verdict::ReadOnly),
    (When::Present("validate"), Verdict::ReadOnly),
    (When::Present("write_default"), Verdict::Mutation),
    (When::HasValues("get"), Verdict::ReadOnly),
];

/// `conda doctor` / `conda check` (conda/plugins/subcommands/doctor):
/// `--list` returns first; fixes run only with `--fix` and, under
/// `--dry-run`, stop at their confirmation.
const DOCTOR: &[(When, Verdict)] = &[
    (When::Present("list"), Verdict::ReadOnly),
    (When::Present("dry_run"), Verdict::ReadOnly),
    (When::Present("fix"), Verdict::Mutation),
];

/// `conda package` (conda/cli/main_package.py): `--which` returns first,
/// then `--reset` removes untracked files, then `--untracked` lists them;
/// otherwise it builds a package tarball (`--pkg-*`).
const PACKAGE: &[(When, Verdict)] = &[
    (When::Present("which"), Verdict::ReadOnly),
    (When::Present("reset"), Verdict::Mutation),
    (When::Present("untracked"), Verdict::ReadOnly),
];

/// `export` / `env export` write a file with `--file`, else print.
const EXPORT: &[(When, Verdict)] = &[(When::Present("file"), Verdict::Mutation)];

const EXPORT_NEUTRAL: &[&str] = &[
    "channel",
    "override_channels",
    "export_platforms",
    "override_platforms",
    "name",
    "prefix",
    "format",
    "no_builds",
    "ignore_channels",
    "from_history",
];

const fn read_only(path: &'static str, neutral: &'static [&'static str]) -> Entry {
    Entry {
        path,
        clauses: &[],
        default: Verdict::ReadOnly,
        neutral,
        writes: &[],
        open_world: OpenWorld::Never,
        destructive: false,
    }
}

const fn mutation(
    path: &'static str,
    clauses: &'static [(When, Verdict)],
    neutral: &'static [&'static str],
    open_world: OpenWorld,
    destructive: bool,
) -> Entry {
    Entry {
        path,
        clauses,
        default: Verdict::Mutation,
        neutral,
        writes: &[],
        open_world,
        destructive,
    }
}

/// The table. Parents (`env`, `env config`, `env config vars`,
/// `completion`, `plugins`) reached without a subcommand print their usage
/// (conda/cli/main_env.py, main_env_config.py, the plugins subcommand), so
/// they are read-only.
pub const TABLE: &[Entry] = &[
    // the root parser alone: argparse requires a command (only help and
    // version get here and run)
    read_only("", &[]),
    // shell-only mocks: `execute` raises "Run 'conda init' before 'conda
    // activate'" (conda/cli/main_mock_activate.py)
    read_only("activate", &["args"]),
    read_only("deactivate", &[]),
    mutation(
        "clean",
        DRY_RUN,
        &[
            "all",
            "index_cache",
            "packages",
            "tarballs",
            "force_pkgs_dirs",
            "tempfiles",
            "logfiles",
        ],
        OpenWorld::Never,
        true,
    ),
    read_only("commands", &[]),
    read_only("compare", &["name", "prefix", "file"]),
    Entry {
        path: "config",
        clauses: CONFIG,
        default: Verdict::Mutation,
        neutral: &[
            "system",
            "env",
            "file",
            "name",
            "prefix",
            "force",
            "append",
            "prepend",
            "set",
            "remove",
            "clear",
            "remove_key",
            "stdin",
        ],
        writes: &[
            "append",
            "prepend",
            "set",
            "remove",
            "clear",
            "remove_key",
            "stdin",
            "write_default",
        ],
        open_world: OpenWorld::Never,
        destructive: true,
    },
    mutation(
        "create",
        DRY_RUN,
        SOLVER_NEUTRAL,
        OpenWorld::UnlessPresent("offline"),
        // an existing environment at the target is removed first
        true,
    ),
    read_only("env", &[]),
    read_only("env config", &[]),
    read_only("env config vars", &[]),
    read_only("env config vars list", &["name", "prefix"]),
    mutation(
        "env config vars set",
        &[],
        &["vars", "name", "prefix"],
        OpenWorld::Never,
        // overwrites a variable's value
        true,
    ),
    mutation(
        "env config vars unset",
        &[],
        &["vars", "name", "prefix"],
        OpenWorld::Never,
        true,
    ),
    mutation(
        "env create",
        DRY_RUN,
        SOLVER_NEUTRAL,
        OpenWorld::UnlessPresent("offline"),
        true,
    ),
    Entry {
        path: "env export",
        clauses: EXPORT,
        default: Verdict::ReadOnly,
        neutral: EXPORT_NEUTRAL,
        writes: &["file"],
        open_world: OpenWorld::Never,
        destructive: true,
    },
    read_only("env list", &["size"]),
    mutation(
        "env remove",
        DRY_RUN,
        SOLVER_NEUTRAL,
        OpenWorld::Never,
        true,
    ),
    mutation(
        "env update",
        &[],
        SOLVER_NEUTRAL,
        // no --offline option
        OpenWorld::Always,
        true,
    ),
    Entry {
        path: "export",
        clauses: EXPORT,
        default: Verdict::ReadOnly,
        neutral: EXPORT_NEUTRAL,
        writes: &["file"],
        open_world: OpenWorld::Never,
        destructive: true,
    },
    read_only(
        "info",
        &[
            "offline",
            "all",
            "base",
            "envs",
            "system",
            "size",
            "unsafe_channels",
        ],
    ),
    mutation(
        "init",
        DRY_RUN,
        &[
            "dev", "all", "install", "condabin", "user", "system", "reverse", "shells",
        ],
        OpenWorld::Never,
        true,
    ),
    mutation(
        "install",
        DRY_RUN,
        SOLVER_NEUTRAL,
        OpenWorld::UnlessPresent("offline"),
        true,
    ),
    read_only(
        "list",
        &[
            "name",
            "prefix",
            "show_channel_urls",
            "list_fields",
            "reverse",
            "canonical",
            "full_name",
            "explicit",
            "md5",
            "sha256",
            "export",
            "revisions",
            "size",
            "pip",
            "remove_auth",
            "regex",
        ],
    ),
    Entry {
        open_world: OpenWorld::Always,
        ..read_only(
            "notices",
            &[
                "channel",
                "use_local",
                "override_channels",
                "repodata_fns",
                "experimental",
                "no_lock",
                "repodata_use_zst",
                "repodata_use_shards",
            ],
        )
    },
    Entry {
        path: "package",
        clauses: PACKAGE,
        default: Verdict::Mutation,
        neutral: &["name", "prefix", "pkg_name", "pkg_version", "pkg_build"],
        writes: &["reset", "pkg_name", "pkg_version", "pkg_build"],
        open_world: OpenWorld::Never,
        destructive: true,
    },
    mutation(
        "remove",
        DRY_RUN,
        SOLVER_NEUTRAL,
        // the solver fetches channel metadata
        OpenWorld::UnlessPresent("offline"),
        true,
    ),
    mutation(
        "rename",
        DRY_RUN,
        &["name", "prefix", "destination"],
        OpenWorld::Never,
        true,
    ),
    Entry {
        path: "run",
        clauses: &[],
        default: Verdict::Exec,
        neutral: &[
            "name",
            "prefix",
            "dev",
            "debug_wrapper_scripts",
            "cwd",
            "no_capture_output",
            "executable_call",
        ],
        writes: &[],
        open_world: OpenWorld::Always,
        destructive: true,
    },
    Entry {
        open_world: OpenWorld::UnlessPresent("offline"),
        ..read_only(
            "search",
            &[
                "envs",
                "info",
                "subdir",
                "skip_flexible_search",
                "match_spec",
                "canonical",
                "full_name",
                "names_only",
                "unknown",
                "outdated",
                "spec",
                "reverse_dependency",
                "channel",
                "use_local",
                "override_channels",
                "repodata_fns",
                "experimental",
                "no_lock",
                "repodata_use_zst",
                "repodata_use_shards",
                "use_index_cache",
                "ssl_verify",
                "offline",
            ],
        )
    },
    mutation(
        "update",
        DRY_RUN,
        SOLVER_NEUTRAL,
        OpenWorld::UnlessPresent("offline"),
        true,
    ),
    Entry {
        path: "check",
        clauses: DOCTOR,
        default: Verdict::ReadOnly,
        neutral: &["name", "prefix", "protect_frozen_envs", "checks"],
        writes: &["fix"],
        open_world: OpenWorld::Never,
        destructive: true,
    },
    Entry {
        path: "doctor",
        clauses: DOCTOR,
        default: Verdict::ReadOnly,
        neutral: &["name", "prefix", "protect_frozen_envs", "checks"],
        writes: &["fix"],
        open_world: OpenWorld::Never,
        destructive: true,
    },
    read_only("completion", &["cache_dir"]),
    mutation(
        "completion generate",
        &[],
        &["no_repodata"],
        OpenWorld::UnlessPresent("no_repodata"),
        false,
    ),
    mutation("completion refresh", &[], &[], OpenWorld::Always, false),
    mutation(
        "completion install",
        DRY_RUN,
        &["shell", "no_repodata", "command_name"],
        OpenWorld::UnlessPresent("no_repodata"),
        false,
    ),
    mutation(
        "completion uninstall",
        DRY_RUN,
        &["shell", "command_name"],
        OpenWorld::Never,
        true,
    ),
    mutation(
        "completion init",
        &[],
        &["shell", "command_name"],
        OpenWorld::Never,
        false,
    ),
    read_only("completion status", &[]),
    read_only("plugins", &[]),
    read_only("plugins list", &[]),
    // The menuinst plugin (menuinst/conda_plugin.py): `--install` or
    // `--remove` (one of them is required) creates or removes the menu
    // shortcuts of packages in a prefix; there is no read-only form.
    Entry {
        path: "menuinst",
        clauses: &[],
        default: Verdict::Mutation,
        neutral: &["name", "prefix", "root_prefix"],
        writes: &["install", "remove"],
        open_world: OpenWorld::Never,
        destructive: true,
    },
];

impl Entry {
    /// Whether the entry accounts for this dest (neutral, in a clause, in
    /// `writes`, `dry_run`/`offline`-style roles, or common).
    pub fn covers(&self, dest: &str) -> bool {
        COMMON_NEUTRAL.contains(&dest)
            || self.neutral.contains(&dest)
            || self.writes.contains(&dest)
            || self.clauses.iter().any(|(w, _)| w.dest() == dest)
            || matches!(self.open_world, OpenWorld::UnlessPresent(d) if d == dest)
    }

    /// Every verdict this entry can give (for annotations: the broadest
    /// behaviour).
    pub fn possible_verdicts(&self) -> impl Iterator<Item = Verdict> + '_ {
        self.clauses
            .iter()
            .map(|&(_, v)| v)
            .chain(std::iter::once(self.default))
    }
}

impl When {
    /// The dest the condition reads.
    pub fn dest(&self) -> &'static str {
        match *self {
            When::Present(d) | When::HasValues(d) => d,
        }
    }
}

/// The entry of a command path (without `conda`).
pub fn lookup(subpath: &[String]) -> Option<&'static Entry> {
    TABLE.iter().find(|e| {
        if e.path.is_empty() {
            subpath.is_empty()
        } else {
            e.path.split(' ').eq(subpath.iter().map(String::as_str))
        }
    })
}
