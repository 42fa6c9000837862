#!/usr/bin/env bash
# Builds the MCP bundle target/bundle/conda-mcp-VERSION-linux-ARCH.mcpb:
# a zip holding manifest.json (this folder's) and server/conda-mcp plus
# server/conda-mcp-worker from a release build (the server finds its worker
# next to itself). Claude Desktop installs it in one click; the manifest's
# user_config asks for the conda executable and the two policy options.
#
#   bundle/build.sh                 # cargo build --release, then pack
#   CONDA_MCP_BUNDLE_BIN_DIR=DIR bundle/build.sh   # pack prebuilt binaries
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

if [ -n "${CONDA_MCP_BUNDLE_BIN_DIR:-}" ]; then
  bin_dir=$CONDA_MCP_BUNDLE_BIN_DIR
else
  cargo build --release --locked --bins -p conda-mcp-server >&2
  bin_dir=target/release
fi
for exe in conda-mcp conda-mcp-worker; do
  if [ ! -x "$bin_dir/$exe" ]; then
    echo "$bin_dir/$exe is missing" >&2
    exit 1
  fi
done

arch=$(uname -m)
out_dir=target/bundle
out="$out_dir/conda-mcp-$version-linux-$arch.mcpb"
mkdir -p "$out_dir"
python3 - "$out" "$bin_dir" <<'PY'
import os, sys, zipfile
out, bin_dir = sys.argv[1], sys.argv[2]
tmp = out + ".part"
with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED) as z:
    z.write("bundle/manifest.json", "manifest.json")
    z.write("README.md", "README.md")
    for exe in ("conda-mcp", "conda-mcp-worker"):
        info = zipfile.ZipInfo("server/" + exe, date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (0o100755 << 16)  # regular file, rwxr-xr-x
        with open(os.path.join(bin_dir, exe), "rb") as f:
            z.writestr(info, f.read())
os.replace(tmp, out)
PY
echo "$out"
