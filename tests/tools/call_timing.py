#!/usr/bin/env python3
"""Median time of one tools/call through a conda-mcp server over stdio.

    call_timing.py [--calls N] [--warmup N] [--concurrent K] [--tool NAME]
                   [--arguments JSON] -- SERVER_COMMAND...

Starts SERVER_COMMAND (e.g. `conda-mcp --conda-exe ...`, or the same under
an emulator), initializes an MCP session by hand (one JSON-RPC message a
line), makes --warmup untimed calls (default 0; the server's warm conda
starts after its first call), then N timed calls of TOOL (default conda_info
with ARGUMENTS {"json": true}) one after another, and prints the median,
minimum and maximum in milliseconds, plus the time from start to the
initialize answer. With --concurrent K each timed step sends K calls at
once and is timed until the last answer. A call that is an error, or a
conda call whose exit code is not 0, ends the run. Standard library only.
docs/testing.md "Linux arm64" uses it to put the arm64 server under qemu
beside the x86-64 one against the same replay conda.
"""

import argparse
import json
import statistics
import subprocess
import sys
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--concurrent", type=int, default=1)
    ap.add_argument("--tool", default="conda_info")
    ap.add_argument("--arguments", type=json.loads, default={"json": True})
    ap.add_argument("command", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.command[1:] if a.command[:1] == ["--"] else a.command
    if not cmd:
        ap.error("no server command after --")
    t0 = time.perf_counter()
    p = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    n = 0

    def requests(method, params, k=1):
        """Sends k requests at once; returns their results in order."""
        nonlocal n
        ids = list(range(n + 1, n + 1 + k))
        n += k
        for i in ids:
            msg = {"jsonrpc": "2.0", "id": i, "method": method, "params": params}
            p.stdin.write((json.dumps(msg) + "\n").encode())
        p.stdin.flush()
        got = {}
        while len(got) < k:
            line = p.stdout.readline()
            if not line:
                sys.exit(f"the server closed its stdout during {method}")
            msg = json.loads(line)
            if msg.get("id") in ids:
                if "error" in msg:
                    sys.exit(f"{method}: {msg['error']}")
                got[msg["id"]] = msg["result"]
        return [got[i] for i in ids]

    def request(method, params):
        return requests(method, params)[0]

    request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "call_timing", "version": "1"}})
    ready = time.perf_counter() - t0
    p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
    p.stdin.flush()
    times = []
    for i in range(a.warmup + a.calls):
        k = a.concurrent if i >= a.warmup else 1
        t = time.perf_counter()
        results = requests("tools/call", {"name": a.tool, "arguments": a.arguments}, k)
        if i >= a.warmup:
            times.append((time.perf_counter() - t) * 1000)
        for r in results:
            if r.get("isError") or r.get("structuredContent", {}).get("exit_code", 0) != 0:
                sys.exit(f"{a.tool} failed: {json.dumps(r)[:500]}")
    p.stdin.close()
    p.wait(timeout=120)
    what = f"{a.calls} x {a.tool}" + (f" ({a.concurrent} at once)" if a.concurrent > 1 else "")
    print(f"initialize answered after {ready * 1000:.0f} ms; {what}: "
          f"median {statistics.median(times):.1f} ms, min {min(times):.1f}, max {max(times):.1f}")


if __name__ == "__main__":
    main()
