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
#   PACKAGE_PROFILE=dist tests/tools/conda_package.sh  # as published
#   PACKAGE_TARGET=x86_64-pc-windows-gnu CONDA_MCP_BIN_DIR=DIR tests/tools/conda_package.sh
#       # another platform's package (win-64, osx-arm64, osx-64,
#       # linux-aarch64) out of a
#       # cross build's binaries (tests/tools/cross/setup.sh): built,
#       # installed with py-rattler into a prefix for that platform, and its
#       # layout checked; the installed server's path is the last line printed
#       # (.ci/run runs the Windows one under wine). The host tests are skipped.
#
# The dev profile reuses cargo's debug build of the test run (seconds
# instead of minutes); `dist` is the published package's profile
# (Cargo.toml: fat LTO, one codegen unit), any other name is passed to cargo
# as `--profile`; the packaging (recipe, layout, install) is the same in
# every profile.
set -euo pipefail
cd "$(dirname "$0")/../.."

target_dir=${CARGO_TARGET_DIR:-target}
profile=${PACKAGE_PROFILE:-dev}
package_target=${PACKAGE_TARGET:-}
# One work folder per platform, so that the packages of several platforms
# can be made at once (.ci/run makes the cross ones beside the host's).
work=$target_dir/conda-package-test${package_target:+-$package_target}
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
subdir=linux-64
exe=
bin_sub=bin
case "$package_target" in
  "") ;;
  x86_64-pc-windows-gnu | x86_64-pc-windows-msvc) subdir=win-64 exe=.exe bin_sub=Library/bin ;;
  aarch64-apple-darwin) subdir=osx-arm64 ;;
  x86_64-apple-darwin) subdir=osx-64 ;;
  x86_64-unknown-linux-gnu) ;;
  aarch64-unknown-linux-gnu) subdir=linux-aarch64 ;;
  *) echo "PACKAGE_TARGET $package_target: no conda platform for it" >&2; exit 1 ;;
esac
if [ -n "$package_target" ]; then
  if [ -z "${CONDA_MCP_BIN_DIR:-}" ]; then
    echo "PACKAGE_TARGET needs CONDA_MCP_BIN_DIR (the cross build's binaries)" >&2
    exit 1
  fi
  echo "== conda package: the binaries of $package_target ($subdir) in $CONDA_MCP_BIN_DIR"
  bin_dir=$CONDA_MCP_BIN_DIR
elif [ "$profile" = dev ]; then
  echo "== conda package: the binaries (cargo, $profile profile)"
  cargo build --locked -p conda-mcp-server --bins
  bin_dir=$target_dir/debug
else
  echo "== conda package: the binaries (cargo, $profile profile)"
  cargo build --locked --profile "$profile" -p conda-mcp-server --bins
  bin_dir=$target_dir/$profile
fi
bin_dir=$(cd "$bin_dir" && pwd)

# The tools' venv is made once per target directory and kept (its pins are its
# stamp): the venv and pip took most of a package's minute and a half. Made
# under a lock (flock(1)), so runs at once wait for one venv, not two.
pins=("py-rattler-build>=0.73,<0.74" "py-rattler>=0.28,<0.29")
tools=$(cd "$target_dir" && pwd)/conda-package-tools
(
  flock 9
  if [ ! -x "$tools/bin/python" ] || [ "$(cat "$tools/pins" 2>/dev/null)" != "${pins[*]}" ]; then
    echo "== conda package: tools (${pins[*]} from PyPI, into $tools)"
    rm -rf "$tools"
    python3 -m venv "$tools"
    "$tools/bin/pip" install --quiet --disable-pip-version-check "${pins[@]}"
    echo "${pins[*]}" >"$tools/pins"
  else
    echo "== conda package: tools (${pins[*]}) already in $tools"
  fi
) 9>"$tools.lock"

echo "== conda package: rattler-build recipe/recipe.yaml (and its tests)"
channel=$work/channel
mkdir -p "$channel"
CONDA_MCP_BIN_DIR=$bin_dir "$tools/bin/python" -W ignore::DeprecationWarning - "$channel" "$subdir" <<'PY'
import sys
import rattler_build

channel, subdir = sys.argv[1:3]
# The only channel is the output folder: the recipe's tests resolve the
# package just built and nothing else (no conda-forge, no network).
rattler_build.build_recipes(
    ["recipe/recipe.yaml"],
    output_dir=channel,
    target_platform=subdir,
    channel=[f"file://{channel}"],
    # Another platform's package cannot run here: its tests run where it
    # is native (the layout is checked after the install below).
    test="native",
)
PY
ls "$channel/$subdir"/conda-mcp-server-*.conda "$channel"/noarch/conda-mcp-*.conda

echo "== conda package: py-rattler installs conda-mcp-server into a fresh prefix"
prefix=$work/prefix
"$tools/bin/python" - "$channel" "$prefix" "$work/pkgs" "$subdir" <<'PY'
import asyncio
import os
import sys
import rattler

channel, prefix, cache, subdir = sys.argv[1:5]

async def main():
    # Another platform's package depends on nothing virtual; the host's
    # virtual packages describe the host only.
    records = await rattler.solve(
        [rattler.Channel(f"file://{channel}")],
        ["conda-mcp-server"],
        platforms=[subdir, "noarch"],
        virtual_packages=rattler.VirtualPackage.detect() if subdir == "linux-64" else [],
    )
    await rattler.install(records, target_prefix=prefix, cache_dir=cache, show_progress=False)
    print("installed", ", ".join(f"{r.name.normalized} {r.version}" for r in records))

asyncio.run(main())
# py-rattler 0.28 hands install's result back from a tokio thread that can
# still be dropping Python objects while the interpreter finalizes: a
# segfault after the install is done (1 run in 20 to 40 under load, in
# _PyObject_GC_UNTRACK beside Py_FinalizeEx). The work is done and printed;
# leave without finalizing.
sys.stdout.flush()
os._exit(0)
PY

if [ -n "$package_target" ] && [ "$subdir" != linux-64 ]; then
  # Another platform: the layout conda expects there, both binaries.
  for b in conda-mcp conda-mcp-worker; do
    if [ ! -f "$prefix/$bin_sub/$b$exe" ]; then
      echo "the $subdir package did not install $bin_sub/$b$exe" >&2
      find "$prefix" -maxdepth 3 >&2
      exit 1
    fi
  done
  echo "== conda package: $subdir installs $bin_sub/conda-mcp$exe and $bin_sub/conda-mcp-worker$exe"
  echo "$prefix/$bin_sub/conda-mcp$exe"
  exit 0
fi

version=$("$prefix/bin/conda-mcp" --version)
expected="conda-mcp $(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml) (commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown))"
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
