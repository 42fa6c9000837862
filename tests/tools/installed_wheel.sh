#!/usr/bin/env bash
# Builds the Python wheel with maturin and runs tests/tests/mcp/installed.rs
# against the binaries as pip, pipx and uv install them (a fresh venv, a pipx
# home, a uv tool folder, all under target/wheel-test/), plus `uvx --from
# WHEEL conda-mcp --version`. Fails on the first error. .ci/run runs it; it
# needs python3 with venv and the network to PyPI (maturin, uv, pipx).
#
#   tests/tools/installed_wheel.sh           # wheel in cargo's dev profile
#   WHEEL_PROFILE=dist tests/tools/installed_wheel.sh   # as published
#
# The dev profile reuses cargo's debug build (seconds instead of minutes);
# `dist` is the published wheel's profile (Cargo.toml: fat LTO, one codegen
# unit), any other name is passed to maturin as `--profile`; packaging
# (pyproject, maturin, the two binaries, where they land) is the same in
# every profile.
set -euo pipefail
cd "$(dirname "$0")/../.."

target_dir=${CARGO_TARGET_DIR:-target}
work=$target_dir/wheel-test
rm -rf "$work" "$target_dir/wheels"
mkdir -p "$work"
work=$(cd "$work" && pwd)

echo "== wheel: tools (maturin, uv, pipx from PyPI)"
python3 -m venv "$work/tools"
"$work/tools/bin/pip" install --quiet --disable-pip-version-check maturin uv pipx

echo "== wheel: maturin build (${WHEEL_PROFILE:-dev} profile)"
if [ "${WHEEL_PROFILE:-dev}" = dev ]; then
  "$work/tools/bin/maturin" build --locked
else
  "$work/tools/bin/maturin" build --profile "$WHEEL_PROFILE" --locked
fi
wheel=$(ls "$target_dir"/wheels/conda_mcp-*.whl)
echo "built $wheel"

echo "== wheel: pip install into a fresh venv"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "$wheel"
CONDA_MCP_INSTALLED_BIN_DIR="$work/venv/bin" \
  cargo test --locked -p conda-mcp-tests --test mcp installed::

echo "== wheel: uv tool install"
UV_TOOL_DIR="$work/uv-tools" UV_TOOL_BIN_DIR="$work/uv-bin" UV_CACHE_DIR="$work/uv-cache" \
  "$work/tools/bin/uv" tool install --offline "$wheel"
CONDA_MCP_INSTALLED_BIN_DIR="$work/uv-bin" \
  cargo test --locked -p conda-mcp-tests --test mcp installed::

echo "== wheel: pipx install"
PIPX_HOME="$work/pipx-home" PIPX_BIN_DIR="$work/pipx-bin" PIPX_MAN_DIR="$work/pipx-man" \
  "$work/tools/bin/pipx" install "$wheel"
CONDA_MCP_INSTALLED_BIN_DIR="$work/pipx-bin" \
  cargo test --locked -p conda-mcp-tests --test mcp installed::

echo "== wheel: uvx --from WHEEL conda-mcp --version"
version=$(UV_CACHE_DIR="$work/uv-cache" "$work/tools/bin/uvx" --offline --from "$wheel" conda-mcp --version)
expected="conda-mcp $(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml) (commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown))"
if [ "$version" != "$expected" ]; then
  echo "uvx conda-mcp --version printed '$version', expected '$expected'" >&2
  exit 1
fi
echo "$version"
