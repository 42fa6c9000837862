"""conda-mcp inventory helper: one query across every environment conda knows.

Run by conda-mcp with the target conda's interpreter, through the worker, as
``python -I -c <this file> <request-json>``, as the user the worker runs
conda as (a principal's view is its worker's); or, the same argv, in a
child forked from the worker's warm conda (conda already imported; the
import path an isolated interpreter has), which is why it keeps no state
between two runs and reads conda's configuration afresh
(``context.__init__()``).  It reads what conda itself
reads, through conda's own API:

* the environments: ``conda.core.envs_manager.list_all_known_prefixes``,
  what ``conda env list`` (``conda info --envs``) lists;
* the packages of each: ``conda.core.prefix_data.PrefixData(prefix,
  interoperability=True)``, what ``conda list`` reads (its conda-meta
  records, and the packages pip and other tools installed, from the
  prefix-data loader plugins);
* matching: ``conda.models.match_spec.MatchSpec`` and ``PrefixData.query``;
* sizes: ``PrefixData.size`` (what ``conda env list --size`` reports).

It runs no solver and changes nothing: conda's readers tidy two files as
they read (a gone prefix is dropped from ``environments.txt``; the record of
a conda package whose files pip replaced is deleted from ``conda-meta``);
the helper turns both writes off for its own process, so it sees what
``conda list`` would show without writing anything.

The request is one JSON object: ``{"kind": "package"|"python"|"import_name"
|"command"|"path"|"sizes"|"stamps", "value": str|null, "max_rows": int}``
(``stamps`` is the server's own environment watch, see ``stamps``).  The
answer is one JSON object on stdout, written last (anything conda or a
plugin prints goes to stderr): ``{"query": kind, "environments": int, "rows": [...],
"matched": int, "skipped": [{"prefix", "reason"}]}``, or ``{"query": kind,
"invalid": reason}`` for a value conda cannot read (never echoing it).
"""

import contextlib
import json
import os
import sys

# Where a command on PATH lives in an environment (Unix, then Windows:
# conda's menuinst/entry-point layouts; conda's activate puts these on PATH).
_COMMAND_DIRS = (
    "bin",
    "Scripts",
    "Library/bin",
    "Library/mingw-w64/bin",
    "Library/usr/bin",
    "",
)
_COMMAND_SUFFIXES = ("", ".exe", ".bat", ".cmd", "-script.py")
# Extension modules and sources an import name can resolve to.
_MODULE_SUFFIXES = (".py", ".pyc", ".so", ".pyd", ".abi3.so")


def _quiet_conda_writes():
    """Turns off the two files conda's readers tidy (module docs)."""
    try:
        from conda.core import envs_manager

        envs_manager._rewrite_environments_txt = lambda *a, **k: None
    except Exception:  # noqa: BLE001 - an older conda without it
        pass
    try:
        from conda.plugins.prefix_data_loaders import pypi

        pypi.rm_rf = lambda *a, **k: None
    except Exception:  # noqa: BLE001 - an older conda without the plugin
        pass


def _env_name(pd, prefix, context):
    """The name ``conda env list`` shows: ``PrefixData.name`` where conda has
    it (``base`` for the root prefix, the folder's name in one of the envs
    directories, else ""), the same rule otherwise."""
    name = getattr(pd, "name", None)
    if isinstance(name, str):
        return name
    if os.path.normcase(os.path.abspath(prefix)) == os.path.normcase(
        os.path.abspath(context.root_prefix)
    ):
        return "base"
    parent = os.path.normcase(os.path.dirname(os.path.abspath(prefix)))
    for envs_dir in context.envs_dirs:
        if os.path.normcase(os.path.abspath(envs_dir)) == parent:
            return os.path.basename(prefix)
    return ""


def _is_environment(pd, prefix):
    """Whether the prefix still holds an environment (it may have been
    removed since conda listed it): ``PrefixData.is_environment``, else
    conda's rule, a ``conda-meta/history`` file."""
    check = getattr(pd, "is_environment", None)
    if callable(check):
        return bool(check())
    return os.path.isfile(os.path.join(prefix, "conda-meta", "history"))


def _get(rec, key, default=None):
    value = getattr(rec, key, None)
    if value is None and hasattr(rec, "get"):
        try:
            value = rec.get(key, None)
        except Exception:  # noqa: BLE001 - a record type without that key
            value = None
    return default if value is None else value


def _channel(rec):
    """The channel ``conda list --json`` shows (``channel`` of
    ``dist_fields_dump``)."""
    dump = getattr(rec, "dist_fields_dump", None)
    if callable(dump):
        try:
            return str(dump().get("channel") or "")
        except Exception:  # noqa: BLE001 - fall back to the record's field
            pass
    channel = _get(rec, "channel", "")
    return str(getattr(channel, "name", channel) or "")


def _package_row(rec):
    return {
        "name": str(_get(rec, "name", "")),
        "version": str(_get(rec, "version", "")),
        "build": str(_get(rec, "build", "")),
        "channel": _channel(rec),
    }


def _files(rec):
    files = _get(rec, "files", ()) or ()
    return [str(f).replace("\\", "/") for f in files]


def _site_relative(path):
    """The part of a record's file below a site-packages (or lib-dynload)
    folder, or None."""
    parts = path.split("/")
    for i, part in enumerate(parts):
        if part in ("site-packages", "lib-dynload") and i + 1 < len(parts):
            return parts[i + 1 :]
    return None


def _module_file(name, stem):
    """Whether file ``name`` is module ``stem``: ``stem.py``, ``stem.pyc``,
    or an extension module ``stem.<tag>.so``/``.pyd``."""
    if not name.startswith(stem + "."):
        return False
    rest = name[len(stem) :]
    if rest in (".py", ".pyc", ".so", ".pyd"):
        return True
    return rest.endswith((".so", ".pyd")) and rest.count(".") == 2


def _provides_import(files, dotted):
    """The first file of ``files`` through which ``import dotted`` resolves:
    a package's ``__init__``, a namespace package's folder (any file below
    it), a module source or a compiled extension module."""
    want = dotted.split(".")
    for f in files:
        rel = _site_relative(f)
        if rel is None or "__pycache__" in rel:
            continue
        if rel[0].endswith((".dist-info", ".egg-info", ".pth", ".data")):
            continue
        # A folder chain a/b/c/... (regular or namespace package).
        if len(rel) > len(want) and rel[: len(want)] == want:
            return f
        # A module file a/b/c.py or a/b/c.cpython-312-x86_64-linux-gnu.so.
        if len(rel) == len(want) and rel[:-1] == want[:-1] and _module_file(rel[-1], want[-1]):
            return f
    return None


def _provides_command(files, command):
    """The file of ``files`` that is ``command`` on the environment's PATH."""
    lowered = command.lower()
    for f in files:
        folder, _, name = f.rpartition("/")
        if folder not in _COMMAND_DIRS:
            continue
        if folder in ("bin", "Library/usr/bin") and name == command:
            return f
        if folder != "bin":
            for suffix in _COMMAND_SUFFIXES[1:]:
                if name.lower() == lowered + suffix:
                    return f
    return None


def _provides_path(files, prefix, path):
    """The file of ``files`` that is ``path``: absolute (inside ``prefix``)
    or relative to the environment (a trailing part of a listed file)."""
    if os.path.isabs(path):
        try:
            rel = os.path.relpath(os.path.abspath(path), os.path.abspath(prefix))
        except ValueError:  # another drive on Windows
            return None
        if rel.startswith(".."):
            return None
        rel = rel.replace("\\", "/")
        return rel if rel in files else None
    want = path.replace("\\", "/").strip("/")
    for f in files:
        if f == want or f.endswith("/" + want):
            return f
    return None


def _size(pd, records, prefix):
    """The environment's size in bytes: ``PrefixData.size`` (what ``conda env
    list --size`` reports); where conda cannot count a record (one without
    ``paths_data``, written by an older conda), its files on disk instead."""
    size = getattr(pd, "size", None)
    if callable(size):
        try:
            return int(size())
        except Exception:  # noqa: BLE001 - a record conda cannot count
            pass
    total = 0
    for rec in records:
        for f in _files(rec):
            try:
                total += os.lstat(os.path.join(prefix, f)).st_size
            except OSError:
                pass
    meta = os.path.join(prefix, "conda-meta")
    try:
        for entry in os.scandir(meta):
            total += entry.stat(follow_symlinks=False).st_size
    except OSError:
        pass
    return total


def _python_spec(value):
    """``python`` plus the version as a match spec's version part: a bare
    version (``3.12``) is conda's fuzzy ``=3.12`` (3.12.*)."""
    value = value.strip()
    if value[:1].isdigit():
        return "python=" + value
    return "python" + value


def _match_spec(text):
    from conda.models.match_spec import MatchSpec

    return MatchSpec(text)


def _record_value(rec, name):
    return _get(rec, name, "")


def _stat(path):
    """``[path, mtime_ns, size]``; ``None`` for both when it does not exist
    (or cannot be read)."""
    try:
        st = os.stat(path)
    except OSError:
        return [path, None, None]
    return [path, st.st_mtime_ns, st.st_size]


def _watched_in(prefix):
    """What changes when a package is installed into or removed from the
    environment at ``prefix``: its ``conda-meta`` folder (a record added or
    removed), its ``history`` (every conda transaction appends), and its
    ``site-packages`` folders (pip adds or removes a ``.dist-info``)."""
    import glob

    meta = os.path.join(prefix, "conda-meta")
    paths = [meta, os.path.join(meta, "history")]
    pattern = os.path.join(glob.escape(prefix), "lib", "python*", "site-packages")
    paths.extend(sorted(glob.glob(pattern)))
    windows_site = os.path.join(prefix, "Lib", "site-packages")
    if os.path.isdir(windows_site):
        paths.append(windows_site)
    return paths


def stamps(context):
    """The ``stamps`` request (the server's environment watch, never a tool
    call): every environment conda lists with the stat of what changes when
    it changes, and the stat of what changes when an environment appears or
    disappears (``environments.txt``, the envs directories), taken before
    the environments are listed, so a change after it shows in the next
    stat.  No package record is read."""
    from conda.core.envs_manager import get_user_environments_txt_file, list_all_known_prefixes
    from conda.core.prefix_data import PrefixData

    watch = [_stat(p) for p in [get_user_environments_txt_file(), *context.envs_dirs]]
    environments = []
    for prefix in list_all_known_prefixes():
        try:
            pd = PrefixData(prefix)
            if not _is_environment(pd, prefix):
                continue
            name = _env_name(pd, prefix, context)
        except Exception:  # noqa: BLE001 - a broken environment is still watched, unnamed
            name = ""
        watched = [_stat(p) for p in _watched_in(str(prefix))]
        environments.append({"env": name, "prefix": str(prefix), "watch": watched})
    return {"query": "stamps", "watch": watch, "environments": environments}


def answer(request):
    kind = request.get("kind")
    value = request.get("value")
    max_rows = int(request.get("max_rows", 2000))

    from conda.base.context import context

    context.__init__()
    _quiet_conda_writes()
    if kind == "stamps":
        return stamps(context)
    from conda.core.envs_manager import list_all_known_prefixes
    from conda.core.prefix_data import PrefixData

    spec = None
    if kind in ("package", "python"):
        try:
            spec = _match_spec(_python_spec(value) if kind == "python" else value)
        except Exception as exc:  # noqa: BLE001 - conda's own InvalidMatchSpec and kin
            return {
                "query": kind,
                "invalid": f"conda cannot read it as a match spec ({type(exc).__name__})",
            }
    python_spec = _match_spec("python") if kind == "sizes" else None

    prefixes = list_all_known_prefixes()
    searched = 0
    rows = []
    matched = 0
    skipped = []
    for prefix in prefixes:
        try:
            pd = PrefixData(prefix, interoperability=True)
            if not _is_environment(pd, prefix):
                continue
            pd.load()
            env = {"env": _env_name(pd, prefix, context), "prefix": str(prefix)}
            found = []
            if kind in ("package", "python"):
                for rec in pd.query(spec):
                    row = dict(env)
                    if kind == "python":
                        row["version"] = str(_record_value(rec, "version"))
                    else:
                        row.update(_package_row(rec))
                    found.append(row)
            elif kind == "sizes":
                records = list(pd.iter_records())
                row = dict(env)
                row["packages"] = len(records)
                row["size_bytes"] = _size(pd, records, prefix)
                pythons = [r for r in records if python_spec.match(r)]
                if pythons:
                    row["python"] = str(_record_value(pythons[0], "version"))
                found.append(row)
            else:
                for rec in sorted(pd.iter_records(), key=lambda r: str(_get(r, "name", ""))):
                    files = _files(rec)
                    if kind == "import_name":
                        hit = _provides_import(files, value)
                    elif kind == "command":
                        hit = _provides_command(files, value)
                    else:
                        hit = _provides_path(files, prefix, value)
                    if hit is not None:
                        row = dict(env)
                        row.update(_package_row(rec))
                        row["file"] = hit
                        found.append(row)
            if kind == "package":
                found.sort(key=lambda r: r["name"])
            searched += 1
            matched += len(found)
            rows.extend(found[: max(0, max_rows - len(rows))])
        except Exception as exc:  # noqa: BLE001 - one broken environment is reported, not fatal
            skipped.append({"prefix": str(prefix), "reason": type(exc).__name__})
    return {
        "query": kind,
        "environments": searched,
        "rows": rows,
        "matched": matched,
        "skipped": skipped,
    }


def main():
    request = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    real_stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        result = answer(request)
    real_stdout.write(json.dumps(result, sort_keys=True, default=str))
    real_stdout.write("\n")
    real_stdout.flush()


main()
