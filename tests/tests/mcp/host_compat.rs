//! What real hosts send and read, against the built server (rmcp's client
//! over stdio, the stand-in conda): the arguments a host adds to every tool
//! (Gemini CLI's `wait_for_previous`) are dropped, any other unknown
//! property is named by its path and never echoed, the `_meta` keys Claude
//! Code's tool search reads (`anthropic/alwaysLoad` on the core set,
//! `anthropic/searchHint` on the other tools whose names do not hold the
//! words a person types), and the start logs no
//! "warm conda off" line the person did not ask for.
//!
//! Docs: docs/reference.md "Generated tools" and "Errors", docs/using.md
//! "MCP host configuration".

use conda_mcp_tests::mcp::{Era, Server};
use conda_mcp_tests::standin::StandinPrefix;
use serde_json::{Value, json};

/// The tools `anthropic/alwaysLoad` marks in the typed mode
/// (`schema::describe::ALWAYS_LOADED`).
const ALWAYS_LOADED: &[&str] = &[
    "conda_info",
    "conda_list",
    "conda_env_list",
    "conda_search",
    "conda_create",
    "conda_install",
    // The server's own inventory, one call for what is installed where.
    "conda_inventory",
];

/// The bytes a host that loads only the marked tools up front sends the
/// model: name, description and input schema of each (the fields of an
/// Anthropic Messages `tools` entry).
fn model_bytes(tools: &[&rmcp::model::Tool]) -> usize {
    tools
        .iter()
        .map(|t| {
            serde_json::to_vec(&json!({
                "name": t.name,
                "description": t.description,
                "input_schema": t.input_schema,
            }))
            .expect("json")
            .len()
        })
        .sum()
}

#[tokio::test]
async fn a_host_added_argument_is_dropped_and_other_unknown_ones_are_named() {
    let standin = StandinPrefix::standard();
    let server = Server::start(&standin.conda_exe, &[], Era::Initialize).await;
    // Gemini CLI sends `wait_for_previous` with every call, true or false.
    for value in [true, false] {
        let r = server
            .call_ok("conda_info", json!({"wait_for_previous": value}))
            .await;
        let out = r.structured_content.expect("structured content");
        assert_eq!(r.is_error, Some(false), "{value}: {out}");
        assert_eq!(out["exit_code"], json!(0), "{value}: {out}");
    }
    // Any other unknown property: one error per name, at its path, never
    // its value.
    let r = server
        .call_ok(
            "conda_info",
            json!({"wait_for_it": "s3cret-value", "envs": true, "a/b": 1}),
        )
        .await;
    assert_eq!(r.is_error, Some(true));
    let out = r.structured_content.expect("structured content");
    let error = &out["error"];
    assert_eq!(error["code"], json!("invalid_arguments"), "{out}");
    let paths: Vec<&str> = error["details"]["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .filter_map(|e| e["path"].as_str())
        .collect();
    assert_eq!(paths, ["/a~1b", "/wait_for_it"], "{out}");
    let text = serde_json::to_string(&out).expect("json");
    assert!(!text.contains("s3cret"), "a value was echoed: {text}");
    assert!(
        error["message"]
            .as_str()
            .unwrap_or("")
            .contains("unknown property (this tool accepts: "),
        "{out}"
    );
    server.close().await;
}

#[tokio::test]
async fn search_hints_and_the_core_tools_loaded_up_front() {
    // conda 26's own parser (the stand-in's has no `conda list`).
    let standin = StandinPrefix::create(&conda_mcp_tests::paths::real_dump()).expect("stand-in");
    let server = Server::start(
        &standin.conda_exe,
        &["--allow-write", "--allow-exec"],
        Era::Initialize,
    )
    .await;
    let tools = server.tools().await;
    let mut loaded = Vec::new();
    for t in &tools {
        let Some(meta) = t.meta.as_ref() else {
            // No _meta at all: a generated tool whose plain name
            // (`conda_env_create`) already holds the command's words.
            let words = t.name.trim_start_matches("conda_").replace('_', " ");
            assert!(
                t.name.starts_with("conda_") && !words.is_empty(),
                "{}: no _meta",
                t.name
            );
            continue;
        };
        if let Some(v) = meta.0.get("anthropic/alwaysLoad") {
            // Loaded up front, so never searched for: no hint.
            assert_eq!(v, &json!(true), "{}", t.name);
            assert!(meta.0.get("anthropic/searchHint").is_none(), "{}", t.name);
            loaded.push(t.name.to_string());
            continue;
        }
        let hint = meta
            .0
            .get("anthropic/searchHint")
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{}: no anthropic/searchHint", t.name));
        assert!(!hint.is_empty(), "{}", t.name);
        if t.name != "conda_execute" && t.name != "conda_cli_command" {
            // A generated tool with a hint: the command as typed, then its
            // aliases; words its name does not hold (aliases, or a name
            // that was sanitized or suffixed), never the name again.
            assert!(hint.starts_with("conda "), "{}: {hint:?}", t.name);
            assert_ne!(hint.replace(' ', "_"), t.name, "{}: {hint:?}", t.name);
        }
    }
    loaded.sort();
    let mut expected = ALWAYS_LOADED.to_vec();
    expected.sort();
    assert_eq!(loaded, expected, "the core set");
    let remove = tools
        .iter()
        .find(|t| t.name == "conda_remove")
        .expect("conda_remove");
    let hint = remove.meta.as_ref().expect("_meta").0["anthropic/searchHint"].clone();
    assert!(
        hint.as_str().is_some_and(|h| h.contains("uninstall")),
        "the aliases are search words: {hint}"
    );
    let all: Vec<&rmcp::model::Tool> = tools.iter().collect();
    let core: Vec<&rmcp::model::Tool> = tools
        .iter()
        .filter(|t| ALWAYS_LOADED.contains(&t.name.as_ref()))
        .collect();
    eprintln!(
        "conda 26: first-request tool bytes with alwaysLoad: {} of {} tools, {} bytes (all {} tools: {} bytes)",
        core.len(),
        tools.len(),
        model_bytes(&core),
        tools.len(),
        model_bytes(&all)
    );
    server.close().await;

    // The compact mode's three tools are all loaded up front.
    let server = Server::start(
        &standin.conda_exe,
        &["--tool-mode", "compact"],
        Era::Initialize,
    )
    .await;
    let tools = server.tools().await;
    let compact: Vec<_> = tools
        .iter()
        .filter(|t| ["conda_commands", "conda_describe", "conda_call"].contains(&t.name.as_ref()))
        .collect();
    assert_eq!(compact.len(), 3, "{tools:?}");
    for t in compact {
        let meta = t.meta.as_ref().expect("_meta");
        assert_eq!(
            meta.0.get("anthropic/alwaysLoad"),
            Some(&json!(true)),
            "{}",
            t.name
        );
    }
    server.close().await;
}

#[tokio::test]
async fn the_start_logs_no_warm_conda_line_without_the_flag() {
    let standin = StandinPrefix::standard();
    let server = Server::start(&standin.conda_exe, &[], Era::Initialize).await;
    let r = server.call_ok("conda_info", json!({})).await;
    assert_eq!(r.is_error, Some(false));
    let log = server.stderr_text();
    assert!(
        log.contains("request"),
        "the log was captured (a request line): {log}"
    );
    assert!(!log.contains("warm conda off"), "{log}");
    server.close().await;
}
