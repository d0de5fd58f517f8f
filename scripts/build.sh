#!/usr/bin/env bash
# Configures and builds saddlescope in ./build (Release, Ninja, ccache when present).
#   scripts/build.sh [--target TARGET] [cmake configure args...]
# --target builds only that (the quickstart builds only the saddlescope binary, not the tests). Extra
# arguments go to cmake's configure step, e.g. -DCMAKE_PREFIX_PATH=<PyTorch's cmake prefix>.
set -euo pipefail
cd "$(dirname "$0")/.."
target=()
if [ "${1:-}" = --target ]; then
  target=(--target "${2:?--target needs a target name}")
  shift 2
fi
# ccache caches files built with a precompiled header only when told to (its manual, "Precompiled headers").
export CCACHE_SLOPPINESS=${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}
# Paths under the clone are hashed relative to it, so that a clone in another folder (CI clones afresh
# each time) reuses what an earlier one compiled (ccache's manual, "Compiling in different directories").
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$(nproc)" "${target[@]}"
