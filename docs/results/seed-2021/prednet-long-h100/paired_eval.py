#!/usr/bin/env python3
"""Held-out MSE of the longer PredNet, cpu-t1 against cuda, paired by seed (README: "PredNet, trained longer").

  paired_eval.py RUNS_DIR > paired_eval.json

Reads each run's manifest.json (config, study.seed, evaluation.mse); writes per-seed values, the per-seed
differences cpu-t1 − cuda, their mean with a 95% t interval, their median, and the exact two-sided
Wilcoxon signed-rank p (all 2ⁿ sign patterns). Standard library only."""
import itertools, json, math, os, statistics, sys

T975 = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776, 6: 2.571, 7: 2.447, 8: 2.365, 9: 2.306, 10: 2.262, 11: 2.228}


def main(runs):
    by = {}
    for d in sorted(os.listdir(runs)):
        path = os.path.join(runs, d, "manifest.json")
        if not os.path.isfile(path):
            continue
        m = json.load(open(path))
        if m.get("status") != "completed" or not m.get("evaluation"):
            continue
        by.setdefault(m["study"]["config"], {})[m["study"]["seed"]] = m["evaluation"]["mse"]
    a, b = by["cpu-t1"], by["cuda"]
    seeds = sorted(set(a) & set(b))
    diff = [a[s] - b[s] for s in seeds]
    n = len(diff)
    mean, sd = statistics.mean(diff), statistics.stdev(diff)
    half = T975[n - 1] * sd / math.sqrt(n)
    ranks = sorted(range(n), key=lambda i: abs(diff[i]))
    rank = [0] * n
    for r, i in enumerate(ranks):
        rank[i] = r + 1
    w = sum(rank[i] for i in range(n) if diff[i] > 0)
    centre = n * (n + 1) / 4
    extreme = sum(1 for signs in itertools.product((0, 1), repeat=n)
                  if abs(sum(rank[i] for i in range(n) if signs[i]) - centre) >= abs(w - centre))
    json.dump({"seeds": seeds, "cpu_t1_mse": [a[s] for s in seeds], "cuda_mse": [b[s] for s in seeds],
               "difference_cpu_minus_cuda": diff, "n": n, "mean_difference": mean,
               "mean_difference_ci95": [mean - half, mean + half], "median_difference": statistics.median(diff),
               "relative_mean_difference": mean / statistics.mean(a[s] for s in seeds),
               "cuda_lower_in": sum(1 for x in diff if x > 0), "wilcoxon_w_plus": w,
               "wilcoxon_p_exact": extreme / 2 ** n}, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main(sys.argv[1])
