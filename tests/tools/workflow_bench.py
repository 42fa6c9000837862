"""The six-call assistant workflow, the first call, warm calls and memory at
rest: conda-mcp against a fresh conda and a peer MCP server, side by side
in one run (release build, a real conda).

Usage (from the checkout, after `cargo build --release --locked --bins`):

    CONDA_MCP_TEST_CONDA=/path/to/conda CONDA_MCP_PEER=/path/to/ccm \\
        python3 tests/tools/workflow_bench.py [ROUNDS]

Sections, each ROUNDS rounds (default 5), the sides interleaved:

1. Workflow from a cold start: a new discovery cache each round (conda-mcp
   runs its discovery helper), then spawn, `initialize`, `tools/list`,
   `conda_info`, `conda_search`, `conda_create`, `conda_list`, the
   environment's export and `conda_remove --all`, all with `json: true`
   where the tool has it, against a local file channel
   (tests/fixtures/channel/make_channel.py) and a prefix of its own; the
   time is from spawning to the last answer, and each answer must be a
   success. The peer (e.g. conda-cli-mcp's `ccm --allow-write`) runs the
   same calls.
2. The same workflow from a warm discovery cache (one untimed run first).
3. The first call: a new server on the warm cache, `initialize`,
   `tools/list`, then one call of `conda_info`, `conda_env_list` or
   `conda_list` (json), timed from request to answer, against the same argv
   run directly as a fresh conda (`conda info --json`, ...), interleaved.
   The worker's log (RUST_LOG=info) gives where the warm conda's start went
   ("warm conda ready ... phases_ms=spawn=.. imports=.. plugins=.. probe=..
   freeze=..") and how long the call waited for it.
4. Warm calls: one server whose warm conda is ready, the same three calls
   against the same argv run directly, interleaved.
5. Memory at rest: a server after `tools/list`, idle (its warm conda ready,
   or `--no-warm-conda`), and the peer after `tools/list`: RSS and PSS of
   every process of each tree, from /proc/<pid>/smaps_rollup.

Prints medians and ranges, and the ratios. Without CONDA_MCP_PEER the peer
columns are left out. Standard library only.
"""
import json, os, re, shutil, statistics, subprocess, sys, tempfile, time

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
BASE_ENV = dict(os.environ, CONDA_PKGS_DIRS=os.path.join(work, "pkgs"))
BASE_ENV.pop("RUST_LOG", None)


class Session:
    def __init__(self, argv, env, log=None):
        self.log = log or os.path.join(work, "stderr.log")
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(self.log, "a"), text=True, env=env)
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
        return self

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

    def timed(self, name, args):
        t0 = time.perf_counter()
        self.call(name, args)
        return time.perf_counter() - t0

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def mine_argv(*extra):
    return [BIN, "--conda-exe", CONDA, "--allow-write", *extra]


def peer_argv():
    return [PEER, "--conda-exe", CONDA, "--allow-write"]


def export_tool(tools):
    for name in ("conda_export", "conda_env_export"):
        if name in tools:
            return name
    raise RuntimeError("no export tool")


def workflow(argv, env, tag):
    prefix = os.path.join(work, f"env-{tag}")
    shutil.rmtree(prefix, ignore_errors=True)
    t0 = time.perf_counter()
    s = Session(argv, env).start()
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


def ratio(a, b):
    return f"{statistics.median(a) / statistics.median(b):.3f}"


def fresh(argv):
    t0 = time.perf_counter()
    subprocess.run([CONDA, *argv], capture_output=True, cwd="/", check=True, env=BASE_ENV)
    return time.perf_counter() - t0


def load():
    return os.getloadavg()[0]


loads = [load()]

# 1 and 2: the workflow, cold (new discovery cache each round) and from a
# warm discovery cache.
warm_cache = tempfile.mkdtemp(prefix="workflow-cache-", dir=work)
warm_env = dict(BASE_ENV, XDG_CACHE_HOME=warm_cache, RUST_LOG="warn")
workflow(mine_argv(), warm_env, "prime")
results = {k: [] for k in ("cold", "cold-peer", "warm", "warm-peer")}
for i in range(ROUNDS):
    cold_env = dict(BASE_ENV, XDG_CACHE_HOME=tempfile.mkdtemp(prefix="cold-", dir=work), RUST_LOG="warn")
    results["cold"].append(workflow(mine_argv(), cold_env, f"cold{i}"))
    if PEER:
        results["cold-peer"].append(workflow(peer_argv(), cold_env, f"coldpeer{i}"))
    results["warm"].append(workflow(mine_argv(), warm_env, f"warm{i}"))
    if PEER:
        results["warm-peer"].append(workflow(peer_argv(), warm_env, f"warmpeer{i}"))
    loads.append(load())
print(f"## workflow (spawn, initialize, tools/list, six calls), {ROUNDS} rounds, seconds: median (range)")
for mode in ("cold", "warm"):
    label = "cold start (empty discovery cache)" if mode == "cold" else "warm discovery cache"
    row = f"| {label} | {fmt(results[mode])} |"
    if PEER:
        row += f" {fmt(results[mode + '-peer'])} | {ratio(results[mode], results[mode + '-peer'])} |"
    print(row)

# 3: the first call of a new server (warm discovery cache) against a fresh
# conda, with the worker's account of the warm conda's start.
LISTED = os.path.join(work, "listed")
subprocess.run([CONDA, "create", "--prefix", LISTED, "--channel", CHANNEL, "--override-channels",
                "--yes", "--quiet", PACKAGE], capture_output=True, check=True, env=BASE_ENV)
FIRST = [
    ("conda_info", {"json": True}, ["info", "--json"]),
    ("conda_env_list", {"json": True}, ["env", "list", "--json"]),
    ("conda_list", {"prefix": LISTED, "json": True}, ["list", "--json", "--prefix", LISTED]),
]
first_env = dict(warm_env, RUST_LOG="warn,conda_mcp_worker=info")
phase_re = re.compile(r"phases_ms=\"?([a-z]+=\d+(?: [a-z]+=\d+)*)")
waited_re = re.compile(r"waited_ms=(\d+)")
first = {tool: ([], [], [], []) for tool, _, _ in FIRST}
for i in range(ROUNDS):
    for tool, args, argv in FIRST:
        log = os.path.join(work, f"first-{tool}-{i}.log")
        s = Session(mine_argv(), first_env, log).start()
        took = s.timed(tool, args)
        time.sleep(0.3)  # the worker's log thread
        s.close()
        text = open(log).read()
        m = phase_re.search(text)
        phases = dict((k, int(v)) for k, v in (p.split("=") for p in m.group(1).split())) if m else {}
        w = waited_re.search(text)
        mine_t, fresh_t, phase_l, waited_l = first[tool]
        mine_t.append(took)
        fresh_t.append(fresh(argv))
        phase_l.append(phases)
        waited_l.append(int(w.group(1)) if w else None)
    loads.append(load())
# What a fresh conda spends before its command, for comparison with the
# warm conda's start: the interpreter alone, and the interpreter importing
# what the warm conda imports (conda's entry point, its context, its
# plugins).
with open(CONDA, "rb") as f:
    PYTHON = f.readline()[2:].strip().decode()
PREFIX = ("import conda.cli.main, conda.exception_handler, conda.base.context, conda.cli.conda_argparse\n"
          "from conda.base.context import context\ncontext.plugin_manager")
bare, prefix_t = [], []
for _ in range(ROUNDS):
    for argv, out in (([PYTHON, "-c", "pass"], bare), ([PYTHON, "-c", PREFIX], prefix_t)):
        t0 = time.perf_counter()
        subprocess.run(argv, capture_output=True, cwd="/", check=True, env=BASE_ENV)
        out.append(time.perf_counter() - t0)
print(f"## first call of a new server (warm discovery cache) against a fresh conda, {ROUNDS} rounds, ms")
print(f"| a fresh interpreter: `python -c pass` {fmt(bare, 1000, 0)}; importing conda and its plugins "
      f"{fmt(prefix_t, 1000, 0)} |")
for tool, _, argv in FIRST:
    mine_t, fresh_t, phase_l, waited_l = first[tool]
    names = [k for k in ("spawn", "imports", "plugins", "probe", "freeze") if any(k in p for p in phase_l)]
    phase_txt = " ".join(f"{k} {statistics.median([p.get(k, 0) for p in phase_l]):.0f}" for k in names)
    waits = [w for w in waited_l if w is not None]
    wait_txt = f"waited {statistics.median(waits):.0f} ms in {len(waits)}/{len(waited_l)}" if waits else "no wait logged"
    print(f"| {tool} | {fmt(mine_t, 1000, 0)} | conda {' '.join(argv)}: {fmt(fresh_t, 1000, 0)} | "
          f"{ratio(mine_t, fresh_t)} | start: {phase_txt}; {wait_txt} |")

# 4: warm calls against a fresh conda.
s = Session(mine_argv(), warm_env).start()
for _ in range(3):
    s.call("conda_info", {"json": True})  # the warm conda is ready
warm = {tool: ([], []) for tool, _, _ in FIRST}
for _ in range(max(ROUNDS * 2, 7)):
    for tool, args, argv in FIRST:
        warm[tool][0].append(s.timed(tool, args))
        warm[tool][1].append(fresh(argv))
s.close()
loads.append(load())
print(f"## warm calls against a fresh conda, {max(ROUNDS * 2, 7)} interleaved rounds, ms")
for tool, _, argv in FIRST:
    print(f"| {tool} | {fmt(warm[tool][0], 1000, 0)} | {fmt(warm[tool][1], 1000, 0)} | {ratio(*warm[tool])} |")


# 5: memory at rest.
def tree(pid):
    out = [pid]
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                for c in f.read().split():
                    out += tree(int(c))
    except OSError:
        pass
    return out


def rollup(pid):
    fields = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f.read().splitlines()[1:]:
            k, v = line.split(":", 1)
            fields[k] = int(v.split()[0])
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = f.read().split(b"\0")
    name = os.path.basename(argv[0].decode(errors="replace"))
    if name.startswith("python") and len(argv) > 1:
        arg = argv[1].decode(errors="replace")
        name += " " + ("-c (warm conda)" if arg == "-c" and b"conda-mcp" in argv[2][:200] else arg[:40])
    return name, fields["Rss"] / 1024, fields["Pss"] / 1024


def at_rest(argv, env, ready=None):
    log = os.path.join(work, f"rest-{len(os.listdir(work))}.log")
    s = Session(argv, env, log).start()
    # The worker logs "warm conda ready" when the start ends (a worker
    # before that log line: 20 s, well past any start measured here).
    end = time.time() + 20
    while ready and ready not in open(log).read() and time.time() < end:
        time.sleep(0.1)
    time.sleep(2)
    rows = [rollup(p) for p in tree(s.p.pid)]
    s.close()
    return rows


def mib(rows, i):
    return sum(r[i] for r in rows)


rest_env = dict(warm_env, RUST_LOG="warn,conda_mcp_worker=info")
sides = [("conda-mcp (warm conda)", lambda: at_rest(mine_argv(), rest_env, "warm conda ready")),
         ("conda-mcp --no-warm-conda", lambda: at_rest(mine_argv("--no-warm-conda"), rest_env))]
if PEER:
    sides.append((f"peer ({os.path.basename(PEER)})", lambda: at_rest(peer_argv(), warm_env)))
rest = {name: [] for name, _ in sides}
for _ in range(3):
    for name, f in sides:
        rest[name].append(f())
print("## memory at rest (after tools/list, idle 2 s), MiB, median of 3: RSS / PSS of the tree; its processes")
for name, _ in sides:
    runs = rest[name]
    rss = statistics.median(mib(r, 1) for r in runs)
    pss = statistics.median(mib(r, 2) for r in runs)
    procs = "; ".join(f"{n} {r:.1f}/{p:.1f}" for n, r, p in runs[-1])
    print(f"| {name} | {rss:.1f} | {pss:.1f} | {procs} |")
print(f"load average (1 min) during the run: {min(loads):.1f}-{max(loads):.1f}")
shutil.rmtree(work, ignore_errors=True)
