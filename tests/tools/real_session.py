"""One real session against a real conda, with startup, per-call overhead
and memory measured in one run (release build).

Usage (from the checkout, after `cargo build --release --bins`):

    CONDA_MCP_TEST_CONDA=/path/to/conda python3 tests/tools/real_session.py

It starts `target/release/conda-mcp` (or $CONDA_MCP_BIN) with a private
cache, and reports: process start to `initialize` answered, cold (empty
cache) against one bare run of the discovery helper by the same
interpreter, interleaved, and warm (cache hit); `tools/list` count and size;
one `conda_info` call; `conda info --json` through MCP against running it
directly (30 interleaved rounds, medians); the server's and the worker's
peak RSS. Standard library only.
"""
import json, os, statistics, subprocess, sys, tempfile, time
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("CONDA_MCP_BIN", os.path.join(ROOT, "target", "release", "conda-mcp"))
CONDA = os.environ["CONDA_MCP_TEST_CONDA"]
PY = os.environ.get("CONDA_MCP_TEST_PYTHON_OF_CONDA", os.path.join(os.path.dirname(CONDA), "python"))
cache = tempfile.mkdtemp()
env = dict(os.environ, XDG_CACHE_HOME=cache)

class S:
    def __init__(self, *args):
        self.t0 = time.perf_counter()
        self.p = subprocess.Popen([BIN, "--conda-exe", CONDA, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(cache + "/err.log", "a"), text=True, env=env)
        self.n = 0
    def req(self, method, params=None):
        self.n += 1
        m = {"jsonrpc": "2.0", "id": self.n, "method": method}
        if params is not None: m["params"] = params
        self.p.stdin.write(json.dumps(m) + "\n"); self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            r = json.loads(line)
            if r.get("id") == self.n: return r, len(line)
    def init(self):
        r, _ = self.req("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "m", "version": "0"}})
        self.ready = time.perf_counter() - self.t0
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"); self.p.stdin.flush()
        return r
    def rss(self):
        kb = {}
        for line in open(f"/proc/{self.p.pid}/status"):
            if line.startswith(("VmHWM", "VmRSS")): kb[line.split(":")[0]] = int(line.split()[1])
        return kb
    def close(self):
        self.p.stdin.close(); self.p.wait(5)

def bare_helper():
    helper = open(os.path.join(ROOT, "server", "src", "discovery", "helper.py")).read()
    t = time.perf_counter()
    subprocess.run([PY, "-"], input=helper, capture_output=True, text=True)
    return time.perf_counter() - t

# startup: cold (empty cache) vs bare helper, interleaved; then warm
cold, bare, warm = [], [], []
for i in range(5):
    for f in os.listdir(cache):
        if f != "err.log": subprocess.run(["rm", "-rf", os.path.join(cache, f)])
    s = S(); s.init(); cold.append(s.ready); s.close()
    bare.append(bare_helper())
    s = S(); s.init(); warm.append(s.ready); s.close()
print(f"startup to initialize answered: cold {statistics.median(cold)*1000:.0f} ms, bare helper {statistics.median(bare)*1000:.0f} ms "
      f"(ratio {statistics.median(cold)/statistics.median(bare):.2f}), warm (cache hit) {statistics.median(warm)*1000:.0f} ms")

s = S(); r = s.init(); print("serverInfo", r["result"]["serverInfo"], "protocol", r["result"]["protocolVersion"])
for prof in ["portable"]:
    r, n = s.req("tools/list")
    print(f"tools/list: {len(r['result']['tools'])} tools, frame {n} bytes, tools array {len(json.dumps(r['result']['tools'], separators=(',',':')))} bytes")
r, _ = s.req("tools/call", {"name": "conda_info", "arguments": {"json": True}})
sc = r["result"]["structuredContent"]
print("conda_info:", r["result"]["content"][0]["text"].splitlines()[0], "| isError", r["result"].get("isError"),
      "| parsed conda_version", sc["parsed_json"]["conda_version"])
# per-call overhead: conda_info via MCP vs conda info --json direct, interleaved
mcp, direct = [], []
for i in range(30):
    t = time.perf_counter(); s.req("tools/call", {"name": "conda_info", "arguments": {"json": True}}); mcp.append(time.perf_counter() - t)
    t = time.perf_counter(); subprocess.run([CONDA, "info", "--json"], capture_output=True); direct.append(time.perf_counter() - t)
m, d = statistics.median(mcp), statistics.median(direct)
print(f"conda info --json: via MCP {m*1000:.1f} ms, direct {d*1000:.1f} ms, added {(m-d)*1000:.1f} ms (ratio {m/d:.3f}), 30 interleaved rounds")
print("server memory (kB):", s.rss())
w = subprocess.run(["pgrep", "-f", "conda-mcp-worker"], capture_output=True, text=True).stdout.split()
for pid in w:
    try:
        st = {l.split(':')[0]: l.split()[1] for l in open(f'/proc/{pid}/status') if l.startswith(('VmHWM','VmRSS'))}
        print("worker", pid, "memory (kB):", st)
    except OSError: pass
s.close()
