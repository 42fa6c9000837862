// The entry of the apps tier's bundle of the official MCP Apps host SDK
// (@modelcontextprotocol/ext-apps, its host side, pinned in package.json):
// drive.mjs bundles it with esbuild into one script that sdk-host.html loads,
// since a browser page cannot import the SDK's npm packages by name.
import { AppBridge, PostMessageTransport } from "@modelcontextprotocol/ext-apps/app-bridge";

window.ExtApps = { AppBridge, PostMessageTransport };
