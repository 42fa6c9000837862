//! Environment change notifications through the built server, against the
//! stand-in conda with several environments: a client that listed the
//! resources hears `notifications/resources/list_changed` when an
//! environment appears or disappears, and one that subscribed to an
//! environment's resource hears `notifications/resources/updated` when it
//! changes — whoever made the change (a call of this server, the stand-in
//! conda run directly, or files written as conda writes them) — in the
//! `initialize` session (`resources/subscribe`) and in the stateless
//! lifecycle (`subscriptions/listen`); an unsubscribed resource is quiet.

use std::path::Path;
use std::time::Duration;

use conda_mcp_tests::inventory::{Package, write_environment};
use conda_mcp_tests::mcp::{Era, Server, result_text, server_command};
use conda_mcp_tests::standin::StandinPrefix;
use rmcp::ServiceExt;
use rmcp::model::{ServerNotification, SubscriptionFilter};
use serde_json::{Value, json};

use super::inventory::standin_with_environments;

/// What the client heard: the notification's method and its URI.
type Heard = (&'static str, Option<String>);

/// A client that forwards the resource notifications of its session.
#[derive(Clone)]
struct Listener(tokio::sync::mpsc::UnboundedSender<Heard>);

impl rmcp::ClientHandler for Listener {
    async fn on_resource_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send(("list_changed", None));
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.0.send(("updated", Some(params.uri)));
    }
}

/// The server's arguments: writes allowed, the watch every 0.2 s.
const ARGS: [&str; 3] = ["--allow-write", "--watch-interval", "0.2"];

/// Waits until each of `wanted` has been heard (a change can be seen over
/// two looks, e.g. conda's files written between them, so one
/// notification may come twice) and returns everything heard up to then.
async fn until(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Heard>,
    wanted: &[Heard],
    stderr: &Path,
) -> Vec<Heard> {
    let mut heard = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(20), rx.recv()).await {
            Ok(Some(h)) => {
                heard.push(h);
                if wanted.iter().all(|w| heard.contains(w)) {
                    return heard;
                }
            }
            _ => panic!(
                "{wanted:?} not heard; heard {heard:?}\nserver stderr:\n{}",
                std::fs::read_to_string(stderr).unwrap_or_default()
            ),
        }
    }
}

fn updated(uri: &str) -> Heard {
    ("updated", Some(uri.to_owned()))
}

/// Adds a package to the environment at `prefix` as conda's install does
/// (a record in conda-meta, a revision in its history).
fn install_by_hand(prefix: &Path, name: &str) {
    let meta = prefix.join("conda-meta");
    std::fs::write(
        meta.join(format!("{name}-1.0-0.json")),
        json!({"name": name, "version": "1.0", "build": "0", "build_number": 0,
               "channel": "https://conda.anaconda.org/conda-forge/linux-64",
               "subdir": "linux-64", "files": []})
        .to_string(),
    )
    .expect("record");
    let mut history = std::fs::read_to_string(meta.join("history")).expect("history");
    history.push_str(&format!(
        "==> 2026-12-05 00:00:00 <==\n# cmd: conda install {name}\n+conda-forge/linux-64::{name}-1.0-0\n"
    ));
    std::fs::write(meta.join("history"), history).expect("history");
}

/// The stand-in conda run directly, as a person runs it in a terminal.
fn conda(standin: &StandinPrefix, home: &Path, args: &[&str]) {
    let out = std::process::Command::new(&standin.conda_exe)
        .args(args)
        .env("HOME", home)
        .output()
        .expect("run the stand-in conda");
    assert!(
        out.status.success(),
        "conda {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

// resources/subscribe is what the initialize era has (rmcp marks it legacy).
#[allow(deprecated)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initialize_session_hears_of_changes_made_by_the_server_and_by_conda() {
    let standin = standin_with_environments();
    let home = tempfile::tempdir().expect("home");
    let dir = tempfile::tempdir().expect("dir");
    let mut cmd = server_command(&standin.conda_exe, &ARGS, dir.path());
    cmd.env("HOME", home.path());
    let stderr = dir.path().join("stderr.log");
    let (transport, _) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::from(
            std::fs::File::create(&stderr).expect("log"),
        ))
        .spawn()
        .expect("spawn");
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let client = Listener(tx).serve(transport).await.expect("handshake");
    let caps = client.peer_info().expect("info").capabilities.clone();
    let resources = caps.resources.expect("resources");
    assert_eq!(resources.subscribe, Some(true));
    assert_eq!(resources.list_changed, Some(true));
    let peer = client.peer().clone();
    peer.list_all_resources().await.expect("resources/list");
    let sci = "conda://environments/sci/packages";
    let fresh = "conda://environments/fresh/export";
    let win = "conda://environments/win/history";
    for uri in [sci, fresh, win, "conda://environments"] {
        peer.subscribe(rmcp::model::SubscribeRequestParams::new(uri))
            .await
            .expect("resources/subscribe");
    }

    // A call of this server creates `fresh`: the list changed, and the
    // subscribed `fresh` and listing resources are updated.
    let mut p = rmcp::model::CallToolRequestParams::new("conda_create");
    p = p.with_arguments(
        json!({"name": "fresh", "packages": ["numpy"], "yes": true})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    let r = peer.call_tool(p).await.expect("tools/call");
    assert_ne!(r.is_error, Some(true), "{}", result_text(&r));
    let heard = until(
        &mut rx,
        &[
            ("list_changed", None),
            updated(fresh),
            updated("conda://environments"),
        ],
        &stderr,
    )
    .await;
    assert!(
        !heard.contains(&updated(sci)),
        "sci did not change: {heard:?}"
    );

    // conda run directly removes it again: heard as well.
    conda(
        &standin,
        home.path(),
        &["remove", "--all", "-n", "fresh", "--yes", "--json"],
    );
    until(&mut rx, &[("list_changed", None), updated(fresh)], &stderr).await;

    // A package installed into `sci` by anyone: `sci` updated, the list
    // of environments unchanged.
    install_by_hand(&standin.prefix.join("envs/sci"), "scipy");
    let heard = until(&mut rx, &[updated(sci)], &stderr).await;
    assert!(!heard.contains(&("list_changed", None)), "{heard:?}");

    // Unsubscribed, `sci` is quiet: a later change to `win` arrives and
    // nothing of `sci` before it (one look reports sci before win).
    peer.unsubscribe(rmcp::model::UnsubscribeRequestParams::new(sci))
        .await
        .expect("resources/unsubscribe");
    install_by_hand(&standin.prefix.join("envs/sci"), "pandas");
    install_by_hand(&standin.prefix.join("envs/win"), "ripgrep");
    let heard = until(&mut rx, &[updated(win)], &stderr).await;
    assert!(!heard.contains(&updated(sci)), "{heard:?}");

    // A URI of no resource cannot be subscribed to, and is not repeated.
    let e = peer
        .subscribe(rmcp::model::SubscribeRequestParams::new(
            "conda://environments/zz-secret-zz/files",
        ))
        .await
        .expect_err("no such resource");
    assert!(!e.to_string().contains("zz-secret-zz"), "{e}");
    let _ = client.cancel().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriptions_listen_stream_hears_of_changes() {
    let standin = standin_with_environments();
    let home = tempfile::tempdir().expect("home");
    let home_s = home.path().display().to_string();
    let server = Server::start_with_env(
        &standin.conda_exe,
        &ARGS,
        Era::Stateless,
        &[("HOME", &home_s)],
    )
    .await;
    let peer = server.client.peer().clone();
    let old = "conda://environments/old/packages";
    let mut filter = SubscriptionFilter::builder()
        .resources_list_changed()
        .tools_list_changed()
        .build();
    filter.resource_subscriptions = Some(vec![
        old.to_owned(),
        "conda://capabilities".to_owned(),
        "file:///etc/passwd".to_owned(),
    ]);
    let mut stream = peer.listen(filter).await.expect("subscriptions/listen");
    // Accepted: the list changes and the environment resource; not the
    // tool list (no --live-tools), nor URIs it cannot report on.
    let accepted = stream.acknowledged().clone();
    assert_eq!(accepted.resources_list_changed, Some(true));
    assert_eq!(accepted.tools_list_changed, None);
    assert_eq!(accepted.resource_subscriptions, Some(vec![old.to_owned()]));
    // The watch takes its baseline once the stream is open.
    let started = tokio::time::Instant::now();
    while !server.stderr_text().contains("environment watch: started") {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "no baseline:\n{}",
            server.stderr_text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    write_environment(
        &standin.prefix.join("envs/extra"),
        &[Package::new("numpy", "2.2.0", "py313_0", &[])],
        None,
        &[],
    );
    install_by_hand(&standin.prefix.join("envs/old"), "scipy");
    let mut got: Vec<Value> = Vec::new();
    while !(got.contains(&json!("list_changed")) && got.contains(&json!(old))) {
        let n = tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .unwrap_or_else(|_| panic!("heard {got:?}\n{}", server.stderr_text()))
            .expect("stream")
            .expect("a notification");
        got.push(match n {
            ServerNotification::ResourceListChangedNotification(_) => json!("list_changed"),
            ServerNotification::ResourceUpdatedNotification(u) => json!(u.params.uri),
            other => panic!("unexpected {other:?}"),
        });
    }
    drop(stream);
    server.close().await;
}
