//! MCP prompts for the workflows people ask an assistant to do with conda:
//! each prompt's text tells the model which tools to call in which order,
//! and that a change is previewed first (a call without `yes: true` runs as
//! conda's dry run; docs/safety.md "Writes ask before they act").
//!
//! Protocol-free: the prompts, their arguments, the validation of the
//! values (a clear error that names the argument and never echoes the
//! value, as the tools' schema errors do) and the values argument
//! completion offers ([`complete`]). `crate::mcp::prompts` renders them for
//! `prompts/list`, `prompts/get` and `completion/complete`.
//!
//! The tool names the texts mention are tools of the recorded conda 26
//! catalog (a test in tests/tests/mcp/prompts.rs checks each against the
//! server's `tools/list`); in `--tool-mode compact` the text says how to
//! reach them through `conda_call`.

pub mod complete;

use std::collections::BTreeMap;

/// One argument of a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArgumentSpec {
    /// Its name.
    pub name: &'static str,
    /// What it is, for the person filling it in.
    pub description: &'static str,
    /// Whether `prompts/get` needs it.
    pub required: bool,
    /// What values it takes (validated by [`ValueKind::check`]).
    pub kind: ValueKind,
}

/// The kinds of argument values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueKind {
    /// A conda environment's name (or an absolute prefix).
    Environment,
    /// A file in the project (relative to the server's folder, or absolute).
    ProjectFile,
    /// A Python module name (`numpy`, `sklearn.linear_model`).
    Module,
    /// Package specs, separated by spaces (`numpy>=2 "python=3.12"`).
    Specs,
    /// One of a fixed list of values.
    Choice(&'static [&'static str]),
}

/// The most characters an argument value may have.
pub const MAX_VALUE_CHARS: usize = 1024;

impl ValueKind {
    /// Whether `v` is a value of this kind; the error says what is wrong
    /// without repeating `v`.
    pub fn check(self, v: &str) -> Result<(), &'static str> {
        if v.chars().count() > MAX_VALUE_CHARS {
            return Err("is longer than 1024 characters");
        }
        if v.chars().any(char::is_control) {
            return Err("holds a control character");
        }
        match self {
            ValueKind::Environment => {
                if v.is_empty() {
                    return Err("is empty");
                }
                let is_prefix = v.starts_with('/') || v.contains('\\') || v.contains(':');
                // conda's own rule for names (`validate_name`): no
                // separator, space, `#` or `:`.
                if !is_prefix && v.chars().any(|c| matches!(c, '/' | ' ' | '#' | ':')) {
                    return Err(
                        "is not an environment name (no '/', ' ', '#' or ':') nor an absolute prefix",
                    );
                }
                Ok(())
            }
            ValueKind::ProjectFile => {
                if v.trim().is_empty() {
                    Err("is empty")
                } else {
                    Ok(())
                }
            }
            ValueKind::Module => {
                let ok = !v.is_empty()
                    && v.split('.').all(|part| {
                        !part.is_empty()
                            && !part.starts_with(|c: char| c.is_ascii_digit())
                            && part.chars().all(|c| c.is_alphanumeric() || c == '_')
                    });
                if ok {
                    Ok(())
                } else {
                    Err("is not a Python module name (identifiers separated by '.')")
                }
            }
            ValueKind::Specs => {
                let ok = v
                    .chars()
                    .all(|c| c.is_alphanumeric() || " ._-=<>!*,|:/[]~+@'\"".contains(c));
                if ok {
                    Ok(())
                } else {
                    Err("holds characters no package spec has")
                }
            }
            ValueKind::Choice(values) => {
                if values.contains(&v) {
                    Ok(())
                } else {
                    Err("is not one of the values completion offers")
                }
            }
        }
    }
}

/// A prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prompt {
    /// Its name (`prompts/get`'s `name`; a slash command in most hosts).
    pub name: &'static str,
    /// Its title.
    pub title: &'static str,
    /// What it does.
    pub description: &'static str,
    /// Its arguments.
    pub arguments: &'static [ArgumentSpec],
    /// The text, with `{argument}` placeholders; a `[[argument: ...]]`
    /// section is kept only when that argument was given.
    template: &'static str,
}

const ENVIRONMENT: ArgumentSpec = ArgumentSpec {
    name: "environment",
    description: "The conda environment: its name or its absolute prefix.",
    required: true,
    kind: ValueKind::Environment,
};

/// Export formats of `reproduce_environment`.
pub const EXPORT_FORMATS: &[&str] = &["environment-yaml", "explicit"];

/// Every prompt, in `prompts/list`'s order.
pub const PROMPTS: &[Prompt] = &[
    Prompt {
        name: "setup_environment",
        title: "Set up an environment from the project's files",
        description: "Create a conda environment from environment.yml, requirements.txt or pyproject.toml: preview the solve, then create it.",
        arguments: &[
            ArgumentSpec {
                name: "file",
                description: "The project's file: environment.yml, requirements.txt or pyproject.toml.",
                required: true,
                kind: ValueKind::ProjectFile,
            },
            ArgumentSpec {
                name: "name",
                description: "The new environment's name (default: the file's name: key, or the project's folder name).",
                required: false,
                kind: ValueKind::Environment,
            },
        ],
        template: "Set up a conda environment for this project from the file {file}.\n\
1. Call conda_env_list (json: true) to see the environments that exist[[name:, and check that {name} is not one of them]]. Never create into or change base.\n\
2. By the file's kind:\n\
   - environment.yml / environment.yaml: call conda_env_create with file: [\"{file}\"][[name:, name: \"{name}\"]] and without yes. conda-mcp runs it as a dry run (confirmation_required: true) and nothing is created.\n\
   - requirements.txt: call conda_create with file: [\"{file}\"][[name:, name: \"{name}\"]] and without yes (a dry run likewise).\n\
   - pyproject.toml: read [project] requires-python and dependencies; map each to its conda-forge package name (import names and PyPI names can differ), check doubtful ones with conda_search, then call conda_create with packages (python first)[[name:, name: \"{name}\"]] and without yes.\n\
3. Show the person the plan from the dry run: the packages, versions and channels. If it failed, read error.code (packages_not_found, unsatisfiable, invalid_spec) and explain it before changing anything.\n\
4. Only after the person agrees, repeat the same call with yes: true. If the result says apply_requires, tell the person which startup option the server needs; do not try another way.\n\
5. Confirm with conda_list (json: true) on the new environment.",
    },
    Prompt {
        name: "diagnose_import",
        title: "Find out why an import fails",
        description: "Find out why a Python import fails in a conda environment: is the package installed, from where, for which Python, and what would fix it.",
        arguments: &[
            ArgumentSpec {
                name: "module",
                description: "The module that fails to import (e.g. numpy, sklearn).",
                required: true,
                kind: ValueKind::Module,
            },
            ENVIRONMENT,
        ],
        template: "Find out why `import {module}` fails in the conda environment {environment}. Look before changing anything.\n\
1. Call conda_list with name (or prefix) {environment}, json: true: is python there, which version, and is a package for {module} installed (the package name can differ from the module: sklearn is scikit-learn, cv2 is opencv, yaml is pyyaml)? Note its channel: pypi means pip installed it.\n\
2. If the environment is not found (error.code environment_not_found), call conda_env_list and ask which environment was meant.\n\
3. If a package is missing, call conda_search (json: true) for it to see the versions that fit this Python.\n\
4. Call conda_doctor for the environment when packages are there but the import still fails (broken or clobbered files, missing files of a package).\n\
5. If the server allows running programs (--allow-exec), conda_run with executable_call [\"python\", \"-c\", \"import {module}\"] shows the real traceback.\n\
6. Say what is wrong and propose the fix (usually conda_install of the conda package, not pip); as any change, call it first without yes (a dry run), show the plan, and repeat with yes: true only when the person agrees.",
    },
    Prompt {
        name: "update_environment",
        title: "Update an environment safely",
        description: "Update packages of a conda environment: preview the plan (what changes, up or down), then apply it only when the person agrees.",
        arguments: &[
            ENVIRONMENT,
            ArgumentSpec {
                name: "packages",
                description: "The packages to update, separated by spaces (default: all).",
                required: false,
                kind: ValueKind::Specs,
            },
        ],
        template: "Update the conda environment {environment} safely. If it is base, stop and ask: base is conda's own environment.\n\
1. Call conda_list (name {environment}, json: true) to record what is installed now.\n\
2. Preview: call conda_update with name {environment}, [[packages:packages {packages}]][[!packages:update_modifier: \"update-all\"]], json: true and without yes. conda-mcp runs it as a dry run (confirmation_required: true); nothing changes.\n\
3. Show the plan: each package going up, down (a downgrade deserves a reason), added or removed, and the channel each comes from. If the dry run failed, read error.code (unsatisfiable, packages_not_found) and explain it.\n\
4. Only after the person agrees, repeat the same call with yes: true. With --approve-writes the server asks the person itself; declined means leave it.\n\
5. Confirm with conda_list, and suggest conda_export of the new state if they keep one in the project.",
    },
    Prompt {
        name: "explain_conflict",
        title: "Explain a solver conflict",
        description: "Explain why conda cannot install a set of packages together, from a dry run, and propose specs that solve.",
        arguments: &[
            ArgumentSpec {
                name: "packages",
                description: "The package specs that do not solve together, separated by spaces.",
                required: true,
                kind: ValueKind::Specs,
            },
            ArgumentSpec {
                name: "environment",
                description: "The environment to install them into (default: a new one).",
                required: false,
                kind: ValueKind::Environment,
            },
        ],
        template: "Explain why conda cannot solve the packages {packages}[[environment: in the environment {environment}]]. Change nothing.\n\
1. Run the solve as a dry run: [[environment:conda_install with name {environment}]][[!environment:conda_create with a name that does not exist yet]], packages {packages}, dry_run: true, json: true.\n\
2. If it fails, read error.code: unsatisfiable (the specs conflict: error.message and parsed_json name the chain of requirements), packages_not_found (a name or version is not in the channels: check it with conda_search), invalid_spec (the spec's syntax).\n\
3. For each conflicting requirement, call conda_search (json: true) to see which versions exist and what they depend on; conda_info shows the channels and platform.\n\
4. Explain the conflict in plain words and propose specs that solve (a looser pin, another Python, one package fewer); prove it with another dry run before suggesting it. Never add channels or use pip to get around it without asking.",
    },
    Prompt {
        name: "free_disk_space",
        title: "Free disk space",
        description: "See how much space conda's caches and environments take, preview what conda clean would remove, then remove it only when the person agrees.",
        arguments: &[],
        template: "Free disk space used by conda.\n\
1. Call conda_info (json: true) for the package caches (pkgs_dirs) and environment folders (envs_dirs).\n\
2. Call conda_env_list with size: true, json: true to see each environment's size; name the large ones that look unused, but remove none without the person's explicit choice.\n\
3. Preview the cleanup: conda_clean with all: true, dry_run: true, json: true. Show what it would remove and how many bytes (tarballs, unused packages, index cache, logfiles).\n\
4. Only after the person agrees, call conda_clean with all: true, yes: true (or the parts they chose: tarballs, packages, index_cache).\n\
5. Report the space freed.",
    },
    Prompt {
        name: "reproduce_environment",
        title: "Reproduce an environment elsewhere",
        description: "Export a conda environment so it can be recreated on another machine: a portable environment.yml, or an exact explicit list for the same platform.",
        arguments: &[
            ENVIRONMENT,
            ArgumentSpec {
                name: "format",
                description: "environment-yaml (portable, the specs asked for) or explicit (exact package URLs, same platform only).",
                required: false,
                kind: ValueKind::Choice(EXPORT_FORMATS),
            },
        ],
        template: "Export the conda environment {environment} so it can be recreated elsewhere. Reading only: nothing here changes an environment.\n\
1. Call conda_list (name {environment}, json: true) to see what is there, and whether pip installed some of it (channel pypi).\n\
2. [[!format:Ask whether the other machine has the same platform. ]]For a portable file: conda_export with name {environment}, format environment-yaml, from_history: true (only the specs the person asked for, so it solves on other platforms). For an exact copy on the same platform: conda_export with format explicit (package URLs and hashes).[[format: The person chose {format}.]]\n\
3. Give the person the file's text to save in the project, and the matching command to recreate it: conda_env_create with file for environment-yaml, conda_create with file for explicit.\n\
4. Say what the file does not carry: packages pip installed only appear in environment-yaml, and an explicit list only works on the platform it came from.",
    },
];

/// A prompt's text and description for `prompts/get`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The prompt's description.
    pub description: &'static str,
    /// The text of the one user message.
    pub text: String,
}

/// Why `prompts/get` gives no prompt; none repeats a value that was sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromptError {
    /// No prompt has this name.
    #[error("unknown prompt: prompts/list names the prompts of this server")]
    Unknown,
    /// A required argument is missing or empty.
    #[error("prompt {prompt}: argument {argument} is required")]
    Missing {
        /// The prompt.
        prompt: &'static str,
        /// The argument.
        argument: &'static str,
    },
    /// An argument the prompt does not take.
    #[error("prompt {prompt} takes no argument {argument} (it takes: {takes})")]
    Unexpected {
        /// The prompt.
        prompt: &'static str,
        /// The argument's name as the tools name an unknown property (at
        /// most 64 characters, control characters as `?`:
        /// `crate::schema::validate::pointer_token`).
        argument: String,
        /// The names it takes.
        takes: String,
    },
    /// A value of the wrong kind.
    #[error("prompt {prompt}: argument {argument} {why}")]
    Invalid {
        /// The prompt.
        prompt: &'static str,
        /// The argument.
        argument: &'static str,
        /// What is wrong (never the value).
        why: &'static str,
    },
}

/// The prompt named `name`.
pub fn find(name: &str) -> Option<&'static Prompt> {
    PROMPTS.iter().find(|p| p.name == name)
}

/// The prompt `name` with `args` (string values, as MCP sends them),
/// checked; `compact`: the server offers commands through `conda_call`;
/// `project`: the folder a relative project file is in (conda runs in a
/// fixed folder of its own, so the text names the file absolute).
///
/// Errors: [`PromptError`].
pub fn get(
    name: &str,
    args: &BTreeMap<String, String>,
    compact: bool,
    project: &std::path::Path,
) -> Result<Rendered, PromptError> {
    let prompt = find(name).ok_or(PromptError::Unknown)?;
    for k in args.keys() {
        if !prompt.arguments.iter().any(|a| a.name == k) {
            return Err(PromptError::Unexpected {
                prompt: prompt.name,
                argument: crate::schema::validate::pointer_token(k),
                takes: if prompt.arguments.is_empty() {
                    "none".into()
                } else {
                    prompt
                        .arguments
                        .iter()
                        .map(|a| a.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            });
        }
    }
    let mut given = BTreeMap::new();
    for a in prompt.arguments {
        match args.get(a.name).map(|v| v.trim()).filter(|v| !v.is_empty()) {
            None if a.required => {
                return Err(PromptError::Missing {
                    prompt: prompt.name,
                    argument: a.name,
                });
            }
            None => {}
            Some(v) => {
                a.kind.check(v).map_err(|why| PromptError::Invalid {
                    prompt: prompt.name,
                    argument: a.name,
                    why,
                })?;
                let v = match a.kind {
                    ValueKind::ProjectFile => project.join(v).display().to_string(),
                    _ => v.to_owned(),
                };
                given.insert(a.name, v);
            }
        }
    }
    let mut text = fill(prompt.template, &given);
    if compact {
        text.push_str(
            "\n\nThis server offers conda's commands through conda_call: each conda_<command> \
             named above is conda_call with that command (conda_env_create is command \"env \
             create\"); conda_describe gives its arguments.",
        );
    }
    Ok(Rendered {
        description: prompt.description,
        text,
    })
}

/// `template` with its sections resolved and its placeholders filled.
fn fill(template: &str, given: &BTreeMap<&str, String>) -> String {
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("[[") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("]]") else {
            out.push_str(&rest[start..]);
            rest = "";
            break;
        };
        let section = &after[..end];
        if let Some((cond, body)) = section.split_once(':') {
            let (negated, arg) = match cond.strip_prefix('!') {
                Some(a) => (true, a),
                None => (false, cond),
            };
            if given.contains_key(arg) != negated {
                out.push_str(body);
            }
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    for (k, v) in given {
        out = out.replace(&format!("{{{k}}}"), v);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn every_prompt_renders_with_its_required_arguments_and_leaves_no_placeholder() {
        for p in PROMPTS {
            let mut a = BTreeMap::new();
            for arg in p.arguments.iter().filter(|a| a.required) {
                let v = match arg.kind {
                    ValueKind::Environment => "ml",
                    ValueKind::ProjectFile => "environment.yml",
                    ValueKind::Module => "numpy",
                    ValueKind::Specs => "numpy>=2 python=3.12",
                    ValueKind::Choice(c) => c[0],
                };
                a.insert(arg.name.to_owned(), v.to_owned());
            }
            let r = get(p.name, &a, false, std::path::Path::new("/p")).expect(p.name);
            assert!(
                !r.text.contains('{') && !r.text.contains("[["),
                "{}: {}",
                p.name,
                r.text
            );
            // Every prompt that can change something previews first.
            if r.text.contains("yes: true") {
                assert!(
                    r.text.contains("dry run") || r.text.contains("dry_run: true"),
                    "{}",
                    p.name
                );
            }
        }
    }

    #[test]
    fn optional_sections_follow_the_arguments() {
        let with = get(
            "update_environment",
            &args(&[("environment", "ml"), ("packages", "numpy")]),
            false,
            std::path::Path::new("/p"),
        )
        .expect("with");
        assert!(with.text.contains("packages numpy"), "{}", with.text);
        assert!(!with.text.contains("update-all"), "{}", with.text);
        let without = get(
            "update_environment",
            &args(&[("environment", "ml")]),
            false,
            std::path::Path::new("/p"),
        )
        .expect("without");
        assert!(
            without.text.contains("update_modifier: \"update-all\""),
            "{}",
            without.text
        );
        let compact = get(
            "free_disk_space",
            &args(&[]),
            true,
            std::path::Path::new("/p"),
        )
        .expect("compact");
        assert!(compact.text.contains("conda_call"), "{}", compact.text);
    }

    #[test]
    fn bad_arguments_are_named_and_never_echoed() {
        let secret = "x/y z#SECRET";
        let e = get(
            "diagnose_import",
            &args(&[("module", "numpy"), ("environment", secret)]),
            false,
            std::path::Path::new("/p"),
        )
        .expect_err("bad name");
        assert!(
            matches!(
                e,
                PromptError::Invalid {
                    argument: "environment",
                    ..
                }
            ),
            "{e:?}"
        );
        assert!(!e.to_string().contains("SECRET"), "{e}");
        let e = get(
            "diagnose_import",
            &args(&[("module", "import os; SECRET")]),
            false,
            std::path::Path::new("/p"),
        )
        .expect_err("bad module");
        assert!(!e.to_string().contains("SECRET"), "{e}");
        assert_eq!(
            get(
                "diagnose_import",
                &args(&[("module", "numpy")]),
                false,
                std::path::Path::new("/p")
            ),
            Err(PromptError::Missing {
                prompt: "diagnose_import",
                argument: "environment"
            })
        );
        let e = get(
            "free_disk_space",
            &args(&[("wait_for_it", "SECRET")]),
            false,
            std::path::Path::new("/p"),
        )
        .expect_err("unexpected");
        assert!(!e.to_string().contains("SECRET"), "{e}");
        assert_eq!(
            e.to_string(),
            "prompt free_disk_space takes no argument wait_for_it (it takes: none)"
        );
        // The name as the tools name an unknown property: one line, cut.
        let long = format!("a\nb{}", "x".repeat(100));
        let e = get(
            "free_disk_space",
            &args(&[(long.as_str(), "1")]),
            false,
            std::path::Path::new("/p"),
        )
        .expect_err("unexpected");
        let text = e.to_string();
        assert!(
            text.contains("a?bxxx") && text.contains('…') && !text.contains('\n'),
            "{text}"
        );
        assert_eq!(
            get("SECRET", &args(&[]), false, std::path::Path::new("/p")),
            Err(PromptError::Unknown)
        );
        let e = get(
            "reproduce_environment",
            &args(&[("environment", "ml"), ("format", "SECRET")]),
            false,
            std::path::Path::new("/p"),
        )
        .expect_err("choice");
        assert!(!e.to_string().contains("SECRET"), "{e}");
        // An absolute prefix is an environment too.
        get(
            "diagnose_import",
            &args(&[("module", "numpy"), ("environment", "/opt/envs/my env")]),
            false,
            std::path::Path::new("/p"),
        )
        .expect("a prefix");
    }
}
