"""conda-mcp discovery helper (embedded in the conda-mcp binary).

Run with the target conda's own interpreter. Imports ``conda``, builds the
parser with ``conda.cli.conda_argparse.generate_parser()`` and prints one
``conda-parser-dump/1`` document describing it, plus the facts the startup
cache needs (interpreter, prefix, stamp_dirs), where conda puts named
environments (root_prefix, envs_dirs) and conda's configuration
(``config``: its search path, the files loaded, the keys marked final).

It only reports facts; conda-mcp interprets them in Rust. Standard library
only, Python >= 3.10.

Output contract (what the Rust side relies on):
* stdout carries the document between two marker lines, written last:
  ``BEGIN_MARKER`` / ``END_MARKER``. Everything imported while building the
  parser runs with ``sys.stdout`` pointing at stderr, so chatty plugins cannot
  corrupt it; the markers protect against output written to fd 1 directly.
* On failure: a message on stderr and exit status 1, no document.
* Lazy choices that raise are reported (``{"error": ...}`` plus an entry in
  ``warnings``), never fatal.
* A plugin that fails to load (conda's plugin manager warns and skips it)
  is reported in ``plugin_failures`` (``PluginFailures``), never fatal.
"""

import argparse
import json
import math
import os
import platform
import re
import sys
import sysconfig

FORMAT = "conda-parser-dump/1"
BEGIN_MARKER = "=====CONDA-MCP-DUMP-BEGIN====="
END_MARKER = "=====CONDA-MCP-DUMP-END====="
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def to_json(value):
    """JSON types as they are; anything else as repr() without addresses."""
    if value is None or type(value) in (bool, int, str):
        return value
    if type(value) is float:
        return value if math.isfinite(value) else _ADDRESS.sub("", repr(value))
    if type(value) in (list, tuple):
        return [to_json(v) for v in value]
    if type(value) is dict and all(type(k) is str for k in value):
        return {k: to_json(v) for k, v in value.items()}
    return _ADDRESS.sub("", repr(value))


def class_name(cls):
    return f"{cls.__module__}.{cls.__qualname__}"


def argparse_base(cls):
    for base in cls.__mro__:
        if base.__module__ == "argparse":
            return base.__name__
    return None


def dump_choices(action, warnings, path):
    try:
        choices = action.choices
        if choices is None:
            return None
        # A dict's choices are its keys, as iterating it gives them.
        return [to_json(c) for c in choices]
    except Exception as exc:  # noqa: BLE001 - lazy choices may raise anything
        message = f"{type(exc).__name__}: {exc}"
        warnings.append(
            f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}: "
            f"choices could not be evaluated: {message}"
        )
        return {"error": message}


def dump_type(t):
    if t is None:
        return None
    if isinstance(t, str):
        return t
    return getattr(t, "__name__", None) or _ADDRESS.sub("", repr(t))


def dump_action(action, groups, warnings, path):
    nargs = action.nargs
    metavar = action.metavar
    if isinstance(metavar, tuple):
        metavar = list(metavar)
    return {
        "class": class_name(type(action)),
        "argparse_base": argparse_base(type(action)),
        "option_strings": list(action.option_strings),
        "dest": action.dest,
        "nargs": nargs if nargs is None or type(nargs) in (int, str) else to_json(nargs),
        "const": to_json(action.const),
        "default": to_json(action.default),
        "type": dump_type(action.type),
        "choices": dump_choices(action, warnings, path),
        "required": bool(action.required),
        "help": action.help,
        "metavar": to_json(metavar),
        "argument_group": groups.get(id(action)),
    }


def dump_parser(parser, path, warnings):
    groups = {}
    for group in parser._action_groups:
        for action in group._group_actions:
            groups.setdefault(id(action), group.title)
    out = {
        "path": path,
        "prog": parser.prog,
        "description": parser.description,
        "epilog": parser.epilog,
        "greedy": bool(getattr(parser, "greedy", False)),
        "allow_abbrev": bool(getattr(parser, "allow_abbrev", True)),
        "prefix_chars": parser.prefix_chars,
        "actions": [dump_action(a, groups, warnings, path) for a in parser._actions],
        "mutually_exclusive_groups": [
            {
                "required": bool(g.required),
                "dests": [a.dest for a in g._group_actions],
                "option_strings": [list(a.option_strings) for a in g._group_actions],
            }
            for g in parser._mutually_exclusive_groups
        ],
        "subcommands": [],
    }
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {c.dest: c.help for c in getattr(action, "_choices_actions", [])}
        names = {}  # id(parser) -> [name, *aliases], in registration order
        parsers = {}
        for name, sub in action._name_parser_map.items():
            names.setdefault(id(sub), []).append(name)
            parsers[id(sub)] = sub
        for key, (name, *aliases) in names.items():
            out["subcommands"].append(
                {
                    "name": name,
                    "aliases": aliases,
                    "help": helps.get(name),
                    "parser": dump_parser(parsers[key], [*path, name], warnings),
                }
            )
    return out


def plugin_records():
    from importlib import metadata

    records = set()
    for ep in metadata.entry_points(group="conda"):
        dist = getattr(ep, "dist", None)
        records.add(
            (
                "conda",
                dist.name if dist is not None else "",
                dist.version if dist is not None else "",
                ep.name,
                ep.value,
            )
        )
    keys = ("group", "distribution", "version", "name", "value")
    return [dict(zip(keys, r, strict=True)) for r in sorted(records)]


# The logger conda's plugin manager warns on when an entry point fails to
# load: "Error while loading conda entry point: NAME (ERROR)", with the
# entry point's name and the exception as its arguments
# (conda/plugins/manager.py, CondaPluginManager.load_entrypoints).
PLUGIN_LOGGER = "conda.plugins.manager"


class PluginFailures:
    """Keeps what conda's plugin manager logs while the plugins load
    (instead of Python's last-resort handler printing it): one failure per
    record, ``{"entry_point", "distribution", "error_type", "message"}``,
    the message's credentials masked (``_masked``)."""

    def __init__(self):
        import logging

        self.records = []
        keeper = self

        class _Keep(logging.Handler):
            def emit(self, record):
                keeper.records.append(record)

        self.handler = _Keep()
        self.logger = logging.getLogger(PLUGIN_LOGGER)

    def __enter__(self):
        self.logger.addHandler(self.handler)
        return self

    def __exit__(self, *_exc):
        self.logger.removeHandler(self.handler)
        return False

    def failures(self):
        from importlib import metadata

        dists = {}
        for ep in metadata.entry_points(group="conda"):
            dist = getattr(ep, "dist", None)
            dists.setdefault(ep.name, dist.name if dist is not None else "")
        out = []
        for rec in self.records:
            args = rec.args if isinstance(rec.args, tuple) else ()
            if len(args) == 2 and isinstance(args[1], BaseException):
                name, err = str(args[0]), args[1]
                error_type, message = type(err).__name__, str(err)
            else:
                name, error_type, message = "", "", rec.getMessage()
            out.append(
                {
                    "entry_point": name,
                    "distribution": dists.get(name, ""),
                    "error_type": error_type,
                    "message": _masked(message),
                }
            )
        return out


def stamp_dirs():
    dirs = []
    paths = sysconfig.get_paths()
    for key in ("purelib", "platlib"):
        if key in paths:
            dirs.append(paths[key])
    dirs.append(os.path.join(sys.prefix, "conda-meta"))
    seen = []
    for d in dirs:
        path = os.path.abspath(d)
        if os.path.isdir(path) and path not in seen:
            seen.append(path)
    return sorted(seen)


_BOOL_TEXT = {"true", "false", "yes", "no", "on", "off", "0", "1"}


def config_value(value):
    """A final key's value when it is a flag or a number (what the server's
    rules read); None for anything else (text may carry credentials)."""
    if type(value) in (bool, int):
        return value
    if type(value) is str and value.strip().lower() in _BOOL_TEXT:
        return value.strip().lower()
    return None


def config_facts(context, warnings):
    """conda's configuration as its own objects hold it
    (conda/common/configuration.py): every place its search path looks
    (expanded as conda expands it, existing or not), the files it loaded,
    and every key a source marks final (``#!final`` in a file,
    ``!important`` in a ``CONDA_*`` variable: ``RawParameter.keyflag()``
    is ``ParameterFlag.final``), which conda's merge lets no later source,
    the command line included, override."""
    try:
        from conda.base.constants import SEARCH_PATH
        from conda.common.configuration import ParameterFlag, custom_expandvars
    except ImportError as exc:
        warnings.append(f"conda's configuration objects could not be read: {exc}")
        return None
    try:
        from conda.base.context import determine_target_prefix

        target_prefix = determine_target_prefix(context)
    except Exception:  # noqa: BLE001 - conda's default then, as conda falls back
        target_prefix = os.environ.get("CONDA_PREFIX") or sys.prefix
    kwargs = {"CONDA_PREFIX": target_prefix}
    # conda sets CONDA_ROOT=sys.prefix when it is unset (conda/__init__.py).
    kwargs["CONDA_ROOT"] = os.environ.get("CONDA_ROOT") or sys.prefix
    search_path = []
    for entry in SEARCH_PATH:
        path = os.path.expanduser(custom_expandvars(str(entry), os.environ, **kwargs))
        if "$" in path or not os.path.isabs(path):
            continue  # a variable that is unset: conda finds nothing there
        path = os.path.normpath(path)
        if path not in search_path:
            search_path.append(path)
    final_keys = []
    for source, params in getattr(context, "raw_data", {}).items():
        for key, param in (params or {}).items():
            try:
                final = param.keyflag() is ParameterFlag.final
            except Exception:  # noqa: BLE001 - a parameter without flags
                final = False
            if not final:
                continue
            try:
                value = config_value(param.value(None))
            except Exception:  # noqa: BLE001 - a value conda cannot read: none
                value = None
            final_keys.append({"key": str(key), "source": str(source), "value": value})
    return {
        "search_path": search_path,
        "files": list(dict.fromkeys(str(p) for p in getattr(context, "_search_path", ()))),
        "final_keys": final_keys,
        "channels": configured_channels(context),
    }


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
    becomes ``/t/<TOKEN>/``. The same code as ``_masked`` in
    worker/src/guard/guard.py (tests/tests/library/channel_rules.rs holds
    the three to one corpus)."""
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


def configured_channels(context):
    """``context.channels`` as conda resolved it from its configuration
    (files, ``CONDA_CHANNELS``), each with its credentials masked as the
    server masks them (``user:***@``, ``/t/<TOKEN>/``), so that the
    server's canonical form of each (shared/src/guard.rs) is the one the
    guard computes from the same channel inside conda: the channels a solve
    uses besides its own unless ``--override-channels``. None when conda
    does not say."""
    try:
        channels = list(context.channels)
    except Exception:  # noqa: BLE001 - a broken configuration: conda does not say
        return None
    return [_masked(str(c)) for c in channels]


def environment_dirs(context):
    """conda's root prefix and envs directories, as conda resolves a
    ``--name`` (``context.root_prefix``, ``context.envs_dirs``)."""
    out = {}
    if context is None:
        return out
    for key, attr in (("root_prefix", "root_prefix"), ("envs_dirs", "envs_dirs")):
        try:
            value = getattr(context, attr)
        except Exception:  # noqa: BLE001 - a broken configuration: report nothing
            continue
        out[key] = [str(v) for v in value] if key == "envs_dirs" else str(value)
    return out


def build_document():
    warnings = []
    import conda
    from conda.cli import conda_argparse

    # conda's own startup initializes its context (condarc, plugin settings)
    # before building the parser (conda/cli/main.py); do the same when the
    # installation has one.
    try:
        from conda.base.context import context
    except ImportError:
        context = None
    with PluginFailures() as plugins:
        if context is not None:
            try:
                context.__init__()
            except Exception as exc:  # noqa: BLE001 - a warning; the parser may still build
                warnings.append(
                    f"conda's context could not be initialized: {type(exc).__name__}: {exc}"
                )
            # conda loads its plugins on the first access (cached).
            try:
                getattr(context, "plugin_manager", None)
            except Exception as exc:  # noqa: BLE001 - a warning; the parser may still build
                warnings.append(
                    f"conda's plugin manager failed: {type(exc).__name__}: {_masked(str(exc))}"
                )

        config = config_facts(context, warnings) if context is not None else None
        parser = conda_argparse.generate_parser()
    root = dump_parser(parser, ["conda"], warnings)
    document = {
        "format": FORMAT,
        "conda_version": str(getattr(conda, "__version__", "")),
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "sys_platform": sys.platform,
        "plugins": plugin_records(),
        "root": root,
        "interpreter": sys.executable,
        "prefix": sys.prefix,
        "stamp_dirs": stamp_dirs(),
        "config": config,
        "warnings": warnings,
        "plugin_failures": plugins.failures(),
    }
    document.update(environment_dirs(context))
    return document


def main():
    # Run as `python -` (source on stdin): sys.path[0] is the working
    # directory, which must not be able to shadow the installation's `conda`.
    if sys.path and sys.path[0] in ("", os.getcwd()):
        del sys.path[0]
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # imports and plugins may print: keep stdout clean
    try:
        document = build_document()
        text = json.dumps(document, ensure_ascii=True, separators=(",", ":"))
    except BaseException as exc:  # noqa: BLE001 - report, never a traceback on stdout
        sys.stdout = real_stdout
        print(
            f"conda-mcp discovery helper failed: {type(exc).__name__}: {exc}",
            file=sys.stderr,
        )
        return 1
    finally:
        sys.stdout = real_stdout
    sys.stderr.flush()
    real_stdout.write(f"\n{BEGIN_MARKER}\n{text}\n{END_MARKER}\n")
    real_stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
