//! Property tests of the frame codec: round trips, garbage never panics,
//! oversized announcements are refused before reading their payload.

use std::time::Duration;

use conda_mcp_shared::framing::{
    FrameError, MAX_FRAME_BYTES, decode_payload, encode_frame, read_frame, write_frame,
};
use conda_mcp_shared::guard::{GuardOutcome, GuardRefusal, GuardReport};
use conda_mcp_shared::limits::Limits;
use conda_mcp_shared::protocol::{
    ClientMessage, JobEvent, JobRefusal, PROTOCOL_VERSION, Program, RunRequest, WorkerMessage,
    build_id,
};
use conda_mcp_shared::{ExecutionResult, StopSignal};
use proptest::prelude::*;

/// Checks that `msg` (a message some input decoded to) is one the codec
/// can carry: encoded, decoded and encoded again it gives the same frame.
/// Frames, not messages, are compared: a decoded `f64` may be a NaN, which
/// equals nothing, itself included, while its bytes survive the round trip.
fn re_encodes<T>(msg: &T) -> Result<(), TestCaseError>
where
    T: serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let frame = encode_frame(msg).map_err(|e| TestCaseError::fail(format!("re-encode: {e}")))?;
    let again: T = decode_payload(&frame[4..])
        .map_err(|e| TestCaseError::fail(format!("decode the re-encoding: {e}")))?;
    let frame_again =
        encode_frame(&again).map_err(|e| TestCaseError::fail(format!("encode again: {e}")))?;
    prop_assert!(
        frame_again == frame,
        "{msg:?} re-encodes to a payload that decodes to {again:?}"
    );
    Ok(())
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

fn arb_result() -> impl Strategy<Value = ExecutionResult> {
    (
        proptest::option::of(any::<i32>()),
        ".{0,40}",
        ".{0,40}",
        any::<u64>(),
        proptest::option::of(any::<bool>()),
        any::<[bool; 6]>(),
        0u8..3,
    )
        .prop_map(
            |(exit_code, stdout, stderr, duration_ms, stop, b, g)| ExecutionResult {
                exit_code,
                stdout,
                stderr,
                duration_ms,
                timed_out: b[0],
                cancelled: b[1],
                stdout_truncated: b[2],
                stderr_truncated: b[3],
                stdout_lossy: b[4],
                stderr_lossy: b[5],
                stopped_by: stop.map(|term| {
                    if term {
                        StopSignal::Term
                    } else {
                        StopSignal::Kill
                    }
                }),
                guard: match g {
                    0 => None,
                    1 => Some(GuardOutcome::NoReport),
                    _ => Some(GuardOutcome::Report(Box::new(GuardReport {
                        prefix: Some("/p".into()),
                        refusal: Some(GuardRefusal::EnvironmentExists {
                            prefix: "/p".into(),
                            packages: 3,
                        }),
                        ..GuardReport::default()
                    }))),
                },
            },
        )
}

fn arb_client() -> impl Strategy<Value = ClientMessage> {
    prop_oneof![
        (any::<u32>(), ".{0,20}").prop_map(|(protocol_version, build_id)| ClientMessage::Hello {
            protocol_version,
            build_id
        }),
        any::<u64>().prop_map(|job| ClientMessage::Cancel { job }),
        Just(ClientMessage::WarmUp),
        (
            any::<u64>(),
            any::<bool>(),
            prop::collection::vec(".{0,12}", 0..6),
            proptest::option::of(".{0,12}"),
            proptest::option::of(prop::collection::vec(any::<u8>(), 0..64)),
            any::<(u64, u64, u64)>(),
            ".{0,12}",
        )
            .prop_map(|(job, py, argv, cwd, stdin, (t, o, s), label)| {
                ClientMessage::Run(Box::new(RunRequest {
                    job,
                    program: if py { Program::Python } else { Program::Conda },
                    argv,
                    cwd,
                    stdin,
                    limits: Limits {
                        timeout: Duration::from_millis(t),
                        output_limit_bytes: o,
                        stdin_limit_bytes: s,
                    },
                    label,
                    checks: None,
                    warm_only: py,
                }))
            }),
    ]
}

fn arb_worker() -> impl Strategy<Value = WorkerMessage> {
    let event = prop_oneof![
        any::<u32>().prop_map(|pid| JobEvent::Started { pid }),
        (
            any::<u64>(),
            any::<u64>(),
            any::<u64>(),
            proptest::option::of(0.0f64..=1.0)
        )
            .prop_map(|(a, b, c, p)| JobEvent::Output {
                stdout_bytes: a,
                stderr_bytes: b,
                elapsed_ms: c,
                progress_fraction: p
            }),
        arb_result().prop_map(JobEvent::Finished),
        prop_oneof![
            Just(JobRefusal::NoInterpreter),
            Just(JobRefusal::BadCwd),
            Just(JobRefusal::Busy),
            any::<(u64, u64)>().prop_map(|(len_bytes, limit_bytes)| JobRefusal::StdinTooLarge {
                len_bytes,
                limit_bytes
            }),
            ".{0,30}".prop_map(|error| JobRefusal::Spawn { error }),
            ".{0,30}".prop_map(|error| JobRefusal::TaskFailed { error }),
        ]
        .prop_map(JobEvent::Failed),
    ];
    prop_oneof![
        (any::<u32>(), ".{0,20}", any::<u32>()).prop_map(|(protocol_version, build_id, pid)| {
            WorkerMessage::Welcome {
                protocol_version,
                build_id,
                pid,
            }
        }),
        ".{0,30}".prop_map(|reason| WorkerMessage::Refused { reason }),
        (any::<u64>(), event).prop_map(|(job, event)| WorkerMessage::Event { job, event }),
    ]
}

/// A decoded progress fraction may be a NaN (any bytes are an `f64`): the
/// re-encoding check holds for it, though the NaN equals nothing.
#[test]
fn a_nan_that_decodes_re_encodes() {
    let msg = WorkerMessage::Event {
        job: 1,
        event: JobEvent::Output {
            stdout_bytes: 0,
            stderr_bytes: 0,
            elapsed_ms: 0,
            progress_fraction: Some(f64::NAN),
        },
    };
    assert_ne!(msg, msg.clone(), "a NaN equals nothing");
    re_encodes(&msg).expect("the same frame again");
}

proptest! {
    #[test]
    fn client_messages_round_trip(msg in arb_client()) {
        let bytes = encode_frame(&msg).expect("encode");
        let back: ClientMessage = block_on(read_frame(&mut bytes.as_slice())).expect("decode");
        prop_assert_eq!(back, msg);
    }

    #[test]
    fn worker_messages_round_trip(msg in arb_worker()) {
        let mut buf = Vec::new();
        block_on(write_frame(&mut buf, &msg)).expect("write");
        let back: WorkerMessage = block_on(read_frame(&mut buf.as_slice())).expect("read");
        prop_assert_eq!(back, msg);
    }

    #[test]
    fn garbage_payload_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        // Never a panic; and whatever decodes is a message the codec can
        // carry: it re-encodes to a payload that decodes to the same one.
        if let Ok(msg) = decode_payload::<ClientMessage>(&bytes) {
            re_encodes(&msg)?;
        }
        if let Ok(msg) = decode_payload::<WorkerMessage>(&bytes) {
            re_encodes(&msg)?;
        }
    }

    #[test]
    fn corrupted_payloads_that_decode_re_encode_to_the_same_message(
        msg in arb_worker(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        // One byte of a valid payload changed: such input decodes far more
        // often than random bytes do, so the property below is exercised.
        let frame = encode_frame(&msg).expect("encode");
        let mut payload = frame[4..].to_vec();
        let i = at.index(payload.len());
        payload[i] = byte;
        if let Ok(decoded) = decode_payload::<WorkerMessage>(&payload) {
            re_encodes(&decoded)?;
        }
    }

    #[test]
    fn garbage_stream_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut r = bytes.as_slice();
        // Read frames until the stream errors or ends: never a panic; each
        // frame read re-encodes to one that decodes to the same message.
        let read = block_on(async {
            let mut read = Vec::new();
            for _ in 0..8 {
                match read_frame::<_, WorkerMessage>(&mut r).await {
                    Ok(msg) => read.push(msg),
                    Err(_) => break,
                }
            }
            read
        });
        for msg in read {
            re_encodes(&msg)?;
        }
    }

    #[test]
    fn announcements_over_the_maximum_are_refused(extra in 1u32..=(u32::MAX - MAX_FRAME_BYTES)) {
        let announced = MAX_FRAME_BYTES + extra;
        let bytes = announced.to_be_bytes();
        let err = block_on(read_frame::<_, ClientMessage>(&mut bytes.as_slice())).expect_err("refused");
        prop_assert!(matches!(err, FrameError::TooLarge { announced: a, .. } if a == u64::from(announced)), "{err}");
    }

    #[test]
    fn truncated_frames_are_errors(msg in arb_worker(), cut in any::<prop::sample::Index>()) {
        let bytes = encode_frame(&msg).expect("encode");
        let cut = cut.index(bytes.len());
        let res = block_on(read_frame::<_, WorkerMessage>(&mut &bytes[..cut]));
        match res {
            Err(FrameError::Closed) => prop_assert_eq!(cut, 0),
            Err(FrameError::Io(_)) => prop_assert!(cut > 0),
            other => prop_assert!(false, "unexpected {:?}", other),
        }
    }
}

#[test]
fn trailing_bytes_are_refused() {
    let msg = ClientMessage::Cancel { job: 7 };
    let mut bytes = encode_frame(&msg).expect("encode");
    bytes.push(0);
    let len = u32::try_from(bytes.len() - 4).expect("small");
    bytes[..4].copy_from_slice(&len.to_be_bytes());
    let err = block_on(read_frame::<_, ClientMessage>(&mut bytes.as_slice())).expect_err("refused");
    assert!(matches!(err, FrameError::Decode(_)), "{err}");
}

#[test]
fn a_vec_claiming_more_than_the_frame_is_refused() {
    // A Run whose argv length field claims 2^60 items inside a tiny frame.
    let msg = ClientMessage::Run(Box::new(RunRequest {
        job: 1,
        program: Program::Conda,
        argv: vec![],
        cwd: None,
        stdin: None,
        limits: Limits {
            timeout: Duration::from_millis(1),
            output_limit_bytes: 1,
            stdin_limit_bytes: 1,
        },
        label: String::new(),
        checks: None,
        warm_only: false,
    }));
    let good = encode_frame(&msg).expect("encode");
    // variant index (1 byte), job (1 byte), program (1 byte), then argv's length.
    let mut bad = good[4..7].to_vec();
    bad.push(253); // varint marker for a u64 follows
    bad.extend_from_slice(&(1u64 << 60).to_le_bytes());
    assert!(decode_payload::<ClientMessage>(&bad).is_err());
}

/// The limits of a `RunRequest` are one nested value in the code and three
/// `u64` on the wire, exactly where the flat fields `timeout_ms`,
/// `output_limit_bytes` and `stdin_limit_bytes` of protocol 2 were (protocol 3 changed only the result): the
/// encoding did not change.
#[test]
fn run_request_limits_encode_as_three_flat_integers() {
    #[derive(serde::Serialize)]
    enum FlatClientMessage {
        _Hello,
        Run {
            job: u64,
            program: Program,
            argv: Vec<String>,
            cwd: Option<String>,
            stdin: Option<Vec<u8>>,
            timeout_ms: u64,
            output_limit_bytes: u64,
            stdin_limit_bytes: u64,
            label: String,
            checks: Option<u8>,
            warm_only: bool,
        },
    }
    let nested = ClientMessage::Run(Box::new(RunRequest {
        job: 7,
        program: Program::Python,
        argv: vec!["-c".into(), "x".into()],
        cwd: Some("/".into()),
        stdin: Some(b"in".to_vec()),
        limits: Limits {
            timeout: Duration::from_micros(2_500_900),
            output_limit_bytes: 1 << 20,
            stdin_limit_bytes: 300,
        },
        label: "conda info".into(),
        checks: None,
        warm_only: true,
    }));
    let flat = FlatClientMessage::Run {
        job: 7,
        program: Program::Python,
        argv: vec!["-c".into(), "x".into()],
        cwd: Some("/".into()),
        stdin: Some(b"in".to_vec()),
        timeout_ms: 2500,
        output_limit_bytes: 1 << 20,
        stdin_limit_bytes: 300,
        label: "conda info".into(),
        checks: None,
        warm_only: true,
    };
    assert_eq!(
        encode_frame(&nested).expect("encode"),
        encode_frame(&flat).expect("encode")
    );
}

#[test]
fn handshake_values_are_stable() {
    assert_eq!(PROTOCOL_VERSION, 8);
    assert!(build_id().contains(env!("CARGO_PKG_VERSION")));
}

/// Fuzz cases per property: `CONDA_MCP_FUZZ_CASES` (a long run), else
/// `default`.
fn fuzz_cases(default: u32) -> u32 {
    std::env::var("CONDA_MCP_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `test` on `cases` values of `strategy` and reports how many ran.
fn fuzz<S: Strategy>(
    name: &str,
    cases: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    use proptest::test_runner::{Config, TestRunner};
    let ran = std::sync::atomic::AtomicU64::new(0);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&strategy, |v| {
            ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            test(v)
        })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    eprintln!(
        "fuzz {name}: {} cases (CONDA_MCP_FUZZ_CASES sets the count)",
        ran.into_inner()
    );
}

/// Valid frames with random bytes flipped (length prefix included): a
/// decode error or a message, never a panic, and never more bytes consumed
/// than the frame announced.
#[test]
fn fuzz_mutated_frames() {
    let strategy = (
        arb_worker(),
        prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 1..6),
    );
    fuzz(
        "IPC frame decoder, mutated frames",
        fuzz_cases(512),
        strategy,
        |(msg, flips)| {
            let mut frame = encode_frame(&msg).expect("encode");
            for (i, x) in flips {
                let j = i.index(frame.len());
                frame[j] ^= x;
            }
            let mut r = frame.as_slice();
            let res = block_on(read_frame::<_, WorkerMessage>(&mut r));
            let announced = u32::from_be_bytes([frame[0], frame[1], frame[2], frame[3]]) as usize;
            let consumed = frame.len() - r.len();
            match res {
                Ok(_) => prop_assert_eq!(consumed, 4 + announced),
                Err(FrameError::TooLarge { .. }) => prop_assert_eq!(consumed, 4),
                Err(_) => prop_assert!(consumed <= 4 + announced),
            }
            Ok(())
        },
    );
}

/// A stream of valid frames, cut at a random point and followed by random
/// bytes: every whole frame before the cut decodes to its message, then the
/// stream ends in an error or a clean close, never a panic.
#[test]
fn fuzz_frame_streams() {
    let strategy = (
        prop::collection::vec(arb_client(), 1..6),
        any::<prop::sample::Index>(),
        prop::collection::vec(any::<u8>(), 0..64),
    );
    fuzz(
        "IPC frame decoder, streams",
        fuzz_cases(256),
        strategy,
        |(msgs, cut, tail)| {
            let frames: Vec<Vec<u8>> = msgs
                .iter()
                .map(|m| encode_frame(m).expect("encode"))
                .collect();
            let mut bytes: Vec<u8> = frames.concat();
            let cut = cut.index(bytes.len() + 1);
            bytes.truncate(cut);
            let whole = frames
                .iter()
                .scan(0, |end, f| {
                    *end += f.len();
                    Some(*end)
                })
                .take_while(|end| *end <= cut)
                .count();
            bytes.extend_from_slice(&tail);
            let mut r = bytes.as_slice();
            let got = block_on(async {
                let mut got = Vec::new();
                for _ in 0..whole {
                    got.push(read_frame::<_, ClientMessage>(&mut r).await);
                }
                // Whatever follows: no panic.
                for _ in 0..4 {
                    if read_frame::<_, ClientMessage>(&mut r).await.is_err() {
                        break;
                    }
                }
                got
            });
            for (g, m) in got.iter().zip(&msgs) {
                prop_assert_eq!(g.as_ref().ok(), Some(m));
            }
            Ok(())
        },
    );
}
