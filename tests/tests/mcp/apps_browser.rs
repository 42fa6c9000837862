//! The approval card in a real browser (the `apps` tier): headless
//! Chromium (Debian's `/usr/bin/chromium`) renders the view served by
//! conda-mcp inside a test host page (`tests/apps/host.html`, the host side
//! of the MCP Apps bridge), driven by puppeteer-core
//! (`tests/apps/drive.mjs`, installed by `tests/apps/install.sh`) against
//! two `--listen` servers for the stand-in conda (one with a 2 s
//! `--timeout`), with two principals. It checks what the person sees
//! against conda's own dry run, and what each decision did to the
//! stand-in's environments. The screenshots of the card are written to
//! `target/apps-screenshots/` (docs/approval.md shows copies).
//!
//! A second run hosts the card with the official MCP Apps host SDK
//! (`@modelcontextprotocol/ext-apps`, its `AppBridge`, pinned in
//! `tests/apps/package.json`; `tests/apps/sdk-host.html` and
//! `tests/apps/drive_sdk.mjs`) against a stand-in whose every transaction
//! is slow, with a host request limit shorter than a decision takes.

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use conda_mcp_server::transport::http::tokens::file_line;
use conda_mcp_tests::http::{HttpServer, tempdir};
use conda_mcp_tests::paths::workspace_root;
use conda_mcp_tests::tiers::{Tier, missing};

use conda_mcp_tests::standin::ControlRule;

use super::approval::{env_prefix, runs, transaction_standin};
use super::apps::dry_run_link;

const TEST: &str = "apps_browser::the_card_in_chromium_shows_and_applies_conda_plan";
const CHROMIUM: &str = "/usr/bin/chromium";

/// `target/apps-npm/node_modules`, where `tests/apps/install.sh` puts
/// puppeteer-core.
fn npm_modules() -> PathBuf {
    let target = conda_mcp_tests::bins::bin_dir()
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_else(|| workspace_root().join("target"));
    target.join("apps-npm").join("node_modules")
}

fn applied_link(env: &std::path::Path) -> Option<Value> {
    let bytes = std::fs::read(env.join("conda-meta").join("standin-transaction.json")).ok()?;
    serde_json::from_slice::<Value>(&bytes)
        .ok()
        .map(|v| v["link"].clone())
}

/// Whether the tier's browser, npm packages and node are there (else the
/// tier's skip is reported for `test`).
fn browser_ready(test: &str, package: &str) -> bool {
    if !std::path::Path::new(CHROMIUM).exists() {
        missing(
            Tier::Apps,
            test,
            "/usr/bin/chromium is missing (tests/apps/install.sh)",
        );
        return false;
    }
    if !npm_modules().join(package).join("package.json").exists() {
        missing(
            Tier::Apps,
            test,
            "the npm packages are not installed (tests/apps/install.sh)",
        );
        return false;
    }
    if Command::new("node").arg("--version").output().is_err() {
        missing(Tier::Apps, test, "node is missing");
        return false;
    }
    true
}

#[test]
fn the_card_in_chromium_shows_and_applies_conda_plan() {
    if !browser_ready(TEST, "puppeteer-core") {
        return;
    }
    let modules = npm_modules();
    let standin = transaction_standin();
    let (alice, bob) = ("cmcp_apps_alice_0123456789", "cmcp_apps_bob_0123456789ab");
    let start = |extra: &[&str]| {
        let dir = tempdir();
        let file = dir.path().join("tokens");
        std::fs::write(
            &file,
            [file_line("alice", alice, None), file_line("bob", bob, None)].join("\n"),
        )
        .expect("token file");
        let mut args = vec![
            "--auth-tokens",
            file.to_str().expect("utf-8"),
            "--approve-writes",
        ];
        args.extend_from_slice(extra);
        let args: Vec<String> = args.into_iter().map(str::to_owned).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        HttpServer::start_in(dir, &standin.conda_exe, &args)
    };
    let main = start(&[]);
    let short = start(&["--timeout", "2"]);
    let screenshots = modules
        .parent()
        .and_then(|p| p.parent())
        .expect("target")
        .join("apps-screenshots");
    std::fs::create_dir_all(&screenshots).expect("screenshots dir");
    let work = tempdir();
    let config = work.path().join("config.json");
    std::fs::write(
        &config,
        json!({
            "chromium": CHROMIUM,
            "npm": modules,
            "host": workspace_root().join("tests/apps/host.html"),
            "main": main.url(),
            "short": short.url(),
            "alice": alice,
            "bob": bob,
            "screenshots": screenshots,
            "profile": work.path().join("chromium-profile"),
        })
        .to_string(),
    )
    .expect("config");
    let started = std::time::Instant::now();
    let out = Command::new("node")
        .arg(workspace_root().join("tests/apps/drive.mjs"))
        .arg(&config)
        .output()
        .expect("run node");
    let took = started.elapsed();
    assert!(
        out.status.success(),
        "drive.mjs failed: {}\n{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        main.stderr_text(),
        short.stderr_text()
    );
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("no report: {}", String::from_utf8_lossy(&out.stdout)));
    eprintln!("the browser session took {:.1} s", took.as_secs_f64());

    // The model never sees the app-only tool.
    let decide = "conda_approval_decide";
    let names = |v: &Value| -> Vec<String> {
        v.as_array()
            .expect("names")
            .iter()
            .map(|n| n.as_str().unwrap_or("").to_owned())
            .collect()
    };
    assert!(
        !names(&r["model_tools"]).contains(&decide.to_owned()),
        "{r}"
    );
    assert!(names(&r["model_tools"]).contains(&"conda_create".to_owned()));
    assert!(!names(&r["listed_without_extension"]).contains(&decide.to_owned()));
    let listed = r["listed_with_extension"].as_array().expect("listed");
    let entry = listed
        .iter()
        .find(|t| t["name"] == decide)
        .expect("listed to the host");
    assert_eq!(entry["ui"]["visibility"], json!(["app"]));
    assert_eq!(r["view"]["mimeType"], "text/html;profile=mcp-app");
    assert_eq!(r["console_errors"], json!([]), "no CSP or script error");

    // The card shows conda's dry run, focused on Decline, in the host's theme.
    let shown = &r["approve"]["shown"];
    let link = names(&shown["link"]);
    assert_eq!(link, dry_run_link(&standin, "demo"), "{r}");
    assert_eq!(
        shown["command"],
        "conda create zlib=1.3 --name demo --json --yes"
    );
    assert_eq!(
        shown["environment"],
        env_prefix(&standin, "demo").display().to_string()
    );
    assert_eq!(shown["focused"], "decline");
    assert_eq!(shown["theme"], "dark");
    assert_eq!(
        shown["background"], "rgb(16, 19, 26)",
        "the host's --color-background-primary"
    );

    // Decline (Enter on the focused Decline) changed nothing.
    assert!(
        r["decline"]["model_text"]
            .as_str()
            .unwrap_or("")
            .contains("a person must approve"),
        "{r}"
    );
    assert!(
        r["decline"]["status"]
            .as_str()
            .unwrap_or("")
            .starts_with("Declined"),
        "{r}"
    );
    assert!(!env_prefix(&standin, "declined").exists());

    // Approve applied exactly the plan shown.
    assert!(
        r["approve"]["status"]
            .as_str()
            .unwrap_or("")
            .starts_with("Approved and applied"),
        "{r}"
    );
    let applied = applied_link(&env_prefix(&standin, "demo")).expect("applied");
    let applied: Vec<String> = super::apps::rows_of(&applied);
    assert_eq!(applied, link, "applied = shown");
    assert!(
        r["approve"]["model_context"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("approved"),
        "the model is told: {r}"
    );

    // Refused: the same decision again, another principal, an expired id.
    assert_eq!(r["replay"]["code"], "approval_invalid", "{r}");
    assert_eq!(r["view_asks_change"], "approval_pending", "{r}");
    assert!(!env_prefix(&standin, "sneaky").exists());
    assert_eq!(r["other_principal"]["code"], "approval_invalid", "{r}");
    assert!(!env_prefix(&standin, "other").exists());
    let expired = r["expired"]["status"].as_str().unwrap_or("");
    assert!(
        expired.contains("approval_invalid") && expired.contains("expired"),
        "{expired}"
    );
    assert!(!env_prefix(&standin, "late").exists());
    assert!(screenshots.join("approval-card.png").exists());
}

const SDK_TEST: &str =
    "apps_browser::the_card_through_the_ext_apps_host_sdk_outlasts_the_request_limit";

/// How long each stand-in transaction (a dry run included) takes in the SDK
/// run, and the host's request limit: a decision (the re-plan and the
/// apply) takes twice the first, longer than the second.
const SLOW_SECONDS: f64 = 1.5;
const LIMIT_MS: u64 = 2000;

/// The applies (runs without `--dry-run`) of `conda create --name NAME`.
fn applies(standin: &conda_mcp_tests::standin::StandinPrefix, name: &str) -> usize {
    runs(standin)
        .iter()
        .filter(|argv| {
            argv.first().map(String::as_str) == Some("create")
                && argv.windows(2).any(|w| w[0] == "--name" && w[1] == name)
                && !argv.iter().any(|a| a == "--dry-run")
        })
        .count()
}

/// The approval card hosted by the official MCP Apps host SDK's
/// `AppBridge` (ext-apps 2.0.4): a decision that takes longer than the
/// host's request limit still applies once and the card shows it; a
/// decision whose answer the host lost is followed to its end; one that
/// never reached the server leaves the card able to decide again, and
/// says that nothing changed; the frame's reported height falls when the
/// content shrinks, one report per change; theme change and teardown
/// through the SDK; no console or CSP error.
#[test]
fn the_card_through_the_ext_apps_host_sdk_outlasts_the_request_limit() {
    if !browser_ready(SDK_TEST, "@modelcontextprotocol/ext-apps") {
        return;
    }
    let modules = npm_modules();
    let standin = transaction_standin();
    standin
        .set_control(&[ControlRule {
            transaction: Some(json!({"sleep_seconds": SLOW_SECONDS})),
            ..ControlRule::default()
        }])
        .expect("control");
    let alice = "cmcp_apps_alice_0123456789";
    let dir = tempdir();
    let file = dir.path().join("tokens");
    std::fs::write(&file, file_line("alice", alice, None)).expect("token file");
    let server = HttpServer::start_in(
        dir,
        &standin.conda_exe,
        &[
            "--auth-tokens",
            file.to_str().expect("utf-8"),
            "--approve-writes",
        ],
    );
    let work = tempdir();
    let config = work.path().join("config.json");
    std::fs::write(
        &config,
        json!({
            "chromium": CHROMIUM,
            "npm": modules,
            "host": workspace_root().join("tests/apps/sdk-host.html"),
            "entry": workspace_root().join("tests/apps/sdk-bridge.mjs"),
            "work": work.path(),
            "server": server.url(),
            "alice": alice,
            "limit_ms": LIMIT_MS,
            "profile": work.path().join("chromium-profile"),
        })
        .to_string(),
    )
    .expect("config");
    let started = std::time::Instant::now();
    let out = Command::new("node")
        .arg(workspace_root().join("tests/apps/drive_sdk.mjs"))
        .arg(&config)
        .output()
        .expect("run node");
    assert!(
        out.status.success(),
        "drive_sdk.mjs failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        server.stderr_text()
    );
    let r: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("no report: {}", String::from_utf8_lossy(&out.stdout)));
    eprintln!(
        "the SDK session took {:.1} s: {r}",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(r["sdk_version"], "2.0.4", "{r}");
    assert_eq!(r["console_errors"], json!([]), "no CSP or script error");
    let model: Vec<&str> = r["model_tools"]
        .as_array()
        .expect("names")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(!model.contains(&"conda_approval_decide") && !model.contains(&"conda_approval_status"));

    // The card's result is not an error result (hosts hide those views).
    assert_eq!(r["pending"]["is_error"], false, "{r}");
    assert_eq!(r["pending"]["code"], "approval_pending", "{r}");

    // Longer than the request limit: accepted at once, followed, applied once.
    let slow = r["slow"]["status"].as_str().unwrap_or("");
    assert!(slow.starts_with("Approved and applied"), "{r}");
    let calls = r["slow"]["calls"].as_array().expect("calls");
    assert_eq!(calls[0], "conda_approval_decide", "{r}");
    assert!(
        calls.iter().skip(1).all(|c| c == "conda_approval_status") && calls.len() >= 2,
        "the card followed the decision: {r}"
    );
    assert_eq!(applies(&standin, "slow"), 1);
    assert!(
        r["slow"]["model_context"]["content"][0]["text"]
            .as_str()
            .unwrap_or("")
            .contains("approved"),
        "{r}"
    );

    // The frame's height: reported once per change, and falling with the
    // content (not stuck at the frame's own height).
    let heights: Vec<f64> = r["sizes_after"]
        .as_array()
        .expect("sizes")
        .iter()
        .filter_map(|s| s["height"].as_f64())
        .collect();
    assert!(heights.len() >= 2, "{r}");
    assert!(
        heights.windows(2).all(|w| w[0] != w[1]),
        "one report per change: {heights:?}"
    );
    let tallest = heights.iter().copied().fold(0.0, f64::max);
    let last = *heights.last().expect("a height");
    assert!(last < tallest, "the height fell: {heights:?}");
    let content = r["content_height_after"].as_f64().expect("content height");
    assert!(
        (last - content).abs() <= 2.0,
        "the report is the content's height: {last} vs {content}"
    );
    assert_eq!(r["frame_height_after"].as_f64(), Some(last), "{r}");
    assert_eq!(r["theme_after"], "light", "{r}");
    assert_eq!(r["teardown"], json!({}), "{r}");

    // The host lost the answer: the card asked where the decision was.
    let after = r["lost_after"]["status"].as_str().unwrap_or("");
    assert!(after.starts_with("Approved and applied"), "{r}");
    assert_eq!(applies(&standin, "lostafter"), 1);

    // The decision never reached the server: nothing changed, the card
    // says so and can decide again; the second Approve applies once.
    let before = r["lost_before"]["status"].as_str().unwrap_or("");
    assert!(
        before.contains("nothing was changed") || before.contains("no decision reached"),
        "{r}"
    );
    assert_eq!(r["lost_before"]["approve_enabled"], true, "{r}");
    let again = r["lost_before_again"]["status"].as_str().unwrap_or("");
    assert!(again.starts_with("Approved and applied"), "{r}");
    assert_eq!(applies(&standin, "lostbefore"), 1);
    assert_eq!(r["replay"]["code"], "approval_invalid", "{r}");
}
