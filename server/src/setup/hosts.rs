//! Each host `conda-mcp setup` writes into: where its configuration file
//! is on each platform and in each scope, which format that file has and
//! under which keys its MCP servers live.
//!
//! The entries themselves are `check`'s ([`crate::check::host_config`]:
//! Gemini CLI's `"trust": true`, Codex's `required`, Copilot's
//! `"tools": ["*"]`, lean results for Claude), taken from its snippets so
//! that both commands write the same server.
//!
//! | host | user scope | project scope | keys |
//! | --- | --- | --- | --- |
//! | claude-desktop | `claude_desktop_config.json` in Claude's folder (`~/Library/Application Support/Claude`, `%APPDATA%\Claude`, `$XDG_CONFIG_HOME/Claude`) | — | `mcpServers` |
//! | claude-code | `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json` when set) | `.mcp.json` | `mcpServers` |
//! | vs-code | `Code/User/mcp.json` in the platform's configuration folder | `.vscode/mcp.json` | `servers` |
//! | cursor | `~/.cursor/mcp.json` | `.cursor/mcp.json` | `mcpServers` |
//! | gemini-cli | `~/.gemini/settings.json` | `.gemini/settings.json` | `mcpServers` |
//! | codex | `~/.codex/config.toml` (`$CODEX_HOME/config.toml` when set) | — | `[mcp_servers.conda]` |
//! | copilot-cli | `~/.copilot/mcp-config.json` | — | `mcpServers` |
//! | goose | `~/.config/goose/config.yaml` (`%APPDATA%\Block\goose\config\config.yaml`) | — | `extensions` |

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::check::host_config::{self, Host, Launch, SERVER_NAME};
use crate::check::places::Platform;

/// Where the entry goes: the user's own configuration, or the project's
/// (a file in the current folder, meant to be committed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Scope {
    /// The user's configuration file (every project).
    User,
    /// The project's configuration file in the current folder.
    Project,
}

/// A configuration file's syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON with comments and trailing commas (a strict JSON file stays
    /// strict: nothing this writes adds either).
    Jsonc,
    /// TOML.
    Toml,
    /// YAML (block style).
    Yaml,
}

/// The folders a configuration path is built from.
#[derive(Debug, Clone)]
pub struct Places {
    /// The user's home folder.
    pub home: PathBuf,
    /// The project: the current folder.
    pub project: PathBuf,
    /// The platform whose places apply.
    pub platform: Platform,
    /// `$XDG_CONFIG_HOME` (Linux), `%APPDATA%` (Windows), when set.
    pub config_dir: Option<PathBuf>,
    /// `$CLAUDE_CONFIG_DIR`, when set.
    pub claude_config_dir: Option<PathBuf>,
    /// `$CODEX_HOME`, when set.
    pub codex_home: Option<PathBuf>,
}

impl Places {
    /// This process's: `HOME` (`USERPROFILE` on Windows), the current
    /// folder, and the variables above. `None` without a home folder.
    pub fn from_env() -> Option<Places> {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let platform = Platform::current();
        let home = match platform {
            Platform::Windows => var("USERPROFILE").or_else(|| var("HOME")),
            _ => var("HOME"),
        }?;
        Some(Places {
            home,
            project: std::env::current_dir().ok()?,
            platform,
            config_dir: match platform {
                Platform::Windows => var("APPDATA"),
                Platform::Linux => var("XDG_CONFIG_HOME"),
                Platform::MacOs => None,
            },
            claude_config_dir: var("CLAUDE_CONFIG_DIR"),
            codex_home: var("CODEX_HOME"),
        })
    }

    /// The platform's folder of application configuration: `%APPDATA%`,
    /// `~/Library/Application Support`, `$XDG_CONFIG_HOME` or `~/.config`.
    fn app_config(&self) -> PathBuf {
        match self.platform {
            Platform::MacOs => self.home.join("Library/Application Support"),
            Platform::Windows => self
                .config_dir
                .clone()
                .unwrap_or_else(|| self.home.join("AppData").join("Roaming")),
            Platform::Linux => self
                .config_dir
                .clone()
                .unwrap_or_else(|| self.home.join(".config")),
        }
    }
}

/// What `setup` knows of each host (the enum is check's, one list of
/// hosts for both commands).
impl Host {
    /// Whether the host reads a project's own file as well as the user's.
    pub fn has_project_scope(self) -> bool {
        matches!(
            self,
            Host::ClaudeCode | Host::VsCode | Host::Cursor | Host::GeminiCli
        )
    }

    /// The file's syntax.
    pub fn format(self) -> Format {
        match self {
            Host::Codex => Format::Toml,
            Host::Goose => Format::Yaml,
            _ => Format::Jsonc,
        }
    }

    /// The key of the table of servers: `servers` (VS Code), `mcp_servers`
    /// (Codex), `extensions` (Goose), else `mcpServers`.
    pub fn servers_key(self) -> &'static str {
        match self {
            Host::VsCode => "servers",
            Host::Codex => "mcp_servers",
            Host::Goose => "extensions",
            _ => "mcpServers",
        }
    }

    /// The configuration file of `scope` (which the host must have: see
    /// [`Host::has_project_scope`]).
    pub fn config_path(self, scope: Scope, p: &Places) -> PathBuf {
        let project = |rel: &str| p.project.join(rel);
        let home = |rel: &str| p.home.join(rel);
        match (self, scope) {
            (Host::ClaudeCode, Scope::Project) => project(".mcp.json"),
            (Host::VsCode, Scope::Project) => project(".vscode/mcp.json"),
            (Host::Cursor, Scope::Project) => project(".cursor/mcp.json"),
            (Host::GeminiCli, Scope::Project) => project(".gemini/settings.json"),
            (Host::ClaudeDesktop, _) => p.app_config().join("Claude/claude_desktop_config.json"),
            (Host::ClaudeCode, _) => p
                .claude_config_dir
                .as_ref()
                .map_or_else(|| home(".claude.json"), |d| d.join(".claude.json")),
            (Host::VsCode, _) => p.app_config().join("Code/User/mcp.json"),
            (Host::Cursor, _) => home(".cursor/mcp.json"),
            (Host::GeminiCli, _) => home(".gemini/settings.json"),
            (Host::Codex, _) => p
                .codex_home
                .as_ref()
                .map_or_else(|| home(".codex/config.toml"), |d| d.join("config.toml")),
            (Host::CopilotCli, _) => home(".copilot/mcp-config.json"),
            (Host::Goose, _) => match p.platform {
                Platform::Windows => p.app_config().join("Block/goose/config/config.yaml"),
                _ => home(".config/goose/config.yaml"),
            },
        }
    }

    /// The server's entry for this host, as JSON (Codex's and Goose's are
    /// converted to their own syntax by the writer): `check`'s snippet of
    /// the host where it has one; Claude Code gets Claude Desktop's
    /// (lean results) with `"type": "stdio"`, as `claude mcp add` writes
    /// it; Goose a stdio extension. `writes`: the flags allow changes.
    pub fn entry(self, l: &Launch, writes: bool, platform: Platform) -> Value {
        let snippets = host_config::snippets(l, writes, platform);
        // The entry of check's snippet for `host` (a JSON one).
        let json_of = |host: Host, key: &str| -> Value {
            snippets
                .iter()
                .find(|s| s.host == host)
                .and_then(|s| serde_json::from_str::<Value>(&s.text).ok())
                .map(|v| v[key][SERVER_NAME].clone())
                .unwrap_or(Value::Null)
        };
        match self {
            Host::ClaudeDesktop => json_of(Host::ClaudeDesktop, "mcpServers"),
            Host::ClaudeCode => {
                // check prints `claude mcp add`'s line; what it writes is
                // Claude Desktop's (lean results) with the stdio type.
                let desktop = json_of(Host::ClaudeDesktop, "mcpServers");
                json!({ "type": "stdio", "command": desktop["command"], "args": desktop["args"] })
            }
            Host::VsCode => json_of(Host::VsCode, "servers"),
            Host::Cursor => json_of(Host::Cursor, "mcpServers"),
            Host::GeminiCli => json_of(Host::GeminiCli, "mcpServers"),
            Host::Codex => {
                let table: toml_edit::DocumentMut = host_config::codex_table(l, writes)
                    .parse()
                    .unwrap_or_default();
                let mut v = json!({ "command": l.command, "args": l.args });
                if let Some(t) = table
                    .get("mcp_servers")
                    .and_then(|s| s.get(SERVER_NAME))
                    .and_then(|t| t.as_table())
                {
                    for (k, item) in t.iter() {
                        if let Some(b) = item.as_bool() {
                            v[k] = json!(b);
                        } else if let Some(s) = item.as_str() {
                            v[k] = json!(s);
                        }
                    }
                }
                v
            }
            Host::CopilotCli => json_of(Host::CopilotCli, "mcpServers"),
            Host::Goose => json!({
                "name": SERVER_NAME,
                "type": "stdio",
                "cmd": l.command,
                "args": l.args,
                "enabled": true,
                "envs": {},
                "timeout": 300,
            }),
        }
    }
}

/// `path` as a person reads it: `~/…` under `home`.
pub fn shown(path: &Path, home: &Path) -> String {
    match path.strip_prefix(home) {
        Ok(rel) if cfg!(unix) => format!("~/{}", rel.display()),
        _ => path.display().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places(platform: Platform) -> Places {
        Places {
            home: PathBuf::from("/h"),
            project: PathBuf::from("/p"),
            platform,
            config_dir: None,
            claude_config_dir: None,
            codex_home: None,
        }
    }

    #[test]
    fn each_host_has_its_file_per_platform_and_scope() {
        let linux = places(Platform::Linux);
        let mac = places(Platform::MacOs);
        let at = |h: Host, s: Scope, p: &Places| h.config_path(s, p);
        assert_eq!(
            at(Host::ClaudeDesktop, Scope::User, &mac),
            Path::new("/h/Library/Application Support/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            at(Host::ClaudeDesktop, Scope::User, &linux),
            Path::new("/h/.config/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            at(Host::ClaudeCode, Scope::User, &linux),
            Path::new("/h/.claude.json")
        );
        assert_eq!(
            at(Host::ClaudeCode, Scope::Project, &linux),
            Path::new("/p/.mcp.json")
        );
        assert_eq!(
            at(Host::VsCode, Scope::User, &mac),
            Path::new("/h/Library/Application Support/Code/User/mcp.json")
        );
        assert_eq!(
            at(Host::VsCode, Scope::Project, &mac),
            Path::new("/p/.vscode/mcp.json")
        );
        assert_eq!(
            at(Host::Codex, Scope::User, &linux),
            Path::new("/h/.codex/config.toml")
        );
        let mut moved = linux.clone();
        moved.codex_home = Some(PathBuf::from("/ch"));
        moved.claude_config_dir = Some(PathBuf::from("/cc"));
        moved.config_dir = Some(PathBuf::from("/xdg"));
        assert_eq!(
            at(Host::Codex, Scope::User, &moved),
            Path::new("/ch/config.toml")
        );
        assert_eq!(
            at(Host::ClaudeCode, Scope::User, &moved),
            Path::new("/cc/.claude.json")
        );
        assert_eq!(
            at(Host::VsCode, Scope::User, &moved),
            Path::new("/xdg/Code/User/mcp.json")
        );
        assert_eq!(
            at(Host::Goose, Scope::User, &linux),
            Path::new("/h/.config/goose/config.yaml")
        );
    }

    #[test]
    fn entries_are_checks_snippets() {
        let l = Launch {
            command: "/bin/conda-mcp".into(),
            args: vec!["--conda-exe".into(), "/c".into()],
        };
        let e = |h: Host| h.entry(&l, true, Platform::Linux);
        assert_eq!(e(Host::GeminiCli)["trust"], json!(true));
        assert_eq!(e(Host::VsCode)["type"], "stdio");
        assert_eq!(e(Host::CopilotCli)["tools"], json!(["*"]));
        assert_eq!(
            e(Host::ClaudeCode)["args"],
            json!(["--conda-exe", "/c", "--result-mode", "lean"])
        );
        assert_eq!(e(Host::Codex)["required"], json!(true));
        assert_eq!(e(Host::Codex)["default_tools_approval_mode"], "approve");
        assert_eq!(e(Host::Cursor)["command"], "/bin/conda-mcp");
        assert_eq!(e(Host::Goose)["cmd"], "/bin/conda-mcp");
    }

    /// check's Goose snippet, read as YAML, is the entry setup writes.
    #[test]
    fn goose_snippet_is_the_entry_setup_writes() {
        use yaml_rust2::{Yaml, YamlLoader};
        fn to_json(y: &Yaml) -> Value {
            match y {
                Yaml::String(s) => json!(s),
                Yaml::Integer(i) => json!(i),
                Yaml::Boolean(b) => json!(b),
                Yaml::Array(a) => Value::Array(a.iter().map(to_json).collect()),
                Yaml::Hash(h) => Value::Object(
                    h.iter()
                        .map(|(k, v)| (k.as_str().unwrap_or_default().to_owned(), to_json(v)))
                        .collect(),
                ),
                other => panic!("unexpected YAML node {other:?}"),
            }
        }
        // A path with a space, a quote and a backslash, and a non-ASCII
        // argument: JSON's quoting must read back the same in YAML.
        let l = Launch {
            command: "/opt/my \"tools\"/conda-mcp".into(),
            args: vec!["--conda-exe".into(), "C:\\miniforgé\\conda.exe".into()],
        };
        let s = host_config::snippets(&l, true, Platform::Linux)
            .into_iter()
            .find(|s| s.host == Host::Goose)
            .expect("a Goose snippet");
        assert!(
            s.title.contains("~/.config/goose/config.yaml"),
            "{}",
            s.title
        );
        let docs = YamlLoader::load_from_str(&s.text).expect("the snippet is YAML");
        let entry = to_json(&docs[0]["extensions"][SERVER_NAME]);
        assert_eq!(entry, Host::Goose.entry(&l, true, Platform::Linux));
    }
}
