#!/usr/bin/env bash
# The published READMEs' numbers are in their committed data (check_numbers.py), and the checker fails
# on a number planted in a copy, naming its line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
python3 "$here/check_numbers.py" "$root/docs/results/seed-2021/README.md" "$root/docs/results/analysis/README.md" \
  "$root/docs/results/batch-invariance/README.md" "$root/docs/results/noise-budget/README.md" \
  "$root/docs/results/first-divergent-op/README.md" "$root/docs/results/any-model/README.md" \
  "$root/docs/results/constnet/README.md"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -r "$root/docs/results/seed-2021" "$tmp/seed"
# Plant a wrong median on the first line that quotes the baseline's median final loss.
line=$(grep -n -m1 '| cpu-t1 |' "$tmp/seed/README.md" | cut -d: -f1)
sed -i "${line}s/| cpu-t1 | [0-9.]* |/| cpu-t1 | 0.04321 |/" "$tmp/seed/README.md"
grep -q '| cpu-t1 | 0.04321 |' "$tmp/seed/README.md" || { echo "could not plant the number"; exit 1; }
if out=$(python3 "$here/check_numbers.py" "$tmp/seed/README.md"); then
  echo "check_numbers.py passed a README with a planted number"; exit 1
fi
echo "$out" | grep -q "README.md:$line: 0.04321 is in no data file beside it" || { echo "wrong report: $out"; exit 1; }
# And a bad argument is a one-line error with exit status 2.
set +e
python3 "$here/check_numbers.py" "$tmp/no-such-README.md" 2>"$tmp/err"
rc=$?
set -e
[ "$rc" = 2 ] && grep -q "no such file" "$tmp/err" || { echo "bad argument: rc $rc"; exit 1; }
echo "check_numbers: published numbers found, planted number caught"
