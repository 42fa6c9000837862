//! Black-box tests of the built `conda-mcp` through rmcp's client (child
//! process transport), in both protocol eras, against the stand-in conda.

use std::time::{Duration, Instant};

use conda_mcp_server::schema::profile::portable_violations;
use conda_mcp_tests::mcp::{Era, Server, result_text, rpc_error, server_command};
use conda_mcp_tests::paths;
use conda_mcp_tests::standin::{ControlRule, StandinPrefix};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const INVALID_PARAMS: i32 = -32602;

#[tokio::test]
async fn both_eras_serve_tools_calls_refusals_and_the_capabilities_resource() {
    let standin = StandinPrefix::standard();
    for era in Era::ALL {
        let server = Server::start_with_env(
            &standin.conda_exe,
            &[],
            era,
            &[("CONDA_MCP_TEST_SECRET", "s3cr3t-v4lue")],
        )
        .await;
        let info = server.client.peer_info().expect("server info");
        let implementation = info.server_info.clone().expect("server_info present");
        assert_eq!(implementation.name, "conda-mcp", "{era:?}");
        assert_eq!(implementation.version, env!("CARGO_PKG_VERSION"), "{era:?}");
        // The server's icon, as a data: URI a stdio host can show.
        let icons = implementation.icons.clone().unwrap_or_default();
        assert!(
            icons.len() == 1 && icons[0].src.starts_with("data:image/svg+xml;base64,"),
            "{era:?}: {icons:?}"
        );
        let stateless = info.protocol_version.as_str() >= "2026-07-28";
        assert_eq!(
            stateless,
            era == Era::Stateless,
            "{era:?} negotiated {}",
            info.protocol_version.as_str()
        );

        // tools/list: generated tools only (no conda_execute without --allow-exec).
        let tools = server.tools().await;
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert!(
            names.contains(&"conda_info") && names.contains(&"conda_env_create"),
            "{names:?}"
        );
        assert!(
            !names.contains(&"conda_execute"),
            "{era:?}: conda_execute listed without --allow-exec"
        );
        assert!(
            !names.contains(&"conda_activate"),
            "shell-only commands are not tools"
        );
        for t in &tools {
            assert!(t.output_schema.is_some(), "{}: outputSchema", t.name);
            // A generated tool's title would only repeat its name
            // (`conda_env_create`): hosts show the name.
            assert!(t.title.is_none(), "{}: {:?}", t.name, t.title);
            // The icon is the server's only, without --tool-icons.
            assert!(t.icons.is_none(), "{}: {:?}", t.name, t.icons);
        }

        // A read-only call runs the stand-in and returns its output.
        let before = standin.conda_runs();
        let r = server.call_ok("conda_info", json!({"json": true})).await;
        assert_eq!(r.is_error, Some(false), "{era:?}: {}", result_text(&r));
        let s = r.structured_content.clone().expect("structuredContent");
        assert_eq!(s["exit_code"], json!(0));
        assert_eq!(s["parsed_json"]["command"], json!(["info"]), "{s}");
        assert_eq!(s["parsed_json"]["namespace"]["json"], json!(true), "{s}");
        assert!(
            result_text(&r).starts_with("conda info: succeeded"),
            "{}",
            result_text(&r)
        );
        assert_eq!(
            standin.conda_runs(),
            before + 1,
            "one conda process per call"
        );

        // A refused call names the missing startup option and runs nothing.
        let before = standin.conda_runs();
        let r = server
            .call_ok(
                "conda_install",
                json!({"packages": ["numpy-SECRET"], "name": "env-SECRET", "yes": true}),
            )
            .await;
        let text = result_text(&r);
        assert_eq!(r.is_error, Some(true));
        assert!(text.contains("--allow-write"), "{text}");
        assert!(!text.contains("SECRET"), "{text}");
        assert_eq!(
            standin.conda_runs(),
            before,
            "a refused call starts no process"
        );

        // An invalid call names the JSON path, never the value.
        let r = server
            .call_ok("conda_info", json!({"verbosity": "SECRET"}))
            .await;
        let text = result_text(&r);
        assert_eq!(r.is_error, Some(true));
        assert!(
            text.contains("/verbosity") && !text.contains("SECRET"),
            "{text}"
        );

        // Unknown tool and resource: invalid params listing nothing of the catalog.
        let e = server
            .call("conda_nope_SECRET", json!({}))
            .await
            .expect_err("unknown tool");
        let d = rpc_error(&e).expect("JSON-RPC error");
        assert_eq!(d.code.0, INVALID_PARAMS, "{era:?}");
        assert!(
            !d.message.contains("conda_info") && !d.message.contains("SECRET"),
            "{}",
            d.message
        );
        assert!(d.message.contains("tools/list"), "{}", d.message);
        // A typo: the closest tool is named, the name given is not repeated.
        let e = server
            .call("conda_infp", json!({}))
            .await
            .expect_err("unknown tool");
        let d = rpc_error(&e).expect("JSON-RPC error");
        assert_eq!(d.code.0, INVALID_PARAMS, "{era:?}");
        assert_eq!(
            d.message,
            "unknown tool; the closest is conda_info; tools/list names this server's tools"
        );
        // A compact tool in the typed mode: said so, no near name.
        let e = server
            .call("conda_call", json!({}))
            .await
            .expect_err("unknown tool");
        let d = rpc_error(&e).expect("JSON-RPC error");
        assert_eq!(d.code.0, INVALID_PARAMS, "{era:?}");
        assert!(
            d.message.contains("--tool-mode compact") && !d.message.contains("closest"),
            "{}",
            d.message
        );
        let e = server
            .read_text("conda://nope")
            .await
            .expect_err("unknown resource");
        let d = rpc_error(&e).expect("JSON-RPC error");
        assert_eq!(d.code.0, INVALID_PARAMS, "{era:?}");
        assert!(!d.message.contains("capabilities"), "{}", d.message);

        // The capabilities resource: JSON, byte-identical, no environment.
        let (a, mime) = server
            .read_text("conda://capabilities")
            .await
            .expect("capabilities");
        let (b, _) = server
            .read_text("conda://capabilities")
            .await
            .expect("capabilities");
        assert_eq!(a, b, "byte-identical for the life of the process");
        assert_eq!(mime.as_deref(), Some("application/json"));
        let caps: Value = serde_json::from_str(&a).expect("JSON");
        for key in [
            "target_executable",
            "conda_version",
            "catalog",
            "generated_tools",
            "plugins",
            "discovery_fingerprint",
        ] {
            assert!(caps.get(key).is_some(), "capabilities lacks {key}");
        }
        assert_eq!(
            caps["generated_tools"].as_array().map(Vec::len),
            // every tool listed but the server's own inventory
            Some(tools.iter().filter(|t| t.name != "conda_inventory").count())
        );
        assert!(
            // Names of the variables conda gets are listed, values never.
            !a.contains("s3cr3t-v4lue"),
            "environment value leaked"
        );
        server.close().await;
    }
}

/// `--tool-icons`: every tool, generated or the server's own, carries the
/// server's icon (the same `data:` URI as `serverInfo`), in both eras.
#[tokio::test]
async fn with_tool_icons_every_tool_carries_the_server_icon() {
    let standin = StandinPrefix::standard();
    for era in Era::ALL {
        let server =
            Server::start(&standin.conda_exe, &["--tool-icons", "--allow-exec"], era).await;
        let info = server.client.peer_info().expect("server info");
        let server_icons = info
            .server_info
            .clone()
            .and_then(|i| i.icons)
            .expect("serverInfo.icons");
        let tools = server.tools().await;
        assert!(
            tools.iter().any(|t| t.name == "conda_inventory")
                && tools.iter().any(|t| t.name == "conda_execute"),
            "{era:?}: the server's own tools are listed"
        );
        for t in &tools {
            assert_eq!(
                t.icons.as_ref(),
                Some(&server_icons),
                "{era:?}: {} carries the server's icon",
                t.name
            );
        }
    }
}

#[tokio::test]
async fn invalid_arguments_are_refused_before_any_process_starts() {
    let standin = StandinPrefix::standard();
    let server = Server::start(&standin.conda_exe, &["--allow-write"], Era::Initialize).await;
    let cases = [
        ("conda_info", json!({"all": "yes"}), "/all"),
        // An unknown property is named by its path (a name, never the value).
        (
            "conda_info",
            json!({"no_such_field": "SECRET"}),
            "/no_such_field",
        ),
        (
            "conda_install",
            json!({"packages": ["--SECRET"]}),
            "/packages/0",
        ),
        // A one-value option takes a value starting with '-' (passed as
        // --name=-x), but not '--' alone, which argparse drops, nor "".
        (
            "conda_install",
            json!({"packages": ["SECRET"], "name": "--"}),
            "/name",
        ),
        (
            "conda_install",
            json!({"packages": ["SECRET"], "name": ""}),
            "/name",
        ),
        (
            "conda_install",
            json!({"name": "a", "prefix": "/SECRET"}),
            "/",
        ),
        ("conda_remove", json!({"all": true}), "/"),
        ("conda_install", json!({"channel": "SECRET"}), "/channel"),
    ];
    let before = standin.conda_runs();
    for (tool, args, path) in cases {
        let r = server.call_ok(tool, args.clone()).await;
        let text = result_text(&r);
        assert_eq!(r.is_error, Some(true), "{tool} {args}: {text}");
        assert!(
            text.contains(&format!("at {path}:")),
            "{tool} {args}: {text}"
        );
        assert!(!text.contains("SECRET"), "{tool} {args}: {text}");
    }
    assert_eq!(
        standin.conda_runs(),
        before,
        "no process started for invalid calls"
    );
    server.close().await;
}

/// An argument longer than Linux lets one argument be (`MAX_ARG_STRLEN`,
/// 128 KiB with its NUL), or an argv over the server's share of `ARG_MAX`,
/// is invalid before anything runs, named by its path; one byte shorter
/// runs.
#[tokio::test]
async fn arguments_too_long_for_linux_are_invalid_before_anything_runs() {
    let standin = StandinPrefix::standard();
    let server = Server::start(
        &standin.conda_exe,
        &["--allow-write", "--allow-exec"],
        Era::Initialize,
    )
    .await;
    let long = format!("SECRET{}", "x".repeat(200 * 1024));
    let near = "y".repeat(127 * 1024);
    let cases = [
        (
            "conda_install",
            json!({"packages": ["a", long]}),
            "/packages/1",
            "MAX_ARG_STRLEN",
        ),
        (
            "conda_install",
            json!({"packages": ["a"], "name": long}),
            "/name",
            "MAX_ARG_STRLEN",
        ),
        (
            "conda_execute",
            json!({"argv": ["search", long]}),
            "/argv/1",
            "MAX_ARG_STRLEN",
        ),
        (
            "conda_install",
            json!({"packages": vec![near.clone(); 9]}),
            "/",
            "ARG_MAX",
        ),
        (
            "conda_execute",
            json!({"argv": vec![near.clone(); 9]}),
            "/argv",
            "ARG_MAX",
        ),
    ];
    let before = standin.conda_runs();
    for (tool, args, path, rule) in cases {
        let r = server.call_ok(tool, args).await;
        let text = result_text(&r);
        assert_eq!(r.is_error, Some(true), "{tool} {path}: {text}");
        let s = r.structured_content.clone().expect("structured");
        assert_eq!(s["error"]["code"], json!("invalid_arguments"), "{s}");
        assert!(text.contains(&format!("at {path}:")), "{tool}: {text}");
        assert!(text.contains(rule), "{tool}: {text}");
        assert!(
            !text.contains("SECRET") && !text.contains("yyyy"),
            "{tool}: {text}"
        );
    }
    assert_eq!(standin.conda_runs(), before, "nothing ran");
    // The longest argument Linux takes runs.
    let longest = "z".repeat(128 * 1024 - 1);
    let r = server
        .call_ok(
            "conda_install",
            json!({"packages": [longest], "dry_run": true, "json": true}),
        )
        .await;
    let s = r.structured_content.clone().expect("structured");
    assert_eq!(s["exit_code"], json!(0), "{}", result_text(&r));
    assert_eq!(
        s["parsed_json"]["namespace"]["packages"][0]
            .as_str()
            .map(str::len),
        Some(128 * 1024 - 1)
    );
    server.close().await;
}

#[tokio::test]
async fn conda_execute_is_listed_and_checked_only_with_allow_exec() {
    let standin = StandinPrefix::standard();
    let server = Server::start(
        &standin.conda_exe,
        &["--allow-exec", "--timeout", "30"],
        Era::Stateless,
    )
    .await;
    let tools = server.tools().await;
    let exec = tools
        .iter()
        .find(|t| t.name == "conda_execute")
        .expect("conda_execute listed");
    assert_eq!(
        exec.input_schema.get("additionalProperties"),
        Some(&json!(false))
    );

    let r = server
        .call_ok(
            "conda_execute",
            json!({"argv": ["env", "list", "--json"], "timeout_seconds": 1e9}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", result_text(&r));
    let s = r.structured_content.expect("structured");
    assert_eq!(s["parsed_json"]["command"], json!(["env", "list"]));

    let dir = tempfile::tempdir().expect("tempdir");
    let r = server
        .call_ok(
            "conda_execute",
            json!({"argv": ["info"], "cwd": dir.path()}),
        )
        .await;
    assert_eq!(r.is_error, Some(false), "{}", result_text(&r));
    assert_eq!(
        r.structured_content.expect("s")["parsed_json"]["cwd"],
        json!(dir.path().canonicalize().expect("c"))
    );

    let before = standin.conda_runs();
    for (args, path) in [
        (
            json!({"argv": ["info"], "no_such_field": "SECRET"}),
            "/no_such_field",
        ),
        (
            json!({"argv": ["info"], "cwd": "/nonexistent/SECRET"}),
            "/cwd",
        ),
        (
            json!({"argv": ["info"], "timeout_seconds": 0}),
            "/timeout_seconds",
        ),
        (json!({"argv": ["in\u{0}fo"]}), "/argv/0"),
        (json!({"argv": "info"}), "/argv"),
    ] {
        let r = server.call_ok("conda_execute", args.clone()).await;
        let text = result_text(&r);
        assert_eq!(r.is_error, Some(true), "{args}: {text}");
        assert!(text.contains(&format!("at {path}:")), "{args}: {text}");
        assert!(!text.contains("SECRET"), "{text}");
    }
    // A raw mutation needs --allow-write too, and is refused by the same classifier.
    let r = server
        .call_ok("conda_execute", json!({"argv": ["install", "numpy"]}))
        .await;
    assert!(
        result_text(&r).contains("--allow-write"),
        "{}",
        result_text(&r)
    );
    assert_eq!(standin.conda_runs(), before, "nothing ran");
    server.close().await;
}

/// Raw JSON-RPC over pipes: every stdout line is a JSON-RPC 2.0 frame, and
/// the server exits promptly once stdin closes.
#[tokio::test]
async fn stdout_carries_only_json_rpc_frames_and_stdin_close_ends_the_server() {
    let standin = StandinPrefix::standard();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = server_command(&standin.conda_exe, &["--log-format", "json"], dir.path());
    let mut child = cmd
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let mut stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let frames = [
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}),
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"conda_info","arguments":{"json":true}}}),
        json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"conda_remove","arguments":{"all":true,"name":"x"}}}),
        json!({"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"conda://capabilities"}}),
    ];
    let mut lines = BufReader::new(stdout).lines();
    let mut seen = Vec::new();
    for f in &frames {
        stdin
            .write_all(format!("{f}\n").as_bytes())
            .await
            .expect("write");
        if f.get("id").is_some() {
            let line = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
                .await
                .expect("answer in time")
                .expect("read")
                .expect("a line");
            seen.push(line);
        }
    }
    drop(stdin);
    let closed = Instant::now();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(60), lines.next_line())
        .await
        .expect("eof")
        .expect("read")
    {
        seen.push(line);
    }
    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
        .await
        .expect("exits")
        .expect("wait");
    let waited = closed.elapsed();
    assert!(status.success(), "{status}");
    // The server exits on EOF, not never (the latency is the stop_latency
    // benchmark's): 30 s is far from both.
    assert!(
        waited < Duration::from_secs(30),
        "exit took {waited:?} after stdin closed"
    );
    assert_eq!(seen.len(), 5);
    for line in &seen {
        let v: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert_eq!(v["jsonrpc"], json!("2.0"), "{line}");
        assert!(
            v.get("result").is_some() || v.get("error").is_some(),
            "{line}"
        );
    }
}

/// Every input schema the server lists for the recorded real conda 26
/// parser, in the portable profile, uses only the allowed keywords; and the
/// full profile adds exact group constraints.
#[tokio::test]
async fn real_dump_portable_schemas_use_only_allowed_keywords() {
    let dump = paths::real_dump();
    let standin = StandinPrefix::create(&dump).expect("stand-in prefix for the real dump");
    let server = Server::start(&standin.conda_exe, &[], Era::Initialize).await;
    let tools = server.tools().await;
    assert!(tools.len() >= 30, "{}", tools.len());
    for t in &tools {
        let schema = Value::Object(t.input_schema.as_ref().clone());
        assert_eq!(
            portable_violations(&schema),
            Vec::<String>::new(),
            "{}",
            t.name
        );
    }
    let bytes = serde_json::to_vec(&tools).expect("json").len();
    eprintln!(
        "portable tools/list of the real dump: {} tools, {bytes} bytes",
        tools.len()
    );
    // Read-only: no conda_execute, but a policy sentence first in each
    // tool it limits; within the target of every flag (surface tests).
    assert!(
        bytes <= conda_mcp_tests::mcp::TYPED_LIST_MAX_BYTES + 600,
        "{bytes} bytes"
    );
    server.close().await;

    let server = Server::start(
        &standin.conda_exe,
        &["--schema-profile", "full"],
        Era::Initialize,
    )
    .await;
    let tools = server.tools().await;
    let create = tools
        .iter()
        .find(|t| t.name == "conda_create")
        .expect("conda_create");
    assert!(
        create.input_schema.get("allOf").is_some(),
        "full profile states exclusive groups"
    );
    server.close().await;
}

/// Invalid flag values: a clear message on stderr, exit status 2, nothing on
/// stdout, before any MCP traffic.
#[test]
fn invalid_flags_exit_2_before_any_mcp_traffic() {
    for args in [
        &["--timeout", "0"][..],
        &["--timeout", "NaN"],
        &["--output-limit-bytes", "0"],
        &["--schema-profile", "strict"],
        &["--log-format", "xml"],
        &["--no-such-flag"],
    ] {
        let out = std::process::Command::new(conda_mcp_tests::bins::server())
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run conda-mcp");
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(out.stdout.is_empty(), "{args:?}: stdout must stay empty");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(args[0]) || err.contains("unexpected argument"),
            "{args:?}: {err}"
        );
    }
    let out = std::process::Command::new(conda_mcp_tests::bins::server())
        .arg("--version")
        .output()
        .expect("run conda-mcp");
    assert_eq!(out.status.code(), Some(0));
    // The workspace version and the commit this checkout is at.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        conda_mcp_tests::paths::expected_server_version()
    );
}

/// A stand-in whose `conda run` executes its program the way conda's
/// `main_run` does (capture mode unless `--no-capture-output`).
fn executing_run() -> StandinPrefix {
    use conda_mcp_tests::standin::ControlRule;
    let prefix = StandinPrefix::standard();
    prefix
        .set_control(&[ControlRule {
            execute_run: Some(true),
            ..ControlRule::for_commands(&["run"])
        }])
        .expect("control file");
    prefix
}

#[tokio::test]
async fn conda_run_keeps_its_output_ends_with_the_program_and_takes_stdin() {
    let prefix = executing_run();
    let server = Server::start(&prefix.conda_exe, &["--allow-exec"], Era::Initialize).await;
    let tools = server.tools().await;
    let run = tools
        .iter()
        .find(|t| t.name == "conda_run")
        .expect("conda_run");
    for p in ["stdin", "timeout_seconds"] {
        assert!(
            run.input_schema["properties"].get(p).is_some(),
            "{p}: {:?}",
            run.input_schema
        );
    }
    // A timeout keeps what the program printed before it.
    let r = server
        .call_ok(
            "conda_run",
            json!({"executable_call": ["sh", "-c", "echo started; sleep 30"], "timeout_seconds": 2}),
        )
        .await;
    let s = r.structured_content.clone().expect("structured");
    assert_eq!(s["timed_out"], json!(true), "{s}");
    assert_eq!(s["stdout"], json!("started\n"), "{s}");
    // A background grandchild does not keep the call open.
    let t0 = Instant::now();
    let r = server
        .call_ok(
            "conda_run",
            json!({"executable_call": ["sh", "-c", "sleep 300 & echo started"]}),
        )
        .await;
    let s = r.structured_content.clone().expect("structured");
    // after the drain grace, not the grandchild's 300 s
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    assert_eq!(s["stdout"], json!("started\n"), "{s}");
    assert_eq!(s["exit_code"], json!(0), "{s}");
    // stdin reaches the program.
    let r = server
        .call_ok(
            "conda_run",
            json!({"executable_call": ["cat"], "stdin": "hello from stdin"}),
        )
        .await;
    let s = r.structured_content.clone().expect("structured");
    assert_eq!(s["stdout"], json!("hello from stdin"), "{s}");
    // Capture mode, asked for explicitly, loses the output on a timeout:
    // what the default avoids.
    let r = server
        .call_ok(
            "conda_run",
            json!({"executable_call": ["sh", "-c", "echo started; sleep 30"],
                   "timeout_seconds": 2, "no_capture_output": false}),
        )
        .await;
    let s = r.structured_content.clone().expect("structured");
    assert_eq!(s["timed_out"], json!(true), "{s}");
    assert_eq!(s["stdout"], json!(""), "{s}");
    // Server options out of range are invalid arguments named by path.
    let r = server
        .call_ok(
            "conda_run",
            json!({"executable_call": ["true"], "timeout_seconds": 0}),
        )
        .await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        result_text(&r).contains("/timeout_seconds"),
        "{}",
        result_text(&r)
    );
    server.close().await;
}

#[tokio::test]
async fn relative_paths_and_missing_run_time_options_are_refused_before_conda_runs() {
    let prefix = StandinPrefix::standard();
    let server = Server::start(&prefix.conda_exe, &["--allow-write"], Era::Initialize).await;
    let tools = server.tools().await;
    let clean = tools
        .iter()
        .find(|t| t.name == "conda_clean")
        .expect("conda_clean");
    assert!(
        clean
            .description
            .as_deref()
            .unwrap_or("")
            .contains("Needs one of: all, tarballs, index_cache"),
        "{:?}",
        clean.description
    );
    let r = server
        .call_ok(
            "conda_remove",
            json!({"prefix": "envs/SECRETREL", "package_names": ["numpy"], "yes": true}),
        )
        .await;
    assert_eq!(r.is_error, Some(true));
    let text = result_text(&r);
    assert!(
        text.contains("/prefix") && text.contains("absolute"),
        "{text}"
    );
    assert!(
        !text.contains("SECRETREL"),
        "never echoes the value: {text}"
    );
    let r = server.call_ok("conda_clean", json!({"yes": true})).await;
    assert_eq!(r.is_error, Some(true));
    let text = result_text(&r);
    assert!(
        text.contains("conda clean needs one of: all, tarballs"),
        "{text}"
    );
    // Nothing ran: the result's shape with no exit code and a typed error.
    let s = r.structured_content.clone().expect("structured");
    assert_eq!(s["exit_code"], json!(null), "{s}");
    assert_eq!(s["error"]["code"], json!("invalid_arguments"), "{s}");
    // Absolute and home-relative paths pass.
    for p in ["/tmp/some-env", "~/envs/x"] {
        let r = server
            .call_ok(
                "conda_remove",
                json!({"prefix": p, "package_names": ["numpy"], "yes": true}),
            )
            .await;
        let s = r.structured_content.clone().expect("ran");
        assert_eq!(s["exit_code"], json!(0), "{s}");
    }
    server.close().await;
}

/// Every stand-in command that has conda's `yes` option, with arguments
/// that meet its run-time rules.
const CONFIRMED: [(&str, &str); 5] = [
    ("conda_install", r#"{"packages": ["numpy"]}"#),
    ("conda_update", r#"{"packages": ["numpy"]}"#),
    (
        "conda_remove",
        r#"{"package_names": ["numpy"], "name": "e"}"#,
    ),
    ("conda_clean", r#"{"all": true}"#),
    ("conda_env_create", r#"{"name": "e"}"#),
];

#[tokio::test]
async fn mutations_without_yes_run_as_dry_runs_and_say_nothing_changed() {
    let standin = StandinPrefix::standard();
    // Read-only server: the dry run is allowed, since it changes nothing.
    let server = Server::start(&standin.conda_exe, &[], Era::Initialize).await;
    let tools = server.tools().await;
    for (tool, args) in CONFIRMED {
        let t = tools.iter().find(|t| t.name == tool).expect(tool);
        assert_eq!(
            t.input_schema["properties"]["yes"]["description"],
            json!("Apply the change (else a dry run)."),
            "{tool}"
        );
        let args: Value = serde_json::from_str(args).expect("json");
        let r = server.call_ok(tool, args.clone()).await;
        let s = r
            .structured_content
            .clone()
            .unwrap_or_else(|| panic!("{tool}: {}", result_text(&r)));
        assert_eq!(s["exit_code"], json!(0), "{tool}: {s}");
        assert_eq!(s["confirmation_required"], json!(true), "{tool}: {s}");
        let argv = s["parsed_json"]["argv"].as_array().expect("argv");
        assert!(argv.contains(&json!("--dry-run")), "{tool}: {argv:?}");
        assert_eq!(
            s["parsed_json"]["namespace"]["dry_run"],
            json!(true),
            "{tool}: {s}"
        );
        // A read-only server cannot apply it: the next step says so
        // instead of asking for yes: true.
        let text = result_text(&r);
        assert!(
            text.starts_with("Nothing was changed")
                && text.contains("cannot apply it")
                && text.contains("restarted with --allow-write")
                && !text.contains("repeat the call with yes: true"),
            "{tool}: {text}"
        );
        assert_eq!(s["apply_requires"], json!(["--allow-write"]), "{tool}: {s}");
        // With yes the call is the caller's: a mutation, refused here.
        let mut with_yes = args.clone();
        with_yes["yes"] = json!(true);
        let r = server.call_ok(tool, with_yes).await;
        assert_eq!(r.is_error, Some(true), "{tool}");
        assert!(
            result_text(&r).contains("--allow-write"),
            "{tool}: {}",
            result_text(&r)
        );
    }
    // A dry run that fails here has nothing to confirm, nor options to ask
    // for.
    let failing = ControlRule {
        stderr_text: Some("PackagesNotFoundError: The following packages are not available from current channels:\n\n  - numpy\n".into()),
        exit_code: Some(1),
        ..ControlRule::for_commands(&["install"])
    };
    standin.set_control(&[failing]).expect("control");
    let (tool, args) = CONFIRMED[0];
    let r = server
        .call_ok(tool, serde_json::from_str(args).expect("json"))
        .await;
    let s = r.structured_content.clone().expect("structured");
    assert_eq!(r.is_error, Some(true), "{s}");
    assert_eq!(s["confirmation_required"], json!(false), "{s}");
    assert!(s.get("apply_requires").is_none(), "{s}");
    standin.set_control(&[]).expect("control");
    server.close().await;
    // --allow-write: without yes a dry run that says how to apply it; a dry
    // run that fails does not ask for yes: true.
    let server = Server::start(
        &standin.conda_exe,
        &["--allow-write", "--allow-base-writes"],
        Era::Initialize,
    )
    .await;
    let (tool, args) = CONFIRMED[0];
    let args: Value = serde_json::from_str(args).expect("json");
    let r = server.call_ok(tool, args.clone()).await;
    let text = result_text(&r);
    assert!(
        text.starts_with("Nothing was changed")
            && text.contains("repeat the call with yes: true to apply it"),
        "{text}"
    );
    let s = r.structured_content.clone().expect("structured");
    assert!(s.get("apply_requires").is_none(), "{s}");
    standin
        .set_control(&[ControlRule {
            stderr_text: Some("PackagesNotFoundError: The following packages are not available from current channels:\n\n  - numpy\n".into()),
            exit_code: Some(1),
            ..ControlRule::for_commands(&["install"])
        }])
        .expect("control");
    let r = server.call_ok(tool, args).await;
    let text = result_text(&r);
    assert_eq!(r.is_error, Some(true), "{text}");
    assert!(
        text.starts_with("Nothing was changed")
            && text.contains("dry run failed")
            && !text.contains("repeat the call with yes: true to apply"),
        "{text}"
    );
    // A failed plan cannot be confirmed.
    let s = r.structured_content.clone().expect("structured");
    assert_eq!(s["confirmation_required"], json!(false), "{s}");
    assert!(s.get("apply_requires").is_none(), "{s}");
    assert_eq!(s["error"]["code"], json!("packages_not_found"), "{s}");
    standin.set_control(&[]).expect("control");
    // With yes the argv is unchanged and the call is applied.
    for (tool, args) in CONFIRMED {
        let mut args: Value = serde_json::from_str(args).expect("json");
        args["yes"] = json!(true);
        let s = server
            .call_ok(tool, args)
            .await
            .structured_content
            .expect("ran");
        assert_eq!(s["confirmation_required"], json!(false), "{tool}: {s}");
        let argv = s["parsed_json"]["argv"]
            .as_array()
            .unwrap_or_else(|| panic!("{tool}: argv in {s}"));
        assert!(!argv.contains(&json!("--dry-run")), "{tool}: {argv:?}");
        assert!(argv.contains(&json!("--yes")), "{tool}: {argv:?}");
    }
    server.close().await;
    // The applied env create made the environment `e` (the stand-in creates
    // environments as conda does); a create into it again would be refused
    // (environment_exists, see writes.rs), so it goes before the next round.
    std::fs::remove_dir_all(standin.prefix.join("envs").join("e")).expect("env e was created");
    // --no-confirm: passed through as given.
    let server = Server::start(
        &standin.conda_exe,
        &["--allow-write", "--no-confirm", "--allow-base-writes"],
        Era::Initialize,
    )
    .await;
    for (tool, args) in CONFIRMED {
        let args: Value = serde_json::from_str(args).expect("json");
        let s = server
            .call_ok(tool, args)
            .await
            .structured_content
            .expect("ran");
        assert_eq!(s["confirmation_required"], json!(false), "{tool}: {s}");
        let argv = s["parsed_json"]["argv"]
            .as_array()
            .unwrap_or_else(|| panic!("{tool}: argv in {s}"));
        assert!(!argv.contains(&json!("--dry-run")), "{tool}: {argv:?}");
    }
    let tools = server.tools().await;
    let install = tools
        .iter()
        .find(|t| t.name == "conda_install")
        .expect("install");
    assert!(
        !install
            .description
            .as_deref()
            .unwrap_or("")
            .contains("dry run")
    );
    server.close().await;
}

/// Whatever `PATH` the host starts the server with (none, empty, or with
/// empty and relative entries), conda and the programs of `conda run` get
/// one of absolute directories only: a program named without a slash is
/// never taken from the directory it runs in.
#[tokio::test]
async fn conda_run_never_finds_programs_in_the_current_directory() {
    let prefix = executing_run();
    let dir = tempfile::tempdir().expect("tempdir");
    let trap = dir.path().join("cmcp-trap");
    std::fs::write(&trap, "#!/bin/sh\necho TRAPPED\n").expect("trap");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&trap, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let cwd = dir.path().to_str().expect("utf-8");
    let python = prefix.python.to_str().expect("utf-8");
    for path in [
        None,
        Some(""),
        Some(":"),
        Some(".:/usr/bin:"),
        Some("bin::"),
    ] {
        let server = Server::start_command(
            |d| {
                let mut cmd = server_command(&prefix.conda_exe, &["--allow-exec"], d);
                match path {
                    None => cmd.env_remove("PATH"),
                    Some(p) => cmd.env("PATH", p),
                };
                cmd
            },
            Era::Initialize,
        )
        .await;
        let r = server
            .call_ok(
                "conda_run",
                json!({"executable_call": ["cmcp-trap"], "cwd": cwd}),
            )
            .await;
        let s = r.structured_content.clone().expect("structured");
        assert!(
            !s["stdout"].as_str().unwrap_or("").contains("TRAPPED"),
            "PATH={path:?}: {s}"
        );
        assert_ne!(s["exit_code"], json!(0), "PATH={path:?}: {s}");
        let r = server
            .call_ok(
                "conda_run",
                json!({"executable_call": [python, "-c",
                       "import json, os; print(json.dumps(os.environ.get('PATH')))"],
                       "cwd": cwd}),
            )
            .await;
        let s = r.structured_content.clone().expect("structured");
        let seen: Option<String> =
            serde_json::from_str(s["stdout"].as_str().expect("stdout")).expect("json");
        let seen = seen.unwrap_or_else(|| panic!("PATH={path:?}: no PATH"));
        assert!(
            !seen.is_empty() && seen.split(':').all(|e| e.starts_with('/')),
            "PATH={path:?}: conda's program saw {seen:?}"
        );
        server.close().await;
    }
}
