//! A frame announcing 4 GiB (or anything up to the maximum) is refused or
//! read without reserving the announced size: measured with a counting
//! global allocator. This file is its own test binary so that the allocator
//! sees only this test.
#![allow(unsafe_code)] // the counting allocator below; test-only

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use conda_mcp_shared::framing::{FrameError, MAX_FRAME_BYTES, read_frame};
use conda_mcp_shared::protocol::ClientMessage;

struct Counting;
static LARGEST: AtomicUsize = AtomicUsize::new(0);

// SAFETY: delegates every call to the system allocator unchanged; only
// records the largest single request.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LARGEST.fetch_max(layout.size(), Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LARGEST.fetch_max(new_size, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

#[test]
fn oversized_and_short_announcements_allocate_nothing_like_their_size() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    LARGEST.store(0, Ordering::Relaxed);

    // 4 GiB - 1 announced: refused before reading a payload byte.
    let mut four_gib: &[u8] = &[0xff, 0xff, 0xff, 0xff, 1, 2, 3];
    let err = rt
        .block_on(read_frame::<_, ClientMessage>(&mut four_gib))
        .expect_err("refused");
    assert!(matches!(err, FrameError::TooLarge { .. }), "{err}");
    assert_eq!(four_gib, &[1, 2, 3], "no payload byte was read");

    // The maximum announced, ten bytes sent: an EOF error, and the buffer
    // grew with what arrived, not with what was announced.
    let mut frame = MAX_FRAME_BYTES.to_be_bytes().to_vec();
    frame.extend_from_slice(&[0u8; 10]);
    let err = rt
        .block_on(read_frame::<_, ClientMessage>(&mut frame.as_slice()))
        .expect_err("short");
    assert!(matches!(err, FrameError::Io(_)), "{err}");

    let largest = LARGEST.load(Ordering::Relaxed);
    assert!(
        largest < 1024 * 1024,
        "largest single allocation was {largest} bytes"
    );
}
