"""What answering long calls as MCP tasks costs, against a real conda:
a solve (`conda_create` with `dry_run`, on a local file channel) called by
a client that declares the tasks extension and by one that does not,
interleaved rounds, medians.

Usage (from the checkout, after `cargo build --release --bins`):

    CONDA_MCP_TEST_CONDA=/path/to/conda python3 tests/tools/task_figures.py [ROUNDS]
    CONDA_MCP_TEST_CONDA=/path/to/conda python3 tests/tools/task_figures.py --approve [ROUNDS]

It starts `target/release/conda-mcp` (or $CONDA_MCP_BIN) twice with a
private cache (one `initialize` declaring the extension, one not) and
reports: tools/call to the task handle; tools/call to `completed` seen by
`tasks/get` polled every 50 ms; the plain call's own duration; the time of
one `tasks/get`; and that the completed task's result equals the plain
one (apart from `duration_ms`).

With `--approve`: one server with `--approve-writes` whose client declares
the tasks extension and elicitation; each round a `conda_create` (applied,
into a new prefix, same channel): tools/call to the task handle; to
`input_required` (the approval question, after conda's dry run) seen by
`tasks/get` polled every 50 ms; from the accepting `tasks/update` to
`completed` (the second dry run and the apply). Standard library only.
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("CONDA_MCP_BIN", os.path.join(ROOT, "target", "release", "conda-mcp"))
WORKER = os.path.join(os.path.dirname(BIN), "conda-mcp-worker")
CONDA = os.environ["CONDA_MCP_TEST_CONDA"]
APPROVE = "--approve" in sys.argv[1:]
_counts = [a for a in sys.argv[1:] if a != "--approve"]
ROUNDS = int(_counts[0]) if _counts else 5
work = tempfile.mkdtemp(prefix="task-figures-")
env = dict(os.environ, XDG_CACHE_HOME=os.path.join(work, "cache"))

CHANNEL = """
import hashlib, io, json, os, sys, tarfile, time
root, name = sys.argv[1], sys.argv[2]
fn = f"{name}-1.0-0.tar.bz2"
index = {"name": name, "version": "1.0", "build": "0", "build_number": 0, "depends": [],
         "noarch": "generic", "subdir": "noarch", "license": "BSD-3-Clause",
         "timestamp": int(time.time() * 1000)}
files = {"info/index.json": json.dumps(index).encode(),
         "info/paths.json": json.dumps({"paths": [], "paths_version": 1}).encode(),
         "info/files": b""}
os.makedirs(os.path.join(root, "noarch"), exist_ok=True)
path = os.path.join(root, "noarch", fn)
with tarfile.open(path, "w:bz2") as t:
    for n, data in files.items():
        info = tarfile.TarInfo(n); info.size = len(data); info.mtime = int(time.time())
        t.addfile(info, io.BytesIO(data))
blob = open(path, "rb").read()
rec = dict(index, md5=hashlib.md5(blob).hexdigest(), sha256=hashlib.sha256(blob).hexdigest(), size=len(blob))
for subdir in ["noarch", "linux-64", "linux-aarch64", "osx-64", "osx-arm64", "win-64"]:
    os.makedirs(os.path.join(root, subdir), exist_ok=True)
    pk = {fn: rec} if subdir == "noarch" else {}
    with open(os.path.join(root, subdir, "repodata.json"), "w") as f:
        json.dump({"info": {"subdir": subdir}, "packages": pk, "packages.conda": {}, "repodata_version": 1}, f)
"""
channel_dir = os.path.join(work, "channel")
subprocess.run([sys.executable, "-c", CHANNEL, channel_dir, "conda-mcp-probe"], check=True)
ARGS = {"prefix": os.path.join(work, "env"), "packages": ["conda-mcp-probe"],
        "channel": ["file://" + channel_dir], "override_channels": True,
        "dry_run": True, "json": True}


class Server:
    def __init__(self, capabilities, flags=()):
        self.p = subprocess.Popen([BIN, "--conda-exe", CONDA, "--worker-exe", WORKER, *flags],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=open(os.path.join(work, "err.log"), "a"),
                                  text=True, env=env)
        self.n = 0
        self.req("initialize", {"protocolVersion": "2025-11-25", "capabilities": capabilities,
                                "clientInfo": {"name": "task-figures", "version": "0"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, m):
        self.p.stdin.write(json.dumps(m) + "\n")
        self.p.stdin.flush()

    def req(self, method, params):
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        while True:
            r = json.loads(self.p.stdout.readline())
            if r.get("id") == self.n:
                return r

    def close(self):
        self.p.stdin.close()
        self.p.wait(10)


def comparable(result):
    """The result without what differs between two runs of one call: its
    duration, and the text that repeats it."""
    r = dict(result)
    r["structuredContent"] = {k: v for k, v in r["structuredContent"].items() if k != "duration_ms"}
    r.pop("content", None)
    return r


def crashed(result):
    """py-rattler's abort at exit after conda's success (README: crashed_after_success)."""
    return (result.get("structuredContent", {}).get("error") or {}).get("code") == "crashed_after_success"


def approve_rounds():
    """The `--approve` figures (module docs)."""
    s = Server({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {"form": {}}},
               ["--approve-writes"])
    s.req("tools/list", {})
    handle, asked, done = [], [], []
    for i in range(ROUNDS):
        args = dict(ARGS, prefix=os.path.join(work, f"approved-{i}"))
        del args["dry_run"]
        t = time.perf_counter()
        r = s.req("tools/call", {"name": "conda_create", "arguments": args})["result"]
        handle.append((time.perf_counter() - t) * 1000)
        assert r.get("resultType") == "task", r
        task_id = r["taskId"]
        while (g := s.req("tasks/get", {"taskId": task_id})["result"])["status"] == "working":
            time.sleep(0.05)
        assert g["status"] == "input_required", g
        asked.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        s.req("tasks/update", {"taskId": task_id, "inputResponses":
                               {"approval": {"action": "accept", "content": {"approve": True}}}})
        while (g := s.req("tasks/get", {"taskId": task_id})["result"])["status"] == "working":
            time.sleep(0.05)
        assert g["status"] == "completed", g
        done.append((time.perf_counter() - t) * 1000)
        assert os.path.isdir(os.path.join(args["prefix"], "conda-meta")), g
    s.close()
    shutil.rmtree(work, ignore_errors=True)
    med = statistics.median
    print(f"rounds: {ROUNDS} (conda_create under --approve-writes, asked inside a task, local file channel)")
    print(f"tools/call -> task handle: median {med(handle):.1f} ms (max {max(handle):.1f})")
    print(f"tools/call -> input_required (50 ms polls): median {med(asked):.0f} ms")
    print(f"accepting tasks/update -> completed (50 ms polls): median {med(done):.0f} ms")


if APPROVE:
    approve_rounds()
    sys.exit(0)

tasks = Server({"extensions": {"io.modelcontextprotocol/tasks": {}}})
plain = Server({})
handle_ms, done_ms, plain_ms, get_ms, equal = [], [], [], [], []
crashes = 0
def as_task():
    t = time.perf_counter()
    r = tasks.req("tools/call", {"name": "conda_create", "arguments": ARGS})
    handle_ms.append((time.perf_counter() - t) * 1000)
    assert r["result"].get("resultType") == "task", r
    task_id = r["result"]["taskId"]
    while True:
        g0 = time.perf_counter()
        g = tasks.req("tasks/get", {"taskId": task_id})["result"]
        get_ms.append((time.perf_counter() - g0) * 1000)
        if g["status"] != "working":
            break
        time.sleep(0.05)
    done_ms.append((time.perf_counter() - t) * 1000)
    assert g["status"] == "completed", g
    return g["result"]


def as_plain():
    t = time.perf_counter()
    p = plain.req("tools/call", {"name": "conda_create", "arguments": ARGS})["result"]
    plain_ms.append((time.perf_counter() - t) * 1000)
    return p


for i in range(ROUNDS):
    # Alternate which goes first, so neither always pays for going first.
    if i % 2 == 0:
        g, p = as_task(), as_plain()
    else:
        p = as_plain()
        g = as_task()
    if crashed(g) or crashed(p):
        crashes += 1
        continue
    equal.append(comparable(g) == comparable(p))
tasks.close()
plain.close()
shutil.rmtree(work, ignore_errors=True)
med = statistics.median
print(f"rounds: {ROUNDS} (conda_create dry run on a local file channel)")
print(f"tools/call -> task handle: median {med(handle_ms):.1f} ms (max {max(handle_ms):.1f})")
print(f"tools/call -> completed via tasks/get (50 ms polls): median {med(done_ms):.0f} ms")
print(f"plain tools/call: median {med(plain_ms):.0f} ms")
print(f"one tasks/get: median {med(get_ms):.2f} ms over {len(get_ms)}")
print(f"task result equals the plain result (duration_ms aside): {sum(equal)}/{len(equal)}"
      f" (rounds left out for crashed_after_success: {crashes})")
