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

use std::path::PathBuf;
use std::process::Command;

use serde_json::{Value, json};

use conda_mcp_server::transport::http::tokens::file_line;
use conda_mcp_tests::http::{HttpServer, tempdir};
use conda_mcp_tests::paths::workspace_root;
use conda_mcp_tests::tiers::{Tier, missing};

use super::approval::{env_prefix, transaction_standin};
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

#[test]
fn the_card_in_chromium_shows_and_applies_conda_plan() {
    if !std::path::Path::new(CHROMIUM).exists() {
        missing(
            Tier::Apps,
            TEST,
            "/usr/bin/chromium is missing (tests/apps/install.sh)",
        );
        return;
    }
    let modules = npm_modules();
    if !modules.join("puppeteer-core").join("package.json").exists() {
        missing(
            Tier::Apps,
            TEST,
            "puppeteer-core is not installed (tests/apps/install.sh)",
        );
        return;
    }
    if Command::new("node").arg("--version").output().is_err() {
        missing(Tier::Apps, TEST, "node is missing");
        return;
    }
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
