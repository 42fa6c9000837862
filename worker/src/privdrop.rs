//! Dropping to another user (`--user`, the server's `--worker-user`).
//!
//! Done right after the worker connected to the server's socket (which lives
//! in the server's private directory, unreachable for the target user), and
//! before any job runs: supplementary groups are reset to the user's primary
//! group, then gid, then uid (in that order: after setuid the others are no
//! longer permitted).

use std::ffi::OsString;
use std::path::Path;

use conda_mcp_shared::home::{HomeUser, check_home, prepare_home};
use nix::unistd::{Uid, User, setgid, setuid};

/// Becomes `name`; returns the `HOME`, `USER` and `LOGNAME` the jobs should
/// see. `home` (`--home`) replaces the user's own home directory: it is
/// created (mode 0700, owned by the user) before the uid changes. Either way
/// the home must exist and be writable by the user.
///
/// Errors name the step that failed, or the user, the home and the fix.
pub fn drop_to(name: &str, home: Option<&Path>) -> Result<Vec<(OsString, OsString)>, String> {
    if !Uid::effective().is_root() {
        return Err("--user needs the worker to be started as root".into());
    }
    let user = User::from_name(name)
        .map_err(|e| format!("looking up user {name}: {e}"))?
        .ok_or_else(|| format!("no such user: {name}"))?;
    let who = HomeUser {
        name: name.to_owned(),
        uid: user.uid.as_raw(),
        gid: user.gid.as_raw(),
    };
    let home = match home {
        Some(dir) => prepare_home(&who, dir, "--home").map_err(|e| e.to_string())?,
        None => user.dir.clone(),
    };
    set_groups(user.gid).map_err(|e| format!("setgroups: {e}"))?;
    setgid(user.gid).map_err(|e| format!("setgid: {e}"))?;
    setuid(user.uid).map_err(|e| format!("setuid: {e}"))?;
    if Uid::effective() != user.uid || Uid::current() != user.uid {
        return Err("the uid did not change".into());
    }
    // Checked as the user now: the permission bits judged before may not
    // be the whole story (ACLs, read-only mounts).
    check_home(&who, &home, "--home").map_err(|e| e.to_string())?;
    if nix::unistd::access(
        &home,
        nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
    )
    .is_err()
    {
        return Err(format!(
            "the worker user {name} cannot write to its home {}; pass --home DIR",
            home.display()
        ));
    }
    Ok(vec![
        ("HOME".into(), home.into_os_string()),
        ("USER".into(), name.into()),
        ("LOGNAME".into(), name.into()),
    ])
}

/// The supplementary groups become exactly `gid`.
#[cfg(not(target_os = "macos"))]
fn set_groups(gid: nix::unistd::Gid) -> nix::Result<()> {
    nix::unistd::setgroups(&[gid])
}

/// The supplementary groups become exactly `gid` (macOS: nix leaves
/// `setgroups` out there, libc has it).
#[cfg(target_os = "macos")]
#[allow(unsafe_code)]
fn set_groups(gid: nix::unistd::Gid) -> nix::Result<()> {
    let groups = [gid.as_raw()];
    // SAFETY: one gid_t, and the count says one.
    let r = unsafe { libc::setgroups(1, groups.as_ptr()) };
    nix::errno::Errno::result(r).map(drop)
}
