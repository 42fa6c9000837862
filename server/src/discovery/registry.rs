//! Windows: the conda installations an installer registered, the last
//! place target resolution looks (docs/operating.md "Discovery", step 1).
//!
//! Miniforge, Miniconda and Anaconda are built by conda's `constructor`,
//! whose NSIS installer writes an uninstall entry under
//! `Software\Microsoft\Windows\CurrentVersion\Uninstall\<name>`, in
//! `HKEY_CURRENT_USER` for a "Just Me" install and `HKEY_LOCAL_MACHINE` for
//! "All Users" (unless it ran with `/NoRegistry=1`). Its `UninstallString`
//! is `"<root>\Uninstall-<NAME>.exe"`; some installers add an
//! `InstallLocation`. An entry names an installation when either gives a
//! root holding `Scripts\conda.exe` (else `condabin\conda.bat`); every
//! other program's entry holds neither and is passed over. Only a root on
//! a local drive (`C:\...`) is taken: an empty, relative or drive-relative
//! one (`C:`) would mean a folder of the server's current directory, and a
//! network share (`\\server\share\...`) could make the last resort wait
//! on the network. The user's own entries come first, then the machine's,
//! each hive in the registry's order of names; values are read as they are
//! stored (a `REG_EXPAND_SZ` with `%VARIABLE%` in it is not expanded, and
//! the 32-bit view, `WOW6432Node`, is not read: constructor's 64-bit
//! installers write the 64-bit one).
//!
//! Only the registry reading is Windows code; the parsing of an entry is
//! plain text and tested everywhere.

use std::path::PathBuf;

/// The installation roots an uninstall entry names, in the order to try
/// them: its `InstallLocation` when set, then the folder of a constructor
/// uninstaller (`Uninstall-<NAME>.exe`, quoted or not, possibly followed
/// by flags such as `/S`) in its `UninstallString`. Empty for any other
/// program's entry. Each root is on a local drive (`X:\` or `X:/` first,
/// see the module docs), written as in the registry without its trailing
/// separator (a drive's root keeps it); nothing is checked on disk.
pub fn installation_roots(install_location: Option<&str>, uninstall: Option<&str>) -> Vec<String> {
    let mut roots = Vec::new();
    let location = install_location
        .map(|l| l.trim().trim_matches('"').trim())
        .and_then(local_root);
    let from_uninstaller = uninstall.and_then(uninstaller_folder).and_then(local_root);
    for root in [location, from_uninstaller].into_iter().flatten() {
        if !roots.contains(&root) {
            roots.push(root);
        }
    }
    roots
}

/// `path` without its trailing separators when it is absolute on a local
/// drive (`C:\x`, `c:/x`, `C:\`), else `None`.
fn local_root(path: &str) -> Option<String> {
    let b = path.as_bytes();
    let on_a_drive =
        b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'\\' | b'/');
    if !on_a_drive {
        return None;
    }
    let trimmed = path.trim_end_matches(['\\', '/']);
    // A drive's root keeps its separator (`C:` alone is drive-relative).
    Some(if trimmed.len() <= 2 {
        path[..3].to_owned()
    } else {
        trimmed.to_owned()
    })
}

/// The folder of the constructor uninstaller an `UninstallString` runs,
/// as written with its separator at the end, or `None` when it runs
/// anything else.
fn uninstaller_folder(uninstall: &str) -> Option<&str> {
    let s = uninstall.trim();
    let exe = match s.strip_prefix('"') {
        Some(rest) => &rest[..rest.find('"')?],
        None => {
            // Unquoted: the path runs to the `.exe` that ends the
            // uninstaller's name (folders before it may hold spaces or
            // `.exe`; flags follow it). ASCII lowering keeps byte offsets.
            let lower = s.to_ascii_lowercase();
            let name = lower.rfind("uninstall-")?;
            let end = name + lower[name..].find(".exe")? + ".exe".len();
            &s[..end]
        }
    };
    let cut = exe.rfind(['\\', '/'])?;
    let file = exe[cut + 1..].to_ascii_lowercase();
    (file.starts_with("uninstall-") && file.ends_with(".exe")).then_some(&exe[..=cut])
}

/// The conda launchers a registered installation root may hold, in the
/// order they are tried: `Scripts\conda.exe`, then `condabin\conda.bat`
/// (which the worker never runs; it runs the installation's
/// `python.exe -m conda`, `conda_mcp_shared::conda_cmd`).
pub fn launchers(root: &str) -> [PathBuf; 2] {
    let root = PathBuf::from(root);
    [
        root.join("Scripts").join("conda.exe"),
        root.join("condabin").join("conda.bat"),
    ]
}

/// The conda launchers of every registered installation whose launcher
/// exists on disk, the user's first (see the module docs). Empty off
/// Windows, and where nothing is registered or the registry cannot be read.
pub fn registered_condas() -> Vec<PathBuf> {
    #[cfg(windows)]
    {
        windows::registered_condas()
    }
    #[cfg(not(windows))]
    {
        Vec::new()
    }
}

#[cfg(windows)]
mod windows {
    use std::path::PathBuf;
    use windows_registry::{CURRENT_USER, LOCAL_MACHINE};

    /// Where installers keep their uninstall entries (the 64-bit view of a
    /// 64-bit process, where 64-bit installers write).
    const UNINSTALL: &str = r"Software\Microsoft\Windows\CurrentVersion\Uninstall";

    pub fn registered_condas() -> Vec<PathBuf> {
        let mut found = Vec::new();
        for hive in [CURRENT_USER, LOCAL_MACHINE] {
            let Ok(uninstall) = hive.open(UNINSTALL) else {
                continue;
            };
            let Ok(names) = uninstall.keys() else {
                continue;
            };
            for name in names {
                let Ok(entry) = uninstall.open(&name) else {
                    continue;
                };
                let location = entry.get_string("InstallLocation").ok();
                let uninstall_string = entry.get_string("UninstallString").ok();
                let roots =
                    super::installation_roots(location.as_deref(), uninstall_string.as_deref());
                if let Some(l) = roots
                    .iter()
                    .flat_map(|root| super::launchers(root))
                    .find(|l| l.is_file())
                    && !found.contains(&l)
                {
                    tracing::debug!(entry = %name, conda = %l.display(), "a registered conda installation");
                    found.push(l);
                }
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from_uninstaller(u: &str) -> Vec<String> {
        installation_roots(None, Some(u))
    }

    #[test]
    fn constructor_uninstallers_name_their_root() {
        for (uninstall, root) in [
            (
                r#""C:\Users\Zoë O'Neil\miniforge3\Uninstall-Miniforge3.exe""#,
                r"C:\Users\Zoë O'Neil\miniforge3",
            ),
            (
                r#""C:\ProgramData\miniconda3\Uninstall-Miniconda3.exe" /S"#,
                r"C:\ProgramData\miniconda3",
            ),
            (
                r"C:\Users\me\anaconda3\uninstall-Anaconda3.EXE /S",
                r"C:\Users\me\anaconda3",
            ),
            (
                r"C:\Program Files\Mini Forge\Uninstall-Miniforge3.exe",
                r"C:\Program Files\Mini Forge",
            ),
            // `.exe` in a folder's name, unquoted.
            (
                r"C:\Users\Alex.Exeter\my.exe.dir\Uninstall-Miniforge3.exe /S",
                r"C:\Users\Alex.Exeter\my.exe.dir",
            ),
            (
                r"d:/conda/miniforge3/Uninstall-Miniforge3.exe",
                r"d:/conda/miniforge3",
            ),
            // A drive's root keeps its separator.
            (r#""C:\Uninstall-Miniforge3.exe""#, r"C:\"),
        ] {
            assert_eq!(from_uninstaller(uninstall), [root], "{uninstall}");
        }
    }

    #[test]
    fn other_programs_and_roots_off_a_local_drive_name_nothing() {
        for uninstall in [
            r#""C:\Program Files\Git\unins000.exe""#,
            r"MsiExec.exe /X{01234567-89AB-CDEF-0123-456789ABCDEF}",
            r#""C:\Python312\uninstall.exe""#,
            r#""Uninstall-Miniforge3.exe""#,
            r#""C:\broken\Uninstall-Miniforge3.exe"#,
            r".\Uninstall-Miniforge3.exe",
            r"miniforge3\Uninstall-Miniforge3.exe",
            r"C:Uninstall-Miniforge3.exe",
            r#""\\server\share\miniforge3\Uninstall-Miniforge3.exe""#,
            r"//server/share/miniforge3/Uninstall-Miniforge3.exe",
            r#""\\?\C:\miniforge3\Uninstall-Miniforge3.exe""#,
            "",
        ] {
            assert!(from_uninstaller(uninstall).is_empty(), "{uninstall}");
        }
        assert!(installation_roots(None, None).is_empty());
    }

    #[test]
    fn an_install_location_comes_first_and_only_on_a_local_drive() {
        assert_eq!(
            installation_roots(
                Some(r#""D:\conda\miniforge3\""#),
                Some(r"C:\elsewhere\Uninstall-Miniforge3.exe")
            ),
            [r"D:\conda\miniforge3", r"C:\elsewhere"]
        );
        // The same root once.
        assert_eq!(
            installation_roots(Some(r"C:\m\"), Some(r"C:\m\Uninstall-Miniforge3.exe")),
            [r"C:\m"]
        );
        // Empty, quoted-empty, a bare separator, a bare drive, a share:
        // no location, the uninstaller's folder still counts.
        for location in [
            "  ",
            r#""""#,
            r"\",
            "/",
            r#""\""#,
            "C:",
            r"\\server\conda",
            "conda",
        ] {
            assert_eq!(
                installation_roots(Some(location), Some(r"C:\m\Uninstall-Miniforge3.exe")),
                [r"C:\m"],
                "{location:?}"
            );
        }
        assert_eq!(installation_roots(Some(r"C:\"), None), [r"C:\"]);
    }

    #[test]
    fn launchers_are_scripts_conda_exe_then_condabin_conda_bat() {
        let [exe, bat] = launchers("root");
        assert_eq!(exe, PathBuf::from("root").join("Scripts").join("conda.exe"));
        assert_eq!(
            bat,
            PathBuf::from("root").join("condabin").join("conda.bat")
        );
    }

    #[cfg(not(windows))]
    #[test]
    fn nothing_is_registered_off_windows() {
        assert!(registered_condas().is_empty());
    }
}
