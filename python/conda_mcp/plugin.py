"""``conda mcp``: a conda subcommand plugin that starts the conda-mcp server
against the very conda that runs it.

conda loads this module through its plugin mechanism: an entry point of
group ``conda`` (``pyproject.toml`` and ``recipe/recipe.yaml``), whose
``conda_subcommands`` hook registers ``mcp``. Without ``configure_parser``
conda makes the subcommand greedy and calls :func:`execute` with every
argument after ``mcp``, unparsed (``conda/cli/conda_argparse.py``:
``configure_parser_plugins``, ``_GreedySubParsersAction``, ``do_call``).

:func:`execute` flushes conda's output and replaces the process (``exec``,
no shell, no child) with::

    conda-mcp --conda-exe <the invoking conda> <every argument after mcp>

(``conda mcp check ...`` becomes ``conda-mcp check --conda-exe ...``: the
command word stays first), so ``conda mcp --allow-write`` is a complete
host command. When the
invoking conda executable or the ``conda-mcp`` binary cannot be found it
prints one line on stderr and returns exit status 1.
"""

import os
import shutil
import sys
import sysconfig

from conda.plugins import hookimpl

try:  # conda >= 24: the plugin types live in conda.plugins.types
    from conda.plugins.types import CondaSubcommand
except ImportError:  # older conda re-exported them from conda.plugins
    from conda.plugins import CondaSubcommand

#: The subcommand's one-line summary in ``conda --help``.
SUMMARY = "Run the conda-mcp MCP server (stdio) against this conda."

#: conda-mcp's flag naming the conda to serve.
CONDA_EXE_FLAG = "--conda-exe"

#: conda-mcp's one command (`conda-mcp check`), first when given.
CHECK_COMMAND = "check"


def _is_executable_file(path):
    return bool(path) and os.path.isfile(path) and os.access(path, os.X_OK)


def invoking_conda():
    """The conda executable running this process, absolute, or None.

    ``sys.argv[0]`` when it is an executable file named ``conda`` (the
    script conda was started as: ``<prefix>/bin/conda``,
    ``<prefix>/condabin/conda``, or ``$CONDA_EXE`` through conda's shell
    function); else ``<sys.prefix>/bin/conda``, the executable conda itself
    names for its installation (``CONDA_EXE`` in
    ``context.conda_exe_vars_dict``), when it exists; else None (``python
    -m conda`` from a source tree, say).
    """
    started_as = sys.argv[0] if sys.argv else ""
    if os.path.basename(started_as) == "conda" and _is_executable_file(started_as):
        return os.path.abspath(started_as)
    own = os.path.join(sys.prefix, "bin", "conda")
    if _is_executable_file(own):
        return own
    return None


def server_executable():
    """The ``conda-mcp`` binary, or None: the one installed with this plugin
    (the scripts folder of this Python environment, where the wheel and the
    conda package put it), else the first on ``PATH``."""
    beside = os.path.join(sysconfig.get_path("scripts"), "conda-mcp")
    if _is_executable_file(beside):
        return beside
    return shutil.which("conda-mcp")


def _refuse(message):
    print(f"conda mcp: {message}", file=sys.stderr, flush=True)
    return 1


def execute(args):
    """The ``mcp`` subcommand's action: ``args`` are the arguments after
    ``mcp`` (a tuple of strings). Returns 1 after a one-line refusal;
    otherwise never returns (the process becomes ``conda-mcp``)."""
    conda = invoking_conda()
    if conda is None:
        return _refuse(
            "cannot tell which conda executable is running this command; "
            f"run conda-mcp {CONDA_EXE_FLAG} /path/to/conda instead"
        )
    server = server_executable()
    if server is None:
        return _refuse(
            "the conda-mcp executable is not installed in this environment "
            "nor on PATH; install the conda-mcp package next to this plugin"
        )
    args = list(args)
    # conda-mcp takes its `check` command only as the first argument
    # (server/src/cli.rs), so the flag goes after it: `conda mcp check ...`
    # is `conda-mcp check --conda-exe CONDA ...`.
    command = [args.pop(0)] if args[:1] == [CHECK_COMMAND] else []
    argv = [server, *command, CONDA_EXE_FLAG, conda, *args]
    # Whatever conda or its plugins wrote so far must reach the terminal
    # before the process image is replaced (exec discards Python's buffers).
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(server, argv)
    return 1  # not reached: execv returns only by raising


@hookimpl
def conda_subcommands():
    """conda's hook: the ``mcp`` subcommand, greedy (no parser of its own),
    so every argument after ``mcp`` reaches :func:`execute` unchanged."""
    yield CondaSubcommand(name="mcp", summary=SUMMARY, action=execute)
