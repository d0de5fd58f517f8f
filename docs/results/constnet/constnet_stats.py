#!/usr/bin/env python3
"""ConstNet's accuracy and symmetry per config, and every config against cuda-deterministic (README).

  constnet_stats.py RUNS_DIR > stats.json

Reads each run's manifest.json (study.config, study.seed, evaluation.accuracy) and symmetry.csv. Per
config: the held-out accuracy's median with the exact distribution-free interval [min, max] (for six
seeds it holds the median with probability 1 − 2/2⁶ = 96.9%), mean and 95% t interval; the first symmetry
probe at which a convolution's output channels were no longer all copies, and which; the pairs of
channels still bitwise copies at the last probe (of all pairs over the nine convolutions), and the layers
still wholly copies; λmin and λmax at every curvature probe (steps 0, 500, 1000). Against cuda-deterministic: the per-seed differences (same seed: same data order,
same initial file), their mean with a 95% t interval, Hedges' g, and the exact two-sided permutation p
of the difference in means over all C(12, 6) = 924 splits of the twelve accuracies; Holm-adjusted over
the nine comparisons. And the smallest accuracy shift this design detects with probability 0.8 at the
primary comparison's Holm level, by simulation with the deterministic runs' standard deviation.
Standard library only."""
import csv, itertools, json, math, os, random, statistics, sys

T975 = {2: 12.706, 3: 4.303, 4: 3.182, 5: 2.776, 6: 2.571, 7: 2.447, 8: 2.365, 9: 2.306, 10: 2.262, 11: 2.228}
BASE = "cuda-deterministic"


def perm_p(a, b):
    """Exact two-sided permutation p of |mean(a) − mean(b)| over every split of a + b."""
    pooled, n = a + b, len(a)
    observed = abs(statistics.mean(a) - statistics.mean(b))
    total = sum(pooled)
    hits = count = 0
    for idx in itertools.combinations(range(len(pooled)), n):
        s = sum(pooled[i] for i in idx)
        diff = abs(s / n - (total - s) / (len(pooled) - n))
        hits += diff >= observed - 1e-12
        count += 1
    return hits / count


def symmetry(run_dir):
    first, last = None, {}
    for r in csv.DictReader(open(os.path.join(run_dir, "symmetry.csv"))):
        if r["layer"] == "head.weight":
            continue  # the head's units are the classes, which the labels tell apart
        u, pairs = int(r["units"]), int(r["identical_pairs"])
        if first is None and pairs < u * (u - 1) // 2:
            first = {"step": int(r["step"]), "layer": r["layer"]}
        last[r["layer"]] = (int(r["step"]), pairs, u * (u - 1) // 2)
    step = max(v[0] for v in last.values())
    curvature = [{"step": int(r["step"]), "lambda_min": float(r["lambda_min"]), "lambda_max": float(r["lambda_max"])}
                 for r in csv.DictReader(open(os.path.join(run_dir, "curvature.csv")))]
    return {"first_parted": first, "last_probe": step,
            "pairs_still_copies": sum(v[1] for v in last.values()), "pairs": sum(v[2] for v in last.values()),
            "layers_still_copies": sorted(k for k, v in last.items() if v[1] == v[2]), "curvature": curvature}


def main(runs):
    acc, sym = {}, {}
    for d in sorted(os.listdir(runs)):
        path = os.path.join(runs, d, "manifest.json")
        if not os.path.isfile(path):
            continue
        m = json.load(open(path))
        if m.get("status") != "completed":
            continue
        c, s = m["study"]["config"], m["study"]["seed"]
        acc.setdefault(c, {})[s] = m["evaluation"]["accuracy"]
        sym.setdefault(c, {})[s] = symmetry(os.path.join(runs, d))
    out = {"configs": {}, "against": BASE, "comparisons": {}}
    for c in sorted(acc):
        v = [acc[c][s] for s in sorted(acc[c])]
        n, mean = len(v), statistics.mean(v)
        half = T975[n - 1] * statistics.stdev(v) / math.sqrt(n)
        firsts = [sym[c][s]["first_parted"] for s in sorted(sym[c])]
        out["configs"][c] = {
            "seeds": sorted(acc[c]), "accuracy": v, "median": statistics.median(v), "median_interval": [min(v), max(v)],
            "median_interval_level": 1 - 2 / 2 ** n, "mean": mean, "mean_ci95": [mean - half, mean + half],
            "first_parted": firsts,
            "pairs_still_copies": [sym[c][s]["pairs_still_copies"] for s in sorted(sym[c])],
            "pairs": sym[c][sorted(sym[c])[0]]["pairs"], "last_probe": sym[c][sorted(sym[c])[0]]["last_probe"],
            "layers_still_copies": sorted({l for s in sym[c] for l in sym[c][s]["layers_still_copies"]}),
            "curvature_by_seed": [sym[c][s]["curvature"] for s in sorted(sym[c])],
            "layers_still_copies_in_every_seed": sorted(set.intersection(*[set(sym[c][s]["layers_still_copies"]) for s in sym[c]])),
        }
    base = acc[BASE]
    raw = {}
    for c in sorted(acc):
        if c == BASE:
            continue
        seeds = sorted(set(acc[c]) & set(base))
        a, b = [acc[c][s] for s in seeds], [base[s] for s in seeds]
        d = [x - y for x, y in zip(a, b)]
        n, mean = len(d), statistics.mean(d)
        half = T975[n - 1] * statistics.stdev(d) / math.sqrt(n)
        sp = math.sqrt((statistics.variance(a) + statistics.variance(b)) / 2)
        g = (statistics.mean(a) - statistics.mean(b)) / sp * (1 - 3 / (4 * (2 * n) - 9))
        raw[c] = perm_p(a, b)
        out["comparisons"][c] = {"seeds": seeds, "differences": d, "mean_difference": mean,
                                 "mean_difference_ci95": [mean - half, mean + half],
                                 "median_difference": statistics.median(d), "hedges_g": g, "permutation_p": raw[c]}
    order = sorted(raw, key=raw.get)  # Holm: the k-th smallest p times (m − k), monotone
    m, running = len(order), 0.0
    for k, c in enumerate(order):
        running = max(running, min(1.0, (m - k) * raw[c]))
        out["comparisons"][c]["holm_p"] = running
    # The smallest shift detected with probability 0.8 by the permutation test at level 0.05 / m (the
    # first Holm step), six seeds an arm, normal accuracies with the deterministic runs' spread.
    sd = statistics.stdev(base.values())
    rng = random.Random(0)
    detectable = None
    for shift_sd in [x / 4 for x in range(4, 41)]:
        hits = 0
        for _ in range(200):
            a = [rng.gauss(shift_sd * sd, sd) for _ in range(6)]
            b = [rng.gauss(0, sd) for _ in range(6)]
            hits += perm_p(a, b) <= 0.05 / m
        if hits / 200 >= 0.8:
            detectable = {"shift": shift_sd * sd, "in_sd": shift_sd, "sd": sd, "level": 0.05 / m, "power": hits / 200}
            break
    out["detectable"] = detectable
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main(sys.argv[1])
