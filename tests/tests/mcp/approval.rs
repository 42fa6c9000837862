//! `--approve-writes` (docs/approval.md): each change is shown to the person
//! through the host and applied exactly as shown, or not at all. The host
//! is the Python `mcp` client (`tests/fixtures/approval_client.py`, the
//! official SDK from PyPI: [`conda_mcp_tests::pyclient`]) with an
//! elicitation callback, in both protocol eras (`initialize`, and the
//! stateless 2026-07-28 lifecycle where the form travels as an
//! input-required result), against the stand-in conda built from the
//! recorded conda 26 parser with its `transaction` switch (a `--json`
//! dry-run plan; a real environment folder with its history when applied).

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use conda_mcp_tests::bins;
use conda_mcp_tests::mcp::{Era, Server};
use conda_mcp_tests::paths;
use conda_mcp_tests::pyclient::{self, mcp_python};
use conda_mcp_tests::standin::{ControlRule, StandinPrefix};

/// The Python client's `mode=` for an era.
fn mode(era: Era) -> &'static str {
    match era {
        Era::Initialize => "legacy",
        Era::Stateless => "2026-07-28",
    }
}

/// A stand-in of the real conda 26 parser whose `create` and `install` act
/// as transactions.
pub(crate) fn transaction_standin() -> StandinPrefix {
    let standin = StandinPrefix::create(&paths::real_dump()).expect("stand-in");
    standin
        .set_control(&[ControlRule {
            transaction: Some(json!(true)),
            ..ControlRule::default()
        }])
        .expect("control");
    standin
}

/// How long each transaction of [`slow_transaction_standin`] takes first
/// (seconds), and the least `duration_ms` an answer that ran one reports.
const SLOW_TRANSACTION_SECONDS: f64 = 0.4;
const SLOW_TRANSACTION_MS: u64 = 400;

/// [`transaction_standin`] whose every transaction (a dry run included)
/// takes [`SLOW_TRANSACTION_SECONDS`] first: an answer that ran a dry run
/// and reports `duration_ms: 0` (or less than one run) is wrong.
fn slow_transaction_standin() -> StandinPrefix {
    let standin = transaction_standin();
    standin
        .set_control(&[ControlRule {
            transaction: Some(json!({"sleep_seconds": SLOW_TRANSACTION_SECONDS})),
            ..ControlRule::default()
        }])
        .expect("control");
    standin
}

/// The environment `conda create --name NAME` makes in the stand-in.
pub(crate) fn env_prefix(standin: &StandinPrefix, name: &str) -> PathBuf {
    standin.prefix.join("envs").join(name)
}

/// Every argv the stand-in ran (its `standin-runs.log`).
pub(crate) fn runs(standin: &StandinPrefix) -> Vec<Vec<String>> {
    std::fs::read_to_string(standin.prefix.join("standin-runs.log"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(_, argv)| serde_json::from_str(argv).expect("argv json"))
        .collect()
}

/// Runs the Python client against a server for `standin` with `flags`:
/// one session in `era`, declaring elicitation or not, making `calls`.
fn session(
    python: &Path,
    standin: &StandinPrefix,
    flags: &[&str],
    era: Era,
    elicitation: bool,
    calls: Value,
) -> Value {
    let cache = tempfile::tempdir().expect("cache dir");
    let mut args = vec![
        "--conda-exe".to_owned(),
        standin.conda_exe.display().to_string(),
        "--worker-exe".to_owned(),
        bins::worker().display().to_string(),
    ];
    args.extend(flags.iter().map(|f| f.to_string()));
    let report = pyclient::run_script(
        python,
        "approval_client.py",
        &json!({
            "command": bins::server(),
            "args": args,
            "env": {"XDG_CACHE_HOME": cache.path().join("cache")},
            "mode": mode(era),
            "elicitation": elicitation,
            "calls": calls,
        }),
    );
    let version = report["protocol_version"].as_str().unwrap_or("");
    match era {
        Era::Stateless => assert_eq!(version, "2026-07-28", "{report}"),
        Era::Initialize => assert!(version < "2026-07-28", "{report}"),
    }
    report
}

fn error_code(result: &Value) -> &str {
    assert_eq!(result["is_error"], true, "{result}");
    result["structured"]["error"]["code"].as_str().unwrap_or("")
}

fn questions(result: &Value) -> Vec<String> {
    result["questions"]
        .as_array()
        .expect("questions")
        .iter()
        .map(|q| q["message"].as_str().expect("message").to_owned())
        .collect()
}

/// Accept → applied, and what was applied equals what the form showed: the
/// form of a create lists the packages the dry run would link (with version
/// and build), those are exactly the packages the environment got, and the
/// apply ran the call's own specs with `--yes` (not every dependency
/// pinned), as conda's history shows. Each conda run takes 1.2 s here, so
/// the runs report progress: the values of one request rise across its
/// runs (the MCP spec asks for rising values per token): in an
/// `initialize` session the preview, the re-plan and the apply are one
/// request; in the stateless lifecycle the preview answers the first
/// request and the retry's re-plan and apply rise from its own start.
#[test]
fn accepted_create_applies_what_the_form_showed() {
    let Some(python) = mcp_python("approval::accepted_create_applies_what_the_form_showed") else {
        return;
    };
    for era in Era::ALL {
        let standin = transaction_standin();
        standin
            .set_control(&[ControlRule {
                transaction: Some(json!({"sleep_seconds": 1.2})),
                ..ControlRule::default()
            }])
            .expect("control");
        let report = session(
            &python,
            &standin,
            &["--approve-writes"],
            era,
            true,
            json!([{"tool": "conda_create", "answer": "accept",
                    "arguments": {"name": "demo", "packages": ["zlib=1.3"], "json": true}}]),
        );
        let result = &report["results"][0];
        assert_eq!(result["is_error"], false, "{era:?}: {result}");
        assert_eq!(result["structured"]["exit_code"], 0, "{era:?}: {result}");
        let asked = questions(result);
        assert_eq!(asked.len(), 1, "{era:?}: one question: {asked:?}");
        let message = &asked[0];
        let env = env_prefix(&standin, "demo");
        for line in [
            "Command: conda create zlib=1.3 --name demo --json --yes".to_owned(),
            format!("Environment: {}", env.display()),
            "Packages to install (link):".to_owned(),
            "  standin-dep 0.1 (build h1_0, channel standin)".to_owned(),
            "  zlib 1.3 (build h0_0, channel standin)".to_owned(),
            "Download: 15 KB (2 packages)".to_owned(),
        ] {
            assert!(
                message.lines().any(|l| l == line),
                "{era:?}: the form lacks {line:?}:\n{message}"
            );
        }
        let schema = &result["questions"][0]["requested_schema"];
        assert_eq!(
            schema["properties"]["approve"]["type"], "boolean",
            "{schema}"
        );
        assert_eq!(schema["required"], json!(["approve"]), "{schema}");

        let applied = assert_applied_as_shown(&env, message, &format!("{era:?}"));
        let argv: Vec<&str> = applied["argv"]
            .as_array()
            .expect("argv")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            argv.contains(&"--yes") && !argv.contains(&"--dry-run"),
            "{argv:?}"
        );
        assert!(
            argv.contains(&"zlib=1.3") && !argv.iter().any(|a| a.contains("standin-dep")),
            "the call's own specs, not the pinned plan: {argv:?}"
        );
        // Two dry runs (the question, then the re-plan) and one apply.
        let creates: Vec<Vec<String>> = runs(&standin)
            .into_iter()
            .filter(|a| a.first().is_some_and(|c| c == "create"))
            .collect();
        let dry = creates
            .iter()
            .filter(|a| a.iter().any(|x| x == "--dry-run"))
            .count();
        assert_eq!((dry, creates.len()), (2, 3), "{era:?}: {creates:?}");
        let progress: Vec<f64> = result["progress"]
            .as_array()
            .expect("progress")
            .iter()
            .filter_map(Value::as_f64)
            .collect();
        assert!(
            progress.len() >= 2,
            "{era:?}: the runs report progress: {progress:?}"
        );
        // The values fall only where a new request starts.
        let falls = progress.windows(2).filter(|w| w[0] >= w[1]).count();
        let requests = match era {
            Era::Initialize => 1,
            Era::Stateless => 2,
        };
        assert!(
            falls < requests,
            "{era:?}: progress rises across the runs of one request: {progress:?}"
        );
    }
}

/// Decline, cancel, and accept without the approval set → `declined` (not
/// retryable), nothing changed; `yes: true` from the model still asks; a
/// client without the elicitation capability → `approval_unavailable`
/// naming that cause, with conda's dry-run plan, and nothing but the dry
/// run ran. Each answer's `duration_ms` covers the dry run it ran (a slow
/// one, [`slow_transaction_standin`]).
#[test]
fn refused_answers_change_nothing() {
    let Some(python) = mcp_python("approval::refused_answers_change_nothing") else {
        return;
    };
    for era in Era::ALL {
        let standin = slow_transaction_standin();
        let call = |name: &str, answer: &str, yes: bool| {
            json!({"tool": "conda_create", "answer": answer,
                   "arguments": {"name": name, "packages": ["zlib"], "yes": yes}})
        };
        let report = session(
            &python,
            &standin,
            &["--approve-writes"],
            era,
            true,
            json!([
                call("d", "decline", false),
                call("c", "cancel", false),
                call("n", "accept_no", false),
                call("y", "decline", true),
            ]),
        );
        for (i, name) in ["d", "c", "n", "y"].iter().enumerate() {
            let result = &report["results"][i];
            assert_eq!(error_code(result), "declined", "{era:?} {name}: {result}");
            assert_eq!(result["structured"]["error"]["retryable"], false);
            assert_eq!(questions(result).len(), 1, "{era:?} {name}: asked once");
            assert!(
                !env_prefix(&standin, name).exists(),
                "{era:?} {name}: nothing may change"
            );
            // In an `initialize` session the dry run and the wait happen
            // within this call, and its duration says so (the stateless
            // retry that carries the answer runs nothing itself).
            if era == Era::Initialize {
                let ms = result["structured"]["duration_ms"].as_u64().unwrap_or(0);
                assert!(
                    ms >= SLOW_TRANSACTION_MS,
                    "{era:?} {name}: the dry run's time: {result}"
                );
            }
        }
        assert!(
            runs(&standin)
                .iter()
                .all(|a| a.first().is_none_or(|c| c != "create")
                    || a.iter().any(|x| x == "--dry-run")),
            "{era:?}: only dry runs ran"
        );

        let report = session(
            &python,
            &standin,
            &["--approve-writes"],
            era,
            false,
            json!([call("u", "accept", true)]),
        );
        let result = &report["results"][0];
        assert_eq!(
            error_code(result),
            "approval_unavailable",
            "{era:?}: {result}"
        );
        let message = result["structured"]["error"]["message"]
            .as_str()
            .unwrap_or("");
        assert!(
            message.contains("cannot ask the person") && message.contains("--allow-write"),
            "{message}"
        );
        assert!(
            message.contains("the host declared no elicitation support")
                && !message.contains("the question failed"),
            "the one cause that applies: {message}"
        );
        assert!(
            message.contains("conda's plan") && message.contains("conda create"),
            "the plan the person would have seen: {message}"
        );
        assert!(questions(result).is_empty());
        let ms = result["structured"]["duration_ms"].as_u64().unwrap_or(0);
        assert!(
            ms >= SLOW_TRANSACTION_MS,
            "{era:?}: the dry run's time: {result}"
        );
        assert!(!env_prefix(&standin, "u").exists());
        let for_u: Vec<_> = runs(&standin)
            .into_iter()
            .filter(|a| a.iter().any(|x| x == "u"))
            .collect();
        assert!(
            !for_u.is_empty() && for_u.iter().all(|a| a.iter().any(|x| x == "--dry-run")),
            "{era:?}: only the dry run ran for a client that cannot ask: {for_u:?}"
        );
    }
}

/// `replace_existing` under `--approve-writes`: the person is shown a real
/// plan (conda refuses a dry run over an existing environment, so the
/// preview is solved for a fresh prefix); declined → the old environment
/// and its files are kept; accepted → it is replaced.
#[test]
fn an_approved_replacement_shows_a_plan_and_replaces_only_when_accepted() {
    let Some(python) = mcp_python(
        "approval::an_approved_replacement_shows_a_plan_and_replaces_only_when_accepted",
    ) else {
        return;
    };
    for era in Era::ALL {
        let standin = transaction_standin();
        let create = |answer: &str, replace: bool| {
            json!({"tool": "conda_create", "answer": answer,
                   "arguments": {"name": "demo", "packages": ["zlib=1.3"], "json": true,
                                 "replace_existing": replace}})
        };
        let report = session(
            &python,
            &standin,
            &["--approve-writes"],
            era,
            true,
            json!([create("accept", false)]),
        );
        assert_eq!(report["results"][0]["is_error"], false, "{era:?}: {report}");
        let env = env_prefix(&standin, "demo");
        let marker = env.join("marker.txt");
        std::fs::write(&marker, "keep me").expect("marker");

        let report = session(
            &python,
            &standin,
            &["--approve-writes"],
            era,
            true,
            json!([
                create("accept", false),
                create("decline", true),
                create("accept", true)
            ]),
        );
        let exists = &report["results"][0];
        assert_eq!(
            error_code(exists),
            "environment_exists",
            "{era:?}: {exists}"
        );
        assert!(
            questions(exists).is_empty(),
            "{era:?}: refused before asking"
        );
        let declined = &report["results"][1];
        assert_eq!(error_code(declined), "declined", "{era:?}: {declined}");
        for result in [declined, &report["results"][2]] {
            let asked = questions(result);
            assert_eq!(asked.len(), 1, "{era:?}: {result}");
            assert!(
                asked[0]
                    .lines()
                    .any(|l| l == "  zlib 1.3 (build h0_0, channel standin)"),
                "{era:?}: the form shows the plan:\n{}",
                asked[0]
            );
            for line in [
                format!("Environment: {}", env.display()),
                format!(
                    "Replaces: the existing environment at {} (1 package(s)) is removed first, \
                     every file in it included",
                    env.display()
                ),
            ] {
                assert!(
                    asked[0].lines().any(|l| l == line),
                    "{era:?}: the form lacks {line:?}:\n{}",
                    asked[0]
                );
            }
        }
        let applied = &report["results"][2];
        assert_eq!(applied["is_error"], false, "{era:?}: {applied}");
        assert!(
            !marker.exists(),
            "{era:?}: the accepted replacement removed the old files"
        );
        assert!(
            env.join("conda-meta")
                .join("standin-transaction.json")
                .exists(),
            "{era:?}: the new environment is there"
        );
    }
}

/// The plan changes while the question is open (the stand-in's plan gains
/// a package before the person answers): the re-plan differs from what was
/// shown → `plan_changed`, nothing applied; its `duration_ms` covers the
/// dry runs of that request (the plan and the re-plan in an `initialize`
/// session, the re-plan in the stateless retry; each a slow one).
#[test]
fn a_plan_that_changed_after_approval_is_not_applied() {
    let Some(python) = mcp_python("approval::a_plan_that_changed_after_approval_is_not_applied")
    else {
        return;
    };
    for era in Era::ALL {
        let standin = slow_transaction_standin();
        let changed = serde_json::to_string(&[ControlRule {
            transaction: Some(json!({"extra_link": ["surprise 9.9 h9_0"],
                                     "sleep_seconds": SLOW_TRANSACTION_SECONDS})),
            ..ControlRule::default()
        }])
        .expect("json");
        let report = session(
            &python,
            &standin,
            &["--approve-writes"],
            era,
            true,
            json!([{"tool": "conda_create", "answer": "accept",
                    "before_answer": {"path": standin.prefix.join("standin-control.json"), "text": changed},
                    "arguments": {"name": "moved", "packages": ["zlib"]}}]),
        );
        let result = &report["results"][0];
        assert_eq!(error_code(result), "plan_changed", "{era:?}: {result}");
        let runs_in_request = match era {
            Era::Initialize => 2,
            Era::Stateless => 1,
        };
        let ms = result["structured"]["duration_ms"].as_u64().unwrap_or(0);
        assert!(
            ms >= runs_in_request * SLOW_TRANSACTION_MS,
            "{era:?}: the dry runs' time: {result}"
        );
        assert!(!questions(result)[0].contains("surprise"));
        assert!(
            !env_prefix(&standin, "moved").exists(),
            "{era:?}: not applied"
        );
    }
}

/// A change without a preview (`conda run`, the raw tool's argv) is asked
/// about with its exact command line, credentials masked, and the
/// statement that no preview exists; declined, it never runs; approved,
/// the raw argv runs as given.
#[test]
fn a_change_without_preview_shows_the_exact_command() {
    let Some(python) = mcp_python("approval::a_change_without_preview_shows_the_exact_command")
    else {
        return;
    };
    for era in Era::ALL {
        let standin = transaction_standin();
        let raw = |answer: &str| {
            json!({"tool": "conda_execute", "answer": answer,
                   "arguments": {"argv": ["config", "--set", "channel_alias",
                                          "https://someone:s3cret-pw@conda.example.org/t/tk-1234/"]}})
        };
        let report = session(
            &python,
            &standin,
            &["--approve-writes", "--allow-exec"],
            era,
            true,
            json!([
                {"tool": "conda_run", "answer": "decline",
                 "arguments": {"name": "base", "executable_call": ["python", "-c", "print('hi there')"]}},
                raw("decline"),
                raw("accept"),
            ]),
        );
        let result = &report["results"][0];
        assert_eq!(error_code(result), "declined", "{era:?}: {result}");
        let message = &questions(result)[0];
        assert!(message.contains("There is no preview"), "{message}");
        assert!(
            message.contains("python -c 'print('\\''hi there'\\'')'"),
            "{message}"
        );
        assert!(
            !runs(&standin)
                .iter()
                .any(|a| a.first().is_some_and(|c| c == "run")),
            "{era:?}: declined: conda run never started"
        );

        let declined = &report["results"][1];
        assert_eq!(error_code(declined), "declined", "{era:?}: {declined}");
        let message = &questions(declined)[0];
        assert!(
            message.contains("Command: conda config --set channel_alias https://someone:***@conda.example.org/t/<TOKEN>/")
                && message.contains("There is no preview"),
            "{era:?}: the exact argv, masked:\n{message}"
        );
        assert!(
            !message.contains("s3cret") && !message.contains("tk-1234"),
            "{message}"
        );
        let configs = runs(&standin)
            .into_iter()
            .filter(|a| a.first().is_some_and(|c| c == "config"))
            .count();
        let applied = &report["results"][2];
        assert_eq!(applied["is_error"], false, "{era:?}: {applied}");
        assert_eq!(questions(applied).len(), 1);
        assert_eq!(
            applied["structured"]["parsed_json"]["command"],
            json!(["config"]),
            "{era:?}: the raw argv ran once approved: {applied}"
        );
        assert_eq!(configs, 1, "{era:?}: only the approved raw call ran");
    }
}

/// The mode is reported: the flag excludes `--allow-write` (a usage error,
/// exit 2, naming both); capabilities say `approve_writes`; tool
/// descriptions carry the approval sentence instead of the `yes` one; the
/// instructions say so; `conda-mcp check` reports it.
#[tokio::test]
async fn the_mode_is_reported_everywhere() {
    let out = std::process::Command::new(bins::server())
        .args(["--approve-writes", "--allow-write"])
        .output()
        .expect("run conda-mcp");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--approve-writes") && stderr.contains("--allow-write"),
        "{stderr}"
    );

    let standin = transaction_standin();
    let server = Server::start(&standin.conda_exe, &["--approve-writes"], Era::Initialize).await;
    let (caps, _) = server
        .read_text("conda://capabilities")
        .await
        .expect("capabilities");
    let caps: Value = serde_json::from_str(&caps).expect("json");
    assert_eq!(
        caps["policy"]["writes"], "approve_writes",
        "{}",
        caps["policy"]
    );
    assert_eq!(caps["policy"]["approve_writes"], true);
    let tools = server.tools().await;
    let create = tools
        .iter()
        .find(|t| t.name == "conda_create")
        .expect("conda_create");
    let description = create.description.as_deref().unwrap_or("");
    assert!(
        description.contains("Each change needs your approval"),
        "{description}"
    );
    // yes does not skip the question: its description does not promise a
    // dry run without it.
    let yes = &create.input_schema["properties"]["yes"]["description"];
    assert!(!yes.as_str().unwrap_or("").contains("dry run"), "{yes}");
    let info = server.client.peer_info().expect("server info");
    let instructions = info.instructions.as_deref().unwrap_or("");
    assert!(
        instructions.contains("Each change needs the person's approval"),
        "{instructions}"
    );
    server.close().await;

    let check = std::process::Command::new(bins::server())
        .arg("check")
        .arg("--conda-exe")
        .arg(&standin.conda_exe)
        .arg("--worker-exe")
        .arg(bins::worker())
        .arg("--approve-writes")
        .env("XDG_CACHE_HOME", standin.prefix.join("check-cache"))
        .env_remove("CONDA_EXE")
        .output()
        .expect("conda-mcp check");
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(
        report.contains("--approve-writes on")
            && report.contains("each change only after the person approves it"),
        "{report}"
    );
    // The policy line says the mode in force, not "read-only; add
    // --allow-write or --approve-writes".
    let policy = report
        .lines()
        .find(|l| l.trim_start().starts_with("policy "))
        .unwrap_or_else(|| panic!("a policy line: {report}"));
    assert!(
        policy.contains("each after the person approves it (--approve-writes)")
            && !policy.contains("read-only")
            && !policy.contains("add --allow-write"),
        "{policy}"
    );
}

/// The real tier: one approved and one declined create against a real
/// conda (`CONDA_MCP_TEST_CONDA`) and the local file channel of
/// `real_conda.rs`, in the stateless lifecycle.
#[test]
fn real_conda_approved_and_declined_create() {
    let Some(conda) = conda_mcp_tests::tiers::real_conda(module_path!()) else {
        return;
    };
    let Some(python) = mcp_python("approval::real_conda_approved_and_declined_create") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let channel = super::real_conda::build_channel(&dir.path().join("channel"));
    let (yes, no) = (dir.path().join("approved"), dir.path().join("declined"));
    let create = |prefix: &Path, answer: &str| {
        json!({"tool": "conda_create", "answer": answer,
               "arguments": {"prefix": prefix, "packages": [super::real_conda::PACKAGE],
                             "channel": [channel], "override_channels": true, "json": true}})
    };
    let cache = tempfile::tempdir().expect("cache dir");
    let report = pyclient::run_script(
        &python,
        "approval_client.py",
        &json!({
            "command": bins::server(),
            "args": ["--conda-exe", conda, "--worker-exe", bins::worker(),
                     "--approve-writes", "--timeout", "600"],
            "env": {"XDG_CACHE_HOME": cache.path().join("cache")},
            "mode": mode(Era::Stateless),
            "elicitation": true,
            "calls": [create(&yes, "accept"), create(&no, "decline")],
        }),
    );
    let approved = &report["results"][0];
    let message = &questions(approved)[0];
    assert!(
        message.contains(&format!("{} 1.0 (build 0", super::real_conda::PACKAGE)),
        "the form lists the package conda would link:\n{message}"
    );
    let code = approved["structured"]["error"]["code"].as_str();
    assert!(
        approved["is_error"] == false || code == Some("crashed_after_success"),
        "{approved}"
    );
    assert!(
        yes.join("conda-meta").is_dir(),
        "the approved environment exists"
    );
    assert_eq!(error_code(&report["results"][1]), "declined");
    assert!(!no.exists(), "the declined environment was not created");
}

/// The host gives up while the question is open (the client cancels the
/// call with `notifications/cancelled` after 2 s; the person would have
/// said yes at 4 s, or never answers): nothing is applied, and the cancel
/// reached the server: each call holds the installation's lock from its
/// preview on, so the next change gets its question at once only because
/// the cancelled call's wait ended and released the lock (had the server
/// gone on waiting, the next call would have waited for the lock until the
/// 20 s time limit and ended with `install_lock`, unasked). The Python
/// client drops the open question together with the call, so the late yes
/// never reaches the server (`initialize` era: the server itself waits for
/// the answer there).
#[test]
fn a_call_cancelled_while_the_question_is_open_applies_nothing() {
    let Some(python) =
        mcp_python("approval::a_call_cancelled_while_the_question_is_open_applies_nothing")
    else {
        return;
    };
    let standin = transaction_standin();
    let report = session(
        &python,
        &standin,
        &["--approve-writes", "--timeout", "20"],
        Era::Initialize,
        true,
        json!([
            {"tool": "conda_create", "answer": "late_accept", "answer_delay": 4,
             "read_timeout_seconds": 2,
             "arguments": {"name": "left", "packages": ["zlib"]}},
            {"tool": "conda_create", "answer": "never", "read_timeout_seconds": 2,
             "sleep_before": 3,
             "arguments": {"name": "never", "packages": ["zlib"]}},
            {"tool": "conda_create", "answer": "decline",
             "arguments": {"name": "next", "packages": ["zlib"]}},
        ]),
    );
    for gave_up in &report["results"].as_array().expect("results")[..2] {
        assert!(gave_up["gave_up"].is_string(), "{gave_up}");
        assert_eq!(questions(gave_up).len(), 1, "the question was open");
    }
    let next = &report["results"][2];
    assert_eq!(
        error_code(next),
        "declined",
        "the next call is served: {next}"
    );
    // Each call after a cancelled one was asked at once: the lock the
    // cancelled call held was released when the server saw the cancel.
    for after in &report["results"].as_array().expect("results")[1..] {
        assert_eq!(questions(after).len(), 1, "{after}");
        let asked_after = after["asked_after"].as_f64().expect("asked");
        assert!(
            asked_after < 10.0,
            "asked {asked_after} s after the call: the lock was still held"
        );
    }
    for name in ["left", "never"] {
        assert!(
            !env_prefix(&standin, name).exists(),
            "{name}: nothing applied"
        );
    }
    let applies = runs(&standin)
        .iter()
        .filter(|a| a.first().is_some_and(|c| c == "create") && !a.iter().any(|x| x == "--dry-run"))
        .count();
    assert_eq!(applies, 0, "no create ran without --dry-run");
}

/// The transaction the stand-in applied in `env` (its
/// `conda-meta/standin-transaction.json`), after asserting that the
/// packages it linked are exactly the ones the approval `message` listed
/// under "Packages to install (link)"; `what` names the case in a failure.
pub(crate) fn assert_applied_as_shown(env: &std::path::Path, message: &str, what: &str) -> Value {
    let applied: Value = serde_json::from_slice(
        &std::fs::read(env.join("conda-meta").join("standin-transaction.json"))
            .unwrap_or_else(|e| panic!("{what}: the environment was not created: {e}")),
    )
    .expect("transaction json");
    let mut linked: Vec<String> = applied["link"]
        .as_array()
        .expect("link")
        .iter()
        .map(|p| {
            format!(
                "  {} {} (build {}, channel {})",
                p["name"].as_str().unwrap_or(""),
                p["version"].as_str().unwrap_or(""),
                p["build_string"].as_str().unwrap_or(""),
                p["channel"].as_str().unwrap_or("")
            )
        })
        .collect();
    linked.sort();
    let shown: Vec<&str> = message
        .split("Packages to install (link):\n")
        .nth(1)
        .expect("link list")
        .lines()
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(shown, linked, "{what}: applied = shown");
    applied
}
