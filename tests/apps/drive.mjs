// The apps tier's browser driver (tests/tests/mcp/apps_browser.rs runs it):
// plays the model and the person against conda-mcp --listen (the stateless
// 2026-07-28 lifecycle, bearer tokens), with the approval card rendered by
// headless Chromium inside tests/apps/host.html. Prints one JSON report on
// stdout; the Rust test checks it against conda's dry run and the stand-in's
// environments. Usage: node drive.mjs CONFIG.json
//
// CONFIG: {chromium, npm (the node_modules folder), host (host.html's path),
//          main, short (server URLs; short runs with a 2 s --timeout),
//          alice, bob (tokens), screenshots (folder)}

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const require = createRequire(join(config.npm, "noop.js"));
const puppeteer = require("puppeteer-core");

const UI = { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } };
let nextId = 1;

/** One request of the stateless lifecycle; its JSON-RPC answer. */
async function rpc(url, token, method, params, caps) {
  const headers = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    Authorization: `Bearer ${token}`,
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": method,
  };
  if (params.name) headers["Mcp-Name"] = params.name;
  else if (params.uri) headers["Mcp-Name"] = params.uri;
  const body = {
    jsonrpc: "2.0", id: nextId++, method,
    params: {
      ...params,
      _meta: {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": { name: "conda-mcp-apps-test-host", version: "1" },
        "io.modelcontextprotocol/clientCapabilities": caps,
      },
    },
  };
  const r = await fetch(url, { method: "POST", headers, body: JSON.stringify(body) });
  return JSON.parse(await r.text());
}

const report = {};
const browser = await puppeteer.launch({
  executablePath: config.chromium,
  headless: true,
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
    "--user-data-dir=" + config.profile,
  ],
});
try {
  // What the model is offered: the host's tools/list, without the tools
  // whose visibility leaves out "model"; and a client without the extension.
  const listed = (await rpc(config.main, config.alice, "tools/list", {}, UI)).result.tools;
  report.listed_with_extension = listed.map((t) => ({ name: t.name, ui: t._meta?.ui ?? null }));
  report.model_tools = listed
    .filter((t) => (t._meta?.ui?.visibility ?? ["model", "app"]).includes("model"))
    .map((t) => t.name);
  const appTools = listed
    .filter((t) => (t._meta?.ui?.visibility ?? ["model", "app"]).includes("app"))
    .map((t) => t.name);
  report.listed_without_extension = (await rpc(config.main, config.alice, "tools/list", {}, {})).result.tools.map((t) => t.name);
  const create = listed.find((t) => t.name === "conda_create");
  const uri = create._meta.ui.resourceUri;
  const read = await rpc(config.main, config.alice, "resources/read", { uri }, UI);
  const view = read.result.contents[0];
  report.view = { mimeType: view.mimeType, csp: view._meta?.ui?.csp ?? null, bytes: view.text.length };

  const page = await browser.newPage();
  await page.setViewport({ width: 700, height: 900 });
  const consoleErrors = [];
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
  page.on("requestfailed", () => {});
  let server = config.main;
  await page.exposeFunction("mcpCall", async (params) =>
    JSON.stringify(await rpc(server, config.alice, "tools/call", JSON.parse(params), UI)));
  await page.goto(pathToFileURL(config.host).href);

  /** The model calls conda_create for `name` on `url`; the host shows the card. */
  async function showCard(url, name) {
    server = url;
    const args = { name, packages: ["zlib=1.3"], json: true };
    const r = await rpc(url, config.alice, "tools/call", { name: "conda_create", arguments: args }, UI);
    await page.evaluate((html, a, res, tools) => window.show(html, "conda_create", a, res, tools),
      view.text, args, r.result, appTools);
    const frame = await (await page.$("iframe")).contentFrame();
    await frame.waitForSelector("#card:not([hidden])", { timeout: 10000 });
    return { result: r.result, frame };
  }
  async function shown(frame) {
    return frame.evaluate(() => ({
      command: document.getElementById("command").textContent,
      environment: document.getElementById("environment").textContent,
      link: [...document.querySelectorAll("#link tr")].map((tr) => [...tr.cells].map((c) => c.textContent).join(" ")),
      unlink: [...document.querySelectorAll("#unlink tr")].map((tr) => [...tr.cells].map((c) => c.textContent).join(" ")),
      focused: document.activeElement && document.activeElement.id,
      background: getComputedStyle(document.body).backgroundColor,
      theme: document.documentElement.getAttribute("data-theme"),
    }));
  }
  async function statusAfterDecision(frame) {
    await frame.waitForFunction(() => {
      const s = document.getElementById("status").textContent;
      return s && !s.endsWith("…");
    }, { timeout: 60000 });
    return frame.$eval("#status", (e) => e.textContent);
  }

  // 1. Decline, by keyboard: the focus starts on Decline, Enter presses it.
  {
    const { result, frame } = await showCard(config.main, "declined");
    report.decline = { model_text: result.content[0].text.split("\n")[0], shown: await shown(frame) };
    await page.keyboard.press("Enter");
    report.decline.status = await statusAfterDecision(frame);
  }
  // 2. Approve, by click; then the same decision replayed through the bridge.
  {
    const { result, frame } = await showCard(config.main, "demo");
    const approval = result.structuredContent.error.details.approval;
    report.approve = { card: approval.plan, shown: await shown(frame) };
    await (await page.$("iframe")).screenshot({ path: join(config.screenshots, "approval-card.png") });
    await frame.click("#approve");
    report.approve.status = await statusAfterDecision(frame);
    report.approve.model_context = await page.evaluate(() => window.host.modelContext);
    await (await page.$("iframe")).screenshot({ path: join(config.screenshots, "approval-card-applied.png") });
    const replay = await page.evaluate((id, tool) =>
      window.callAsApp({ name: tool, arguments: { id, decision: "approve" } }), approval.id, approval.decide_tool);
    report.replay = { code: replay.structuredContent?.error?.code ?? null, is_error: replay.isError };
    // A change the view itself asks for (conda_create is visible to apps
    // too, by default) is only another card: nothing applies.
    report.view_asks_change = await page.evaluate(() =>
      window.callAsApp({ name: "conda_create", arguments: { name: "sneaky", packages: ["zlib=1.3"] } })
        .then((r) => r.structuredContent?.error?.code ?? null, (e) => e.message));
  }
  // 3. Another principal with the person's live id.
  {
    const { result } = await showCard(config.main, "other");
    const approval = result.structuredContent.error.details.approval;
    const r = await rpc(config.main, config.bob, "tools/call",
      { name: approval.decide_tool, arguments: { id: approval.id, decision: "approve" } }, UI);
    report.other_principal = { code: r.result.structuredContent?.error?.code ?? null };
  }
  // 4. An expired id: the short server's --timeout is 2 s.
  {
    const { frame } = await showCard(config.short, "late");
    await new Promise((r) => setTimeout(r, 2300));
    await frame.click("#approve");
    report.expired = { status: await statusAfterDecision(frame) };
  }
  report.console_errors = consoleErrors;
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(report) + "\n");
