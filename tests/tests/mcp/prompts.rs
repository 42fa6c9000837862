//! The server's MCP prompts (`prompts/list`, `prompts/get`) and argument
//! completion (`completion/complete`) in both protocol eras, through rmcp's
//! client against the built server on the stand-in conda with the recorded
//! conda 26 parser; and that every tool name the prompt texts mention is a
//! tool the server lists.

use std::collections::BTreeSet;
use std::path::Path;

use conda_mcp_tests::mcp::{Era, Server, rpc_error, server_command};
use conda_mcp_tests::paths;
use conda_mcp_tests::standin::StandinPrefix;
use rmcp::model::{ArgumentInfo, CompleteRequestParams, GetPromptRequestParams, Reference};
use serde_json::{Map, Value, json};

const INVALID_PARAMS: i32 = -32602;

/// The six workflows, in the server's order.
const PROMPTS: [&str; 6] = [
    "setup_environment",
    "diagnose_import",
    "update_environment",
    "explain_conflict",
    "free_disk_space",
    "reproduce_environment",
];

/// Every `conda_<word>` in `text`.
pub fn tool_names_in(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let bytes = text.as_bytes();
    let mut i = 0;
    while let Some(at) = text[i..].find("conda_") {
        let start = i + at;
        let boundary =
            start == 0 || !(bytes[start - 1].is_ascii_alphanumeric() || bytes[start - 1] == b'_');
        let mut end = start + "conda_".len();
        while end < bytes.len() && (bytes[end].is_ascii_lowercase() || bytes[end] == b'_') {
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

/// Starts the server with `flags` in `project` as its working folder.
async fn start_in(standin: &StandinPrefix, flags: &[&str], project: &Path, era: Era) -> Server {
    let project = project.to_path_buf();
    Server::start_command(
        move |dir| {
            let mut cmd = server_command(&standin.conda_exe, flags, dir);
            cmd.current_dir(&project);
            cmd
        },
        era,
    )
    .await
}

fn args(pairs: &[(&str, &str)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), json!(v)))
        .collect()
}

fn text_of(r: &rmcp::model::GetPromptResult) -> String {
    r.messages
        .iter()
        .filter_map(|m| m.content.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test]
async fn prompts_are_listed_got_and_completed_in_both_eras() {
    let standin = StandinPrefix::create(&paths::real_dump()).expect("stand-in");
    for env in ["ml", "mlops"] {
        std::fs::create_dir_all(standin.prefix.join("envs").join(env).join("conda-meta"))
            .expect("env");
    }
    let project = tempfile::tempdir().expect("project");
    std::fs::write(project.path().join("environment.yml"), "name: p\n").expect("write");
    std::fs::write(project.path().join("requirements.txt"), "numpy\n").expect("write");
    for era in Era::ALL {
        let server = start_in(
            &standin,
            &["--allow-write", "--allow-exec"],
            project.path(),
            era,
        )
        .await;
        let listed = server
            .client
            .list_all_prompts()
            .await
            .expect("prompts/list");
        let names: Vec<&str> = listed.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, PROMPTS, "{era:?}");
        let tools: BTreeSet<String> = server
            .tools()
            .await
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        for p in &listed {
            let mut given = Map::new();
            for a in p
                .arguments
                .iter()
                .flatten()
                .filter(|a| a.required == Some(true))
            {
                let v = match a.name.as_str() {
                    "environment" => "ml",
                    "file" => "environment.yml",
                    "module" => "numpy",
                    "packages" => "numpy>=2 python=3.12",
                    other => panic!("an argument this test does not know: {other}"),
                };
                given.insert(a.name.clone(), json!(v));
            }
            let got = server
                .client
                .get_prompt(GetPromptRequestParams::new(&p.name).with_arguments(given))
                .await
                .unwrap_or_else(|e| panic!("{era:?} prompts/get {}: {e}", p.name));
            let text = text_of(&got);
            assert!(text.len() > 200, "{}: {text}", p.name);
            let mentioned = tool_names_in(&text);
            assert!(!mentioned.is_empty(), "{}", p.name);
            for t in &mentioned {
                assert!(
                    tools.contains(t),
                    "{}'s text names {t}, which is not a tool",
                    p.name
                );
            }
            if p.name == "setup_environment" {
                // A relative project file is named absolute: conda runs
                // in a folder of its own.
                let abs = project.path().join("environment.yml");
                assert!(text.contains(&abs.display().to_string()), "{text}");
            }
        }
        // Completion: environments from conda's envs dirs, project files,
        // fixed choices.
        let complete = |prompt: &str, arg: &str, typed: &str| {
            CompleteRequestParams::new(Reference::for_prompt(prompt), ArgumentInfo::new(arg, typed))
        };
        let envs = server
            .client
            .complete(complete("diagnose_import", "environment", "ml"))
            .await
            .expect("complete");
        assert_eq!(envs.completion.values, ["ml", "mlops"], "{era:?}");
        let files = server
            .client
            .complete(complete("setup_environment", "file", ""))
            .await
            .expect("complete");
        assert_eq!(
            files.completion.values,
            ["environment.yml", "requirements.txt"]
        );
        let formats = server
            .client
            .complete(complete("reproduce_environment", "format", "e"))
            .await
            .expect("complete");
        assert_eq!(formats.completion.values, ["environment-yaml", "explicit"]);
        // Unknown prompt and bad arguments: invalid params, the value not
        // echoed.
        for (name, bad) in [
            ("no_such_prompt_SECRET", args(&[])),
            ("diagnose_import", args(&[("module", "numpy")])),
            (
                "diagnose_import",
                args(&[("module", "os; SECRET"), ("environment", "ml")]),
            ),
            (
                "diagnose_import",
                args(&[("module", "numpy"), ("environment", "a/b SECRET")]),
            ),
            ("free_disk_space", args(&[("wait_for_it", "SECRET")])),
        ] {
            let e = server
                .client
                .get_prompt(GetPromptRequestParams::new(name).with_arguments(bad))
                .await
                .expect_err("refused");
            let d = rpc_error(&e).unwrap_or_else(|| panic!("{e}"));
            assert_eq!(d.code.0, INVALID_PARAMS, "{d:?}");
            assert!(!d.message.contains("SECRET"), "{}", d.message);
        }
        server.client.cancel().await.ok();
    }
}

#[tokio::test]
async fn prompts_list_bytes() {
    let standin = StandinPrefix::standard();
    let mut c = conda_mcp_tests::rawrpc::RawClient::start(&standin.conda_exe, &[]).await;
    let (list, _) = c
        .request(
            "pl",
            "prompts/list",
            json!({}),
            std::time::Duration::from_secs(60),
        )
        .await;
    let prompts = &list["result"]["prompts"];
    assert_eq!(
        prompts.as_array().map(Vec::len),
        Some(PROMPTS.len()),
        "{list}"
    );
    let bytes = serde_json::to_string(prompts).expect("json").len();
    eprintln!("prompts/list: {bytes} bytes for {} prompts", PROMPTS.len());
    assert!(bytes < 6_000, "{bytes}");
    c.close().await;
}

/// The protocol's edges in both eras: the capabilities name prompts and
/// completion; a refusal names the prompt and the argument (never the
/// value, never an unknown argument's name); an argument that is no string
/// is refused; completion of an unknown prompt or argument, or of a free
/// text argument, is empty, not an error; and under `--tool-mode compact`
/// every tool a prompt names is one the server lists, with the text saying
/// how to reach the commands through `conda_call`.
#[tokio::test]
async fn prompts_name_what_is_wrong_and_follow_the_tool_mode() {
    let standin = StandinPrefix::create(&paths::real_dump()).expect("stand-in");
    std::fs::create_dir_all(standin.prefix.join("envs/ml/conda-meta")).expect("env");
    let project = tempfile::tempdir().expect("project");
    std::fs::write(project.path().join("environment.yml"), "name: p\n").expect("write");
    for era in Era::ALL {
        let server = start_in(&standin, &["--tool-mode", "compact"], project.path(), era).await;
        let caps = &server
            .client
            .peer_info()
            .expect("initialize result")
            .capabilities;
        assert!(caps.prompts.is_some(), "{era:?}: {caps:?}");
        assert!(caps.completions.is_some(), "{era:?}: {caps:?}");
        let tools: BTreeSet<String> = server
            .tools()
            .await
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        assert!(tools.contains("conda_call"), "{tools:?}");
        for (name, given) in [
            ("setup_environment", args(&[("file", "environment.yml")])),
            (
                "diagnose_import",
                args(&[("module", "numpy"), ("environment", "ml")]),
            ),
            ("update_environment", args(&[("environment", "ml")])),
            ("explain_conflict", args(&[("packages", "numpy>=2")])),
            ("free_disk_space", args(&[])),
            ("reproduce_environment", args(&[("environment", "ml")])),
        ] {
            let got = server
                .client
                .get_prompt(GetPromptRequestParams::new(name).with_arguments(given))
                .await
                .unwrap_or_else(|e| panic!("{era:?} {name}: {e}"));
            let text = text_of(&got);
            assert!(text.contains("through conda_call"), "{name}: {text}");
            // The typed names stay (they say which command), each one a
            // command conda_call runs: conda_describe knows it.
            for t in tool_names_in(&text) {
                if tools.contains(&t) {
                    continue;
                }
                let command = t.trim_start_matches("conda_").replace('_', " ");
                let described = server
                    .call("conda_describe", json!({ "command": command }))
                    .await
                    .unwrap_or_else(|e| panic!("{name} names {t}: conda_describe: {e}"));
                assert_ne!(described.is_error, Some(true), "{name} names {t}");
            }
        }
        // Each refusal names the prompt and what is wrong.
        for (name, bad, names) in [
            (
                "diagnose_import",
                json!({ "module": "numpy" }),
                ["diagnose_import", "environment"],
            ),
            (
                "diagnose_import",
                json!({ "module": "os; SECRET", "environment": "ml" }),
                ["diagnose_import", "module"],
            ),
            (
                "update_environment",
                json!({ "environment": "../SECRET" }),
                ["update_environment", "environment"],
            ),
            (
                "free_disk_space",
                json!({ "wait_for_it": "SECRET" }),
                ["free_disk_space", "wait_for_it"],
            ),
            (
                "update_environment",
                json!({ "environment": 7 }),
                ["arguments", "strings"],
            ),
        ] {
            let given = bad.as_object().cloned().expect("an object");
            let e = server
                .client
                .get_prompt(GetPromptRequestParams::new(name).with_arguments(given))
                .await
                .expect_err("refused");
            let d = rpc_error(&e).unwrap_or_else(|| panic!("{e}"));
            assert_eq!(d.code.0, INVALID_PARAMS, "{d:?}");
            for n in names {
                assert!(d.message.contains(n), "{n} in {}", d.message);
            }
            assert!(!d.message.contains("SECRET"), "{}", d.message);
        }
        // Completion that has nothing to offer is empty, not an error.
        for (prompt, arg) in [
            ("no_such_prompt", "environment"),
            ("diagnose_import", "no_such_argument"),
            ("diagnose_import", "module"),
        ] {
            let r = server
                .client
                .complete(CompleteRequestParams::new(
                    Reference::for_prompt(prompt),
                    ArgumentInfo::new(arg, "m"),
                ))
                .await
                .unwrap_or_else(|e| panic!("{prompt} {arg}: {e}"));
            assert!(r.completion.values.is_empty(), "{prompt} {arg}: {r:?}");
        }
        let r = server
            .client
            .complete(CompleteRequestParams::new(
                Reference::for_prompt("update_environment"),
                ArgumentInfo::new("environment", ""),
            ))
            .await
            .expect("complete");
        assert!(r.completion.values.iter().any(|v| v == "ml"), "{r:?}");
        server.client.cancel().await.ok();
    }
}
