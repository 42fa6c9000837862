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
/// Errors ([`PrivDropError`]) name the step that failed, or the user, the
/// home and the fix.
pub fn drop_to(
    name: &str,
    home: Option<&Path>,
) -> Result<Vec<(OsString, OsString)>, PrivDropError> {
    if !Uid::effective().is_root() {
        return Err(PrivDropError::NotRoot);
    }
    let user = User::from_name(name)
        .map_err(|source| PrivDropError::Lookup {
            user: name.to_owned(),
            source,
        })?
        .ok_or_else(|| PrivDropError::NoSuchUser(name.to_owned()))?;
    let who = HomeUser {
        name: name.to_owned(),
        uid: user.uid.as_raw(),
        gid: user.gid.as_raw(),
    };
    let home = match home {
        Some(dir) => prepare_home(&who, dir, "--home")?,
        None => user.dir.clone(),
    };
    let step = |call| move |source| PrivDropError::Step { call, source };
    set_groups(user.gid).map_err(step("setgroups"))?;
    setgid(user.gid).map_err(step("setgid"))?;
    setuid(user.uid).map_err(step("setuid"))?;
    if Uid::effective() != user.uid || Uid::current() != user.uid {
        return Err(PrivDropError::UidUnchanged);
    }
    // Checked as the user now: the permission bits judged before may not
    // be the whole story (ACLs, read-only mounts).
    check_home(&who, &home, "--home")?;
    if nix::unistd::access(
        &home,
        nix::unistd::AccessFlags::W_OK | nix::unistd::AccessFlags::X_OK,
    )
    .is_err()
    {
        return Err(PrivDropError::HomeNotWritable {
            user: name.to_owned(),
            home,
        });
    }
    Ok(vec![
        ("HOME".into(), home.into_os_string()),
        ("USER".into(), name.into()),
        ("LOGNAME".into(), name.into()),
    ])
}

/// Why the worker could not become another user.
#[derive(Debug, thiserror::Error)]
pub enum PrivDropError {
    /// Only root may change user.
    #[error("--user needs the worker to be started as root")]
    NotRoot,
    /// The user database could not be read.
    #[error("looking up user {user}: {source}")]
    Lookup {
        /// The user asked for.
        user: String,
        /// The error of the lookup.
        #[source]
        source: nix::Error,
    },
    /// The user database has no such user.
    #[error("no such user: {0}")]
    NoSuchUser(String),
    /// `--home` could not be made, or the home is not one the user can use
    /// (the user, the directory and the fix).
    #[error(transparent)]
    Home(#[from] conda_mcp_shared::home::HomeError),
    /// A step of the change failed (`setgroups`, `setgid`, `setuid`).
    #[error("{call}: {source}")]
    Step {
        /// The call.
        call: &'static str,
        /// Its error.
        #[source]
        source: nix::Error,
    },
    /// `setuid` returned success and the uid is still the old one.
    #[error("the uid did not change")]
    UidUnchanged,
    /// As the user, its home is not writable.
    #[error("the worker user {user} cannot write to its home {}; pass --home DIR", home.display())]
    HomeNotWritable {
        /// The user.
        user: String,
        /// The home directory.
        home: std::path::PathBuf,
    },
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
