#!/usr/bin/env bash
# Configures and builds saddlescope in ./build (Release, Ninja, ccache when present).
# Extra arguments go to cmake's configure step, e.g. -DCMAKE_PREFIX_PATH=<PyTorch's cmake prefix>.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$(nproc)"
