#!/usr/bin/env python3
"""A Markdown table of `saddlescope invariance --json` files named MODEL-DEVICE-CONFIG.json.

    scripts/invariance_table.py [--json TABLE.json] OUT/*.json > OUT/table.md

One row per file: whether every example was bitwise equal in every case (batch size x position), how
many cases were, the prediction's largest ULP and relative differences and, with --backward, the input
gradient's relative difference, the first op that differs (with how many cases name it
and whether it stayed within its rounding bound), and the median time of one evaluation (forward, and backward with --backward) at the largest batch,
with its ratio to the first config of the same model and device in the arguments. --json also writes
the rows' numbers (times in ms, the ratios) to TABLE.json, so that a README quoting them has them in
its data.
"""
import collections
import json
import os
import sys


def main() -> None:
    args = sys.argv[1:]
    table_json = None
    if args[:1] == ["--json"]:
        if len(args) < 2:
            sys.exit("usage: invariance_table.py [--json TABLE.json] FILE.json...")
        table_json, args = args[1], args[2:]
    if not args:
        sys.exit("usage: invariance_table.py [--json TABLE.json] FILE.json...")
    rows, base, summary = [], {}, []
    for path in args:
        stem = os.path.basename(path)[: -len(".json")]
        parts = stem.split("-", 2)
        if len(parts) != 3:
            sys.exit(f"invariance_table.py: {path}: name must be MODEL-DEVICE-CONFIG.json")
        model, device, config = parts
        try:
            with open(path) as f:
                r = json.load(f)
            cases = r["cases"]
            timing = max(r["seconds"], key=lambda t: t["batch"])
        except (OSError, ValueError, KeyError) as e:
            sys.exit(f"invariance_table.py: {path}: not an invariance result ({e})")
        equal = sum(c["equal"] == c["examples"] for c in cases)
        max_ulp = max((c["max_ulp"] if c["max_ulp"] is not None else float("inf")) for c in cases)
        def largest(key, within=None):
            values = [(c.get(within, {}) if within else c).get(key) for c in cases]
            values = [float("inf") if v is None else v for v in values if v is not None or within is None]
            return max(values) if values else None

        max_rel = largest("max_relative")
        grad_rel = largest("max_relative", "input_grad")
        firsts = collections.Counter(
            (c["first_op"]["op"], c["first_op"]["phase"], c["first_op"]["how"], c["first_op"]["bound"])
            for c in cases if "first_op" in c)
        ops = "; ".join(f"`{op}` {phase} {how} ({n})" + (f", {bound} bound" if bound else "")
                        for (op, phase, how, bound), n in firsts.most_common(2))
        key = (model, device)
        base.setdefault(key, timing["median"])
        ratio = timing["median"] / base[key]
        summary.append({"model": model, "device": device, "config": config, "invariant": r["invariant"],
                        "cases_equal": equal, "cases": len(cases), "max_ulp": max_ulp, "max_relative": max_rel,
                        "input_grad_max_relative": grad_rel, "batch": timing["batch"],
                        "ms": {k: timing[k] * 1e3 for k in ("min", "median", "max")}, "time_ratio": ratio})
        rows.append(f"| {model} | {device} | {config} | {'yes' if r['invariant'] else 'no'} | {equal}/{len(cases)} | "
                    f"{max_ulp:g} | {max_rel:.3g} | {'—' if grad_rel is None else f'{grad_rel:.3g}'} | {ops or '—'} | {timing['batch']}: {timing['median'] * 1e3:.3g} "
                    f"({timing['min'] * 1e3:.3g}–{timing['max'] * 1e3:.3g}) | {ratio:.2f} |")
    print("| model | device | config | invariant | cases equal | max ULP | max relative | input gradient max relative | first op that differs (cases) | "
          "ms per evaluation at batch: median (min–max) | time vs first config |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if table_json:
        with open(table_json + ".tmp", "w") as f:
            json.dump(summary, f, indent=1)
        os.replace(table_json + ".tmp", table_json)


if __name__ == "__main__":
    main()
