//! Length-prefixed bincode frames over any async byte stream.
//!
//! A frame is a big-endian `u32` payload length followed by that many bytes
//! of bincode (2.x, serde, standard configuration). The length is checked
//! against [`MAX_FRAME_BYTES`] *before* anything is allocated, so a peer that
//! announces 4 GiB is refused without reserving it. An oversized, truncated
//! or undecodable frame is an error that ends the connection; it never
//! panics.

use serde::{Serialize, de::DeserializeOwned};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest payload accepted or sent: 64 MiB (two 1 MiB-limited streams and
/// 1 MiB stdin fit many times over; configured limits are capped by it).
pub const MAX_FRAME_BYTES: u32 = 64 * 1024 * 1024;

/// Initial buffer for a payload; it grows with the bytes actually received.
const INITIAL_READ_CHUNK: usize = 64 * 1024;

/// Errors of reading or writing a frame. Every one ends the connection.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// The peer closed the stream cleanly between frames.
    #[error("connection closed")]
    Closed,
    /// I/O failure, including EOF in the middle of a frame.
    #[error("i/o error on the worker connection: {0}")]
    Io(#[from] std::io::Error),
    /// The announced length exceeds [`MAX_FRAME_BYTES`].
    #[error("frame of {announced} bytes refused: the maximum is {max} bytes")]
    TooLarge {
        /// Length the peer announced.
        announced: u64,
        /// The maximum accepted.
        max: u32,
    },
    /// The payload is not a valid encoding of the expected message.
    #[error("undecodable frame: {0}")]
    Decode(String),
    /// The message could not be encoded.
    #[error("unencodable message: {0}")]
    Encode(String),
}

/// bincode's standard configuration with a decode limit: a length field
/// inside a payload (a `Vec` or `String` claiming more elements than the
/// frame can hold) is refused instead of pre-allocating what it claims.
fn config() -> impl bincode::config::Config {
    bincode::config::standard().with_limit::<{ MAX_FRAME_BYTES as usize }>()
}

/// Encodes `msg` and writes it as one frame, then flushes.
///
/// Errors: [`FrameError::TooLarge`] when the encoding exceeds
/// [`MAX_FRAME_BYTES`], [`FrameError::Io`] on write failure.
pub async fn write_frame<W, T>(writer: &mut W, msg: &T) -> Result<(), FrameError>
where
    W: AsyncWrite + Unpin,
    T: Serialize,
{
    let buf = encode_frame(msg)?;
    writer.write_all(&buf).await?;
    writer.flush().await?;
    Ok(())
}

/// Reads one frame and decodes it.
///
/// Errors: [`FrameError::Closed`] on a clean EOF before the length prefix,
/// [`FrameError::TooLarge`] before allocating an oversized payload,
/// [`FrameError::Io`] on EOF inside a frame, [`FrameError::Decode`] when the
/// payload is not exactly one `T`.
pub async fn read_frame<R, T>(reader: &mut R) -> Result<T, FrameError>
where
    R: AsyncRead + Unpin,
    T: DeserializeOwned,
{
    let mut len_buf = [0u8; 4];
    let mut filled = 0;
    while filled < len_buf.len() {
        let n = reader.read(&mut len_buf[filled..]).await?;
        if n == 0 {
            return if filled == 0 {
                Err(FrameError::Closed)
            } else {
                Err(FrameError::Io(std::io::ErrorKind::UnexpectedEof.into()))
            };
        }
        filled += n;
    }
    let len = u32::from_be_bytes(len_buf);
    if len > MAX_FRAME_BYTES {
        return Err(FrameError::TooLarge {
            announced: u64::from(len),
            max: MAX_FRAME_BYTES,
        });
    }
    // Grow the buffer as bytes arrive instead of reserving the announced
    // length up front: a peer that announces 60 MiB and sends 10 bytes costs
    // 10 bytes (plus one small initial chunk), not 60 MiB.
    let mut payload = Vec::with_capacity((len as usize).min(INITIAL_READ_CHUNK));
    let got = (&mut *reader)
        .take(u64::from(len))
        .read_to_end(&mut payload)
        .await?;
    if got != len as usize {
        return Err(FrameError::Io(std::io::ErrorKind::UnexpectedEof.into()));
    }
    decode_payload(&payload)
}

/// Decodes one payload (the bytes after the length prefix) as exactly one
/// `T`. Errors: [`FrameError::Decode`] for undecodable bytes or trailing
/// bytes after the message. Never panics, whatever the input.
pub fn decode_payload<T: DeserializeOwned>(payload: &[u8]) -> Result<T, FrameError> {
    let (msg, used) = bincode::serde::decode_from_slice(payload, config())
        .map_err(|e| FrameError::Decode(e.to_string()))?;
    if used != payload.len() {
        return Err(FrameError::Decode(format!(
            "{} trailing bytes after the message",
            payload.len() - used
        )));
    }
    Ok(msg)
}

/// Encodes `msg` as one complete frame (length prefix + payload).
/// Errors: [`FrameError::Encode`], [`FrameError::TooLarge`].
pub fn encode_frame<T: Serialize>(msg: &T) -> Result<Vec<u8>, FrameError> {
    let payload = bincode::serde::encode_to_vec(msg, config())
        .map_err(|e| FrameError::Encode(e.to_string()))?;
    let len = u32::try_from(payload.len())
        .ok()
        .filter(|len| *len <= MAX_FRAME_BYTES)
        .ok_or(FrameError::TooLarge {
            announced: payload.len() as u64,
            max: MAX_FRAME_BYTES,
        })?;
    let mut buf = Vec::with_capacity(4 + payload.len());
    buf.extend_from_slice(&len.to_be_bytes());
    buf.extend_from_slice(&payload);
    Ok(buf)
}

/// One half of a stream shared through an `Arc`, for streams whose `&S`
/// implements `AsyncRead` and `AsyncWrite` (interprocess's local socket
/// streams): a reader task and a writer can each own one, where
/// interprocess's own `split` is deprecated.
#[derive(Debug)]
pub struct SharedStream<S>(pub std::sync::Arc<S>);

impl<S> Clone for SharedStream<S> {
    fn clone(&self) -> Self {
        SharedStream(self.0.clone())
    }
}

impl<S> AsyncRead for SharedStream<S>
where
    for<'a> &'a S: AsyncRead,
{
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut &*self.0).poll_read(cx, buf)
    }
}

impl<S> AsyncWrite for SharedStream<S>
where
    for<'a> &'a S: AsyncWrite,
{
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut &*self.0).poll_write(cx, buf)
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut &*self.0).poll_flush(cx)
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut &*self.0).poll_shutdown(cx)
    }
}

/// Both halves of `stream`, sharing it.
pub fn share<S>(stream: S) -> (SharedStream<S>, SharedStream<S>) {
    let a = SharedStream(std::sync::Arc::new(stream));
    (a.clone(), a)
}
