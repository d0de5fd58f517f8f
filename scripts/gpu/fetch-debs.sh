#!/usr/bin/env bash
# Run on a development machine (Debian, apt reachable), from the project's root:
#   bash scripts/gpu/fetch-debs.sh
# Gathers the development packages that an offline CUDA host with PyTorch lacks
# (headers and link stubs), plus build.sh, into ./.gpu/, which git ignores.
# Carry .gpu to the CUDA host and run: bash .gpu/build.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(git rev-parse --show-toplevel)
mkdir -p "$root/.gpu/debs"
grep -qx '/.gpu/' "$root/.git/info/exclude" 2>/dev/null || echo '/.gpu/' >> "$root/.git/info/exclude"
pkgs=(libmpfr-dev libgmp-dev nlohmann-json3-dev libcli11-dev
      libtomlplusplus-dev libtomlplusplus3 libsqlite3-dev zlib1g-dev zlib1g ${EXTRA_DEBS:-})
(cd "$root/.gpu/debs" && apt-get download "${pkgs[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
cp "$here/build.sh" "$root/.gpu/build.sh"
du -sh "$root/.gpu"
