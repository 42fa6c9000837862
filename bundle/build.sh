#!/usr/bin/env bash
# Builds the MCP bundle target/bundle/conda-mcp-VERSION-PLATFORM-ARCH.mcpb
# (PLATFORM: linux, darwin or win32, the names the bundle's
# compatibility.platforms uses): a zip holding manifest.json (this folder's,
# narrowed to that platform) and server/conda-mcp plus
# server/conda-mcp-worker (.exe on Windows) from a build in cargo's `dist`
# profile (Cargo.toml: fat LTO, one codegen unit; the server finds its
# worker next to itself). Claude Desktop installs it in one click;
# the manifest's user_config asks for the conda executable and the policy
# options.
#
#   bundle/build.sh                 # cargo build --profile dist, then pack
#   CONDA_MCP_BUNDLE_BIN_DIR=DIR bundle/build.sh   # pack prebuilt binaries
#   CONDA_MCP_BUNDLE_TARGET=TRIPLE CONDA_MCP_BUNDLE_BIN_DIR=DIR bundle/build.sh
#       # pack binaries built for another target (a cross build:
#       # tests/tools/cross/setup.sh), e.g. x86_64-pc-windows-gnu,
#       # aarch64-apple-darwin
#   CONDA_MCP_BUNDLE_OUT_DIR=DIR    # the folder of the bundle (default
#                                   # target/bundle)
#
# Prints the path of the bundle on stdout. Needs cargo (unless
# CONDA_MCP_BUNDLE_BIN_DIR is set) and python3 (zip); no network.
set -euo pipefail
cd "$(dirname "$0")/.."

version=$(sed -n '/^\[workspace.package\]/,/^\[/s/^version *= *"\(.*\)"/\1/p' Cargo.toml)
manifest_version=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["version"])' bundle/manifest.json)
if [ "$version" != "$manifest_version" ]; then
  echo "bundle/manifest.json has version $manifest_version, the workspace $version: update the manifest" >&2
  exit 1
fi

# The target's platform (compatibility.platforms) and architecture.
target=${CONDA_MCP_BUNDLE_TARGET:-}
if [ -z "$target" ]; then
  arch=$(uname -m)
  case "$(uname -s)" in
    Linux) platform=linux ;;
    Darwin) platform=darwin ;;
    MINGW* | MSYS* | CYGWIN*) platform=win32 ;;
    *) echo "no bundle platform for $(uname -s)" >&2; exit 1 ;;
  esac
else
  arch=${target%%-*}
  case "$target" in
    *-linux-*) platform=linux ;;
    *-apple-darwin) platform=darwin ;;
    *-windows-*) platform=win32 ;;
    *) echo "no bundle platform for the target $target" >&2; exit 1 ;;
  esac
  if [ -z "${CONDA_MCP_BUNDLE_BIN_DIR:-}" ]; then
    echo "CONDA_MCP_BUNDLE_TARGET needs CONDA_MCP_BUNDLE_BIN_DIR (the cross build's binaries)" >&2
    exit 1
  fi
fi
exe_suffix=
[ "$platform" = win32 ] && exe_suffix=.exe

if [ -n "${CONDA_MCP_BUNDLE_BIN_DIR:-}" ]; then
  bin_dir=$CONDA_MCP_BUNDLE_BIN_DIR
else
  cargo build --profile dist --locked --bins -p conda-mcp-server >&2
  bin_dir=target/dist
fi
for exe in conda-mcp conda-mcp-worker; do
  if [ ! -f "$bin_dir/$exe$exe_suffix" ]; then
    echo "$bin_dir/$exe$exe_suffix is missing" >&2
    exit 1
  fi
done

out_dir=${CONDA_MCP_BUNDLE_OUT_DIR:-target/bundle}
out="$out_dir/conda-mcp-$version-$platform-$arch.mcpb"
mkdir -p "$out_dir"
python3 - "$out" "$bin_dir" "$platform" "$exe_suffix" <<'PY'
import json, os, sys, zipfile
out, bin_dir, platform, suffix = sys.argv[1:5]
# The manifest lists every platform conda-mcp is built for; a bundle holds
# one platform's binaries, so its manifest names that one, with the
# executable's name there (the win32 entry of mcp_config.platform_overrides
# names conda-mcp.exe).
with open("bundle/manifest.json") as f:
    manifest = json.load(f)
if platform not in manifest["compatibility"]["platforms"]:
    sys.exit(f"bundle/manifest.json does not list the platform {platform}")
manifest["compatibility"]["platforms"] = [platform]
manifest["server"]["entry_point"] = "server/conda-mcp" + suffix
tmp = f"{out}.{os.getpid()}.part"  # two packers at once never share it
with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
    z.writestr(zipfile.ZipInfo("manifest.json", date_time=(1980, 1, 1, 0, 0, 0)),
               json.dumps(manifest, indent=2) + "\n")
    z.write("README.md", "README.md")
    for exe in ("conda-mcp" + suffix, "conda-mcp-worker" + suffix):
        info = zipfile.ZipInfo("server/" + exe, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (0o100755 << 16)  # regular file, rwxr-xr-x
        with open(os.path.join(bin_dir, exe), "rb") as f:
            z.writestr(info, f.read())
os.replace(tmp, out)
PY
echo "$out"
