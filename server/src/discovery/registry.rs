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
//! other program's entry holds neither and is passed over. A root on a
//! network share (`\\server\share\...`) is passed over too: looking at it
//! could wait on the network, and this is only the last resort. The user's
//! own entries come first, then the machine's, each hive in the registry's
//! order of names.
//!
//! Only the registry reading is Windows code; the parsing of an entry is
//! plain text and tested everywhere.

use std::path::PathBuf;

/// The installation root an uninstall entry names: its `InstallLocation`
/// when set, else the folder of a constructor uninstaller
/// (`Uninstall-<NAME>.exe`, quoted or not, possibly followed by flags such
/// as `/S`) in its `UninstallString`. `None` for any other program's
/// entry and for a root on a network share. The root is returned as
/// written (a Windows path, `\` or `/` separated); nothing is checked on
/// disk.
pub fn installation_root(
    install_location: Option<&str>,
    uninstall: Option<&str>,
) -> Option<String> {
    let root = root_as_written(install_location, uninstall)?;
    let on_a_share = root.starts_with(r"\\") || root.starts_with("//");
    (!on_a_share).then_some(root)
}

fn root_as_written(install_location: Option<&str>, uninstall: Option<&str>) -> Option<String> {
    if let Some(loc) = install_location.map(str::trim).filter(|l| !l.is_empty()) {
        return Some(
            loc.trim_matches('"')
                .trim_end_matches(['\\', '/'])
                .to_owned(),
        );
    }
    let s = uninstall?.trim();
    let exe = match s.strip_prefix('"') {
        Some(rest) => &rest[..rest.find('"')?],
        None => {
            // Unquoted: the path runs to the first `.exe` (it may hold
            // spaces; flags follow it).
            let end = s.to_ascii_lowercase().find(".exe")? + ".exe".len();
            &s[..end]
        }
    };
    let cut = exe.rfind(['\\', '/'])?;
    let (root, file) = (&exe[..cut], &exe[cut + 1..]);
    let lower = file.to_ascii_lowercase();
    (lower.starts_with("uninstall-") && lower.ends_with(".exe") && !root.is_empty())
        .then(|| root.to_owned())
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
                let Some(root) =
                    super::installation_root(location.as_deref(), uninstall_string.as_deref())
                else {
                    continue;
                };
                if let Some(l) = super::launchers(&root).into_iter().find(|l| l.is_file())
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
        ] {
            assert_eq!(
                installation_root(None, Some(uninstall)).as_deref(),
                Some(root),
                "{uninstall}"
            );
        }
    }

    #[test]
    fn other_programs_entries_name_no_root() {
        for uninstall in [
            r#""C:\Program Files\Git\unins000.exe""#,
            r"MsiExec.exe /X{01234567-89AB-CDEF-0123-456789ABCDEF}",
            r#""C:\Python312\uninstall.exe""#,
            r#""Uninstall-Miniforge3.exe""#,
            r#""C:\broken\Uninstall-Miniforge3.exe"#,
            r#""\\server\share\miniforge3\Uninstall-Miniforge3.exe""#,
            r"//server/share/miniforge3/Uninstall-Miniforge3.exe",
            "",
        ] {
            assert_eq!(
                installation_root(None, Some(uninstall)),
                None,
                "{uninstall}"
            );
        }
        assert_eq!(installation_root(None, None), None);
    }

    #[test]
    fn an_install_location_wins_and_loses_its_quotes_and_last_separator() {
        assert_eq!(
            installation_root(
                Some(r#""D:\conda\miniforge3\""#),
                Some(r"C:\elsewhere\Uninstall-Miniforge3.exe")
            )
            .as_deref(),
            Some(r"D:\conda\miniforge3")
        );
        // Nor on a share.
        assert_eq!(
            installation_root(
                Some(r"\\server\conda"),
                Some(r"C:\m\Uninstall-Miniforge3.exe")
            ),
            None
        );
        // An empty InstallLocation is no location.
        assert_eq!(
            installation_root(Some("  "), Some(r"C:\m\Uninstall-Miniforge3.exe")).as_deref(),
            Some(r"C:\m")
        );
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
