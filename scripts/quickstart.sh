#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: install, build the saddlescope binary (not the tests),
# fetch MNIST, run the quick study (studies/quick.toml: the autoencoder under four CPU execution
# configs and three seeds, CUDA configs too where there is a GPU) into runs/quick, print its state,
# analyse it and write its report (runs/quick/report/index.html), printing the report's path last.
# Run it again to continue a study that was stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh --target saddlescope
./build/saddlescope data fetch mnist
./build/saddlescope study run studies/quick.toml
./build/saddlescope study status runs/quick
./build/saddlescope analyze runs/quick --baseline cpu-t1
./build/saddlescope report runs/quick
