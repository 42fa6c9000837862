"""How many calls conda-mcp answers while nobody reads its stderr.

Usage (after `cargo build --bins`):

    python3 tests/tools/unread_stderr.py CONDA [PIPE_BYTES] [RUST_LOG]

Starts target/debug/conda-mcp (or $CONDA_MCP_BIN) against CONDA (a real
conda or a stand-in's bin/conda) with stderr on a pipe of PIPE_BYTES
(default 4096, the smallest Linux allows) that nobody reads, makes up to
1,000 cheap calls (invalid arguments and resource reads, which conda does
not run), each given 5 s, then `ping`, and prints how many were answered.
Docs: docs/operating.md "Logs a host does not read". Standard library only.
"""
import fcntl, json, os, select, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("CONDA_MCP_BIN", os.path.join(ROOT, "target", "debug", "conda-mcp"))
conda = sys.argv[1]
pipe_size = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
level = sys.argv[3] if len(sys.argv) > 3 else "info"
F_SETPIPE_SZ = 1031

r, w = os.pipe()
fcntl.fcntl(w, F_SETPIPE_SZ, pipe_size)
cache = tempfile.mkdtemp()
p = subprocess.Popen(
    [BIN, "--conda-exe", conda, "--worker-exe", os.path.join(os.path.dirname(BIN), "conda-mcp-worker")],
    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=w,
    env=dict(os.environ, XDG_CACHE_HOME=cache, RUST_LOG=level))
os.close(w)


def req(i, method, params, timeout=5.0):
    p.stdin.write((json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params}) + "\n").encode())
    p.stdin.flush()
    deadline = time.time() + timeout
    while time.time() < deadline:
        if select.select([p.stdout], [], [], max(0.0, deadline - time.time()))[0]:
            msg = json.loads(p.stdout.readline())
            if msg.get("id") == i:
                return msg
    return None


req(1, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                      "clientInfo": {"name": "unread-stderr", "version": "0"}}, 120)
p.stdin.write(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
answered = 0
for i in range(1000):
    if i % 2:
        call = ("resources/read", {"uri": "conda://capabilities"})
    else:
        call = ("tools/call", {"name": "conda_info", "arguments": {"no_such_option": True}})
    if req(10 + i, *call) is None:
        break
    answered += 1
ping = req(5000, "ping", {}) is not None
print(f"pipe {pipe_size} bytes, RUST_LOG={level}: {answered} of 1000 calls answered, ping answered: {ping}")
p.kill()
p.wait()
os.close(r)
