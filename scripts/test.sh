#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: install, build, run every test (CTest); then the
# torch-free modules again under AddressSanitizer + UndefinedBehaviorSanitizer, and every fuzz target
# for 30 s (scripts/sanitize.sh, docs/reliability.md). SADDLESCOPE_SKIP_SANITIZE=1 skips that part.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
(cd build && ctest --output-on-failure -j "$(nproc)")
if [ "${SADDLESCOPE_SKIP_SANITIZE:-0}" != 1 ]; then
  bash scripts/sanitize.sh --fuzz-seconds "${SADDLESCOPE_FUZZ_SECONDS:-30}"
fi
