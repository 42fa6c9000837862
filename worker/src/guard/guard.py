"""conda-mcp in-process checks ("the guard"), run inside conda's own process.

The server predicts from outside; this module enforces inside. It wraps
``conda.cli.conda_argparse.do_call``: conda's entry
(``conda.cli.main.main_subshell``) imports ``do_call`` when it runs, after
``context.__init__(argparse_args=args)``, so the wrapper sees conda's own
decisions (``context.dry_run``, ``context.json``, the envs directories, the
target prefix) for the user conda runs as, and runs before the command acts
(before conda's pre-command plugin hooks too, so ``--no-plugins`` cannot
switch it off). It writes one JSON document, the serde form of
``GuardReport`` (shared/src/guard.rs), on its report descriptor and closes
it; a refusal then ends the process with ``REFUSED_STATUS`` before the
command runs. The descriptor is made non-inheritable at once, so nothing
conda starts can write a report.

Used two ways (worker/src/guard/mod.rs): prepended to the warm conda's
``zygote.py``, whose job children call ``install`` and ``run_script``;
and as ``<conda's interpreter> -c <this file + "sys.exit(fresh_main())">
<checks JSON> <conda executable> <conda's arguments...>`` with the report
pipe as descriptor 3 for a fresh conda.

Windows has neither descriptor passing nor fork: there the report goes to a
named pipe that only the worker's user can open and that takes one client
(shared/src/private_pipe.rs), named by the checks' ``report_pipe`` key;
the guard opens it only to write its report, so nothing conda starts
inherits it. A fresh conda there is ``python.exe -c <this file> <checks>
-m <conda's arguments...>`` (conda's entry module, as ``python -m conda``
runs it); the spare interpreter (worker/src/spare.py) has this file
prepended and calls ``install`` and ``run_module``. Standard library only;
nothing here may print.
"""

import os
import sys

REFUSED_STATUS = 86
UNMANAGED_LISTED = 10
CHANNEL_ALIAS = "https://conda.anaconda.org/"


def _final(param):
    try:
        flag = param.keyflag()
    except Exception:  # noqa: BLE001 - a parameter without flags
        return False
    return getattr(flag, "name", None) == "final" or getattr(flag, "value", None) == "final"


def _setting(context, key):
    """The source of ``key`` in conda's ``context.raw_data`` that decided its
    value: the first one marking it final, else the last one."""
    found = None
    for source, params in getattr(context, "raw_data", {}).items():
        try:
            param = params.get(key)
        except AttributeError:
            continue
        if param is None:
            continue
        found = (source, _final(param))
        if found[1]:
            break
    if found is None:
        return {"key": key, "source": None, "final": False}
    source, final = found
    if source == "envvars":
        where = {"variable": "CONDA_" + key.upper()}
    elif source == "cmd_line":
        where = "command_line"
    else:
        where = {"file": str(source)}
    return {"key": key, "source": where, "final": final}


def _expand(path):
    return os.path.abspath(os.path.expanduser(os.path.expandvars(path)))


def _by_name_or_prefix(context, args, name, prefix):
    """conda's ``determine_target_prefix`` for this name or prefix."""
    import argparse

    from conda.base.context import determine_target_prefix

    ns = argparse.Namespace(**vars(args))
    ns.name, ns.prefix = name, prefix
    return determine_target_prefix(context, ns)


def _target(context, args, rule):
    from conda.base.context import determine_target_prefix

    if rule == "arguments":
        return determine_target_prefix(context, args)
    if rule == "rename_destination":
        destination = getattr(args, "destination", None)
        if not isinstance(destination, str) or not destination:
            return None
        if os.sep in destination or "/" in destination:
            return _expand(destination)
        return _by_name_or_prefix(context, args, destination, None)
    if isinstance(rule, dict) and "arguments_or_file" in rule:
        if getattr(args, "name", None) or getattr(args, "prefix", None):
            return determine_target_prefix(context, args)
        hint = rule["arguments_or_file"] or {}
        name, prefix = hint.get("name"), hint.get("prefix")
        files = getattr(args, "file", None)
        files = [files] if isinstance(files, str) else list(files or [])
        try:
            from conda.cli.common import get_name_prefix_from_env_file
        except ImportError:
            get_name_prefix_from_env_file = None
        if get_name_prefix_from_env_file is not None and len(files) == 1:
            name, prefix = get_name_prefix_from_env_file(files[0])
        if name:
            return _by_name_or_prefix(context, args, name, None)
        if prefix:
            return _by_name_or_prefix(context, args, None, prefix)
        return None
    return None


def _packages(prefix):
    try:
        return sum(1 for n in os.listdir(os.path.join(prefix, "conda-meta")) if n.endswith(".json"))
    except OSError:
        return 0


def _managed(prefix):
    """Every path the ``conda-meta/*.json`` records of ``prefix`` list."""
    import json

    meta = os.path.join(prefix, "conda-meta")
    listed = set()
    for name in os.listdir(meta):
        if not name.endswith(".json"):
            continue
        try:
            with open(os.path.join(meta, name), encoding="utf-8") as f:
                record = json.load(f)
        except (OSError, ValueError):
            continue
        files = record.get("files") if isinstance(record, dict) else None
        for path in files or ():
            if isinstance(path, str):
                listed.add(path.replace("\\", "/"))
    return listed


def _unmanaged(prefix):
    """Files and symbolic links under ``prefix`` (``conda-meta/`` left out)
    that no record lists; a ``__pycache__/X.*.pyc`` of a listed ``X.py``
    counts as listed (the interpreter writes those caches)."""
    listed = _managed(prefix)
    found = []
    total = 0
    for root, dirs, files in os.walk(prefix):
        rel_root = os.path.relpath(root, prefix).replace(os.sep, "/")
        rel_root = "" if rel_root == "." else rel_root + "/"
        if not rel_root:
            dirs[:] = [d for d in dirs if d != "conda-meta"]
        # Symbolic links to directories are files to conda (it lists them).
        for d in [d for d in dirs if os.path.islink(os.path.join(root, d))]:
            dirs.remove(d)
            files.append(d)
        for name in files:
            rel = rel_root + name
            if rel in listed:
                continue
            if rel_root.endswith("__pycache__/") and name.endswith(".pyc"):
                source = rel_root[: -len("__pycache__/")] + name.split(".", 1)[0] + ".py"
                if source in listed:
                    continue
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
            found.append(rel)
    found.sort(key=lambda p: p.encode("utf-8", "surrogateescape"))
    return {"count": len(found), "bytes": total, "first": found[:UNMANAGED_LISTED]}


def _same(a, b):
    return os.path.realpath(a) == os.path.realpath(b)


_MASKED_PASSWORD = "***"
_MASKED_TOKEN = "<TOKEN>"


def _ascii_alnum(ch):
    return ch.isascii() and ch.isalnum()


def _scheme_start(text, sep):
    """The index of the scheme before ``://`` at ``sep``: a letter, then
    letters, digits, ``+``, ``-``, ``.``; None when there is none."""
    start = sep
    while start > 0 and (_ascii_alnum(text[start - 1]) or text[start - 1] in "+-."):
        start -= 1
    while start < sep and not (text[start].isascii() and text[start].isalpha()):
        start += 1
    return start if start < sep else None


def _ends_url(ch):
    """Whether ``ch`` ends a URL: whitespace, a control character, a quote,
    ``<``, ``>`` or a backslash."""
    return ch in " \"'`<>\\" or ord(ch) < 0x20 or ord(ch) == 0x7F


def _userinfo_password(url, auth_end):
    """Where the password of ``url`` (the text after ``://``) lies: the
    index of the ``:`` that ends the user name and of the ``@`` that ends
    the password, or None (``userinfo_password`` in shared/src/mask.rs)."""
    if url.startswith("["):
        return None
    at = url.rfind("@", 0, auth_end)
    if at >= 0:
        colon = url.find(":", 0, at)
        if colon < 0:
            return None
    else:
        colon = url.find(":", 0, auth_end)
        if colon < 0:
            return None
        after = url[colon + 1:auth_end]
        if not after or (after.isascii() and after.isdigit()):
            return None
        at = url.find("@", auth_end)
        if at < 0:
            return None
    return (colon, at) if at > colon + 1 else None


def _masked(text):
    """``text`` with its credentials masked exactly as ``mask_text`` in
    shared/src/mask.rs masks them (that module's doc has the rules): in
    each URL, ``user:password@`` becomes ``user:***@`` and ``/t/<token>/``
    becomes ``/t/<TOKEN>/``."""
    out = []
    copied = 0
    search = 0
    while True:
        sep = text.find("://", search)
        if sep < 0:
            break
        if _scheme_start(text, sep) is None:
            search = sep + 3
            continue
        body = sep + 3
        end = body
        while end < len(text) and not _ends_url(text[end]):
            end += 1
        edits = []
        auth_end = body
        while auth_end < end and text[auth_end] not in "/?#":
            auth_end += 1
        # Tokens are looked for after the authority, and after a password
        # that runs past it.
        i = auth_end
        found = _userinfo_password(text[body:end], auth_end - body)
        if found is not None:
            colon, at = found
            if text[body + colon + 1:body + at] != _MASKED_PASSWORD:
                edits.append((body + colon + 1, body + at, _MASKED_PASSWORD))
            i = max(i, body + at)
        while True:
            t = text.find("/t/", i, end)
            if t < 0:
                break
            tok_start = t + 3
            after = tok_start
            while after < end and (_ascii_alnum(text[after]) or text[after] in "_-"):
                after += 1
            if after > tok_start and (after == end or text[after] in "/?#"):
                edits.append((tok_start, after, _MASKED_TOKEN))
            i = after
        for start, stop, replacement in edits:
            out.append(text[copied:start])
            out.append(replacement)
            copied = stop
        search = max(end, sep + 3)
    if not out:
        return text
    out.append(text[copied:])
    return "".join(out)


def _canonical(channel):
    """A channel as the allowed list compares it (``canonical_channel`` in
    shared/src/guard.rs): credentials masked, no trailing ``/``, a URL under
    conda's default ``channel_alias`` replaced by its name."""
    c = _masked(str(channel).strip()).rstrip("/")
    if c.startswith(CHANNEL_ALIAS):
        rest = c[len(CHANNEL_ALIAS):]
        if rest.startswith("t/"):
            after = rest[2:]
            rest = after.split("/", 1)[1] if "/" in after else ""
        c = rest
    return c


def _changed_prefixes(context, args, rule):
    """The prefixes the command changes, as conda resolves them: by the
    ``arguments_or_file`` rule when it has one, else ``--prefix``, ``--name``
    or conda's default prefix; ``rename`` changes its destination too."""
    from conda.base.context import determine_target_prefix

    if isinstance(rule, dict) and "arguments_or_file" in rule:
        found = [_target(context, args, rule)]
    else:
        found = [determine_target_prefix(context, args)]
    if rule == "rename_destination":
        found.append(_target(context, args, rule))
    return [str(p) for p in found if p]


def _protected_prefix(context, args, entry):
    """The prefix of one protected environment, resolved by conda, and
    whether it is the root prefix."""
    if entry == "root":
        return str(context.root_prefix), True
    if isinstance(entry, dict) and "name" in entry:
        return str(_by_name_or_prefix(context, args, entry["name"], None)), False
    return _expand(entry["prefix"]), False


def _restricted(context, args, checks):
    """The refusal of the operator's restrictions (protected environments,
    allowed channels) by conda's own resolution, or None."""
    protected = checks.get("protected") or []
    if protected:
        # Each path's symbolic links resolved once.
        changed = [(t, os.path.realpath(t))
                   for t in _changed_prefixes(context, args, checks.get("target"))]
        for entry in protected:
            prefix, root = _protected_prefix(context, args, entry)
            prefix = os.path.realpath(prefix)
            for target, real in changed:
                if real == prefix:
                    return {"protected_environment": {"prefix": target, "root": root}}
    allowed = checks.get("allowed_channels")
    if allowed is not None:
        given = getattr(args, "channel", None)
        given = [_canonical(c) for c in given] if isinstance(given, (list, tuple)) else []
        if getattr(args, "use_local", None) is True:
            given.append("local")
        for channel in context.channels:
            c = _canonical(channel)
            if c not in allowed:
                source = "call" if c in given else "configuration"
                return {"channel_not_allowed": {"channel": c, "source": source}}
    return None


def _check(checks, args):
    """The report for this parsed command line (see GuardReport)."""
    from conda.base.context import context

    report = {
        "prefix": None,
        "prefix_is_environment": False,
        "dry_run": bool(context.dry_run),
        "json_forced_off": None,
        "unmanaged": None,
        "refusal": None,
    }
    if getattr(args, "json", None) is True and not context.json:
        report["json_forced_off"] = _setting(context, "json")
    if checks.get("require_dry_run") and not context.dry_run:
        report["refusal"] = {"dry_run_not_honoured": {"setting": _setting(context, "dry_run")}}
        return report
    try:
        refusal = _restricted(context, args, checks)
    except Exception as exc:  # noqa: BLE001 - reported, conda does not run
        refusal = {"check_failed": {"error": f"{type(exc).__name__}: {exc}"}}
    if refusal:
        report["refusal"] = refusal
        return report
    rule = checks.get("target")
    if rule is None:
        return report
    try:
        prefix = _target(context, args, rule)
    except Exception as exc:  # noqa: BLE001 - reported, conda does not run
        report["refusal"] = {"check_failed": {"error": f"{type(exc).__name__}: {exc}"}}
        return report
    if prefix is None:
        if checks.get("expect") or checks.get("predicted_prefix"):
            report["refusal"] = {
                "check_failed": {"error": "conda's arguments name no environment"}
            }
        return report
    prefix = str(prefix)
    is_env = os.path.isdir(os.path.join(prefix, "conda-meta"))
    report["prefix"] = prefix
    report["prefix_is_environment"] = is_env
    predicted = checks.get("predicted_prefix")
    if predicted and not _same(predicted, prefix):
        report["refusal"] = {"target_differs": {"predicted": predicted, "resolved": prefix}}
        return report
    expect = checks.get("expect")
    if expect == "absent" and is_env:
        report["refusal"] = {
            "environment_exists": {"prefix": prefix, "packages": _packages(prefix)}
        }
        return report
    if expect == "present" and not is_env:
        report["refusal"] = {"environment_not_found": {"prefix": prefix}}
        return report
    unmanaged = checks.get("unmanaged", "off")
    if unmanaged in ("report", "refuse") and is_env:
        try:
            files = _unmanaged(prefix)
        except OSError as exc:
            report["refusal"] = {"check_failed": {"error": f"{type(exc).__name__}: {exc}"}}
            return report
        report["unmanaged"] = files
        if unmanaged == "refuse" and files["count"]:
            report["refusal"] = {"unmanaged_files_present": {"prefix": prefix, "files": files}}
    return report


def _write_report(fd, report):
    """Writes ``report`` to the report channel and closes it: a descriptor
    (Unix), or the name of the worker's named pipe (Windows), opened here
    for the one write."""
    import json

    data = json.dumps(report).encode("utf-8", "surrogateescape")
    if isinstance(fd, str):
        try:
            with open(fd, "wb", buffering=0) as pipe:
                while data:
                    data = data[pipe.write(data):]
        except OSError:
            pass
        return
    try:
        while data:
            data = data[os.write(fd, data):]
    except OSError:
        pass
    try:
        os.close(fd)
    except OSError:
        pass


def _end(fd, report):
    """Writes the report; a refusal ends the process before the command acts."""
    _write_report(fd, report)
    refusal = report.get("refusal")
    if refusal:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        kind = next(iter(refusal))
        try:
            os.write(2, f"conda-mcp: conda was stopped before it acted ({kind})\n".encode())
        except OSError:
            pass
        os._exit(REFUSED_STATUS)


def install(checks, fd):
    """Makes ``fd`` non-inheritable and wraps conda's ``do_call`` so that the
    checks run once, before the command. When this conda has no such point,
    the report says so and the process ends (the checks cannot be enforced).
    ``fd`` is a descriptor, or a named pipe's path (Windows: nothing is
    open until the report is written)."""
    if not isinstance(fd, str):
        os.set_inheritable(fd, False)
    try:
        import importlib

        # By module, not by attribute: conda's ``conda/cli/__init__.py``
        # binds the name ``main`` to the function ``conda.cli.main.main``,
        # so ``import conda.cli.main as m`` gives that function.
        conda_argparse = importlib.import_module("conda.cli.conda_argparse")
        conda_main = importlib.import_module("conda.cli.main")
    except Exception as exc:  # noqa: BLE001
        _end(fd, {"refusal": {"unsupported": {
            "reason": f"importing conda failed: {type(exc).__name__}: {exc}"}}})
        return
    entry = getattr(conda_main, "main_subshell", None)
    original = getattr(conda_argparse, "do_call", None)
    code = getattr(entry, "__code__", None)
    if not callable(original) or code is None or "do_call" not in code.co_names:
        _end(fd, {"refusal": {"unsupported": {
            "reason": "conda's entry (conda.cli.main.main_subshell) does not call "
                      "conda.cli.conda_argparse.do_call"}}})
        return
    state = {"fd": fd}

    def do_call(args, parser, *rest, **kwargs):
        if state["fd"] is not None:
            fd_now, state["fd"] = state["fd"], None
            try:
                report = _check(checks, args)
            except Exception as exc:  # noqa: BLE001 - fail closed
                report = {"refusal": {"check_failed": {"error": f"{type(exc).__name__}: {exc}"}}}
            _end(fd_now, report)
        return original(args, parser, *rest, **kwargs)

    do_call.__wrapped__ = original
    conda_argparse.do_call = do_call


def run_script(conda_exe, argv, source=None):
    """Runs conda's entry-point script as ``__main__`` with ``argv`` (what
    follows the script), as ``python <conda_exe> <argv...>`` would: the
    script's directory first on ``sys.path`` is the caller's, ``sys.argv``
    and ``sys.orig_argv`` are the script's. Returns the exit status a fresh
    interpreter derives from how the script ended (a traceback is printed
    for an uncaught exception); KeyboardInterrupt propagates."""
    import builtins
    import importlib.machinery
    import types

    if source is None:
        with open(conda_exe, "rb") as f:
            source = f.read()
    sys.argv[:] = [conda_exe, *argv]
    if hasattr(sys, "orig_argv"):
        sys.orig_argv[:] = [sys.orig_argv[0], conda_exe, *argv]
    main = types.ModuleType("__main__")
    main.__dict__.update(
        __file__=conda_exe,
        __cached__=None,
        __loader__=importlib.machinery.SourceFileLoader("__main__", conda_exe),
        __spec__=None,
        __package__=None,
        __builtins__=builtins,
    )
    sys.modules["__main__"] = main
    code = compile(source, conda_exe, "exec", dont_inherit=True)
    try:
        exec(code, main.__dict__)
        return 0
    except SystemExit as exc:
        return system_exit_status(exc)
    except KeyboardInterrupt:
        raise  # the interpreter ends itself with SIGINT, as a fresh one does
    except BaseException:  # noqa: BLE001 - ends the script as it ends an interpreter
        # As an uncaught exception ends a fresh interpreter: the traceback
        # (without this frame), exit status 1.
        kind, value, tb = sys.exc_info()
        value = value.with_traceback(tb.tb_next)
        sys.excepthook(kind, value, tb.tb_next)
        return 1


def run_module(argv):
    """Runs conda's entry module as ``python -m conda <argv...>`` does
    (Windows: conda runs through its installation's interpreter with that
    module, shared/src/conda_cmd.rs). Returns the exit status, as
    ``run_script``."""
    import runpy

    sys.argv[:] = ["conda", *argv]
    try:
        runpy.run_module("conda", run_name="__main__", alter_sys=True)
        return 0
    except SystemExit as exc:
        return system_exit_status(exc)
    except KeyboardInterrupt:
        raise
    except BaseException:  # noqa: BLE001 - as run_script
        kind, value, tb = sys.exc_info()
        value = value.with_traceback(tb.tb_next)
        sys.excepthook(kind, value, tb.tb_next)
        return 1


def system_exit_status(exc):
    """The exit status a fresh interpreter derives from an uncaught
    SystemExit (CPython's handle_system_exit): None is 0, an int is itself,
    anything else is printed to stderr and is 1."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        # exit(3) keeps the low 8 bits; a value beyond a C long is -1.
        return code & 0xFF if -(1 << 63) <= code < (1 << 63) else 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except BaseException:  # noqa: BLE001 - a code that cannot be printed: still 1
        pass
    return 1


def fresh_main():
    """A fresh conda under the guard: ``-c <source> <checks> <conda> args``,
    the report pipe on descriptor 3; on Windows ``-c <source> <checks> -m
    args``, the report pipe named by the checks' ``report_pipe``."""
    import json

    checks_text, conda_exe = sys.argv[1], sys.argv[2]
    argv = sys.argv[3:]
    checks = json.loads(checks_text)
    report = checks.pop("report_pipe", None) or 3
    if conda_exe == "-m":
        # As for `python -m conda`: the working directory is not searched.
        if sys.path and sys.path[0] in ("", os.getcwd()):
            del sys.path[0]
        install(checks, report)
        return run_module(argv)
    # As for `python <conda_exe>`: the script's directory (symbolic links
    # resolved) first on sys.path, not the `-c` working directory.
    sys.path[0] = os.path.dirname(os.path.realpath(conda_exe))
    install(checks, report)
    status = run_script(conda_exe, argv)
    # The interpreter's own exit (threads joined, atexit, flush) follows.
    return status
