//! `--approve-writes`: what the person is asked before a change, and how
//! their answer is read. Protocol-free: the MCP side (`mcp::approval`)
//! sends the [`Question`] as an elicitation form and brings back an
//! [`Answer`]; this module decides what the question says and whether a
//! re-planned change is still the one shown (docs/approval.md).
//!
//! The question is plain words, built from conda's own dry run when the
//! command has one: the command line, the environment (prefix), the
//! packages conda would link and unlink (name, version, build, channel),
//! the download size when conda reports it. A change without a preview
//! (a command without `--dry-run`, `conda run`, the raw tool's argv) is
//! asked about with its exact command line and the statement that no
//! preview exists. Every question goes through the credential mask
//! (`shared/src/mask.rs`), whatever `--no-mask-credentials` says: the text
//! is shown to a person on another screen and may be logged by the host.
//!
//! A question's [`Question::digest`] binds it to the tool, the call's
//! arguments and the text shown: the change is applied only when a dry run
//! made just before applying yields the same digest.

use serde_json::{Map, Value};

use crate::call::plan::existing_env::Replacement;

/// A call that runs only after the person approved it.
#[derive(Debug, Clone)]
pub struct Approval {
    /// The dry run whose `--json` plan is shown; `None` when the command
    /// has no preview.
    pub preview: Option<Preview>,
}

impl Approval {
    /// The plan of the preview of `apply` (the change's own plan): its
    /// dry run's argv, classification and checks, on the same lane and
    /// limits, without the apply's own approval, postcondition and
    /// replacement. `None` when the command has no preview.
    pub fn preview_plan(&self, apply: &crate::call::Plan) -> Option<crate::call::Plan> {
        let preview = self.preview.as_ref()?;
        Some(crate::call::Plan {
            argv: preview.argv.clone(),
            classification: Some(preview.classification.clone()),
            checks: Some(preview.checks.clone()),
            approval: None,
            postcondition: None,
            replacement: None,
            ..apply.clone()
        })
    }
}

/// The dry run of a call: its own arguments with `dry_run` and `json`.
#[derive(Debug, Clone)]
pub struct Preview {
    /// The dry run's argv.
    pub argv: Vec<String>,
    /// The policy's classification of it (read-only).
    pub classification: crate::policy::Classification,
    /// Its in-process checks (`crate::call::plan::checks`), filled in with the plan.
    pub checks: conda_mcp_shared::guard::InProcessChecks,
}

/// What the person is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The form's message (masked).
    pub message: String,
    /// sha256 (hex) of the tool name, the call's arguments and the message:
    /// equal digests mean the same call would apply the same plan.
    pub digest: String,
    /// The same plan as structured data, for the approval card
    /// ([`super::card`]; masked).
    pub card: Value,
}

/// The person's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// They accepted the form with the approval box set.
    Approve,
    /// They declined, or accepted without setting the approval box.
    Decline,
    /// They dismissed the form without a choice.
    Cancel,
}

/// The form's one field: a yes/no choice the person must set to apply.
pub const APPROVE_FIELD: &str = "approve";

/// Reads an elicitation answer: `action` (`accept`, `decline`, `cancel`)
/// and, for `accept`, `content` with [`APPROVE_FIELD`] `true`. Anything
/// else (an accept without the field, a malformed answer) is a decline:
/// only an explicit yes applies a change.
pub fn read_answer(action: &str, content: Option<&Value>) -> Answer {
    match action {
        "accept" if content.and_then(|c| c.get(APPROVE_FIELD)) == Some(&Value::Bool(true)) => {
            Answer::Approve
        }
        "cancel" => Answer::Cancel,
        _ => Answer::Decline,
    }
}

/// The question for a call of `tool` with `args` whose command line is
/// `argv` (what applies the change) and whose dry run printed `plan`
/// (conda's `--json` document; `None` when there is no preview).
pub fn question(
    tool: &str,
    args: &Value,
    argv: &[String],
    plan: Option<&Value>,
    replaces: Option<&Replacement>,
) -> Question {
    question_with(tool, args, argv, plan, replaces, None)
}

/// [`question`] for a removal of a whole environment whose preview found
/// `unmanaged` files no package installed: the form names them.
pub fn question_with(
    tool: &str,
    args: &Value,
    argv: &[String],
    plan: Option<&Value>,
    replaces: Option<&Replacement>,
    unmanaged: Option<&crate::call::shape::output::UnmanagedFiles>,
) -> Question {
    let mut m = String::from("conda-mcp asks for your approval before it changes anything.\n\n");
    let command = command_line(argv);
    let card = super::card::plan(tool, &command, plan, replaces, unmanaged);
    m.push_str("Command: ");
    m.push_str(&command);
    m.push('\n');
    if let Some(u) = unmanaged {
        m.push_str(&format!(
            "Also deletes: the environment at {} holds {}; without remove_unmanaged_files: true \
             the apply is refused and nothing is deleted\n",
            u.prefix,
            u.phrase()
        ));
    }
    if let Some(r) = replaces {
        m.push_str(&format!(
            "Replaces: the existing environment at {} ({} package(s)) is removed first, \
             every file in it included\n",
            r.prefix, r.packages
        ));
    }
    match plan {
        None => m.push_str(
            "\nThere is no preview of this command: conda cannot show what it would change \
             before it runs. Approve only if you expect exactly this command to run.\n",
        ),
        // A replacement's plan is solved for a fresh prefix (conda refuses
        // a dry run over an existing environment): the environment named
        // is the one replaced, so the text (and its digest) is the same
        // from one preview to the next.
        Some(plan) => describe_plan(&mut m, plan, replaces.map(|r| r.prefix.as_str())),
    }
    m.push_str("\nApply this change?");
    let message = conda_mcp_shared::mask::mask(&m).into_owned();
    let mut bound = Vec::new();
    bound.extend_from_slice(tool.as_bytes());
    bound.push(0);
    bound.extend_from_slice(args.to_string().as_bytes());
    bound.push(0);
    bound.extend_from_slice(message.as_bytes());
    Question {
        digest: conda_mcp_shared::fingerprint::sha256_hex(&bound),
        message,
        card,
    }
}

/// `argv` as one line: `conda` and the items, an item with a space or a
/// quote in single quotes (for reading, not for a shell).
fn command_line(argv: &[String]) -> String {
    let mut out = String::from("conda");
    for a in argv {
        out.push(' ');
        if a.is_empty() || a.contains([' ', '\'', '"', '\t', '\n']) {
            out.push('\'');
            out.push_str(&a.replace('\'', "'\\''"));
            out.push('\'');
        } else {
            out.push_str(a);
        }
    }
    out
}

/// The plain-words plan of conda's `--json` dry-run document:
/// `{"actions": {"PREFIX", "LINK", "UNLINK", "FETCH"}, "prefix", ...}`
/// (conda's `conda/cli/install.py`, `handle_txn`).
fn describe_plan(m: &mut String, plan: &Value, target: Option<&str>) {
    let actions = plan.get("actions").and_then(Value::as_object);
    let prefix = target.or_else(|| {
        actions
            .and_then(|a| a.get("PREFIX"))
            .or_else(|| plan.get("prefix"))
            .and_then(Value::as_str)
    });
    if let Some(prefix) = prefix {
        m.push_str("Environment: ");
        m.push_str(prefix);
        m.push('\n');
    }
    let Some(actions) = actions else {
        m.push_str("\nconda's dry run lists no package changes");
        if let Some(msg) = plan.get("message").and_then(Value::as_str) {
            m.push_str(": ");
            m.push_str(msg.trim());
        }
        m.push_str(".\n");
        return;
    };
    packages(m, actions, "LINK", "Packages to install (link)");
    packages(m, actions, "UNLINK", "Packages to remove (unlink)");
    if let Some(fetch) = actions.get("FETCH").and_then(Value::as_array) {
        let sizes: Vec<u64> = fetch
            .iter()
            .filter_map(|p| p.get("size").and_then(Value::as_u64))
            .collect();
        if !fetch.is_empty() && sizes.len() == fetch.len() {
            let total: u64 = sizes.iter().sum();
            m.push_str(&format!(
                "\nDownload: {} ({} package{})\n",
                human_bytes(total),
                fetch.len(),
                if fetch.len() == 1 { "" } else { "s" }
            ));
        }
    }
}

/// One list of packages (`LINK` or `UNLINK`), one line each:
/// `name version (build B, channel C)`.
fn packages(m: &mut String, actions: &Map<String, Value>, key: &str, title: &str) {
    let Some(list) = actions.get(key).and_then(Value::as_array) else {
        return;
    };
    if list.is_empty() {
        return;
    }
    m.push('\n');
    m.push_str(title);
    m.push_str(":\n");
    let mut lines: Vec<String> = list.iter().map(package_line).collect();
    lines.sort();
    for line in lines {
        m.push_str("  ");
        m.push_str(&line);
        m.push('\n');
    }
}

fn package_line(p: &Value) -> String {
    let field = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
    let name = match field("name") {
        "" => field("dist_name"),
        n => n,
    };
    let mut line = format!("{name} {}", field("version"));
    let build = match field("build_string") {
        "" => field("build"),
        b => b,
    };
    let mut facts = Vec::new();
    if !build.is_empty() {
        facts.push(format!("build {build}"));
    }
    if !field("channel").is_empty() {
        facts.push(format!("channel {}", field("channel")));
    }
    if !facts.is_empty() {
        line.push_str(&format!(" ({})", facts.join(", ")));
    }
    line.trim().to_owned()
}

/// Bytes as conda prints sizes (`conda/utils.py`, `human_bytes`: powers of
/// 1024, `KB` / `MB` / `GB`).
fn human_bytes(n: u64) -> String {
    const KB: f64 = 1024.0;
    let f = n as f64;
    if f < KB {
        format!("{n} B")
    } else if f < KB * KB {
        format!("{:.0} KB", f / KB)
    } else if f < KB * KB * KB {
        format!("{:.1} MB", f / (KB * KB))
    } else {
        format!("{:.2} GB", f / (KB * KB * KB))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn argv(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_plan_in_plain_words() {
        let plan = json!({
            "actions": {
                "PREFIX": "/envs/demo",
                "LINK": [
                    {"name": "zlib", "version": "1.3.1", "build_string": "h4ab18f5_1", "channel": "conda-forge"},
                    {"name": "abc", "version": "2.0", "build_string": "0", "channel": "pkgs/main"}
                ],
                "UNLINK": [{"name": "old", "version": "0.1", "build_string": "h0_0", "channel": "pkgs/main"}],
                "FETCH": [{"name": "zlib", "size": 1_572_864}, {"name": "abc", "size": 1024}]
            },
            "success": true
        });
        let q = question(
            "conda_create",
            &json!({"name": "demo"}),
            &argv(&[
                "create",
                "--name",
                "demo",
                "--yes",
                "https://u:secret@x.org/c",
            ]),
            Some(&plan),
            None,
        );
        let m = &q.message;
        assert!(m.contains("Environment: /envs/demo"), "{m}");
        assert!(
            m.contains("Packages to install (link):\n  abc 2.0 (build 0, channel pkgs/main)\n  zlib 1.3.1 (build h4ab18f5_1, channel conda-forge)\n"),
            "{m}"
        );
        assert!(m.contains("Packages to remove (unlink):\n  old 0.1"), "{m}");
        assert!(m.contains("Download: 1.5 MB (2 packages)"), "{m}");
        assert!(!m.contains("secret"), "masked: {m}");
        assert!(m.ends_with("Apply this change?"));
        // The digest binds the tool, the arguments and the text.
        let other = question(
            "conda_create",
            &json!({"name": "other"}),
            &argv(&[
                "create",
                "--name",
                "demo",
                "--yes",
                "https://u:secret@x.org/c",
            ]),
            Some(&plan),
            None,
        );
        assert_ne!(q.digest, other.digest);
        assert_eq!(q.message, other.message);
    }

    #[test]
    fn no_preview_says_so_with_the_exact_command() {
        let q = question(
            "conda_run",
            &json!({}),
            &argv(&["run", "-n", "x", "python", "-c", "print('hi there')"]),
            None,
            None,
        );
        assert!(
            q.message
                .contains("Command: conda run -n x python -c 'print('\\''hi there'\\'')'"),
            "{}",
            q.message
        );
        assert!(q.message.contains("There is no preview"));
    }

    #[test]
    fn only_an_explicit_yes_approves() {
        let yes = json!({"approve": true});
        assert_eq!(read_answer("accept", Some(&yes)), Answer::Approve);
        assert_eq!(
            read_answer("accept", Some(&json!({"approve": false}))),
            Answer::Decline
        );
        assert_eq!(read_answer("accept", None), Answer::Decline);
        assert_eq!(read_answer("decline", Some(&yes)), Answer::Decline);
        assert_eq!(read_answer("cancel", None), Answer::Cancel);
        assert_eq!(read_answer("bogus", Some(&yes)), Answer::Decline);
    }
}
