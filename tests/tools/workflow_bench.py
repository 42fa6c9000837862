"""The six-call assistant workflow against conda-mcp and a peer MCP server,
and `conda_info` warm against a fresh conda, side by side in one run
(release build, a real conda).

Usage (from the checkout, after `cargo build --release --locked --bins`):

    CONDA_MCP_TEST_CONDA=/path/to/conda CONDA_MCP_PEER=/path/to/ccm \\
        python3 tests/tools/workflow_bench.py [ROUNDS]

One round, for each server in turn (conda-mcp with `--allow-write`, then
the peer, e.g. conda-cli-mcp's `ccm --allow-write`): spawn it, `initialize`,
`tools/list`, then `conda_info`, `conda_search`, `conda_create`,
`conda_list`, the environment's export and `conda_remove --all`, all with
`json: true` where the tool has it, against a local file channel
(tests/fixtures/channel/make_channel.py) and a prefix of its own; the
time is from spawning to the last answer. Each answer must be a success.
Then `conda_info {json}` through a conda-mcp with its warm conda ready
against `conda info --json` run directly, interleaved. Prints medians and
ranges, and the two ratios. Without CONDA_MCP_PEER only conda-mcp's side
is measured. Standard library only.
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("CONDA_MCP_BIN", os.path.join(ROOT, "target", "release", "conda-mcp"))
CONDA = os.environ["CONDA_MCP_TEST_CONDA"]
PEER = os.environ.get("CONDA_MCP_PEER")
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
PACKAGE = "conda-mcp-hello"
work = tempfile.mkdtemp(prefix="workflow-bench-")
channel_dir = os.path.join(work, "channel")
subprocess.run([sys.executable, os.path.join(ROOT, "tests", "fixtures", "channel", "make_channel.py"),
                channel_dir], check=True, capture_output=True)
CHANNEL = "file://" + channel_dir


class Session:
    def __init__(self, argv, env):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(os.path.join(work, "stderr.log"), "a"), text=True, env=env)
        self.n = 0

    def req(self, method, params=None):
        self.n += 1
        m = {"jsonrpc": "2.0", "id": self.n, "method": method}
        if params is not None:
            m["params"] = params
        self.p.stdin.write(json.dumps(m) + "\n")
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise RuntimeError(f"{method}: the server closed its output")
            r = json.loads(line)
            if r.get("id") == self.n:
                return r

    def start(self):
        r = self.req("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "workflow-bench", "version": "0"}})
        assert "result" in r, r
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        self.p.stdin.flush()
        tools, cursor = [], None
        while True:
            r = self.req("tools/list", {"cursor": cursor} if cursor else {})
            tools += r["result"]["tools"]
            cursor = r["result"].get("nextCursor")
            if not cursor:
                break
        self.tools = {t["name"]: t for t in tools}

    def call(self, name, args):
        schema = self.tools[name]["inputSchema"]
        props = schema.get("properties", {})
        args = {k: v for k, v in args.items() if k in props}
        for k in schema.get("required", []):  # a required list left empty
            if k not in args and props.get(k, {}).get("type") == "array":
                args[k] = []
        r = self.req("tools/call", {"name": name, "arguments": args})
        res = r.get("result")
        if res is None or res.get("isError"):
            raise RuntimeError(f"{name} failed: {json.dumps(r)[:600]}")
        return res

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def export_tool(tools):
    for name in ("conda_export", "conda_env_export"):
        if name in tools:
            return name
    raise RuntimeError("no export tool")


def workflow(argv, env, tag):
    prefix = os.path.join(work, f"env-{tag}")
    shutil.rmtree(prefix, ignore_errors=True)
    t0 = time.perf_counter()
    s = Session(argv, env)
    s.start()
    common = {"channel": [CHANNEL], "override_channels": True, "json": True}
    s.call("conda_info", {"json": True})
    s.call("conda_search", dict(common, match_spec=PACKAGE))
    s.call("conda_create", dict(common, prefix=prefix, packages=[PACKAGE], yes=True))
    s.call("conda_list", {"prefix": prefix, "json": True})
    s.call(export_tool(s.tools), {"prefix": prefix, "json": True})
    s.call("conda_remove", {"prefix": prefix, "all": True, "yes": True, "json": True})
    took = time.perf_counter() - t0
    s.close()
    assert not os.path.exists(os.path.join(prefix, "conda-meta")), f"{tag}: the environment was not removed"
    return took


def fmt(xs, unit=1.0, digits=2):
    xs = [x * unit for x in xs]
    return f"{statistics.median(xs):.{digits}f} ({min(xs):.{digits}f}-{max(xs):.{digits}f})"


cache = tempfile.mkdtemp(prefix="workflow-cache-")
env = dict(os.environ, XDG_CACHE_HOME=cache, RUST_LOG="warn", CONDA_PKGS_DIRS=os.path.join(work, "pkgs"))
mine, peer = [], []
for i in range(ROUNDS):
    mine.append(workflow([BIN, "--conda-exe", CONDA, "--allow-write"], env, f"mine{i}"))
    if PEER:
        peer.append(workflow([PEER, "--conda-exe", CONDA, "--allow-write"], env, f"peer{i}"))
print(f"workflow (spawn, initialize, tools/list, six calls), {ROUNDS} rounds, seconds: median (range)")
print(f"| conda-mcp | {fmt(mine)} |")
if PEER:
    print(f"| peer ({os.path.basename(PEER)}) | {fmt(peer)} |")
    print(f"| ratio of medians | {statistics.median(mine) / statistics.median(peer):.3f} |")

# conda_info: warm conda-mcp against conda run directly, interleaved.
s = Session([BIN, "--conda-exe", CONDA], env)
s.start()
for _ in range(3):  # the warm conda is ready, its probe done
    s.call("conda_info", {"json": True})
warm, fresh = [], []
for _ in range(max(ROUNDS * 3, 11)):
    t0 = time.perf_counter()
    s.call("conda_info", {"json": True})
    warm.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    subprocess.run([CONDA, "info", "--json"], capture_output=True, cwd="/", check=True)
    fresh.append(time.perf_counter() - t0)
s.close()
print(f"conda_info {{json}} warm vs `conda info --json` directly, {len(warm)} interleaved rounds, ms")
print(f"| warm | {fmt(warm, 1000, 0)} |")
print(f"| fresh | {fmt(fresh, 1000, 0)} |")
print(f"| ratio of medians | {statistics.median(warm) / statistics.median(fresh):.3f} |")
shutil.rmtree(work, ignore_errors=True)
shutil.rmtree(cache, ignore_errors=True)
