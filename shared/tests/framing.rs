//! Property tests of the frame codec: round trips, garbage never panics,
//! oversized announcements are refused before reading their payload.

use conda_mcp_shared::framing::{
    FrameError, MAX_FRAME_BYTES, decode_payload, encode_frame, read_frame, write_frame,
};
use conda_mcp_shared::protocol::{
    ClientMessage, JobEvent, PROTOCOL_VERSION, Program, RunRequest, WorkerMessage, build_id,
};
use conda_mcp_shared::{ExecutionResult, StopSignal};
use proptest::prelude::*;

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
    )
        .prop_map(
            |(exit_code, stdout, stderr, duration_ms, stop, b)| ExecutionResult {
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
                ClientMessage::Run(RunRequest {
                    job,
                    program: if py { Program::Python } else { Program::Conda },
                    argv,
                    cwd,
                    stdin,
                    timeout_ms: t,
                    output_limit_bytes: o,
                    stdin_limit_bytes: s,
                    label,
                })
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
        ".{0,30}".prop_map(|reason| JobEvent::Failed { reason }),
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
        let _ = decode_payload::<ClientMessage>(&bytes);
        let _ = decode_payload::<WorkerMessage>(&bytes);
    }

    #[test]
    fn garbage_stream_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        let mut r = bytes.as_slice();
        // Read frames until the stream errors or ends: never a panic.
        block_on(async {
            for _ in 0..8 {
                if read_frame::<_, WorkerMessage>(&mut r).await.is_err() {
                    break;
                }
            }
        });
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
    let msg = ClientMessage::Run(RunRequest {
        job: 1,
        program: Program::Conda,
        argv: vec![],
        cwd: None,
        stdin: None,
        timeout_ms: 1,
        output_limit_bytes: 1,
        stdin_limit_bytes: 1,
        label: String::new(),
    });
    let good = encode_frame(&msg).expect("encode");
    // variant index (1 byte), job (1 byte), program (1 byte), then argv's length.
    let mut bad = good[4..7].to_vec();
    bad.push(253); // varint marker for a u64 follows
    bad.extend_from_slice(&(1u64 << 60).to_le_bytes());
    assert!(decode_payload::<ClientMessage>(&bad).is_err());
}

#[test]
fn handshake_values_are_stable() {
    assert_eq!(PROTOCOL_VERSION, 3);
    assert!(build_id().contains(env!("CARGO_PKG_VERSION")));
}
