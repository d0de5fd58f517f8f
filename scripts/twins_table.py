#!/usr/bin/env python3
"""Summarises `saddlescope twins` outputs per group: which parameters' copies differ from their originals.

    scripts/twins_table.py ANALYSIS_JSON TWINS_DIR

TWINS_DIR holds one `saddlescope twins RUN --step S [--grads]` output per run, named <run_id>.txt;
ANALYSIS_JSON (the study's analysis/analysis.json) maps run ids to groups. Prints a Markdown table:
per group, the runs whose copies all agree, and per parameter that ever differs, in how many runs
and by how much (max relative difference).
"""
import json
import os
import sys
from collections import defaultdict


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2].strip())
    analysis, twins_dir = sys.argv[1:]
    groups = {r["run_id"]: r["group"] for r in json.load(open(analysis))["runs"]}
    runs = defaultdict(int)
    clean = defaultdict(int)
    differing = defaultdict(lambda: defaultdict(lambda: [0, 0.0]))  # group -> parameter -> [runs, max rel]
    for name in sorted(os.listdir(twins_dir)):
        run_id = name[:-4]
        if run_id not in groups:
            sys.exit(f"twins_table.py: {name}: run {run_id} is not in {analysis}")
        lines = open(os.path.join(twins_dir, name)).read().splitlines()
        if len(lines) < 3 or not lines[1].startswith("parameter"):
            sys.exit(f"twins_table.py: {name}: not a `saddlescope twins` output: {lines[:1]}")
        g = groups[run_id]
        runs[g] += 1
        rows = [l.split() for l in lines[2:-1]]
        if all(int(r[2]) == 0 for r in rows):
            clean[g] += 1
        for r in rows:
            if int(r[2]) > 0:
                d = differing[g][r[0]]
                d[0] += 1
                d[1] = max(d[1], float(r[4]))
    print("| group | runs | every copy equal | parameters whose copies differ: runs, max relative difference |")
    print("|---|---|---|---|")
    for g in sorted(runs):
        ps = "; ".join(f"{p}: {n}, {rel:.2g}" for p, (n, rel) in sorted(differing[g].items())) or "—"
        print(f"| {g} | {runs[g]} | {clean[g]} | {ps} |")


if __name__ == "__main__":
    main()
