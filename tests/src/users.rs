//! Throw-away OS users for the `root` tier's tests (a worker under another
//! uid): made with `useradd` when missing, so a test does not depend on how
//! a distribution set up `nobody` (Debian gives it the missing home
//! `/nonexistent`; Fedora and RHEL give it `/`, which exists).

use std::path::PathBuf;
use std::process::Command;

use crate::tiers::{Tier, missing};

/// A user named `name` whose home directory does not exist
/// (`/nonexistent/<name>`), made with `useradd --no-create-home` when there
/// is no such user; `(name, its home)`. `None` after [`missing`] for `test`
/// (the `root` tier) when this process is not root or `useradd` fails; a
/// panic when a user of that name exists with a home that exists (the test
/// would prove nothing).
pub fn without_home(test: &str, name: &str) -> Option<(String, PathBuf)> {
    if !nix::unistd::Uid::effective().is_root() {
        missing(Tier::Root, test, "not root: making a user needs it");
        return None;
    }
    let home = PathBuf::from("/nonexistent").join(name);
    if nix::unistd::User::from_name(name).ok().flatten().is_none() {
        let made = Command::new("useradd")
            .args([
                "--no-create-home",
                "--shell",
                "/usr/sbin/nologin",
                "--home-dir",
            ])
            .arg(&home)
            .arg(name)
            .status()
            .is_ok_and(|s| s.success());
        // another test process may have made it meanwhile
        if !made && nix::unistd::User::from_name(name).ok().flatten().is_none() {
            missing(
                Tier::Root,
                test,
                &format!("useradd could not make the user {name}"),
            );
            return None;
        }
    }
    let user = nix::unistd::User::from_name(name)
        .ok()
        .flatten()
        .expect("the user just made");
    assert!(
        !user.dir.exists(),
        "the user {name} has the home {} that exists",
        user.dir.display()
    );
    Some((name.to_owned(), user.dir))
}
