#!/usr/bin/env python3
"""What the any-model studies and runs measured, per run and per tapped op (README).

  summarize.py RUNS_DIR [RUNS_DIR ...] > summary.json

For every run: its config, seed, device, held-out cross entropy against the training class
frequencies' (the trivial baseline), accuracy, training seconds, λmin and λmax at each curvature probe,
and its ops.csv summarised per (kernel, phase): samples measured, median and max |ULP|, the largest
error/bound, how many lie beyond their bound, and the ops only listed (not evaluated) with their calls.
Then per (data, config) group: the medians of cross entropy and accuracy over seeds, and the op samples
measured and beyond their bound per (kernel, phase), summed over the group's runs.
Standard library only."""
import csv, json, os, statistics, sys


def run_summary(d):
    m = json.load(open(os.path.join(d, "manifest.json")))
    e = m["evaluation"]
    out = {"run": os.path.basename(d.rstrip("/")), "config": (m.get("study") or {}).get("config", "train"),
           "seed": m["config"]["seed"], "device": m["config"]["device"], "data": m["config"]["data"],
           "cross_entropy": e["cross_entropy"], "baseline_cross_entropy": e["baseline_cross_entropy"],
           "accuracy": e["accuracy"], "train_s": m["timings"]["train_s"], "curvature": [], "ops": {}, "listed": {}}
    path = os.path.join(d, "curvature.csv")
    if os.path.exists(path):
        out["curvature"] = [{"step": int(r["step"]), "lambda_min": float(r["lambda_min"]),
                             "lambda_max": float(r["lambda_max"])} for r in csv.DictReader(open(path))]
    rows = list(csv.DictReader(open(os.path.join(d, "ops.csv"))))
    groups = {}
    for r in rows:
        if r["flag"] == "not_evaluated":
            out["listed"][r["kernel"] + " " + r["phase"]] = out["listed"].get(r["kernel"] + " " + r["phase"], 0) + int(r["terms"])
            continue
        groups.setdefault(r["kernel"] + " " + r["phase"], []).append(r)
    for k, rs in sorted(groups.items()):
        ulp = [abs(float(r["ulp_error"])) for r in rs if r["ulp_error"] not in ("", "nan")]
        ratio = [float(r["bound_ratio"]) for r in rs if r["bound_ratio"] not in ("", "nan")]
        out["ops"][k] = {"samples": len(rs), "median_ulp": statistics.median(ulp) if ulp else None,
                         "max_ulp": max(ulp) if ulp else None, "max_error_over_bound": max(ratio) if ratio else None,
                         "beyond": sum(r["flag"] == "beyond" for r in rs)}
    return out


def main(dirs):
    runs = []
    for top in dirs:
        for d in sorted(os.listdir(top)):
            if os.path.isfile(os.path.join(top, d, "manifest.json")):
                runs.append(run_summary(os.path.join(top, d)))
    groups = {}
    for r in runs:
        g = groups.setdefault(r["data"] + " " + r["config"], {"runs": 0, "cross_entropy": [], "accuracy": [], "ops": {}})
        g["runs"] += 1
        g["cross_entropy"].append(r["cross_entropy"])
        g["accuracy"].append(r["accuracy"])
        for k, v in r["ops"].items():
            o = g["ops"].setdefault(k, {"samples": 0, "beyond": 0})
            o["samples"] += v["samples"]
            o["beyond"] += v["beyond"]
    for g in groups.values():
        g["median_cross_entropy"] = statistics.median(g["cross_entropy"])
        g["median_accuracy"] = statistics.median(g["accuracy"])
    json.dump({"runs": runs, "groups": groups}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv[1:])
