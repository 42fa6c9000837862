//! Discovery end to end against stand-in conda prefixes, through the real
//! worker binary: the embedded helper reproduces the stand-in's dump (a
//! round trip through real argparse), the startup cache avoids Python
//! entirely on an unchanged target, and stale or corrupt entries are
//! replaced.

use std::path::Path;
use std::time::Duration;

use conda_mcp_server::discovery::{
    DiscoveryError, DiscoveryOptions, InterpreterSource, TargetSource, cache, discover,
};
use conda_mcp_server::dump::Dump;
use conda_mcp_server::worker_client::WorkerConfig;
use conda_mcp_tests::bins;
use conda_mcp_tests::standin::{PluginSpec, StandinPrefix, standin_dump};

fn options(p: &StandinPrefix, cache_dir: Option<&Path>) -> DiscoveryOptions {
    let mut worker = WorkerConfig::new(&p.conda_exe);
    worker.worker_exe = bins::worker();
    DiscoveryOptions {
        conda_exe: Some(p.conda_exe.clone()),
        python: None,
        no_cache: cache_dir.is_none(),
        cache_dir: cache_dir.map(Path::to_path_buf),
        timeout: Duration::from_secs(60),
        worker,
    }
}

fn recorded() -> Dump {
    Dump::from_json(&std::fs::read(standin_dump()).expect("read")).expect("valid")
}

#[tokio::test]
async fn helper_reproduces_the_standin_dump() {
    let p = StandinPrefix::standard();
    let d = discover(&options(&p, None)).await.expect("discovery");
    let want = recorded();
    assert_eq!(d.dump.root, want.root, "round trip through real argparse");
    assert_eq!(d.dump.conda_version, want.conda_version);
    assert_eq!(d.dump.plugins, want.plugins, "plugins from the dist-infos");
    assert_eq!(
        d.dump.interpreter.as_deref(),
        Some(p.python.to_str().expect("utf-8"))
    );
    let prefix = std::fs::canonicalize(&p.prefix).expect("canonical prefix");
    assert_eq!(
        d.dump
            .prefix
            .as_deref()
            .map(|s| std::fs::canonicalize(s).expect("c")),
        Some(prefix.clone())
    );
    let dirs: Vec<_> = d
        .dump
        .stamp_dirs
        .iter()
        .map(|s| std::fs::canonicalize(s).expect("stamp dir exists"))
        .collect();
    assert!(
        dirs.contains(&std::fs::canonicalize(&p.site_packages).expect("c")),
        "{dirs:?}"
    );
    assert!(dirs.contains(&prefix.join("conda-meta")), "{dirs:?}");
    // Where conda puts and finds named environments, from its context:
    // the helper reports it, the catalog carries it for the guard.
    let root = d.dump.root_prefix.clone().expect("root_prefix reported");
    assert_eq!(std::fs::canonicalize(&root).expect("c"), prefix);
    // conda's order for a user who may write the root prefix: `<root>/envs`,
    // then `~/.conda/envs` (conda's `context.envs_dirs`).
    let envs = format!("{root}/envs");
    let home = std::env::var("HOME").expect("HOME");
    let home_envs = format!("{home}/.conda/envs");
    assert_eq!(
        d.dump.envs_dirs,
        Some(vec![envs.clone(), home_envs.clone()])
    );
    assert_eq!(
        d.catalog.environments.envs_dirs,
        vec![
            std::path::PathBuf::from(envs),
            std::path::PathBuf::from(home_envs)
        ]
    );
    assert!(
        d.dump
            .warnings
            .iter()
            .any(|w| w.contains("--format") && w.contains("could not be evaluated")),
        "lazy choices that raise are reported: {:?}",
        d.dump.warnings
    );
    assert_eq!(d.target.source, TargetSource::Flag);
    assert_eq!(
        d.target.path,
        std::fs::canonicalize(&p.conda_exe).expect("c")
    );
    assert_eq!(
        (d.python.clone(), d.python_source),
        (p.python.clone(), InterpreterSource::Shebang)
    );
    assert!(!d.from_cache && d.cache_file.is_none());
    assert_eq!(d.processes_started, 1);
    assert_eq!(d.catalog.tools().count(), 17);
    assert!(!d.stamp_changed());
    let lane = d
        .helper_lane
        .clone()
        .expect("the helper's lane is handed back");
    assert_eq!(lane.jobs_started(), 1);
    assert_eq!(lane.config().python.as_deref(), Some(p.python.as_path()));
    lane.shutdown().await;
}

#[tokio::test]
async fn cache_hit_starts_no_python_and_changes_invalidate() {
    let p = StandinPrefix::standard();
    let cache_dir = tempfile::tempdir().expect("tempdir");
    let opts = options(&p, Some(cache_dir.path()));

    let first = discover(&opts).await.expect("cold");
    assert!(!first.from_cache);
    let file = first.cache_file.clone().expect("cache written");
    assert_eq!(
        file,
        cache::entry_path(cache_dir.path(), &first.target.path)
    );
    let starts = p.python_starts();
    assert!(starts >= 1);

    let second = discover(&opts).await.expect("warm");
    assert!(second.from_cache);
    assert_eq!(second.processes_started, 0);
    assert!(second.helper_lane.is_none(), "nothing started on a hit");
    assert_eq!(p.python_starts(), starts, "a cache hit starts no Python");
    assert_eq!(second.dump, first.dump);
    assert_eq!(second.fingerprint(), first.fingerprint());
    assert_eq!(second.python, p.python);

    // A plugin appears: the site-packages listing changes.
    p.add_plugin(&PluginSpec {
        distribution: "conda-extra".into(),
        version: "2.0".into(),
        name: "conda-extra".into(),
        value: "conda_extra.plugin".into(),
    })
    .expect("add plugin");
    assert!(second.stamp_changed(), "cheap restart detection sees it");
    let third = discover(&opts).await.expect("after the change");
    assert!(!third.from_cache);
    assert_eq!(p.python_starts(), starts + 1);
    assert_ne!(
        third.fingerprint(),
        first.fingerprint(),
        "plugin set changed"
    );
    assert!(discover(&opts).await.expect("warm again").from_cache);

    // A corrupt entry is replaced.
    std::fs::write(&file, b"{\"cache_format\": ").expect("corrupt");
    let fourth = discover(&opts).await.expect("corrupt entry");
    assert!(!fourth.from_cache);
    assert_eq!(p.python_starts(), starts + 2);
    let text = std::fs::read(&file).expect("rewritten");
    assert!(serde_json::from_slice::<serde_json::Value>(&text).is_ok());
    assert!(discover(&opts).await.expect("warm").from_cache);

    // --no-cache: always the helper, the cache untouched.
    let before = std::fs::read(&file).expect("read");
    let mut no_cache = opts.clone();
    no_cache.no_cache = true;
    let fifth = discover(&no_cache).await.expect("no cache");
    assert!(!fifth.from_cache && fifth.cache_file.is_none());
    assert_eq!(p.python_starts(), starts + 3);
    assert_eq!(std::fs::read(&file).expect("read"), before);
}

#[tokio::test]
async fn concurrent_starts_keep_the_cache_valid() {
    let p = StandinPrefix::standard();
    let cache_dir = tempfile::tempdir().expect("tempdir");
    let opts = options(&p, Some(cache_dir.path()));
    let (a, b) = tokio::join!(discover(&opts), discover(&opts));
    let (a, b) = (a.expect("a"), b.expect("b"));
    assert_eq!(a.dump, b.dump);
    let c = discover(&opts).await.expect("c");
    assert!(c.from_cache, "the entry one of them wrote is valid");
    let leftovers: Vec<_> = std::fs::read_dir(cache_dir.path())
        .expect("list")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "no temporary files left: {leftovers:?}");
}

#[tokio::test]
async fn interpreter_from_conda_info_when_the_target_has_no_python_shebang() {
    let p = StandinPrefix::standard();
    let launcher = p.prefix.join("bin").join("conda-launcher");
    std::fs::write(
        &launcher,
        format!(
            "#!/bin/sh\nexec \"{}\" -m conda \"$@\"\n",
            p.python.display()
        ),
    )
    .expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&launcher, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let mut opts = options(&p, None);
    opts.conda_exe = Some(launcher);
    let d = discover(&opts).await.expect("discovery via conda info");
    assert_eq!(d.python_source, InterpreterSource::CondaInfo);
    assert_eq!(d.python, p.python);
    assert_eq!(d.processes_started, 2);
    assert_eq!(d.dump.root, recorded().root);
}

#[tokio::test]
async fn noisy_imports_do_not_corrupt_the_document() {
    let p = StandinPrefix::standard();
    // .pth lines starting with `import` run at interpreter start: noise on
    // sys.stdout and straight on fd 1, before the helper runs.
    std::fs::write(
        p.site_packages.join("zz_noise.pth"),
        "import sys; print('{\"noise\": true}')\nimport os; os.write(1, b'=====CONDA-MCP-DUMP-END=====\\n')\n",
    )
    .expect("write");
    let d = discover(&options(&p, None))
        .await
        .expect("discovery despite noise");
    assert_eq!(d.dump.root, recorded().root);
}

#[tokio::test]
async fn a_failing_helper_is_a_clear_error() {
    let p = StandinPrefix::standard();
    std::fs::remove_file(&p.dump_path).expect("remove the stand-in's dump");
    let e = discover(&options(&p, None)).await.expect_err("fails");
    let text = e.to_string();
    assert!(matches!(e, DiscoveryError::ProcessFailed { .. }), "{e:?}");
    assert!(
        text.contains("discovery helper") && text.contains("exited with status 1"),
        "{text}"
    );
    assert!(
        text.contains("FileNotFoundError"),
        "stderr tail included: {text}"
    );
    assert!(text.contains(p.python.to_str().expect("utf-8")), "{text}");

    let mut opts = options(&p, None);
    opts.conda_exe = Some(p.prefix.join("missing-conda"));
    let e = discover(&opts).await.expect_err("no target");
    assert!(matches!(e, DiscoveryError::Target(_)), "{e:?}");
    assert!(e.to_string().contains("does not exist"), "{e}");
}
