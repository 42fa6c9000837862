//! One writer per installation (docs/writes.md), through the built
//! server: two servers on one stand-in installation never run two writers
//! at once (the stand-in records overlapping writers in `writers_dir`), a
//! waiting writer says so, can be cancelled, and proceeds when the holder
//! is killed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use conda_mcp_tests::mcp::Server;
use conda_mcp_tests::rawrpc::{RawClient, progress_for};
use conda_mcp_tests::standin::{ControlRule, StandinPrefix};
use rmcp::model::CallToolResult;
use serde_json::{Value, json};

fn structured(r: &CallToolResult) -> &Value {
    r.structured_content.as_ref().expect("structured content")
}

fn created(prefix: &Path) -> bool {
    prefix.join("conda-meta").join("history").is_file()
}

/// A stand-in where `env create` writes for `seconds`, recording overlaps
/// in `writers`.
fn slow_creates(writers: &Path, seconds: f64) -> StandinPrefix {
    let p = StandinPrefix::standard();
    p.set_control(&[ControlRule {
        sleep_seconds: Some(seconds),
        writers_dir: Some(writers.to_path_buf()),
        ..ControlRule::for_commands(&["env create"])
    }])
    .expect("control file");
    p
}

fn overlaps(writers: &Path) -> String {
    std::fs::read_to_string(writers.join("overlaps.log")).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_servers_on_one_installation_never_write_at_once() {
    let work = tempfile::tempdir().expect("tempdir");
    let writers = work.path().join("writers");
    let runtime = work.path().join("runtime");
    let p = slow_creates(&writers, 0.2);
    let cache = work.path().join("cache");
    let env: [(&str, &Path); 1] = [("XDG_RUNTIME_DIR", &runtime)];
    let a = Server::start_with_cache(&p.conda_exe, &["--allow-write"], &cache, &env).await;
    let b = Server::start_with_cache(&p.conda_exe, &["--allow-write"], &cache, &env).await;
    for round in 0..20 {
        let pa = work.path().join(format!("a-{round}"));
        let pb = work.path().join(format!("b-{round}"));
        let call = |prefix: &PathBuf| json!({"prefix": prefix.display().to_string(), "yes": true});
        let (ra, rb) = tokio::join!(
            a.call_ok("conda_env_create", call(&pa)),
            b.call_ok("conda_env_create", call(&pb))
        );
        for (r, prefix) in [(&ra, &pa), (&rb, &pb)] {
            assert_eq!(structured(r)["exit_code"], json!(0), "round {round}: {r:?}");
            assert!(
                created(prefix),
                "round {round}: {} not created",
                prefix.display()
            );
        }
        assert_eq!(overlaps(&writers), "", "round {round}: two writers at once");
    }
    let names = |dir: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .expect("a lock folder")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let locks = names(&runtime.join("conda-mcp"));
    // One lock file per installation and its ticket queue beside it, in
    // which only the counter is left once every writer is done.
    assert_eq!(locks.len(), 2, "one lock file per installation: {locks:?}");
    let queue = locks
        .iter()
        .find(|n| n.ends_with(".queue"))
        .expect("the ticket queue");
    assert!(
        locks.contains(&queue.replace(".queue", ".lock")),
        "{locks:?}"
    );
    assert_eq!(
        names(&runtime.join("conda-mcp").join(queue)),
        ["next"],
        "every ticket released"
    );
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_writer_reports_progress_can_be_cancelled_and_proceeds_when_the_holder_is_killed()
{
    let work = tempfile::tempdir().expect("tempdir");
    let writers = work.path().join("writers");
    let runtime = work.path().join("runtime");
    let p = slow_creates(&writers, 120.0);
    let rt = runtime.display().to_string();
    let env = [("XDG_RUNTIME_DIR", rt.as_str())];
    let mut holder = RawClient::start_with_env(&p.conda_exe, &["--allow-write"], &env).await;
    let mut other = RawClient::start_with_env(&p.conda_exe, &["--allow-write"], &env).await;
    let create =
        |name: &str| json!({"prefix": work.path().join(name).display().to_string(), "yes": true});
    holder
        .call_tool("hold", "conda_env_create", create("held"), None)
        .await;
    // The holder's conda is writing once its marker is there.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !std::fs::read_dir(&writers).is_ok_and(|mut d| d.next().is_some()) {
        assert!(Instant::now() < deadline, "{}", holder.stderr_text());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Read-only calls never wait for the lock.
    other
        .call_tool("read", "conda_env_list", json!({}), None)
        .await;
    let (read, _) = other.response("read", Duration::from_secs(30)).await;
    assert_eq!(
        read["result"]["structuredContent"]["exit_code"],
        json!(0),
        "{read}"
    );

    // A writer waits, says so, and a cancel ends the wait: no response,
    // no conda started.
    let runs = p.conda_runs();
    other
        .call_tool(
            "doomed",
            "conda_env_create",
            create("doomed"),
            Some("tok-doomed"),
        )
        .await;
    let mut seen = Vec::new();
    let until = Instant::now() + Duration::from_secs(20);
    while progress_for(&seen, "tok-doomed").is_empty() && Instant::now() < until {
        if let Some(m) = other.next(Duration::from_millis(500)).await {
            seen.push(m);
        }
    }
    let notes = progress_for(&seen, "tok-doomed");
    assert!(
        notes.iter().any(|n| n["params"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("waiting for another conda-mcp on this installation")),
        "{seen:?}\n{}",
        other.stderr_text()
    );
    other.cancel("doomed").await;
    let after = other.drain(Duration::from_secs(2)).await;
    assert!(
        after.iter().all(|m| m.get("id") != Some(&json!("doomed"))),
        "a response was sent for a cancelled call: {after:?}"
    );
    assert_eq!(
        p.conda_runs(),
        runs,
        "the cancelled writer never started conda"
    );

    // The next writer waits until the holder's server is SIGKILLed: the
    // kernel releases its lock and this call runs.
    other
        .call_tool("next", "conda_env_create", create("next"), None)
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        !work.path().join("next").exists(),
        "it waits while the lock is held"
    );
    let pid = nix::unistd::Pid::from_raw(i32::try_from(holder.pid()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).expect("kill the holder");
    p.set_control(&[ControlRule::for_commands(&["env create"])])
        .expect("quick creates from now on");
    let (next, _) = other.response("next", Duration::from_secs(60)).await;
    assert_eq!(
        next["result"]["structuredContent"]["exit_code"],
        json!(0),
        "{next}\n{}",
        other.stderr_text()
    );
    assert!(created(&work.path().join("next")));
    drop(holder);
    other.close().await;
}
