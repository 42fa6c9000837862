// The apps tier's run through the official MCP Apps host SDK
// (tests/tests/mcp/apps_browser.rs runs it): the approval card rendered by
// headless Chromium inside sdk-host.html, whose bridge is the SDK's AppBridge
// (@modelcontextprotocol/ext-apps, pinned in package.json, bundled here with
// esbuild), against conda-mcp --listen for a stand-in conda whose every
// transaction is slow. The host gives each relayed call a request limit
// shorter than a decision takes (as the SDK's 60 s is shorter than a real
// conda's re-plan and apply). Prints one JSON report on stdout; the Rust test
// checks it against the stand-in's runs and environments.
// Usage: node drive_sdk.mjs CONFIG.json
//
// CONFIG: {chromium, npm (the node_modules folder), host (sdk-host.html's
//          path), entry (sdk-bridge.mjs's path), work (a scratch folder),
//          server (URL), alice (token), limit_ms (the host's request limit),
//          profile (Chromium's profile folder)}

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const config = JSON.parse(readFileSync(process.argv[2], "utf8"));
const require = createRequire(join(config.npm, "noop.js"));
const puppeteer = require("puppeteer-core");
const esbuild = require("esbuild");

const bundle = join(config.work, "ext-apps-bridge.js");
await esbuild.build({
  entryPoints: [config.entry],
  bundle: true,
  format: "iife",
  platform: "browser",
  outfile: bundle,
  nodePaths: [config.npm],
  logLevel: "error",
});
const sdkVersion = JSON.parse(readFileSync(join(config.npm, "@modelcontextprotocol/ext-apps/package.json"), "utf8")).version;

const UI = { extensions: { "io.modelcontextprotocol/ui": { mimeTypes: ["text/html;profile=mcp-app"] } } };
let nextId = 1;

/** One request of the stateless lifecycle; its JSON-RPC answer (or a
 *  "Request timed out" error after `limitMs`, the connection closed). */
async function rpc(method, params, limitMs) {
  const headers = {
    "Content-Type": "application/json",
    Accept: "application/json, text/event-stream",
    Authorization: `Bearer ${config.alice}`,
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
        "io.modelcontextprotocol/clientInfo": { name: "conda-mcp-apps-sdk-host", version: "1" },
        "io.modelcontextprotocol/clientCapabilities": UI,
      },
    },
  };
  try {
    const r = await fetch(config.server, {
      method: "POST", headers, body: JSON.stringify(body),
      signal: limitMs ? AbortSignal.timeout(limitMs) : undefined,
    });
    return JSON.parse(await r.text());
  } catch (e) {
    return { jsonrpc: "2.0", id: body.id, error: { code: -32001, message: "Request timed out" } };
  }
}

const report = { sdk_version: sdkVersion };
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
  const listed = (await rpc("tools/list", {})).result.tools;
  const appTools = listed
    .filter((t) => (t._meta?.ui?.visibility ?? ["model", "app"]).includes("app"))
    .map((t) => t.name);
  report.model_tools = listed
    .filter((t) => (t._meta?.ui?.visibility ?? ["model", "app"]).includes("model"))
    .map((t) => t.name);
  const read = await rpc("resources/read", { uri: "ui://conda-mcp/approval" });
  const view = read.result.contents[0];

  const page = await browser.newPage();
  await page.setViewport({ width: 700, height: 900 });
  const consoleErrors = [];
  page.on("console", (m) => { if (m.type() === "error") consoleErrors.push(m.text()); });
  page.on("pageerror", (e) => consoleErrors.push(String(e)));
  await page.exposeFunction("mcpCall", async (params, limitMs) =>
    JSON.stringify(await rpc("tools/call", JSON.parse(params), limitMs)));
  await page.goto(pathToFileURL(config.host).href);
  await page.addScriptTag({ path: bundle });
  await page.evaluate((ms) => { window.host.limitMs = ms; }, config.limit_ms);

  /** The model calls conda_create for `name`; the SDK host shows the card. */
  async function showCard(name) {
    const args = { name, packages: ["zlib=1.3"], json: true };
    const r = await rpc("tools/call", { name: "conda_create", arguments: args });
    await page.evaluate((html, a, res, tools) => window.showWithSdk(html, "conda_create", a, res, tools),
      view.text, args, r.result, appTools);
    const frame = await (await page.$("iframe")).contentFrame();
    await frame.waitForSelector("#card:not([hidden])", { timeout: 20000 });
    return { result: r.result, frame };
  }
  async function settled(frame) {
    await frame.waitForFunction(() => {
      const s = document.getElementById("status").textContent;
      return s && !s.endsWith("…");
    }, { timeout: 180000, polling: 100 });
    return frame.evaluate(() => ({
      status: document.getElementById("status").textContent,
      approve_enabled: !document.getElementById("approve").disabled,
      decline_enabled: !document.getElementById("decline").disabled,
    }));
  }
  const sizes = () => page.evaluate(() => window.host.sizes.slice());
  const calls = () => page.evaluate(() => { const c = window.host.calls.slice(); window.host.calls = []; return c; });
  const frameHeight = () => page.evaluate(() => document.querySelector("iframe").clientHeight);

  // 1. A decision that outlasts the host's request limit.
  {
    const { result, frame } = await showCard("slow");
    report.pending = { is_error: result.isError, code: result.structuredContent?.error?.code ?? null };
    await frame.click("#approve");
    report.slow = await settled(frame);
    report.slow.calls = await calls();
    report.slow.model_context = await page.evaluate(() => window.host.modelContext);
  }
  // 2. The content shrinks (the host cancels the call before a decision:
  // the card hides its plan); the frame's reported height must fall with it.
  {
    const { frame } = await showCard("shrink");
    await new Promise((r) => setTimeout(r, 300));
    report.sizes_shown = await sizes();
    await page.evaluate(() => window.host.bridge.sendToolCancelled({ reason: "the test host's cancel" }));
    await frame.waitForFunction(() => document.getElementById("card").hidden, { timeout: 10000 });
    await new Promise((r) => setTimeout(r, 500));
    report.sizes_after = await sizes();
    report.frame_height_after = await frameHeight();
    // The body's own box (its margin is 0): the content, whatever the
    // frame's height.
    report.content_height_after = await frame.evaluate(() =>
      Math.ceil(document.body.getBoundingClientRect().height));
    // Theme change and teardown, through the SDK.
    await page.evaluate(() => window.host.bridge.sendHostContextChange({ theme: "light" }));
    await frame.waitForFunction(() => document.documentElement.getAttribute("data-theme") === "light", { timeout: 10000 });
    report.theme_after = await frame.evaluate(() => document.documentElement.getAttribute("data-theme"));
    report.teardown = await page.evaluate(() => window.host.bridge.teardownResource({}).then((r) => r, (e) => ({ error: String(e) })));
  }
  // 3. The decision reached the server, but the host lost its answer.
  {
    const { frame } = await showCard("lostafter");
    await page.evaluate(() => { window.host.lose = "after"; });
    await frame.click("#approve");
    report.lost_after = await settled(frame);
    report.lost_after.calls = await calls();
  }
  // 4. The decision never reached the server: the card says so, and the
  // person decides again.
  {
    const { result, frame } = await showCard("lostbefore");
    const approval = result.structuredContent.error.details.approval;
    await page.evaluate(() => { window.host.lose = "before"; });
    await frame.click("#approve");
    report.lost_before = await settled(frame);
    report.lost_before.calls = await calls();
    await frame.click("#approve");
    report.lost_before_again = await settled(frame);
    report.lost_before_again.calls = await calls();
    // The same decision replayed through the bridge: the id is spent.
    const replay = await page.evaluate((id, tool) => window.host.bridge.oncalltool({ name: tool, arguments: { id, decision: "approve" } }),
      approval.id, approval.decide_tool);
    report.replay = { code: replay.structuredContent?.error?.code ?? null };
  }
  report.took = await page.evaluate(() => window.host.took);
  report.console_errors = consoleErrors;
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(report) + "\n");
