#!/usr/bin/env bash
# The `apps` test tier's browser (tests/tests/mcp/apps_browser.rs): Debian's
# chromium when /usr/bin/chromium is missing, and puppeteer-core at the pin of
# tests/apps/package.json into target/apps-npm/ (never into the repository),
# with the official MCP Apps host SDK (@modelcontextprotocol/ext-apps) and
# esbuild, which drive_sdk.mjs bundles it with for the browser.
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ ! -x /usr/bin/chromium ]; then
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
fi
dir="${CARGO_TARGET_DIR:-target}/apps-npm"
mkdir -p "$dir"
cp tests/apps/package.json "$dir/package.json"
npm install --no-audit --no-fund --prefix "$dir" >/dev/null
test -f "$dir/node_modules/puppeteer-core/package.json"
test -f "$dir/node_modules/@modelcontextprotocol/ext-apps/package.json"
