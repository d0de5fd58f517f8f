#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: install, build, run every test (CTest).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)"
