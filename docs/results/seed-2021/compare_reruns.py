#!/usr/bin/env python3
"""The PredNet part's three runs against each other, per config: how many of the 8 seeds gave the same
final-loss bits, and the largest relative difference of a seed's final loss. Reads the analysis.json of
each run (their runs[].final_loss) and writes reruns.json beside this script, the data the README's
"Re-running it" section quotes. Run: python3 docs/results/seed-2021/compare_reruns.py"""
import json, os

here = os.path.dirname(os.path.abspath(__file__))
runs = {"1": "prednet-h200-4135d9e", "2": "rerun-prednet", "3": "prednet"}


def final_losses(folder):
    with open(os.path.join(here, folder, "analysis.json"), encoding="utf-8") as f:
        return {(r["group"], r["seed"]): r["final_loss"] for r in json.load(f)["runs"]}


losses = {k: final_losses(v) for k, v in runs.items()}
out = {"runs": runs, "comparisons": []}
for a, b in (("1", "2"), ("1", "3")):
    x, y = losses[a], losses[b]
    for group in sorted({g for g, _ in x}):
        keys = [k for k in x if k[0] == group and k in y]
        out["comparisons"].append({
            "runs": f"{a} vs {b}", "config": group, "seeds": len(keys),
            "bitwise_equal": sum(x[k] == y[k] for k in keys),
            "max_relative_difference": max(abs(x[k] - y[k]) / abs(x[k]) for k in keys),
            "max_relative_difference_percent": 100 * max(abs(x[k] - y[k]) / abs(x[k]) for k in keys),
        })
with open(os.path.join(here, "reruns.json"), "w", encoding="utf-8") as f:
    json.dump(out, f, indent=1)
    f.write("\n")
