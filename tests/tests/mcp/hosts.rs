//! The real hosts (tier `hosts`): Claude Code, Gemini CLI and Codex CLI from
//! npm, headless, with the built conda-mcp as their stdio MCP server on a
//! stand-in conda with real conda 26's parser, against the scripted model
//! API of `tests/hosts/model_server.py` (`conda_mcp_tests::hosts`; docs/testing.md
//! "Real hosts").
//!
//! Each test plays one plan in one host under one policy: `conda_info`,
//! `conda_search`, `conda_create` of an environment, then a final answer.
//! It asserts what the host showed the model (the tool count of its first
//! request, the schemas it carried against the server's own `tools/list`),
//! what the host sent back as each result, what the approval did, and
//! whether the environment exists afterwards. The figures (first-request
//! bytes, result sizes, wall time) are printed for docs/approval.md.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use conda_mcp_tests::hosts::{self, Host, Report};
use conda_mcp_tests::rawrpc::RawClient;
use conda_mcp_tests::standin::StandinPrefix;
use serde_json::{Value, json};

/// The environment the plan creates.
const ENV: &str = "tier-env";
/// The longest one host run may take.
const RUN_TIMEOUT_S: u64 = 150;

/// The policies a plan runs under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Policy {
    ReadOnly,
    ApproveWrites,
    AllowWrite,
}

impl Policy {
    fn flags(self) -> &'static [&'static str] {
        match self {
            Policy::ReadOnly => &[],
            Policy::ApproveWrites => &["--approve-writes"],
            Policy::AllowWrite => &["--allow-write"],
        }
    }

    /// The policy as conda-mcp's configuration file, which the host's
    /// configuration names with `--config` instead of repeating flags.
    fn config_file(self) -> &'static str {
        match self {
            Policy::ReadOnly => "# read-only: the defaults\n",
            Policy::ApproveWrites => "approve-writes = true\n",
            Policy::AllowWrite => "allow-write = true\n",
        }
    }
}

/// The server's own `tools/list` for these flags: name → tool.
async fn server_tools(conda: &Path, flags: &[&str]) -> Vec<Value> {
    let mut c = RawClient::start(conda, flags).await;
    let (list, _) = c
        .request("tl", "tools/list", json!({}), Duration::from_secs(60))
        .await;
    let tools = list["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    c.close().await;
    assert!(!tools.is_empty(), "the server lists tools: {list}");
    tools
}

fn property_names(schema: &Value) -> BTreeSet<String> {
    schema["properties"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// Whether a tool result, as the host handed it to the model, reports a
/// process that exited 0 (the server's JSON text, or the host's wrapper of
/// it).
fn exited_zero(result: &str) -> bool {
    result.contains("\"exit_code\":0") || result.contains("\"exit_code\": 0")
}

async fn plan(host: Host, policy: Policy, test: &str) {
    plan_with(host, policy, false, test).await;
}

/// [`plan`], with `strip_always_load` the server's tools without
/// `anthropic/alwaysLoad` (as they were before it marked its core tools).
async fn plan_with(host: Host, policy: Policy, strip_always_load: bool, test: &str) {
    let Some(installed) = hosts::installed(test) else {
        return;
    };
    let prefix = StandinPrefix::create(&conda_mcp_tests::paths::real_dump())
        .expect("a stand-in conda with conda 26's parser");
    let tools = server_tools(&prefix.conda_exe, policy.flags()).await;
    let conda = prefix.conda_exe.clone();
    let settings = tempfile::tempdir().expect("tempdir");
    let config = settings.path().join("conda-mcp.toml");
    std::fs::write(&config, policy.config_file()).expect("the configuration file");
    let report: Report = tokio::task::spawn_blocking(move || {
        hosts::run(
            &installed,
            host,
            hosts::Run {
                conda: &conda,
                config: &config,
                writes: policy != Policy::ReadOnly,
                env_name: ENV,
                timeout_s: RUN_TIMEOUT_S,
                strip_always_load,
                home_from_setup: None,
                prompt: None,
                look_for: &[],
            },
        )
    })
    .await
    .expect("the host run");
    let env_dir = prefix.prefix.join("envs").join(ENV);
    let created = env_dir.join("conda-meta").is_dir();

    eprintln!(
        "{test}: {:.1} s; steps {:?}; first request: {} conda tools named, {} with schemas, \
         {} bytes of conda tools of {} bytes of tools; results: info {} B, search {} B, create {} B; \
         environment created: {created}",
        report.seconds,
        report.steps(),
        report.first_tool_names(host).len(),
        report.first_schemas(host).len(),
        report.first_conda_tool_bytes(),
        report.first_tool_bytes(),
        report.result("info").map_or(0, |r| r.len()),
        report.result("search").map_or(0, |r| r.len()),
        report.result("create").map_or(0, |r| r.len()),
    );

    // The host ran the whole plan and ended.
    assert!(
        !report.timed_out,
        "{test}: the host ran out of time\n{report}"
    );
    assert_eq!(
        report.exit_code,
        Some(0),
        "{test}: the host failed\n{report}"
    );
    let steps = report.steps();
    assert_eq!(
        steps.last().map(String::as_str),
        Some("answer"),
        "{test}: the plan did not reach its answer\n{report}"
    );

    // The tool count: every tool the server lists, and nothing else of it.
    let listed: Vec<String> = {
        let mut v: Vec<String> = tools
            .iter()
            .filter_map(|t| t["name"].as_str().map(String::from))
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        report.first_tool_names(host),
        listed,
        "{test}: the host's first request names other tools than the server lists"
    );

    // The first request's schemas: the server's properties, plus what the
    // host adds itself (Gemini CLI: `wait_for_previous` on every tool).
    let by_name = |n: &str| tools.iter().find(|t| t["name"] == json!(n)).cloned();
    let schemas = report.first_schemas(host);
    for (name, host_schema) in &schemas {
        let tool = by_name(name).unwrap_or_else(|| panic!("{test}: {name} is not a server tool"));
        let mut expected = property_names(&tool["inputSchema"]);
        if host == Host::GeminiCli {
            expected.insert("wait_for_previous".into());
        }
        assert_eq!(
            property_names(host_schema),
            expected,
            "{test}: the host's schema of {name} has other properties than the server's"
        );
    }
    // The descriptions as the server wrote them.
    for (name, description) in report.first_descriptions(host) {
        let tool = by_name(&name).unwrap_or_else(|| panic!("{test}: {name} is not a server tool"));
        assert_eq!(
            Some(description.as_str()),
            tool["description"].as_str(),
            "{test}: the host changed the description of {name}"
        );
    }
    match host {
        // Claude Code defers MCP tools behind its tool search: the first
        // request carries the schemas of the tools the server marks
        // `anthropic/alwaysLoad`, and no other.
        Host::ClaudeCode => {
            let always: Vec<String> = tools
                .iter()
                .filter(|t| !strip_always_load && t["_meta"]["anthropic/alwaysLoad"] == json!(true))
                .filter_map(|t| t["name"].as_str().map(String::from))
                .collect();
            let loaded: Vec<String> = schemas.iter().map(|(n, _)| n.clone()).collect();
            let mut always_sorted = always.clone();
            always_sorted.sort();
            assert_eq!(loaded, always_sorted, "{test}: the tools loaded up front");
            // Their bytes: each an Anthropic Messages `tools` entry (name,
            // description, input schema) of the server's tool.
            let expected_bytes: usize = always
                .iter()
                .filter_map(|n| by_name(n))
                .map(|t| {
                    serde_json::to_vec(&json!({
                        "name": format!("{}{}", host.tool_prefix(), t["name"].as_str().unwrap_or("")),
                        "description": t["description"],
                        "input_schema": t["inputSchema"],
                    }))
                    .expect("json")
                    .len()
                })
                .sum();
            eprintln!(
                "{test}: the loaded tools are {expected_bytes} bytes as the server lists them, {} as the host sent them",
                report.first_conda_tool_bytes()
            );
            assert_eq!(
                report.first_conda_tool_bytes(),
                expected_bytes as u64,
                "{test}: the bytes of the tools loaded up front"
            );
            if !["info", "search", "create"]
                .iter()
                .all(|s| always.contains(&format!("conda_{s}")))
            {
                assert_eq!(
                    steps.first().map(String::as_str),
                    Some("tool_search"),
                    "{test}: deferred tools are found through the tool search first"
                );
            }
        }
        Host::GeminiCli | Host::Codex => assert_eq!(
            schemas.len(),
            listed.len(),
            "{test}: every tool's schema is in the first request"
        ),
    }

    // The read-only calls ran, whatever the policy.
    let info = report.result("info").unwrap_or_default();
    assert!(exited_zero(&info), "{test}: conda_info: {info}");
    let search = report.result("search").unwrap_or_default();
    assert!(exited_zero(&search), "{test}: conda_search: {search}");

    // The write, by policy and host: what the host handed back, whether
    // the call reached conda-mcp, whether the environment exists.
    let create = report.result("create").unwrap_or_default();
    let reached = report.server_calls("conda_create");
    match (policy, host) {
        (Policy::AllowWrite, _) => {
            assert!(exited_zero(&create), "{test}: conda_create: {create}");
            assert!(created, "{test}: {} was not created", env_dir.display());
        }
        (Policy::ReadOnly, Host::Codex) => {
            // Codex blocks a tool without readOnlyHint itself in `exec`
            // unless the server's default_tools_approval_mode is "approve"
            // (check and docs/using.md leave that out under the read-only
            // default): the call never reaches conda-mcp.
            assert!(create.contains("requires approval"), "{test}: {create}");
            assert_eq!(reached, 0, "{test}: Codex passed the blocked call on");
            assert!(!created, "{test}: created read-only");
        }
        (Policy::ReadOnly, _) => {
            assert!(
                create.contains("Refused by the server's policy")
                    && create.contains("requires --allow-write"),
                "{test}: the refusal names the flag: {create}"
            );
            assert!(!created, "{test}: created read-only");
        }
        (Policy::ApproveWrites, Host::GeminiCli) => {
            // Gemini CLI cannot ask a person (no elicitation): the answer
            // names that cause and still shows conda's plan.
            assert!(
                create.contains("approval_unavailable")
                    && create.contains("declared no elicitation support")
                    && create.contains("Command: conda create"),
                "{test}: {create}"
            );
            assert!(!created, "{test}: created without an approval");
        }
        (Policy::ApproveWrites, _) => {
            // Claude Code's -p and Codex's exec answer the question
            // themselves: declined, never accepted.
            assert!(create.contains("\"code\":\"declined\""), "{test}: {create}");
            assert!(!created, "{test}: created without an approval");
        }
    }
    if (policy, host) != (Policy::ReadOnly, Host::Codex) {
        assert!(reached >= 1, "{test}: conda_create never reached conda-mcp");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_read_only() {
    plan(Host::ClaudeCode, Policy::ReadOnly, "claude_code_read_only").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_approve_writes() {
    plan(
        Host::ClaudeCode,
        Policy::ApproveWrites,
        "claude_code_approve_writes",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_allow_write() {
    plan(
        Host::ClaudeCode,
        Policy::AllowWrite,
        "claude_code_allow_write",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_cli_read_only() {
    plan(Host::GeminiCli, Policy::ReadOnly, "gemini_cli_read_only").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_cli_approve_writes() {
    plan(
        Host::GeminiCli,
        Policy::ApproveWrites,
        "gemini_cli_approve_writes",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gemini_cli_allow_write() {
    plan(
        Host::GeminiCli,
        Policy::AllowWrite,
        "gemini_cli_allow_write",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_read_only() {
    plan(Host::Codex, Policy::ReadOnly, "codex_read_only").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_approve_writes() {
    plan(Host::Codex, Policy::ApproveWrites, "codex_approve_writes").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_allow_write() {
    plan(Host::Codex, Policy::AllowWrite, "codex_allow_write").await;
}

/// Claude Code with the server's tools as they were before the core set
/// was marked `anthropic/alwaysLoad` (`tests/hosts/strip_always_load.py`
/// removes the key): its first request carries no conda schema, and the
/// model reaches the plan's tools through the tool search first. The
/// figures beside `claude_code_read_only`'s are docs/approval.md's
/// before/after.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_without_always_load() {
    plan_with(
        Host::ClaudeCode,
        Policy::ReadOnly,
        true,
        "claude_code_without_always_load",
    )
    .await;
}
