#!/usr/bin/env bash
# The whole test suite, from a fresh Debian 12 machine: install, build, run every test (CTest); then the
# torch-free modules again under AddressSanitizer + UndefinedBehaviorSanitizer, and every fuzz target
# for 30 s (scripts/sanitize.sh, docs/reliability.md). SADDLESCOPE_SKIP_SANITIZE=1 skips that part.
# At the end (also after a failure) it prints how long each phase took.
set -euo pipefail
cd "$(dirname "$0")/.."
phases=()
phase() {  # phase NAME COMMAND...: runs it and keeps its wall time
  local name=$1 start=$SECONDS rc=0
  shift
  "$@" || rc=$?
  phases+=("$(printf '%-10s %4d s' "$name" $((SECONDS - start)))$([ $rc = 0 ] || echo "  FAILED (exit status $rc)")")
  return $rc
}
report() { printf 'test.sh: %s\n' "${phases[@]}" "$(printf '%-10s %4d s' total "$SECONDS")"; }
trap report EXIT
phase setup bash scripts/setup.sh
phase build bash scripts/build.sh
phase tests bash -c 'cd build && ctest --output-on-failure -j "$(nproc)"'
if [ "${SADDLESCOPE_SKIP_SANITIZE:-0}" != 1 ]; then
  phase sanitize bash scripts/sanitize.sh --fuzz-seconds "${SADDLESCOPE_FUZZ_SECONDS:-30}"
fi
