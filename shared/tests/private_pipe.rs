//! The server's pipe for its worker (Windows; run under wine here): one
//! client gets through, a second is refused, and only the current user is
//! named in its DACL.
#![cfg(windows)]

use conda_mcp_shared::private_pipe::{accept_one, current_user_sid, listen, sddl_for};
use interprocess::local_socket::GenericNamespaced;
use interprocess::local_socket::tokio::{Stream, prelude::*};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn unique(tag: &str) -> String {
    format!("conda-mcp-test-{tag}-{}", std::process::id())
}

async fn connect(name: &str) -> std::io::Result<Stream> {
    Stream::connect(name.to_ns_name::<GenericNamespaced>()?).await
}

#[tokio::test]
async fn a_second_client_is_refused() {
    let name = unique("second");
    let listener = listen(&name).expect("listen");
    let server = tokio::spawn(async move {
        let mut s = accept_one(listener).await.expect("accept");
        let mut buf = [0u8; 5];
        s.read_exact(&mut buf).await.expect("read");
        s.write_all(&buf).await.expect("echo");
        // Hold the connection while the second client tries.
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    });
    let mut first = connect(&name).await.expect("the first client connects");
    first.write_all(b"hello").await.expect("write");
    let mut back = [0u8; 5];
    first.read_exact(&mut back).await.expect("echo back");
    assert_eq!(&back, b"hello");
    // A plain CreateFile (no waiting for a free instance, which a client
    // library may do): the only instance is taken and no listener makes
    // another, so Windows refuses the open (ERROR_PIPE_BUSY, or
    // ERROR_FILE_NOT_FOUND once no instance is left).
    let second = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(format!(r"\\.\pipe\{name}"));
    let code = second.as_ref().err().and_then(std::io::Error::raw_os_error);
    assert!(
        matches!(code, Some(231 | 2)),
        "a second client must be refused, got {second:?}"
    );
    server.await.expect("server");
}

/// Whether this runs under wine (its registry has `HKLM\Software\Wine`).
fn under_wine() -> bool {
    std::process::Command::new("reg")
        .args(["query", r"HKLM\Software\Wine"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The test tiers (CONTRIBUTING.md "Tiers"), the same source as the tests
/// crate's `conda_mcp_tests::tiers` (this crate cannot depend on that one).
#[path = "../../tests/src/tiers.rs"]
#[allow(dead_code)]
mod tiers;

/// Windows refuses a second server on a name whose first instance was made
/// with FILE_FLAG_FIRST_PIPE_INSTANCE (the pipe-squatting protection);
/// wine does not implement the flag, so this test needs a real Windows: the
/// `windows` tier (docs/testing.md "macOS and Windows"). Under wine it is
/// reported SKIPPED, or fails where a run declares that tier.
#[tokio::test]
async fn the_same_name_cannot_be_listened_on_twice() {
    if under_wine() {
        tiers::missing(
            tiers::Tier::Windows,
            "private_pipe::the_same_name_cannot_be_listened_on_twice",
            "wine ignores FILE_FLAG_FIRST_PIPE_INSTANCE: this needs a real Windows",
        );
        return;
    }
    let name = unique("twice");
    let _first = listen(&name).expect("listen");
    assert!(
        listen(&name).is_err(),
        "the first instance flag refuses a second listener on the same name"
    );
}

#[test]
fn the_dacl_names_only_the_current_user() {
    let sid = current_user_sid().expect("the process token's SID");
    assert!(sid.starts_with("S-1-"), "{sid}");
    assert_eq!(sddl_for(&sid), format!("D:P(A;;GA;;;{sid})"));
}
