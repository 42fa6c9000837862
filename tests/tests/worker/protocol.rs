//! The worker binary's side of the protocol, driven by a raw client: the
//! test listens like the server does and speaks frames by hand.

use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::time::Duration;

use conda_mcp_shared::framing::{read_frame, share, write_frame};
use conda_mcp_shared::protocol::{ClientMessage, PROTOCOL_VERSION, WorkerMessage, build_id};
use interprocess::local_socket::tokio::prelude::*;
use interprocess::local_socket::{GenericFilePath, ListenerOptions};
use interprocess::os::unix::local_socket::ListenerOptionsExt;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Starts the worker against a socket this test listens on; returns the
/// child (stderr piped) and the accepted stream.
async fn worker_connection() -> (tokio::process::Child, LocalSocketStream, tempfile::TempDir) {
    let dir = tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .expect("tempdir");
    let path = dir.path().join("w.sock");
    let listener = ListenerOptions::new()
        .name(
            path.as_path()
                .to_fs_name::<GenericFilePath>()
                .expect("name"),
        )
        .mode(0o600)
        .create_tokio()
        .expect("listen");
    let child = tokio::process::Command::new(conda_mcp_tests::bins::worker())
        .arg("--socket")
        .arg(&path)
        .arg("--conda-exe")
        .arg("/bin/sh")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn worker");
    let stream = tokio::time::timeout(Duration::from_secs(10), listener.accept())
        .await
        .expect("connects in time")
        .expect("accept");
    (child, stream, dir)
}

async fn stderr_and_exit(mut child: tokio::process::Child) -> (String, std::process::ExitStatus) {
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .expect("the worker exits")
        .expect("wait");
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .await
        .expect("read stderr");
    (err, status)
}

#[tokio::test]
async fn a_frame_announcing_4_gib_is_refused_without_allocating_it() {
    let (child, stream, _dir) = worker_connection().await;
    let (mut r, mut w) = share(stream);
    w.write_all(&[0xff, 0xff, 0xff, 0xff]).await.expect("write");
    w.flush().await.expect("flush");
    // The worker ends the connection: EOF, no answer.
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(5), r.read(&mut buf))
        .await
        .expect("closed in time")
        .unwrap_or(0);
    assert_eq!(n, 0, "no reply to an oversized frame");
    drop((r, w));
    let (stderr, status) = stderr_and_exit(child).await;
    assert!(
        stderr.contains("frame of 4294967295 bytes refused"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(status.code().is_some(), "exited normally: {status}");
}

#[tokio::test]
async fn a_peer_with_another_protocol_version_is_refused() {
    let (child, stream, _dir) = worker_connection().await;
    let (mut r, mut w) = share(stream);
    let hello = ClientMessage::Hello {
        protocol_version: PROTOCOL_VERSION + 1,
        build_id: "conda-mcp 0.0.0 proto 999".into(),
    };
    write_frame(&mut w, &hello).await.expect("hello");
    let answer: WorkerMessage = read_frame(&mut r).await.expect("an answer");
    match answer {
        WorkerMessage::Refused { reason } => {
            assert!(
                reason.contains(&format!("version {}", PROTOCOL_VERSION + 1)),
                "{reason}"
            );
            assert!(reason.contains(&build_id()), "{reason}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    drop((r, w));
    let (stderr, _) = stderr_and_exit(child).await;
    assert!(stderr.contains("handshake refused"), "{stderr}");
}

#[tokio::test]
async fn a_matching_hello_is_welcomed_and_garbage_after_it_ends_the_connection() {
    let (child, stream, _dir) = worker_connection().await;
    let (mut r, mut w) = share(stream);
    let hello = ClientMessage::Hello {
        protocol_version: PROTOCOL_VERSION,
        build_id: build_id(),
    };
    write_frame(&mut w, &hello).await.expect("hello");
    let answer: WorkerMessage = read_frame(&mut r).await.expect("an answer");
    assert!(
        matches!(answer, WorkerMessage::Welcome { protocol_version, .. } if protocol_version == PROTOCOL_VERSION)
    );
    // An undecodable frame: 3 bytes of garbage in a 3-byte frame.
    w.write_all(&[0, 0, 0, 3, 0xff, 0xfe, 0xfd])
        .await
        .expect("write");
    drop((r, w));
    let (stderr, status) = stderr_and_exit(child).await;
    assert!(stderr.contains("undecodable frame"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(status.code().is_some());
}
