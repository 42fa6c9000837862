"""What the operator's restrictions add to the guard inside conda's process.

Usage (from the checkout):

    python3 tests/tools/restriction_cost.py [RUNS]
    /path/to/conda/bin/python tests/tools/restriction_cost.py [RUNS]

With an interpreter that imports a real ``conda`` it measures that conda's
own functions; otherwise the stand-in's (tests/fixtures/standin). Loads the
guard (worker/src/guard/guard.py), initializes conda's context with the
parsed arguments of ``install -n lab -c conda-forge zlib`` as conda's entry
does, and times the guard's check of that namespace (``_check``, what runs
in ``do_call`` before the command) with the checks an install carries
(its target resolved by conda, reported) against the same checks plus the
restrictions (``base``, one ``--protect-env`` name and one prefix, two
allowed channels), interleaved, RUNS (default 3000) of each. Prints the
medians in microseconds and their difference: the restrictions' cost per
guarded call. Standard library only.
"""
import argparse
import importlib.util
import os
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 3000
    try:
        import conda.base.context  # noqa: F401 - a real conda
        which = "conda " + getattr(sys.modules["conda"], "__version__", "?")
    except ImportError:
        sys.path.insert(0, os.path.join(ROOT, "tests", "fixtures", "standin"))
        which = "the stand-in"
    spec = importlib.util.spec_from_file_location(
        "guard", os.path.join(ROOT, "worker", "src", "guard", "guard.py"))
    guard = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(guard)
    from conda.base.context import context

    args = argparse.Namespace(
        name="lab", prefix=None, channel=["conda-forge"], use_local=False,
        override_channels=False, json=True, dry_run=False, packages=["zlib"])
    context.__init__(argparse_args=args)
    plain = {"target": "arguments"}
    restricted = dict(
        plain,
        protected=["root", {"name": "shared"}, {"prefix": "/opt/conda/envs/team"}],
        allowed_channels=["conda-forge", "defaults"],
    )
    first = guard._check(restricted, args)
    if first.get("refusal"):
        sys.exit(f"the restricted checks refused the call: {first['refusal']}")
    sides = {"plain": [], "restricted": []}
    for _ in range(runs):
        for name, checks in (("plain", plain), ("restricted", restricted)):
            start = time.perf_counter_ns()
            guard._check(checks, args)
            sides[name].append(time.perf_counter_ns() - start)
    med = {k: statistics.median(v) / 1000 for k, v in sides.items()}
    print(f"guard check inside {which} (Python {sys.version.split()[0]}), {runs} runs each, interleaved")
    print(f"  target only (an install's checks):      {med['plain']:8.1f} us")
    print(f"  plus protected envs and allowed channels: {med['restricted']:6.1f} us")
    print(f"  added by the restrictions:               {med['restricted'] - med['plain']:7.1f} us")


if __name__ == "__main__":
    main()
