//! Windows: nothing to sweep after a job. Its job object holds every
//! process the job started, whatever they do (no process group to leave,
//! no breakaway), and [`crate::contain`] terminates it before the sweep;
//! the job object's handle closes with the job's process.

/// Nothing to set up on Windows.
pub fn become_subreaper() -> std::io::Result<()> {
    Ok(())
}

/// Nothing to record on Windows.
pub fn observe(_spare: &[i32]) {}

/// Nothing is left after the job object was terminated: returns 0.
pub async fn kill_all_descendants(_spare: &[i32]) -> usize {
    0
}
