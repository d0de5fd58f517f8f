#!/usr/bin/env bash
# One piece of a study on this host: run it (resuming what an earlier piece left), analyse what has
# finished against BASELINE, and write its report where gnuplot is installed.
#   scripts/study-piece.sh STUDY_FILE [LIMIT_S [BASELINE [ANALYZE_ARGS...]]]
# LIMIT_S > 0 stops the study run after that many seconds (SIGINT: every run checkpoints; run the
# script again to continue) and analyses what has finished. BASELINE defaults to cpu-t1. $SADDLESCOPE
# names the binary (default ./build/saddlescope). The study directory is runs/<the file's name>.
set -euo pipefail
cd "$(dirname "$0")/.."
file=${1:?usage: scripts/study-piece.sh STUDY_FILE [LIMIT_S [BASELINE [ANALYZE_ARGS...]]]}
limit=${2:-0}
baseline=${3:-cpu-t1}
shift $(( $# < 3 ? $# : 3 ))
[ -f "$file" ] || { echo "study-piece.sh: $file: no such study file" >&2; exit 2; }
case $limit in ''|*[!0-9]*) echo "study-piece.sh: LIMIT_S must be a number of seconds, got '$limit'" >&2; exit 2;; esac
s=${SADDLESCOPE:-./build/saddlescope}
study=runs/$(sed -n 's/^name *= *"\(.*\)".*/\1/p' "$file" | head -1)
[ "$study" != runs/ ] || study=runs/$(basename "$file" .toml)
rc=0
if [ "$limit" -gt 0 ]; then
  timeout -s INT "$limit" "$s" study run "$file" --per-gpu 8 || rc=$?
else
  "$s" study run "$file" --per-gpu 8 || rc=$?
fi
echo "study run: exit status $rc"
"$s" study status "$study" || true
"$s" analyze "$study" --baseline "$baseline" "$@"
if command -v gnuplot >/dev/null; then "$s" report "$study"; fi
