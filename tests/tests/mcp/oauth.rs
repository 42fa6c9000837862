//! The OAuth resource server of the HTTP mode (`--oauth-*`) on loopback,
//! against a test issuer with keys the test mints ([`conda_mcp_tests::oauth`]):
//! every kind of bad token is 401 with the `resource_metadata` challenge,
//! RS256 and ES256 tokens are accepted, the two metadata documents, a key
//! rotated at the issuer is picked up without a restart (and a flood of
//! unknown key ids does not hammer the issuer), the JWKS as a file, static
//! tokens beside OAuth, scopes that narrow (never widen) the startup
//! policy, the user map (root tier), and the Python MCP SDK with a JWT
//! bearer.

use std::process::Command;
use std::time::{Duration, Instant};

use conda_mcp_server::transport::http::tokens::file_line;
use conda_mcp_tests::bins;
use conda_mcp_tests::http::{HttpServer, Response, post_mcp, request, tempdir};
use conda_mcp_tests::oauth::{Issuer, SigningKey, claims, hs256, jwks, now, unsigned};
use conda_mcp_tests::paths::fixtures;
use conda_mcp_tests::pyclient::mcp_python as python_mcp;
use conda_mcp_tests::standin::StandinPrefix;
use serde_json::{Value, json};

/// The resource URL the servers are started with (`aud` of good tokens).
const AUDIENCE: &str = "https://conda.test.invalid/mcp";
/// The metadata URL the challenge names for [`AUDIENCE`].
const METADATA_URL: &str = "https://conda.test.invalid/.well-known/oauth-protected-resource/mcp";
const STATIC_TOKEN: &str = "cmcp_static-token-of-carol-0123456789";

fn list() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
}

fn call(id: u32, tool: &str, args: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": args}})
}

/// A server accepting the issuer's tokens for [`AUDIENCE`] (keys from
/// `jwks`: its URL or a file) and `args`.
fn start(prefix: &StandinPrefix, issuer: &str, jwks: &str, args: &[&str]) -> HttpServer {
    let mut all = vec![
        "--oauth-issuer",
        issuer,
        "--oauth-audience",
        AUDIENCE,
        "--oauth-jwks",
        jwks,
    ];
    all.extend_from_slice(args);
    HttpServer::start(&prefix.conda_exe, &all)
}

fn with_bearer(server: &HttpServer, token: &str, body: &Value) -> Response {
    let bearer = format!("Bearer {token}");
    post_mcp(server.addr, &[("Authorization", &bearer)], body).expect("request")
}

/// `r` is 401 with the challenge naming the metadata, and `error` when
/// given.
fn assert_challenged(what: &str, r: &Response, error: Option<&str>) {
    assert_eq!(r.status, 401, "{what}: {r:?}");
    let c = r.header("www-authenticate").unwrap_or_default();
    assert!(c.starts_with("Bearer "), "{what}: {c}");
    assert!(
        c.contains(&format!("resource_metadata=\"{METADATA_URL}\"")),
        "{what}: {c}"
    );
    match error {
        Some(e) => assert!(c.contains(&format!("error=\"{e}\"")), "{what}: {c}"),
        None => assert!(!c.contains("error="), "{what}: {c}"),
    }
}

/// The JSON-RPC result of a response body.
fn result(r: &Response) -> Value {
    let v: Value = serde_json::from_str(&r.body).expect("a JSON-RPC response");
    v["result"].clone()
}

#[test]
fn bad_tokens_are_401_with_the_metadata_challenge_and_good_ones_are_served() {
    let rsa = SigningKey::rsa("rsa-1");
    let ec = SigningKey::ec("ec-1");
    let stranger = SigningKey::rsa("rsa-1");
    let issuer = Issuer::start(&jwks(&[&rsa, &ec]));
    let iss = issuer.url();
    let prefix = StandinPrefix::standard();
    let dir = tempdir();
    let tokens = dir.path().join("tokens");
    std::fs::write(
        &tokens,
        format!("{}\n", file_line("carol", STATIC_TOKEN, None)),
    )
    .expect("token file");
    let tokens = tokens.to_str().expect("utf-8").to_owned();
    let server = HttpServer::start_in(
        dir,
        &prefix.conda_exe,
        &[
            "--oauth-issuer",
            &iss,
            "--oauth-audience",
            AUDIENCE,
            "--oauth-jwks",
            &issuer.jwks_url(),
            "--auth-tokens",
            &tokens,
        ],
    );
    let good = claims(&iss, AUDIENCE, "alice", "openid");

    // Good tokens, both algorithms; and the static token beside them.
    for (what, token) in [
        ("RS256", rsa.sign(&good)),
        ("ES256", ec.sign(&good)),
        ("static", STATIC_TOKEN.to_owned()),
    ] {
        let r = with_bearer(&server, &token, &list());
        assert_eq!(r.status, 200, "{what}: {r:?}");
        assert!(r.body.contains("conda_info"), "{what}: {r:?}");
    }

    let none = post_mcp(server.addr, &[], &list()).expect("request");
    assert_challenged("no token", &none, None);

    let mut bad: Vec<(&str, String)> = vec![("garbage", "not-a-jwt".to_owned())];
    let mut with = |what, f: &dyn Fn(&mut Value)| {
        let mut c = good.clone();
        f(&mut c);
        bad.push((what, rsa.sign(&c)));
    };
    with("wrong issuer", &|c| {
        c["iss"] = json!("https://evil.example")
    });
    with("wrong audience", &|c| {
        c["aud"] = json!("https://other.test.invalid/mcp")
    });
    with("expired", &|c| c["exp"] = json!(now() - 600));
    with("not yet valid", &|c| c["nbf"] = json!(now() + 600));
    with("no sub", &|c| {
        c.as_object_mut().map(|o| o.remove("sub"));
    });
    with("no exp", &|c| {
        c.as_object_mut().map(|o| o.remove("exp"));
    });
    bad.push(("alg none", unsigned("rsa-1", &good)));
    bad.push((
        "HS256 keyed with the RSA public key",
        hs256("rsa-1", rsa.public_pem.as_bytes(), &good),
    ));
    bad.push((
        "HS256 keyed with the EC public key",
        hs256("ec-1", ec.public_pem.as_bytes(), &good),
    ));
    bad.push(("unknown kid", rsa.sign_as("rsa-unknown", &good)));
    bad.push(("another key, same kid", stranger.sign(&good)));
    let mut swapped = ec.sign(&good);
    swapped.truncate(swapped.rfind('.').expect("a JWT") + 1);
    swapped.push_str(rsa.sign(&good).rsplit('.').next().expect("signature"));
    bad.push(("a signature from another token", swapped));
    for (what, token) in &bad {
        let r = with_bearer(&server, token, &list());
        assert_challenged(what, &r, Some("invalid_token"));
        assert!(
            !r.body.contains(token.as_str()),
            "{what}: the token is echoed"
        );
    }

    // The metadata documents, without authentication.
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let r = request(server.addr, "GET", path, &[], b"").expect("request");
        assert_eq!(r.status, 200, "{path}: {r:?}");
        assert_eq!(r.header("content-type"), Some("application/json"));
        let doc: Value = serde_json::from_str(&r.body).expect("JSON");
        assert_eq!(doc["resource"], json!(AUDIENCE), "{doc}");
        assert_eq!(doc["authorization_servers"], json!([iss]), "{doc}");
        assert_eq!(
            doc["scopes_supported"],
            json!(["conda:write", "conda:exec"])
        );
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
    }

    let reasons = [
        "the token has expired",
        "the token is not valid yet",
        "the token is from another issuer",
        "the token is for another audience",
        "the token's algorithm is not RS256 or ES256",
        "no key of the issuer matches",
        "signature does not verify",
    ];
    let principals = ["principal=oauth:alice", "principal=carol"];
    let log = server.stderr_holding(&[&reasons[..], &principals[..]].concat());
    for needle in principals.iter().chain(&reasons) {
        assert!(log.contains(needle), "{needle}: {log}");
    }
    for (what, token) in &bad {
        assert!(!log.contains(token.as_str()), "{what}: the token is logged");
    }
    assert!(!log.contains(&rsa.sign(&good)), "a good token is logged");
}

#[test]
fn a_key_rotated_at_the_issuer_is_picked_up_and_unknown_kids_do_not_hammer_it() {
    let old = SigningKey::ec("2026-a");
    let new = SigningKey::ec("2026-b");
    let issuer = Issuer::start(&jwks(&[&old]));
    let iss = issuer.url();
    let prefix = StandinPrefix::standard();
    let server = start(&prefix, &iss, &issuer.jwks_url(), &[]);
    // The set was fetched before the server listened.
    let fetched = Instant::now();
    let good = claims(&iss, AUDIENCE, "dana", "");
    assert_eq!(with_bearer(&server, &old.sign(&good), &list()).status, 200);
    assert_eq!(issuer.fetches(), 1, "fetched once at startup");

    // A flood of made-up key ids within the refetch interval: no fetch.
    for i in 0..20 {
        let r = with_bearer(
            &server,
            &old.sign_as(&format!("made-up-{i}"), &good),
            &list(),
        );
        assert_challenged("made-up kid", &r, Some("invalid_token"));
    }
    assert_eq!(issuer.fetches(), 1, "unknown kids are rate-limited");

    // The issuer rotates; once the interval has passed, the new key's
    // first token fetches the set again, and the old key is gone.
    issuer.set_jwks(&jwks(&[&new]));
    let interval = Duration::from_secs(10) + Duration::from_millis(500);
    if let Some(rest) = interval.checked_sub(fetched.elapsed()) {
        std::thread::sleep(rest);
    }
    let r = with_bearer(&server, &new.sign(&good), &list());
    assert_eq!(
        r.status,
        200,
        "the rotated key: {r:?}\n{}",
        server.stderr_text()
    );
    assert_eq!(issuer.fetches(), 2);
    let r = with_bearer(&server, &old.sign(&good), &list());
    assert_challenged("the withdrawn key", &r, Some("invalid_token"));
}

#[test]
fn the_key_set_can_be_a_file_and_bad_oauth_settings_are_usage_errors() {
    let key = SigningKey::rsa("file-key");
    let prefix = StandinPrefix::standard();
    let dir = tempdir();
    let file = dir.path().join("jwks.json");
    std::fs::write(&file, jwks(&[&key]).to_string()).expect("jwks file");
    let iss = "https://idp.test.invalid";
    let server = start(&prefix, iss, file.to_str().expect("utf-8"), &[]);
    let r = with_bearer(
        &server,
        &key.sign(&claims(iss, AUDIENCE, "erin", "")),
        &list(),
    );
    assert_eq!(r.status, 200, "{r:?}");

    let run = |args: &[&str]| {
        Command::new(bins::server())
            .args([
                "--listen",
                "127.0.0.1:0",
                "--conda-exe",
                "/nonexistent/conda",
            ])
            .args(args)
            .output()
            .expect("conda-mcp")
    };
    let jwks_file = file.to_str().expect("utf-8");
    // Plain http to a host that is not loopback.
    let out = run(&[
        "--oauth-issuer",
        "http://idp.example.org",
        "--oauth-audience",
        AUDIENCE,
        "--oauth-jwks",
        jwks_file,
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--oauth-issuer must be an https URL"));
    // The issuer without its companions.
    let out = run(&["--oauth-issuer", iss]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    // A key set without a usable key (a symmetric one only).
    std::fs::write(&file, r#"{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}"#).expect("jwks");
    let out = run(&[
        "--oauth-issuer",
        iss,
        "--oauth-audience",
        AUDIENCE,
        "--oauth-jwks",
        jwks_file,
    ]);
    assert_ne!(out.status.code(), Some(0), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no RSA or P-256 signing key"),
        "{out:?}"
    );
    // OAuth is authentication: a non-loopback listener is allowed with it.
    let out = Command::new(bins::server())
        .args(["--listen", "0.0.0.0:0", "--conda-exe", "/nonexistent/conda"])
        .args(["--oauth-issuer", iss, "--oauth-audience", AUDIENCE])
        .args(["--oauth-jwks", "/nonexistent/jwks.json"])
        .output()
        .expect("conda-mcp");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("not a loopback address"), "{err}");
    assert!(err.contains("cannot read the --oauth-jwks file"), "{err}");
}

#[test]
fn scopes_narrow_the_startup_policy_and_never_widen_it() {
    let key = SigningKey::ec("scopes");
    let issuer = Issuer::start(&jwks(&[&key]));
    let iss = issuer.url();
    let prefix = StandinPrefix::standard();
    let env_dir = tempdir();
    let install = |id| {
        call(
            id,
            "conda_install",
            json!({"prefix": env_dir.path(), "packages": ["alpha"], "json": true, "yes": true}),
        )
    };
    let run = |id| {
        call(
            id,
            "conda_run",
            json!({"name": "base", "executable_call": ["python", "-c", "print(1)"]}),
        )
    };
    let token = |scope: &str| key.sign(&claims(&iss, AUDIENCE, "frank", scope));
    let error = |r: &Response| result(r)["structuredContent"]["error"].clone();

    let server = start(
        &prefix,
        &iss,
        &issuer.jwks_url(),
        &["--allow-write", "--allow-exec"],
    );
    // No conda:write: the mutation is refused, naming the scope.
    let r = with_bearer(&server, &token("openid conda:exec"), &install(1));
    assert_eq!(r.status, 200, "{r:?}");
    let e = error(&r);
    assert_eq!(e["code"], json!("refused"), "{r:?}");
    assert_eq!(
        e["details"]["missing_scopes"],
        json!(["conda:write"]),
        "{e}"
    );
    assert_eq!(e["details"]["missing"], json!([]), "{e}");
    assert!(
        e["message"]
            .as_str()
            .unwrap_or("")
            .contains("scope conda:write"),
        "{e}"
    );
    // No conda:exec: conda run is refused, naming that scope.
    let r = with_bearer(&server, &token("conda:write"), &run(2));
    let e = error(&r);
    assert_eq!(e["code"], json!("refused"), "{r:?}");
    assert_eq!(e["details"]["missing_scopes"], json!(["conda:exec"]), "{e}");
    // With the scope, the mutation runs.
    let r = with_bearer(&server, &token("conda:write"), &install(3));
    let out = result(&r);
    assert_eq!(out["structuredContent"]["exit_code"], json!(0), "{r:?}");
    assert!(out["structuredContent"].get("error").is_none(), "{out}");
    let log = server.stderr_text();
    assert_eq!(
        conda_mcp_tests::http::job_pids(&log, "conda install").len(),
        1,
        "conda ran once: {log}"
    );
    drop(server);

    // --approve-writes is narrowed the same way: without the scope the
    // call is refused before anyone is asked; with it, the server would ask
    // (this raw client cannot answer, so the approval is unavailable).
    let server = start(&prefix, &iss, &issuer.jwks_url(), &["--approve-writes"]);
    let r = with_bearer(&server, &token(""), &install(5));
    let e = error(&r);
    assert_eq!(e["code"], json!("refused"), "{r:?}");
    assert_eq!(
        e["details"]["missing_scopes"],
        json!(["conda:write"]),
        "{e}"
    );
    let r = with_bearer(&server, &token("conda:write"), &install(6));
    assert_eq!(error(&r)["code"], json!("approval_unavailable"), "{r:?}");
    // The one cause that applies: a POST that carries no capabilities.
    let message = error(&r)["message"].as_str().unwrap_or("").to_owned();
    assert!(
        message.contains("over HTTP this request carries no client capabilities")
            && !message.contains("declared no elicitation"),
        "{message}"
    );
    drop(server);

    // A read-only server stays read-only whatever the token grants.
    let server = start(&prefix, &iss, &issuer.jwks_url(), &[]);
    let r = with_bearer(&server, &token("conda:write conda:exec"), &install(4));
    let e = error(&r);
    assert_eq!(e["code"], json!("refused"), "{r:?}");
    assert_eq!(e["details"]["missing"], json!(["--allow-write"]), "{e}");
    assert!(e["details"].get("missing_scopes").is_none(), "{e}");
}

#[test]
fn the_python_sdk_lists_and_calls_with_a_jwt_bearer() {
    let test = "oauth::the_python_sdk_lists_and_calls_with_a_jwt_bearer";
    let Some(python) = python_mcp(test) else {
        return;
    };
    let key = SigningKey::rsa("sdk");
    let issuer = Issuer::start(&jwks(&[&key]));
    let iss = issuer.url();
    let prefix = StandinPrefix::standard();
    let server = start(&prefix, &iss, &issuer.jwks_url(), &[]);
    let token = key.sign(&claims(&iss, AUDIENCE, "grace", ""));
    let script = fixtures().join("http").join("mcp_client.py");
    let out = Command::new(&python)
        .arg(&script)
        .args([&server.url(), &token, "legacy"])
        .output()
        .expect("run the Python client");
    assert!(
        out.status.success(),
        "{}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.stderr_text()
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("the client's JSON");
    assert_eq!(r["info_exit_code"], json!(0), "{r}");
    let tools = r["tools"].as_array().expect("tools");
    assert!(tools.contains(&json!("conda_info")), "{r}");
    let log = server.stderr_text();
    assert!(
        log.contains("principal=oauth:grace method=tools/call tool=conda_info"),
        "{log}"
    );
    assert!(!log.contains(&token), "the token is never logged");
}

#[test]
fn a_mapped_user_claim_runs_the_principal_in_its_users_worker() {
    use conda_mcp_tests::tiers::{Tier, missing};
    const TEST: &str = "oauth::a_mapped_user_claim_runs_the_principal_in_its_users_worker";
    let Some(python) = super::http::root_python(TEST) else {
        return;
    };
    let Some(uid) = super::http::os_user("cmcp-oauth-a") else {
        missing(Tier::Root, TEST, "useradd could not make the test user");
        return;
    };
    let key = SigningKey::ec("users");
    let issuer = Issuer::start(&jwks(&[&key]));
    let iss = issuer.url();
    let dump = conda_mcp_tests::standin::standin_dump();
    let prefix = conda_mcp_tests::standin::shared_prefix(&dump, python).expect("shared prefix");
    let dir = tempdir();
    let map = dir.path().join("users");
    std::fs::write(&map, "# email → OS user\nalice@lab.test cmcp-oauth-a\n").expect("user map");
    let map = map.to_str().expect("utf-8").to_owned();
    let server = HttpServer::start_in(
        dir,
        &prefix.conda_exe,
        &[
            "--oauth-issuer",
            &iss,
            "--oauth-audience",
            AUDIENCE,
            "--oauth-jwks",
            &issuer.jwks_url(),
            "--oauth-user-claim",
            "email",
            "--user-map",
            &map,
        ],
    );
    let uid_of = |email: &str| {
        let mut c = claims(&iss, AUDIENCE, email, "");
        c["email"] = json!(email);
        let r = with_bearer(
            &server,
            &key.sign(&c),
            &call(1, "conda_env_list", json!({"json": true})),
        );
        result(&r)["structuredContent"]["parsed_json"]["uid"].clone()
    };
    assert_eq!(
        uid_of("alice@lab.test"),
        json!(uid),
        "the mapped user's worker"
    );
    assert_eq!(
        uid_of("mallory@lab.test"),
        json!(nix::unistd::Uid::effective().as_raw()),
        "an unmapped principal runs in the default worker"
    );
}
