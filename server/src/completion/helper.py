"""conda-mcp completion helper: read one command of conda-completion's manifest.

Run by conda-mcp with the target conda's interpreter, through the worker,
as ``python -I -c <this file> <request-json>``.  Standard library only
(besides the plugin itself); Python >= 3.10.

It reads the manifest that ``conda completion generate`` wrote, through the
plugin's public API (conda_completion.paths.manifest_path,
conda_completion.manifest.read_manifest,
conda_completion.plugin.plugin_entry_point_hash).  It never regenerates the
file, and it never returns the package-name or version caches.

The request is one JSON object: {"command_path": [str], "subcommand_aliases":
[[parent..., alias, canonical]]}.  The answer is one JSON object on stdout,
written last; anything a plugin prints while importing goes to stderr.
"""

import contextlib
import json
import sys


def _version_of(dist):
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:  # noqa: BLE001 - no such distribution, or a broken one: no version
        return None


def _opt_dict(spec):
    return spec.to_dict() if hasattr(spec, "to_dict") else dict(spec)


def _subcommand_list(children, parent, sub_aliases):
    """Direct subcommands: summary only, aliases marked (never their tree)."""
    out = {}
    for name, sub in (children or {}).items():
        canonical = sub_aliases.get((tuple(parent), name))
        if canonical is not None:
            out[name] = {"alias_of": canonical}
        else:
            out[name] = {"summary": sub.summary} if sub.summary else {}
    return out


def _command_view(spec, path, sub_aliases):
    """One command: options, positionals, direct subcommands, groups."""
    full = spec.to_dict()
    subcommands = _subcommand_list(spec.subcommands, path, sub_aliases)
    return {
        "summary": full.get("summary"),
        "options": full.get("options", {}),
        "positionals": full.get("positionals", []),
        "subcommands": subcommands,
        "exclusive_groups": full.get("exclusive_groups", []),
    }


def _referenced_sources(view):
    names = set()

    def add_completion(c):
        if not isinstance(c, dict):
            return
        names.update(c.get("sources", []))
        for rule in c.get("rules", []):
            names.update(rule.get("sources", []))

    for opt in view["options"].values():
        add_completion(opt.get("completion"))
        if opt.get("completion_type"):
            names.add(opt["completion_type"])
    for pos in view["positionals"]:
        add_completion(pos.get("completion"))
        if pos.get("completion_type"):
            names.add(pos["completion_type"])
    return names


def answer(request):
    requested = list(request.get("command_path", []))
    out = {
        "availability": "unavailable",
        "requested_path": requested,
        "resolved_path": requested,
        "alias_target": None,
        "conda_completion_version": _version_of("conda-completion"),
    }
    try:
        from conda_completion.manifest import read_manifest
        from conda_completion.paths import manifest_path
        from conda_completion.plugin import plugin_entry_point_hash
    except ImportError as exc:
        out["availability"] = "not_installed"
        out["message"] = f"conda-completion is not importable: {type(exc).__name__}"
        return out
    except Exception as exc:  # noqa: BLE001 - a broken plugin install
        out["message"] = f"conda-completion failed to import: {type(exc).__name__}: {exc}"
        return out

    try:
        path = manifest_path()
        current_hash = plugin_entry_point_hash()
    except Exception as exc:  # noqa: BLE001 - reported in the answer
        out["message"] = (
            f"conda-completion could not locate its manifest: {type(exc).__name__}: {exc}"
        )
        return out
    if not path.exists():
        out["availability"] = "not_generated"
        out["message"] = "The completion manifest has not been generated yet."
        out["hint"] = (
            "Run `conda completion generate` to create it (it writes a file: through "
            "conda-mcp that is the conda_completion_generate tool, which needs --allow-write)."
        )
        out["manifest"] = {"current_plugin_hash": current_hash}
        return out
    try:
        manifest = read_manifest(path)
    except Exception as exc:  # noqa: BLE001 - reported in the answer
        out["message"] = f"The completion manifest could not be read: {type(exc).__name__}: {exc}"
        out["hint"] = "Run `conda completion generate` to rewrite it."
        return out

    stored = manifest.plugin_hash or None
    out["manifest"] = {
        "version": manifest.version,
        "generated_at": manifest.generated_at or None,
        "stored_plugin_hash": stored,
        "current_plugin_hash": current_hash,
        "stale": stored != current_hash,
    }

    # Executable aliases declared by plugins (manifest.aliases) apply to the
    # first token; subcommand aliases (argparse add_parser(aliases=...)) come
    # from conda-mcp's catalog and are resolved level by level.
    resolved = list(requested)
    if resolved and resolved[0] in (manifest.aliases or {}):
        target = list(manifest.aliases[resolved[0]].target)
        out["alias_target"] = target
        resolved = target + resolved[1:]
    sub_aliases = {}
    for entry in request.get("subcommand_aliases", []):
        *parent, alias, canonical = entry
        sub_aliases[(tuple(parent), alias)] = canonical
    canonical_path = []
    for token in resolved:
        canonical_path.append(sub_aliases.get((tuple(canonical_path), token), token))
    if canonical_path != resolved and out["alias_target"] is None:
        out["alias_target"] = canonical_path
    resolved = canonical_path
    out["resolved_path"] = resolved

    if not resolved:
        root = {
            "summary": None,
            "options": {k: _opt_dict(v) for k, v in (manifest.root_options or {}).items()},
            "positionals": [],
            "subcommands": _subcommand_list(manifest.commands, [], sub_aliases),
            "exclusive_groups": [],
        }
        view = root
    else:
        node = None
        children = manifest.commands or {}
        for depth, token in enumerate(resolved):
            node = children.get(token)
            if node is None:
                out["availability"] = "available"
                out["unknown_index"] = depth
                return out
            children = node.subcommands or {}
        view = _command_view(node, resolved, sub_aliases)

    out["availability"] = "available"
    out["command"] = view
    wanted = _referenced_sources(view)
    sources = manifest.runtime_sources or {}
    out["runtime_sources"] = {
        name: spec.to_dict() for name, spec in sources.items() if name in wanted
    }
    return out


def main():
    request = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    real_stdout = sys.stdout
    with contextlib.redirect_stdout(sys.stderr):
        result = answer(request)
    real_stdout.write(json.dumps(result, sort_keys=True, default=str))
    real_stdout.write("\n")
    real_stdout.flush()


main()
