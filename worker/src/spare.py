"""conda-mcp spare conda (Windows), run by conda-mcp-worker as

    <installation>\\python.exe -c <this file>

in a job object of its own, with the environment a fresh conda would get,
the fixed working directory, and pipes as stdin, stdout and stderr. Windows
has no fork, so instead of a zygote the worker keeps one such interpreter
that has already imported conda and loaded its plugins, waiting for a single
job; the worker starts the next spare when one is taken. See
worker/src/spare.rs and docs/operating.md "Warm conda".

It writes nothing before its job: its stdout and stderr are the job's. The
job arrives on stdin as the decimal length of a JSON object, a newline, and
the object {"argv": [...], "cwd": "...", "checks": {...}}; stdin is read
unbuffered up to there, and whatever follows is the job's own stdin (the
worker closes it at once for a job without stdin, as a fresh conda would
read an empty NUL). The job then runs as `python -m conda ARGV` runs:
runpy runs conda's __main__ module with sys.argv[0] its file name. A job
with "checks" runs under the guard, which the worker prepends to this file
(worker/src/guard/guard.py: `install`, its report to the named pipe the
checks' "report_pipe" names).
"""

import os
import sys

# `-c` puts the working directory first on sys.path; the job's directory
# must not decide what is imported.
if sys.path and sys.path[0] == "":
    del sys.path[0]


def _warm():
    """The imports of conda's entry point before its first context use, and
    its plugins (as the Unix zygote does); a missing module is skipped."""
    import importlib
    import importlib.util

    importlib.import_module("conda.cli.main")
    for name in (
        "conda.common.compat",
        "conda.exception_handler",
        "conda.base.context",
        "conda.cli.conda_argparse",
    ):
        try:
            present = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:
            present = False
        if present:
            importlib.import_module(name)
    context = getattr(sys.modules.get("conda.base.context"), "context", None)
    getattr(context, "plugin_manager", None)


def _read_exact(n):
    chunks = []
    while n > 0:
        chunk = os.read(0, min(n, 1 << 16))
        if not chunk:
            raise EOFError("stdin closed before the job arrived")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _job():
    digits = b""
    while True:
        b = os.read(0, 1)
        if not b:
            raise EOFError("stdin closed before the job arrived")
        if b == b"\n":
            break
        digits += b
        if len(digits) > 10:
            raise ValueError("bad job header")
    import json

    return json.loads(_read_exact(int(digits)).decode("utf-8"))


def _main():
    try:
        _warm()
    except Exception:  # noqa: BLE001
        # A broken conda fails in the job exactly as a fresh one would.
        pass
    try:
        job = _job()
    except (EOFError, ValueError):
        # Retired by the worker before any job: nothing was run.
        os._exit(0)
    if job.get("cwd"):
        os.chdir(job["cwd"])
    checks = job.get("checks")
    if checks is not None:
        install(checks, checks.pop("report_pipe", None) or 3)  # noqa: F821 - guard.py, prepended
    import runpy

    sys.argv = ["conda", *job["argv"]]
    runpy.run_module("conda", run_name="__main__", alter_sys=True)


_main()
