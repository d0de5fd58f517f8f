#!/usr/bin/env python3
"""The symmetry section of a saddlescope report as one Markdown table row per group.

    scripts/symmetry_table.py STUDY_DIR/report/report.json

Per group (model/config): how many runs kept every duplicated pair bitwise identical to the end; for
the others, the step the first pair broke (min, median, max over runs) and the layer(s) where it broke
first; and the identical pairs left at the end in each duplicated layer (median over runs). Every number
is read from report.json's `symmetry.runs` (which copies symmetry.csv per run and layer).
"""
import json
import statistics
import sys
from collections import defaultdict


def main(path):
    report = json.load(open(path))
    groups = defaultdict(list)
    for run in report["symmetry"]["runs"]:
        groups[run["group"]].append(run)
    print("| group | runs | kept every pair to the end | first break: step min / median / max | layer(s) broken first | identical pairs at start → end (median) |")
    print("|---|---|---|---|---|---|")
    for group, runs in sorted(groups.items()):
        kept, steps, first_layers, pairs = 0, [], defaultdict(int), defaultdict(lambda: [None, []])
        last = None
        for run in runs:
            dup = [l for l in run["layers"] if l["identical_pairs_start"] > 0]
            broke = [l for l in dup if l["broke_at_step"] is not None]
            last = max([l["last_step"] for l in run["layers"]] + [last or 0])
            for l in dup:
                pairs[l["layer"]][0] = l["identical_pairs_start"]
                pairs[l["layer"]][1].append(l["identical_pairs_end"])
            if not broke:
                kept += 1
                continue
            step = min(l["broke_at_step"] for l in broke)
            steps.append(step)
            for l in broke:
                if l["broke_at_step"] == step:
                    first_layers[l["layer"]] += 1
        step_text = "—" if not steps else f"{min(steps)} / {statistics.median(steps):g} / {max(steps)}"
        layer_text = ", ".join(f"{k} ({v})" for k, v in sorted(first_layers.items())) or "—"
        pair_text = "; ".join(f"{k}: {v[0]} → {statistics.median(v[1]):g}" for k, v in sorted(pairs.items()))
        print(f"| {group} | {len(runs)} | {kept} (to step {last}) | {step_text} | {layer_text} | {pair_text} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: scripts/symmetry_table.py STUDY_DIR/report/report.json")
    main(sys.argv[1])
