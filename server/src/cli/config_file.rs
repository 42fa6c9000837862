//! The configuration file: a TOML file whose keys are the long flag names
//! of [`super::Cli`] (`allow-write = true`, `timeout = 120`,
//! `protect-env = ["prod", "/opt/envs/ci"]`), read from `--config FILE`
//! (or `CONDA_MCP_CONFIG`), else from [`default_path`] when that file
//! exists.
//!
//! The file is turned into command-line arguments (`--timeout=120`), each
//! checked by the flag's own value parser, so a value means the same in
//! the file, in its environment variable and on the command line;
//! [`super::parse_from`] adds them only for the flags that neither the
//! command line nor the environment set (command line, then environment,
//! then file, then default).
//!
//! A file that cannot be read, is not TOML, has a key that is no flag, or a
//! value of the wrong type or out of range is a startup error
//! ([`ConfigFileError`]) naming the file, the line and the key, never the
//! value (a key may hold a path to a secret, and a mistaken value may be
//! the secret itself); nothing starts.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use clap::ArgAction;
use toml_edit::{Item, Value};

/// The file's name in the platform's configuration folder.
pub const FILE_NAME: &str = "config.toml";

/// The default configuration file: `config.toml` in `conda-mcp/` of the
/// platform's per-user configuration folder: `$XDG_CONFIG_HOME` (when
/// absolute), else `~/.config` on Linux and other Unix systems;
/// `~/Library/Application Support` on macOS; `%APPDATA%` on Windows.
/// `None` when the folder is unknown (no home).
pub fn default_path() -> Option<PathBuf> {
    let base = if cfg!(windows) {
        std::env::var_os("APPDATA").map(PathBuf::from)
    } else if cfg!(target_os = "macos") {
        std::env::var_os("HOME").map(|h| PathBuf::from(h).join("Library/Application Support"))
    } else {
        std::env::var_os("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
    }?;
    Some(base.join("conda-mcp").join(FILE_NAME))
}

/// Why a configuration file was refused. Each names the file and, where
/// there is one, the line (1-based) and the key; none holds a value.
#[derive(Debug, thiserror::Error)]
pub enum ConfigFileError {
    /// The file could not be read (missing, a folder, no permission).
    #[error("the configuration file {} cannot be read: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not UTF-8 TOML.
    #[error("{}:{line}: not valid TOML: {message}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Where the parser stopped.
        line: usize,
        /// The parser's description (without the quoted line).
        message: String,
    },
    /// A key that is no flag of conda-mcp.
    #[error("{}:{line}: unknown key `{key}`{}; the keys are the long flag names of conda-mcp --help",
            path.display(), hint.as_ref().map(|h| format!(" (did you mean `{h}`?)")).unwrap_or_default())]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// The key's line.
        line: usize,
        /// The key as written (a key, not a value).
        key: String,
        /// The closest flag name, when one is close.
        hint: Option<String>,
    },
    /// A value of a type the key does not take (a table, a date, a list
    /// for a single value, a string for a switch).
    #[error("{}:{line}: `{key}` takes {expected}", path.display())]
    WrongType {
        /// The file.
        path: PathBuf,
        /// The value's line.
        line: usize,
        /// The key.
        key: String,
        /// What it takes, in words.
        expected: &'static str,
    },
    /// A value of the right type that the flag refuses (out of range, not
    /// one of its choices).
    #[error("{}:{line}: `{key}`: {reason}", path.display())]
    InvalidValue {
        /// The file.
        path: PathBuf,
        /// The value's line.
        line: usize,
        /// The key.
        key: String,
        /// The flag's reason, without the value.
        reason: String,
    },
}

/// One key of the file as command-line arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileEntry {
    /// The clap id of the flag (`allow_write`).
    pub id: String,
    /// The key's line, 1-based.
    pub line: usize,
    /// `--allow-write=true`, or one `--protect-env=V` per item; empty for
    /// a switch set to `false`.
    pub args: Vec<OsString>,
}

/// A configuration file read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigFile {
    /// The file as named (`--config`) or found ([`default_path`]).
    pub path: PathBuf,
    /// Its keys in the file's order.
    pub entries: Vec<FileEntry>,
}

impl ConfigFile {
    /// Reads `path` and checks every key against `cmd` (the server's
    /// command: its long flags are the keys) and every value with the
    /// flag's own parser.
    ///
    /// Errors: [`ConfigFileError`], naming the file, the line and the key.
    pub fn read(path: &Path, cmd: &clap::Command) -> Result<ConfigFile, ConfigFileError> {
        // Named absolute in errors and in `check`'s report.
        let path = &std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
        let text = std::fs::read(path).map_err(|source| ConfigFileError::Unreadable {
            path: path.to_owned(),
            source,
        })?;
        let text = String::from_utf8(text).map_err(|e| {
            let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            ConfigFileError::Invalid {
                path: path.to_owned(),
                line: valid.iter().filter(|&&b| b == b'\n').count() + 1,
                message: "not UTF-8 text".into(),
            }
        })?;
        Self::parse(path, &text, cmd)
    }

    /// [`ConfigFile::read`] of `text`, the content of `path`.
    ///
    /// Errors: as [`ConfigFile::read`].
    pub fn parse(
        path: &Path,
        text: &str,
        cmd: &clap::Command,
    ) -> Result<ConfigFile, ConfigFileError> {
        let doc = toml_edit::Document::parse(text).map_err(|e| ConfigFileError::Invalid {
            path: path.to_owned(),
            line: e.span().map_or(1, |s| line_of(text, s.start)),
            message: e.message().trim().to_owned(),
        })?;
        // Values are checked without the environment and without the
        // flags' companions (`--tls-key` needs `--listen`): each on its own.
        let probe = lenient(cmd.clone()).mut_args(|a| a.env(clap::builder::Resettable::Reset));
        let mut entries = Vec::new();
        for (key, item) in doc.as_table().iter() {
            let key_line = doc
                .as_table()
                .get_key_value(key)
                .and_then(|(k, _)| k.span())
                .map_or(1, |s| line_of(text, s.start));
            let Some(arg) = flag(cmd, key) else {
                return Err(ConfigFileError::UnknownKey {
                    path: path.to_owned(),
                    line: key_line,
                    key: key.to_owned(),
                    hint: crate::tools::closest::closest(key, keys(cmd)).map(str::to_owned),
                });
            };
            let line = item.span().map_or(key_line, |s| line_of(text, s.start));
            let wrong = |expected| ConfigFileError::WrongType {
                path: path.to_owned(),
                line,
                key: key.to_owned(),
                expected,
            };
            let values = arguments(arg, item).map_err(wrong)?;
            let long = arg.get_long().unwrap_or(key);
            let args: Vec<OsString> = values
                .into_iter()
                .map(|v| match v {
                    Some(v) => OsString::from(format!("--{long}={v}")),
                    None => OsString::from(format!("--{long}")),
                })
                .collect();
            if let Err(e) = probe.clone().try_get_matches_from(
                std::iter::once(OsString::from("conda-mcp")).chain(args.iter().cloned()),
            ) {
                return Err(ConfigFileError::InvalidValue {
                    path: path.to_owned(),
                    line,
                    key: key.to_owned(),
                    reason: reason(&e),
                });
            }
            entries.push(FileEntry {
                id: arg.get_id().as_str().to_owned(),
                line,
                args,
            });
        }
        Ok(ConfigFile {
            path: path.to_owned(),
            entries,
        })
    }
}

/// `cmd` without the flags' companions (`requires`), so that a file or an
/// environment can supply the other half of a pair the command line gives
/// half of; the final parse checks them.
pub fn lenient(cmd: clap::Command) -> clap::Command {
    cmd.mut_args(|a| a.requires(clap::builder::Resettable::<clap::Id>::Reset))
}

/// The file's keys: the long names of `cmd`'s flags that take a setting
/// (not `--help`, `--version` or `--config`).
pub fn keys(cmd: &clap::Command) -> impl Iterator<Item = &str> {
    cmd.get_arguments()
        .filter(|a| is_setting(a))
        .filter_map(clap::Arg::get_long)
}

/// Whether `a` is a setting a file may hold.
fn is_setting(a: &clap::Arg) -> bool {
    !matches!(
        a.get_action(),
        ArgAction::Help | ArgAction::HelpShort | ArgAction::HelpLong | ArgAction::Version
    ) && a.get_id() != "config"
}

/// The flag of file key `key`.
fn flag<'a>(cmd: &'a clap::Command, key: &str) -> Option<&'a clap::Arg> {
    cmd.get_arguments()
        .filter(|a| is_setting(a))
        .find(|a| a.get_long() == Some(key))
}

/// The values `item` gives flag `arg`: `Some(v)` for `--flag=v`, `None`
/// for a bare switch.
///
/// Errors: what the flag takes, in words, when `item`'s type is not that.
fn arguments(arg: &clap::Arg, item: &Item) -> Result<Vec<Option<String>>, &'static str> {
    let value = item.as_value().ok_or("a value, not a table")?;
    match arg.get_action() {
        ArgAction::SetTrue => match value {
            Value::Boolean(b) => Ok(if *b.value() { vec![None] } else { Vec::new() }),
            _ => Err("true or false"),
        },
        ArgAction::Append => match value {
            Value::Array(items) => items
                .iter()
                .map(|v| scalar(v).map(Some).ok_or("a string or a list of strings"))
                .collect(),
            v => scalar(v)
                .map(|s| vec![Some(s)])
                .ok_or("a string or a list of strings"),
        },
        _ => match value {
            // A comma-separated list (`--tools`) may be written as a TOML
            // list.
            Value::Array(items)
                if arg
                    .get_value_names()
                    .is_some_and(|n| n.iter().any(|n| n == "LIST")) =>
            {
                let parts: Option<Vec<String>> = items.iter().map(scalar).collect();
                Ok(vec![Some(
                    parts.ok_or("a string or a list of strings")?.join(","),
                )])
            }
            v => scalar(v)
                .map(|s| vec![Some(s)])
                .ok_or("a single value (a string, a number or true/false)"),
        },
    }
}

/// A string, number or boolean as the command line would spell it.
fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.value().clone()),
        Value::Integer(i) => Some(i.value().to_string()),
        Value::Float(f) => Some(f.value().to_string()),
        Value::Boolean(b) => Some(b.value().to_string()),
        Value::Datetime(_) | Value::Array(_) | Value::InlineTable(_) => None,
    }
}

/// Why clap refused a value, without the value: the value parser's own
/// message, or the choices.
fn reason(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    if let Some(ContextValue::Strings(valid)) = e.get(ContextKind::ValidValue) {
        return format!("expected one of {}", valid.join(", "));
    }
    if let Some(source) = std::error::Error::source(e) {
        return source.to_string();
    }
    match e.kind() {
        clap::error::ErrorKind::ArgumentConflict => "cannot be combined with another key".into(),
        _ => "not a value this flag takes (conda-mcp --help)".into(),
    }
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn parse(text: &str) -> Result<ConfigFile, ConfigFileError> {
        ConfigFile::parse(
            Path::new("/etc/c.toml"),
            text,
            &super::super::Cli::command(),
        )
    }

    fn args(text: &str) -> Vec<String> {
        parse(text)
            .expect("valid")
            .entries
            .into_iter()
            .flat_map(|e| e.args)
            .map(|a| a.into_string().expect("utf-8"))
            .collect()
    }

    #[test]
    fn every_kind_of_value_becomes_its_flag() {
        assert_eq!(
            args(
                "allow-write = true\nno-cache = true\nlive-tools = false\ntimeout = 2.5\n\
                 max-finished-tasks = 3\nprotect-env = [\"prod\", \"/opt/e\"]\n\
                 allowed-channel = \"conda-forge\"\ntools = [\"env *\", \"conda_list\"]\n\
                 conda-exe = \"/opt/conda/bin/conda\"\n"
            ),
            [
                "--allow-write=true",
                "--no-cache",
                "--timeout=2.5",
                "--max-finished-tasks=3",
                "--protect-env=prod",
                "--protect-env=/opt/e",
                "--allowed-channel=conda-forge",
                "--tools=env *,conda_list",
                "--conda-exe=/opt/conda/bin/conda",
            ]
        );
    }

    #[test]
    fn errors_name_the_line_and_the_key_never_the_value() {
        let e = parse("timeout = 5\n\nallow-writes = true\n").expect_err("unknown");
        let text = e.to_string();
        assert!(
            text.starts_with("/etc/c.toml:3: unknown key `allow-writes`"),
            "{text}"
        );
        assert!(text.contains("did you mean `allow-write`?"), "{text}");
        let e = parse("tls-key = [\"SECRET-KEY-MATERIAL\"]\n").expect_err("wrong type");
        let text = e.to_string();
        assert!(
            text.starts_with("/etc/c.toml:1: `tls-key` takes a single value"),
            "{text}"
        );
        assert!(!text.contains("SECRET"), "{text}");
        let e = parse("\n\ntimeout = -4\n").expect_err("range");
        assert!(
            matches!(e, ConfigFileError::InvalidValue { line: 3, .. }),
            "{e}"
        );
        let e = parse("tool-mode = \"wide-SECRET\"\n").expect_err("choice");
        let text = e.to_string();
        assert!(
            text.contains("expected one of typed, compact") && !text.contains("SECRET"),
            "{text}"
        );
        let e = parse("no-cache = \"yes\"\n").expect_err("switch");
        assert!(e.to_string().contains("takes true or false"), "{e}");
        let e = parse("a = 1\nb = = 2\n").expect_err("toml");
        assert!(
            e.to_string().starts_with("/etc/c.toml:2: not valid TOML"),
            "{e}"
        );
        let e = parse("[http]\nlisten = \"x\"\n").expect_err("table");
        assert!(e.to_string().contains("unknown key `http`"), "{e}");
        let e = parse("config = \"/x\"\n").expect_err("config in the file");
        assert!(e.to_string().contains("unknown key `config`"), "{e}");
    }

    #[test]
    fn a_pair_may_be_split_between_the_file_and_the_command_line() {
        // `auth-tokens` needs `listen`; the file alone is checked value by value.
        assert_eq!(args("auth-tokens = \"/t\"\n"), ["--auth-tokens=/t"]);
    }
}
