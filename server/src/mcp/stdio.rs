//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout.
//!
//! rmcp's own stdio transport drops a line it cannot decode without a word,
//! so a host that sent a malformed request waits for its answer forever. This
//! one reads the lines itself and answers what cannot be decoded as JSON-RPC
//! 2.0 says: a line that is not JSON gets `-32700 Parse error` (id null), a
//! JSON value that is not a valid message gets `-32600 Invalid Request`
//! (with its id when the id is readable). Neither echoes what was sent. A
//! line longer than [`MAX_LINE_BYTES`] is discarded the same way, without
//! being held in memory.
//!
//! It also tells the server when stdin reaches EOF (the host went away), so
//! that running calls are killed at once instead of being waited for.

use std::pin::Pin;
use std::sync::Arc;

use futures::{Sink, Stream};
use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

/// Longest accepted line (one JSON-RPC message): 64 MiB, far above any
/// call this server takes (stdin of a call is limited to 1 MiB by default).
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

type Writer = Arc<Mutex<Pin<Box<dyn AsyncWrite + Send>>>>;

/// The outgoing half: each message one line.
pub type OutSink = Pin<Box<dyn Sink<TxJsonRpcMessage<RoleServer>, Error = std::io::Error> + Send>>;
/// The incoming half: decoded messages until EOF.
pub type InStream = Pin<Box<dyn Stream<Item = RxJsonRpcMessage<RoleServer>> + Send>>;

/// The server's stdio transport; `eof` is cancelled when stdin ends.
pub fn stdio(eof: CancellationToken) -> (OutSink, InStream) {
    let (reader, writer) = rmcp::transport::io::stdio_pipes();
    transport(reader, writer, eof)
}

/// The transport over any reader and writer (tests use pipes).
pub fn transport<R, W>(reader: R, writer: W, eof: CancellationToken) -> (OutSink, InStream)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + 'static,
{
    let writer: Writer = Arc::new(Mutex::new(Box::pin(writer)));
    let sink = futures::sink::unfold(
        writer.clone(),
        |w: Writer, msg: TxJsonRpcMessage<RoleServer>| async move {
            let mut line = serde_json::to_vec(&msg).map_err(std::io::Error::other)?;
            line.push(b'\n');
            write_line(&w, &line).await?;
            Ok::<_, std::io::Error>(w)
        },
    );
    let state = (BufReader::new(reader), writer, eof);
    let stream = futures::stream::unfold(state, |(mut reader, writer, eof)| async move {
        loop {
            match read_line(&mut reader, MAX_LINE_BYTES).await {
                Ok(Line::Eof) | Err(_) => {
                    eof.cancel();
                    return None;
                }
                Ok(Line::TooLong) => {
                    tracing::warn!("a line of over {MAX_LINE_BYTES} bytes on stdin was discarded");
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
                        Ok(msg) => return Some((msg, (reader, writer, eof))),
                        Err(_) => reject(&writer, &bytes).await,
                    }
                }
            }
        }
    });
    (Box::pin(sink), Box::pin(stream))
}

/// Answers a line that is not a JSON-RPC message (notifications, which
/// have no id, get no answer: only a log line).
async fn reject(writer: &Writer, bytes: &[u8]) {
    match serde_json::from_slice::<Value>(bytes) {
        Err(_) => {
            tracing::warn!("a line on stdin is not JSON; answered with a parse error");
            reply_error(
                writer,
                Value::Null,
                -32700,
                "Parse error: the message is not valid JSON",
            )
            .await;
        }
        Ok(v) => {
            let id = match v.get("id") {
                Some(id @ (Value::String(_) | Value::Number(_))) => id.clone(),
                _ => Value::Null,
            };
            let is_notification = v.get("method").is_some() && v.get("id").is_none();
            if is_notification {
                tracing::warn!("an undecodable notification on stdin was ignored");
                return;
            }
            tracing::warn!(
                "a message on stdin is not valid JSON-RPC 2.0; answered with invalid request"
            );
            reply_error(
                writer,
                id,
                -32600,
                "Invalid Request: not a valid JSON-RPC 2.0 message",
            )
            .await;
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

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use tokio::io::AsyncReadExt;

    async fn run(input: &[u8]) -> (Vec<String>, Vec<Value>, bool) {
        let (mut client_out, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, mut client_in) = tokio::io::duplex(1 << 20);
        let eof = CancellationToken::new();
        let (_sink, mut stream) = transport(server_in, server_out, eof.clone());
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
    async fn overlong_lines_are_dropped_without_holding_them() {
        let mut reader = BufReader::new(&b"aaaaaaaaaa\nok\n"[..]);
        assert!(matches!(read_line(&mut reader, 4).await, Ok(Line::TooLong)));
        assert!(matches!(read_line(&mut reader, 4).await, Ok(Line::Text(t)) if t == b"ok"));
        assert!(matches!(read_line(&mut reader, 4).await, Ok(Line::Eof)));
    }
}
