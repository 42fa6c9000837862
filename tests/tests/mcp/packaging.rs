//! The distribution files: `server.json` (MCP registry), `bundle/manifest.json`
//! (MCP bundle), `pyproject.toml` (the wheel), against their schemas, the
//! server's real command line and the workspace version.
//!
//! * `server.json` is validated against the registry's published schema,
//!   vendored in `tests/fixtures/schemas/mcp-registry/` (source and licence
//!   noted there), and must list every flag of `conda-mcp` with a
//!   description, nothing else.
//! * `bundle/manifest.json` is validated by the official bundle CLI
//!   (`mcpb validate`, npm package `@anthropic-ai/mcpb`, installed from npm
//!   into a temporary folder). Where `npm` is absent that test says so and
//!   passes; everything else here runs everywhere.
//! * `bundle/build.sh` packs the built binaries; the unpacked bundle's
//!   server passes `conda-mcp check` against the stand-in conda with the
//!   worker found next to it.
//! * Every version equals the workspace's (this crate's `CARGO_PKG_VERSION`,
//!   inherited from `[workspace.package]`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use clap::CommandFactory;
use conda_mcp_server::cli::Cli;
use conda_mcp_tests::paths::workspace_root;
use conda_mcp_tests::{bins, standin::StandinPrefix};
use serde_json::Value;

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The `@anthropic-ai/mcpb` release the manifest is validated with.
const MCPB_PACKAGE: &str = "@anthropic-ai/mcpb@2.1.2";

fn json_file(rel: &str) -> Value {
    let p = workspace_root().join(rel);
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// Long flags of `conda-mcp` (without `--help`/`--version`) and whether
/// each takes a value, straight from the clap definition.
fn server_flags() -> Vec<(String, clap::Command, clap::Arg)> {
    let cmd = Cli::command();
    cmd.get_arguments()
        .filter(|a| !matches!(a.get_id().as_str(), "help" | "version"))
        .filter_map(|a| {
            a.get_long()
                .map(|l| (format!("--{l}"), cmd.clone(), a.clone()))
        })
        .collect()
}

fn registry_schema_validator() -> jsonschema::Validator {
    let schema = json_file("tests/fixtures/schemas/mcp-registry/server.schema.json");
    jsonschema::validator_for(&schema).expect("the vendored registry schema compiles")
}

#[test]
fn server_json_is_valid_against_the_registry_schema() {
    let validator = registry_schema_validator();
    let doc = json_file("server.json");
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "server.json: {errors:#?}");
    // The schema really constrains: a broken copy is refused.
    let mut broken = doc.clone();
    broken["packages"][0]["version"] = Value::from("latest");
    broken["name"] = Value::from("no-slash");
    assert!(
        validator.iter_errors(&broken).count() >= 2,
        "the vendored schema accepted an invalid server.json"
    );
    assert_eq!(
        doc["$schema"],
        json_file("tests/fixtures/schemas/mcp-registry/server.schema.json")["$id"],
        "server.json's $schema must name the vendored schema"
    );
}

#[test]
fn server_json_describes_the_pypi_package_over_stdio_with_uvx() {
    let doc = json_file("server.json");
    let packages = doc["packages"].as_array().expect("packages");
    assert_eq!(packages.len(), 1);
    let p = &packages[0];
    assert_eq!(p["registryType"], "pypi");
    assert_eq!(p["identifier"], "conda-mcp");
    assert_eq!(p["runtimeHint"], "uvx");
    assert_eq!(p["transport"]["type"], "stdio");
    let pyproject =
        std::fs::read_to_string(workspace_root().join("pyproject.toml")).expect("pyproject");
    assert!(
        pyproject.contains("name = \"conda-mcp\""),
        "the PyPI name in server.json must be pyproject.toml's"
    );
}

#[test]
fn server_json_lists_every_flag_with_its_description() {
    let doc = json_file("server.json");
    let args = doc["packages"][0]["packageArguments"]
        .as_array()
        .expect("packageArguments");
    let listed: BTreeSet<String> = args
        .iter()
        .map(|a| a["name"].as_str().expect("a named argument").to_owned())
        .collect();
    assert_eq!(listed.len(), args.len(), "a flag is listed twice");
    let flags = server_flags();
    let defined: BTreeSet<String> = flags.iter().map(|(f, _, _)| f.clone()).collect();
    let missing: Vec<&String> = defined.difference(&listed).collect();
    let extra: Vec<&String> = listed.difference(&defined).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "server.json must list exactly the flags of conda-mcp: add {missing:?} to \
         packages[0].packageArguments (type named, description, format/choices/default), \
         remove {extra:?}"
    );
    for (flag, _, arg) in &flags {
        let entry = args
            .iter()
            .find(|a| a["name"] == flag.as_str())
            .expect("listed");
        assert_eq!(entry["type"], "named", "{flag}");
        let desc = entry["description"].as_str().unwrap_or("");
        assert!(desc.len() >= 20, "{flag}: describe it in server.json");
        let choices: Vec<String> = arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| v.get_name().to_owned())
            .collect();
        let takes_value = arg.get_action().takes_values();
        let is_bool_value = choices == ["true", "false"];
        if !takes_value {
            assert!(
                entry.get("format").is_none() && entry.get("choices").is_none(),
                "{flag} takes no value: no format or choices in server.json"
            );
        } else if is_bool_value {
            assert_eq!(entry["format"], "boolean", "{flag}");
        } else if !choices.is_empty() {
            let listed: Vec<String> = entry["choices"]
                .as_array()
                .unwrap_or_else(|| panic!("{flag}: list its choices"))
                .iter()
                .map(|v| v.as_str().unwrap_or("").to_owned())
                .collect();
            assert_eq!(listed, choices, "{flag}: choices differ from the CLI's");
        }
        if let Some(default) = arg.get_default_values().first().filter(|_| takes_value) {
            assert_eq!(
                entry["default"].as_str(),
                default.to_str(),
                "{flag}: default differs from the CLI's"
            );
        }
    }
}

#[test]
fn versions_equal_the_workspace_version() {
    let server = json_file("server.json");
    assert_eq!(server["version"], VERSION, "server.json version");
    assert_eq!(
        server["packages"][0]["version"], VERSION,
        "server.json packages[0].version"
    );
    let manifest = json_file("bundle/manifest.json");
    assert_eq!(manifest["version"], VERSION, "bundle/manifest.json version");
    // The wheel takes its version from Cargo (maturin), never its own.
    let pyproject =
        std::fs::read_to_string(workspace_root().join("pyproject.toml")).expect("pyproject");
    assert!(
        pyproject.contains("dynamic = [\"version\"]"),
        "pyproject.toml: version must be dynamic"
    );
    assert!(
        !pyproject
            .lines()
            .any(|l| l.trim_start().starts_with("version =")),
        "pyproject.toml must not pin a version"
    );
    // The conda recipe states it once, in its context.
    let recipe =
        std::fs::read_to_string(workspace_root().join("recipe/recipe.yaml")).expect("recipe");
    assert!(
        recipe
            .lines()
            .any(|l| l.trim() == format!("version: \"{VERSION}\"")),
        "recipe/recipe.yaml: context.version must be {VERSION}"
    );
    // The workspace's own path dependencies carry a version (for
    // cargo-deny); it is the workspace's too.
    let cargo = std::fs::read_to_string(workspace_root().join("Cargo.toml")).expect("Cargo.toml");
    for krate in ["conda-mcp-shared", "conda-mcp-worker"] {
        let line = cargo
            .lines()
            .find(|l| l.starts_with(&format!("{krate} =")))
            .unwrap_or_else(|| panic!("Cargo.toml: no {krate} in [workspace.dependencies]"));
        assert!(
            line.contains(&format!("version = \"{VERSION}\"")),
            "Cargo.toml: {krate}'s version must be {VERSION}: {line}"
        );
    }
}

#[test]
fn manifest_maps_user_config_onto_real_flags() {
    let m = json_file("bundle/manifest.json");
    assert_eq!(m["server"]["type"], "binary");
    assert_eq!(m["server"]["entry_point"], "server/conda-mcp");
    let args: Vec<&str> = m["server"]["mcp_config"]["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("string"))
        .collect();
    let config = m["user_config"].as_object().expect("user_config");
    let keys: BTreeSet<&str> = config.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        BTreeSet::from(["allow_exec", "allow_write", "approve_writes", "conda_exe"]),
        "user_config: the conda path and the three policy options"
    );
    for key in &keys {
        assert!(
            args.iter()
                .any(|a| a.contains(&format!("${{user_config.{key}}}"))),
            "user_config.{key} is not used in mcp_config.args"
        );
    }
    // The arguments, with the settings substituted as the host would, parse
    // with the server's own command line and mean what the settings say;
    // "Allow changes" and "Ask me before each change" together are the
    // CLI's usage error (exit status 2, naming both flags), as the two
    // settings' descriptions tell the person.
    for bits in 0..8u8 {
        let (write, approve, exec) = (bits & 1 != 0, bits & 2 != 0, bits & 4 != 0);
        let argv: Vec<String> = args
            .iter()
            .map(|a| {
                a.replace("${user_config.conda_exe}", "/opt/conda/bin/conda")
                    .replace("${user_config.allow_write}", &write.to_string())
                    .replace("${user_config.approve_writes}", &approve.to_string())
                    .replace("${user_config.allow_exec}", &exec.to_string())
            })
            .collect();
        let parsed = conda_mcp_server::cli::parse_from(
            std::iter::once("conda-mcp".to_owned()).chain(argv.iter().cloned()),
        );
        if write && approve {
            let e = parsed.expect_err("both ways of allowing changes");
            assert_eq!(e.exit_code(), 2, "{argv:?}");
            let text = e.to_string();
            assert!(
                text.contains("--approve-writes") && text.contains("--allow-write"),
                "{text}"
            );
            continue;
        }
        let conda_mcp_server::cli::CommandLine { mode, cli, .. } =
            parsed.unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        assert_eq!(mode, conda_mcp_server::cli::Mode::Serve);
        assert_eq!(
            cli.conda_exe.as_deref(),
            Some(Path::new("/opt/conda/bin/conda"))
        );
        assert_eq!(
            (cli.allow_write, cli.approve_writes, cli.allow_exec),
            (write, approve, exec),
            "{argv:?}"
        );
    }
    for (one, other) in [
        ("allow_write", "approve_writes"),
        ("approve_writes", "allow_write"),
    ] {
        let description = config[one]["description"].as_str().unwrap_or("");
        let title = config[other]["title"].as_str().expect("title");
        assert!(
            description.contains(&format!("\"{title}\"")) && description.contains("not both"),
            "{one}'s description names {other}'s setting as exclusive: {description}"
        );
    }
}

/// The bundle CLI installed from npm into a temporary folder (once per test
/// process): the path of its cli.js, or `None` after
/// [`missing`](conda_mcp_tests::tiers::missing) for `test` when npm is
/// absent or cannot install it (the `network` tier: the npm registry).
fn mcpb_cli(test: &str) -> Option<&'static Path> {
    static CLI: OnceLock<Result<(tempfile::TempDir, PathBuf), String>> = OnceLock::new();
    let got = CLI.get_or_init(|| {
        let npm_there = Command::new("npm")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !npm_there {
            return Err(format!(
                "npm is absent, so the official MCP bundle CLI ({MCPB_PACKAGE}) cannot be installed"
            ));
        }
        let dir = tempfile::Builder::new()
            .prefix("conda-mcp-mcpb-")
            .tempdir()
            .expect("tempdir");
        let out = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
            .arg(dir.path())
            .arg(MCPB_PACKAGE)
            .output()
            .expect("npm install");
        if !out.status.success() {
            return Err(format!(
                "npm install {MCPB_PACKAGE} failed (is the npm registry reachable?): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        let cli = dir
            .path()
            .join("node_modules/@anthropic-ai/mcpb/dist/cli/cli.js");
        assert!(cli.is_file(), "{} missing after npm install", cli.display());
        Ok((dir, cli))
    });
    match got {
        Ok((_dir, cli)) => Some(cli.as_path()),
        Err(why) => {
            conda_mcp_tests::tiers::missing(conda_mcp_tests::tiers::Tier::Network, test, why);
            None
        }
    }
}

fn mcpb(cli: &Path, args: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new("node")
        .arg(cli)
        .args(args)
        .output()
        .expect("node runs the mcpb CLI")
}

#[test]
fn manifest_passes_the_official_bundle_validator() {
    let Some(cli) = mcpb_cli("packaging::manifest_passes_the_official_bundle_validator") else {
        return;
    };
    let manifest = workspace_root().join("bundle/manifest.json");
    let out = mcpb(cli, &["validate".as_ref(), manifest.as_os_str()]);
    assert!(
        out.status.success(),
        "mcpb validate bundle/manifest.json failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The validator really validates: a manifest with an unknown server
    // type is refused.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut broken = json_file("bundle/manifest.json");
    broken["server"]["type"] = Value::from("exe");
    let bad = dir.path().join("manifest.json");
    std::fs::write(&bad, broken.to_string()).expect("write");
    let out = mcpb(cli, &["validate".as_ref(), bad.as_os_str()]);
    assert!(
        !out.status.success(),
        "mcpb validate accepted server.type exe"
    );
}

#[test]
fn bundle_script_packs_a_bundle_whose_server_finds_its_worker() {
    let root = workspace_root();
    let out = Command::new("bash")
        .arg(root.join("bundle/build.sh"))
        .env("CONDA_MCP_BUNDLE_BIN_DIR", bins::bin_dir())
        .output()
        .expect("bundle/build.sh");
    assert!(
        out.status.success(),
        "bundle/build.sh failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rel = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let arch = std::env::consts::ARCH;
    assert_eq!(
        rel,
        format!("target/bundle/conda-mcp-{VERSION}-linux-{arch}.mcpb")
    );
    let bundle = root.join(&rel);

    // Unpack it as a host would (the official CLI where npm is there, else
    // Python's zipfile), then run the unpacked server's `check`.
    let dir = tempfile::Builder::new()
        .prefix("conda-mcp-bundle-")
        .tempdir()
        .expect("tempdir");
    let unpacked = dir.path().join("unpacked");
    if let Some(cli) =
        mcpb_cli("packaging::bundle_script_packs_a_bundle_whose_server_finds_its_worker")
    {
        let info = mcpb(cli, &["info".as_ref(), bundle.as_os_str()]);
        assert!(info.status.success(), "mcpb info failed");
        let o = mcpb(
            cli,
            &["unpack".as_ref(), bundle.as_os_str(), unpacked.as_os_str()],
        );
        assert!(
            o.status.success(),
            "mcpb unpack: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    } else {
        let o = Command::new("python3")
            .args(["-c", "import sys, zipfile, os\nz = zipfile.ZipFile(sys.argv[1])\nfor i in z.infolist():\n    p = z.extract(i, sys.argv[2])\n    os.chmod(p, (i.external_attr >> 16) & 0o777 or 0o644)"])
            .arg(&bundle)
            .arg(&unpacked)
            .output()
            .expect("python3 unzip");
        assert!(
            o.status.success(),
            "unzip: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(unpacked.join("manifest.json")).expect("manifest in bundle"),
    )
    .expect("json");
    assert_eq!(manifest["version"], VERSION);
    let server = unpacked.join("server/conda-mcp");
    let standin = StandinPrefix::standard();
    let out = Command::new(&server)
        .arg("check")
        .arg("--conda-exe")
        .arg(&standin.conda_exe)
        .env("XDG_CACHE_HOME", dir.path().join("cache"))
        .env_remove("CONDA_EXE")
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("run the unpacked server");
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "check from the bundle failed:\n{report}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let worker = unpacked.join("server/conda-mcp-worker");
    assert!(
        report.contains(&format!("binary        {}", worker.display())),
        "the bundle's server must use the bundle's worker:\n{report}"
    );
    let _ = std::fs::remove_file(&bundle);
}

/// `bundle/build.sh` packs one platform per bundle: for a Windows and a
/// macOS target (the binaries of a cross build, `tests/tools/cross/setup.sh`)
/// the bundle is named for the platform, its manifest lists that platform
/// alone, names the executable that is in the zip (`conda-mcp.exe` on
/// Windows, through `mcp_config.platform_overrides`), and passes the
/// official validator. The packer copies bytes and never runs them, so the
/// host's own binaries stand in for the cross builds here; `CONDA_MCP_CROSS=1 .ci/run` packs
/// the real cross-built ones and runs the Windows one under wine.
#[test]
fn bundle_script_packs_one_platform_per_bundle() {
    let root = workspace_root();
    for (target, platform, suffix) in [
        ("x86_64-pc-windows-gnu", "win32", ".exe"),
        ("aarch64-apple-darwin", "darwin", ""),
    ] {
        let bins_dir = tempfile::tempdir().expect("tempdir");
        for exe in ["conda-mcp", "conda-mcp-worker"] {
            std::fs::copy(
                bins::bin_dir().join(exe),
                bins_dir.path().join(format!("{exe}{suffix}")),
            )
            .expect("copy a binary");
        }
        let out = Command::new("bash")
            .arg(root.join("bundle/build.sh"))
            .env("CONDA_MCP_BUNDLE_BIN_DIR", bins_dir.path())
            .env("CONDA_MCP_BUNDLE_TARGET", target)
            .output()
            .expect("bundle/build.sh");
        assert!(
            out.status.success(),
            "bundle/build.sh for {target} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let arch = target.split('-').next().expect("arch");
        let rel = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        assert_eq!(
            rel,
            format!("target/bundle/conda-mcp-{VERSION}-{platform}-{arch}.mcpb")
        );
        let bundle = root.join(&rel);
        let mut zip = zip_entries(&bundle);
        let manifest: Value =
            serde_json::from_slice(&zip.remove("manifest.json").expect("manifest.json"))
                .expect("manifest json");
        assert_eq!(
            manifest["compatibility"]["platforms"],
            serde_json::json!([platform])
        );
        let entry = manifest["server"]["entry_point"].as_str().expect("entry");
        assert_eq!(entry, format!("server/conda-mcp{suffix}"));
        assert!(zip.contains_key(entry), "{entry} is not in the bundle");
        assert!(zip.contains_key(&format!("server/conda-mcp-worker{suffix}")));
        let command = manifest["server"]["mcp_config"]["platform_overrides"][platform]["command"]
            .as_str()
            .unwrap_or(
                manifest["server"]["mcp_config"]["command"]
                    .as_str()
                    .expect("command"),
            );
        assert_eq!(command, format!("${{__dirname}}/{entry}"));
        if let Some(cli) = mcpb_cli("packaging::bundle_script_packs_one_platform_per_bundle") {
            let dir = tempfile::tempdir().expect("tempdir");
            let packed = dir.path().join("manifest.json");
            std::fs::write(&packed, manifest.to_string()).expect("write");
            let v = mcpb(cli, &["validate".as_ref(), packed.as_os_str()]);
            assert!(
                v.status.success(),
                "mcpb validate of the {platform} bundle's manifest:\n{}{}",
                String::from_utf8_lossy(&v.stdout),
                String::from_utf8_lossy(&v.stderr)
            );
        }
        let _ = std::fs::remove_file(&bundle);
    }
}

/// The entries of a zip file by name, read with Python's zipfile (the
/// tests have no zip crate; the bundle script writes with the same module).
/// Only the manifest's and README's bytes are read; the binaries' entries
/// are listed empty.
fn zip_entries(zip: &Path) -> std::collections::HashMap<String, Vec<u8>> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile, json, base64\nz = zipfile.ZipFile(sys.argv[1])\nprint(json.dumps({i.filename: base64.b64encode(b'' if i.filename.startswith('server/') else z.read(i)).decode() for i in z.infolist()}))",
        ])
        .arg(zip)
        .output()
        .expect("python3 zipfile");
    assert!(
        out.status.success(),
        "zipfile: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let map: std::collections::HashMap<String, String> =
        serde_json::from_slice(&out.stdout).expect("json");
    use base64::Engine as _;
    map.into_iter()
        .map(|(k, v)| {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(v)
                .expect("base64");
            (k, bytes)
        })
        .collect()
}
