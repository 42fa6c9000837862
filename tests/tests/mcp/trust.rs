//! Trust under bad input, through the built server and worker on a stand-in
//! conda: credentials never reach the log (and, unless
//! `--no-mask-credentials`, never the results), submitted values never reach
//! the log, the MCP library's request logging is gone at every level, and
//! deeply nested JSON in a request or in conda's output cannot overflow a
//! stack.

use std::time::Duration;

use conda_mcp_tests::rawrpc::RawClient;
use conda_mcp_tests::standin::{ControlRule, StandinPrefix};
use serde_json::{Value, json};

const PASSWORD: &str = "s3cret-pw";
const CHANNEL: &str = "https://alice:s3cret-pw@host/private";

fn structured(response: &Value) -> &Value {
    &response["result"]["structuredContent"]
}

/// Every call whose arguments carry a credential, at `RUST_LOG=trace`, in
/// both log formats: the password is nowhere in the log, the MCP library
/// wrote nothing, and the server's own line per request is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_carries_no_submitted_values_at_any_level() {
    let prefix = StandinPrefix::standard();
    for format in ["text", "json"] {
        let mut c = RawClient::start_with_env(
            &prefix.conda_exe,
            &["--allow-exec", "--log-format", format],
            &[("RUST_LOG", "trace")],
        )
        .await;
        let spec = format!("{CHANNEL}::pkg");
        c.call_tool("s1", "conda_search", json!({"match_spec": spec}), None)
            .await;
        let (r, _) = c.response("s1", Duration::from_secs(60)).await;
        assert_eq!(structured(&r)["exit_code"], json!(0), "{r}");
        c.call_tool(
            "x1",
            "conda_execute",
            json!({"argv": ["search", spec], "stdin": CHANNEL}),
            None,
        )
        .await;
        c.response("x1", Duration::from_secs(60)).await;
        // Invalid arguments and an unknown tool, both carrying the password.
        c.call_tool(
            "bad",
            "conda_search",
            json!({"match_spec": 7, "x": CHANNEL}),
            None,
        )
        .await;
        let (bad, _) = c.response("bad", Duration::from_secs(60)).await;
        assert_eq!(bad["result"]["isError"], json!(true), "{bad}");
        c.call_tool("unk", CHANNEL, json!({}), None).await;
        let (unk, _) = c.response("unk", Duration::from_secs(60)).await;
        assert!(unk.get("error").is_some(), "{unk}");
        c.send(
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                      "params": {"requestId": "gone", "reason": CHANNEL}}),
        )
        .await;
        c.send(json!({"jsonrpc": "2.0", "id": "p", "method": "ping"}))
            .await;
        c.response("p", Duration::from_secs(10)).await;
        // The ping's log line may follow its answer: read the log once the
        // server has exited.
        let log = c.close_and_log().await;

        assert!(
            !log.contains(PASSWORD),
            "password in the {format} log:\n{log}"
        );
        assert!(
            !log.contains("host/private::pkg"),
            "argument value logged:\n{log}"
        );
        assert!(
            !log.contains("rmcp"),
            "MCP library lines in the {format} log:\n{log}"
        );
        let requests: Vec<&str> = log.lines().filter(|l| l.contains("request")).collect();
        for (id, tool, outcome) in [
            ("s1", "conda_search", "ok"),
            ("x1", "conda_execute", "ok"),
            ("bad", "conda_search", "tool_error"),
            ("p", "", "ok"),
        ] {
            let found = requests.iter().any(|l| {
                if format == "json" {
                    let v: Value = serde_json::from_str(l).expect("a JSON log line");
                    // The server nests an event's fields under "fields".
                    let f = v.get("fields").unwrap_or(&v);
                    f["id"] == json!(id)
                        && f["tool"] == json!(tool)
                        && f["outcome"] == json!(outcome)
                } else {
                    l.contains(&format!("id=\"{id}\""))
                        && l.contains(&format!("outcome=\"{outcome}\""))
                        && l.contains("duration_ms=")
                        && (tool.is_empty() || l.contains(&format!("tool=\"{tool}\"")))
                }
            });
            assert!(found, "no request line for {id} ({format}):\n{log}");
        }
        assert!(
            requests
                .iter()
                .any(|l| l.contains("unk") && l.contains("(invalid)") && l.contains("-32602")),
            "the unknown tool is logged as an invalid name with its error code:\n{log}"
        );
        if format == "json" {
            for line in log.lines() {
                serde_json::from_str::<Value>(line)
                    .unwrap_or_else(|_| panic!("not one JSON object per line: {line}"));
            }
        }
        // The worker's job line: the command path and the argument count.
        assert!(
            log.lines()
                .any(|l| l.contains("job started") && l.contains("argc")),
            "{log}"
        );
    }
}

/// 100,000 nested arrays as a request's arguments and as conda's stdout:
/// the request is answered as an invalid request with its id (the JSON is
/// valid, the value cannot be decoded), conda's output is returned
/// without `parsed_json`, and server and worker keep serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_json_cannot_overflow_a_stack() {
    const LEVELS: usize = 100_000;
    let prefix = StandinPrefix::standard();
    prefix
        .set_control(&[ControlRule {
            deep_json_levels: Some(LEVELS as u32),
            ..ControlRule::for_commands(&["info"])
        }])
        .expect("control file");
    let mut c = RawClient::start(&prefix.conda_exe, &[]).await;
    let deep = format!("{}{}", "[".repeat(LEVELS), "]".repeat(LEVELS));
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{{"name":"conda_search","arguments":{{"match_spec":{deep}}}}}}}"#
    );
    c.send_raw(format!("{line}\n").as_bytes()).await;
    let answer = c.next(Duration::from_secs(30)).await.expect("an answer");
    assert_eq!(answer["error"]["code"], json!(-32600), "{answer}");
    assert_eq!(answer["id"], json!("deep"), "{answer}");

    c.call_tool("out", "conda_info", json!({}), None).await;
    let (r, _) = c.response("out", Duration::from_secs(60)).await;
    let s = structured(&r);
    assert_eq!(s["exit_code"], json!(0), "{r}");
    assert_eq!(s["stdout"].as_str().map(str::len), Some(2 * LEVELS + 1));
    assert!(s.get("parsed_json").is_none_or(Value::is_null), "{s}");

    c.send(json!({"jsonrpc": "2.0", "id": "alive", "method": "ping"}))
        .await;
    let (pong, _) = c.response("alive", Duration::from_secs(10)).await;
    assert!(pong.get("result").is_some(), "{pong}");
    assert!(c.close().await.is_some(), "the server exits cleanly");
}

/// Fuzz cases per property: `CONDA_MCP_FUZZ_CASES` (a long run), else
/// `default`.
fn fuzz_cases(default: u32) -> u32 {
    std::env::var("CONDA_MCP_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

const MARKER: &str = "zq7marker";

/// Any JSON value, of any shape: the wrong shapes for most properties. Holds
/// the marker in its strings; numbers include the extremes.
fn any_json() -> proptest::strategy::BoxedStrategy<Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        Just(json!(u64::MAX)),
        Just(json!(f64::MAX)),
        Just(json!(-0.5)),
        "[ -~\u{e9}\u{0}]{0,6}".prop_map(|s| json!(format!("{s}{MARKER}"))),
        "[ -~]{0,6}".prop_map(|s| json!(format!("-{MARKER}{s}"))),
    ];
    leaf.prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            proptest::collection::btree_map("[a-z_]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed()
}

/// Tool arguments against every generated tool's full schema (the
/// in-project dump, and the recorded conda 26 parser when present): valid
/// arguments drawn from the schema with one value replaced by a random JSON
/// value of any shape, and objects of random values under the tool's
/// property names (plus an unknown one). Validation, compilation and policy
/// classification never panic, and no error text carries a submitted value.
#[test]
fn fuzzed_arguments_never_panic_and_errors_never_echo() {
    use conda_mcp_server::catalog;
    use conda_mcp_server::schema::{ArgumentValidator, Profile, input_schema, tool_names};
    use conda_mcp_tests::roundtrip::args_strategy;
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    let mut dumps = vec![conda_mcp_tests::standin::standin_dump()];
    dumps.push(conda_mcp_tests::paths::real_dump());
    let per_tool = fuzz_cases(48);
    for dump_path in dumps {
        let bytes = std::fs::read(&dump_path).expect("dump readable");
        let dump = conda_mcp_server::dump::Dump::from_json(&bytes).expect("dump");
        let catalog = catalog::build(&dump).expect("catalog");
        let tools: Vec<_> = catalog.tools().map(|(i, _)| i).collect();
        let names = tool_names(
            &tools
                .iter()
                .map(|&i| catalog.commands[i].subpath().to_vec())
                .collect::<Vec<_>>(),
        );
        let mut cases = 0u64;
        let mut accepted = 0u64;
        for (&cmd, name) in tools.iter().zip(&names) {
            let full = input_schema(&catalog, cmd, Profile::Full);
            let validator = ArgumentValidator::new(name, &full).expect("full schema compiles");
            let props: Vec<String> = full["properties"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            let valid = args_strategy(&catalog, cmd, &full, &[]);
            let keys = if props.is_empty() {
                Just("unknown_key".to_owned()).boxed()
            } else {
                prop_oneof![
                    8 => proptest::sample::select(props.clone()),
                    1 => Just("unknown_key".to_owned()),
                ]
                .boxed()
            };
            let mutated = (valid, keys.clone(), any_json()).prop_map(|(mut args, k, v)| {
                args.insert(k, v);
                Value::Object(args)
            });
            let random = proptest::collection::btree_map(keys, any_json(), 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect()));
            let strategy = prop_oneof![mutated, random];
            let mut runner = TestRunner::new(Config {
                cases: per_tool,
                failure_persistence: None,
                ..Config::default()
            });
            let seen = std::cell::Cell::new((0u64, 0u64));
            runner
                .run(&strategy, |args| {
                    let (n, ok) = seen.get();
                    let mut texts = Vec::new();
                    let mut passed = false;
                    match validator.validate(&args) {
                        Err(errors) => texts.extend(errors.iter().map(ToString::to_string)),
                        Ok(()) => {
                            let empty = serde_json::Map::new();
                            match conda_mcp_server::compile::compile(
                                &catalog,
                                cmd,
                                args.as_object().unwrap_or(&empty),
                            ) {
                                Err(e) => texts.push(e.to_string()),
                                Ok(argv) => {
                                    passed = true;
                                    std::hint::black_box(conda_mcp_server::policy::classify(
                                        &catalog, &argv,
                                    ));
                                }
                            }
                        }
                    }
                    for t in &texts {
                        prop_assert!(!t.contains(MARKER), "{name}: an error echoes a value: {t}");
                    }
                    seen.set((n + 1, ok + u64::from(passed)));
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let (n, ok) = seen.get();
            cases += n;
            accepted += ok;
        }
        eprintln!(
            "fuzz tool arguments ({}): {cases} cases over {} tools, {accepted} valid and compiled (CONDA_MCP_FUZZ_CASES sets the count per tool)",
            dump_path.display(),
            tools.len()
        );
        assert!(cases >= u64::from(per_tool) * tools.len() as u64 / 2);
    }
}

/// Peak resident memory of a process (`VmHWM`), in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// A 100 MB line is refused with a parse error without being held: the
/// server's peak memory stays far below the line's size, and the next
/// request is served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_100_mb_line_is_refused_without_buffering_it() {
    const LINE: usize = 100 * 1000 * 1000;
    let prefix = StandinPrefix::standard();
    let mut c = RawClient::start(&prefix.conda_exe, &[]).await;
    let before = peak_rss(c.pid());
    let chunk = vec![b'a'; 1 << 20];
    let mut sent = 0;
    c.send_raw(b"{\"jsonrpc\":\"2.0\",\"id\":\"big\",\"method\":\"ping\",\"params\":{\"x\":\"")
        .await;
    while sent < LINE {
        c.send_raw(&chunk).await;
        sent += chunk.len();
    }
    c.send_raw(b"\"}}\n").await;
    let refused = c.next(Duration::from_secs(60)).await.expect("an answer");
    assert_eq!(refused["error"]["code"], json!(-32700), "{refused}");
    assert!(refused["id"].is_null(), "{refused}");
    c.send(json!({"jsonrpc": "2.0", "id": "after", "method": "ping"}))
        .await;
    let (pong, _) = c.response("after", Duration::from_secs(10)).await;
    assert!(pong.get("result").is_some(), "{pong}");
    let after = peak_rss(c.pid());
    eprintln!(
        "100 MB line: server peak RSS {:.1} MB before, {:.1} MB after",
        before as f64 / 1e6,
        after as f64 / 1e6
    );
    assert!(
        after < before + 40_000_000,
        "peak RSS grew from {before} to {after} bytes"
    );
    c.close().await;
}

/// What one fuzzed line sent to the real server is.
#[derive(Debug, Clone)]
enum Line {
    /// A request that runs no conda; answered exactly once with its id.
    Request(u8, u32),
    /// Garbage that is not JSON: one parse error (id null).
    Garbage(Vec<u8>),
    /// Nesting deeper than 128 levels: one invalid request with its id.
    Deep(u32, usize),
    /// A number beyond a double: one invalid request with its id.
    Huge(u32),
    /// A lone UTF-16 surrogate escape (`"\ud800"`): one invalid request
    /// with its id.
    LoneSurrogate(u32),
    /// A JSON value that is not a message but has an id: one invalid
    /// request with that id.
    NotAMessage(u32),
    /// A notification nobody knows: no answer.
    Notification,
}

fn line_strategy() -> impl proptest::strategy::Strategy<Value = Line> {
    use proptest::prelude::*;
    prop_oneof![
        4 => (0u8..6, any::<u32>()).prop_map(|(k, i)| Line::Request(k, i)),
        2 => proptest::collection::vec(any::<u8>().prop_filter("no newline", |b| *b != b'\n'), 0..80)
            .prop_map(Line::Garbage),
        1 => (any::<u32>(), 129usize..20_000).prop_map(|(i, d)| Line::Deep(i, d)),
        1 => any::<u32>().prop_map(Line::Huge),
        1 => any::<u32>().prop_map(Line::LoneSurrogate),
        1 => any::<u32>().prop_map(Line::NotAMessage),
        1 => Just(Line::Notification),
    ]
}

/// The bytes of a line of case `n`, and the id it must be answered with
/// (`Some(None)`: one answer with a null id; `None`: no answer).
fn render(line: &Line, n: u32) -> (Vec<u8>, Option<Option<String>>) {
    let id = |i: &u32| format!("c{n}-{i}");
    match line {
        Line::Request(k, i) => {
            let id = id(i);
            let (method, params) = match k {
                0 => ("ping", json!({})),
                1 => ("tools/list", json!({})),
                2 => ("resources/list", json!({})),
                3 => ("tools/call", json!({"name": format!("{MARKER}_tool"), "arguments": {}})),
                4 => (
                    "tools/call",
                    json!({"name": "conda_search", "arguments": {"match_spec": [MARKER], "info": MARKER}}),
                ),
                _ => ("resources/read", json!({"uri": format!("conda://{MARKER}")})),
            };
            let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
            (msg.to_string().into_bytes(), Some(Some(id)))
        }
        Line::Garbage(b) => {
            let mut v = format!("#{MARKER}").into_bytes();
            v.extend_from_slice(b);
            (v, Some(None))
        }
        Line::Deep(i, d) => (
            format!(
                r#"{{"jsonrpc":"2.0","id":"{}","method":"ping","params":{{"{MARKER}":{}{}}}}}"#,
                id(i),
                "[".repeat(*d),
                "]".repeat(*d)
            )
            .into_bytes(),
            Some(Some(id(i))),
        ),
        Line::Huge(i) => (
            format!(r#"{{"jsonrpc":"2.0","id":"{}","method":"ping","params":{{"{MARKER}":-1e999999}}}}"#, id(i))
                .into_bytes(),
            Some(Some(id(i))),
        ),
        Line::LoneSurrogate(i) => (
            format!(r#"{{"jsonrpc":"2.0","id":"{}","method":"tools/call","params":{{"name":"{MARKER}\ud800"}}}}"#, id(i))
                .into_bytes(),
            Some(Some(id(i))),
        ),
        Line::NotAMessage(i) => {
            let id = id(i);
            (
                format!(r#"{{"id":"{id}","{MARKER}":[1,{{}}]}}"#).into_bytes(),
                Some(Some(id)),
            )
        }
        Line::Notification => (
            format!(r#"{{"jsonrpc":"2.0","method":"notifications/{MARKER}","params":{{"a":"{MARKER}"}}}}"#)
                .into_bytes(),
            None,
        ),
    }
}

/// Batches of fuzzed lines through one real server: every request id is
/// answered exactly once, every undecodable line once with a null id,
/// notifications never, nothing sent is echoed, and the server stays up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fuzzed_lines_through_the_server_get_exactly_one_answer_each() {
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::{Config, TestRunner};
    let prefix = StandinPrefix::standard();
    let mut c = RawClient::start(&prefix.conda_exe, &[]).await;
    let cases = fuzz_cases(64);
    let mut runner = TestRunner::new(Config::default());
    let strategy = proptest::collection::vec(line_strategy(), 1..16);
    let mut lines_sent = 0usize;
    for n in 0..cases {
        let batch = strategy.new_tree(&mut runner).expect("draw").current();
        let mut expected_ids: Vec<String> = Vec::new();
        let mut expected_null = 0usize;
        let mut seen_ids = std::collections::HashSet::new();
        let mut input = Vec::new();
        for line in &batch {
            let (bytes, answer) = render(line, n);
            // Ids are unique within a case: a repeated draw is skipped.
            if let Some(Some(id)) = &answer
                && !seen_ids.insert(id.clone())
            {
                continue;
            }
            input.extend_from_slice(&bytes);
            input.push(b'\n');
            lines_sent += 1;
            match answer {
                Some(Some(id)) => expected_ids.push(id),
                Some(None) => expected_null += 1,
                None => {}
            }
        }
        let end = format!("end-{n}");
        input.extend_from_slice(
            json!({"jsonrpc": "2.0", "id": end, "method": "ping"})
                .to_string()
                .as_bytes(),
        );
        input.push(b'\n');
        c.send_raw(&input).await;
        let mut got_ids: Vec<String> = Vec::new();
        let mut got_null = 0usize;
        let mut end_seen = false;
        while !end_seen || got_ids.len() < expected_ids.len() || got_null < expected_null {
            let msg = c.next(Duration::from_secs(30)).await.unwrap_or_else(|| {
                panic!(
                    "case {n}: answers missing; expected {expected_ids:?} + {expected_null} null, got {got_ids:?} + {got_null}"
                )
            });
            let text = msg.to_string();
            assert!(!text.contains(MARKER), "case {n}: echoed: {text}");
            match &msg["id"] {
                Value::String(s) if *s == end => end_seen = true,
                Value::String(s) => got_ids.push(s.clone()),
                Value::Null => got_null += 1,
                other => panic!("case {n}: unexpected id {other}"),
            }
        }
        // Nothing more for this case: the next ping is the next answer.
        let probe = format!("probe-{n}");
        c.send(json!({"jsonrpc": "2.0", "id": probe, "method": "ping"}))
            .await;
        let next = c.next(Duration::from_secs(30)).await.expect("probe answer");
        assert_eq!(
            next["id"],
            json!(probe),
            "case {n}: an extra answer: {next}"
        );
        got_ids.sort();
        expected_ids.sort();
        assert_eq!(got_ids, expected_ids, "case {n}");
        assert_eq!(got_null, expected_null, "case {n}");
    }
    eprintln!(
        "fuzz the server's stdin: {cases} cases, {lines_sent} lines (CONDA_MCP_FUZZ_CASES sets the count)"
    );
    assert!(c.close().await.is_some(), "the server exits cleanly");
}

/// Credentials in conda's output (its stdout, its JSON, its stderr, a
/// failing call) reach the host masked and counted; with
/// `--no-mask-credentials` they reach it as they are, and the log stays
/// masked either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_in_results_are_masked_and_counted() {
    let prefix = StandinPrefix::standard();
    let condarc_show =
        format!("channels:\n  - {CHANNEL}\n  - https://conda.anaconda.org/t/tk-12ab/chan\n");
    prefix
        .set_control(&[ControlRule {
            stdout_text: Some(condarc_show.clone()),
            stderr_text: Some(format!(
                "CondaHTTPError: HTTP 401 for url <{CHANNEL}/noarch/repodata.json>\n"
            )),
            exit_code: Some(1),
            ..ControlRule::for_commands(&["config"])
        }])
        .expect("control file");
    let spec = format!("{CHANNEL}::pkg");

    let mut c = RawClient::start(&prefix.conda_exe, &[]).await;
    // The stand-in echoes its argv: stdout and parsed_json carry the spec.
    c.call_tool(
        "s",
        "conda_search",
        json!({"match_spec": spec, "json": true}),
        None,
    )
    .await;
    let (r, _) = c.response("s", Duration::from_secs(60)).await;
    let s = structured(&r);
    assert_eq!(s["exit_code"], json!(0), "{r}");
    assert!(!r.to_string().contains(PASSWORD), "{r}");
    let argv = s["parsed_json"]["argv"]
        .as_array()
        .expect("parsed_json stays valid JSON");
    assert!(
        argv.contains(&json!("https://alice:***@host/private::pkg")),
        "{argv:?}"
    );
    assert!(
        s["stdout"]
            .as_str()
            .unwrap_or("")
            .contains("https://alice:***@host/private::pkg")
    );
    assert!(s["credentials_masked"].as_u64().unwrap_or(0) >= 2, "{s}");
    let text = r["result"]["content"][0]["text"].as_str().unwrap_or("");
    assert!(text.contains("credential(s) masked"), "{text}");

    // A failing call: conda's stdout and its error on stderr.
    c.call_tool("c", "conda_config", json!({"show": ["channels"]}), None)
        .await;
    let (r, _) = c.response("c", Duration::from_secs(60)).await;
    let s = structured(&r);
    assert_eq!(r["result"]["isError"], json!(true), "{r}");
    assert!(!r.to_string().contains(PASSWORD), "{r}");
    assert!(!r.to_string().contains("tk-12ab"), "{r}");
    assert_eq!(
        s["stdout"],
        json!(
            "channels:\n  - https://alice:***@host/private\n  - https://conda.anaconda.org/t/<TOKEN>/chan\n"
        )
    );
    assert!(
        s["stderr"]
            .as_str()
            .unwrap_or("")
            .contains("<https://alice:***@host/private/noarch"),
        "{s}"
    );
    assert_eq!(s["credentials_masked"], json!(3), "{s}");
    let log = c.stderr_text();
    c.close().await;
    assert!(!log.contains(PASSWORD), "{log}");

    // Operators who need the raw output turn masking off; logs stay masked.
    let mut c = RawClient::start_with_env(
        &prefix.conda_exe,
        &["--no-mask-credentials"],
        &[("RUST_LOG", "trace")],
    )
    .await;
    c.call_tool("c", "conda_config", json!({"show": ["channels"]}), None)
        .await;
    let (r, _) = c.response("c", Duration::from_secs(60)).await;
    let s = structured(&r);
    assert_eq!(s["stdout"], json!(condarc_show), "{r}");
    assert!(s.get("credentials_masked").is_none(), "{s}");
    c.call_tool("s", "conda_search", json!({"match_spec": spec}), None)
        .await;
    let (r, _) = c.response("s", Duration::from_secs(60)).await;
    assert!(
        r.to_string().contains(PASSWORD),
        "raw output when masking is off"
    );
    let log = c.stderr_text();
    c.close().await;
    assert!(!log.contains(PASSWORD), "{log}");
}

/// The real-conda tier (`real`, [`conda_mcp_tests::tiers`]): a `.condarc`
/// (through `CONDARC`) holding a `user:password` channel; conda prints it
/// raw, once in `config --show channels --json` and once per subdir
/// (`linux-64`, `noarch`) in `info --json`; the results carry it masked,
/// count each occurrence once (stdout is masked on arrival, the JSON parsed
/// from it holds nothing left to mask), and neither results nor the log
/// carry the password.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_conda_credentials_are_masked() {
    let Some(conda) = conda_mcp_tests::tiers::real_conda(module_path!()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let condarc = dir.path().join("condarc");
    std::fs::write(
        &condarc,
        format!("channels:\n  - {CHANNEL}\n  - defaults\n"),
    )
    .expect("condarc");
    let condarc = condarc.to_string_lossy().into_owned();
    let mut c = RawClient::start_with_env(
        &conda,
        &[],
        &[("CONDARC", condarc.as_str()), ("RUST_LOG", "debug")],
    )
    .await;
    c.call_tool(
        "cfg",
        "conda_config",
        json!({"show": ["channels"], "json": true}),
        None,
    )
    .await;
    let (r, _) = c.response("cfg", Duration::from_secs(120)).await;
    let s = structured(&r);
    assert_eq!(s["exit_code"], json!(0), "{r}");
    assert!(!r.to_string().contains(PASSWORD), "{r}");
    let channels = s["parsed_json"]["channels"].as_array().expect("channels");
    assert!(
        channels.contains(&json!("https://alice:***@host/private")),
        "{channels:?}"
    );
    assert_eq!(s["credentials_masked"], json!(1), "{s}");
    c.call_tool("info", "conda_info", json!({"json": true}), None)
        .await;
    let (r, _) = c.response("info", Duration::from_secs(120)).await;
    assert!(!r.to_string().contains(PASSWORD), "{r}");
    let s = structured(&r);
    let channels = s["parsed_json"]["channels"].as_array().expect("channels");
    assert!(
        channels.contains(&json!("https://alice:***@host/private/noarch")),
        "{channels:?}"
    );
    assert_eq!(s["credentials_masked"], json!(2), "{s}");
    let log = c.stderr_text();
    c.close().await;
    assert!(!log.contains(PASSWORD), "{log}");
}
