//! conda-completion in a stand-in prefix, for the `conda_cli_command`
//! tests: the real plugin (with msgpack, platformdirs and conda-completer)
//! installed by `pip --no-deps` from PyPI, and its manifest written through
//! its own API.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::standin::{StandinPrefix, host_python};

/// Installs conda-completion into the prefix; `false` when pip cannot fetch
/// it, after [`crate::tiers::missing`] (a skip, or a failure when the
/// `network` tier is declared).
pub fn install_conda_completion(prefix: &StandinPrefix) -> bool {
    let out = Command::new(host_python())
        .args(["-m", "pip", "--disable-pip-version-check", "--python"])
        .arg(&prefix.python)
        .args([
            "install",
            "--quiet",
            "--no-deps",
            "conda-completion>=0.3,<0.4",
            "conda-completer>=0.3,<0.4",
            "msgpack",
            "platformdirs",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("run pip");
    if !out.status.success() {
        crate::tiers::missing(
            crate::tiers::Tier::Network,
            "conda-completion tests",
            &format!(
                "pip could not install the plugin: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
        );
    }
    out.status.success()
}

/// Writes the manifest through the plugin's public API. The in-project
/// dump has lazy choices that raise (as a broken conda plugin's would), which
/// conda-completion's generator does not survive; they read as "no choices"
/// while the manifest is generated.
pub fn generate_manifest(prefix: &StandinPrefix, cache: &Path) {
    let script = "\
                  from conda.cli import conda_argparse as ca\n\
                  def _choices(self):\n    c = self.__dict__.get('_standin_choices')\n    return None if isinstance(c, ca._RaisingChoices) else c\n\
                  ca._get_choices = _choices\n\
                  from conda_completion.introspect import generate_manifest\n\
                  from conda_completion.manifest import write_manifest\n\
                  from conda_completion.paths import manifest_path\n\
                  from conda_completion.plugin import plugin_entry_point_hash\n\
                  write_manifest(generate_manifest(plugin_hash=plugin_entry_point_hash()), manifest_path())\n";
    let out = Command::new(&prefix.python)
        .args(["-c", script])
        .env("CONDA_COMPLETION_CACHE_DIR", cache)
        .stdin(Stdio::null())
        .output()
        .expect("run the manifest generator");
    assert!(
        out.status.success(),
        "generating the manifest failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(cache.join("completion.msgpack").is_file());
}
