//! Predict outside, enforce inside: the guarantees of a write hold for the
//! conda that runs the call, whatever the server predicted. Black-box,
//! through rmcp's client (stdio) and raw HTTP (the root tier, principals
//! mapped to OS users) against the built server and the stand-in conda
//! serving the recorded conda 26 parser. Each case runs warm and with
//! `--no-warm-conda`.
//!
//! * a prediction wrong on purpose (the stand-in's `envs_dirs_first`: conda
//!   looks in another envs directory for this command only): the check
//!   inside conda refuses the create where conda resolved it;
//! * `remove --all` of a prefix holding a file no package installed: the
//!   preview names it, the apply refuses, the file survives; with
//!   `remove_unmanaged_files: true` it is removed;
//! * an export of a missing environment is `environment_not_found`;
//! * a startup cache made under one `HOME` is not used under another;
//! * the operator's restrictions held by conda's own resolution: a channel
//!   only a `.condarc` in the target prefix adds (conda reads it, the
//!   server's discovery does not) refused with `channel_not_allowed`; a
//!   `--protect-env` prefix and `base` reached by names only conda resolves
//!   there (another envs directory; a symbolic link to the root prefix)
//!   refused with `protected_environment`;
//! * root tier: two OS users with an environment of the same name in their
//!   homes; each one's create is refused and each marker survives; one
//!   user's `~/.condarc` forces `dry_run: false` and only that user's
//!   previews are refused.

use std::time::Duration;

use conda_mcp_tests::mcp::{Era, Server, result_text};
use conda_mcp_tests::paths;
use conda_mcp_tests::standin::{ControlRule, StandinPrefix, environment_with_marker};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

const MODES: [&[&str]; 2] = [&[], &["--no-warm-conda"]];

fn standin() -> StandinPrefix {
    StandinPrefix::create(&paths::real_dump()).expect("stand-in prefix with the conda 26 parser")
}

fn structured(r: &CallToolResult) -> Value {
    r.structured_content.clone().expect("structuredContent")
}

fn error(r: &CallToolResult, what: &str) -> Value {
    assert_eq!(r.is_error, Some(true), "{what}: {}", result_text(r));
    structured(r)["error"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_check_inside_conda_decides_when_the_prediction_is_wrong() {
    for mode in MODES {
        let p = standin();
        let other = tempfile::tempdir().expect("dir");
        let env = other.path().join("foo");
        environment_with_marker(&env, "marker.txt");
        // conda looks in `other` first for `create` only: the server, which
        // resolves `foo` through the envs directories of its discovery,
        // finds nothing and lets the call run.
        p.set_control(&[ControlRule {
            envs_dirs_first: Some(vec![other.path().to_path_buf()]),
            ..ControlRule::for_commands(&["create"])
        }])
        .expect("control");
        let mut args = vec!["--allow-write", "--allow-exec"];
        args.extend_from_slice(mode);
        let server = Server::start(&p.conda_exe, &args, Era::Initialize).await;
        let what = format!("create {mode:?}");
        let r = server
            .call_ok(
                "conda_create",
                json!({"name": "foo", "packages": ["numpy"], "yes": true, "json": true}),
            )
            .await;
        let e = error(&r, &what);
        assert_eq!(e["code"], json!("environment_exists"), "{what}: {e}");
        assert_eq!(e["details"]["prefix"], json!(env), "{what}: {e}");
        assert_eq!(e["details"]["packages"], json!(1), "{what}: {e}");
        assert_eq!(
            std::fs::read_to_string(env.join("marker.txt")).expect("the marker survives"),
            "keep me"
        );
        assert_eq!(structured(&r)["exit_code"], Value::Null, "{what}");
        // The same through conda_execute.
        let r = server
            .call_ok(
                "conda_execute",
                json!({"argv": ["create", "-n", "foo", "numpy", "--yes", "--json"]}),
            )
            .await;
        assert_eq!(error(&r, &what)["code"], json!("environment_exists"));
        assert!(env.join("marker.txt").is_file(), "{what}");
        // A name that is free where conda looks is created there.
        let r = server
            .call_ok(
                "conda_create",
                json!({"name": "bar", "packages": ["numpy"], "yes": true, "json": true}),
            )
            .await;
        assert_eq!(r.is_error, Some(false), "{what}: {}", result_text(&r));
        assert!(
            other.path().join("bar/conda-meta/history").is_file(),
            "{what}"
        );
        server.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_an_environment_never_deletes_files_no_package_installed_unasked() {
    for mode in MODES {
        let p = standin();
        let env = p.prefix.join("envs/data");
        environment_with_marker(&env, "notes/mine.txt");
        let mut args = vec!["--allow-write", "--allow-exec"];
        args.extend_from_slice(mode);
        let server = Server::start(&p.conda_exe, &args, Era::Initialize).await;
        let what = format!("remove --all {mode:?}");
        // The preview (no yes: a dry run) names the file, in words and in
        // a field.
        let r = server
            .call_ok(
                "conda_remove",
                json!({"name": "data", "all": true, "json": true}),
            )
            .await;
        assert_eq!(r.is_error, Some(false), "{what}: {}", result_text(&r));
        let s = structured(&r);
        assert_eq!(
            s["unmanaged_files"],
            json!({"prefix": env, "count": 1, "bytes": 7, "first": ["notes/mine.txt"], "removed": false}),
            "{what}: {s}"
        );
        let text = result_text(&r);
        assert!(
            text.contains("1 file(s), 7 bytes, that no package installed (notes/mine.txt)")
                && text.contains("remove_unmanaged_files: true"),
            "{what}: {text}"
        );
        // The apply is refused, and the file survives.
        let apply = json!({"name": "data", "all": true, "json": true, "yes": true});
        let r = server.call_ok("conda_remove", apply.clone()).await;
        let e = error(&r, &what);
        assert_eq!(e["code"], json!("unmanaged_files_present"), "{what}: {e}");
        assert_eq!(e["details"]["count"], json!(1), "{what}: {e}");
        assert_eq!(
            e["details"]["first"],
            json!(["notes/mine.txt"]),
            "{what}: {e}"
        );
        assert!(env.join("notes/mine.txt").is_file(), "{what}: it survives");
        // conda_execute is held to the same rule.
        let r = server
            .call_ok(
                "conda_execute",
                json!({"argv": ["remove", "-n", "data", "--all", "--yes", "--json"]}),
            )
            .await;
        assert_eq!(error(&r, &what)["code"], json!("unmanaged_files_present"));
        assert!(env.join("notes/mine.txt").is_file(), "{what}: it survives");
        // With the argument it is removed with the environment.
        let mut allowed = apply.clone();
        allowed["remove_unmanaged_files"] = json!(true);
        let r = server.call_ok("conda_remove", allowed).await;
        assert_eq!(r.is_error, Some(false), "{what}: {}", result_text(&r));
        assert_eq!(structured(&r)["unmanaged_files"]["removed"], json!(true));
        assert!(!env.exists(), "{what}: removed");
        server.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_of_a_missing_environment_is_not_found() {
    for mode in MODES {
        let p = standin();
        let server = Server::start(&p.conda_exe, mode, Era::Initialize).await;
        for tool in ["conda_env_export", "conda_export"] {
            let what = format!("{tool} {mode:?}");
            let r = server.call_ok(tool, json!({"name": "nosuchenv"})).await;
            let e = error(&r, &what);
            assert_eq!(e["code"], json!("environment_not_found"), "{what}: {e}");
            assert_eq!(
                e["details"]["prefix"],
                json!(p.prefix.join("envs/nosuchenv")),
                "{what}: {e}"
            );
            // An environment that exists is exported.
            let r = server.call_ok(tool, json!({"name": "base"})).await;
            assert_eq!(r.is_error, Some(false), "{what}: {}", result_text(&r));
        }
        server.close().await;
    }
}

/// A configured channel with credentials that `--allowed-channel` allows
/// passes both checks: the server's, on the channel the discovery helper
/// reported (masked), and the guard's inside conda, on the channel itself;
/// one the list leaves out is refused, named with its credentials masked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_channel_with_credentials_is_judged_alike_by_server_and_guard() {
    let p = standin();
    std::fs::write(
        p.prefix.join(".condarc"),
        "channels:\n  - https://alice:s3cret@repo.example.org/t/tk-1/private/\n",
    )
    .expect("condarc");
    environment_with_marker(&p.prefix.join("envs/y"), "marker.txt");
    let install = json!({"name": "y", "packages": ["zlib"], "dry_run": true, "json": true});
    let allowed = "https://alice:s3cret@repo.example.org/t/tk-1/private";
    let server = Server::start(
        &p.conda_exe,
        &["--allow-write", "--allowed-channel", allowed],
        Era::Initialize,
    )
    .await;
    let r = server.call_ok("conda_install", install.clone()).await;
    assert_eq!(r.is_error, Some(false), "{}", result_text(&r));
    server.close().await;

    let server = Server::start(
        &p.conda_exe,
        &["--allow-write", "--allowed-channel", "conda-forge"],
        Era::Initialize,
    )
    .await;
    let r = server.call_ok("conda_install", install).await;
    let e = error(&r, "a channel left out");
    assert_eq!(e["code"], json!("channel_not_allowed"), "{e}");
    assert_eq!(
        e["details"]["channel"],
        json!("https://alice:***@repo.example.org/t/<TOKEN>/private"),
        "{e}"
    );
    assert!(!result_text(&r).contains("s3cret"), "{}", result_text(&r));
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_channel_only_conda_reads_is_refused_inside_conda() {
    for mode in MODES {
        let p = standin();
        // The installation's configuration, which the server reads too.
        std::fs::write(p.prefix.join(".condarc"), "channels:\n  - conda-forge\n").expect("condarc");
        // conda reads `$CONDA_PREFIX/.condarc` with CONDA_PREFIX the target
        // prefix (conda/base/context.py): for `-n x` only.
        let x = p.prefix.join("envs/x");
        environment_with_marker(&x, "marker.txt");
        std::fs::write(x.join(".condarc"), "channels:\n  - bioconda\n").expect("env condarc");
        environment_with_marker(&p.prefix.join("envs/y"), "marker.txt");
        let mut args = vec![
            "--allow-write",
            "--allow-exec",
            "--allowed-channel",
            "conda-forge",
        ];
        args.extend_from_slice(mode);
        let server = Server::start(&p.conda_exe, &args, Era::Initialize).await;
        let what = format!("install in x {mode:?}");
        let install =
            |name: &str| json!({"name": name, "packages": ["zlib"], "dry_run": true, "json": true});
        let r = server.call_ok("conda_install", install("x")).await;
        let e = error(&r, &what);
        assert_eq!(e["code"], json!("channel_not_allowed"), "{what}: {e}");
        assert_eq!(e["details"]["channel"], json!("bioconda"), "{what}: {e}");
        assert_eq!(
            e["details"]["source"],
            json!("configuration"),
            "{what}: {e}"
        );
        let text = result_text(&r);
        assert!(
            text.contains("bioconda") && text.contains("--allowed-channel"),
            "{what}: {text}"
        );
        // conda ran (the server let it through) and was stopped before
        // its command: the stand-in's command would have printed its parse.
        let runs = std::fs::read_to_string(p.prefix.join("standin-runs.log")).unwrap_or_default();
        assert!(
            runs.lines()
                .any(|l| l.contains("\"install\"") && l.contains("\"x\"")),
            "{what}: {runs}"
        );
        assert_eq!(structured(&r)["exit_code"], Value::Null, "{what}");
        // conda_execute is held to the same rule, and --override-channels
        // leaves the configured channels out.
        let r = server
            .call_ok(
                "conda_execute",
                json!({"argv": ["install", "-n", "x", "zlib", "--dry-run", "--json"]}),
            )
            .await;
        assert_eq!(error(&r, &what)["code"], json!("channel_not_allowed"));
        let r = server
            .call_ok(
                "conda_install",
                json!({"name": "x", "packages": ["zlib"], "channel": ["conda-forge"],
                       "override_channels": true, "dry_run": true, "json": true}),
            )
            .await;
        assert_eq!(r.is_error, Some(false), "{what}: {}", result_text(&r));
        // Another environment, without that file, solves as before.
        let r = server.call_ok("conda_install", install("y")).await;
        assert_eq!(r.is_error, Some(false), "{what}: {}", result_text(&r));
        server.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protected_environments_reached_by_names_only_conda_resolves_are_refused() {
    for mode in MODES {
        let p = standin();
        let other = tempfile::tempdir().expect("dir");
        let lab = other.path().join("lab");
        environment_with_marker(&lab, "marker.txt");
        // `main` resolves to the root prefix, through a symbolic link.
        std::os::unix::fs::symlink(&p.prefix, other.path().join("main")).expect("symlink");
        // conda looks in `other` first for `install` only; the server
        // resolves `lab` and `main` under the root's `envs/`, where
        // neither is.
        p.set_control(&[ControlRule {
            envs_dirs_first: Some(vec![other.path().to_path_buf()]),
            ..ControlRule::for_commands(&["install"])
        }])
        .expect("control");
        let protect = lab.to_str().expect("utf-8").to_owned();
        let mut args = vec![
            "--allow-write",
            "--allow-exec",
            "--protect-env",
            protect.as_str(),
        ];
        args.extend_from_slice(mode);
        let server = Server::start(&p.conda_exe, &args, Era::Initialize).await;
        let what = format!("install {mode:?}");
        let install =
            |name: &str| json!({"name": name, "packages": ["zlib"], "yes": true, "json": true});
        let r = server.call_ok("conda_install", install("lab")).await;
        let e = error(&r, &what);
        assert_eq!(e["code"], json!("protected_environment"), "{what}: {e}");
        assert_eq!(e["details"]["prefix"], json!(lab), "{what}: {e}");
        assert_eq!(e["details"].get("allowed_by"), None, "{what}: {e}");
        assert!(result_text(&r).contains("--protect-env"), "{what}");
        let r = server.call_ok("conda_install", install("main")).await;
        let e = error(&r, &what);
        assert_eq!(e["code"], json!("protected_environment"), "{what}: {e}");
        assert_eq!(
            e["details"]["prefix"],
            json!(other.path().join("main")),
            "{what}: {e}"
        );
        assert_eq!(
            e["details"]["allowed_by"],
            json!("--allow-base-writes"),
            "{what}: {e}"
        );
        let r = server
            .call_ok(
                "conda_execute",
                json!({"argv": ["install", "-n", "lab", "zlib", "--yes", "--json"]}),
            )
            .await;
        assert_eq!(error(&r, &what)["code"], json!("protected_environment"));
        // A dry run changes nothing: it runs.
        let mut dry = install("lab");
        dry["yes"] = json!(false);
        dry["dry_run"] = json!(true);
        let r = server.call_ok("conda_install", dry).await;
        assert_eq!(r.is_error, Some(false), "{what}: {}", result_text(&r));
        server.close().await;
        // Without the restrictions the same calls run.
        let mut args = vec!["--allow-write", "--allow-base-writes"];
        args.extend_from_slice(mode);
        let open = Server::start(&p.conda_exe, &args, Era::Initialize).await;
        for name in ["lab", "main"] {
            let r = open.call_ok("conda_install", install(name)).await;
            assert_eq!(
                r.is_error,
                Some(false),
                "{what} {name}: {}",
                result_text(&r)
            );
            assert_eq!(structured(&r)["exit_code"], json!(0), "{what} {name}");
        }
        open.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_startup_cache_made_under_one_home_is_not_used_under_another() {
    let p = standin();
    let cache = tempfile::tempdir().expect("cache");
    let (home_a, home_b) = (
        tempfile::tempdir().expect("home"),
        tempfile::tempdir().expect("home"),
    );
    std::fs::write(home_b.path().join(".condarc"), "dry_run: false  #!final\n").expect("condarc");
    let first =
        Server::start_with_cache(&p.conda_exe, &[], cache.path(), &[("HOME", home_a.path())]).await;
    first.close().await;
    // Under the same HOME the cache is used.
    let again =
        Server::start_with_cache(&p.conda_exe, &[], cache.path(), &[("HOME", home_a.path())]).await;
    let hit = "discovery: startup cache hit";
    let wait = |s: &Server| {
        let end = std::time::Instant::now() + Duration::from_secs(60);
        while !s.stderr_text().contains("discovery:") && std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    wait(&again);
    assert!(again.stderr_text().contains(hit), "{}", again.stderr_text());
    again.close().await;
    let other =
        Server::start_with_cache(&p.conda_exe, &[], cache.path(), &[("HOME", home_b.path())]).await;
    wait(&other);
    let log = other.stderr_text();
    assert!(!log.contains(hit), "{log}");
    assert!(
        log.contains("the variables that decide conda's configuration changed"),
        "{log}"
    );
    // And that HOME's forced dry_run: false refuses the preview.
    let r = other
        .call_ok(
            "conda_create",
            json!({"name": "lab", "packages": ["numpy"], "json": true}),
        )
        .await;
    let e = error(&r, "preview under the other HOME");
    assert_eq!(e["code"], json!("dry_run_not_honoured"), "{e}");
    assert_eq!(
        e["details"]["file"],
        json!(home_b.path().join(".condarc")),
        "{e}"
    );
    assert!(!p.prefix.join("envs/lab").exists(), "nothing was created");
    other.close().await;
}

/// Root tier: two OS users, each with `~/.conda/envs/foo`, two tokens
/// mapped to them.
#[test]
fn each_person_keeps_their_environment_and_their_configuration_holds() {
    use conda_mcp_server::transport::http::tokens::file_line;
    use conda_mcp_tests::http::{HttpServer, post_stateless, tempdir};
    use conda_mcp_tests::rawrpc::stateless_meta;
    use conda_mcp_tests::tiers::{Tier, missing};
    const TEST: &str = "guard::each_person_keeps_their_environment_and_their_configuration_holds";
    let Some(python) = super::http::root_python(TEST) else {
        return;
    };
    let users = ["cmcp-guard-a", "cmcp-guard-b"];
    let mut homes = Vec::new();
    for u in users {
        if super::http::os_user(u).is_none() {
            missing(Tier::Root, TEST, "useradd could not make the test users");
            return;
        }
        let user = nix::unistd::User::from_name(u)
            .ok()
            .flatten()
            .expect("user");
        let env = user.dir.join(".conda/envs/foo");
        let _ = std::fs::remove_dir_all(user.dir.join(".conda"));
        let _ = std::fs::remove_file(user.dir.join(".condarc"));
        environment_with_marker(&env, "marker.txt");
        let status = std::process::Command::new("chown")
            .arg("-R")
            .arg(format!("{u}:"))
            .arg(user.dir.join(".conda"))
            .status()
            .expect("chown");
        assert!(status.success());
        homes.push(user.dir);
    }
    let dump = paths::real_dump();
    let prefix = conda_mcp_tests::standin::shared_prefix(&dump, python).expect("shared prefix");
    // User a forces dry_run off in their own configuration.
    std::fs::write(homes[0].join(".condarc"), "dry_run: false  #!final\n").expect("condarc");
    // The operator sees each person's forced keys, read as that person.
    let dir = tempdir();
    let file = dir.path().join("tokens");
    std::fs::write(
        &file,
        [
            file_line("alice", "cmcp_guard_alice", Some(users[0])),
            file_line("bob", "cmcp_guard_bob", Some(users[1])),
        ]
        .join("\n"),
    )
    .expect("token file");
    let out = std::process::Command::new(conda_mcp_tests::bins::server())
        .arg("check")
        .arg("--conda-exe")
        .arg(&prefix.conda_exe)
        .arg("--worker-exe")
        .arg(conda_mcp_tests::bins::worker())
        .args(["--listen", "127.0.0.1:0", "--auth-tokens"])
        .arg(&file)
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .env_remove("CONDA_EXE")
        .output()
        .expect("check");
    let report = String::from_utf8_lossy(&out.stdout);
    let a_line = format!(
        "forced keys dry_run (marked final in the file {})",
        homes[0].join(".condarc").display()
    );
    assert!(
        report
            .lines()
            .any(|l| l.contains(users[0]) && l.contains(&a_line)),
        "{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        report
            .lines()
            .any(|l| l.contains(users[1]) && l.contains("forced keys none")),
        "{report}"
    );
    for mode in MODES {
        let dir = tempdir();
        let file = dir.path().join("tokens");
        let lines = [
            file_line("alice", "cmcp_guard_alice", Some(users[0])),
            file_line("bob", "cmcp_guard_bob", Some(users[1])),
        ];
        std::fs::write(&file, lines.join("\n")).expect("token file");
        let mut args = vec![
            "--auth-tokens",
            file.to_str().expect("utf-8"),
            "--allow-write",
        ];
        args.extend_from_slice(mode);
        let server = HttpServer::start_in(dir, &prefix.conda_exe, &args);
        let call = |token: &str, arguments: Value| -> Value {
            let params = json!({"name": "conda_create", "arguments": arguments,
                                "_meta": stateless_meta(json!({}))});
            post_stateless(
                server.addr,
                token,
                "tools/call",
                Some("conda_create"),
                params,
            )
        };
        for (token, home) in [
            ("cmcp_guard_alice", &homes[0]),
            ("cmcp_guard_bob", &homes[1]),
        ] {
            let what = format!("{token} {mode:?}");
            let r = call(
                token,
                json!({"name": "foo", "packages": ["numpy"], "yes": true, "json": true}),
            );
            let s = &r["result"]["structuredContent"];
            assert_eq!(
                s["error"]["code"],
                json!("environment_exists"),
                "{what}: {r}\n{}",
                server.stderr_text()
            );
            assert_eq!(
                s["error"]["details"]["prefix"],
                json!(home.join(".conda/envs/foo")),
                "{what}: {r}"
            );
            assert_eq!(
                std::fs::read_to_string(home.join(".conda/envs/foo/marker.txt"))
                    .expect("the marker survives"),
                "keep me",
                "{what}"
            );
        }
        // The preview (no yes): refused for alice, whose ~/.condarc forces
        // dry_run off; run for bob.
        let preview = json!({"name": "lab", "packages": ["numpy"], "json": true});
        let r = call("cmcp_guard_alice", preview.clone());
        let s = &r["result"]["structuredContent"];
        assert_eq!(
            s["error"]["code"],
            json!("dry_run_not_honoured"),
            "{mode:?}: {r}"
        );
        assert_eq!(
            s["error"]["details"]["file"],
            json!(homes[0].join(".condarc")),
            "{r}"
        );
        let r = call("cmcp_guard_bob", preview);
        let s = &r["result"]["structuredContent"];
        assert_eq!(r["result"]["isError"], json!(false), "{mode:?}: {r}");
        assert_eq!(s["confirmation_required"], json!(true), "{r}");
        for home in &homes {
            assert!(
                !home.join(".conda/envs/lab").exists(),
                "{mode:?}: nothing created"
            );
        }
        assert!(!prefix.prefix.join("envs/lab").exists(), "{mode:?}");
    }
}

/// The real tier (`CONDA_MCP_TEST_CONDA`): the check inside a real conda
/// decides after the configuration changed under a running server, warm
/// and fresh. `CONDARC` names a file that is empty at startup (so the
/// server's prediction knows of neither key); then it gains `envs_dirs`
/// (conda now resolves `-n foo` to an environment the startup discovery
/// never saw) and `dry_run: false  #!final` (a preview that conda would
/// run for real). conda's own `determine_target_prefix` and its
/// `context.raw_data` decide both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_conda_the_check_inside_conda_holds_after_the_configuration_changed() {
    let Some(conda) = conda_mcp_tests::tiers::real_conda(module_path!()) else {
        return;
    };
    for mode in MODES {
        let dir = tempfile::tempdir().expect("tempdir");
        let rc = dir.path().join(".condarc");
        std::fs::write(&rc, "").expect("condarc");
        let rc_text = rc.display().to_string();
        let other = dir.path().join("envs");
        let env = other.join("foo");
        environment_with_marker(&env, "marker.txt");
        let what = format!("real conda {mode:?}");

        // A create by name, where only conda knows the name is taken.
        let mut args = vec!["--allow-write", "--timeout", "600"];
        args.extend_from_slice(mode);
        let server = Server::start_with_env(
            &conda,
            &args,
            Era::Initialize,
            &[("CONDARC", rc_text.as_str())],
        )
        .await;
        std::fs::write(&rc, format!("envs_dirs:\n  - {}\n", other.display())).expect("condarc");
        let missing_channel = dir.path().join("no-such-channel");
        let r = server
            .call_ok(
                "conda_create",
                json!({"name": "foo", "packages": ["python"], "yes": true, "json": true,
                       "override_channels": true,
                       "channel": [missing_channel.display().to_string()]}),
            )
            .await;
        let e = error(&r, &what);
        assert_eq!(e["code"], json!("environment_exists"), "{what}: {e}");
        assert_eq!(e["details"]["prefix"], json!(env), "{what}: {e}");
        assert_eq!(structured(&r)["exit_code"], Value::Null, "{what}");
        assert_eq!(
            std::fs::read_to_string(env.join("marker.txt")).expect("the marker survives"),
            "keep me",
            "{what}"
        );
        server.close().await;

        // A preview on a read-only server, once conda's configuration
        // forces `dry_run: false`.
        std::fs::write(&rc, "").expect("condarc");
        let mut args = vec!["--timeout", "600"];
        args.extend_from_slice(mode);
        let server = Server::start_with_env(
            &conda,
            &args,
            Era::Initialize,
            &[("CONDARC", rc_text.as_str())],
        )
        .await;
        std::fs::write(&rc, "dry_run: false  #!final\n").expect("condarc");
        let target = dir.path().join("new-env");
        let r = server
            .call_ok(
                "conda_create",
                json!({"prefix": target.display().to_string(), "packages": ["python"],
                       "override_channels": true,
                       "channel": [missing_channel.display().to_string()]}),
            )
            .await;
        let e = error(&r, &what);
        assert_eq!(e["code"], json!("dry_run_not_honoured"), "{what}: {e}");
        assert_eq!(e["details"]["file"], json!(rc_text), "{what}: {e}");
        assert!(!target.exists(), "{what}: nothing was created");
        server.close().await;
    }
}
