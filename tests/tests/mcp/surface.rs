//! The tool surface a host carries: what the policy lets a tool do, said
//! first in its description and in `conda://capabilities`; `--tools` /
//! `--exclude-tools`; `--tool-mode compact`; the size of `tools/list`; and
//! descriptions a model can use. Black-box, through rmcp's client against
//! the built server and the stand-in conda.

use std::collections::BTreeSet;

use conda_mcp_tests::mcp::{Era, Server, result_text, rpc_error, server_command};
use conda_mcp_tests::paths;
use conda_mcp_tests::standin::StandinPrefix;
use rmcp::model::Tool;
use serde_json::{Value, json};

const INVALID_PARAMS: i32 = -32602;

fn description(tools: &[Tool], name: &str) -> String {
    tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("{name} is listed"))
        .description
        .as_deref()
        .unwrap_or("")
        .to_owned()
}

fn names(tools: &[Tool]) -> BTreeSet<String> {
    tools.iter().map(|t| t.name.to_string()).collect()
}

async fn capabilities(server: &Server) -> Value {
    let (text, _) = server
        .read_text("conda://capabilities")
        .await
        .expect("capabilities");
    serde_json::from_str(&text).expect("capabilities JSON")
}

fn command<'a>(caps: &'a Value, path: &[&str]) -> &'a Value {
    caps["catalog"]["commands"]
        .as_array()
        .expect("commands")
        .iter()
        .find(|c| c["path"] == json!(path))
        .unwrap_or_else(|| panic!("{path:?} in capabilities"))
}

#[tokio::test]
async fn a_tool_the_policy_limits_says_so_first_and_capabilities_agree() {
    let standin = StandinPrefix::standard();

    // Read-only: conda_run needs --allow-exec, the greedy plugin command
    // (unknown to the policy table: a mutation that passes argv on) needs
    // both; both stay listed.
    let server = Server::start(&standin.conda_exe, &[], Era::Initialize).await;
    let tools = server.tools().await;
    let run = description(&tools, "conda_run");
    assert!(
        run.starts_with("Cannot run on this server (needs --allow-exec)."),
        "{run}"
    );
    let lint = description(&tools, "conda_lint");
    assert!(
        lint.starts_with("Cannot run on this server (needs --allow-write and --allow-exec)."),
        "{lint}"
    );
    let install = description(&tools, "conda_install");
    assert!(
        install.starts_with("On this server only dry runs (dry_run: true) run"),
        "{install}"
    );
    let config = description(&tools, "conda_config");
    assert!(
        config.starts_with("On this server only its read-only calls run"),
        "{config}"
    );
    let info = description(&tools, "conda_info");
    assert!(!info.contains("this server"), "{info}");
    let caps = capabilities(&server).await;
    let c = command(&caps, &["conda", "run"]);
    assert_eq!(c["runnable"]["runs"], json!("never"), "{c}");
    assert_eq!(c["runnable"]["needs"], json!(["--allow-exec"]), "{c}");
    assert_eq!(c["policy"], json!("exec"), "{c}");
    let c = command(&caps, &["conda", "lint"]);
    assert_eq!(c["runnable"]["runs"], json!("never"), "{c}");
    assert_eq!(
        c["runnable"]["needs"],
        json!(["--allow-write", "--allow-exec"]),
        "{c}"
    );
    assert_eq!(
        command(&caps, &["conda", "install"])["runnable"]["runs"],
        json!("dry_run_only")
    );
    assert_eq!(
        command(&caps, &["conda", "info"])["runnable"]["runs"],
        json!("always")
    );
    // What the description says is what happens.
    let r = server
        .call_ok("conda_run", json!({"executable_call": ["true"]}))
        .await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        result_text(&r).contains("--allow-exec"),
        "{}",
        result_text(&r)
    );
    server.close().await;

    // --allow-exec: conda_run's sentence is gone; the plugin still needs
    // --allow-write.
    let server = Server::start(&standin.conda_exe, &["--allow-exec"], Era::Initialize).await;
    let tools = server.tools().await;
    let run = description(&tools, "conda_run");
    assert!(!run.contains("this server"), "{run}");
    assert!(
        description(&tools, "conda_lint")
            .starts_with("Cannot run on this server (needs --allow-write)."),
        "{}",
        description(&tools, "conda_lint")
    );
    let caps = capabilities(&server).await;
    assert_eq!(
        command(&caps, &["conda", "run"])["runnable"]["runs"],
        json!("always")
    );
    server.close().await;

    // Both options: no tool carries a policy sentence.
    let server = Server::start(
        &standin.conda_exe,
        &["--allow-exec", "--allow-write"],
        Era::Initialize,
    )
    .await;
    for t in server.tools().await {
        let d = t.description.as_deref().unwrap_or("");
        assert!(!d.contains("on this server"), "{}: {d}", t.name);
    }
    server.close().await;
}

#[tokio::test]
async fn filters_select_by_name_path_and_glob_for_listing_and_calling() {
    let standin = StandinPrefix::standard();
    let server = Server::start(
        &standin.conda_exe,
        &[
            "--allow-exec",
            "--tools",
            "conda_info,env *,uninstall,conda_config",
            "--exclude-tools",
            "env config vars s*,conda_execute",
        ],
        Era::Initialize,
    )
    .await;
    let listed = names(&server.tools().await);
    let expected: BTreeSet<String> = [
        "conda_info",
        "conda_env_create",
        "conda_env_list",
        "conda_env_config_vars_list",
        "conda_env_config_vars_unset",
        "conda_remove",
        "conda_config",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    assert_eq!(listed, expected);
    // Excluded or not included: unknown tool, nothing runs.
    let before = standin.python_starts();
    for name in [
        "conda_install",
        "conda_env_config_vars_set",
        "conda_execute",
    ] {
        let e = server
            .call(name, json!({}))
            .await
            .expect_err("filtered out");
        assert_eq!(
            rpc_error(&e).map(|d| d.code.0),
            Some(INVALID_PARAMS),
            "{name}"
        );
    }
    assert_eq!(standin.python_starts(), before);
    let r = server.call_ok("conda_info", json!({})).await;
    assert_eq!(r.is_error, Some(false), "{}", result_text(&r));
    let caps = capabilities(&server).await;
    assert_eq!(
        command(&caps, &["conda", "install"])["filtered_out"],
        json!(true)
    );
    assert_eq!(
        command(&caps, &["conda", "info"])["tool"],
        json!("conda_info")
    );
    server.close().await;

    // An entry that matches nothing: exit 2, the entry named, no MCP frame.
    for (flag, entry) in [
        ("--tools", "conda_info,conda_instal"),
        ("--exclude-tools", "env crate"),
        ("--tools", "nothing*"),
    ] {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = server_command(&standin.conda_exe, &[flag, entry], dir.path())
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .expect("run conda-mcp");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {entry}: {stderr}");
        assert!(out.stdout.is_empty());
        let bad = entry.rsplit(',').next().expect("entry");
        assert!(
            stderr.contains(&format!("{flag} entry \"{bad}\"")),
            "{stderr}"
        );
    }
}

/// The compact mode's `conda_call` against the typed tool, on two servers
/// over one stand-in: same argv (the stand-in prints what argparse parsed),
/// same policy outcome, same error text.
#[tokio::test]
async fn compact_call_matches_the_typed_tool_for_every_tool() {
    let standin = StandinPrefix::standard();
    let dump = std::fs::read(&standin.dump_path).expect("dump");
    let catalog = conda_mcp_server::catalog::build(
        &conda_mcp_server::dump::Dump::from_json(&dump).expect("dump parses"),
    )
    .expect("catalog");
    let cmds: Vec<_> = catalog.tools().map(|(i, _)| i).collect();
    let paths: Vec<Vec<String>> = cmds
        .iter()
        .map(|&i| catalog.commands[i].subpath().to_vec())
        .collect();
    let typed_names = conda_mcp_server::schema::tool_names(&paths);
    for flags in [&[][..], &["--allow-write", "--allow-exec"][..]] {
        let typed = Server::start(&standin.conda_exe, flags, Era::Initialize).await;
        let mut compact_flags = flags.to_vec();
        compact_flags.extend(["--tool-mode", "compact"]);
        let compact = Server::start(&standin.conda_exe, &compact_flags, Era::Initialize).await;
        let listed = names(&compact.tools().await);
        assert!(
            ["conda_commands", "conda_describe", "conda_call"]
                .iter()
                .all(|n| listed.contains(*n)),
            "{listed:?}"
        );
        assert!(!listed.contains("conda_info"), "{listed:?}");

        let commands = compact.call_ok("conda_commands", json!({})).await;
        let commands = commands.structured_content.expect("structured");
        // It lists what conda_call takes, not the typed tools' names.
        assert!(
            commands["call"]
                .as_str()
                .is_some_and(|c| c.contains("conda_call")),
            "{commands}"
        );
        let rows = commands["commands"].clone();
        let rows = rows.as_array().expect("rows").clone();
        let typed_tools = typed.tools().await;
        let generated: Vec<&Tool> = typed_tools
            .iter()
            .filter(|t| {
                !["conda_execute", "conda_cli_command", "conda_inventory"]
                    .contains(&t.name.as_ref())
            })
            .collect();
        assert_eq!(rows.len(), generated.len());
        for (&cmd, tool) in cmds.iter().zip(&typed_names) {
            let path = catalog.commands[cmd].subpath().join(" ");
            let row = rows
                .iter()
                .find(|r| r["command"] == json!(path))
                .unwrap_or_else(|| panic!("{path} listed by conda_commands"));
            assert!(row.get("tool").is_none(), "{row}");
            let tool = tool.clone();
            assert_eq!(
                row["description"].as_str(),
                Some(description(&typed_tools, &tool).as_str()),
                "{path}"
            );
            let args = Value::Object(conda_mcp_tests::roundtrip::minimal_args(&catalog, cmd));
            let a = typed.call_ok(&tool, args.clone()).await;
            let b = compact
                .call_ok("conda_call", json!({"command": path, "arguments": args}))
                .await;
            assert_eq!(a.is_error, b.is_error, "{path} {flags:?}");
            match (&a.structured_content, &b.structured_content) {
                (Some(x), Some(y)) => {
                    assert_eq!(x["exit_code"], y["exit_code"], "{path}");
                    assert_eq!(
                        x["parsed_json"]["argv"], y["parsed_json"]["argv"],
                        "{path} {flags:?}"
                    );
                    assert_eq!(
                        x["parsed_json"]["namespace"], y["parsed_json"]["namespace"],
                        "{path}"
                    );
                }
                // conda_call names argument errors under its own
                // `/arguments`; otherwise the texts are the typed tool's.
                (None, None) => assert_eq!(
                    result_text(&a),
                    result_text(&b)
                        .replace("at /arguments/", "at /")
                        .replace("at /arguments", "at /"),
                    "{path}"
                ),
                _ => panic!("{path}: one result ran, the other did not"),
            }
            // The describe schema is the typed tool's input schema.
            let d = compact
                .call_ok("conda_describe", json!({"command": path}))
                .await;
            let d = d.structured_content.expect("structured");
            let typed_schema = &typed_tools
                .iter()
                .find(|t| t.name == tool)
                .expect("typed tool")
                .input_schema;
            let props = d["input_schema"]["properties"].as_object().expect("props");
            assert_eq!(
                props.keys().collect::<Vec<_>>(),
                typed_schema["properties"]
                    .as_object()
                    .expect("props")
                    .keys()
                    .collect::<Vec<_>>(),
                "{path}"
            );
        }

        // Errors: same rule, path under /arguments; unknown command named by
        // its JSON path only.
        let a = typed
            .call_ok("conda_info", json!({"verbosity": "SECRET"}))
            .await;
        let b = compact
            .call_ok(
                "conda_call",
                json!({"command": "info", "arguments": {"verbosity": "SECRET"}}),
            )
            .await;
        assert_eq!(b.is_error, Some(true));
        assert!(
            result_text(&a).contains("/verbosity"),
            "{}",
            result_text(&a)
        );
        assert!(
            result_text(&b).contains("/arguments/verbosity") && !result_text(&b).contains("SECRET"),
            "{}",
            result_text(&b)
        );
        let r = compact
            .call_ok("conda_call", json!({"command": "SECRET nope"}))
            .await;
        assert_eq!(r.is_error, Some(true));
        assert!(
            result_text(&r).contains("/command") && !result_text(&r).contains("SECRET"),
            "{}",
            result_text(&r)
        );
        // An alias reaches the same command.
        let r = compact
            .call_ok(
                "conda_call",
                json!({"command": "uninstall", "arguments": {"package_names": ["x"], "name": "e", "dry_run": true}}),
            )
            .await;
        assert_eq!(r.is_error, Some(false), "{}", result_text(&r));
        assert_eq!(
            r.structured_content.expect("ran")["parsed_json"]["command"],
            json!(["remove"])
        );
        // A typed tool name is not callable directly in compact mode.
        let e = compact
            .call("conda_info", json!({}))
            .await
            .expect_err("not listed");
        assert_eq!(rpc_error(&e).map(|d| d.code.0), Some(INVALID_PARAMS));
        let message = rpc_error(&e)
            .map(|d| d.message.to_string())
            .unwrap_or_default();
        assert!(
            message.contains("conda_call") && !message.contains("conda_info"),
            "{message}"
        );
        // conda_commands takes no arguments, like every tool that has none.
        let r = compact
            .call_ok("conda_commands", json!({"SECRET": 1}))
            .await;
        assert_eq!(r.is_error, Some(true));
        let s = r.structured_content.expect("structured");
        assert_eq!(s["error"]["code"], json!("invalid_arguments"), "{s}");
        assert!(!s.to_string().contains("SECRET"), "{s}");
        typed.close().await;
        compact.close().await;
    }
}

/// Size targets and description rules on the recorded real conda 26
/// parser (served by a stand-in built from it), with every flag on.
#[tokio::test]
async fn real_listing_sizes_and_descriptions() {
    let dump = paths::real_dump();
    let standin = StandinPrefix::create(&dump).expect("stand-in from the real dump");
    check_listing(
        &standin,
        "conda 26",
        Some(conda_mcp_tests::mcp::TYPED_LIST_MAX_BYTES),
    )
    .await;
}

/// The same on the recording with the conda-index and conda-pypi plugins
/// as well (`tests/fixtures/dumps/conda-26-plugins.json`).
#[tokio::test]
async fn real_listing_with_index_and_pypi_plugins() {
    let dump = paths::fixtures()
        .join("dumps")
        .join("conda-26-plugins.json");
    let standin = StandinPrefix::create(&dump).expect("stand-in from the plugin recording");
    check_listing(
        &standin,
        "conda 26.9 with conda-index and conda-pypi",
        Some(conda_mcp_tests::mcp::PLUGINS_LIST_MAX_BYTES),
    )
    .await;
}

#[tokio::test]
async fn standin_descriptions() {
    let standin = StandinPrefix::standard();
    check_listing(&standin, "standin", None).await;
}

/// The listing with every flag: within `max_bytes` (when given: every
/// tool counts), descriptions never cut mid-phrase, the core properties
/// described where a model first meets them, one meaning per shared name.
async fn check_listing(standin: &StandinPrefix, label: &str, max_bytes: Option<usize>) {
    let all = ["--allow-write", "--allow-exec"];
    let server = Server::start(&standin.conda_exe, &all, Era::Initialize).await;
    let tools = server.tools().await;
    let bytes = serde_json::to_vec(&tools).expect("json").len();
    eprintln!(
        "{label}: tools/list with all flags: {} tools, {bytes} bytes",
        tools.len()
    );
    if let Some(max) = max_bytes {
        // Every tool counts (docs/benchmarks.md "tools/list size").
        assert!(bytes <= max, "{label}: tools/list is {bytes} bytes");
    }
    // Described in every schema that has them: packages and yes; the other
    // core properties (their names say what they are) in the tools every
    // host shows up front (alwaysLoad), shared help elsewhere.
    let everywhere = ["packages", "yes"];
    let up_front = ["name", "prefix", "json", "dry_run"];
    let mut shared_core = BTreeSet::new();
    for t in &tools {
        let always_loaded = t
            .meta
            .as_ref()
            .is_some_and(|m| m.0.get("anthropic/alwaysLoad").is_some());
        let d = t.description.as_deref().unwrap_or("");
        assert!(!cut_abbreviation(d), "{}: {d}", t.name);
        let Some(Value::Object(props)) = t.input_schema.get("properties") else {
            continue;
        };
        for (name, p) in props {
            let pd = p.get("description").and_then(Value::as_str);
            if let Some(pd) = pd {
                assert!(!cut_abbreviation(pd), "{}.{name}: {pd}", t.name);
                let bare = pd.trim_end_matches('.').trim_matches('`');
                assert!(
                    bare != name && bare != format!("--{}", name.replace('_', "-")),
                    "{}.{name} is described by its own name: {pd}",
                    t.name
                );
            }
            if everywhere.contains(&name.as_str())
                || (always_loaded && up_front.contains(&name.as_str()))
            {
                assert!(
                    pd.is_some_and(|d| !d.is_empty()),
                    "{}.{name} undescribed",
                    t.name
                );
            } else if up_front.contains(&name.as_str()) && pd.is_none() {
                shared_core.insert(name.clone());
            }
        }
    }
    // One meaning per name in the instructions.
    let instructions = server
        .client
        .peer_info()
        .and_then(|i| i.instructions.clone())
        .unwrap_or_default();
    // Within the 2,048 characters hosts keep, the rest in the resource.
    assert!(
        instructions.chars().count() <= 2048,
        "{label}: instructions are {} characters",
        instructions.chars().count()
    );
    let shared = instructions
        .split("Options many tools share (not repeated in their schemas): ")
        .nth(1)
        .unwrap_or_else(|| {
            panic!("{label}: no shared options in the instructions: {instructions}")
        });
    assert!(shared.contains(": "), "{shared}");
    let (caps, _) = server
        .read_text("conda://capabilities")
        .await
        .expect("capabilities");
    let caps: Value = serde_json::from_str(&caps).expect("capabilities JSON");
    let shared_options = caps["shared_options"].as_object().expect("shared_options");
    // A core property left undescribed in a tool is a shared option.
    for name in &shared_core {
        assert!(
            shared_options
                .get(name)
                .and_then(Value::as_str)
                .is_some_and(|h| !h.is_empty()),
            "{label}: {name} is neither described nor shared"
        );
    }
    let mut seen = BTreeSet::new();
    for entry in shared
        .trim_end_matches("; the others in shared_options.")
        .trim_end_matches('.')
        .split("; ")
    {
        if let Some((name, help)) = entry.split_once(": ") {
            assert!(
                seen.insert(name.to_owned()),
                "{label}: {name} twice in instructions"
            );
            assert!(!cut_abbreviation(help), "{name}: {help}");
            // The resource holds the same text (a help may itself hold "; ").
            let full = shared_options[name].as_str().expect("help");
            assert!(full.starts_with(help), "{label}: {name}: {full} / {help}");
        }
    }
    server.close().await;

    let compact = Server::start(
        &standin.conda_exe,
        &["--allow-write", "--allow-exec", "--tool-mode", "compact"],
        Era::Initialize,
    )
    .await;
    let tools = compact.tools().await;
    let bytes = serde_json::to_vec(&tools).expect("json").len();
    eprintln!(
        "{label}: tools/list compact with all flags: {} tools, {bytes} bytes",
        tools.len()
    );
    // 4,000 bytes, and 200 more for the `_meta` keys Claude Code reads
    // (alwaysLoad on the three, searchHint on the other two), which hosts
    // do not pass to the model.
    assert!(
        bytes <= conda_mcp_tests::mcp::COMPACT_LIST_MAX_BYTES,
        "{label}: compact tools/list is {bytes} bytes"
    );
    compact.close().await;
}

/// Whether text ends in an abbreviation cut at its period (`(i.e`, `e.g;`)
/// or in an unclosed parenthesis.
fn cut_abbreviation(text: &str) -> bool {
    let t = text.trim_end_matches(['…', ';', '.', ' ']);
    let last = t.rsplit([' ', '(']).next().unwrap_or("");
    let opens = text.matches('(').count();
    let closes = text.matches(')').count();
    ["i.e", "e.g", "i", "e"].contains(&last.to_ascii_lowercase().as_str()) || opens > closes
}

/// A client that forwards the server's change notifications (initialize
/// sessions deliver them to the client handler).
#[derive(Clone)]
struct Notified(tokio::sync::mpsc::UnboundedSender<&'static str>);

impl rmcp::ClientHandler for Notified {
    async fn on_tool_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send("tools/list_changed");
    }

    async fn on_resource_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send("resources/list_changed");
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        assert_eq!(params.uri, "conda://capabilities");
        let _ = self.0.send("resources/updated");
    }
}

type NotifiedClient = rmcp::service::RunningService<rmcp::RoleClient, Notified>;

/// The stand-in prefix whose `install` installs the `conda-hello` plugin
/// (entry point `subcommand.hello`: a greedy plugin command `hello`, as conda
/// gives a plugin subcommand) and whose `remove` removes it.
fn plugin_prefix() -> StandinPrefix {
    use conda_mcp_tests::standin::{ControlRule, PluginSpec};
    let standin = StandinPrefix::standard();
    standin
        .set_control(&[
            ControlRule {
                add_plugin: Some(PluginSpec {
                    distribution: "conda-hello".into(),
                    version: "1.0".into(),
                    name: "subcommand.hello".into(),
                    value: "conda_hello.plugin".into(),
                }),
                ..ControlRule::for_commands(&["install"])
            },
            ControlRule {
                remove_plugin: Some("conda-hello".into()),
                ..ControlRule::for_commands(&["remove"])
            },
        ])
        .expect("control");
    standin
}

/// Starts the server on `standin` with `args` and connects a [`Notified`]
/// client (initialize session); returns it with its notification channel
/// and the folder holding the server's stderr log.
async fn notified_server(
    standin: &StandinPrefix,
    args: &[&str],
) -> (
    NotifiedClient,
    tokio::sync::mpsc::UnboundedReceiver<&'static str>,
    tempfile::TempDir,
) {
    use rmcp::ServiceExt;
    let dir = tempfile::tempdir().expect("tempdir");
    let cmd = server_command(&standin.conda_exe, args, dir.path());
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::from(
            std::fs::File::create(dir.path().join("stderr.log")).expect("log"),
        ))
        .spawn()
        .expect("spawn");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let client = Notified(tx).serve(transport).await.expect("handshake");
    (client, rx, dir)
}

async fn listed(peer: &rmcp::service::Peer<rmcp::RoleClient>) -> BTreeSet<String> {
    names(&peer.list_all_tools().await.expect("tools/list"))
}

async fn call_tool(
    peer: &rmcp::service::Peer<rmcp::RoleClient>,
    name: &str,
    args: Value,
) -> rmcp::model::CallToolResult {
    let mut p = rmcp::model::CallToolRequestParams::new(name.to_owned());
    if let Value::Object(m) = args {
        p = p.with_arguments(m);
    }
    let r = peer.call_tool(p).await.expect("tools/call");
    assert_eq!(r.is_error, Some(false), "{name}: {}", result_text(&r));
    r
}

async fn generated_tools(peer: &rmcp::service::Peer<rmcp::RoleClient>) -> Vec<Value> {
    let r = peer
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "conda://capabilities",
        ))
        .await
        .expect("resources/read");
    let Some(rmcp::model::ResourceContents::TextResourceContents { text, .. }) =
        r.contents.into_iter().next()
    else {
        panic!("a text resource")
    };
    let caps: Value = serde_json::from_str(&text).expect("capabilities JSON");
    caps["generated_tools"].as_array().expect("tools").clone()
}

/// Waits for `n` notifications (each sent before the result of the call
/// that caused it, so they are already on their way).
async fn notifications(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<&'static str>,
    n: usize,
) -> BTreeSet<&'static str> {
    let mut got = BTreeSet::new();
    for _ in 0..n {
        let one = tokio::time::timeout(std::time::Duration::from_secs(10), rx.recv())
            .await
            .expect("notifications in time")
            .expect("channel open");
        got.insert(one);
    }
    got
}

/// `--live-tools`: a write call installs a plugin command into the stand-in
/// prefix → `notifications/tools/list_changed` (and the resource
/// notifications), the next `tools/list` has the new tool, calling it works,
/// `restart_required` is cleared once the new list was served and
/// `conda://capabilities` follows; removing the plugin removes the tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_tools_follow_a_plugin_installed_and_removed_by_a_call() {
    let standin = plugin_prefix();
    let (client, mut rx, _dir) =
        notified_server(&standin, &["--allow-write", "--allow-exec", "--live-tools"]).await;
    let caps = client.peer_info().expect("info").capabilities.clone();
    assert_eq!(
        caps.tools.as_ref().and_then(|t| t.list_changed),
        Some(true),
        "tools.listChanged"
    );
    assert_eq!(
        caps.resources.as_ref().and_then(|r| r.subscribe),
        Some(true),
        "resources.subscribe"
    );
    let peer = client.peer().clone();
    assert!(!listed(&peer).await.contains("conda_hello"));
    // resources/subscribe is the initialize era's way (deprecated in rmcp
    // for the 2026-07-28 lifecycle, which the last test covers).
    #[allow(deprecated)]
    let subscribed = peer
        .subscribe(rmcp::model::SubscribeRequestParams::new(
            "conda://capabilities",
        ))
        .await;
    subscribed.expect("resources/subscribe");

    let r = call_tool(
        &peer,
        "conda_install",
        json!({"packages": ["hello"], "name": "e", "yes": true}),
    )
    .await;
    assert!(
        result_text(&r).contains("list the tools again"),
        "{}",
        result_text(&r)
    );
    let s = r.structured_content.expect("result");
    assert_eq!(
        s["restart_required"],
        json!(true),
        "set until the new list is served: {s}"
    );
    assert_eq!(
        notifications(&mut rx, 3).await,
        BTreeSet::from([
            "tools/list_changed",
            "resources/list_changed",
            "resources/updated"
        ])
    );
    let now = listed(&peer).await;
    assert!(now.contains("conda_hello"), "{now:?}");
    let r = call_tool(&peer, "conda_hello", json!({"args": ["x"]})).await;
    let s = r.structured_content.expect("ran");
    assert_eq!(s["exit_code"], json!(0), "{s}");
    assert_eq!(s["parsed_json"]["command"], json!(["hello"]), "{s}");
    assert_eq!(s["restart_required"], json!(false), "cleared once listed");
    assert!(
        generated_tools(&peer).await.contains(&json!("conda_hello")),
        "capabilities follow"
    );

    let r = call_tool(
        &peer,
        "conda_remove",
        json!({"package_names": ["hello"], "name": "e", "yes": true}),
    )
    .await;
    assert_eq!(
        r.structured_content.expect("result")["restart_required"],
        json!(true)
    );
    assert!(
        notifications(&mut rx, 3)
            .await
            .contains("tools/list_changed")
    );
    let now = listed(&peer).await;
    assert!(!now.contains("conda_hello"), "{now:?}");
    assert!(!generated_tools(&peer).await.contains(&json!("conda_hello")));
    let err = peer
        .call_tool(rmcp::model::CallToolRequestParams::new("conda_hello"))
        .await
        .expect_err("removed tool");
    assert_eq!(
        rpc_error(&err).map(|e| e.code.0),
        Some(INVALID_PARAMS),
        "{err}"
    );
    let _ = client.cancel().await;
}

/// Without `--live-tools` the same plugin install sends nothing, the tools
/// and `conda://capabilities` stay as they were, and `restart_required` is
/// set and stays set (also after a `tools/list`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_live_tools_nothing_is_sent_and_a_restart_is_required() {
    let standin = plugin_prefix();
    let (client, mut rx, _dir) = notified_server(&standin, &["--allow-write"]).await;
    let caps = client.peer_info().expect("info").capabilities.clone();
    assert_eq!(caps.tools.as_ref().and_then(|t| t.list_changed), None);
    // Resources can be subscribed to without it (environments change:
    // environment_watch.rs); this client listed none, so hears nothing.
    assert_eq!(
        caps.resources.as_ref().and_then(|r| r.subscribe),
        Some(true)
    );
    let peer = client.peer().clone();
    let before = listed(&peer).await;
    let caps_before = generated_tools(&peer).await;

    let r = call_tool(
        &peer,
        "conda_install",
        json!({"packages": ["hello"], "name": "e", "yes": true}),
    )
    .await;
    assert_eq!(
        r.structured_content.expect("result")["restart_required"],
        json!(true)
    );
    assert_eq!(listed(&peer).await, before, "tools fixed");
    assert_eq!(
        generated_tools(&peer).await,
        caps_before,
        "capabilities fixed"
    );
    let r = call_tool(&peer, "conda_env_list", json!({})).await;
    assert_eq!(
        r.structured_content.expect("result")["restart_required"],
        json!(true),
        "sticky after tools/list"
    );
    // A notification would precede the response of the call that caused it
    // on the same stream; every response has arrived.
    assert!(rx.try_recv().is_err(), "no notification");
    let _ = client.cancel().await;
}

/// `--live-tools` in the stateless 2026-07-28 lifecycle: the change
/// notifications go to an open `subscriptions/listen` stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_tools_notify_a_subscriptions_listen_stream() {
    let standin = plugin_prefix();
    let server = Server::start(
        &standin.conda_exe,
        &["--allow-write", "--live-tools"],
        Era::Stateless,
    )
    .await;
    let peer = server.client.peer().clone();
    let mut filter = rmcp::model::SubscriptionFilter::builder()
        .tools_list_changed()
        .resources_list_changed()
        .build();
    filter.resource_subscriptions = Some(vec!["conda://capabilities".into()]);
    let mut stream = peer
        .listen(filter.clone())
        .await
        .expect("subscriptions/listen");
    assert_eq!(
        stream.acknowledged(),
        &filter,
        "everything asked is accepted"
    );
    assert!(!listed(&peer).await.contains("conda_hello"));
    call_tool(
        &peer,
        "conda_install",
        json!({"packages": ["hello"], "name": "e", "yes": true}),
    )
    .await;
    let mut got = BTreeSet::new();
    for _ in 0..3 {
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), stream.next())
            .await
            .expect("in time")
            .expect("stream")
            .expect("a notification");
        got.insert(match n {
            rmcp::model::ServerNotification::ToolListChangedNotification(_) => "tools",
            rmcp::model::ServerNotification::ResourceListChangedNotification(_) => "resources",
            rmcp::model::ServerNotification::ResourceUpdatedNotification(_) => "updated",
            other => panic!("unexpected {other:?}"),
        });
    }
    assert_eq!(got, BTreeSet::from(["tools", "resources", "updated"]));
    assert!(listed(&peer).await.contains("conda_hello"));
    drop(stream);
    server.close().await;
}

/// `--live-tools`: a call routed before a change runs against the tools it
/// was validated with. With the `hello` plugin installed, `conda_hello` is
/// queued behind a slow `conda_remove` that removes the plugin: it is still
/// run (a tool result from the stand-in, which no longer knows `hello`),
/// while a call sent after the change is an unknown tool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_tools_keep_queued_calls_on_the_tools_they_were_validated_with() {
    use conda_mcp_tests::standin::{ControlRule, PluginSpec};
    let standin = StandinPrefix::standard();
    standin
        .add_plugin(&PluginSpec {
            distribution: "conda-hello".into(),
            version: "1.0".into(),
            name: "subcommand.hello".into(),
            value: "conda_hello.plugin".into(),
        })
        .expect("plugin");
    standin
        .set_control(&[ControlRule {
            sleep_seconds: Some(2.0),
            remove_plugin: Some("conda-hello".into()),
            ..ControlRule::for_commands(&["remove"])
        }])
        .expect("control");
    let (client, mut rx, _dir) =
        notified_server(&standin, &["--allow-write", "--allow-exec", "--live-tools"]).await;
    let peer = client.peer().clone();
    assert!(listed(&peer).await.contains("conda_hello"));

    let remove = {
        let peer = peer.clone();
        tokio::spawn(async move {
            call_tool(
                &peer,
                "conda_remove",
                json!({"package_names": ["hello"], "name": "e", "yes": true}),
            )
            .await
        })
    };
    // The remove is queued first (it runs for 2 s); conda_hello arrives
    // while it runs and waits behind it on the exec lane.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let mut p = rmcp::model::CallToolRequestParams::new("conda_hello");
    p = p.with_arguments(json!({"args": ["x"]}).as_object().expect("object").clone());
    let queued = peer
        .call_tool(p)
        .await
        .expect("a tool result: the call was validated before the change");
    let s = queued.structured_content.expect("it ran");
    assert!(
        s["exit_code"].as_i64().is_some_and(|c| c != 0),
        "the stand-in ran it after the plugin was gone: {s}"
    );
    remove.await.expect("remove task");
    assert!(
        notifications(&mut rx, 2)
            .await
            .contains("tools/list_changed")
    );
    assert!(!listed(&peer).await.contains("conda_hello"));
    let err = peer
        .call_tool(rmcp::model::CallToolRequestParams::new("conda_hello"))
        .await
        .expect_err("routed after the change");
    assert_eq!(
        rpc_error(&err).map(|e| e.code.0),
        Some(INVALID_PARAMS),
        "{err}"
    );
    let _ = client.cancel().await;
}
