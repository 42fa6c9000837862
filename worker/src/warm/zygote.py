"""conda-mcp warm conda ("zygote"), run by conda-mcp-worker as

    <interpreter from conda's #! line> -c <this file> <conda executable>

with the environment and working directory a fresh conda would get, fd 0 the
control socket (SOCK_SEQPACKET, SOCK_DGRAM on macOS: one datagram per
message), fd 1 and fd 2 pipes read by the worker. It imports conda and loads its plugins, never runs
a command, then forks one child per job. See worker/src/warm/mod.rs for the
protocol and docs/operating.md "Warm conda" for what is and is not shared.

Messages to the worker are JSON objects, one per datagram:
  {"hello": sys.path}      before importing conda (the worker stamps these);
  {"ready": true, "warnings": [...], "phases": [[NAME, MS], ...]}
                           conda imported, plugins loaded, CUDA probed, no
                           thread running;
                           "warnings": what conda's plugin manager logged
                           (a plugin that failed to load), which each child
                           prints as a fresh conda would (_load_plugins);
                           "phases": how long each step of the start took,
                           in milliseconds of the monotonic clock ("imports",
                           "plugins", "probe", "freeze"), for the worker's
                           log;
  {"failed": "reason"}     warming failed, the zygote exits;
  {"pid": N}               a job's child was forked (N is its pid and pgid);
  {"status": S}            the child exited with raw wait status S.
A job request is one datagram {"argv": [...], "cwd": "..." or null,
"checks": {...} or null, "helper": true or absent} carrying four descriptors
(SCM_RIGHTS): the child's stdin, stdout, stderr, and the read end of a "go"
pipe, and a fifth, the write end of the guard's report pipe, exactly when "checks" is an object (the
in-process checks, installed by the guard's install() above this file's text:
worker/src/guard/guard.py is prepended to it). The child runs conda only after
reading one byte from the go pipe, so a job the worker did not confirm never
runs. With "helper": true the job is one of the server's own helper programs
instead of conda: argv is what follows the interpreter, exactly
["-I", "-c", SOURCE, ARGS...], and the child runs SOURCE as __main__ with
the import path an isolated interpreter has (_run_helper); such a job
carries no checks.

This module is the interpreter's __main__ only while it serves. Each child
replaces __main__ with conda's own script before running it, so a
multiprocessing "spawn" child (conda's CUDA probe) re-imports conda's script
as __mp_main__ exactly as it does under a fresh conda; this file has no
__file__ and is never re-imported.
"""

import os
import sys


def _send(ctl, **message):
    import json

    ctl.send(json.dumps(message).encode("utf-8"))


def _warm(phases):
    """Imports what conda's entry point (conda.cli.main.main) imports before
    its first context initialisation, and loads the plugins (entry points of
    group "conda"). Modules this conda does not have are skipped. Every
    conda command imports all of these (conda loads every plugin on each
    run), so the zygote holds nothing a call would not load itself
    (docs/benchmarks.md "First call and memory at rest"). Appends each
    step's time to `phases`; returns the plugin manager's warning records."""
    import importlib
    import importlib.util
    import time

    t = time.monotonic()
    importlib.import_module("conda.cli.main")
    for name in (
        "conda.common.compat",
        "conda.exception_handler",
        "conda.base.context",
        "conda.cli.conda_argparse",
    ):
        try:
            present = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # its parent package is missing
            present = False
        if present:
            importlib.import_module(name)
    context = getattr(sys.modules.get("conda.base.context"), "context", None)
    t = _phase(phases, "imports", t)
    # conda loads every plugin on its first access of the plugin manager
    # (cached for the process), also under --no-plugins (then disabled).
    records = _load_plugins(context)
    _phase(phases, "plugins", t)
    return records


def _phase(phases, name, since):
    """Appends [name, milliseconds since `since`] to `phases`; returns now."""
    import time

    now = time.monotonic()
    phases.append([name, round((now - since) * 1000.0, 1)])
    return now


# The logger conda's plugin manager warns on when an entry point fails to
# load (conda/plugins/manager.py, CondaPluginManager.load_entrypoints).
_PLUGIN_LOGGER = "conda.plugins.manager"


def _load_plugins(context):
    """Loads conda's plugins (the first access of context.plugin_manager)
    and keeps, instead of printing, what the plugin manager logs meanwhile:
    "Error while loading conda entry point: NAME (ERROR)" for a plugin that
    fails to load. A fresh conda prints it on stderr through Python's
    last-resort handler (conda's loggers are set up only after parsing), on
    every call; each child replays it at the same moment
    (_replay_on_first_use). Anything else printed makes the worker refuse
    this zygote (conda then runs fresh)."""
    import logging

    if context is None:
        return []
    records = []

    class _Keep(logging.Handler):
        def emit(self, record):
            records.append(record)

    logger = logging.getLogger(_PLUGIN_LOGGER)
    keep = _Keep()
    propagate = logger.propagate
    logger.addHandler(keep)
    logger.propagate = False
    try:
        getattr(context, "plugin_manager", None)
    finally:
        logger.removeHandler(keep)
        logger.propagate = propagate
    return records


def _replay_on_first_use(records):
    """Makes the first get_plugin_manager() of each child (conda's
    context.plugin_manager reads it from its module at each access) log
    `records` again before returning the zygote's loaded manager, so a
    child prints the plugin manager's warnings where, and as, a fresh conda
    does, through whatever handlers the child has then. As conda does, the
    error's traceback is attached only when context.info (verbosity >= 2).
    Without a get_plugin_manager to wrap, warming fails (conda runs fresh)."""
    import functools

    manager = sys.modules.get(_PLUGIN_LOGGER)
    original = getattr(manager, "get_plugin_manager", None)
    if original is None:
        raise RuntimeError("conda warned while loading its plugins and has no get_plugin_manager")
    due = [True]

    @functools.wraps(original)
    def get_plugin_manager(*args, **kwargs):
        if due[0]:
            due[0] = False
            _replay(records)
        return original(*args, **kwargs)

    for attr in ("cache_info", "cache_clear", "cache_parameters"):
        if hasattr(original, attr):
            setattr(get_plugin_manager, attr, getattr(original, attr))
    manager.get_plugin_manager = get_plugin_manager


def _replay(records):
    import logging

    context = getattr(sys.modules.get("conda.base.context"), "context", None)
    try:
        verbose = bool(getattr(context, "info", False))
    except Exception:  # noqa: BLE001 - conda's own check would have raised later
        verbose = False
    for rec in records:
        logger = logging.getLogger(rec.name)
        if not logger.isEnabledFor(rec.levelno):
            continue
        args = rec.args if isinstance(rec.args, tuple) else ()
        err = args[-1] if args and isinstance(args[-1], BaseException) else None
        exc_info = (type(err), err, err.__traceback__) if verbose and err is not None else None
        logger.handle(
            logger.makeRecord(
                rec.name, rec.levelno, rec.pathname, rec.lineno, rec.msg, rec.args,
                exc_info, rec.funcName, None, rec.stack_info,
            )
        )


def _probe_cuda():
    """Runs conda's CUDA driver probe once, so that every child inherits its
    answer instead of starting an interpreter for it on each `conda info`.

    conda runs the detector in a child of multiprocessing's "spawn" context:
    a new interpreter that imports conda's CUDA module again, and, for the
    context's semaphore and process start, multiprocessing's resource
    tracker, one more interpreter that would stay beside the zygote for its
    whole life (about 12 MiB). Here the same code of conda's runs with the
    "fork" context in place of "spawn" (_fork_context): the detector is a
    fork of this single-threaded process, which has loaded no driver, so it
    loads libcuda exactly as a spawned one does (same environment, same
    loader path, which the loader read at the start of this interpreter as a
    spawned one reads it at its own), puts the same answer in the same
    queue, and nothing else starts (the fork context's semaphore is
    unlinked at once and registers with no tracker). That takes tens of
    milliseconds instead of two interpreter starts (docs/benchmarks.md
    "First call and memory at rest").

    conda keeps the answer for the life of its process
    (conda/plugins/virtual_packages/cuda.py: `cached_cuda_version`, a
    `functools.cache` of `cuda_version`, which runs the probe in a `spawn`
    child); a fresh conda probes once per call, a child of this zygote reads
    the zygote's answer. The worker's restart watch covers what a driver
    change touches (worker/src/warm/driver.rs: the `libcuda.so*` files the
    loader would find, /proc/driver/nvidia/version) and this zygote's
    environment, CONDA_OVERRIDE_CUDA among it: a change replaces the zygote
    before the next call. A conda without the cached probe is left as it is;
    a probe that warns (a sandbox that forbids its semaphore) is forgotten
    again, so that each call sees the warning as a fresh conda prints it."""
    import importlib
    import importlib.util
    import warnings

    name = "conda.plugins.virtual_packages.cuda"
    try:
        if importlib.util.find_spec(name) is None:
            return
    except ModuleNotFoundError:
        return
    cuda = importlib.import_module(name)
    probe = getattr(cuda, "cached_cuda_version", None)
    if not hasattr(probe, "cache_clear"):
        probe = getattr(cuda, "cuda_version", None)
    if not hasattr(probe, "cache_clear"):
        return
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            with _fork_context():
                probe()
        except Exception:  # noqa: BLE001 - a fresh conda's call raises it
            seen.append(None)
    if seen:
        probe.cache_clear()


class _fork_context:
    """While entered, multiprocessing.get_context("spawn") (and a default
    that would be "spawn") gives the "fork" context; restored on exit. Only
    for the zygote's own CUDA probe, before it serves: the zygote is
    single-threaded then (checked before the probe), which is what makes a
    fork safe where conda, not knowing its threads, uses spawn."""

    def __enter__(self):
        import multiprocessing

        self.module = multiprocessing
        self.original = multiprocessing.get_context
        original = self.original

        def get_context(method=None):
            if method in (None, "spawn"):
                method = "fork"
            return original(method)

        multiprocessing.get_context = get_context
        return self

    def __exit__(self, *exc):
        self.module.get_context = self.original
        return False


def _receive(ctl):
    import array
    import socket

    if ctl.type != socket.SOCK_SEQPACKET:
        # A datagram socket (macOS has no SOCK_SEQPACKET for AF_UNIX) shows
        # no end of file once the worker is gone: its exit shows as a new
        # parent.
        import select

        while not select.select([ctl], [], [], 1.0)[0]:
            if os.getppid() != _PARENT:
                return b"", [], 0
    fds = array.array("i")
    msg, ancdata, flags, _ = ctl.recvmsg(1 << 20, socket.CMSG_SPACE(5 * fds.itemsize))
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
    return msg, list(fds), flags


def _child(ctl, fds, request, conda_exe):
    """In the forked child: becomes the job's process and runs conda's script
    as __main__ (the guard's run_script), under the guard's checks when the
    request carries them. Never returns: conda's exit (SystemExit) ends the
    child as it ends a fresh interpreter (see _finalize_and_exit)."""
    try:
        os.setpgid(0, 0)
        ctl.close()
        stdin, stdout, stderr, go = fds[:4]
        report = fds[4] if len(fds) == 5 else None
        for target, fd in ((0, stdin), (1, stdout), (2, stderr)):
            os.dup2(fd, target)
        for fd in (stdin, stdout, stderr):
            if fd > 2:
                os.close(fd)
        if request.get("cwd") is not None:
            os.chdir(request["cwd"])
        confirmed = os.read(go, 1) == b"1"
        os.close(go)
        with open(conda_exe, "rb") as f:
            source = f.read()
    except BaseException:  # noqa: BLE001 - a job that cannot start never runs
        os._exit(127)
    if not confirmed:
        os._exit(127)
    if report is not None:
        install(request.get("checks") or {}, report)  # noqa: F821 - guard.py, prepended

    # As the interpreter decodes its command line (file system encoding,
    # surrogateescape).
    argv = [os.fsdecode(a.encode("utf-8", "surrogateescape")) for a in request["argv"]]
    if request.get("helper") is True:
        _finalize_and_exit(_run_helper(argv, conda_exe))
    _finalize_and_exit(run_script(conda_exe, argv, source))  # noqa: F821 - guard.py, prepended


def _isolated_path(conda_exe):
    """sys.path as ``python -I -c`` would have it in this interpreter: the
    zygote's, less what isolation leaves out (the script's directory that
    _main put first, the user's site-packages, PYTHONPATH's entries)."""
    import site

    drop = {os.path.dirname(os.path.realpath(conda_exe))}
    user_site = getattr(site, "USER_SITE", None)
    if user_site:
        drop.add(user_site)
    for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        if entry:
            drop.add(os.path.abspath(entry))
    return [p for p in sys.path[1:] if p not in drop and os.path.abspath(p or ".") not in drop]


def _run_helper(argv, conda_exe):
    """Runs a helper job (module docs): ``-I -c SOURCE ARGS...`` as a fresh
    ``python -I -c SOURCE ARGS...`` runs it, with conda's modules already
    imported. Returns the exit status as run_script does; a malformed
    helper argv is status 2, as the interpreter's usage error."""
    import builtins
    import types

    if len(argv) < 3 or argv[0] != "-I" or argv[1] != "-c":
        sys.stderr.write("conda-mcp warm conda: a helper job is -I -c SOURCE ARGS...\n")
        return 2
    source = argv[2]
    sys.path[:] = _isolated_path(conda_exe)
    sys.argv[:] = ["-c", *argv[3:]]
    if hasattr(sys, "orig_argv"):
        sys.orig_argv[:] = [sys.orig_argv[0], *argv]
    main = types.ModuleType("__main__")
    main.__dict__.update(__builtins__=builtins, __spec__=None, __package__=None)
    sys.modules["__main__"] = main
    try:
        exec(compile(source, "<string>", "exec", dont_inherit=True), main.__dict__)
        return 0
    except SystemExit as exc:
        return system_exit_status(exc)  # noqa: F821 - guard.py, prepended
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - ends the helper as it ends an interpreter
        kind, value, tb = sys.exc_info()
        value = value.with_traceback(tb.tb_next)
        sys.excepthook(kind, value, tb.tb_next)
        return 1


def _finalize_and_exit(status):
    """Ends the child with what a fresh interpreter's exit does that anyone
    can observe (CPython's Py_FinalizeEx, in its order): wait for
    non-daemon threads, run the atexit handlers (logging.shutdown,
    weakref.finalize, multiprocessing's cleanup, conda's own), flush stdout
    and stderr (status 120 when that fails), then _exit. It skips the
    teardown of every module and object of the zygote's heap, which nothing
    outside the process sees and which costs a short call about half its
    time, because freeing each object writes to pages the fork still shares
    with the zygote."""
    import atexit
    import threading

    try:
        threading._shutdown()
    except BaseException:  # noqa: BLE001 - as the interpreter's exit goes on
        pass
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None and not stream.closed:
                stream.flush()
        except BaseException:  # noqa: BLE001 - CPython's exit status for a failed flush
            status = 120
    os._exit(status)


def _serve(ctl, conda_exe):
    import json
    import socket

    while True:
        msg, fds, flags = _receive(ctl)
        if not msg:
            for fd in fds:
                os.close(fd)
            return 0  # the worker closed the socket
        try:
            if flags & (socket.MSG_TRUNC | socket.MSG_CTRUNC) or len(fds) not in (4, 5):
                raise ValueError("malformed request")
            request = json.loads(msg)
            if not isinstance(request.get("argv"), list):
                raise ValueError("malformed request")
            if (len(fds) == 5) != isinstance(request.get("checks"), dict):
                raise ValueError("malformed request")
            if request.get("helper") is True and len(fds) != 4:
                raise ValueError("malformed request")
        except ValueError as exc:
            for fd in fds:
                os.close(fd)
            _send(ctl, failed=str(exc))
            continue
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(ctl, fds, request, conda_exe)
        for fd in fds:
            os.close(fd)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass  # the child did it first, or already exited
        _send(ctl, pid=pid)
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except ChildProcessError:
                status = 0xFF00  # cannot happen: nobody else reaps it
                break
        _send(ctl, status=status)


_PARENT = os.getppid()


def _main():
    conda_exe = sys.argv[1]
    import socket

    ctl = socket.socket(fileno=os.dup(0))
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    # As for `python <conda_exe>`: the script's directory (symbolic links
    # resolved) first on sys.path, argv[0] the script.
    sys.path[0] = os.path.dirname(os.path.realpath(conda_exe))
    sys.argv[:] = [conda_exe]
    _send(ctl, hello=sys.path)
    phases = []
    try:
        records = _warm(phases)
    except BaseException as exc:  # noqa: BLE001 - reported, then exit
        _send(ctl, failed=f"importing conda failed: {type(exc).__name__}: {exc}")
        return 1
    import threading

    if threading.active_count() != 1:
        _send(ctl, failed="a thread is running after importing conda")
        return 1
    import time

    t = time.monotonic()
    try:
        _probe_cuda()
        if records:
            _replay_on_first_use(records)
    except BaseException as exc:  # noqa: BLE001 - reported, then exit
        _send(ctl, failed=f"importing conda failed: {type(exc).__name__}: {exc}")
        return 1
    t = _phase(phases, "probe", t)
    import gc

    # Everything imported so far lives as long as the zygote: move it out of
    # the collector's reach, so a collection in a child does not touch (and
    # copy) every page it shares with the zygote. No collection first: after
    # conda's imports it frees a few hundred objects at most (15-312 with
    # conda 26.9, tens of KiB; the probe leaves none, nor a descriptor) and
    # costs 30-150 ms of the start, which the first call would wait for.
    gc.freeze()
    _phase(phases, "freeze", t)
    _send(ctl, ready=True, warnings=[r.getMessage() for r in records], phases=phases)
    return _serve(ctl, conda_exe)


if __name__ == "__main__":
    sys.exit(_main())
