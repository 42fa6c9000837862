//! Results a model can afford, through the built server and a real MCP
//! client, on the stand-in conda replaying recorded real conda outputs
//! (`tests/fixtures/recorded`): the default contract, lean mode and its
//! sizes, the result budget over a generated channel, `parsed_json` in each
//! mode, typed errors, and every result valid against its output schemas.

use std::path::{Path, PathBuf};

use conda_mcp_tests::mcp::{Era, Server};
use conda_mcp_tests::paths;
use conda_mcp_tests::rawrpc::RawClient;
use conda_mcp_tests::results::{assert_valid_result, text, type_arrays};
use conda_mcp_tests::standin::{ControlRule, StandinPrefix};
use rmcp::model::{CallToolResult, Tool};
use serde_json::{Value, json};
use std::time::Duration;

fn recorded(name: &str) -> PathBuf {
    paths::fixtures().join("recorded").join(name)
}

/// A rule for `command` replaying `stdout` (and `stderr`) with `exit_code`.
fn replay(
    command: &str,
    stdout: Option<&Path>,
    stderr: Option<&Path>,
    exit_code: i32,
) -> ControlRule {
    ControlRule {
        stdout_file: stdout.map(Path::to_path_buf),
        stderr_file: stderr.map(Path::to_path_buf),
        exit_code: Some(exit_code),
        ..ControlRule::for_commands(&[command])
    }
}

fn tool<'a>(tools: &'a [Tool], name: &str) -> &'a Tool {
    tools
        .iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("{name} is not listed"))
}

/// Calls `name` and checks the result against its output schemas.
async fn call(server: &Server, tools: &[Tool], name: &str, args: Value) -> (CallToolResult, Value) {
    let r = server.call_ok(name, args).await;
    assert_valid_result(tool(tools, name), &r);
    let s = r.structured_content.clone().expect("structuredContent");
    (r, s)
}

#[tokio::test]
async fn default_mode_keeps_the_reference_contract() {
    let standin = StandinPrefix::standard();
    let info = recorded("info.json");
    standin
        .set_control(&[replay("info", Some(&info), None, 0)])
        .expect("control");
    let server = Server::start(&standin.conda_exe, &[], Era::Initialize).await;
    let tools = server.tools().await;
    for t in &tools {
        let schema = Value::Object(
            t.output_schema
                .as_ref()
                .expect("outputSchema")
                .as_ref()
                .clone(),
        );
        assert_eq!(
            type_arrays(&schema),
            Vec::<String>::new(),
            "{}: type arrays",
            t.name
        );
    }
    // The full result schema, published once in the capabilities, has none
    // either, and lists every error code.
    let (caps, _) = server
        .read_text("conda://capabilities")
        .await
        .expect("capabilities");
    let caps: Value = serde_json::from_str(&caps).expect("capabilities JSON");
    let result_schema = &caps["result_schema"];
    assert!(result_schema.is_object(), "{caps}");
    assert_eq!(
        type_arrays(result_schema),
        Vec::<String>::new(),
        "result_schema: type arrays"
    );
    for code in [
        "invalid_arguments",
        "packages_not_found",
        "crashed_after_success",
    ] {
        assert!(
            result_schema.to_string().contains(&format!("\"{code}\"")),
            "result_schema lists {code}"
        );
    }
    let (r, s) = call(&server, &tools, "conda_info", json!({"json": true})).await;
    let stdout = std::fs::read_to_string(&info).expect("recorded");
    // Both copies, as the reference contract fixes them.
    assert_eq!(s["stdout"], json!(stdout));
    let expected: Value = serde_json::from_str(&stdout).expect("recorded JSON");
    assert_eq!(s["parsed_json"], expected);
    assert!(
        s.get("stdout_omitted").is_none() && s.get("cut").is_none(),
        "{s}"
    );
    // Text: the summary line, then the result serialized compactly.
    let t = text(&r);
    let (line, rest) = t.split_once('\n').expect("two parts");
    assert!(line.starts_with("conda info: succeeded"), "{line}");
    assert_eq!(rest, serde_json::to_string(&s).expect("compact"));
    server.close().await;
}

/// The three calls of the size table, replayed from conda's recorded
/// stdout: (tool, arguments, command path, recording).
fn size_cases() -> Vec<(&'static str, Value, &'static str, PathBuf)> {
    vec![
        (
            "conda_info",
            json!({"json": true}),
            "info",
            recorded("info.json"),
        ),
        (
            "conda_config",
            json!({"show": [], "json": true}),
            "config",
            recorded("config-show.json"),
        ),
        (
            "conda_search",
            json!({"match_spec": "lab-greet", "json": true}),
            "search",
            recorded("search-lab-greet.json"),
        ),
    ]
}

#[tokio::test]
async fn lean_results_meet_the_size_targets_on_recorded_outputs() {
    let standin = StandinPrefix::standard();
    let rules: Vec<ControlRule> = size_cases()
        .iter()
        .map(|(_, _, cmd, file)| replay(cmd, Some(file), None, 0))
        .collect();
    standin.set_control(&rules).expect("control");
    let mut sizes = Vec::new();
    for mode in ["default", "lean"] {
        let mut client = RawClient::start(&standin.conda_exe, &["--result-mode", mode]).await;
        for (i, (name, args, _, file)) in size_cases().into_iter().enumerate() {
            let stdout_len = std::fs::metadata(&file).expect("recorded").len() as f64;
            let id = format!("{mode}-{i}");
            client.call_tool(&id, name, args, None).await;
            let (resp, _) = client.response(&id, Duration::from_secs(60)).await;
            let wire = resp.to_string().len() as f64 + 1.0;
            let result = &resp["result"];
            assert_eq!(result["isError"], json!(false), "{resp}");
            let text_len = result["content"][0]["text"].as_str().expect("text").len() as f64;
            let s = &result["structuredContent"];
            assert!(s["parsed_json"].is_object(), "{mode} {name}: {s}");
            if mode == "lean" {
                assert_eq!(s["stdout"], json!(""), "{name}: one copy");
                assert_eq!(s["stdout_omitted"], json!(true));
                assert!(
                    text_len <= 1.05 * stdout_len + 400.0,
                    "{name}: text block {text_len} B for {stdout_len} B of stdout"
                );
                assert!(
                    wire <= 2.2 * stdout_len + 800.0,
                    "{name}: response {wire} B for {stdout_len} B of stdout"
                );
            }
            sizes.push(format!(
                "{mode} {name}: stdout {stdout_len} B, text {text_len} B, response {wire} B"
            ));
        }
        client.close().await;
    }
    eprintln!("{}", sizes.join("\n"));
}

/// A `conda search --json` answer over a generated channel: `names` package
/// names with `per_name` records each.
fn generated_search(names: usize, per_name: usize) -> Value {
    let mut doc = serde_json::Map::new();
    for n in 0..names {
        let name = format!("gen-pkg-{n:03}");
        let records: Vec<Value> = (0..per_name)
            .map(|v| {
                json!({
                    "name": name, "version": format!("1.{v}.0"), "build": format!("h{v:08x}_0"),
                    "build_number": 0, "channel": "file:///generated/linux-64", "subdir": "linux-64",
                    "fn": format!("{name}-1.{v}.0-h{v:08x}_0.conda"),
                    "md5": format!("{:032x}", n * 1000 + v), "sha256": format!("{:064x}", n * 1000 + v),
                    "url": format!("file:///generated/linux-64/{name}-1.{v}.0-h{v:08x}_0.conda"),
                    "depends": ["python >=3.9", "libzlib >=1.2.13,<2.0a0"], "constrains": [],
                    "license": "BSD-3-Clause", "timestamp": 1_700_000_000_000u64 + v as u64, "size": 12345
                })
            })
            .collect();
        doc.insert(name, Value::Array(records));
    }
    Value::Object(doc)
}

#[tokio::test]
async fn the_budget_cuts_a_large_search_and_keeps_it_valid() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let doc = generated_search(30, 100);
    let file = dir.path().join("search.json");
    let bytes = serde_json::to_vec_pretty(&doc).expect("json");
    assert!(
        bytes.len() > 1_000_000,
        "the generated answer is {} B",
        bytes.len()
    );
    std::fs::write(&file, &bytes).expect("write");
    standin
        .set_control(&[replay("search", Some(&file), None, 0)])
        .expect("control");
    let server = Server::start(
        &standin.conda_exe,
        &["--result-mode", "lean", "--output-limit-bytes", "4000000"],
        Era::Initialize,
    )
    .await;
    let tools = server.tools().await;
    let (r, s) = call(
        &server,
        &tools,
        "conda_search",
        json!({"match_spec": "gen-pkg", "json": true}),
    )
    .await;
    let serialized = serde_json::to_string(&s).expect("json").len();
    assert!(serialized <= 40_000, "structured result is {serialized} B");
    let cut = &s["cut"];
    assert_eq!(cut["max_result_bytes"], json!(40_000));
    assert_eq!(cut["parsed_json"]["total"], json!(3000), "{cut}");
    let parsed = s["parsed_json"]
        .as_object()
        .expect("parsed_json is an object");
    let kept: usize = parsed
        .values()
        .map(|v| v.as_array().map_or(0, Vec::len))
        .sum();
    assert!(kept > 0, "something is kept");
    assert_eq!(cut["parsed_json"]["kept"], json!(kept));
    assert_eq!(parsed.len(), 30, "every package name keeps its entry");
    for a in cut["parsed_json"]["arrays"].as_array().expect("arrays") {
        let path = a["path"].as_str().expect("path");
        let arr = s["parsed_json"]
            .pointer(path)
            .and_then(Value::as_array)
            .expect("cut array");
        assert_eq!(json!(arr.len()), a["kept"]);
        assert_eq!(a["total"], json!(100));
        // Each kept record is the conda record as conda printed it: the
        // newest ones, which conda search prints last.
        let all = doc.pointer(path).and_then(Value::as_array).expect("path");
        assert_eq!(arr.last(), all.last());
        assert_eq!(arr[0], all[all.len() - arr.len()]);
    }
    assert_eq!(cut["parsed_json"]["kept_end"], json!("last"));
    assert_eq!(cut["parsed_json"]["arrays_cut"], json!(30));
    assert!(
        cut["parsed_json"]["arrays"]
            .as_array()
            .expect("arrays")
            .len()
            <= 3
    );
    eprintln!(
        "30x100 search ({} B of JSON): {serialized} / 40000 B, kept {kept} of 3000 records",
        bytes.len()
    );
    let line = text(&r).lines().next().unwrap_or_default().to_owned();
    assert!(
        line.contains("of 3000 items") && line.contains("match_spec"),
        "{line}"
    );
    server.close().await;
}

/// One lean `conda_search` of `doc` at `budget` (`None`: the default):
/// the structured result.
async fn lean_search_of(doc: &Value, budget: Option<&str>) -> Value {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("search.json");
    std::fs::write(&file, serde_json::to_vec_pretty(doc).expect("json")).expect("write");
    standin
        .set_control(&[replay("search", Some(&file), None, 0)])
        .expect("control");
    let mut args = vec!["--result-mode", "lean", "--output-limit-bytes", "4000000"];
    if let Some(b) = budget {
        args.extend(["--max-result-bytes", b]);
    }
    let server = Server::start(&standin.conda_exe, &args, Era::Initialize).await;
    let tools = server.tools().await;
    let (_, s) = call(
        &server,
        &tools,
        "conda_search",
        json!({"match_spec": "gen-pkg", "json": true}),
    )
    .await;
    server.close().await;
    s
}

#[tokio::test]
async fn a_wide_search_fills_its_budget_fairly() {
    // 111 packages x 10 versions: every package keeps its newest versions
    // before any keeps all, and the budget is used, not left empty.
    let doc = generated_search(111, 10);
    let s = lean_search_of(&doc, None).await;
    let used = serde_json::to_string(&s).expect("json").len();
    assert!((36_000..=40_000).contains(&used), "uses {used} of 40,000 B");
    let cut = &s["cut"]["parsed_json"];
    assert_eq!(cut["total"], json!(1110), "{cut}");
    let parsed = s["parsed_json"].as_object().expect("object");
    assert_eq!(parsed.len(), 111);
    let lens: Vec<usize> = parsed
        .values()
        .map(|v| v.as_array().map_or(0, Vec::len))
        .collect();
    // Records of about 500 B: not every package fits one at 40,000 B;
    // the kept ones differ by at most one record per package.
    let (min, max) = (
        lens.iter().min().expect("min"),
        lens.iter().max().expect("max"),
    );
    assert!(*max >= 1 && max - min <= 1, "kept per package: {lens:?}");
    assert_eq!(cut["kept"], json!(lens.iter().sum::<usize>()));
    for (name, kept) in parsed {
        let (all, kept) = (
            doc[name].as_array().expect("array"),
            kept.as_array().expect("array"),
        );
        if let Some(last) = kept.last() {
            assert_eq!(Some(last), all.last(), "{name}: the newest");
        }
    }
    // The report is counts and a few paths, much smaller than the data.
    let report = serde_json::to_string(&s["cut"]).expect("json").len();
    assert!(report < 700, "cut report {report} B: {}", s["cut"]);
    eprintln!(
        "111x10 search: {used} / 40000 B, kept {} of 1110 records, cut report {report} B",
        cut["kept"]
    );
}

#[tokio::test]
async fn the_smallest_budget_still_cuts_json_structurally() {
    // 400 package names: even their emptied lists are over 4,096 B.
    let doc = generated_search(400, 10);
    let s = lean_search_of(&doc, Some("4096")).await;
    let used = serde_json::to_string(&s).expect("json").len();
    assert!(used <= 4096, "{used}");
    assert!(s.get("parsed_json_error").is_none(), "{s}");
    assert_eq!(s["stdout"], json!(""), "no text cut of stdout: {s}");
    let parsed = s["parsed_json"].as_object().expect("valid JSON, an object");
    assert!(!parsed.is_empty(), "some keys are kept");
    let cut = &s["cut"]["parsed_json"];
    assert_eq!(
        cut["keys_dropped"].as_u64().expect("keys dropped") + parsed.len() as u64,
        400,
        "{cut}"
    );
    eprintln!(
        "400x10 search at 4096: {used} B, {} keys, {} records kept",
        parsed.len(),
        cut["kept"]
    );
}

#[tokio::test]
async fn lean_errors_say_it_once_and_leave_tracebacks_out() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    // conda's error document of an unexpected error carries a traceback.
    let mut doc: Value = serde_json::from_str(
        &std::fs::read_to_string(recorded("search-missing.json")).expect("recorded"),
    )
    .expect("JSON");
    let traceback =
        std::fs::read_to_string(recorded("search-badspec-json.stderr")).expect("recorded");
    doc["traceback"] = json!(traceback);
    let doc_file = dir.path().join("error.json");
    std::fs::write(&doc_file, serde_json::to_vec_pretty(&doc).expect("json")).expect("write");
    standin
        .set_control(&[replay(
            "search",
            Some(&doc_file),
            Some(&recorded("search-badspec-json.stderr")),
            1,
        )])
        .expect("control");
    let server = Server::start(
        &standin.conda_exe,
        &["--result-mode", "lean"],
        Era::Initialize,
    )
    .await;
    let tools = server.tools().await;
    let tool = tool(&tools, "conda_search");
    let r = server
        .call_ok(
            "conda_search",
            json!({"match_spec": "nonexistent-pkg", "json": true}),
        )
        .await;
    assert_valid_result(tool, &r);
    let s = r.structured_content.clone().expect("structured");
    let e = &s["error"];
    assert_eq!(e["code"], json!("packages_not_found"), "{e}");
    let message = e["message"].as_str().expect("message");
    assert!(message.contains("nonexistent-pkg"), "{message}");
    // conda's message once: in error.message, not again in parsed_json.
    let parsed = s["parsed_json"].as_object().expect("parsed_json");
    for key in ["message", "error", "traceback"] {
        assert!(!parsed.contains_key(key), "{key} in {s}");
    }
    assert_eq!(
        parsed["exception_name"],
        json!("PackagesNotFoundInChannelsError")
    );
    assert_eq!(
        e["details"]["left_out"],
        json!(["error", "message", "traceback"])
    );
    let stderr = s["stderr"].as_str().expect("stderr");
    assert!(!stderr.contains("File \""), "{stderr}");
    assert!(
        stderr.contains("TypeError: Object of type InvalidMatchSpec"),
        "{stderr}"
    );
    let lean_size = serde_json::to_string(&s).expect("json").len();
    assert!(lean_size < 3_000, "{lean_size} B");
    // Asked for detail: the tracebacks stay.
    let r = server
        .call_ok(
            "conda_search",
            json!({"match_spec": "nonexistent-pkg", "json": true, "verbosity": 1}),
        )
        .await;
    assert_valid_result(tool, &r);
    let s = r.structured_content.clone().expect("structured");
    assert_eq!(
        s["parsed_json"]["traceback"],
        json!(traceback),
        "{}",
        s["parsed_json"]
    );
    assert_eq!(s["stderr"], json!(traceback));
    assert!(s["parsed_json"].get("message").is_none(), "{s}");
    server.close().await;
    eprintln!(
        "lean error with a traceback: {lean_size} B, with verbose {} B",
        serde_json::to_string(&s).expect("json").len()
    );
}

#[tokio::test]
async fn parsed_json_in_each_mode() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let doc = r#"{"envs": ["/opt/a"]}"#;
    let cases: Vec<(&str, String, Option<Value>, Option<&str>)> = vec![
        // (name, stdout, lean parsed_json, default parsed_json_error piece)
        (
            "banner",
            format!("Notice: a message from the channel.\n{doc}\n"),
            Some(json!({"envs": ["/opt/a"]})),
            Some("banner"),
        ),
        (
            "two",
            format!("{doc}\n{{\"b\": 2}}\n"),
            Some(json!({"b": 2})),
            Some("2 JSON documents"),
        ),
        (
            "garbage",
            "{\"envs\": [tru]}\n".to_owned(),
            None,
            Some("syntax error at line 1"),
        ),
        (
            "incomplete",
            "{\"envs\": [\"/opt/a\",".to_owned(),
            None,
            Some("incomplete"),
        ),
    ];
    for mode in ["default", "lean"] {
        let server = Server::start(
            &standin.conda_exe,
            &["--result-mode", mode],
            Era::Initialize,
        )
        .await;
        let tools = server.tools().await;
        for (name, stdout, lean_value, why) in &cases {
            let file = dir.path().join(format!("{name}.out"));
            std::fs::write(&file, stdout).expect("write");
            standin
                .set_control(&[replay("env list", Some(&file), None, 0)])
                .expect("control");
            let (_, s) = call(&server, &tools, "conda_env_list", json!({"json": true})).await;
            let expect_value = if mode == "lean" {
                lean_value.clone()
            } else {
                None
            };
            assert_eq!(
                s.get("parsed_json").cloned(),
                expect_value,
                "{mode} {name}: {s}"
            );
            if expect_value.is_none() {
                let e = s["parsed_json_error"].as_str().unwrap_or_default();
                assert!(e.contains(why.unwrap_or_default()), "{mode} {name}: {e:?}");
                assert!(!e.contains("/opt/a"), "never quotes stdout: {e}");
            } else {
                assert!(s.get("parsed_json_error").is_none(), "{s}");
            }
        }
        // Progress records (conda's reporter, NUL after each) then the final
        // document.
        standin
            .set_control(&[ControlRule {
                progress_records: Some(3),
                progress_interval_seconds: Some(0.01),
                stdout_file: Some(recorded("search-lab-greet.json")),
                ..ControlRule::for_commands(&["search"])
            }])
            .expect("control");
        let (_, s) = call(
            &server,
            &tools,
            "conda_search",
            json!({"match_spec": "lab-greet", "json": true}),
        )
        .await;
        assert_eq!(s["stdout_lossy"], json!(true), "NUL separators: {s}");
        if mode == "lean" {
            assert_eq!(
                s["parsed_json"]["lab-greet"][0]["version"],
                json!("1.0"),
                "{s}"
            );
            assert!(s.get("parsed_json_error").is_none());
        } else {
            assert!(s.get("parsed_json").is_none(), "{s}");
            assert_eq!(
                s["parsed_json_error"],
                json!("3 progress records precede the final JSON document")
            );
        }
        server.close().await;
    }
    // Cut by the output limit.
    standin
        .set_control(&[replay("info", Some(&recorded("info.json")), None, 0)])
        .expect("control");
    let server = Server::start(
        &standin.conda_exe,
        &["--output-limit-bytes", "100"],
        Era::Initialize,
    )
    .await;
    let tools = server.tools().await;
    let (_, s) = call(&server, &tools, "conda_info", json!({"json": true})).await;
    assert!(s.get("parsed_json").is_none());
    assert!(
        s["parsed_json_error"]
            .as_str()
            .unwrap_or_default()
            .contains("--output-limit-bytes"),
        "{s}"
    );
    server.close().await;
}

async fn error_of(server: &Server, tools: &[Tool], name: &str, args: Value) -> Value {
    let (r, s) = call(server, tools, name, args).await;
    assert_eq!(r.is_error, Some(true), "{s}");
    s["error"].clone()
}

#[tokio::test]
async fn typed_errors_from_the_server_and_from_conda() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    for mode in ["default", "lean"] {
        let server = Server::start(
            &standin.conda_exe,
            &["--result-mode", mode, "--timeout", "3"],
            Era::Initialize,
        )
        .await;
        let tools = server.tools().await;
        standin.clear_control().expect("control");

        let e = error_of(
            &server,
            &tools,
            "conda_info",
            json!({"verbosity": "SECRET"}),
        )
        .await;
        assert_eq!(e["code"], json!("invalid_arguments"));
        assert_eq!(e["details"]["errors"][0]["path"], json!("/verbosity"));
        assert!(!e.to_string().contains("SECRET"), "{e}");

        let e = error_of(
            &server,
            &tools,
            "conda_install",
            // yes: true, so it is not a dry run (which a read-only server
            // may run).
            json!({"packages": ["x"], "name": "e", "yes": true}),
        )
        .await;
        assert_eq!(e["code"], json!("refused"));
        assert_eq!(e["details"]["missing"], json!(["--allow-write"]));
        assert_eq!(e["retryable"], json!(false));

        // conda's --json error document.
        standin
            .set_control(&[replay(
                "search",
                Some(&recorded("search-missing.json")),
                None,
                1,
            )])
            .expect("control");
        let e = error_of(
            &server,
            &tools,
            "conda_search",
            json!({"match_spec": "nonexistent-pkg", "json": true}),
        )
        .await;
        assert_eq!(e["code"], json!("packages_not_found"), "{e}");
        assert_eq!(
            e["details"]["exception_name"],
            json!("PackagesNotFoundInChannelsError")
        );
        assert_eq!(e["details"]["exit_code"], json!(1));
        // The same without --json: the last SomethingError line of stderr.
        standin
            .set_control(&[replay(
                "search",
                Some(&recorded("search-missing.stdout")),
                Some(&recorded("search-missing.stderr")),
                1,
            )])
            .expect("control");
        let e = error_of(
            &server,
            &tools,
            "conda_search",
            json!({"match_spec": "nonexistent-pkg"}),
        )
        .await;
        assert_eq!(e["code"], json!("packages_not_found"), "{e}");
        standin
            .set_control(&[replay(
                "env list",
                None,
                Some(&recorded("list-noenv.stderr")),
                1,
            )])
            .expect("control");
        let e = error_of(&server, &tools, "conda_env_list", json!({})).await;
        assert_eq!(e["code"], json!("environment_not_found"), "{e}");
        assert_eq!(
            e["details"]["exception_name"],
            json!("EnvironmentLocationNotFound")
        );
        // conda fails to serialize its own InvalidMatchSpec and prints a
        // traceback after it: the known exception wins.
        standin
            .set_control(&[replay(
                "search",
                None,
                Some(&recorded("search-badspec-json.stderr")),
                1,
            )])
            .expect("control");
        let e = error_of(
            &server,
            &tools,
            "conda_search",
            json!({"match_spec": "lab-greet[version=", "json": true}),
        )
        .await;
        assert_eq!(e["code"], json!("invalid_spec"), "{e}");
        // Anything else is conda_error, with the last line of stderr.
        let stderr = dir.path().join("other.stderr");
        std::fs::write(
            &stderr,
            "something happened\nCondaError: a new kind of failure\n",
        )
        .expect("write");
        standin
            .set_control(&[replay("info", None, Some(&stderr), 1)])
            .expect("control");
        let e = error_of(&server, &tools, "conda_info", json!({})).await;
        assert_eq!(e["code"], json!("conda_error"));
        assert_eq!(e["details"]["exception_name"], json!("CondaError"));

        // Killed by a signal, before and after conda's success document.
        standin
            .set_control(&[ControlRule {
                abort: Some(true),
                ..ControlRule::for_commands(&["info"])
            }])
            .expect("control");
        let e = error_of(&server, &tools, "conda_info", json!({})).await;
        assert_eq!(e["code"], json!("killed_by_signal"), "{e}");
        assert_eq!(e["details"]["signal"], json!("SIGABRT"));
        let success = dir.path().join("success.json");
        std::fs::write(
            &success,
            r#"{"success": true, "prefix": "/opt/envs/x", "actions": {"LINK": []}}"#,
        )
        .expect("write");
        standin
            .set_control(&[ControlRule {
                abort: Some(true),
                stdout_file: Some(success.clone()),
                ..ControlRule::for_commands(&["info"])
            }])
            .expect("control");
        let (r, s) = call(&server, &tools, "conda_info", json!({"json": true})).await;
        assert_eq!(r.is_error, Some(true));
        assert_eq!(s["error"]["code"], json!("crashed_after_success"), "{s}");
        assert_eq!(s["error"]["retryable"], json!(false));
        assert!(
            s["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("conda list -n NAME")
        );
        assert!(
            text(&r)
                .lines()
                .next()
                .unwrap_or_default()
                .contains("very probably applied")
        );

        // The time limit: SIGTERM ends the stand-in within the grace.
        standin
            .set_control(&[ControlRule {
                sleep_seconds: Some(30.0),
                ..ControlRule::for_commands(&["info"])
            }])
            .expect("control");
        let e = error_of(&server, &tools, "conda_info", json!({})).await;
        assert_eq!(e["code"], json!("timeout"), "{e}");
        assert_eq!(e["retryable"], json!(true));
        assert_eq!(e["details"]["signal"], json!("SIGTERM"));
        // ... or SIGKILL after it when SIGTERM is ignored.
        standin
            .set_control(&[ControlRule {
                sleep_seconds: Some(30.0),
                ignore_sigterm: Some(true),
                ..ControlRule::for_commands(&["info"])
            }])
            .expect("control");
        let e = error_of(&server, &tools, "conda_info", json!({})).await;
        assert_eq!(e["details"]["signal"], json!("SIGKILL"), "{e}");

        // A call whose time limit runs out in the queue behind another
        // (which ignores SIGTERM, so it holds the lane past the deadline).
        standin
            .set_control(&[ControlRule {
                sleep_seconds: Some(30.0),
                ignore_sigterm: Some(true),
                ..ControlRule::for_commands(&["info"])
            }])
            .expect("control");
        let (first, second) = tokio::join!(server.call_ok("conda_info", json!({})), async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            server.call_ok("conda_env_list", json!({})).await
        });
        assert_valid_result(tool(&tools, "conda_info"), &first);
        assert_valid_result(tool(&tools, "conda_env_list"), &second);
        let s = second.structured_content.expect("structured");
        assert_eq!(s["error"]["code"], json!("queue_timeout"), "{s}");
        assert_eq!(s["error"]["retryable"], json!(true));
        server.close().await;
    }
}
