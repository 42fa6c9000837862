//! What the repository ships for agents beside the server: the Agent Skill
//! (`agent/skills/conda/SKILL.md`), the Claude Code plugin and marketplace
//! (`agent/.claude-plugin/plugin.json`, `.claude-plugin/marketplace.json`)
//! and the Gemini CLI extension (`agent/gemini-extension.json`); and
//! `conda-mcp setup` as the pinned hosts read what it writes.
//!
//! Every tool name the skill mentions is a tool the server lists on the
//! recorded conda 26 parser, and every `--flag` one of `conda-mcp`'s (its
//! `--help`, `setup --help`). In the `hosts` tier the pinned Claude Code and
//! Gemini CLI validate and install the plugin and the extension;
//! Claude Code, Gemini CLI and Codex list the server `setup` wrote into a
//! fresh home, and, started headless with that home and nothing else
//! (`hosts::Run::home_from_setup`), get conda's read-only answers through
//! it; a prompt invoked as Claude Code's slash command and the Gemini
//! extension's context file reach the (scripted) model.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use conda_mcp_tests::bins;
use conda_mcp_tests::hosts::{self, Host, host_command};
use conda_mcp_tests::mcp::{Era, Server};
use conda_mcp_tests::paths::{self, workspace_root};
use conda_mcp_tests::standin::StandinPrefix;
use serde_json::Value;

fn agent() -> PathBuf {
    workspace_root().join("agent")
}

fn skill() -> String {
    std::fs::read_to_string(agent().join("skills/conda/SKILL.md")).expect("SKILL.md")
}

/// Every `conda_<word>` in `text`.
fn tool_names_in(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("conda_") {
        let start = i + at;
        let boundary =
            start == 0 || !(b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'_');
        let mut end = start + "conda_".len();
        while end < b.len() && (b[end].is_ascii_lowercase() || b[end] == b'_') {
            end += 1;
        }
        let name = text[start..end].trim_end_matches('_');
        if boundary && name.len() > "conda_".len() {
            out.insert(name.to_owned());
        }
        i = end;
    }
    out
}

/// Every `--flag` in `text`.
fn flags_in(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let b = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("--") {
        let start = i + at;
        let mut end = start + 2;
        while end < b.len() && (b[end].is_ascii_lowercase() || b[end] == b'-') {
            end += 1;
        }
        let flag = text[start..end].trim_end_matches('-');
        let boundary =
            start == 0 || !(b[start - 1].is_ascii_alphanumeric() || b[start - 1] == b'-');
        if boundary && flag.len() > 2 {
            out.insert(flag.to_owned());
        }
        i = end.max(start + 2);
    }
    out
}

/// The flags `conda-mcp --help` and `conda-mcp setup --help` print.
fn server_flags() -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for args in [vec!["--help"], vec!["setup", "--help"]] {
        let o = Command::new(bins::server())
            .args(&args)
            .output()
            .expect("conda-mcp --help");
        assert!(o.status.success(), "{args:?}");
        out.extend(flags_in(&String::from_utf8_lossy(&o.stdout)));
    }
    out
}

#[tokio::test]
async fn the_skill_names_only_tools_and_flags_that_exist() {
    let text = skill();
    // The open Agent Skills format: YAML frontmatter with name and
    // description; the name is the folder's.
    let front = text
        .strip_prefix("---\n")
        .and_then(|t| t.split_once("\n---\n"))
        .map(|(f, _)| f)
        .expect("frontmatter");
    assert!(front.lines().any(|l| l == "name: conda"), "{front}");
    let description = front
        .lines()
        .find_map(|l| l.strip_prefix("description: "))
        .expect("description");
    assert!((1..=1024).contains(&description.len()), "{description}");

    let standin = StandinPrefix::create(&paths::real_dump()).expect("stand-in");
    let server = Server::start(
        &standin.conda_exe,
        &["--allow-write", "--allow-exec"],
        Era::Initialize,
    )
    .await;
    let tools: BTreeSet<String> = server
        .tools()
        .await
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    // `conda_error` is an error code (error.code), not a tool.
    let mut mentioned = tool_names_in(&text);
    mentioned.remove("conda_error");
    assert!(mentioned.len() >= 10, "{mentioned:?}");
    let unknown: Vec<_> = mentioned.difference(&tools).collect();
    assert!(
        unknown.is_empty(),
        "the skill names tools the server does not list: {unknown:?}"
    );

    let flags = server_flags();
    let mut texts = vec![text];
    for f in [
        "agent/.claude-plugin/plugin.json",
        "agent/gemini-extension.json",
    ] {
        texts.push(std::fs::read_to_string(workspace_root().join(f)).expect(f));
    }
    for t in &texts {
        let unknown: Vec<_> = flags_in(t)
            .into_iter()
            .filter(|f| !flags.contains(f))
            .collect();
        assert!(
            unknown.is_empty(),
            "flags conda-mcp does not have: {unknown:?}"
        );
    }
    server.client.cancel().await.ok();
}

#[test]
fn the_plugin_the_marketplace_and_the_extension_carry_the_server_and_the_skill() {
    let read = |p: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(workspace_root().join(p)).expect(p)).expect(p)
    };
    let plugin = read("agent/.claude-plugin/plugin.json");
    assert_eq!(plugin["name"], "conda");
    assert_eq!(plugin["mcpServers"]["conda"]["command"], "conda-mcp");
    let extension = read("agent/gemini-extension.json");
    assert_eq!(extension["mcpServers"]["conda"]["command"], "conda-mcp");
    let context = extension["contextFileName"]
        .as_str()
        .expect("contextFileName");
    assert!(agent().join(context).is_file(), "{context}");
    let market = read(".claude-plugin/marketplace.json");
    let source = market["plugins"][0]["source"].as_str().expect("source");
    assert!(
        workspace_root()
            .join(source)
            .join(".claude-plugin/plugin.json")
            .is_file()
    );
    // The versions agree with the server's.
    let version = env!("CARGO_PKG_VERSION");
    assert_eq!(plugin["version"], version);
    assert_eq!(extension["version"], version);
}

/// Runs `c`, returning its stdout and stderr; panics with both when it
/// fails.
fn ok(mut c: Command, what: &str) -> String {
    let o = c.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let out = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(o.status.success(), "{what} failed ({}):\n{out}", o.status);
    out
}

#[test]
fn the_pinned_hosts_validate_and_install_the_plugin_and_the_extension() {
    let Some(h) =
        hosts::installed("the_pinned_hosts_validate_and_install_the_plugin_and_the_extension")
    else {
        return;
    };
    let home = tempfile::tempdir().expect("home");
    let root = workspace_root();
    let bin_dir = bins::server()
        .parent()
        .map(Path::to_path_buf)
        .expect("bin dir");
    let host = |bin: &str, args: &[&str]| {
        let mut c = host_command(&h, bin, home.path(), &[&bin_dir]);
        c.args(args).current_dir(&root);
        c
    };
    let agent = agent().display().to_string();
    let out = ok(
        host("claude", &["plugin", "validate", &agent]),
        "claude plugin validate agent",
    );
    assert!(out.contains("Validation passed"), "{out}");
    let out = ok(
        host("claude", &["plugin", "validate", "."]),
        "claude plugin validate (marketplace)",
    );
    assert!(out.contains("Validation passed"), "{out}");
    let out = ok(
        host("gemini", &["extensions", "validate", &agent]),
        "gemini extensions validate",
    );
    assert!(out.contains("successfully validated"), "{out}");

    // The plugin from the checkout as a local marketplace.
    ok(
        host("claude", &["plugin", "marketplace", "add", "./"]),
        "claude plugin marketplace add",
    );
    ok(
        host("claude", &["plugin", "install", "conda@conda-mcp"]),
        "claude plugin install",
    );
    let details = ok(
        host("claude", &["plugin", "details", "conda"]),
        "claude plugin details",
    );
    assert!(details.contains("Skills (1)  conda"), "{details}");
    assert!(details.contains("MCP servers (1)  conda"), "{details}");
    eprintln!("claude plugin details conda:\n{details}");

    // The extension from the folder (the folder trusted, as Gemini asks).
    let gemini_dir = home.path().join(".gemini");
    std::fs::create_dir_all(&gemini_dir).expect("mkdir");
    std::fs::write(
        gemini_dir.join("trustedFolders.json"),
        serde_json::json!({ agent.clone(): "TRUST_FOLDER" }).to_string(),
    )
    .expect("trust");
    ok(
        host("gemini", &["extensions", "install", &agent, "--consent"]),
        "gemini extensions install",
    );
    let listed = ok(
        host("gemini", &["extensions", "list"]),
        "gemini extensions list",
    );
    assert!(listed.contains("skills/conda/SKILL.md"), "{listed}");
    assert!(listed.contains("MCP servers:\n  conda"), "{listed}");
}

/// `conda-mcp setup HOST` with the stand-in conda, in `home`.
fn setup(home: &Path, host: &str, extra: &[&str], conda: &Path) -> std::process::Output {
    Command::new(bins::server())
        .arg("setup")
        .arg(host)
        .args(extra)
        .arg("--conda-exe")
        .arg(conda)
        .env("HOME", home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env_remove("CLAUDE_CONFIG_DIR")
        .env_remove("CODEX_HOME")
        .output()
        .expect("conda-mcp setup")
}

#[test]
fn the_pinned_hosts_list_the_server_setup_wrote() {
    let Some(h) = hosts::installed("the_pinned_hosts_list_the_server_setup_wrote") else {
        return;
    };
    let standin = StandinPrefix::standard();
    let home = tempfile::tempdir().expect("home");
    let project = tempfile::tempdir().expect("project");
    for host in ["claude-code", "gemini-cli", "codex"] {
        let o = setup(home.path(), host, &[], &standin.conda_exe);
        assert!(
            o.status.success(),
            "{host}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let again = setup(home.path(), host, &[], &standin.conda_exe);
        assert!(
            String::from_utf8_lossy(&again.stdout).starts_with("unchanged"),
            "{host}"
        );
    }
    let host = |bin: &str, args: &[&str]| {
        let mut c = host_command(&h, bin, home.path(), &[]);
        c.args(args).current_dir(project.path());
        c
    };
    // Claude Code starts the server for its health check.
    let claude = ok(host("claude", &["mcp", "list"]), "claude mcp list");
    assert!(
        claude.contains("conda:") && claude.contains("Connected"),
        "{claude}"
    );
    let gemini = ok(host("gemini", &["mcp", "list"]), "gemini mcp list");
    assert!(gemini.contains("conda:"), "{gemini}");
    let codex = ok(
        host("codex", &["mcp", "get", "conda"]),
        "codex mcp get conda",
    );
    assert!(
        codex.contains(&standin.conda_exe.display().to_string()),
        "{codex}"
    );
}

#[test]
fn setup_keeps_other_content_removes_and_leaves_a_broken_file_alone() {
    let standin = StandinPrefix::standard();
    let home = tempfile::tempdir().expect("home");
    let settings = home.path().join(".gemini/settings.json");
    std::fs::create_dir_all(settings.parent().expect("dir")).expect("mkdir");
    let original = "{\n  // my settings\n  \"theme\": \"GitHub\",\n  \"mcpServers\": {\n    \"files\": { \"command\": \"fs-mcp\" } // mine\n  }\n}\n";
    std::fs::write(&settings, original).expect("write");
    let codex = home.path().join(".codex/config.toml");
    std::fs::create_dir_all(codex.parent().expect("dir")).expect("mkdir");
    let codex_original = "# mine\nmodel = \"o3\"\n\n[mcp_servers.files]\ncommand = \"fs-mcp\"\n";
    std::fs::write(&codex, codex_original).expect("write");

    for (host, file, before) in [
        ("gemini-cli", &settings, original),
        ("codex", &codex, codex_original),
    ] {
        let o = setup(home.path(), host, &[], &standin.conda_exe);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let after = std::fs::read_to_string(file).expect("read");
        // Everything outside the conda entry stays, byte for byte (the
        // server before it gains the comma JSON needs).
        for line in before.lines() {
            assert!(
                after.replace(',', "").contains(&line.replace(',', "")),
                "{host} lost {line:?}:\n{after}"
            );
        }
        assert!(
            after.contains(&standin.conda_exe.display().to_string()),
            "{after}"
        );
        let o = setup(home.path(), host, &["--remove"], &standin.conda_exe);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(
            std::fs::read_to_string(file).expect("read"),
            before,
            "{host}"
        );
    }

    let broken = "{\n  \"mcpServers\": {\n    \"files\": [\n}\n";
    std::fs::write(&settings, broken).expect("write");
    let o = setup(home.path(), "gemini-cli", &[], &standin.conda_exe);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(".gemini/settings.json: line "), "{err}");
    assert_eq!(std::fs::read_to_string(&settings).expect("read"), broken);
}

/// The environment the scripted model's plan names (its create is refused
/// read-only).
const PLAN_ENV: &str = "setup-env";
/// The longest one host run may take.
const RUN_TIMEOUT_S: u64 = 150;

/// Whether a tool result, as the host handed it to the model, reports a
/// process that exited 0.
fn exited_zero(result: &str) -> bool {
    result.contains("\"exit_code\":0") || result.contains("\"exit_code\": 0")
}

/// `host` runs headless with nothing but what `conda-mcp setup HOST
/// --conda-exe STANDIN` wrote into a fresh home (read-only, the default),
/// `prompt` (or the plan's own), the scripted model playing its plan;
/// `prepare` may add to the home after setup. `None` when the tier skips.
fn run_after_setup(
    host: Host,
    test: &str,
    prompt: Option<&str>,
    look_for: &[&str],
    prepare: impl FnOnce(&hosts::Hosts, &Path),
) -> Option<hosts::Report> {
    let h = hosts::installed(test)?;
    let standin = StandinPrefix::create(&paths::real_dump())
        .expect("a stand-in conda with conda 26's parser");
    let home = tempfile::tempdir().expect("home");
    let o = setup(home.path(), host.setup_name(), &[], &standin.conda_exe);
    assert!(
        o.status.success(),
        "{test}: setup: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    prepare(&h, home.path());
    let settings = tempfile::tempdir().expect("settings");
    let config = settings.path().join("unused.toml");
    let report = hosts::run(
        &h,
        host,
        hosts::Run {
            conda: &standin.conda_exe,
            config: &config,
            writes: false,
            env_name: PLAN_ENV,
            timeout_s: RUN_TIMEOUT_S,
            strip_always_load: false,
            home_from_setup: Some(home.path()),
            prompt,
            look_for,
        },
    );
    eprintln!(
        "{test}: {:.1} s; steps {:?}; {} conda tools named first",
        report.seconds,
        report.steps(),
        report.first_tool_names(host).len()
    );
    assert!(
        !report.timed_out,
        "{test}: the host ran out of time\n{report}"
    );
    assert_eq!(
        report.exit_code,
        Some(0),
        "{test}: the host failed\n{report}"
    );
    Some(report)
}

/// After `conda-mcp setup HOST`, the host, started with no other MCP
/// configuration, lists the conda tools and its read-only calls answer
/// with conda's exit code 0.
fn setup_then_read_only(host: Host, test: &str) {
    let Some(report) = run_after_setup(host, test, None, &[], |_, _| ()) else {
        return;
    };
    let named = report.first_tool_names(host);
    assert!(
        named.iter().any(|n| n == "conda_info") && named.iter().any(|n| n == "conda_search"),
        "{test}: the first request names no conda tools: {named:?}\n{report}"
    );
    assert_eq!(
        report.steps().last().map(String::as_str),
        Some("answer"),
        "{test}: the plan did not reach its answer\n{report}"
    );
    let info = report.result("info").unwrap_or_default();
    assert!(exited_zero(&info), "{test}: conda_info: {info}\n{report}");
    let search = report.result("search").unwrap_or_default();
    assert!(exited_zero(&search), "{test}: conda_search: {search}");
}

#[test]
fn claude_code_after_setup_runs_a_read_only_call() {
    setup_then_read_only(
        Host::ClaudeCode,
        "claude_code_after_setup_runs_a_read_only_call",
    );
}

#[test]
fn gemini_cli_after_setup_runs_a_read_only_call() {
    setup_then_read_only(
        Host::GeminiCli,
        "gemini_cli_after_setup_runs_a_read_only_call",
    );
}

#[test]
fn codex_after_setup_runs_a_read_only_call() {
    setup_then_read_only(Host::Codex, "codex_after_setup_runs_a_read_only_call");
}

/// The first line of the `free_disk_space` prompt's text
/// (server/src/prompts/mod.rs).
const FREE_DISK_SPACE_TEXT: &str = "Free disk space used by conda.";

/// Claude Code after `conda-mcp setup claude-code`: the server's prompt
/// invoked as the slash command `/mcp__conda__free_disk_space` reaches the
/// model as the prompt's text.
#[test]
fn claude_code_sends_a_prompt_invoked_as_a_slash_command_to_the_model() {
    let test = "claude_code_sends_a_prompt_invoked_as_a_slash_command_to_the_model";
    let Some(report) = run_after_setup(
        Host::ClaudeCode,
        test,
        Some("/mcp__conda__free_disk_space"),
        &[FREE_DISK_SPACE_TEXT],
        |_, _| (),
    ) else {
        return;
    };
    assert_eq!(
        report.first_found(),
        [FREE_DISK_SPACE_TEXT],
        "{test}: the first request lacks the prompt's text\n{report}"
    );
}

/// Gemini CLI with the extension of `agent/` installed: its context file,
/// the skill, reaches the model in the first request.
#[test]
fn gemini_cli_sends_the_extension_context_file_to_the_model() {
    let test = "gemini_cli_sends_the_extension_context_file_to_the_model";
    let heading = "# Working with conda through conda-mcp";
    assert!(skill().lines().any(|l| l == heading), "SKILL.md: {heading}");
    let Some(report) = run_after_setup(Host::GeminiCli, test, None, &[heading], |h, home| {
        // The extension from the folder (the folder trusted, as Gemini
        // asks), as the_pinned_hosts_validate_and_install_... does.
        let agent = agent().display().to_string();
        let gemini_dir = home.join(".gemini");
        std::fs::create_dir_all(&gemini_dir).expect("mkdir");
        std::fs::write(
            gemini_dir.join("trustedFolders.json"),
            serde_json::json!({ agent.clone(): "TRUST_FOLDER" }).to_string(),
        )
        .expect("trust");
        let mut c = host_command(h, "gemini", home, &[]);
        c.args(["extensions", "install", &agent, "--consent"])
            .current_dir(workspace_root());
        ok(c, "gemini extensions install");
    }) else {
        return;
    };
    assert_eq!(
        report.first_found(),
        [heading],
        "{test}: the first request lacks the skill\n{report}"
    );
}
