//! The built `conda-mcp` in its HTTP mode (`--listen 127.0.0.1:0`, loopback
//! only) and a raw HTTP/1.1 client for it (one request per connection, so
//! the test sees exactly the status, headers and body the server sent); the
//! Python MCP SDK, the real client of the HTTP tests, comes from
//! [`crate::pyclient`].

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::bins;

/// A `conda-mcp --listen` process; killed when dropped.
pub struct HttpServer {
    /// The process.
    pub child: Child,
    /// The address it listens on.
    pub addr: SocketAddr,
    /// Private folder: discovery cache, stderr log, token file.
    pub dir: TempDir,
    /// The stderr log.
    pub stderr_path: PathBuf,
}

impl HttpServer {
    /// Starts `conda-mcp --listen 127.0.0.1:0 ARGS` for `conda_exe` and waits
    /// (up to 60 s) for its "listening" line.
    ///
    /// Panics when it exits or does not listen in time (its log is shown).
    pub fn start(conda_exe: &Path, args: &[&str]) -> HttpServer {
        Self::start_in(tempdir(), conda_exe, args)
    }

    /// [`HttpServer::start`] in a folder the caller already prepared (e.g.
    /// with a token file in it).
    pub fn start_in(dir: TempDir, conda_exe: &Path, args: &[&str]) -> HttpServer {
        Self::start_with_worker(dir, conda_exe, &bins::worker(), args)
    }

    /// [`HttpServer::start_in`] with `worker_exe` as `--worker-exe` (e.g. a
    /// copy the test can break).
    pub fn start_with_worker(
        dir: TempDir,
        conda_exe: &Path,
        worker_exe: &Path,
        args: &[&str],
    ) -> HttpServer {
        let stderr_path = dir.path().join("stderr.log");
        let stderr = std::fs::File::create(&stderr_path).expect("stderr log");
        let child = Command::new(bins::server())
            .arg("--conda-exe")
            .arg(conda_exe)
            .arg("--worker-exe")
            .arg(worker_exe)
            .args(["--listen", "127.0.0.1:0"])
            .args(args)
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .env_remove("CONDA_EXE")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr)
            .spawn()
            .expect("spawn conda-mcp --listen");
        let mut server = HttpServer {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            dir,
            stderr_path,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let log = server.stderr_text();
            if let Some(addr) = listening_address(&log) {
                server.addr = addr;
                return server;
            }
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("conda-mcp --listen exited ({status}) before listening:\n{log}");
            }
            assert!(
                Instant::now() < deadline,
                "conda-mcp did not listen within 60 s:\n{log}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Everything the server and its worker logged so far.
    pub fn stderr_text(&self) -> String {
        std::fs::read_to_string(&self.stderr_path).unwrap_or_default()
    }

    /// The log once it holds every one of `needles` ([`crate::logs::holding`]).
    pub fn stderr_holding(&self, needles: &[&str]) -> String {
        crate::logs::holding(&self.stderr_path, needles)
    }

    /// Waits up to `within` for the log to contain `needle` `count` times.
    pub fn wait_log(&self, needle: &str, count: usize, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        loop {
            if self.stderr_text().matches(needle).count() >= count {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits up to `within` for the process to exit; its status.
    pub fn wait_exit(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + within;
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A private folder for one server.
pub fn tempdir() -> TempDir {
    tempfile::Builder::new()
        .prefix("conda-mcp-http-test-")
        .tempdir()
        .expect("tempdir")
}

/// The address of the server's `listening address=...` log line.
pub fn listening_address(log: &str) -> Option<SocketAddr> {
    log.lines()
        .filter(|l| l.contains("listening"))
        .find_map(|l| {
            let rest = l.split("address=").nth(1)?;
            rest.split_whitespace()
                .next()?
                .trim_matches('"')
                .parse()
                .ok()
        })
}

/// The pids of the jobs the worker logged as started with `label`.
pub fn job_pids(log: &str, label: &str) -> Vec<u32> {
    log.lines()
        .filter(|l| l.contains("job started") && l.contains(&format!("label={label} ")))
        .filter_map(|l| {
            l.split(" pid=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// One HTTP response as sent.
#[derive(Debug, Clone)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header names (lowercase) and values, in order.
    pub headers: Vec<(String, String)>,
    /// The body as text (chunked encoding left as sent).
    pub body: String,
}

impl Response {
    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(k, _)| *k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends one request (`Connection: close`) and reads the whole answer.
/// `headers` come after `Host: 127.0.0.1:PORT` unless they set `Host`
/// themselves. Errors: the connection failed before a status line came.
pub fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Response> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    s.write_all(head.as_bytes())?;
    // The server may answer (413) before it has read the whole body.
    let _ = s.write_all(body);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    parse_response(&raw)
}

/// A JSON-RPC POST to `/mcp` with the headers a Streamable HTTP client
/// sends, plus `extra`.
pub fn post_mcp(
    addr: SocketAddr,
    extra: &[(&str, &str)],
    body: &serde_json::Value,
) -> std::io::Result<Response> {
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    headers.extend_from_slice(extra);
    request(addr, "POST", "/mcp", &headers, body.to_string().as_bytes())
}

/// A request of the stateless lifecycle (protocol 2026-07-28) to `/mcp`
/// with bearer `token`, its routing headers (`Mcp-Method`, and `Mcp-Name`
/// when `name` is given) and id 1; the answer's JSON body.
///
/// Panics when the request fails or its body is not JSON (a test helper).
pub fn post_stateless(
    addr: SocketAddr,
    token: &str,
    method: &str,
    name: Option<&str>,
    params: serde_json::Value,
) -> serde_json::Value {
    let bearer = format!("Bearer {token}");
    let mut headers = vec![
        ("Authorization", bearer.as_str()),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(n) = name {
        headers.push(("Mcp-Name", n));
    }
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let r = post_mcp(addr, &headers, &body).expect("request");
    serde_json::from_str(&r.body).unwrap_or_else(|_| panic!("{r:?}"))
}

/// The body of `r` without its chunked transfer coding (RFC 9112 §7.1),
/// as it is when the response was not chunked.
pub fn dechunked(r: &Response) -> String {
    if !r
        .header("transfer-encoding")
        .is_some_and(|v| v.eq_ignore_ascii_case("chunked"))
    {
        return r.body.clone();
    }
    let mut out = String::new();
    let mut rest = r.body.as_str();
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16);
        let Ok(size) = size else { break };
        if size == 0 || tail.len() < size {
            break;
        }
        out.push_str(&tail[..size]);
        rest = tail[size..].strip_prefix("\r\n").unwrap_or(&tail[size..]);
    }
    out
}

/// The JSON-RPC messages of an answer: its body when it is JSON, else
/// the `data` of each event of its SSE stream that holds JSON (priming
/// events have none), in order.
pub fn messages(r: &Response) -> Vec<serde_json::Value> {
    let body = dechunked(r);
    if r.header("content-type")
        .is_some_and(|v| v.starts_with("application/json"))
    {
        return serde_json::from_str(&body).into_iter().collect();
    }
    body.replace("\r\n", "\n")
        .split("\n\n")
        .filter_map(|event| {
            let data: Vec<&str> = event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|d| d.strip_prefix(' ').unwrap_or(d))
                .collect();
            serde_json::from_str(&data.join("\n")).ok()
        })
        .collect()
}

fn parse_response(raw: &[u8]) -> std::io::Result<Response> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other(format!("no HTTP response head in {text:?}")))?;
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other("no status line"))?;
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Ok(Response {
        status,
        headers,
        body: body.to_owned(),
    })
}
