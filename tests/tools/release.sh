#!/usr/bin/env bash
# The release's dry run: build every artifact this machine can build and
# check each, before a tag exists (docs/releasing.md "Dry run"). Nothing is
# published; everything lands in target/release-dry-run/release/.
#
#   tests/tools/release.sh --dry-run                    # as released (dist profile)
#   tests/tools/release.sh --dry-run --profile dev      # cargo's dev build, reused
#   tests/tools/release.sh --dry-run --targets x86_64-unknown-linux-gnu
#
# Targets: x86_64-unknown-linux-gnu (this machine) always; with the cross
# toolchain (tests/tools/cross/setup.sh, root) also aarch64-unknown-linux-gnu,
# x86_64-pc-windows-gnu and aarch64-apple-darwin, built in its chroot.
# Per target:
#   wheel      maturin; dist: linked by zig against glibc 2.17 and tagged
#              manylinux_2_17 (maturin's auditwheel check refuses a tag
#              the binaries miss); dev: the host's link, tagged with what
#              it meets (so is the chroot's arm64 wheel: its cross glibc
#              is sid's). The host's wheel is installed into a fresh venv
#              and tests/tests/mcp/installed.rs runs against it (--version,
#              check against the stand-in conda, an MCP session); the
#              arm64 one is installed by pip for its platform into a fresh
#              folder and its binaries run under qemu (--version, check
#              against the replay conda: qemu_check below).
#   bundle     bundle/build.sh; the official bundle CLI (npm
#              @anthropic-ai/mcpb, the pin of tests/tests/mcp/packaging.rs)
#              validates its manifest; the host's unpacked server passes
#              installed.rs too, the arm64 one qemu_check.
#   conda      tests/tools/conda_package.sh for the target's platform
#              (linux-64, linux-aarch64, win-64, osx-arm64): rattler-build,
#              installed with py-rattler, its layout checked; linux-64's
#              installed server passes installed.rs.
# Then the sdist (maturin), the CycloneDX SBOM of the Rust dependencies
# (cargo-cyclonedx at the workflow's pin, installed by cargo when missing),
# server.json and SHA256SUMS (tests/tools/release_assets.py); server.json is
# validated against the registry's schema (tests/fixtures/schemas) and each
# of its bundles' SHA-256 checked against the file. Prints each file's size
# and the time of each step.
set -euo pipefail
cd "$(dirname "$0")/../.."

dry_run=0
profile=dist
targets=
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry_run=1 ;;
    --profile) profile=$2; shift ;;
    --targets) targets=${2//,/ }; shift ;;
    *) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
  esac
  shift
done
if [ "$dry_run" != 1 ]; then
  echo "only --dry-run is supported here: a release is cut by pushing a tag (docs/releasing.md)" >&2
  exit 2
fi

host=x86_64-unknown-linux-gnu
cross=tests/tools/cross/setup.sh
if [ -z "$targets" ]; then
  targets="$host aarch64-unknown-linux-gnu"
  if [ -f "${CONDA_MCP_CROSS_ROOT:-/var/cache/conda-mcp/cross}/etc/conda-mcp-cross.stamp" ]; then
    targets="$targets x86_64-pc-windows-gnu aarch64-apple-darwin"
  fi
fi
# The pins the release workflow uses (.github/workflows/release.yml env).
maturin_version=$(sed -n 's/^  MATURIN_VERSION: "\(.*\)"/\1/p' .github/workflows/release.yml)
cyclonedx_version=$(sed -n 's/^  CARGO_CYCLONEDX_VERSION: "\(.*\)"/\1/p' .github/workflows/release.yml)
version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)

work=target/release-dry-run
rel=$work/release
rm -rf "$work"
mkdir -p "$rel" "$work/wheels"
tools=target/release-tools
started=$SECONDS
step() { local t=$SECONDS; "$@"; echo "== release: $* took $((SECONDS - t)) s"; }

tools_venv() {
  local pins="maturin[zig]==$maturin_version jsonschema==4.23.0"
  if [ "$(cat "$tools/pins" 2>/dev/null)" != "$pins" ]; then
    rm -rf "$tools/venv"
    python3 -m venv "$tools/venv"
    # shellcheck disable=SC2086
    "$tools/venv/bin/pip" install --quiet --disable-pip-version-check $pins
    echo "$pins" >"$tools/pins"
  fi
  # into cargo's own bin, as .ci/run installs it (and cargo-deny): kept
  # with the machine, not with a clone's target/
  if [ "$(cargo cyclonedx --version 2>/dev/null)" != "cargo-cyclonedx-cyclonedx $cyclonedx_version" ]; then
    cargo install --quiet --locked --version "$cyclonedx_version" cargo-cyclonedx
  fi
  if [ ! -f "$tools/mcpb/node_modules/@anthropic-ai/mcpb/dist/cli/cli.js" ]; then
    local pin
    pin=$(sed -n 's/^const MCPB_PACKAGE: &str = "\(.*\)";/\1/p' tests/tests/mcp/packaging.rs)
    npm install --no-audit --no-fund --silent --prefix "$tools/mcpb" "$pin"
  fi
}

# installed.rs (--version, check against the stand-in conda, a session)
# against the binaries in DIR.
installed_tests() {
  CONDA_MCP_INSTALLED_BIN_DIR=$(cd "$1" && pwd) cargo test --quiet --locked -p conda-mcp-tests --test mcp installed:: >"$work/installed.log" 2>&1 \
    || { cat "$work/installed.log"; echo "installed.rs failed against $1" >&2; exit 1; }
  grep '^test result' "$work/installed.log"
}

host_build() {
  local args=(build --locked --out "$work/wheels")
  if [ "$profile" = dist ]; then
    args+=(--profile dist --target "$host" --zig --compatibility manylinux_2_17)
    bin_dir=target/$host/dist
  elif [ "$profile" = dev ]; then
    bin_dir=target/debug
  else
    args+=(--profile "$profile")
    bin_dir=target/$profile
  fi
  # the venv's python first on PATH: maturin finds zig as its ziglang module
  PATH="$PWD/$tools/venv/bin:$PATH" "$tools/venv/bin/maturin" "${args[@]}"
}

check_wheel_host() {
  local whl venv
  whl=$(ls "$work"/wheels/conda_mcp-"$version"-*linux*_x86_64.whl)
  venv=$work/venv
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$whl"
  "$venv/bin/conda-mcp" --version
  installed_tests "$venv/bin"
}

# The arm64 binaries in DIR (a folder of this checkout) under qemu
# user-mode emulation, in the chroot (its qemu-aarch64, the cross libc as
# its root): --version of both, then `conda-mcp check` against the replay
# conda (tests/replay, built for this machine: no arm64 Python runs here)
# in a Unix layout, bin/python and a bin/conda launcher whose #! names it.
# This kernel has no binfmt_misc entry for arm64, so an emulated process
# cannot exec the arm64 worker itself: --worker-exe is a /bin/sh script
# that execs qemu on it (as tests/replay/tests/unix_session.rs does).
qemu_check() {
  local dir root worker
  dir=$(cd "$1" && pwd)
  root=$PWD/$work/replay-conda
  if [ ! -x "$root/bin/conda" ]; then
    cargo build --quiet --locked -p conda-mcp-replay --bin conda-replay
    mkdir -p "$root/bin"
    cp target/debug/conda-replay "$root/bin/python"
    printf '#!%s\n' "$root/bin/python" >"$root/bin/conda"
    chmod +x "$root/bin/conda"
  fi
  worker=$dir.worker.sh
  printf '#!/bin/sh\nexec /usr/bin/qemu-aarch64 -L /usr/aarch64-linux-gnu %s "$@"\n' "'$dir/conda-mcp-worker'" >"$worker"
  chmod +x "$worker"
  bash "$cross" run qemu-aarch64 "$dir/conda-mcp" --version
  bash "$cross" run qemu-aarch64 "$dir/conda-mcp-worker" --version
  bash "$cross" run env XDG_CACHE_HOME="$PWD/$work/qemu-cache" qemu-aarch64 "$dir/conda-mcp" check \
    --conda-exe "$root/bin/conda" --worker-exe "$worker" >"$work/qemu-check.log" 2>&1 \
    || { cat "$work/qemu-check.log"; echo "conda-mcp check under qemu failed for $dir" >&2; exit 1; }
  echo "== release: conda-mcp check under qemu passed for $dir ($(wc -l <"$work/qemu-check.log") lines)"
}

# The arm64 wheel, installed by pip for its platform into a fresh folder
# (pip installs another platform's wheel only with --target), then its
# binaries under qemu (qemu_check).
check_wheel_arm64() {
  local whl tag platforms=() p
  whl=$(ls "$work"/wheels/conda_mcp-"$version"-*linux*_aarch64.whl)
  tag=$(basename "$whl" .whl)
  tag=${tag##*-}
  for p in ${tag//./ }; do platforms+=(--platform "$p"); done
  rm -rf "$work/arm64-install"
  python3 -m pip install --quiet --disable-pip-version-check --no-deps --only-binary :all: \
    "${platforms[@]}" --target "$work/arm64-install" "$whl"
  echo "== release: $(basename "$whl") installed"
  qemu_check "$work/arm64-install/bin"
}

bundle() {
  local t=$1 dir=$2 b
  b=$(CONDA_MCP_BUNDLE_TARGET=$t CONDA_MCP_BUNDLE_BIN_DIR=$dir CONDA_MCP_BUNDLE_OUT_DIR=$rel bash bundle/build.sh)
  rm -rf "$work/unpacked-$t"
  python3 -m zipfile -e "$b" "$work/unpacked-$t"
  node "$tools/mcpb/node_modules/@anthropic-ai/mcpb/dist/cli/cli.js" validate "$work/unpacked-$t/manifest.json"
  chmod +x "$work/unpacked-$t"/server/*
  case "$t" in
    "$host") installed_tests "$work/unpacked-$t/server" ;;
    aarch64-unknown-linux-gnu) qemu_check "$work/unpacked-$t/server" ;;
  esac
}

conda_pkg() {
  local t=$1 dir=$2
  # linux-64 (this machine's): the script also checks the installed
  # server's --version and runs installed.rs against its prefix; another
  # platform's: the installed layout
  PACKAGE_TARGET=$t CONDA_MCP_BIN_DIR=$dir bash tests/tools/conda_package.sh >"$work/conda-$t.log" 2>&1 \
    || { cat "$work/conda-$t.log"; echo "the conda package of $t failed" >&2; exit 1; }
  grep -E '^(== conda package|test result|conda-mcp )' "$work/conda-$t.log"
  # this run's packages only (another run's may lie in target/ too); the
  # noarch one is built again per platform: the first is kept
  local f
  for f in target/conda-package-test-"$t"/channel/*/*.conda; do
    if [ -e "$rel/$(basename "$f")" ]; then
      case "$f" in */noarch/*) continue ;; esac
      echo "two platforms' conda packages are both named $(basename "$f")" >&2
      exit 1
    fi
    cp "$f" "$rel/"
  done
}

step tools_venv
# The chroot has no git: its builds take the commit from the environment
# (server/build.rs), so that the cross binaries' --version names it too.
CROSS_ENV="${CROSS_ENV:-} CONDA_MCP_COMMIT=$(git rev-parse --short HEAD)"
export CROSS_ENV
for t in $targets; do
  if [ "$t" = "$host" ]; then
    step host_build
    step check_wheel_host
  else
    step env CARGO_PROFILE="$( [ "$profile" = dist ] && echo dist || echo dev )" bash "$cross" setup
    step env CARGO_PROFILE="$( [ "$profile" = dist ] && echo dist || echo dev )" bash "$cross" wheel "$t"
    where=$(bash "$cross" where)
    cp "$where"/wheels/conda_mcp-"$version"-*.whl "$work/wheels/" 2>/dev/null || true
    bin_dir=$where/$t/$( [ "$profile" = dist ] && echo dist || echo debug )
    if [ "$t" = aarch64-unknown-linux-gnu ]; then
      step check_wheel_arm64
    fi
  fi
  step bundle "$t" "$bin_dir"
  step conda_pkg "$t" "$bin_dir"
done
cp "$work"/wheels/*.whl "$rel/"
sdist() { "$tools/venv/bin/maturin" sdist --out "$rel"; }
step sdist
# The SBOM: one CycloneDX document per workspace crate, written beside its
# Cargo.toml; the server's (the shipped binaries) is the release's.
sbom() {
  cargo cyclonedx --format json --spec-version 1.5 --all-features \
    --override-filename conda-mcp.cdx -q
  mv server/conda-mcp.cdx.json "$rel/conda-mcp-server.cdx.json"
  rm -f shared/conda-mcp.cdx.json worker/conda-mcp.cdx.json tests/conda-mcp.cdx.json tests/*/conda-mcp.cdx.json
}
step sbom
assets() {
  python3 tests/tools/release_assets.py --release-dir "$rel" \
    --base-url "https://github.com/conda-mcp/conda-mcp/releases/download/v$version"
}
step assets
"$tools/venv/bin/python" - "$rel" <<'PY'
import hashlib, json, os, sys
import jsonschema
rel = sys.argv[1]
schema = json.load(open("tests/fixtures/schemas/mcp-registry/server.schema.json"))
doc = json.load(open(os.path.join(rel, "server.json")))
jsonschema.validate(doc, schema)
bundles = [p for p in doc["packages"] if p["registryType"] == "mcpb"]
for p in bundles:
    name = p["identifier"].rsplit("/", 1)[1]
    digest = hashlib.sha256(open(os.path.join(rel, name), "rb").read()).hexdigest()
    if digest != p["fileSha256"]:
        sys.exit(f"server.json: {name}'s SHA-256 is not the file's")
print(f"== release: server.json is valid and names {len(bundles)} bundles by their SHA-256")
PY
(cd "$rel" && sha256sum --check --strict --quiet SHA256SUMS) && echo "== release: SHA256SUMS holds every file"
echo "== release: the dry run of $version ($profile profile, targets: $targets) took $((SECONDS - started)) s"
