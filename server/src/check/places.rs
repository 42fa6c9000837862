//! Where each MCP host keeps its configuration, per operating system, and
//! how its command line is quoted there: what `conda-mcp check` names in
//! each host's title, so the snippet below it goes to the right file on the
//! machine the check ran on.
//!
//! The places are the hosts' documented defaults (docs/using.md "MCP host configuration"):
//!
//! | host | Linux | macOS | Windows |
//! | --- | --- | --- | --- |
//! | Claude Desktop | `~/.config/Claude/` (no release of Anthropic's; community builds) | `~/Library/Application Support/Claude/` | `%APPDATA%\Claude\` |
//! | VS Code (user) | `~/.config/Code/User/mcp.json` | `~/Library/Application Support/Code/User/mcp.json` | `%APPDATA%\Code\User\mcp.json` |
//! | Cursor, Gemini CLI, Codex CLI, Copilot CLI | `~/.cursor/…`, `~/.gemini/…`, `~/.codex/…`, `~/.copilot/…` | the same | the same under `%USERPROFILE%\` |
//!
//! Claude Code takes a command line, not a file: POSIX shell quoting on
//! Linux and macOS, PowerShell quoting on Windows (PowerShell, the
//! Windows default, swallows a bare `--` as its own end-of-parameters
//! token before an npm-installed `claude.ps1` sees it, so there every word
//! but plain names is single-quoted, `--` included).

/// The operating system whose places and shell a host configuration is
/// written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    /// Linux (and every other Unix but macOS): XDG places, a POSIX shell.
    Linux,
    /// macOS: `~/Library/Application Support`, a POSIX shell (zsh).
    MacOs,
    /// Windows: `%APPDATA%` and `%USERPROFILE%`, PowerShell.
    Windows,
}

impl Platform {
    /// The platform this binary was built for.
    pub const fn current() -> Platform {
        if cfg!(windows) {
            Platform::Windows
        } else if cfg!(target_os = "macos") {
            Platform::MacOs
        } else {
            Platform::Linux
        }
    }

    /// `rel` (a `/`-separated path) in the user's home folder: `~/rel`, or
    /// `%USERPROFILE%\rel` with `\` on Windows.
    pub fn in_home(self, rel: &str) -> String {
        match self {
            Platform::Windows => format!("%USERPROFILE%\\{}", rel.replace('/', "\\")),
            Platform::Linux | Platform::MacOs => format!("~/{rel}"),
        }
    }

    /// `rel` (a `/`-separated path) in the project's folder, with `\` on
    /// Windows.
    pub fn in_project(self, rel: &str) -> String {
        match self {
            Platform::Windows => rel.replace('/', "\\"),
            Platform::Linux | Platform::MacOs => rel.to_owned(),
        }
    }

    /// An example project folder as a JSON string literal (quotes and
    /// escapes included), for the keys of Gemini CLI's
    /// `trustedFolders.json`: `"/path/to/project"`, or
    /// `"C:\\path\\to\\project"` on Windows.
    pub fn project_folder_json(self) -> &'static str {
        match self {
            Platform::Windows => r#""C:\\path\\to\\project""#,
            Platform::Linux | Platform::MacOs => r#""/path/to/project""#,
        }
    }

    /// Claude Desktop's `claude_desktop_config.json`, with what a Linux
    /// user needs to know (Anthropic ships Claude Desktop for macOS and
    /// Windows only).
    pub fn claude_desktop_config(self) -> &'static str {
        match self {
            Platform::Linux => {
                "~/.config/Claude/claude_desktop_config.json; Anthropic ships Claude Desktop for \
                 macOS and Windows, this is where community Linux builds read it"
            }
            Platform::MacOs => "~/Library/Application Support/Claude/claude_desktop_config.json",
            Platform::Windows => "%APPDATA%\\Claude\\claude_desktop_config.json",
        }
    }

    /// VS Code's user `mcp.json` (the command "MCP: Open User
    /// Configuration" opens it).
    pub fn vscode_user_config(self) -> &'static str {
        match self {
            Platform::Linux => "~/.config/Code/User/mcp.json",
            Platform::MacOs => "~/Library/Application Support/Code/User/mcp.json",
            Platform::Windows => "%APPDATA%\\Code\\User\\mcp.json",
        }
    }

    /// The shell a host's command line is written for, as a title says it.
    pub fn shell(self) -> &'static str {
        match self {
            Platform::Windows => "PowerShell",
            Platform::Linux | Platform::MacOs => "a shell",
        }
    }

    /// `words` as one command line of [`Platform::shell`]: POSIX quoting
    /// (shlex), or PowerShell's single quotes (`'` doubled inside) around
    /// every word but plain names (letters, digits, `_`). `None` when a word
    /// cannot be quoted (a NUL, which no argument or path holds).
    pub fn command_line<'a>(self, words: impl IntoIterator<Item = &'a str>) -> Option<String> {
        match self {
            Platform::Linux | Platform::MacOs => shlex::try_join(words).ok(),
            Platform::Windows => {
                let mut out = Vec::new();
                for w in words {
                    if w.contains('\0') {
                        return None;
                    }
                    let plain =
                        !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                    out.push(if plain {
                        w.to_owned()
                    } else {
                        format!("'{}'", w.replace('\'', "''"))
                    });
                }
                Some(out.join(" "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_places_use_each_platforms_spelling() {
        assert_eq!(
            Platform::Linux.in_home(".cursor/mcp.json"),
            "~/.cursor/mcp.json"
        );
        assert_eq!(
            Platform::MacOs.in_home(".codex/config.toml"),
            "~/.codex/config.toml"
        );
        assert_eq!(
            Platform::Windows.in_home(".gemini/settings.json"),
            "%USERPROFILE%\\.gemini\\settings.json"
        );
        assert_eq!(
            Platform::Windows.in_project(".vscode/mcp.json"),
            ".vscode\\mcp.json"
        );
        assert_eq!(
            Platform::MacOs.in_project(".cursor/mcp.json"),
            ".cursor/mcp.json"
        );
    }

    #[test]
    fn the_example_project_folder_is_a_json_string_of_each_platform() {
        for (platform, folder) in [
            (Platform::Linux, "/path/to/project"),
            (Platform::MacOs, "/path/to/project"),
            (Platform::Windows, r"C:\path\to\project"),
        ] {
            let parsed: String =
                serde_json::from_str(platform.project_folder_json()).expect("a JSON string");
            assert_eq!(parsed, folder);
        }
    }

    #[test]
    fn claude_desktop_and_vscode_are_at_each_platforms_place() {
        assert_eq!(
            Platform::Windows.claude_desktop_config(),
            "%APPDATA%\\Claude\\claude_desktop_config.json"
        );
        assert_eq!(
            Platform::MacOs.claude_desktop_config(),
            "~/Library/Application Support/Claude/claude_desktop_config.json"
        );
        assert!(
            Platform::Linux
                .claude_desktop_config()
                .starts_with("~/.config/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            Platform::Windows.vscode_user_config(),
            "%APPDATA%\\Code\\User\\mcp.json"
        );
        assert_eq!(
            Platform::MacOs.vscode_user_config(),
            "~/Library/Application Support/Code/User/mcp.json"
        );
    }

    #[test]
    fn powershell_lines_quote_dashes_paths_and_quotes() {
        let words = [
            "claude",
            "mcp",
            "add",
            "conda",
            "--",
            r"C:\Users\Zoë O'Neil\miniforge3\Scripts\conda-mcp.exe",
            "--result-mode",
            "lean",
        ];
        assert_eq!(
            Platform::Windows.command_line(words).expect("quotable"),
            r"claude mcp add conda '--' 'C:\Users\Zoë O''Neil\miniforge3\Scripts\conda-mcp.exe' '--result-mode' lean"
        );
        let posix = Platform::Linux.command_line(words).expect("quotable");
        assert_eq!(shlex::split(&posix).expect("a shell line"), words);
        assert_eq!(Platform::Windows.command_line(["a\0b"]), None);
        assert_eq!(Platform::Windows.command_line([""]).as_deref(), Some("''"));
    }
}
