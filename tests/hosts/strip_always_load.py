"""A stdio filter between a host and an MCP server that removes
`_meta["anthropic/alwaysLoad"]` from every tool of a `tools/list` result,
so a host sees the server as it was before it marked its core tools: the
"before" of Claude Code's first-request figures (docs/approval.md, "Claude
Code's first request"; tests/tests/mcp/hosts.rs).

    python3 strip_always_load.py COMMAND [ARG...]

Starts COMMAND with the same stdin/stdout framing (one JSON-RPC message a
line, MCP's stdio transport), passes every line through unchanged except
`tools/list` results, and exits with COMMAND's status. Standard library
only.
"""

import json
import subprocess
import sys
import threading


def strip(line):
    try:
        msg = json.loads(line)
    except ValueError:
        return line
    tools = (msg.get("result") or {}).get("tools") if isinstance(msg, dict) else None
    if not isinstance(tools, list):
        return line
    for tool in tools:
        meta = tool.get("_meta")
        if isinstance(meta, dict):
            meta.pop("anthropic/alwaysLoad", None)
    return json.dumps(msg, separators=(",", ":")) + "\n"


def main():
    child = subprocess.Popen(sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def pump_in():
        for line in sys.stdin.buffer:
            try:
                child.stdin.write(line)
                child.stdin.flush()
            except BrokenPipeError:
                break
        try:
            child.stdin.close()
        except BrokenPipeError:
            pass

    threading.Thread(target=pump_in, daemon=True).start()
    out = sys.stdout
    for raw in child.stdout:
        out.write(strip(raw.decode("utf-8")))
        out.flush()
    sys.exit(child.wait())


if __name__ == "__main__":
    main()
