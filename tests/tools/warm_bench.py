"""Warm conda against fresh processes, through the server, on a real conda.

Usage (from the checkout, after `cargo build --release --bins`):

    CONDA_MCP_TEST_CONDA=/path/to/conda python3 tests/tools/warm_bench.py [ROUNDS]

Starts two servers on the same conda, one default (warm conda) and one with
`--no-warm-conda`, each with a private discovery cache, and a tiny local
channel (tests/fixtures/channel/make_channel.py). Then:

* first call after startup: `conda_info {json}` right after `initialize`,
  warm server against fresh server (3 pairs of new servers, medians);
* ROUNDS (default 15) interleaved rounds of `conda_env_list`, `conda_list`,
  `conda_config --show`, `conda_search` on the local channel and
  `conda_info`, all with `json: true`, each timed from request to response
  on both servers; the table has the medians and the ratio warm / fresh,
  and checks that both servers returned the same `exit_code` and
  `parsed_json`;
* each round also runs the same argv directly (cwd /, output captured), so
  "fresh through the server − direct" is what the server and worker add per
  call;
* RSS: the zygote's (the worker's Python child), the server's and the
  worker's, from /proc (VmRSS, and VmHWM for server and worker), and the
  proportional set size of server and workers together (shared pages split).

Standard library only.
"""
import json, os, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("CONDA_MCP_BIN", os.path.join(ROOT, "target", "release", "conda-mcp"))
CONDA = os.environ["CONDA_MCP_TEST_CONDA"]
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 15
work = tempfile.mkdtemp(prefix="warm-bench-")
channel = os.path.join(work, "channel")
subprocess.run([sys.executable, os.path.join(ROOT, "tests", "fixtures", "channel", "make_channel.py"), channel],
               check=True, capture_output=True)
CHANNEL = "file://" + channel


class Server:
    def __init__(self, *args):
        cache = tempfile.mkdtemp(dir=work)
        env = dict(os.environ, XDG_CACHE_HOME=cache, RUST_LOG="warn")
        self.p = subprocess.Popen([BIN, "--conda-exe", CONDA, *args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=open(os.path.join(work, "err.log"), "a"),
                                  text=True, env=env)
        self.n = 0
        self.req("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                "clientInfo": {"name": "warm-bench", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, m):
        self.p.stdin.write(json.dumps(m) + "\n")
        self.p.stdin.flush()

    def req(self, method, params=None):
        self.n += 1
        m = {"jsonrpc": "2.0", "id": self.n, "method": method}
        if params is not None:
            m["params"] = params
        self.send(m)
        while True:
            r = json.loads(self.p.stdout.readline())
            if r.get("id") == self.n:
                return r

    def call(self, tool, args):
        t = time.perf_counter()
        r = self.req("tools/call", {"name": tool, "arguments": args})
        dt = time.perf_counter() - t
        sc = r["result"].get("structuredContent") or {}
        return dt, sc

    def close(self):
        self.p.stdin.close()
        self.p.wait(10)


def status(pid):
    kb = {}
    try:
        for line in open(f"/proc/{pid}/status"):
            if line.startswith(("VmHWM", "VmRSS")):
                kb[line.split(":")[0]] = int(line.split()[1])
    except OSError:
        pass
    return kb


def pss_kb(pid):
    try:
        for line in open(f"/proc/{pid}/smaps_rollup"):
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def children(pid):
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = open(f"/proc/{d}/stat").read()
            except OSError:
                continue
            if int(stat[stat.rfind(")") + 2:].split()[1]) == pid:
                out.append(int(d))
    return out


def cmdline(pid):
    try:
        return open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
    except OSError:
        return []


CALLS = [  # (label, tool, arguments, the argv the tool compiles to)
    ("env list --json", "conda_env_list", {"json": True}, ["env", "list", "--json"]),
    ("list --json", "conda_list", {"json": True}, ["list", "--json"]),
    ("config --show --json", "conda_config", {"show": [], "json": True}, ["config", "--show", "--json"]),
    ("search --json (local channel)", "conda_search",
     {"match_spec": "conda-mcp-hello", "channel": [CHANNEL], "override_channels": True, "json": True},
     ["search", "--channel", CHANNEL, "--override-channels", "--json", "conda-mcp-hello"]),
    ("info --json", "conda_info", {"json": True}, ["info", "--json"]),
]


def comparable(sc):
    return sc.get("exit_code"), sc.get("parsed_json") is not None


# First call after startup.
first_warm, first_fresh = [], []
for _ in range(3):
    for args, into in (((), first_warm), (("--no-warm-conda",), first_fresh)):
        s = Server(*args)
        into.append(s.call("conda_info", {"json": True})[0])
        s.close()
print(f"first call after startup (conda_info): warm server {statistics.median(first_warm)*1000:.0f} ms, "
      f"fresh server {statistics.median(first_fresh)*1000:.0f} ms")

warm, fresh = Server(), Server("--no-warm-conda")
for s in (warm, fresh):  # the first call starts the worker (and the zygote)
    s.call("conda_env_list", {"json": True})
time.sleep(3)  # the zygote gets ready
times = {label: ([], [], []) for label, _, _, _ in CALLS}
for i in range(ROUNDS):
    for label, tool, args, argv in CALLS:
        pair = [(warm, 0), (fresh, 1)] if i % 2 == 0 else [(fresh, 1), (warm, 0)]
        results = [None, None]
        for s, k in pair:
            dt, sc = s.call(tool, args)
            times[label][k].append(dt)
            results[k] = comparable(sc)
        assert results[0] == results[1], (label, results)
        # The same argv run directly, as the worker runs it (cwd /).
        t = time.perf_counter()
        subprocess.run([CONDA, *argv], capture_output=True, cwd="/")
        times[label][2].append(time.perf_counter() - t)

print()
print("| argv | conda run directly | through the server, fresh process | added per call (fresh) "
      "| through the server, warm conda | warm / fresh |")
print("| --- | --- | --- | --- | --- | --- |")
for label, _, _, _ in CALLS:
    w, f, d = (statistics.median(times[label][k]) for k in range(3))
    print(f"| {label} | {d*1000:.0f} ms | {f*1000:.0f} ms | {(f-d)*1000:+.1f} ms | {w*1000:.0f} ms | {w/f:.2f} |")
print(f"\n(medians of {ROUNDS} interleaved rounds)")

worker = [c for c in children(warm.p.pid) if b"--socket" in cmdline(c)]
zyg = [z for w in worker for z in children(w) if b"-c" in cmdline(z)]
fresh_worker = [c for c in children(fresh.p.pid) if b"--socket" in cmdline(c)]
print(f"zygote RSS: {', '.join(str(status(z).get('VmRSS', 0)/1024)[:5] + ' MB' for z in zyg) or 'none found'}")
srv = status(fresh.p.pid)
wk = ", ".join("%.1f" % (status(w).get("VmHWM", 0) / 1024) for w in fresh_worker)
print(f"without the zygote: server VmHWM {srv.get('VmHWM', 0)/1024:.1f} MB, worker VmHWM {wk} MB")
# Proportional set size: shared pages (the binaries' text, libc) split among
# the processes that map them, i.e. what these processes cost together.
pss = [pss_kb(p) for p in [fresh.p.pid, *fresh_worker]]
print(f"without the zygote: PSS server + workers {sum(pss)/1024:.1f} MB "
      f"({' + '.join('%.1f' % (k / 1024) for k in pss)})")
warm.close()
fresh.close()
