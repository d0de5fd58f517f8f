#!/usr/bin/env bash
# One part of the seed study (docs/results/seed-2021/README.md) on this host: run it (resuming what an
# earlier piece left), analyse it against cpu-t1, and write its report where gnuplot is installed.
#   scripts/seed-2021.sh autoencoder|prednet [LIMIT_S]
# LIMIT_S > 0 stops the study run after that many seconds (SIGINT: every run checkpoints; run the
# script again to continue) and analyses what has finished. $SADDLESCOPE names the binary
# (default ./build/saddlescope).
set -euo pipefail
cd "$(dirname "$0")/.."
part=${1:?usage: scripts/seed-2021.sh autoencoder|prednet [LIMIT_S]}
case $part in autoencoder|prednet) ;; *) echo "seed-2021.sh: part must be autoencoder or prednet, got '$part'" >&2; exit 2;; esac
exec scripts/study-piece.sh "studies/seed-2021-$part.toml" "${2:-0}" cpu-t1
