#!/usr/bin/env bash
# The main job, from a fresh Debian 12 machine: install, build, fetch MNIST, train the autoencoder
# (examples/autoencoder.toml), print its summary and leave the run directory under runs/quickstart/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
./build/saddlescope data fetch mnist
./build/saddlescope train --config examples/autoencoder.toml --force
