//! The conda Agent Skill (`agent/skills/conda/SKILL.md`, the open Agent
//! Skills format), built into the binary so that `conda-mcp setup HOST
//! --skill` can put it where hosts that read skills from a folder look:
//! Claude Code's `~/.claude/skills/conda/` (`.claude/skills/conda/` in a
//! project) and Gemini CLI's `~/.gemini/skills/conda/`
//! (`.gemini/skills/conda/`).

use std::path::PathBuf;

use super::hosts::{Places, Scope};
use crate::check::host_config::Host;

/// The skill's text.
pub const SKILL_MD: &str = include_str!("../../../agent/skills/conda/SKILL.md");

/// Where `host` reads the skill in `scope`, or `None` for a host that does
/// not read skills from a folder.
pub fn path(host: Host, scope: Scope, p: &Places) -> Option<PathBuf> {
    let base = match scope {
        Scope::User => &p.home,
        Scope::Project => &p.project,
    };
    let dir = match host {
        Host::ClaudeCode => ".claude/skills/conda",
        Host::GeminiCli => ".gemini/skills/conda",
        _ => return None,
    };
    Some(base.join(dir).join("SKILL.md"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skill_has_its_frontmatter_and_a_place_per_host() {
        assert!(SKILL_MD.starts_with("---\nname: conda\ndescription: "));
        let p = Places {
            home: PathBuf::from("/h"),
            project: PathBuf::from("/p"),
            platform: crate::check::places::Platform::Linux,
            config_dir: None,
            claude_config_dir: None,
            codex_home: None,
        };
        assert_eq!(
            path(Host::ClaudeCode, Scope::User, &p),
            Some(PathBuf::from("/h/.claude/skills/conda/SKILL.md"))
        );
        assert_eq!(
            path(Host::GeminiCli, Scope::Project, &p),
            Some(PathBuf::from("/p/.gemini/skills/conda/SKILL.md"))
        );
        assert_eq!(path(Host::Codex, Scope::User, &p), None);
    }
}
