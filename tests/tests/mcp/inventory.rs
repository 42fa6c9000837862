//! `conda_inventory` through the built server and rmcp's client, against
//! the stand-in conda carrying several environments (conda-meta records,
//! pip-installed packages): its rows agree with `conda env list` and
//! `conda list --json` of every environment through the same server; the
//! lookups find packages that provide an import name or a command in
//! unusual places; an environment removed or created between two calls
//! leaves no stale row; a bad query is an error that echoes nothing.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use conda_mcp_tests::inventory::{Package, PipPackage, site_packages, write_environment};
use conda_mcp_tests::mcp::{Era, Server, result_text};
use conda_mcp_tests::paths;
use conda_mcp_tests::standin::{ControlRule, StandinPrefix};
use serde_json::{Value, json};

const TOOL: &str = "conda_inventory";

/// A stand-in conda (the recorded conda 26 parser, answering `list` and
/// `env list` as conda does) with three environments: `sci` (Python 3.12,
/// pyyaml with its compiled `_yaml`, numpy with `bin/f2py`, and from pip
/// `requests` and the namespace package `zope.interface`), `old` (Python
/// 3.11, numpy 1.26, opencv's extension module `cv2`) and `win` (no
/// Python; a command under `Scripts\`).
pub(super) fn standin_with_environments() -> StandinPrefix {
    let standin = StandinPrefix::create(&paths::real_dump()).expect("stand-in");
    standin
        .set_control(&[ControlRule {
            listing: Some(true),
            ..ControlRule::default()
        }])
        .expect("control");
    write_three(&standin.prefix.join("envs"));
    standin
}

/// The three environments of [`standin_with_environments`] under `envs`.
fn write_three(envs: &Path) {
    let sp = site_packages("3.12");
    write_environment(
        &envs.join("sci"),
        &[
            Package::new(
                "python",
                "3.12.4",
                "h0_0",
                &["bin/python3.12", &format!("{sp}/README.txt")],
            ),
            Package::new(
                "pyyaml",
                "6.0.2",
                "py312_0",
                &[
                    &format!("{sp}/yaml/__init__.py"),
                    &format!("{sp}/_yaml.cpython-312-x86_64-linux-gnu.so"),
                    &format!("{sp}/PyYAML-6.0.2.dist-info/METADATA"),
                ],
            ),
            Package::new(
                "numpy",
                "2.1.0",
                "py312_0",
                &[&format!("{sp}/numpy/__init__.py"), "bin/f2py"],
            ),
        ],
        Some("3.12.4"),
        &[
            PipPackage {
                name: "requests".into(),
                version: "2.32.3".into(),
                files: vec!["requests/__init__.py".into()],
            },
            PipPackage {
                name: "zope.interface".into(),
                version: "7.0".into(),
                // A namespace package: no zope/__init__.py.
                files: vec!["zope/interface/__init__.py".into()],
            },
        ],
    );
    let sp11 = site_packages("3.11");
    write_environment(
        &envs.join("old"),
        &[
            Package::new("python", "3.11.9", "h0_0", &["bin/python3.11"]),
            Package::new("numpy", "1.26.4", "py311_0", &[]),
            Package::new(
                "opencv",
                "4.10.0",
                "py311_0",
                &[&format!("{sp11}/cv2.cpython-311-x86_64-linux-gnu.so")],
            ),
        ],
        Some("3.11.9"),
        &[],
    );
    write_environment(
        &envs.join("win"),
        &[Package::new(
            "mytool",
            "0.1",
            "0",
            &["Scripts/mytool.exe", "Scripts/mytool-script.py"],
        )],
        None,
        &[],
    );
}

/// A server for `standin` whose conda sees `home` as the home folder (no
/// `environments.txt` of the machine's user).
async fn server(standin: &StandinPrefix, home: &Path, era: Era) -> Server {
    let home = home.display().to_string();
    Server::start_with_env(&standin.conda_exe, &[], era, &[("HOME", &home)]).await
}

/// The URI templates `resources/templates/list` names.
async fn template_uris(server: &Server) -> BTreeSet<String> {
    let templates = server
        .client
        .list_all_resource_templates()
        .await
        .expect("templates");
    templates.iter().map(|t| t.uri_template.clone()).collect()
}

async fn inventory(server: &Server, args: Value) -> Value {
    let r = server.call_ok(TOOL, args).await;
    assert_ne!(r.is_error, Some(true), "{}", result_text(&r));
    r.structured_content.expect("structuredContent")
}

fn rows(answer: &Value) -> Vec<Value> {
    answer["rows"].as_array().cloned().unwrap_or_default()
}

/// `(env, prefix, name, file)` of each row.
fn hits(answer: &Value) -> BTreeSet<(String, String, String)> {
    rows(answer)
        .iter()
        .map(|r| {
            (
                r["env"].as_str().unwrap_or("").to_owned(),
                r["name"].as_str().unwrap_or("").to_owned(),
                r["file"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn set(items: &[(&str, &str, &str)]) -> BTreeSet<(String, String, String)> {
    items
        .iter()
        .map(|(a, b, c)| ((*a).to_owned(), (*b).to_owned(), (*c).to_owned()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listed_read_only_and_loaded_up_front() {
    let standin = StandinPrefix::standard();
    for args in [&[][..], &["--tool-mode", "compact"][..]] {
        let server = Server::start(&standin.conda_exe, args, Era::Initialize).await;
        let tools = server.tools().await;
        let tool = tools
            .iter()
            .find(|t| t.name == TOOL)
            .unwrap_or_else(|| panic!("listed with {args:?}"));
        let ann = tool.annotations.as_ref().expect("annotations");
        assert_eq!(ann.read_only_hint, Some(true));
        // MCP's ToolAnnotations: destructiveHint means something only when
        // readOnlyHint is false, so it is left out (tools/list budget).
        assert_eq!(ann.destructive_hint, None);
        let meta = tool.meta.as_ref().expect("_meta");
        assert_eq!(meta.get("anthropic/alwaysLoad"), Some(&json!(true)));
        server.close().await;
    }
}

/// What conda lists: its environments in order, every package of each as
/// `(prefix, name, version, build, channel)`, and each one's package count.
struct Listed {
    prefixes: Vec<String>,
    packages: BTreeSet<(String, String, String, String, String)>,
    counts: Vec<(String, u64)>,
}

impl Listed {
    /// Adds `conda list --json` of `prefix` (its parsed document).
    fn add(&mut self, prefix: &str, list: &Value) {
        let packages = list
            .as_array()
            .unwrap_or_else(|| panic!("conda list: {list}"));
        self.prefixes.push(prefix.to_owned());
        self.counts.push((prefix.to_owned(), packages.len() as u64));
        for p in packages {
            self.packages.insert((
                prefix.to_owned(),
                p["name"].as_str().expect("name").to_owned(),
                p["version"].as_str().expect("version").to_owned(),
                p["build_string"].as_str().expect("build").to_owned(),
                p["channel"].as_str().expect("channel").to_owned(),
            ));
        }
    }

    fn new() -> Self {
        Listed {
            prefixes: Vec::new(),
            packages: BTreeSet::new(),
            counts: Vec::new(),
        }
    }
}

/// The 1 + N-call way through `server`: `conda_env_list`, then
/// `conda_list` of each environment.
async fn listed_through(server: &Server) -> Listed {
    let r = server
        .call_ok("conda_env_list", json!({"json": true}))
        .await;
    let s = r.structured_content.expect("structured");
    let prefixes: Vec<String> = s["parsed_json"]["envs"]
        .as_array()
        .unwrap_or_else(|| panic!("conda env list: {s}"))
        .iter()
        .map(|p| p.as_str().expect("prefix").to_owned())
        .collect();
    let mut listed = Listed::new();
    for prefix in &prefixes {
        let r = server
            .call_ok("conda_list", json!({"prefix": prefix, "json": true}))
            .await;
        let s = r.structured_content.expect("structured");
        listed.add(prefix, &s["parsed_json"]);
    }
    listed
}

/// Checks `conda_inventory` through `server` against what conda lists:
/// the same environments, and in each the same packages (name, version,
/// build, channel; pip-installed ones included) and package count.
async fn assert_agrees(server: &Server, listed: &Listed) {
    assert!(
        listed
            .packages
            .iter()
            .any(|e| e.1 == "requests" && e.4 == "pypi"),
        "conda list shows the pip-installed package: {:?}",
        listed.packages
    );
    // The one-call way: every package of every environment.
    let answer = inventory(server, json!({"package": "*"})).await;
    assert_eq!(answer["environments"], json!(listed.prefixes.len()));
    assert_eq!(answer["truncated"], json!(false));
    let got: BTreeSet<_> = rows(&answer)
        .iter()
        .map(|r| {
            (
                r["prefix"].as_str().expect("prefix").to_owned(),
                r["name"].as_str().expect("name").to_owned(),
                r["version"].as_str().expect("version").to_owned(),
                r["build"].as_str().expect("build").to_owned(),
                r["channel"].as_str().expect("channel").to_owned(),
            )
        })
        .collect();
    assert_eq!(got, listed.packages);

    // Sizes: one row per environment, conda list's package count.
    let answer = inventory(server, json!({"sizes": true})).await;
    let sizes: Vec<(String, u64)> = rows(&answer)
        .iter()
        .map(|r| {
            (
                r["prefix"].as_str().expect("prefix").to_owned(),
                r["packages"].as_u64().expect("packages"),
            )
        })
        .collect();
    assert_eq!(sizes, listed.counts);
    let sci = rows(&answer)
        .into_iter()
        .find(|r| r["env"] == json!("sci"))
        .expect("sci");
    assert_eq!(sci["python"], json!("3.12.4"));
    assert!(sci["size_bytes"].as_u64().expect("size") > 0, "{sci}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agrees_with_env_list_and_conda_list_of_every_environment() {
    let standin = standin_with_environments();
    let home = tempfile::tempdir().expect("home");
    for era in Era::ALL {
        let server = server(&standin, home.path(), era).await;
        let listed = listed_through(&server).await;
        assert_eq!(listed.prefixes.len(), 4, "base and three");
        assert_agrees(&server, &listed).await;
        server.close().await;
    }
}

/// `python -m conda ARGS --json` of the real conda's interpreter, with
/// `CONDA_ENVS_PATH=envs`: the parsed document.
fn real_conda_json(python: &Path, envs: &Path, args: &[&str]) -> Value {
    let out = std::process::Command::new(python)
        .args(["-m", "conda"])
        .args(args)
        .arg("--json")
        .env("CONDA_ENVS_PATH", envs)
        .output()
        .expect("run conda");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "conda {args:?}: {e}: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

/// The real tier: a real conda whose envs directory (`CONDA_ENVS_PATH`)
/// holds the three environments written as conda leaves them; the
/// inventory agrees with conda's own `info --envs` and `list --json` of
/// each environment it knows (run directly with conda's interpreter:
/// `python -m conda`, as the worker runs conda on Windows).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_conda_inventory_agrees_with_conda_list() {
    let Some(conda) = conda_mcp_tests::tiers::real_conda(module_path!()) else {
        return;
    };
    let python = conda
        .parent()
        .map(|bin| bin.join("python"))
        .filter(|p| p.exists())
        .expect("the real conda's bin/python");
    let dir = tempfile::tempdir().expect("tempdir");
    let envs = dir.path().join("envs");
    write_three(&envs);
    let envs_path = envs.display().to_string();
    let server = Server::start_with_env(
        &conda,
        &["--timeout", "600"],
        Era::Initialize,
        &[("CONDA_ENVS_PATH", &envs_path)],
    )
    .await;
    let info = real_conda_json(&python, &envs, &["info", "--envs"]);
    let mut listed = Listed::new();
    for prefix in info["envs"].as_array().expect("envs") {
        let prefix = prefix.as_str().expect("prefix");
        listed.add(
            prefix,
            &real_conda_json(&python, &envs, &["list", "-p", prefix]),
        );
    }
    assert!(
        listed.prefixes.len() >= 4,
        "base and three: {:?}",
        listed.prefixes
    );
    assert_agrees(&server, &listed).await;
    let a = inventory(&server, json!({"import_name": "zope.interface"})).await;
    assert_eq!(rows(&a).len(), 1, "{a}");
    assert_eq!(rows(&a)[0]["channel"], json!("pypi"));
    let a = inventory(&server, json!({"import_name": "_yaml"})).await;
    assert_eq!(rows(&a)[0]["name"], json!("pyyaml"), "{a}");
    let a = inventory(&server, json!({"command": "mytool"})).await;
    assert_eq!(rows(&a)[0]["file"], json!("Scripts/mytool.exe"), "{a}");
    let r = server
        .call_ok(TOOL, json!({"package": "numpy[version="}))
        .await;
    assert_eq!(r.is_error, Some(true), "conda's own MatchSpec refuses it");
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookups_find_packages_in_unusual_places() {
    let standin = standin_with_environments();
    let home = tempfile::tempdir().expect("home");
    let server = server(&standin, home.path(), Era::Initialize).await;
    let sp = site_packages("3.12");

    let a = inventory(&server, json!({"package": "numpy"})).await;
    let versions: BTreeSet<(String, String)> = rows(&a)
        .iter()
        .map(|r| {
            (
                r["env"].as_str().unwrap_or("").to_owned(),
                r["version"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        versions,
        [("old", "1.26.4"), ("sci", "2.1.0")]
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    );
    let a = inventory(&server, json!({"package": "numpy>=2"})).await;
    assert_eq!(rows(&a).len(), 1, "{a}");
    let a = inventory(&server, json!({"python": "3.12"})).await;
    assert_eq!(rows(&a).len(), 1, "{a}");
    assert_eq!(rows(&a)[0]["env"], json!("sci"));
    assert_eq!(rows(&a)[0]["version"], json!("3.12.4"));

    // A regular package, a compiled module, a namespace package from pip.
    let a = inventory(&server, json!({"import_name": "yaml"})).await;
    assert_eq!(
        hits(&a),
        set(&[("sci", "pyyaml", &format!("{sp}/yaml/__init__.py"))])
    );
    let a = inventory(&server, json!({"import_name": "_yaml"})).await;
    assert_eq!(
        hits(&a),
        set(&[(
            "sci",
            "pyyaml",
            &format!("{sp}/_yaml.cpython-312-x86_64-linux-gnu.so")
        )])
    );
    let a = inventory(&server, json!({"import_name": "cv2"})).await;
    assert_eq!(
        hits(&a),
        set(&[(
            "old",
            "opencv",
            &format!(
                "{}/cv2.cpython-311-x86_64-linux-gnu.so",
                site_packages("3.11")
            )
        )])
    );
    let a = inventory(&server, json!({"import_name": "zope.interface"})).await;
    assert_eq!(
        hits(&a),
        set(&[(
            "sci",
            "zope-interface",
            &format!("{sp}/zope/interface/__init__.py")
        )])
    );
    assert_eq!(rows(&a)[0]["channel"], json!("pypi"));
    // Commands under bin/ and Scripts\.
    let a = inventory(&server, json!({"command": "f2py"})).await;
    assert_eq!(hits(&a), set(&[("sci", "numpy", "bin/f2py")]));
    let a = inventory(&server, json!({"command": "mytool"})).await;
    assert_eq!(hits(&a), set(&[("win", "mytool", "Scripts/mytool.exe")]));
    // A file, absolute or relative.
    let abs = standin.prefix.join("envs/old/bin/python3.11");
    let a = inventory(&server, json!({"path": abs})).await;
    assert_eq!(hits(&a), set(&[("old", "python", "bin/python3.11")]));
    let a = inventory(&server, json!({"path": "bin/f2py"})).await;
    assert_eq!(hits(&a), set(&[("sci", "numpy", "bin/f2py")]));
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_matched_and_bad_queries_say_so_without_echo() {
    let standin = standin_with_environments();
    let home = tempfile::tempdir().expect("home");
    let server = server(&standin, home.path(), Era::Initialize).await;
    let r = server
        .call_ok(TOOL, json!({"package": "no-such-package-anywhere"}))
        .await;
    assert_ne!(r.is_error, Some(true));
    let s = r.structured_content.as_ref().expect("structured");
    assert_eq!(s["matched"], json!(0));
    assert!(result_text(&r).contains("nothing matched in 4 environments"));

    let secret = "zz-secret-zz";
    for (args, path) in [
        (json!({"package": format!("{secret}[version=")}), "/package"),
        (
            json!({"import_name": format!("{secret}/x")}),
            "/import_name",
        ),
        (json!({"package": "a", "command": secret}), "/"),
        (json!({}), "/"),
    ] {
        let r = server.call_ok(TOOL, args).await;
        assert_eq!(r.is_error, Some(true));
        let s = r.structured_content.as_ref().expect("structured");
        assert_eq!(s["error"]["code"], json!("invalid_arguments"), "{s}");
        let text = result_text(&r);
        assert!(text.contains(path), "{text}");
        assert!(!text.contains(secret), "echoed: {text}");
        assert!(!s.to_string().contains(secret), "echoed: {s}");
    }
    server.close().await;
}

fn remove(prefix: &Path) {
    std::fs::remove_dir_all(prefix).expect("remove the environment");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_environment_removed_or_created_between_calls_leaves_no_stale_row() {
    let standin = standin_with_environments();
    let home = tempfile::tempdir().expect("home");
    // One more, known only through environments.txt (outside the envs
    // directories), as conda registers a --prefix environment.
    let outside = tempfile::tempdir().expect("outside");
    let extra: PathBuf = outside.path().join("extra");
    write_environment(
        &extra,
        &[Package::new("numpy", "2.2.0", "py313_0", &[])],
        None,
        &[],
    );
    std::fs::create_dir_all(home.path().join(".conda")).expect(".conda");
    std::fs::write(
        home.path().join(".conda/environments.txt"),
        format!("{}\n", extra.display()),
    )
    .expect("environments.txt");
    let server = server(&standin, home.path(), Era::Initialize).await;
    let a = inventory(&server, json!({"package": "numpy"})).await;
    let envs: BTreeSet<String> = rows(&a)
        .iter()
        .map(|r| r["prefix"].as_str().unwrap_or("").to_owned())
        .collect();
    assert!(envs.contains(&extra.display().to_string()), "{a}");
    let extra_row = rows(&a)
        .into_iter()
        .find(|r| r["prefix"] == json!(extra.display().to_string()))
        .expect("extra");
    assert_eq!(extra_row["env"], json!(""), "known by prefix only");
    assert_eq!(a["environments"], json!(5));

    remove(&standin.prefix.join("envs/old"));
    remove(&extra);
    write_environment(
        &standin.prefix.join("envs/new"),
        &[Package::new("numpy", "2.3.0", "py313_0", &[])],
        None,
        &[],
    );
    let a = inventory(&server, json!({"package": "numpy"})).await;
    let got: BTreeSet<(String, String)> = rows(&a)
        .iter()
        .map(|r| {
            (
                r["env"].as_str().unwrap_or("").to_owned(),
                r["version"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [("new", "2.3.0"), ("sci", "2.1.0")]
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect(),
        "{a}"
    );
    assert_eq!(a["environments"], json!(4));
    assert!(a.get("skipped").is_none(), "{a}");
    // Changes nothing: conda's reader would have dropped the gone prefix
    // from environments.txt.
    assert_eq!(
        std::fs::read_to_string(home.path().join(".conda/environments.txt")).expect("kept"),
        format!("{}\n", extra.display())
    );
    server.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn environments_as_resources_listed_read_and_completed_in_both_eras() {
    use rmcp::model::{ArgumentInfo, CompleteRequestParams, Reference};
    let standin = standin_with_environments();
    let home = tempfile::tempdir().expect("home");
    for era in Era::ALL {
        let server = server(&standin, home.path(), era).await;
        let resources = server.client.list_all_resources().await.expect("list");
        assert!(
            resources.iter().any(|r| r.uri == "conda://environments"),
            "{resources:?}"
        );
        let uris = template_uris(&server).await;
        assert_eq!(
            uris,
            [
                "conda://environments/{name}/export",
                "conda://environments/{name}/history",
                "conda://environments/{name}/packages",
            ]
            .iter()
            .map(|s| (*s).to_owned())
            .collect()
        );

        // The list: one row per environment.
        let (text, mime) = server
            .read_text("conda://environments")
            .await
            .expect("read the list");
        assert_eq!(mime.as_deref(), Some("application/json"));
        let list: Value = serde_json::from_str(&text).expect("JSON");
        let names: BTreeSet<String> = rows(&list)
            .iter()
            .filter_map(|r| r["env"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(
            names,
            ["base", "old", "sci", "win"].map(str::to_owned).into()
        );

        // Each kind of one environment.
        let (text, mime) = server
            .read_text("conda://environments/sci/packages")
            .await
            .expect("packages");
        assert_eq!(mime.as_deref(), Some("application/json"));
        let packages: Value = serde_json::from_str(&text).expect("JSON");
        let names: BTreeSet<&str> = packages
            .as_array()
            .expect("array")
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert_eq!(
            names,
            ["numpy", "python", "pyyaml", "requests", "zope-interface"]
                .into_iter()
                .collect()
        );
        let (text, mime) = server
            .read_text("conda://environments/sci/export")
            .await
            .expect("export");
        assert_eq!(mime.as_deref(), Some("application/yaml"));
        assert!(text.starts_with("name: sci\n"), "{text}");
        assert!(text.contains("  - numpy=2.1.0=py312_0\n"), "{text}");
        assert!(text.contains("      - requests==2.32.3\n"), "{text}");
        let (text, _) = server
            .read_text("conda://environments/old/history")
            .await
            .expect("history");
        let history: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(history[0]["rev"], json!(0), "{history}");
        assert!(
            history[0]["install"]
                .as_array()
                .expect("install")
                .contains(&json!("conda-forge/linux-64::opencv-4.10.0-py311_0")),
            "{history}"
        );

        // An environment that does not exist, a URI of no resource: errors
        // that do not repeat it.
        for uri in [
            "conda://environments/zz-secret-zz/packages",
            "conda://environments/zz-secret-zz/files",
        ] {
            let e = server.read_text(uri).await.expect_err("no resource");
            let text = e.to_string();
            assert!(!text.contains("zz-secret-zz"), "echoed: {text}");
        }

        // The name completes from the environments conda keeps.
        let done = server
            .client
            .complete(CompleteRequestParams::new(
                Reference::for_resource("conda://environments/{name}/packages"),
                ArgumentInfo::new("name", "s"),
            ))
            .await
            .expect("complete");
        assert_eq!(done.completion.values, vec!["sci".to_owned()]);
        let done = server
            .client
            .complete(CompleteRequestParams::new(
                Reference::for_resource("conda://environments/{name}/export"),
                ArgumentInfo::new("name", ""),
            ))
            .await
            .expect("complete");
        assert_eq!(
            done.completion.values,
            ["base", "old", "sci", "win"].map(str::to_owned).to_vec()
        );
        server.close().await;
    }
}

/// A view whose tool `--tools` leaves out is not offered: neither listed
/// nor completed nor read. With `--tools list`: the packages and history
/// templates stay; the export template and the list (conda_inventory's)
/// go. A percent-encoded name (as SDKs expand the templates) reads the
/// same environment.
#[tokio::test]
async fn resources_follow_the_tools_filter_and_names_may_be_percent_encoded() {
    use rmcp::model::{ArgumentInfo, CompleteRequestParams, Reference};
    let standin = standin_with_environments();
    let home = tempfile::tempdir().expect("home");
    let home_text = home.path().display().to_string();
    let server = Server::start_with_env(
        &standin.conda_exe,
        &["--tools", "list"],
        Era::Initialize,
        &[("HOME", &home_text)],
    )
    .await;
    let resources = server.client.list_all_resources().await.expect("list");
    assert!(
        !resources.iter().any(|r| r.uri == "conda://environments"),
        "{resources:?}"
    );
    let uris = template_uris(&server).await;
    assert_eq!(
        uris,
        [
            "conda://environments/{name}/history",
            "conda://environments/{name}/packages",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect()
    );
    for uri in ["conda://environments", "conda://environments/sci/export"] {
        server.read_text(uri).await.expect_err("not served");
    }
    let complete = |uri: &'static str| {
        server.client.complete(CompleteRequestParams::new(
            Reference::for_resource(uri),
            ArgumentInfo::new("name", "s"),
        ))
    };
    let done = complete("conda://environments/{name}/export")
        .await
        .expect("complete");
    assert!(done.completion.values.is_empty(), "{done:?}");
    let done = complete("conda://environments/{name}/packages")
        .await
        .expect("complete");
    assert_eq!(done.completion.values, vec!["sci".to_owned()]);
    let (plain, _) = server
        .read_text("conda://environments/sci/packages")
        .await
        .expect("packages");
    let (encoded, _) = server
        .read_text("conda://environments/%73ci/packages")
        .await
        .expect("packages, percent-encoded");
    assert_eq!(plain, encoded);
    server.close().await;
}

/// Team mode: two principals mapped to two OS users, each with an
/// environment registered in its own `~/.conda/environments.txt`. Each one's
/// `conda_inventory` and `conda://environments` (run in its own worker)
/// list its own environment and never the other's.
#[test]
fn each_principal_sees_only_the_environments_its_conda_sees() {
    use conda_mcp_server::transport::http::tokens::file_line;
    use conda_mcp_tests::http::{HttpServer, post_stateless, tempdir};
    use conda_mcp_tests::rawrpc::stateless_meta;
    use conda_mcp_tests::tiers::{Tier, missing};
    const TEST: &str = "inventory::each_principal_sees_only_the_environments_its_conda_sees";
    let Some(python) = super::http::root_python(TEST) else {
        return;
    };
    let users = ["cmcp-inv-a", "cmcp-inv-b"];
    let mut prefixes = Vec::new();
    for u in users {
        if super::http::os_user(u).is_none() {
            missing(Tier::Root, TEST, "useradd could not make the test users");
            return;
        }
        let user = nix::unistd::User::from_name(u)
            .ok()
            .flatten()
            .expect("user");
        let env = user.dir.join(format!("env-of-{u}"));
        let _ = std::fs::remove_dir_all(&env);
        write_environment(
            &env,
            &[Package::new("numpy", "2.1.0", "py312_0", &[])],
            None,
            &[],
        );
        let conda_dir = user.dir.join(".conda");
        std::fs::create_dir_all(&conda_dir).expect(".conda");
        std::fs::write(
            conda_dir.join("environments.txt"),
            format!("{}\n", env.display()),
        )
        .expect("environments.txt");
        for path in [&user.dir.join(".conda"), &env] {
            let status = std::process::Command::new("chown")
                .args(["-R", &format!("{u}:{u}")])
                .arg(path)
                .status()
                .expect("chown");
            assert!(status.success());
        }
        prefixes.push(env.display().to_string());
    }
    let prefix = conda_mcp_tests::standin::shared_prefix(&paths::real_dump(), python)
        .expect("shared prefix");
    prefix
        .set_control(&[ControlRule {
            listing: Some(true),
            ..ControlRule::default()
        }])
        .expect("control");
    let dir = tempdir();
    let tokens = dir.path().join("tokens");
    std::fs::write(
        &tokens,
        [
            file_line("alice", "cmcp_inv_alice", Some(users[0])),
            file_line("bob", "cmcp_inv_bob", Some(users[1])),
        ]
        .join("\n"),
    )
    .expect("token file");
    let server = HttpServer::start_in(
        dir,
        &prefix.conda_exe,
        &["--auth-tokens", tokens.to_str().expect("utf-8")],
    );
    let seen = |answer: &Value| -> BTreeSet<String> {
        rows(answer)
            .iter()
            .filter_map(|r| r["prefix"].as_str().map(str::to_owned))
            .collect()
    };
    for (token, own, other) in [
        ("cmcp_inv_alice", &prefixes[0], &prefixes[1]),
        ("cmcp_inv_bob", &prefixes[1], &prefixes[0]),
    ] {
        let params = json!({"name": TOOL, "arguments": {"package": "numpy"},
                            "_meta": stateless_meta(json!({}))});
        let r = post_stateless(server.addr, token, "tools/call", Some(TOOL), params);
        let answer = &r["result"]["structuredContent"];
        let found = seen(answer);
        assert!(
            found.contains(own),
            "{token}: {r}\n{}",
            server.stderr_text()
        );
        assert!(!found.contains(other), "{token} sees the other's: {r}");
        let params = json!({"uri": "conda://environments", "_meta": stateless_meta(json!({}))});
        let r = post_stateless(
            server.addr,
            token,
            "resources/read",
            Some("conda://environments"),
            params,
        );
        let text = r["result"]["contents"][0]["text"]
            .as_str()
            .unwrap_or_else(|| panic!("{token}: {r}"));
        let listing: Value = serde_json::from_str(text).expect("JSON");
        let found = seen(&listing);
        assert!(found.contains(own), "{token}: {listing}");
        assert!(
            !found.contains(other),
            "{token} lists the other's: {listing}"
        );
    }
}
