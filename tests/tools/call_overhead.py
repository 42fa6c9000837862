#!/usr/bin/env python3
"""Per-call overhead of the server, two builds side by side: a warm
`conda_env_list` through each build's `conda-mcp` (stdio, `initialize`
era) against one stand-in conda, interleaved call by call so that machine
load hits both alike. Prints the median, quartiles and the difference.

Run (release builds of two commits, e.g. before and after a change):
    python3 tests/tools/call_overhead.py OLD_BIN_DIR NEW_BIN_DIR [ROUNDS] [--broken-plugin]
where each BIN_DIR holds `conda-mcp` and `conda-mcp-worker`. ROUNDS
(default 300) measured calls per build after 30 warm-up calls each.
`--broken-plugin` installs a plugin whose entry point imports a missing
module (conda warns and skips it on every call) into the stand-in.
Needs python3 with `venv`; builds the stand-in prefix from
tests/fixtures (as tests/src/standin.rs does) in a temporary folder.
"""
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def standin(work, broken_plugin=False):
    prefix = os.path.join(work, "conda")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", prefix], check=True)
    site = glob.glob(prefix + "/lib/*/site-packages")[0]
    with open(os.path.join(site, "conda_mcp_standin.pth"), "w") as f:
        f.write(os.path.join(REPO, "tests", "fixtures", "standin") + "\n")
    py, conda = prefix + "/bin/python", prefix + "/bin/conda"
    with open(conda, "w") as f:
        f.write(f"#!{py}\nimport sys\n\nfrom conda.cli.main import main\n\n"
                "if __name__ == \"__main__\":\n    sys.exit(main())\n")
    os.chmod(conda, 0o755)
    os.makedirs(prefix + "/conda-meta")
    open(prefix + "/conda-meta/history", "w").close()
    shutil.copy(os.path.join(REPO, "tests", "fixtures", "dumps", "standin.json"),
                prefix + "/standin-dump.json")
    # The dump's plugins, each with an empty module (tests/src/standin.rs
    # `add_plugin`), and the broken one without its module.
    plugins = json.load(open(prefix + "/standin-dump.json")).get("plugins", [])
    if broken_plugin:
        plugins.append({"distribution": "conda-broken", "version": "1.0",
                        "name": "conda-broken", "value": "conda_broken_missing.plugin",
                        "module": False})
    for p in plugins:
        info = os.path.join(site, f"{p['distribution'].replace('-', '_')}-{p['version']}.dist-info")
        os.makedirs(info)
        with open(info + "/METADATA", "w") as f:
            f.write(f"Metadata-Version: 2.1\nName: {p['distribution']}\nVersion: {p['version']}\n")
        with open(info + "/entry_points.txt", "w") as f:
            f.write(f"[conda]\n{p['name']} = {p['value']}\n")
        if p.get("module", True):
            package, module = p["value"].split(":")[0].rsplit(".", 1)
            os.makedirs(os.path.join(site, package), exist_ok=True)
            open(os.path.join(site, package, "__init__.py"), "w").close()
            open(os.path.join(site, package, module + ".py"), "w").close()
    return conda


class Server:
    def __init__(self, bindir, conda, work):
        home = tempfile.mkdtemp(dir=work)
        env = dict(os.environ, XDG_CACHE_HOME=home + "/cache", XDG_RUNTIME_DIR=home + "/run")
        env.pop("CONDA_EXE", None)
        self.p = subprocess.Popen(
            [os.path.join(bindir, "conda-mcp"), "--conda-exe", conda,
             "--worker-exe", os.path.join(bindir, "conda-mcp-worker")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, text=True, bufsize=1)
        self.next = 0
        self.rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "bench", "version": "1"}})
        self.p.stdin.write('{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        self.p.stdin.flush()

    def rpc(self, method, params):
        self.next += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.next,
                                       "method": method, "params": params}) + "\n")
        self.p.stdin.flush()
        while True:
            msg = json.loads(self.p.stdout.readline())
            if msg.get("id") == self.next and "method" not in msg:
                return msg

    def call(self):
        t = time.perf_counter()
        r = self.rpc("tools/call", {"name": "conda_env_list", "arguments": {}})
        elapsed = time.perf_counter() - t
        assert r["result"]["isError"] is False, r
        return elapsed * 1000

    def close(self):
        self.p.stdin.close()
        self.p.wait(timeout=30)


def main():
    broken = "--broken-plugin" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--broken-plugin"]
    old, new = args[0], args[1]
    rounds = int(args[2]) if len(args) > 2 else 300
    work = tempfile.mkdtemp(prefix="call-overhead-")
    try:
        conda = standin(work, broken)
        servers = {"old": Server(old, conda, work), "new": Server(new, conda, work)}
        for _ in range(30):
            for s in servers.values():
                s.call()
        times = {k: [] for k in servers}
        for i in range(rounds):
            order = ["old", "new"] if i % 2 == 0 else ["new", "old"]
            for k in order:
                times[k].append(servers[k].call())
        for s in servers.values():
            s.close()
        for k in ("old", "new"):
            q = statistics.quantiles(times[k], n=4)
            print(f"{k}: median {statistics.median(times[k]):.2f} ms "
                  f"(quartiles {q[0]:.2f}-{q[2]:.2f}, {rounds} calls)")
        d = statistics.median(times["new"]) - statistics.median(times["old"])
        print(f"new - old: {d:+.2f} ms")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
