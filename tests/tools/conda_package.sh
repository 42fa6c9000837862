#!/usr/bin/env bash
# Builds the conda packages of recipe/recipe.yaml with py-rattler-build (from
# PyPI) out of the binaries this run's cargo build made, installs
# conda-mcp-server into a fresh prefix with py-rattler (from PyPI) and runs
# tests/tests/mcp/installed.rs against that prefix's bin/: both
# `--version`s, `conda-mcp check` against the stand-in conda, and an MCP
# session. Fails on the first error. .ci/run runs it; it needs python3 with
# venv and the network to PyPI (nothing from conda channels: the recipe has
# no build or host dependencies, and the tests resolve only the local
# channel).
#
#   tests/tools/conda_package.sh                          # binaries of the dev build
#   PACKAGE_PROFILE=release tests/tools/conda_package.sh  # as published
#
# The dev profile reuses cargo's debug build of the test run (seconds
# instead of minutes); the packaging (recipe, layout, install) is the same
# in both profiles.
set -euo pipefail
cd "$(dirname "$0")/../.."

target_dir=${CARGO_TARGET_DIR:-target}
work=$target_dir/conda-package-test
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)

profile=${PACKAGE_PROFILE:-dev}
echo "== conda package: the binaries (cargo, $profile profile)"
if [ "$profile" = release ]; then
  cargo build --locked --release -p conda-mcp-server --bins
  bin_dir=$target_dir/release
else
  cargo build --locked -p conda-mcp-server --bins
  bin_dir=$target_dir/debug
fi
bin_dir=$(cd "$bin_dir" && pwd)

echo "== conda package: tools (py-rattler-build, py-rattler from PyPI)"
python3 -m venv "$work/tools"
"$work/tools/bin/pip" install --quiet --disable-pip-version-check \
  'py-rattler-build>=0.73,<0.74' 'py-rattler>=0.28,<0.29'

echo "== conda package: rattler-build recipe/recipe.yaml (and its tests)"
channel=$work/channel
mkdir -p "$channel"
CONDA_MCP_BIN_DIR=$bin_dir "$work/tools/bin/python" -W ignore::DeprecationWarning - "$channel" <<'PY'
import sys
import rattler_build

channel = sys.argv[1]
# The only channel is the output folder: the recipe's tests resolve the
# package just built and nothing else (no conda-forge, no network).
rattler_build.build_recipes(
    ["recipe/recipe.yaml"],
    output_dir=channel,
    target_platform="linux-64",
    channel=[f"file://{channel}"],
)
PY
ls "$channel"/linux-64/conda-mcp-server-*.conda "$channel"/noarch/conda-mcp-*.conda

echo "== conda package: py-rattler installs conda-mcp-server into a fresh prefix"
prefix=$work/prefix
"$work/tools/bin/python" - "$channel" "$prefix" "$work/pkgs" <<'PY'
import asyncio
import sys
import rattler

channel, prefix, cache = sys.argv[1:4]

async def main():
    records = await rattler.solve(
        [rattler.Channel(f"file://{channel}")],
        ["conda-mcp-server"],
        platforms=["linux-64", "noarch"],
        virtual_packages=rattler.VirtualPackage.detect(),
    )
    await rattler.install(records, target_prefix=prefix, cache_dir=cache, show_progress=False)
    print("installed", ", ".join(f"{r.name.normalized} {r.version}" for r in records))

asyncio.run(main())
PY

version=$("$prefix/bin/conda-mcp" --version)
expected="conda-mcp $(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)"
if [ "$version" != "$expected" ]; then
  echo "the packaged conda-mcp --version printed '$version', expected '$expected'" >&2
  exit 1
fi
echo "$version"
CONDA_MCP_INSTALLED_BIN_DIR="$prefix/bin" \
  cargo test --locked -p conda-mcp-tests --test mcp installed::

# Real tier (CONDA_MCP_TEST_CONDA names a real conda): that conda installs
# conda-mcp-server from the local channel (offline, nothing else), and the
# installed binaries serve it. Declared in CONDA_MCP_TEST_TIERS, a missing
# conda fails; undeclared, it is skipped with a line saying so.
case ",${CONDA_MCP_TEST_TIERS:-}," in *,real,*) real_declared=1 ;; *) real_declared=0 ;; esac
if [ -x "${CONDA_MCP_TEST_CONDA:-}" ]; then
  echo "== conda package: a real conda installs conda-mcp-server from the local channel"
  real_prefix=$work/real-prefix
  "$CONDA_MCP_TEST_CONDA" create --yes --quiet --offline --override-channels \
    -c "file://$channel" -p "$real_prefix" conda-mcp-server
  "$real_prefix/bin/conda-mcp" --version
  XDG_CACHE_HOME=$work/cache "$real_prefix/bin/conda-mcp" check \
    --conda-exe "$CONDA_MCP_TEST_CONDA" --timeout 120 | tail -n 1
elif [ "$real_declared" = 1 ]; then
  echo "tier real is declared but CONDA_MCP_TEST_CONDA does not name an executable conda" >&2
  exit 1
else
  echo "SKIPPED the real conda install: CONDA_MCP_TEST_CONDA is not set (tier real)"
fi
