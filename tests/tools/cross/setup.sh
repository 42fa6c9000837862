#!/usr/bin/env bash
# The cross toolchain of conda-mcp: build the two binaries for Windows
# (x86_64-pc-windows-gnu), macOS (aarch64-/x86_64-apple-darwin) and Linux
# arm64 (aarch64-unknown-linux-gnu) on a Linux x86-64 host, run the Windows
# tests under wine and the Linux arm64 ones under qemu user-mode. docs/testing.md
# says what this covers and what only a real Mac or Windows machine can test.
#
# Everything lives in a Debian sid chroot made by debootstrap, so the host's
# libc and its Rust toolchain stay as they are:
#   - rustc, cargo and rust-src from sid; Debian ships no prebuilt std for
#     these targets, so std is built from rust-src (-Zbuild-std, which needs
#     RUSTC_BOOTSTRAP=1 on a stable compiler);
#   - gcc-mingw-w64-x86-64 links Windows binaries, wine runs them;
#   - zig and cargo-zigbuild (PyPI wheels: static binaries) are the C
#     compiler and linker for apple targets (ring's build script compiles C);
#     no macOS SDK is needed for that (the server drops one feature there: see
#     features_for below);
#   - maturin (its PyPI wheel holds a static binary too) builds the Python
#     wheel of each target, tagged for its platform (win_amd64,
#     macosx_*_arm64), from the same cargo build.
#
# Usage (as root; every subcommand reuses what an earlier run made):
#   setup.sh setup                  make or complete the chroot (idempotent)
#   setup.sh build TARGET...        cargo build of both binaries per target
#                                   (apple targets link with cargo-zigbuild)
#   setup.sh wheel TARGET...        maturin build of the wheel per target (both
#                                   binaries built and linked on the way), into
#                                   $CONDA_MCP_CROSS_TARGET/wheels
#   setup.sh check TARGET...        cargo check of shared, worker and server
#   setup.sh test [CARGO ARGS...]   cargo test for Windows, run under wine
#   setup.sh test-build             build what `test` runs, run nothing (so a
#                                   build can go ahead while other work runs)
#   setup.sh arm64-test [CARGO ARGS...]  cargo test for Linux arm64, run
#                                   under qemu-aarch64
#   setup.sh bench                  the warm-spare benchmark under wine
#   setup.sh run CMD...             run CMD in the chroot, in this checkout
#   setup.sh where                  print the cross target directory as the
#                                   host sees it (binaries: WHERE/TARGET/debug)
#   setup.sh teardown               unmount what the chroot has mounted
#
# Environment:
#   CONDA_MCP_CROSS_ROOT    the chroot (default /var/cache/conda-mcp/cross)
#   CONDA_MCP_CROSS_TARGET  cargo's target dir inside the chroot, kept apart
#                           from the host's target/ (default
#                           /root/target, inside the chroot)
#   CONDA_MCP_CROSS_MIRROR  the Debian archive (default: the host's own)
#   CARGO_PROFILE           cargo profile of build/check/test (default dev)
#   CROSS_ENV               extra VAR=VALUE words for the chroot's environment
#                           (.ci/run: CARGO_PROFILE_DEV_DEBUG=0)
#
# The checkout is bind-mounted into the chroot at its own path, and the
# host's cargo registry at /root/.cargo/registry, so crates are downloaded
# once for both toolchains.
set -euo pipefail

ROOT=${CONDA_MCP_CROSS_ROOT:-/var/cache/conda-mcp/cross}
TARGET_DIR=${CONDA_MCP_CROSS_TARGET:-/root/target}
PROFILE=${CARGO_PROFILE:-dev}
REPO=$(cd "$(dirname "$0")/../../.." && pwd)
HOST_CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
# Bump when the package list below changes, so that `setup` completes an
# older chroot instead of trusting its stamp.
STAMP_VERSION=3
STAMP="$ROOT/etc/conda-mcp-cross.stamp"
# gcc-aarch64-linux-gnu and libc6-dev-arm64-cross link Linux arm64 binaries;
# qemu-user runs them (user-mode emulation, with the cross libc as its -L root).
PACKAGES="rustc cargo rust-src gcc-mingw-w64-x86-64 ca-certificates wine wine64 gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user"

log() { printf '== cross: %s\n' "$*" >&2; }

mirror() {
  if [ -n "${CONDA_MCP_CROSS_MIRROR:-}" ]; then echo "$CONDA_MCP_CROSS_MIRROR"; return; fi
  local m
  m=$(grep -hm1 '^URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2; exit}' || true)
  [ -n "$m" ] || m=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  echo "${m:-http://deb.debian.org/debian}"
}

# Mount once; a second call finds the mounts and leaves them.
mounts() {
  mountpoint -q "$ROOT/proc" || mount -t proc proc "$ROOT/proc"
  for d in sys dev; do
    mountpoint -q "$ROOT/$d" || { mount --rbind "/$d" "$ROOT/$d"; mount --make-rslave "$ROOT/$d"; }
  done
  mkdir -p "$ROOT$REPO" "$ROOT/root/.cargo/registry" "$HOST_CARGO_HOME/registry"
  bind "$REPO" "$ROOT$REPO"
  bind "$HOST_CARGO_HOME/registry" "$ROOT/root/.cargo/registry"
}

# Bind SRC at DST unless DST shows SRC already. A bind of a folder that was
# removed and made again since (a new clone at the path of an earlier one)
# still shows the old, removed folder, empty: it is replaced.
bind() {
  local src=$1 dst=$2
  if mountpoint -q "$dst"; then
    [ "$(stat -c %d:%i "$src")" = "$(stat -c %d:%i "$dst")" ] && return
    umount -l "$dst"
  fi
  mount --bind "$src" "$dst"
}

# Every mount under the chroot, this checkout's or another's (a chroot
# shared by two clones holds a bind of each), the deepest first.
teardown() {
  local m
  awk -v root="$ROOT/" 'index($2 "/", root) == 1 { print $2 }' /proc/self/mounts | sort -ru |
    while read -r m; do
      if mountpoint -q "$m"; then umount -R "$m" 2>/dev/null || umount -Rl "$m"; fi
    done
}

# Run a command inside the chroot with a clean environment, from the checkout.
in_root() {
  chroot "$ROOT" /usr/bin/env -i \
    HOME=/root PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 TERM=dumb \
    RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR="$TARGET_DIR" CARGO_TERM_COLOR=never \
    CARGO_PROFILE_RELEASE_STRIP=false WINEDEBUG=-all WINEPREFIX=/root/.wine \
    CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc \
    CARGO_TARGET_X86_64_PC_WINDOWS_GNU_RUNNER=wine \
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
    CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc \
    CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu" \
    QEMU_LD_PREFIX=/usr/aarch64-linux-gnu \
    ${CROSS_ENV:-} \
    /bin/bash -c 'cd "$1" && shift && exec "$@"' bash "$REPO" "$@"
}

setup() {
  local t0=$SECONDS
  if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$STAMP_VERSION" ] \
    && has_tools zig cargo-zigbuild maturin; then
    mounts
    log "chroot at $ROOT is ready (stamp $STAMP_VERSION); nothing to do"
    return
  fi
  if ! command -v debootstrap >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  fi
  if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
    log "debootstrap sid into $ROOT"
    rm -rf "$ROOT"
    mkdir -p "$(dirname "$ROOT")"
    # A partial chroot (an interrupted run) is made again from scratch.
    debootstrap --variant=minbase sid "$ROOT.partial" "$(mirror)" >"$ROOT.debootstrap.log" 2>&1 \
      || { tail -20 "$ROOT.debootstrap.log" >&2; exit 1; }
    mv "$ROOT.partial" "$ROOT"
    log "debootstrap done ($((SECONDS - t0)) s)"
  fi
  mounts
  cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
  # sid's Release file as served here can be past its Valid-Until date;
  # apt refuses such an index unless told not to check it.
  echo 'Acquire::Check-Valid-Until "false";' >"$ROOT/etc/apt/apt.conf.d/99conda-mcp-valid-until"
  # TLS from this network may pass an intercepting proxy whose CA only the
  # host trusts: give the chroot the host's local CAs before any download.
  if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    mkdir -p "$ROOT/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
  fi
  log "apt-get install $PACKAGES"
  chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    /bin/bash -c "apt-get update -qq && apt-get install -y -q --no-install-recommends $PACKAGES >/var/log/conda-mcp-apt.log 2>&1 || { tail -30 /var/log/conda-mcp-apt.log; exit 1; }"
  chroot "$ROOT" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin update-ca-certificates >/dev/null
  log "apt done ($((SECONDS - t0)) s)"
  zig_wheels
  # wine's first start makes its prefix (a minute); do it here, not in a test.
  log "wineboot (the wine prefix)"
  in_root wineboot -i >/dev/null 2>&1 || true
  in_root rustc --version
  in_root zig version
  echo "$STAMP_VERSION" >"$STAMP"
  log "setup done in $((SECONDS - t0)) s, chroot $(du -shx --exclude="$ROOT$REPO" --exclude="$ROOT/root/.cargo/registry" "$ROOT" 2>/dev/null | cut -f1)"
}

# Whether the chroot's /usr/local/bin holds each of TOOLS, executable. Asked
# inside the chroot: they are links to absolute paths of the chroot, which
# name nothing on the host (a test from the host always failed, so every
# `setup` installed everything again).
has_tools() {
  local t
  for t in "$@"; do
    chroot "$ROOT" /usr/bin/test -x "/usr/local/bin/$t" || return 1
  done
}

# zig and cargo-zigbuild: the manylinux wheels hold static binaries, so they
# are unpacked, not pip-installed (the chroot has no Python).
zig_wheels() {
  if has_tools zig cargo-zigbuild maturin; then return; fi
  local w
  w=$(mktemp -d)
  # maturin within the range pyproject.toml's build-system asks for
  python3 -m pip download -q --no-deps --only-binary=:all: \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
    --python-version 3.11 -d "$w" ziglang cargo-zigbuild 'maturin>=1.9,<2'
  rm -rf "$ROOT/opt/zig" "$ROOT/opt/cargo-zigbuild" "$ROOT/opt/maturin"
  mkdir -p "$ROOT/opt/zig" "$ROOT/opt/cargo-zigbuild" "$ROOT/opt/maturin"
  python3 -m zipfile -e "$w"/ziglang-*.whl "$ROOT/opt/zig"
  python3 -m zipfile -e "$w"/cargo_zigbuild-*.whl "$ROOT/opt/cargo-zigbuild"
  python3 -m zipfile -e "$w"/maturin-*.whl "$ROOT/opt/maturin"
  rm -rf "$w"
  local mt
  mt=$(cd "$ROOT" && ls opt/maturin/maturin-*.data/scripts/maturin)
  chmod +x "$ROOT/$mt"
  ln -sfn "/$mt" "$ROOT/usr/local/bin/maturin"
  chmod +x "$ROOT/opt/zig/ziglang/zig"
  ln -sfn /opt/zig/ziglang/zig "$ROOT/usr/local/bin/zig"
  local zb
  zb=$(cd "$ROOT" && ls opt/cargo-zigbuild/cargo_zigbuild-*.data/scripts/cargo-zigbuild)
  chmod +x "$ROOT/$zb"
  ln -sfn "/$zb" "$ROOT/usr/local/bin/cargo-zigbuild"
}

need_ready() {
  [ -f "$STAMP" ] || { echo "no cross chroot at $ROOT: run '$0 setup' first" >&2; exit 1; }
  mounts
  claim_target
}

# The target directory serves every checkout that uses this chroot (a
# developer's and each CI clone), and cargo's hash of a workspace crate does
# not depend on the checkout's path: such a unit counts as fresh when its
# sources are older than its outputs. A checkout whose files are older than
# another checkout's last build would get that build's binaries (seen: a
# test binary without the test just added). So when the checkout changes,
# the fingerprints of the workspace's own crates are removed and they are
# built again; std and the dependencies stay.
claim_target() {
  local owner="$ROOT$TARGET_DIR/.conda-mcp-checkout"
  [ "$(cat "$owner" 2>/dev/null)" = "$REPO" ] && return
  rm -rf "$ROOT$TARGET_DIR"/*/.fingerprint/conda-mcp-* "$ROOT$TARGET_DIR"/*/*/.fingerprint/conda-mcp-*
  mkdir -p "$ROOT$TARGET_DIR"
  echo "$REPO" >"$owner"
  log "target directory now serves $REPO (the workspace's crates are built anew)"
}

# cargo for TARGET: zigbuild for apple targets (C code and the link go
# through zig), plain cargo for Windows (mingw-w64 links).
cargo_for() {
  case "$1" in
    *-apple-darwin) echo cargo-zigbuild ;;
    *) echo cargo ;;
  esac
}

# The server's features for TARGET. Apple targets: without the default
# `jwks-fetch` (server/Cargo.toml), the HTTPS client of `--oauth-jwks URL`:
# reqwest's rustls brings rustls-platform-verifier, which links the Security
# and CoreFoundation frameworks there, and only a macOS SDK has them (none
# exists on this machine). That build refuses a JWKS URL at startup (a FILE
# works). A build on a Mac, and a release build, keep the feature. Other
# targets: the defaults.
features_for() {
  case "$1" in
    *-apple-darwin) echo --no-default-features ;;
  esac
}

build() {
  need_ready
  local t cmd t0
  for t in "$@"; do
    t0=$SECONDS
    cmd=$(cargo_for "$t")
    log "$cmd build --target $t (conda-mcp, conda-mcp-worker) $(features_for "$t")"
    # shellcheck disable=SC2086
    in_root $cmd build --locked -Zbuild-std=std,panic_abort --profile "$PROFILE" \
      --target "$t" -p conda-mcp-server -p conda-mcp-worker --bins $(features_for "$t")
    log "build $t: $((SECONDS - t0)) s"
  done
}

# The wheel of each target: maturin runs cargo (the same flags, profile and
# target directory as `build`, so what `build` made is reused) and packs both
# binaries into a wheel tagged for the target's platform, in $TARGET_DIR/wheels.
# Apple targets link through zig (`--zig`) and are not stripped
# (pyproject.toml's `strip`): rustc strips Mach-O files with rust-objcopy, a
# tool of rustup's that Debian's rustc lacks; a wheel built on a Mac is
# stripped as usual.
wheel() {
  need_ready
  local t t0 zig
  for t in "$@"; do
    t0=$SECONDS
    zig=
    case "$t" in *-apple-darwin) zig="--zig --strip false" ;; esac
    log "maturin build --target $t $zig $(features_for "$t")"
    # shellcheck disable=SC2086
    in_root maturin build --locked -Zbuild-std=std,panic_abort --profile "$PROFILE" \
      --target "$t" $zig $(features_for "$t") --out "$TARGET_DIR/wheels"
    log "wheel $t: $((SECONDS - t0)) s"
  done
}

check() {
  need_ready
  local t cmd t0
  for t in "$@"; do
    t0=$SECONDS
    cmd=$(cargo_for "$t")
    log "$cmd check --target $t $(features_for "$t")"
    # shellcheck disable=SC2086
    in_root $cmd check --locked -Zbuild-std=std,panic_abort --profile "$PROFILE" \
      --target "$t" -p conda-mcp-shared -p conda-mcp-worker -p conda-mcp-server --all-targets \
      $(features_for "$t")
    log "check $t: $((SECONDS - t0)) s"
  done
}

# cargo test for Windows, under wine. Default: shared's and the worker's
# tests, and the replay's (tests/replay: the replay conda itself, and a
# server session of the Windows conda-mcp.exe and its worker against it,
# which finds the two binaries next to itself: they are built first);
# extra arguments go to cargo test instead.
WINTEST_PACKAGES="-p conda-mcp-shared -p conda-mcp-worker -p conda-mcp-replay"
wintest() {
  need_ready
  local t0=$SECONDS
  if [ $# -eq 0 ]; then
    # shellcheck disable=SC2086
    set -- $WINTEST_PACKAGES
    build x86_64-pc-windows-gnu
  fi
  log "cargo test --target x86_64-pc-windows-gnu (under wine) $*"
  in_root cargo test --locked -Zbuild-std=std,panic_abort --profile "$PROFILE" \
    --target x86_64-pc-windows-gnu "$@"
  log "windows tests: $((SECONDS - t0)) s"
}

wintest_build() {
  need_ready
  build x86_64-pc-windows-gnu
  log "cargo test --no-run --target x86_64-pc-windows-gnu $WINTEST_PACKAGES"
  # shellcheck disable=SC2086
  in_root cargo test --no-run --locked -Zbuild-std=std,panic_abort --profile "$PROFILE" \
    --target x86_64-pc-windows-gnu $WINTEST_PACKAGES
}

# Linux arm64 under qemu user-mode emulation (qemu-aarch64, the cross
# libc as its root: cargo's runner for the target, set in in_root). Default:
# shared's and the worker's own tests, and the replay's (tests/replay: the
# replay conda itself, and a server session of the arm64 conda-mcp and its
# worker against it, which finds the binaries next to itself: they are
# built first); extra arguments go to cargo test instead.
ARMTEST_PACKAGES="-p conda-mcp-shared -p conda-mcp-worker -p conda-mcp-replay"
armtest() {
  need_ready
  local t0=$SECONDS
  if [ $# -eq 0 ]; then
    # shellcheck disable=SC2086
    set -- $ARMTEST_PACKAGES
    build aarch64-unknown-linux-gnu
  fi
  log "cargo test --target aarch64-unknown-linux-gnu (under qemu) $*"
  # the replay's session runs every arm64 program through the emulator
  # (tests/replay/src/lib.rs `runner`): no binfmt_misc entry here
  in_root env CONDA_MCP_TEST_RUNNER="/usr/bin/qemu-aarch64 -L /usr/aarch64-linux-gnu" \
    cargo test --locked -Zbuild-std=std,panic_abort --profile "$PROFILE" \
    --target aarch64-unknown-linux-gnu "$@"
  log "arm64 tests: $((SECONDS - t0)) s"
}

# The warm-spare benchmark under wine (tests/replay/benches/warm_spare.rs):
# the spare conda against a fresh one, with the dev-profile binaries the
# tests use (a release build of the server for Windows costs far more than
# the figure is worth; the ratio is of process starts, which the profile
# does not change).
winbench() {
  need_ready
  build x86_64-pc-windows-gnu
  log "cargo bench --bench warm_spare --target x86_64-pc-windows-gnu (under wine)"
  in_root cargo bench --locked -Zbuild-std=std,panic_abort --profile "$PROFILE" \
    --target x86_64-pc-windows-gnu -p conda-mcp-replay --bench warm_spare
}

case "${1:-setup}" in
  setup) setup ;;
  build) shift; build "$@" ;;
  wheel) shift; wheel "$@" ;;
  check) shift; check "$@" ;;
  test) shift; wintest "$@" ;;
  test-build) wintest_build ;;
  arm64-test) shift; armtest "$@" ;;
  bench) need_ready; winbench ;;
  run) shift; need_ready; in_root "$@" ;;
  where) echo "$ROOT$TARGET_DIR" ;;
  teardown) teardown ;;
  *) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
