//! The channel rules on both sides of the guard agree: one corpus of channel
//! names and credential-bearing strings through the server's rules
//! (`conda_mcp_shared::mask::mask`, `conda_mcp_shared::guard::canonical_channel`)
//! and through the two Python ports of them, requiring the same answers:
//! the guard's (`_masked` and `_canonical` in `worker/src/guard/guard.py`)
//! and the discovery helper's (`configured_channels` in
//! `server/src/discovery/helper.py`), each imported as a module by
//! `python3` from a temporary directory. The server compares a call's
//! channels, and the configured ones the helper reported, with the allowed
//! list by the first; the guard compares conda's `context.channels` by the
//! second: where they differed, a channel the server let through was
//! refused inside conda, or the other way round.
//!
//! Each case also names the canonical form expected, so that the two sides
//! cannot agree on a wrong answer.

use std::io::Write;
use std::process::{Command, Stdio};

use conda_mcp_shared::guard::canonical_channel;
use conda_mcp_shared::mask::mask;

/// The guard exactly as the worker embeds it.
const GUARD: &str = include_str!("../../../worker/src/guard/guard.py");

/// Reads a JSON list of strings on stdin; writes, for each, the guard's
/// masked and canonical forms and what the discovery helper reports of
/// it as a configured channel: `[[masked, canonical, reported], ...]`.
const DRIVER: &str = r#"
import json, sys, types
sys.path.insert(0, sys.argv[1])
import discovery_helper
import guard
corpus = json.load(sys.stdin)
reported = discovery_helper.configured_channels(types.SimpleNamespace(channels=corpus))
json.dump(
    [[guard._masked(c), guard._canonical(c), r] for c, r in zip(corpus, reported, strict=True)],
    sys.stdout,
)
"#;

/// `(channel as written, its canonical form)`.
const CORPUS: &[(&str, &str)] = &[
    // names, multichannels, labels
    ("conda-forge", "conda-forge"),
    ("defaults", "defaults"),
    ("local", "local"),
    ("pkgs/main", "pkgs/main"),
    ("pkgs/r/", "pkgs/r"),
    ("conda-forge/label/rc", "conda-forge/label/rc"),
    ("conda-forge/label/broken/", "conda-forge/label/broken"),
    ("bioconda//", "bioconda"),
    ("  conda-forge\t\n", "conda-forge"),
    ("Conda-Forge", "Conda-Forge"),
    // under conda's default channel_alias
    ("https://conda.anaconda.org/conda-forge", "conda-forge"),
    ("https://conda.anaconda.org/conda-forge/", "conda-forge"),
    (
        "https://conda.anaconda.org/conda-forge/label/rc/",
        "conda-forge/label/rc",
    ),
    ("https://conda.anaconda.org/t/tk-123-456/private", "private"),
    ("https://conda.anaconda.org/t/tk_123/private/", "private"),
    ("https://conda.anaconda.org/t/<TOKEN>/private", "private"),
    ("https://conda.anaconda.org/t/tk-1", ""),
    ("https://conda.anaconda.org/", "https://conda.anaconda.org"),
    (
        "http://conda.anaconda.org/conda-forge",
        "http://conda.anaconda.org/conda-forge",
    ),
    (
        "HTTPS://conda.anaconda.org/conda-forge",
        "HTTPS://conda.anaconda.org/conda-forge",
    ),
    (
        "https://repo.anaconda.com/pkgs/main/",
        "https://repo.anaconda.com/pkgs/main",
    ),
    // passwords
    ("https://user:pass@host/", "https://user:***@host"),
    ("https://user:pass@host", "https://user:***@host"),
    (
        "https://user:pass@host:8443/conda/",
        "https://user:***@host:8443/conda",
    ),
    ("HTTPS://User:Pass@Host/C", "HTTPS://User:***@Host/C"),
    ("https://user:p%40ss%2Fw@host/c", "https://user:***@host/c"),
    ("https://user:p@ss@host/c", "https://user:***@host/c"),
    ("https://us@er:pass@host/c", "https://us@er:***@host/c"),
    ("https://user:pa/ss@host/c", "https://user:***@host/c"),
    ("https://user:p#w@host/c", "https://user:***@host/c"),
    ("https://user:***@host/c", "https://user:***@host/c"),
    ("https://user:@host/c", "https://user:@host/c"),
    ("https://user@host/c/", "https://user@host/c"),
    (
        "s3://key:secret@bucket/channel",
        "s3://key:***@bucket/channel",
    ),
    (
        "git+https://me:tok@example.org/x",
        "git+https://me:***@example.org/x",
    ),
    (
        "https://user:pass@[::1]:8080/c",
        "https://user:***@[::1]:8080/c",
    ),
    ("https://[::1]:8080/c/", "https://[::1]:8080/c"),
    (
        "https://[fe80::1%25eth0]/a:b@c",
        "https://[fe80::1%25eth0]/a:b@c",
    ),
    ("https://host:8443/c/", "https://host:8443/c"),
    ("https://host:8443/@scope/c", "https://host:8443/@scope/c"),
    ("https://host/path:x@y", "https://host/path:x@y"),
    // tokens
    ("https://host/t/tk-123/c/", "https://host/t/<TOKEN>/c"),
    ("https://host/t/tk-123", "https://host/t/<TOKEN>"),
    ("https://host/t/tk-123/", "https://host/t/<TOKEN>"),
    (
        "https://host/t/a/t/b/c",
        "https://host/t/<TOKEN>/t/<TOKEN>/c",
    ),
    ("https://host/t//c", "https://host/t//c"),
    ("https://host/t/tk?x=1", "https://host/t/<TOKEN>?x=1"),
    ("https://host/t/tk.1/c", "https://host/t/tk.1/c"),
    ("https://u:p@host/t/tk/c", "https://u:***@host/t/<TOKEN>/c"),
    ("https://u:p/t/tk/x@host/c", "https://u:***@host/c"),
    (
        "https://host:8080/conda/t/tk-123-45",
        "https://host:8080/conda/t/<TOKEN>",
    ),
    // files and what is not a URL
    ("file:///opt/channel/", "file:///opt/channel"),
    ("file:///opt/t/channel/", "file:///opt/t/<TOKEN>"),
    ("file:///C:/channels/local", "file:///C:/channels/local"),
    ("FILE:///opt/channel", "FILE:///opt/channel"),
    ("/opt/channel/", "/opt/channel"),
    ("user:pass@host/c", "user:pass@host/c"),
    ("://user:pass@host", "://user:pass@host"),
    ("1https://u:p@h/c", "1https://u:***@h/c"),
    (
        "https://a:b@h/c https://c:d@h/e",
        "https://a:***@h/c https://c:***@h/e",
    ),
    ("https://h/é/t/tök/c", "https://h/é/t/tök/c"),
];

#[test]
fn the_guard_and_the_server_canonicalize_channels_alike() {
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("guard.py"), GUARD).expect("write guard.py");
    std::fs::write(
        dir.path().join("discovery_helper.py"),
        conda_mcp_server::discovery::helper::HELPER_SOURCE,
    )
    .expect("write the discovery helper");
    let mut child = Command::new("python3")
        .arg("-I")
        .arg("-c")
        .arg(DRIVER)
        .arg(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3");
    let corpus: Vec<&str> = CORPUS.iter().map(|(c, _)| *c).collect();
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&serde_json::to_vec(&corpus).expect("corpus json"))
        .expect("write the corpus");
    let out = child.wait_with_output().expect("python3 ran");
    assert!(
        out.status.success(),
        "the driver failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let python: Vec<(String, String, String)> =
        serde_json::from_slice(&out.stdout).expect("driver json");
    assert_eq!(python.len(), CORPUS.len());

    let mut differ = Vec::new();
    for ((channel, canonical), (py_masked, py_canonical, reported)) in CORPUS.iter().zip(&python) {
        let rust = (mask(channel).into_owned(), canonical_channel(channel));
        if rust.1 != *canonical {
            differ.push(format!(
                "{channel:?}: expected {canonical:?}, Rust {:?}",
                rust.1
            ));
        }
        if rust != (py_masked.clone(), py_canonical.clone()) {
            differ.push(format!(
                "{channel:?}: Rust (masked, canonical) {rust:?}, the guard ({py_masked:?}, {py_canonical:?})"
            ));
        }
        // The helper reports the channel masked; the server's canonical
        // form of that is the guard's of the channel itself.
        if *reported != rust.0 || canonical_channel(reported) != rust.1 {
            differ.push(format!(
                "{channel:?}: Rust masked {:?}, the discovery helper reported {reported:?}",
                rust.0
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "the answers differ:\n{}",
        differ.join("\n")
    );
}
