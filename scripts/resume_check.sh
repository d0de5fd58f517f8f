#!/usr/bin/env bash
# Does a run killed with SIGKILL and resumed give the bits of a run never stopped? For any config:
#   scripts/resume_check.sh OUT_DIR [train flags...]
# Trains the config once uninterrupted, then again killed at its second checkpoint's manifest write
# (SADDLESCOPE_KILL_AT_WRITE) and resumed with `train --resume`, then compares metrics.csv (wall_s
# aside), every probe CSV (probe_s aside) and every snapshot. Prints one line per config:
#   resume  <run id>  bitwise|DIFFERENT (<what>)
# Exit status 1 when anything differs. Needs --checkpoint-every small enough for two checkpoints.
set -euo pipefail
out=$1
shift
bin=${SADDLESCOPE:-build/saddlescope}
rm -rf "$out"
"$bin" train "$@" --out "$out/whole" > "$out.whole.log" 2>&1 || { cat "$out.whole.log"; exit 1; }
set +e
SADDLESCOPE_KILL_AT_WRITE=manifest.json:3 "$bin" train "$@" --out "$out/killed" > "$out.killed.log" 2>&1
code=$?
set -e
[ "$code" -eq 137 ] || { echo "expected SIGKILL (137), got $code"; cat "$out.killed.log"; exit 1; }
whole=$(find "$out/whole/runs" -mindepth 1 -maxdepth 1 -type d)
killed=$(find "$out/killed/runs" -mindepth 1 -maxdepth 1 -type d)
"$bin" train --resume "$killed" > "$out.resumed.log" 2>&1 || { cat "$out.resumed.log"; exit 1; }
# Columns up to (not including) the named wall-clock column.
upto() { awk -F, -v c="$2" 'NR==1{n=NF; for(i=1;i<=NF;i++) if($i==c) n=i-1} {s=$1; for(i=2;i<=n;i++) s=s","$i; print s}' "$1"; }
diff=""
cmp -s <(upto "$whole/metrics.csv" wall_s) <(upto "$killed/metrics.csv" wall_s) || diff="$diff metrics.csv"
for f in curvature.csv curvature_eigen.csv symmetry.csv ops.csv; do
  [ -e "$whole/$f" ] || continue
  cmp -s <(upto "$whole/$f" probe_s) <(upto "$killed/$f" probe_s) || diff="$diff $f"
done
for s in "$whole"/snapshots/step-*; do
  for p in "$s"/*.npy; do
    cmp -s "$p" "$killed/snapshots/$(basename "$s")/$(basename "$p")" || diff="$diff $(basename "$s")/$(basename "$p")"
  done
done
if [ -z "$diff" ]; then echo "resume  $(basename "$whole")  bitwise"; else echo "resume  $(basename "$whole")  DIFFERENT ($diff)"; exit 1; fi
