//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout.
//!
//! rmcp's own stdio transport drops a line it cannot decode without a word,
//! so a host that sent a malformed request waits for its answer forever. This
//! one reads the lines itself and answers what cannot be decoded as JSON-RPC
//! 2.0 says: a line that is not JSON gets `-32700 Parse error` (id null), a
//! JSON value that is not a valid message gets `-32600 Invalid Request`
//! (with its id when the id is readable). Neither echoes what was sent. A
//! line longer than the line limit ([`line_limit`]) is discarded the same
//! way: at most the limit is held in memory while it is read, the rest is
//! read and dropped, so a 100 MB line costs a few MiB, not 100 MB. JSON
//! nested deeper than 128 levels (serde_json's recursion limit) is never
//! decoded, so no request can overflow the stack; like a lone UTF-16
//! surrogate escape (`"\ud800"`, valid JSON grammar that is no Unicode
//! text) or a number beyond a double, it makes the line an invalid request,
//! answered with its id when the id itself can be read
//! ([`super::undecodable`]).
//!
//! Every request and its answer pass through the request log
//! ([`super::request_log`]): one line per request, without its arguments.
//!
//! A notification before the request that opens the session (some clients
//! send `notifications/cancelled` or a stray `notifications/initialized`
//! before `initialize` or `server/discover`, or after an early `ping`), and
//! one other than `notifications/initialized` between `initialize` and it,
//! is dropped with a log line ([`Opening`]): rmcp ends the session on such
//! a notification, and a notification has no answer to give.
//!
//! It also tells the server when stdin reaches EOF (the host went away), so
//! that running calls are killed at once instead of being waited for.

use std::pin::Pin;
use std::sync::Arc;

use futures::{Sink, Stream};
use rmcp::RoleServer;
use rmcp::ServiceExt;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::request_log::RequestLog;
use super::undecodable::UndecodableResponse;

/// Upper bound of the line limit: 64 MiB.
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;
/// Lower bound of the line limit: 4 MiB, far above any call without stdin.
pub const MIN_LINE_BYTES: usize = 4 * 1024 * 1024;

/// The longest line (one JSON-RPC message) the server reads, for a
/// `--stdin-limit-bytes` of `stdin_limit`: room for that much stdin with
/// every byte JSON-escaped as `\u00XX` (6 bytes each) plus 1 MiB for the
/// rest of the call, within [`MIN_LINE_BYTES`]..=[`MAX_LINE_BYTES`]. The
/// default stdin limit (1 MiB) gives 7 MiB.
pub fn line_limit(stdin_limit: u64) -> usize {
    let wanted = stdin_limit.saturating_mul(6).saturating_add(1024 * 1024);
    usize::try_from(wanted)
        .unwrap_or(usize::MAX)
        .clamp(MIN_LINE_BYTES, MAX_LINE_BYTES)
}

type Writer = Arc<Mutex<Pin<Box<dyn AsyncWrite + Send>>>>;

/// The outgoing half: each message one line.
pub type OutSink = Pin<Box<dyn Sink<TxJsonRpcMessage<RoleServer>, Error = std::io::Error> + Send>>;
/// The incoming half: decoded messages until EOF.
pub type InStream = Pin<Box<dyn Stream<Item = RxJsonRpcMessage<RoleServer>> + Send>>;

/// The server's stdio transport; `eof` is cancelled when stdin ends; lines
/// longer than `max_line` bytes are refused ([`line_limit`]).
pub fn stdio(eof: CancellationToken, max_line: usize) -> (OutSink, InStream) {
    let (reader, writer) = rmcp::transport::io::stdio_pipes();
    transport(reader, writer, eof, max_line)
}

/// The transport over any reader and writer (tests use pipes).
pub fn transport<R, W>(
    reader: R,
    writer: W,
    eof: CancellationToken,
    max_line: usize,
) -> (OutSink, InStream)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + 'static,
{
    let writer: Writer = Arc::new(Mutex::new(Box::pin(writer)));
    let log = Arc::new(RequestLog::default());
    let sink = futures::sink::unfold(
        (writer.clone(), log.clone()),
        |(w, log): (Writer, Arc<RequestLog>), msg: TxJsonRpcMessage<RoleServer>| async move {
            let mut line = serde_json::to_vec(&msg).map_err(std::io::Error::other)?;
            line.push(b'\n');
            log.sent(&msg);
            write_line(&w, &line).await?;
            Ok::<_, std::io::Error>((w, log))
        },
    );
    let state = (BufReader::new(reader), writer, eof, log, Opening::Closed);
    let stream = futures::stream::unfold(
        state,
        move |(mut reader, writer, eof, log, mut opening)| async move {
            loop {
                match read_line(&mut reader, max_line).await {
                    Ok(Line::Eof) | Err(_) => {
                        eof.cancel();
                        return None;
                    }
                    Ok(Line::TooLong) => {
                        tracing::warn!("a line of over {max_line} bytes on stdin was discarded");
                        reply_error(
                            &writer,
                            Value::Null,
                            -32700,
                            "Parse error: message too large",
                        )
                        .await;
                    }
                    Ok(Line::Text(bytes)) => {
                        if bytes.iter().all(u8::is_ascii_whitespace) {
                            continue;
                        }
                        match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(&bytes) {
                            Ok(msg) => {
                                let (pass, next) = opening.admit(&msg, &bytes);
                                opening = next;
                                if !pass {
                                    tracing::info!(
                                        "a notification before the session was opened was ignored"
                                    );
                                    continue;
                                }
                                log.received(&msg);
                                return Some((msg, (reader, writer, eof, log, opening)));
                            }
                            Err(_) => reject(&writer, &bytes).await,
                        }
                    }
                }
            }
        },
    );
    (Box::pin(sink), Box::pin(stream))
}

/// How far the session's opening has come: rmcp ends the session when,
/// before it is open, a notification other than the one the handshake
/// expects arrives (a `ping` before `initialize` is answered and changes
/// nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opening {
    /// Nothing has opened it: only requests pass (`initialize`, a
    /// 2026-07-28 request, or a `ping`, which leaves it closed).
    Closed,
    /// `initialize` was received: only `notifications/initialized` of the
    /// notifications passes.
    Initializing,
    /// Open: everything passes.
    Open,
}

impl Opening {
    /// Whether `msg` (read from `bytes`) goes to rmcp, and the state after
    /// it.
    fn admit(self, msg: &RxJsonRpcMessage<RoleServer>, bytes: &[u8]) -> (bool, Opening) {
        use rmcp::model::JsonRpcMessage;
        if self == Opening::Open {
            return (true, self);
        }
        let value: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
        let method = value.get("method").and_then(Value::as_str).unwrap_or("");
        match (self, msg) {
            (Opening::Closed, JsonRpcMessage::Notification(_)) => (false, self),
            (Opening::Initializing, JsonRpcMessage::Notification(_)) => {
                if method == "notifications/initialized" {
                    (true, Opening::Open)
                } else {
                    (false, self)
                }
            }
            (Opening::Closed, JsonRpcMessage::Request(_)) if method == "initialize" => {
                (true, Opening::Initializing)
            }
            (Opening::Closed, JsonRpcMessage::Request(_))
                if method == "server/discover"
                    || value
                        .pointer("/params/_meta")
                        .and_then(Value::as_object)
                        .is_some_and(|m| m.contains_key(STATELESS_VERSION_KEY)) =>
            {
                (true, Opening::Open)
            }
            _ => (true, self),
        }
    }
}

/// The `_meta` key that carries a 2026-07-28 request's protocol version
/// (its presence makes the request a stateless one, which needs no
/// `initialize`).
const STATELESS_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// Answers a line that is not a JSON-RPC message (notifications, which
/// have no id, get no answer: only a log line).
async fn reject(writer: &Writer, bytes: &[u8]) {
    match super::undecodable::rejection(bytes) {
        UndecodableResponse::Notification => {
            tracing::warn!("an undecodable notification on stdin was ignored");
        }
        UndecodableResponse::Answer { id, code, message } => {
            if code == -32700 {
                tracing::warn!("a line on stdin is not JSON; answered with a parse error");
            } else {
                tracing::warn!(
                    "a message on stdin is not valid JSON-RPC 2.0; answered with invalid request"
                );
            }
            reply_error(writer, id, code, message).await;
        }
    }
}

async fn reply_error(writer: &Writer, id: Value, code: i64, message: &str) {
    let frame = json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    let mut line = frame.to_string().into_bytes();
    line.push(b'\n');
    if let Err(e) = write_line(writer, &line).await {
        tracing::warn!("cannot write an error response: {e}");
    }
}

async fn write_line(writer: &Writer, line: &[u8]) -> std::io::Result<()> {
    let mut w = writer.lock().await;
    w.write_all(line).await?;
    w.flush().await
}

enum Line {
    Text(Vec<u8>),
    TooLong,
    Eof,
}

/// One `\n`-terminated line (without the `\n`), holding at most `max`
/// bytes: the rest of a longer line is read and dropped.
async fn read_line<R: AsyncBufRead + Unpin>(reader: &mut R, max: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(if too_long {
                Line::TooLong
            } else if line.is_empty() {
                Line::Eof
            } else {
                Line::Text(line)
            });
        }
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(buf.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Text(line)
            });
        }
    }
}

/// Serves `server` on stdin/stdout until the session ends (stdin closed or
/// a transport error). `eof` is cancelled as soon as stdin closes, before
/// rmcp has waited for the calls in flight; `max_line` bounds one incoming
/// message ([`line_limit`]).
///
/// Errors: [`SessionError`], why the session ended when it was not a
/// clean end of stdin (a sentence for the log).
pub async fn serve_stdio(
    server: crate::mcp::CondaMcp,
    eof: CancellationToken,
    max_line: usize,
) -> Result<(), SessionError> {
    let running = server
        .serve(stdio(eof, max_line))
        .await
        .map_err(|e| SessionError::Initialize(Box::new(e)))?;
    running.waiting().await?;
    Ok(())
}

/// Why a stdio session ended other than by the end of stdin.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// The MCP initialization did not complete (rmcp's words).
    #[error(transparent)]
    Initialize(Box<rmcp::service::ServerInitializeError>),
    /// The running session's task failed (it panicked or was cancelled).
    #[error(transparent)]
    Task(#[from] tokio::task::JoinError),
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use tokio::io::AsyncReadExt;

    async fn run(input: &[u8]) -> (Vec<String>, Vec<Value>, bool) {
        let (mut client_out, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, mut client_in) = tokio::io::duplex(1 << 20);
        let eof = CancellationToken::new();
        let (_sink, mut stream) = transport(server_in, server_out, eof.clone(), 1 << 16);
        client_out.write_all(input).await.expect("write");
        drop(client_out);
        let mut methods = Vec::new();
        while let Some(msg) = stream.next().await {
            let v = serde_json::to_value(&msg).expect("json");
            methods.push(v["method"].as_str().unwrap_or("").to_owned());
        }
        drop(_sink);
        let mut out = String::new();
        let _ = tokio::time::timeout(
            std::time::Duration::from_secs(1),
            client_in.read_to_string(&mut out),
        )
        .await;
        let replies = out
            .lines()
            .map(|l| serde_json::from_str(l).expect("json reply"))
            .collect();
        (methods, replies, eof.is_cancelled())
    }

    #[tokio::test]
    async fn malformed_lines_get_errors_and_valid_ones_pass() {
        let deep = format!("{}{}", "[".repeat(300), "]".repeat(300));
        let input = format!(
            "{}\n{}\n\n{}\n{}\n{}\n",
            r#"{"jsonrpc":"2.0","id":77,"method":"tools/list""#,
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            deep,
            r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/bogus","params":7}"#,
        );
        let (methods, replies, eof) = run(input.as_bytes()).await;
        assert_eq!(methods, ["ping"]);
        assert!(eof, "EOF is signalled");
        let codes: Vec<i64> = replies
            .iter()
            .map(|r| r["error"]["code"].as_i64().unwrap_or(0))
            .collect();
        assert_eq!(codes, [-32700, -32700, -32600], "{replies:?}");
        assert!(replies.iter().all(|r| r["id"].is_null()));
        assert!(
            !replies.iter().any(|r| r.to_string().contains("tools/list")),
            "no echo"
        );
    }

    #[tokio::test]
    async fn an_invalid_request_keeps_its_id() {
        let (_, replies, _) =
            run(b"{\"jsonrpc\":\"1.0\",\"id\":5,\"method\":\"ping\"}\n\xff\xfe\n").await;
        assert_eq!(replies[0]["id"], json!(5));
        assert_eq!(replies[0]["error"]["code"], json!(-32600));
        assert_eq!(replies[1]["error"]["code"], json!(-32700));
    }

    #[tokio::test]
    async fn a_lone_surrogate_keeps_the_id_unless_it_is_in_the_id() {
        let input = concat!(
            r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x\ud800"}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"reason":"\udc00"}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":"\ud800","method":"ping"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":null,"method":"ping","params":{"a":"\ud800"}}"#,
            "\n",
        );
        let (passed, replies, _) = run(input.as_bytes()).await;
        assert!(passed.is_empty(), "{passed:?}");
        let got: Vec<(Value, Value)> = replies
            .iter()
            .map(|r| (r["id"].clone(), r["error"]["code"].clone()))
            .collect();
        assert_eq!(
            got,
            [
                (json!(9), json!(-32600)),
                (Value::Null, json!(-32700)),
                (Value::Null, json!(-32600)),
            ],
            "{replies:?}"
        );
        for r in &replies {
            let text = r.to_string();
            assert!(
                !text.contains("ud800") && !text.contains("tools/call"),
                "{text}"
            );
        }
    }

    #[tokio::test]
    async fn overlong_lines_are_dropped_without_holding_them() {
        let mut reader = BufReader::new(&b"aaaaaaaaaa\nok\n"[..]);
        assert!(matches!(read_line(&mut reader, 4).await, Ok(Line::TooLong)));
        assert!(matches!(read_line(&mut reader, 4).await, Ok(Line::Text(t)) if t == b"ok"));
        assert!(matches!(read_line(&mut reader, 4).await, Ok(Line::Eof)));
    }

    /// What one fuzzed line is, and so what it must produce.
    #[derive(Debug, Clone)]
    enum Fuzz {
        /// A valid `ping` request: passed to the server exactly once.
        Request(u32),
        /// Not JSON (starts with `#`), holding the marker: one -32700.
        Garbage(Vec<u8>),
        /// Invalid UTF-8 inside a JSON string: one -32700.
        InvalidUtf8(u32),
        /// A request whose params nest deeper than 128 levels: one -32600
        /// carrying its id.
        Deep(u32, usize),
        /// A number too large for a double: one -32600 carrying its id.
        HugeNumber(u32),
        /// A lone UTF-16 surrogate escape in a string (one of
        /// [`SURROGATES`]): one -32600 carrying its id.
        LoneSurrogate(u32),
        /// A valid JSON value that is not a message, with an id: one -32600
        /// carrying that id.
        NotAMessage(u32),
        /// An undecodable notification: no answer.
        BadNotification,
        /// A line over the limit: one -32700.
        Overlong(usize),
        /// Arbitrary bytes: at most one answer.
        Arbitrary(Vec<u8>),
    }

    const MARKER: &str = "zq7marker";
    /// Strings with a lone surrogate escape, as JSON source.
    const SURROGATES: [&str; 4] = [r"\ud800", r"\udc00", r"a\ud800b", r"\ud800\u0041"];
    const FUZZ_MAX_LINE: usize = 4096;

    fn fuzz_line() -> impl proptest::strategy::Strategy<Value = Fuzz> {
        use proptest::prelude::*;
        prop_oneof![
            any::<u32>().prop_map(Fuzz::Request),
            proptest::collection::vec(
                any::<u8>().prop_filter("no newline", |b| *b != b'\n'),
                0..64
            )
            .prop_map(Fuzz::Garbage),
            any::<u32>().prop_map(Fuzz::InvalidUtf8),
            // Within the line limit (two bytes a level).
            (any::<u32>(), 129usize..1900).prop_map(|(i, d)| Fuzz::Deep(i, d)),
            any::<u32>().prop_map(Fuzz::HugeNumber),
            any::<u32>().prop_map(Fuzz::LoneSurrogate),
            any::<u32>().prop_map(Fuzz::NotAMessage),
            Just(Fuzz::BadNotification),
            (FUZZ_MAX_LINE + 1..3 * FUZZ_MAX_LINE).prop_map(Fuzz::Overlong),
            proptest::collection::vec(
                any::<u8>().prop_filter("no newline", |b| *b != b'\n'),
                0..128
            )
            .prop_map(Fuzz::Arbitrary),
        ]
    }

    fn bytes_of(line: &Fuzz, n: usize) -> Vec<u8> {
        let id = |i: u32| format!("f{n}-{i}");
        match line {
            Fuzz::Request(i) => {
                format!(r#"{{"jsonrpc":"2.0","id":"{}","method":"ping"}}"#, id(*i)).into_bytes()
            }
            Fuzz::Garbage(b) => {
                let mut v = format!("#{MARKER}").into_bytes();
                v.extend_from_slice(b);
                v
            }
            Fuzz::InvalidUtf8(i) => {
                let mut v = format!(
                    r#"{{"jsonrpc":"2.0","id":"{}","method":"ping","params":{{"{MARKER}":""#,
                    id(*i)
                )
                .into_bytes();
                v.extend_from_slice(b"\xff\xfe\"}}");
                v
            }
            Fuzz::Deep(i, d) => format!(
                r#"{{"jsonrpc":"2.0","id":"{}","method":"ping","params":{{"{MARKER}":{}{}}}}}"#,
                id(*i),
                "[".repeat(*d),
                "]".repeat(*d)
            )
            .into_bytes(),
            Fuzz::LoneSurrogate(i) => format!(
                r#"{{"jsonrpc":"2.0","id":"{}","method":"ping","params":{{"{MARKER}":"{}"}}}}"#,
                id(*i),
                SURROGATES[*i as usize % SURROGATES.len()]
            )
            .into_bytes(),
            Fuzz::HugeNumber(i) => format!(
                r#"{{"jsonrpc":"2.0","id":"{}","method":"ping","params":{{"{MARKER}":1e999999}}}}"#,
                id(*i)
            )
            .into_bytes(),
            Fuzz::NotAMessage(i) => {
                format!(r#"{{"id":"{}","{MARKER}":[1,2]}}"#, id(*i)).into_bytes()
            }
            Fuzz::BadNotification => {
                format!(r#"{{"jsonrpc":"2.0","method":"notifications/x","params":"{MARKER}"}}"#)
                    .into_bytes()
            }
            Fuzz::Overlong(len) => {
                let mut v = format!(r#"{{"{MARKER}":""#).into_bytes();
                v.resize(*len, b'a');
                v
            }
            Fuzz::Arbitrary(b) => b.clone(),
        }
    }

    /// Fuzz cases per property: `CONDA_MCP_FUZZ_CASES` (a long run), else
    /// `default`.
    fn fuzz_cases(default: u32) -> u32 {
        std::env::var("CONDA_MCP_FUZZ_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    }

    /// Random lines, written in random chunks: the reader never panics,
    /// passes every valid request exactly once and in order, answers every
    /// other line as its kind requires (at most once), and echoes nothing.
    #[test]
    fn fuzzed_lines_get_one_answer_each_and_nothing_is_echoed() {
        use proptest::prelude::*;
        use proptest::test_runner::{Config, TestRunner};
        let cases = fuzz_cases(256);
        let mut runner = TestRunner::new(Config {
            cases,
            ..Config::default()
        });
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let run = std::cell::Cell::new(0usize);
        let strategy = (
            proptest::collection::vec(fuzz_line(), 1..24),
            proptest::collection::vec(1usize..5000, 1..8),
        );
        runner
            .run(&strategy, |(lines, chunks)| {
                run.set(run.get() + 1);
                let n = run.get();
                let mut input = Vec::new();
                for l in &lines {
                    input.extend_from_slice(&bytes_of(l, n));
                    input.push(b'\n');
                }
                let (passed, replies) = rt.block_on(async {
                    let (mut client_out, server_in) = tokio::io::duplex(1 << 16);
                    let (server_out, mut client_in) = tokio::io::duplex(1 << 22);
                    let eof = CancellationToken::new();
                    let (sink, mut stream) =
                        transport(server_in, server_out, eof.clone(), FUZZ_MAX_LINE);
                    let writer = tokio::spawn(async move {
                        let mut rest = &input[..];
                        let mut i = 0;
                        while !rest.is_empty() {
                            let take = chunks[i % chunks.len()].min(rest.len());
                            client_out.write_all(&rest[..take]).await.expect("write");
                            rest = &rest[take..];
                            i += 1;
                        }
                    });
                    let mut passed = Vec::new();
                    while let Some(msg) = stream.next().await {
                        let v = serde_json::to_value(&msg).expect("json");
                        passed.push(v["id"].as_str().unwrap_or("").to_owned());
                    }
                    writer.await.expect("writer");
                    drop(sink);
                    drop(stream);
                    let mut out = Vec::new();
                    client_in.read_to_end(&mut out).await.expect("read replies");
                    (passed, out)
                });
                let replies = String::from_utf8(replies).expect("replies are UTF-8");
                prop_assert!(!replies.contains(MARKER), "echoed: {replies}");
                let replies: Vec<Value> = replies
                    .lines()
                    .map(|l| serde_json::from_str(l).expect("each reply is JSON"))
                    .collect();
                let id = |i: &u32| json!(format!("f{n}-{i}"));
                let wanted: Vec<String> = lines
                    .iter()
                    .filter_map(|l| match l {
                        Fuzz::Request(i) => Some(format!("f{n}-{i}")),
                        _ => None,
                    })
                    .collect();
                prop_assert_eq!(passed, wanted);
                let mut expected: Vec<(i64, Value)> = Vec::new();
                let mut arbitrary = 0;
                for l in &lines {
                    match l {
                        Fuzz::Request(_) | Fuzz::BadNotification => {}
                        Fuzz::Garbage(_) | Fuzz::InvalidUtf8(_) | Fuzz::Overlong(_) => {
                            expected.push((-32700, Value::Null))
                        }
                        Fuzz::NotAMessage(i)
                        | Fuzz::Deep(i, _)
                        | Fuzz::HugeNumber(i)
                        | Fuzz::LoneSurrogate(i) => expected.push((-32600, id(i))),
                        Fuzz::Arbitrary(_) => arbitrary += 1,
                    }
                }
                let got: Vec<(i64, Value)> = replies
                    .iter()
                    .map(|r| (r["error"]["code"].as_i64().unwrap_or(0), r["id"].clone()))
                    .collect();
                // Arbitrary lines may add at most one answer each; the
                // predictable ones come in order among them.
                prop_assert!(
                    got.len() >= expected.len() && got.len() <= expected.len() + arbitrary,
                    "{} replies for {} expected + {} arbitrary",
                    got.len(),
                    expected.len(),
                    arbitrary
                );
                let mut it = got.iter();
                for e in &expected {
                    prop_assert!(it.any(|g| g == e), "missing {:?} in {:?}", e, got);
                }
                Ok(())
            })
            .expect("property holds");
        eprintln!(
            "fuzz stdio reader: {} cases (CONDA_MCP_FUZZ_CASES sets the count)",
            run.get()
        );
    }
}
