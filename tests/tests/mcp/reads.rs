//! The files a call makes conda read lie where the caller may read
//! (docs/safety.md "Files a call reads"): a file option outside the
//! caller's home (and `--allow-read-path`) is refused with
//! `read_path_not_allowed`, naming the option and the rule, never the path
//! or the file; inside, the call runs. Black-box against the built server
//! and the stand-in conda serving the recorded conda 26 parser: on stdio (the
//! server's own user, its `HOME`), for the typed and the raw tool, on a
//! read-only server; a client that declares roots (MCP `roots/list`) reads
//! them too; and over HTTP for principals mapped to OS users (root tier:
//! each one's own home, never the other's).

use conda_mcp_tests::mcp::{Era, Server, result_text};
use conda_mcp_tests::paths;
use conda_mcp_tests::standin::StandinPrefix;
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

fn structured(r: &CallToolResult) -> Value {
    r.structured_content.clone().expect("structuredContent")
}

/// The refusal of `r`: its code, option and rule, and that neither the
/// path nor the file's content is in the result.
fn assert_refused(r: &CallToolResult, rule: &str, path: &str, what: &str) {
    let s = structured(r);
    assert_eq!(r.is_error, Some(true), "{what}: {}", result_text(r));
    let e = &s["error"];
    assert_eq!(e["code"], json!("read_path_not_allowed"), "{what}: {s}");
    assert_eq!(e["details"]["option"], json!("--file"), "{what}: {s}");
    assert_eq!(e["details"]["rule"], json!(rule), "{what}: {s}");
    assert_eq!(e["details"]["allowed_by"], json!("--allow-read-path"));
    assert_eq!(s["exit_code"], Value::Null, "{what}: nothing ran");
    let all = format!("{}{s}", result_text(r));
    assert!(!all.contains(path), "{what}: the path is not echoed: {all}");
    assert!(!all.contains("SECRET-TOKEN"), "{what}: {all}");
}

fn assert_ran(r: &CallToolResult, what: &str) {
    let s = structured(r);
    assert_eq!(r.is_error, Some(false), "{what}: {}", result_text(r));
    assert!(s["exit_code"].is_number(), "{what}: it ran: {s}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_options_read_only_the_callers_home_and_allowed_directories() {
    let p = StandinPrefix::create(&paths::real_dump()).expect("stand-in prefix");
    let home = tempfile::tempdir().expect("home");
    let other = tempfile::tempdir().expect("elsewhere");
    let mine = home.path().join("specs.txt");
    std::fs::write(&mine, "numpy\n").expect("specs");
    let token = other.path().join("token");
    std::fs::write(&token, "SECRET-TOKEN\n").expect("token");
    let (mine, token) = (
        mine.to_str().expect("utf-8").to_owned(),
        token.to_str().expect("utf-8").to_owned(),
    );
    let home_s = home.path().to_str().expect("utf-8");
    // Read-only: the create runs as a dry run.
    let server = Server::start_with_env(
        &p.conda_exe,
        &["--allow-exec"],
        Era::Initialize,
        &[("HOME", home_s)],
    )
    .await;
    let create = |file: &str| json!({"name": "lab", "file": [file], "json": true});
    let r = server.call_ok("conda_create", create(&mine)).await;
    assert_ran(&r, "a file in the home");
    let r = server.call_ok("conda_create", create("~/specs.txt")).await;
    assert_ran(&r, "~ is the home");
    let r = server.call_ok("conda_create", create(&token)).await;
    assert_refused(&r, "outside_allowed_places", &token, "outside the home");
    let r = server
        .call_ok("conda_create", create("/etc/hostname"))
        .await;
    assert_refused(&r, "system_directory", "/etc/hostname", "/etc");
    let sneaky = format!(
        "{home_s}/../{}",
        other
            .path()
            .file_name()
            .expect("name")
            .to_str()
            .expect("utf-8")
    );
    let r = server
        .call_ok("conda_create", create(&format!("{sneaky}/token")))
        .await;
    assert_refused(&r, "outside_allowed_places", &sneaky, "..");
    // The raw tool: the same rule on the argv that runs.
    let raw = |file: &str| json!({"argv": ["create", "-n", "lab", "--file", file, "--dry-run", "--json"]});
    let r = server.call_ok("conda_execute", raw("/etc/hostname")).await;
    assert_refused(&r, "system_directory", "/etc/hostname", "raw /etc");
    let r = server.call_ok("conda_execute", raw(&token)).await;
    assert_refused(&r, "outside_allowed_places", &token, "raw outside");
    let r = server.call_ok("conda_execute", raw(&mine)).await;
    assert_ran(&r, "raw in the home");
    server.close().await;
    // --allow-read-path widens it to that directory.
    let other_s = other.path().to_str().expect("utf-8");
    let server = Server::start_with_env(
        &p.conda_exe,
        &["--allow-read-path", other_s],
        Era::Initialize,
        &[("HOME", home_s)],
    )
    .await;
    let r = server.call_ok("conda_create", create(&token)).await;
    assert_ran(&r, "--allow-read-path");
    let r = server
        .call_ok("conda_create", create("/etc/hostname"))
        .await;
    assert_refused(&r, "system_directory", "/etc/hostname", "still not /etc");
    server.close().await;
}

#[test]
fn each_principal_reads_only_its_own_home() {
    use conda_mcp_server::transport::http::tokens::file_line;
    use conda_mcp_tests::http::{HttpServer, post_stateless, tempdir};
    use conda_mcp_tests::rawrpc::stateless_meta;
    use conda_mcp_tests::tiers::{Tier, missing};
    const TEST: &str = "reads::each_principal_reads_only_its_own_home";
    let Some(python) = super::http::root_python(TEST) else {
        return;
    };
    let users = ["cmcp-reads-a", "cmcp-reads-b"];
    let mut files = Vec::new();
    for u in users {
        if super::http::os_user(u).is_none() {
            missing(Tier::Root, TEST, "useradd could not make the test users");
            return;
        }
        let user = nix::unistd::User::from_name(u)
            .ok()
            .flatten()
            .expect("user");
        let file = user.dir.join("specs.txt");
        std::fs::write(&file, "SECRET-TOKEN\n").expect("specs");
        nix::unistd::chown(&file, Some(user.uid), Some(user.gid)).expect("chown");
        files.push(file.to_str().expect("utf-8").to_owned());
    }
    let prefix = conda_mcp_tests::standin::shared_prefix(&paths::real_dump(), python)
        .expect("shared prefix");
    let dir = tempdir();
    let tokens = dir.path().join("tokens");
    std::fs::write(
        &tokens,
        [
            file_line("alice", "cmcp_reads_alice", Some(users[0])),
            file_line("bob", "cmcp_reads_bob", Some(users[1])),
        ]
        .join("\n"),
    )
    .expect("token file");
    let server = HttpServer::start_in(
        dir,
        &prefix.conda_exe,
        &["--auth-tokens", tokens.to_str().expect("utf-8")],
    );
    let call = |token: &str, file: &str| -> Value {
        let params = json!({"name": "conda_create",
                            "arguments": {"name": "lab", "file": [file], "json": true},
                            "_meta": stateless_meta(json!({}))});
        post_stateless(
            server.addr,
            token,
            "tools/call",
            Some("conda_create"),
            params,
        )
    };
    let code = |r: &Value| r["result"]["structuredContent"]["error"]["code"].clone();
    for (token, own, others) in [
        ("cmcp_reads_alice", &files[0], &files[1]),
        ("cmcp_reads_bob", &files[1], &files[0]),
    ] {
        let r = call(token, own);
        assert_eq!(
            r["result"]["isError"],
            json!(false),
            "{token} reads its own home: {r}\n{}",
            server.stderr_text()
        );
        for (file, rule) in [
            (others.as_str(), "other_users_home"),
            ("/etc/hostname", "system_directory"),
        ] {
            let r = call(token, file);
            assert_eq!(code(&r), json!("read_path_not_allowed"), "{token}: {r}");
            let e = &r["result"]["structuredContent"]["error"];
            assert_eq!(e["details"]["rule"], json!(rule), "{token}: {r}");
            assert_eq!(e["details"]["option"], json!("--file"), "{token}: {r}");
            let text = r.to_string();
            assert!(
                !text.contains(file) && !text.contains("SECRET-TOKEN"),
                "{r}"
            );
        }
    }
}

/// A client that declares roots and answers `roots/list` with `roots`.
#[derive(Clone)]
struct Rooted(Vec<String>);

#[allow(deprecated)] // rmcp marks roots deprecated (SEP-2577); clients still send them
impl rmcp::ClientHandler for Rooted {
    async fn list_roots(
        &self,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        Ok(rmcp::model::ListRootsResult::new(
            self.0.iter().map(rmcp::model::Root::new).collect(),
        ))
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder()
                .enable_roots()
                .build(),
            rmcp::model::Implementation::new("rooted", "1"),
        )
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_the_client_declares_is_readable() {
    use rmcp::ServiceExt;
    let p = StandinPrefix::create(&paths::real_dump()).expect("stand-in prefix");
    let home = tempfile::tempdir().expect("home");
    let project = tempfile::tempdir().expect("project");
    let other = tempfile::tempdir().expect("elsewhere");
    let specs = project.path().join("specs.txt");
    std::fs::write(&specs, "numpy\n").expect("specs");
    let token = other.path().join("token");
    std::fs::write(&token, "SECRET-TOKEN\n").expect("token");
    let dir = tempfile::tempdir().expect("server dir");
    let mut cmd = conda_mcp_tests::mcp::server_command(&p.conda_exe, &[], dir.path());
    cmd.env("HOME", home.path());
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::from(
            std::fs::File::create(dir.path().join("stderr.log")).expect("log"),
        ))
        .spawn()
        .expect("spawn");
    // A temporary folder's path needs no percent-encoding.
    let root = format!("file://{}/", project.path().display());
    let client = Rooted(vec![root, "https://example.org/x".into()])
        .serve(transport)
        .await
        .expect("handshake");
    let call = |file: &std::path::Path| {
        let mut p = rmcp::model::CallToolRequestParams::new("conda_create");
        p = p.with_arguments(
            json!({"name": "lab", "file": [file], "json": true})
                .as_object()
                .cloned()
                .expect("object"),
        );
        let peer = client.peer().clone();
        async move { peer.call_tool(p).await.expect("tools/call") }
    };
    let r = call(&specs).await;
    assert_ran(&r, "a file under the client's root");
    let r = call(&token).await;
    assert_refused(
        &r,
        "outside_allowed_places",
        token.to_str().expect("utf-8"),
        "outside the roots",
    );
    let _ = client.cancel().await;
}
