//! Environments on disk for `conda_inventory`'s tests and benchmark: conda
//! environments as conda leaves them (a `conda-meta/history`, one
//! `conda-meta/<name>-<version>-<build>.json` record per package listing
//! the files it installed, those files), and packages pip installed (a
//! `*.dist-info` in site-packages with `METADATA` and `RECORD`, owned by no
//! conda record), read by the stand-in's `PrefixData` and by a real conda
//! alike.

use std::path::{Path, PathBuf};

use serde_json::json;

/// One conda package of an environment.
#[derive(Debug, Clone)]
pub struct Package {
    /// Its name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its build string.
    pub build: String,
    /// The files it installed, relative to the prefix (`/`-separated).
    pub files: Vec<String>,
}

impl Package {
    /// A package of `conda-forge` with `files`.
    pub fn new(name: &str, version: &str, build: &str, files: &[&str]) -> Self {
        Package {
            name: name.to_owned(),
            version: version.to_owned(),
            build: build.to_owned(),
            files: files.iter().map(|f| (*f).to_owned()).collect(),
        }
    }
}

/// One package pip installed (its files relative to site-packages).
#[derive(Debug, Clone)]
pub struct PipPackage {
    /// Its distribution name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Its files, relative to site-packages.
    pub files: Vec<String>,
}

/// The site-packages folder of a Python `major.minor`, relative to the
/// prefix (Unix layout, as conda's `get_python_site_packages_short_path`).
pub fn site_packages(python: &str) -> String {
    let mm: Vec<&str> = python.split('.').take(2).collect();
    format!("lib/python{}/site-packages", mm.join("."))
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("folder");
    std::fs::write(path, bytes).expect("file");
}

/// Writes an environment at `prefix`: its history, a record per package
/// (channel `conda-forge`, subdir `linux-64`, with `depends`, `files` and
/// `paths_data` as conda writes them) and each listed file (16 bytes), and
/// the pip packages in the site-packages of `python` (when given).
///
/// Panics when a file cannot be written (a test setup failure).
pub fn write_environment(
    prefix: &Path,
    packages: &[Package],
    python: Option<&str>,
    pip: &[PipPackage],
) {
    let meta = prefix.join("conda-meta");
    std::fs::create_dir_all(&meta).expect("conda-meta");
    let mut history = String::from("==> 2026-01-01 00:00:00 <==\n# cmd: conda create\n");
    for p in packages {
        history.push_str(&format!(
            "+conda-forge/linux-64::{}-{}-{}\n",
            p.name, p.version, p.build
        ));
        for f in &p.files {
            write(&prefix.join(f), b"0123456789abcdef");
        }
        let record = json!({
            "name": p.name,
            "version": p.version,
            "build": p.build,
            "build_number": 0,
            "channel": "https://conda.anaconda.org/conda-forge/linux-64",
            "subdir": "linux-64",
            "fn": format!("{}-{}-{}.conda", p.name, p.version, p.build),
            "url": format!("https://conda.anaconda.org/conda-forge/linux-64/{}-{}-{}.conda", p.name, p.version, p.build),
            "md5": "0123456789abcdef0123456789abcdef",
            "depends": ["libzlib >=1.3.1,<2.0a0", "python >=3.9"],
            "license": "BSD-3-Clause",
            "files": p.files,
            "paths_data": {
                "paths": p.files.iter().map(|f| json!({
                    "_path": f, "path_type": "hardlink",
                    "sha256": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
                    "size_in_bytes": 16
                })).collect::<Vec<_>>(),
                "paths_version": 1
            },
            "requested_spec": p.name,
        });
        write(
            &meta.join(format!("{}-{}-{}.json", p.name, p.version, p.build)),
            &serde_json::to_vec_pretty(&record).expect("json"),
        );
    }
    write(&meta.join("history"), history.as_bytes());
    if let Some(python) = python {
        let sp = prefix.join(site_packages(python));
        for p in pip {
            let info = format!("{}-{}.dist-info", p.name.replace('-', "_"), p.version);
            write(
                &sp.join(&info).join("METADATA"),
                format!(
                    "Metadata-Version: 2.1\nName: {}\nVersion: {}\n\n",
                    p.name, p.version
                )
                .as_bytes(),
            );
            write(&sp.join(&info).join("INSTALLER"), b"pip\n");
            let mut record = String::new();
            for f in &p.files {
                write(&sp.join(f), b"pip");
                record.push_str(&format!("{f},,\n"));
            }
            record.push_str(&format!(
                "{info}/METADATA,,\n{info}/INSTALLER,,\n{info}/RECORD,,\n"
            ));
            write(&sp.join(&info).join("RECORD"), record.as_bytes());
        }
    }
}

/// The benchmark's environments: `envs` environments named `env00`,
/// `env01`, ... under `envs_dir`, each with `packages` packages (python
/// 3.12 and `pkg0003`... with a few files each); every other one has
/// `numpy`, and every third one `pyyaml` (which provides `yaml`). Returns
/// their prefixes.
pub fn many(envs_dir: &Path, envs: usize, packages: usize) -> Vec<PathBuf> {
    let sp = site_packages("3.12");
    (0..envs)
        .map(|i| {
            let prefix = envs_dir.join(format!("env{i:02}"));
            let mut list = vec![Package::new(
                "python",
                "3.12.4",
                "h0_0",
                &["bin/python3.12", &format!("{sp}/README.txt")],
            )];
            if i % 2 == 0 {
                list.push(Package::new(
                    "numpy",
                    &format!("2.{i}.0"),
                    "py312_0",
                    &[&format!("{sp}/numpy/__init__.py"), "bin/f2py"],
                ));
            }
            if i % 3 == 0 {
                list.push(Package::new(
                    "pyyaml",
                    "6.0.2",
                    "py312_0",
                    &[
                        &format!("{sp}/yaml/__init__.py"),
                        &format!("{sp}/_yaml/__init__.py"),
                    ],
                ));
            }
            let mut n = 0;
            while list.len() < packages {
                let name = format!("pkg{n:04}");
                let files = [
                    format!("lib/lib{name}.so"),
                    format!("share/{name}/data.txt"),
                    format!("include/{name}.h"),
                ];
                let files: Vec<&str> = files.iter().map(String::as_str).collect();
                list.push(Package::new(&name, "1.0.0", "h0_0", &files));
                n += 1;
            }
            write_environment(&prefix, &list, Some("3.12.4"), &[]);
            prefix
        })
        .collect()
}
