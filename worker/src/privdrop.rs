//! Dropping to another user (`--user`, the server's `--worker-user`).
//!
//! Done right after the worker connected to the server's socket (which lives
//! in the server's private directory, unreachable for the target user), and
//! before any job runs: supplementary groups are reset to the user's primary
//! group, then gid, then uid (in that order: after setuid the others are no
//! longer permitted).

use std::ffi::OsString;

use nix::unistd::{Uid, User, setgid, setgroups, setuid};

/// Becomes `name`; returns the `HOME`, `USER` and `LOGNAME` the jobs should
/// see. Errors name the step that failed.
pub fn drop_to(name: &str) -> Result<Vec<(OsString, OsString)>, String> {
    if !Uid::effective().is_root() {
        return Err("--user needs the worker to be started as root".into());
    }
    let user = User::from_name(name)
        .map_err(|e| format!("looking up user {name}: {e}"))?
        .ok_or_else(|| format!("no such user: {name}"))?;
    setgroups(&[user.gid]).map_err(|e| format!("setgroups: {e}"))?;
    setgid(user.gid).map_err(|e| format!("setgid: {e}"))?;
    setuid(user.uid).map_err(|e| format!("setuid: {e}"))?;
    if Uid::effective() != user.uid || Uid::current() != user.uid {
        return Err("the uid did not change".into());
    }
    Ok(vec![
        ("HOME".into(), user.dir.into_os_string()),
        ("USER".into(), name.into()),
        ("LOGNAME".into(), name.into()),
    ])
}
