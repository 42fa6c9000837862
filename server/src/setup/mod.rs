//! `conda-mcp setup HOST [FLAGS]`: writes this server into an MCP host's
//! own configuration file, in one step, instead of a snippet to paste by
//! hand (what `conda-mcp check --host HOST` prints).
//!
//! * **Where**: the host's file for the platform and scope
//!   ([`hosts`]: `--scope user`, the default, or `--scope project` where the
//!   host reads a project file too); `--file PATH` names another.
//! * **What**: the entry `check --host HOST` prints for the same settings
//!   ([`crate::check::host_config`]): the server's flags given beside
//!   setup's own, its `CONDA_MCP_*` variables and a `--config FILE`
//!   (parsed by the one declaration, [`crate::cli`], as the server parses
//!   them: a bad flag is a usage error, exit status 2), repeated as check
//!   repeats them, and `--conda-exe` set to the conda they resolve to.
//! * **How**: merged beside the other servers, everything else byte for
//!   byte — comments and formatting of JSONC ([`json`]), TOML ([`toml`])
//!   and YAML ([`yaml`]); a file it cannot parse is left untouched, the
//!   error naming the file and the line (exit status 1). A changed file is
//!   copied to `FILE.conda-mcp.bak` first and then replaced atomically (a
//!   temporary file in the same folder, renamed over it; a symlinked file
//!   is written through the link). A second run finds nothing to change,
//!   writes nothing and says `unchanged`. `--dry-run` prints the change as
//!   a unified diff and writes nothing; `--remove` takes the entry out
//!   (and the table of servers, when nothing else is left in it).
//! * **Skill**: `--skill` also puts the conda Agent Skill ([`skill`])
//!   where Claude Code or Gemini CLI reads skills from a folder.
//! * **Links**: `--link` prints the one-click install links of VS Code
//!   and Cursor ([`crate::check::links`], as `check` prints them) instead
//!   of writing a file.
//!
//! Output goes to stdout (setup never speaks MCP), errors to stderr.

pub mod hosts;
pub mod json;
pub mod skill;
pub mod toml;
pub mod yaml;

use std::ffi::OsString;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::check::host_config::Host;
use crate::check::host_config::{Launch, SERVER_NAME};
use hosts::{Format, Places, Scope};

/// The command's name: `conda-mcp setup ...`.
pub const SETUP_COMMAND: &str = "setup";

/// `about` of `conda-mcp setup`.
pub const SETUP_ABOUT: &str = "Write this server into an MCP host's configuration file: merged \
beside the other servers, comments and formatting kept, a backup first, replaced atomically. \
It takes the server's flags (conda-mcp --help), its CONDA_MCP_* variables and --config FILE, and \
writes the entry conda-mcp check --host HOST prints for them.";

/// `setup`'s own flags (name, whether it takes a value), which the entry
/// does not repeat.
pub const SETUP_FLAGS: [(&str, bool); 6] = [
    ("--scope", true),
    ("--dry-run", false),
    ("--remove", false),
    ("--link", false),
    ("--skill", false),
    ("--file", true),
];

/// `conda-mcp setup`'s own arguments (the server's flags are
/// [`crate::cli::Cli`]'s, parsed beside them by [`crate::cli::parse_from`]).
#[derive(Debug, Clone, clap::Args)]
pub struct SetupCli {
    /// The host whose configuration file is written.
    #[arg(value_enum, value_name = "HOST")]
    pub host: Host,

    /// Which of the host's files: the user's, or the project's in the
    /// current folder (claude-code, vs-code, cursor, gemini-cli).
    #[arg(long, value_enum, default_value_t = Scope::User)]
    pub scope: Scope,

    /// Print the change as a unified diff and write nothing.
    #[arg(long)]
    pub dry_run: bool,

    /// Take the server's entry out again.
    #[arg(long)]
    pub remove: bool,

    /// Print the host's one-click install link (vs-code, cursor) and write
    /// nothing.
    #[arg(long, conflicts_with_all = ["remove", "dry_run", "file", "skill"])]
    pub link: bool,

    /// Also put the conda Agent Skill where the host reads skills
    /// (claude-code, gemini-cli: `skills/conda/SKILL.md` in its folder);
    /// with --remove, take it out.
    #[arg(long)]
    pub skill: bool,

    /// Write this file instead of the host's own (same format).
    #[arg(long, value_name = "PATH")]
    pub file: Option<PathBuf>,
}

/// The examples of `conda-mcp setup --help`.
pub const SETUP_EXAMPLES: &str = "\
Examples:
  conda-mcp setup claude-code
      Add the read-only server to Claude Code (~/.claude.json).
  conda-mcp setup gemini-cli --dry-run --approve-writes
      Show the change to ~/.gemini/settings.json for a server that asks before each change.
  conda-mcp setup vs-code --scope project --allow-write
      Add it to this project's .vscode/mcp.json.
  conda-mcp setup codex --remove
      Take it out of ~/.codex/config.toml again.
  conda-mcp setup cursor --link
      Print Cursor's one-click install link.
  conda-mcp setup claude-code --skill
      Also put the conda skill in ~/.claude/skills/conda/.

  conda-mcp setup codex --config ~/conda-mcp.toml
      Start the server with that configuration file (its path is written, made absolute).

Hosts: claude-desktop, claude-code, vs-code, cursor, gemini-cli, codex, copilot-cli, goose.
Server flags (conda-mcp --help), their CONDA_MCP_* variables and --config FILE go into the
entry as conda-mcp check --host HOST repeats them.
Exit status: 0 done or unchanged, 1 a file that cannot be read, parsed or written, 2 usage.";

/// Why setup changed nothing.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The file does not parse (left untouched).
    #[error("{file}: line {line}{}: {message}; the file was left as it was", column.map(|c| format!(", column {c}")).unwrap_or_default())]
    Syntax {
        /// The file, as shown.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column, where the parser gives one.
        column: Option<usize>,
        /// The parser's message.
        message: String,
    },
    /// The file parses but has another shape.
    #[error("{file}: {what}; the file was left as it was")]
    Shape {
        /// The file, as shown.
        file: String,
        /// What is wrong.
        what: String,
    },
    /// Reading, backing up or replacing the file failed.
    #[error("{file}: cannot {action}: {source}")]
    Io {
        /// The file, as shown.
        file: String,
        /// What was being done.
        action: &'static str,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// No conda to serve (`--conda-exe` absent and none found).
    #[error("{0}")]
    Conda(String),
    /// A request that cannot be met (a scope the host lacks, ...).
    #[error("{0}")]
    Usage(String),
}

/// An edit's failure, before the file is named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EditError {
    /// The text does not parse.
    #[error("line {line}: {message}")]
    Syntax {
        /// 1-based line.
        line: usize,
        /// 1-based column, where known.
        column: Option<usize>,
        /// The parser's message.
        message: String,
    },
    /// The text parses but has another shape.
    #[error("{what}")]
    Shape {
        /// What is wrong.
        what: String,
    },
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupOutcome {
    /// The file was written (created when it was missing).
    Written {
        /// The file.
        file: PathBuf,
        /// The copy of the previous file, when there was one.
        backup: Option<PathBuf>,
    },
    /// The file already was as asked.
    Unchanged {
        /// The file.
        file: PathBuf,
    },
    /// `--dry-run`: the diff that would be applied (empty: unchanged).
    Preview {
        /// The file.
        file: PathBuf,
        /// Unified diff.
        diff: String,
    },
}

/// Runs `conda-mcp setup ...`: `cli` is setup's own arguments, `settings`
/// the server's settings resolved from the same command line (its
/// environment and configuration file included), `repeat` the flags the
/// host should start the server with ([`crate::cli::CommandLine::repeat`],
/// as `check` repeats them). Exit status 0 or 1 (see [`SetupError`]; a
/// usage error, 2, is the parser's, before this).
pub fn main(cli: &SetupCli, settings: &crate::settings::Settings, repeat: &[OsString]) -> ExitCode {
    // A removal needs no conda to find the entry.
    let launch = if cli.remove && !cli.link {
        (
            Launch {
                command: String::new(),
                args: Vec::new(),
            },
            false,
        )
    } else {
        match launch(settings, repeat) {
            Ok(l) => l,
            Err(e) => return failed(&e),
        }
    };
    let Some(places) = Places::from_env() else {
        return failed(&SetupError::Usage(
            "no home folder: HOME (USERPROFILE on Windows) is not set".into(),
        ));
    };
    let mut out = std::io::stdout().lock();
    if cli.link {
        let link = crate::check::host_config::snippets(
            &launch.0,
            launch.1,
            crate::check::places::Platform::current(),
        )
        .iter()
        .find(|s| s.host == cli.host)
        .and_then(crate::check::links::for_snippet);
        return match link {
            Some(link) => {
                let _ = writeln!(out, "{link}");
                ExitCode::SUCCESS
            }
            None => failed(&SetupError::Usage(format!(
                "{} has no install link (vs-code and cursor have): run conda-mcp setup {} instead",
                cli.host.name(),
                cli.host.name()
            ))),
        };
    }
    if cli.skill && skill::path(cli.host, cli.scope, &places).is_none() {
        return failed(&SetupError::Usage(format!(
            "{} reads no skills from a folder (claude-code and gemini-cli do); its extension or \
             plugin carries the skill",
            cli.host.name()
        )));
    }
    match run(cli, &launch.0, launch.1, &places) {
        Ok(outcome) => {
            let _ = out.write_all(describe(&outcome, cli.host, cli.remove, &places).as_bytes());
        }
        Err(e) => return failed(&e),
    }
    if cli.skill {
        match run_skill(cli, &places) {
            Ok(outcome) => {
                let _ = out.write_all(describe_skill(&outcome, cli.remove, &places).as_bytes());
            }
            Err(e) => return failed(&e),
        }
    }
    ExitCode::SUCCESS
}

fn failed(e: &SetupError) -> ExitCode {
    let _ = writeln!(std::io::stderr(), "conda-mcp setup: {e}");
    ExitCode::FAILURE
}

/// The launch line for the server's `settings` started with the flags
/// `repeat`, as `check` makes it ([`Launch::for_this_process`] with the
/// conda they resolve to), and whether they allow changes.
///
/// Errors: [`SetupError::Conda`] when no conda is found.
fn launch(
    settings: &crate::settings::Settings,
    repeat: &[OsString],
) -> Result<(Launch, bool), SetupError> {
    let target = crate::discovery::resolve_target(settings.discovery.conda_exe.as_deref())
        .map_err(|e| SetupError::Conda(e.to_string()))?;
    // As check writes it: the path as given or found, absolute, not its
    // canonical form (a symlink an upgrade moves keeps working).
    let conda = std::path::absolute(&target.given).unwrap_or(target.path);
    let writes = settings.policy.allow_write || settings.policy.approve_writes;
    Ok((Launch::for_this_process(&conda, settings, repeat), writes))
}

/// Does what `cli` asks with `launch` (`writes`: it allows changes) in the
/// places `p`.
///
/// Errors: [`SetupError`]; the file is unchanged then.
pub fn run(
    cli: &SetupCli,
    launch: &Launch,
    writes: bool,
    p: &Places,
) -> Result<SetupOutcome, SetupError> {
    if cli.scope == Scope::Project && !cli.host.has_project_scope() && cli.file.is_none() {
        return Err(SetupError::Usage(format!(
            "{} has no project configuration file: use --scope user",
            cli.host.name()
        )));
    }
    let file = cli
        .file
        .clone()
        .unwrap_or_else(|| cli.host.config_path(cli.scope, p));
    let entry = (!cli.remove).then(|| cli.host.entry(launch, writes, p.platform));
    apply(cli.host, &file, entry.as_ref(), cli.dry_run, &p.home)
}

/// Edits `file` (a file of `host`'s format) to hold `entry` (or not,
/// `None`), or previews that (`dry_run`). `home`: for the names shown.
///
/// Errors: [`SetupError`]; the file is unchanged then.
pub fn apply(
    host: Host,
    file: &Path,
    entry: Option<&serde_json::Value>,
    dry_run: bool,
    home: &Path,
) -> Result<SetupOutcome, SetupError> {
    let shown = hosts::shown(file, home);
    // A symlinked file (dotfiles kept elsewhere) is written through the
    // link.
    let target = std::fs::canonicalize(file).unwrap_or_else(|_| file.to_path_buf());
    let old = match std::fs::read(&target) {
        Ok(bytes) => Some(String::from_utf8(bytes).map_err(|_| SetupError::Shape {
            file: shown.clone(),
            what: "not UTF-8 text".into(),
        })?),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => {
            return Err(SetupError::Io {
                file: shown,
                action: "read it",
                source,
            });
        }
    };
    let text = old.as_deref().unwrap_or("");
    let key = host.servers_key();
    let edited = match host.format() {
        Format::Jsonc => json::edit(text, key, SERVER_NAME, entry),
        Format::Toml => toml::edit(text, key, SERVER_NAME, entry),
        Format::Yaml => yaml::edit(text, key, SERVER_NAME, entry),
    };
    let new = edited.map_err(|e| match e {
        EditError::Syntax {
            line,
            column,
            message,
        } => SetupError::Syntax {
            file: shown.clone(),
            line,
            column,
            message,
        },
        EditError::Shape { what } => SetupError::Shape {
            file: shown.clone(),
            what,
        },
    })?;
    // A removal from a file that is not there changes nothing.
    let unchanged = new == text && (old.is_some() || entry.is_none());
    if dry_run {
        let diff = if unchanged {
            String::new()
        } else {
            similar::TextDiff::from_lines(text, &new)
                .unified_diff()
                .context_radius(3)
                .header(
                    &if old.is_some() {
                        shown.clone()
                    } else {
                        "/dev/null".into()
                    },
                    &shown,
                )
                .to_string()
        };
        return Ok(SetupOutcome::Preview {
            file: file.to_path_buf(),
            diff,
        });
    }
    if unchanged {
        return Ok(SetupOutcome::Unchanged {
            file: file.to_path_buf(),
        });
    }
    let io = |action: &'static str| {
        let shown = shown.clone();
        move |source| SetupError::Io {
            file: shown,
            action,
            source,
        }
    };
    let dir = target
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(io("create its folder"))?;
    let backup = match old {
        Some(_) => {
            let mut name = target.file_name().unwrap_or_default().to_os_string();
            name.push(".conda-mcp.bak");
            let b = dir.join(name);
            std::fs::copy(&target, &b).map_err(io("back it up"))?;
            Some(b)
        }
        None => None,
    };
    let mut tmp =
        tempfile::NamedTempFile::new_in(dir).map_err(io("create a temporary file beside it"))?;
    tmp.write_all(new.as_bytes()).map_err(io("write it"))?;
    if let Ok(meta) = std::fs::metadata(&target) {
        // The file keeps its permissions (a private settings file stays
        // private).
        std::fs::set_permissions(tmp.path(), meta.permissions())
            .map_err(io("keep its permissions"))?;
    }
    tmp.as_file().sync_all().map_err(io("write it"))?;
    tmp.persist(&target).map_err(|e| SetupError::Io {
        file: shown.clone(),
        action: "replace it",
        source: e.error,
    })?;
    Ok(SetupOutcome::Written {
        file: file.to_path_buf(),
        backup,
    })
}

/// Puts the skill where `cli.host` reads skills in `cli.scope` (or takes
/// it out, `--remove`; or previews that, `--dry-run`): written atomically,
/// unchanged when it is already there as built in.
///
/// Errors: [`SetupError::Usage`] for a host that reads no skills from a
/// folder; [`SetupError::Io`].
pub fn run_skill(cli: &SetupCli, p: &Places) -> Result<SetupOutcome, SetupError> {
    let file = skill::path(cli.host, cli.scope, p).ok_or_else(|| {
        SetupError::Usage(format!("{} reads no skills from a folder", cli.host.name()))
    })?;
    let shown = hosts::shown(&file, &p.home);
    let old = std::fs::read_to_string(&file).ok();
    let new = if cli.remove {
        None
    } else {
        Some(skill::SKILL_MD)
    };
    if old.as_deref() == new {
        return Ok(if cli.dry_run {
            SetupOutcome::Preview {
                file,
                diff: String::new(),
            }
        } else {
            SetupOutcome::Unchanged { file }
        });
    }
    if cli.dry_run {
        let diff = similar::TextDiff::from_lines(old.as_deref().unwrap_or(""), new.unwrap_or(""))
            .unified_diff()
            .header(&shown, &shown)
            .to_string();
        return Ok(SetupOutcome::Preview { file, diff });
    }
    let io = |action: &'static str| {
        let shown = shown.clone();
        move |source| SetupError::Io {
            file: shown,
            action,
            source,
        }
    };
    match new {
        Some(text) => {
            let dir = file.parent().unwrap_or(Path::new("."));
            std::fs::create_dir_all(dir).map_err(io("create its folder"))?;
            let mut tmp = tempfile::NamedTempFile::new_in(dir)
                .map_err(io("create a temporary file beside it"))?;
            tmp.write_all(text.as_bytes()).map_err(io("write it"))?;
            tmp.persist(&file).map_err(|e| SetupError::Io {
                file: shown.clone(),
                action: "replace it",
                source: e.error,
            })?;
        }
        None => {
            std::fs::remove_file(&file).map_err(io("remove it"))?;
            // The skill's own folder, when nothing else is in it.
            if let Some(dir) = file.parent() {
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
    Ok(SetupOutcome::Written { file, backup: None })
}

/// What [`run_skill`] did, for a person.
pub fn describe_skill(o: &SetupOutcome, remove: bool, p: &Places) -> String {
    let show = |f: &Path| hosts::shown(f, &p.home);
    match o {
        SetupOutcome::Written { file, .. } if remove => {
            format!("removed the conda skill {}\n", show(file))
        }
        SetupOutcome::Written { file, .. } => format!("wrote the conda skill to {}\n", show(file)),
        SetupOutcome::Unchanged { file } => {
            format!("unchanged: {} already is as asked\n", show(file))
        }
        SetupOutcome::Preview { file, diff } if diff.is_empty() => {
            format!("unchanged: {} already is as asked (dry run)\n", show(file))
        }
        SetupOutcome::Preview { diff, .. } => format!("{diff}(dry run: nothing written)\n"),
    }
}

/// What a run did, for a person (ends with a newline).
pub fn describe(o: &SetupOutcome, host: Host, remove: bool, p: &Places) -> String {
    let show = |f: &Path| hosts::shown(f, &p.home);
    match o {
        SetupOutcome::Written { file, backup } => {
            let what = if remove {
                format!("removed the {SERVER_NAME} server from {}", show(file))
            } else {
                format!("wrote the {SERVER_NAME} server into {}", show(file))
            };
            let backup = backup
                .as_ref()
                .map(|b| format!(" (the previous file is in {})", show(b)))
                .unwrap_or_default();
            let next = if remove { "" } else { next_step(host) };
            format!(
                "{what}{backup}\n{next}{}",
                if next.is_empty() { "" } else { "\n" }
            )
        }
        SetupOutcome::Unchanged { file } => {
            format!("unchanged: {} already is as asked\n", show(file))
        }
        SetupOutcome::Preview { file, diff } if diff.is_empty() => {
            format!("unchanged: {} already is as asked (dry run)\n", show(file))
        }
        SetupOutcome::Preview { diff, .. } => format!("{diff}(dry run: nothing written)\n"),
    }
}

/// What to do after the file changed, per host.
fn next_step(host: Host) -> &'static str {
    match host {
        Host::ClaudeDesktop => "Restart Claude Desktop; the tools are under the tools icon.",
        Host::ClaudeCode => "Start claude; /mcp lists the server and its tools.",
        Host::VsCode => {
            "In VS Code: MCP: List Servers shows it; start it there or from the chat's tools."
        }
        Host::Cursor => "In Cursor: Settings > MCP shows the server and its tools.",
        Host::GeminiCli => "Start gemini; /mcp lists the server, its tools and prompts.",
        Host::Codex => "Start codex; /mcp lists the server and its tools.",
        Host::CopilotCli => "Start copilot; /mcp lists the server.",
        Host::Goose => "Restart Goose; the conda extension is enabled.",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch() -> Launch {
        Launch {
            command: "/bin/conda-mcp".into(),
            args: vec!["--conda-exe".into(), "/c".into()],
        }
    }

    fn places(dir: &Path) -> Places {
        Places {
            home: dir.join("home"),
            project: dir.join("project"),
            platform: crate::check::places::Platform::Linux,
            config_dir: None,
            claude_config_dir: None,
            codex_home: None,
        }
    }

    fn cli(host: Host, extra: &[&str]) -> SetupCli {
        use clap::{Args as _, FromArgMatches as _};
        let matches = SetupCli::augment_args(clap::Command::new("setup"))
            .try_get_matches_from(
                ["setup", host.name()]
                    .iter()
                    .copied()
                    .chain(extra.iter().copied()),
            )
            .expect("parse");
        SetupCli::from_arg_matches(&matches).expect("setup's arguments")
    }

    #[test]
    fn setup_writes_backs_up_is_idempotent_and_removes() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = places(dir.path());
        let file = p.home.join(".gemini/settings.json");
        std::fs::create_dir_all(file.parent().expect("dir")).expect("mkdir");
        let original = "{\n  // mine\n  \"theme\": \"dark\"\n}\n";
        std::fs::write(&file, original).expect("write");
        let c = cli(Host::GeminiCli, &[]);
        let preview =
            run(&cli(Host::GeminiCli, &["--dry-run"]), &launch(), false, &p).expect("dry");
        let SetupOutcome::Preview { diff, .. } = &preview else {
            panic!("{preview:?}")
        };
        assert!(diff.contains("+  \"mcpServers\": {"), "{diff}");
        assert_eq!(std::fs::read_to_string(&file).expect("read"), original);
        let o = run(&c, &launch(), false, &p).expect("run");
        let SetupOutcome::Written {
            backup: Some(b), ..
        } = &o
        else {
            panic!("{o:?}")
        };
        assert_eq!(std::fs::read_to_string(b).expect("backup"), original);
        let now = std::fs::read_to_string(&file).expect("read");
        assert!(
            now.starts_with("{\n  // mine\n  \"theme\": \"dark\",\n  \"mcpServers\""),
            "{now}"
        );
        assert!(matches!(
            run(&c, &launch(), false, &p).expect("again"),
            SetupOutcome::Unchanged { .. }
        ));
        run(&cli(Host::GeminiCli, &["--remove"]), &launch(), false, &p).expect("remove");
        assert_eq!(std::fs::read_to_string(&file).expect("read"), original);
    }

    #[test]
    fn the_skill_is_written_once_and_removed() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = places(dir.path());
        let c = cli(Host::ClaudeCode, &["--skill"]);
        assert!(matches!(
            run_skill(&c, &p).expect("write"),
            SetupOutcome::Written { .. }
        ));
        let file = p.home.join(".claude/skills/conda/SKILL.md");
        assert_eq!(
            std::fs::read_to_string(&file).expect("read"),
            skill::SKILL_MD
        );
        assert!(matches!(
            run_skill(&c, &p).expect("again"),
            SetupOutcome::Unchanged { .. }
        ));
        run_skill(&cli(Host::ClaudeCode, &["--skill", "--remove"]), &p).expect("remove");
        assert!(!file.exists() && !file.parent().expect("dir").exists());
        assert!(run_skill(&cli(Host::Codex, &["--skill"]), &p).is_err());
    }

    #[test]
    fn a_new_file_and_its_folder_are_created_and_a_broken_one_is_left_alone() {
        let dir = tempfile::tempdir().expect("tmp");
        let p = places(dir.path());
        let o = run(&cli(Host::Codex, &[]), &launch(), true, &p).expect("run");
        assert!(
            matches!(o, SetupOutcome::Written { backup: None, .. }),
            "{o:?}"
        );
        let text = std::fs::read_to_string(p.home.join(".codex/config.toml")).expect("read");
        assert!(
            text.contains("default_tools_approval_mode = \"approve\""),
            "{text}"
        );
        let broken = p.project.join(".vscode/mcp.json");
        std::fs::create_dir_all(broken.parent().expect("dir")).expect("mkdir");
        std::fs::write(&broken, "{\n  \"servers\": {\n    \"x\": [\n}\n").expect("write");
        let err = run(
            &cli(Host::VsCode, &["--scope", "project"]),
            &launch(),
            false,
            &p,
        )
        .expect_err("broken");
        let shown = err.to_string();
        assert!(shown.contains(".vscode/mcp.json: line "), "{shown}");
        assert!(shown.contains("left as it was"), "{shown}");
        assert_eq!(
            std::fs::read_to_string(&broken).expect("read"),
            "{\n  \"servers\": {\n    \"x\": [\n}\n"
        );
        assert!(!p.project.join(".vscode/mcp.json.conda-mcp.bak").exists());
        let err = run(
            &cli(Host::Codex, &["--scope", "project"]),
            &launch(),
            false,
            &p,
        )
        .expect_err("no project scope");
        assert!(err.to_string().contains("--scope user"), "{err}");
    }
}
