//! `conda_cli_command` through the built server and rmcp's client: listed
//! only when the target has conda-completion ≥ 0.3, read-only, reading one
//! command of the plugin's manifest (installed for the test with pip, the
//! manifest written through the plugin's own API).

use conda_mcp_tests::completion::{generate_manifest, install_conda_completion};
use conda_mcp_tests::mcp::{Era, Server, result_text};
use conda_mcp_tests::standin::StandinPrefix;
use serde_json::json;

const TOOL: &str = "conda_cli_command";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn not_listed_without_conda_completion() {
    let prefix = StandinPrefix::standard();
    let server = Server::start(&prefix.conda_exe, &[], Era::Initialize).await;
    let tools = server.tools().await;
    assert!(!tools.is_empty());
    assert!(
        tools.iter().all(|t| t.name != TOOL),
        "listed without the plugin"
    );
    let r = server.call(TOOL, json!({"command_path": []})).await;
    assert!(r.is_err(), "an unlisted tool is unknown");
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_the_manifest_in_both_eras() {
    let prefix = StandinPrefix::standard();
    if !install_conda_completion(&prefix) {
        return;
    }
    let cache = tempfile::tempdir().expect("cache");
    let cache_dir = cache.path().display().to_string();
    for era in Era::ALL {
        let server = Server::start_with_env(
            &prefix.conda_exe,
            &[],
            era,
            &[("CONDA_COMPLETION_CACHE_DIR", &cache_dir)],
        )
        .await;
        let tools = server.tools().await;
        let tool = tools
            .iter()
            .find(|t| t.name == TOOL)
            .expect("listed with the plugin");
        let ann = tool.annotations.as_ref().expect("annotations");
        assert_eq!(ann.read_only_hint, Some(true));
        assert!(tool.output_schema.is_some());

        if era == Era::Initialize {
            // Nothing generated yet: the answer says how to generate it.
            let r = server
                .call_ok(TOOL, json!({"command_path": ["env", "list"]}))
                .await;
            let s = r.structured_content.as_ref().expect("structured");
            assert_eq!(s["availability"], json!("not_generated"), "{s}");
            assert!(result_text(&r).contains("conda completion generate"));
            assert!(
                !cache.path().join("completion.msgpack").exists(),
                "never regenerates"
            );
            generate_manifest(&prefix, cache.path());
        }

        let r = server
            .call_ok(TOOL, json!({"command_path": ["uninstall"]}))
            .await;
        assert_ne!(r.is_error, Some(true), "{}", result_text(&r));
        let s = r.structured_content.as_ref().expect("structured");
        assert_eq!(s["availability"], json!("available"), "{s}");
        assert_eq!(s["resolved_path"], json!(["remove"]));
        assert_eq!(s["alias_target"], json!(["remove"]));
        assert!(
            s["command"]["options"]
                .as_object()
                .is_some_and(|o| !o.is_empty())
        );
        assert!(s.get("package_names").is_none(), "caches are not returned");

        let r = server
            .call_ok(
                TOOL,
                json!({"command_path": ["env", "config", "vars", "list"]}),
            )
            .await;
        let s = r.structured_content.as_ref().expect("structured");
        assert_eq!(s["resolved_path"], json!(["env", "config", "vars", "list"]));
        assert_eq!(s["manifest"]["stale"], json!(false));

        // Unknown path and option-like tokens: invalid input, by JSON path,
        // value never echoed.
        let r = server
            .call_ok(TOOL, json!({"command_path": ["env", "zzz-unknown"]}))
            .await;
        assert_eq!(r.is_error, Some(true));
        let text = result_text(&r);
        assert!(text.contains("/command_path/1"), "{text}");
        assert!(!text.contains("zzz-unknown"), "{text}");
        let r = server
            .call_ok(TOOL, json!({"command_path": ["--secret-flag"]}))
            .await;
        assert_eq!(r.is_error, Some(true));
        assert!(!result_text(&r).contains("secret"), "{}", result_text(&r));
        let r = server
            .call_ok(TOOL, json!({"command_path": [], "extra": 1}))
            .await;
        assert_eq!(r.is_error, Some(true));
        server.close().await;
    }
}
