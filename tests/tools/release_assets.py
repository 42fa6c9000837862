#!/usr/bin/env python3
"""The release's last files, from the artifacts in one folder.

    release_assets.py --release-dir DIR [--conda-dir TARGET_DIR] --base-url URL

DIR holds the wheels, the sdist, one .mcpb per platform and the SBOM. This
script adds, in DIR:

* with --conda-dir, the conda packages tests/tools/conda_package.sh made,
  from TARGET_DIR/conda-package-test*/channel/SUBDIR/ (conda-mcp-server per
  platform, the noarch conda-mcp once); a name two platforms share fails,
  since a release's files are one flat folder;
* server.json: the repository's, with one `mcpb` package per bundle, named
  by its download URL (URL/FILE, the GitHub release's) and its SHA-256
  (the registry requires fileSha256 for MCPB packages);
* SHA256SUMS: `sha256sum` format, every other file of DIR, sorted by name.

Standard library only; exits non-zero with a message on the first problem.
The release workflow (.github/workflows/release.yml) and its dry run
(tests/tools/release.sh) both run it.
"""

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def workspace_version():
    with open(os.path.join(ROOT, "Cargo.toml")) as f:
        text = f.read()
    section = text.split("[workspace.package]", 1)[1].split("\n[", 1)[0]
    m = re.search(r'^version\s*=\s*"([^"]+)"', section, re.M)
    if not m:
        sys.exit("Cargo.toml: no [workspace.package] version")
    return m.group(1)


def copy_conda_packages(release_dir, conda_dir):
    """Copies each platform's conda-mcp-server and one noarch conda-mcp
    (every platform's run builds the same noarch package again) into
    release_dir; two platforms' packages with one name fail."""
    found = sorted(
        glob.glob(os.path.join(conda_dir, "conda-package-test*", "channel", "*", "*.conda"))
    )
    if not found:
        sys.exit(f"no conda packages under {conda_dir}/conda-package-test*/channel/")
    for path in found:
        subdir = os.path.basename(os.path.dirname(path))
        dest = os.path.join(release_dir, os.path.basename(path))
        if os.path.exists(dest):
            if subdir == "noarch":
                continue
            sys.exit(f"two platforms' conda packages are both named {os.path.basename(path)}")
        shutil.copyfile(path, dest)
    return found


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release-dir", required=True)
    ap.add_argument(
        "--conda-dir",
        help="a target folder whose conda-package-test*/channel/ hold the conda packages to add",
    )
    ap.add_argument("--base-url", required=True)
    args = ap.parse_args()
    rel = args.release_dir
    version = workspace_version()

    if args.conda_dir:
        copy_conda_packages(rel, args.conda_dir)

    with open(os.path.join(ROOT, "server.json")) as f:
        server = json.load(f)
    if server["version"] != version:
        sys.exit(f"server.json has version {server['version']}, the workspace {version}")
    bundles = sorted(glob.glob(os.path.join(rel, f"conda-mcp-{version}-*.mcpb")))
    if not bundles:
        sys.exit(f"no conda-mcp-{version}-*.mcpb in {rel}")
    for b in bundles:
        name = os.path.basename(b)
        server["packages"].append(
            {
                "registryType": "mcpb",
                "identifier": f"{args.base_url.rstrip('/')}/{name}",
                "version": version,
                "fileSha256": sha256(b),
                "transport": {"type": "stdio"},
            }
        )
    with open(os.path.join(rel, "server.json"), "w") as f:
        json.dump(server, f, indent=2)
        f.write("\n")

    names = sorted(n for n in os.listdir(rel) if n != "SHA256SUMS" and os.path.isfile(os.path.join(rel, n)))
    with open(os.path.join(rel, "SHA256SUMS"), "w") as f:
        for n in names:
            f.write(f"{sha256(os.path.join(rel, n))}  {n}\n")
    for n in names:
        print(f"{os.path.getsize(os.path.join(rel, n)):>12}  {n}")


if __name__ == "__main__":
    main()
