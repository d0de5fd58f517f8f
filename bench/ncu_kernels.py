"""Where one PredNet step's GPU time goes, from Nsight Compute (docs/benchmarks.md).

Reads the CSV of `ncu --metrics gpu__time_duration.sum --csv --print-units base bench_prednet cuda B
eager[+fused] T 1 1` (plain or .gz): four eager steps (three warm-up, one timed). The last step is found
as the longest tail of kernels that repeats the one before it (a step's kernels are the same every
step once Adam's state exists), then its kernels are counted and timed per kind.
Usage: python3 bench/ncu_kernels.py NCU.csv[.gz] [--names]   (--names: also each kernel name's count, ms)
"""
import csv
import gzip
import io
import sys
from collections import defaultdict

# (row of the table, test on the demangled kernel name), first match wins.
KINDS = [
    ("this project's kernels (cell, error units, ReLU+pool, Adam)", lambda n: "saddlescope::" in n),
    ("layout transposes (NCHW⇄NHWC)", lambda n: "nchwToNhwc" in n or "nhwcToNchw" in n or "transpose" in n.lower()),
    ("cuDNN's padding, conversion and workspace kernels",
     lambda n: any(k in n for k in ("AddPadding", "convertTensor", "init_device_workspace"))),
    ("cuDNN convolutions (forward, data and weight gradients)",
     lambda n: any(k in n for k in ("cudnn", "xmma", "convolve", "implicit", "wgrad", "dgrad", "fprop", "cutlass"))),
    ("max_pool forward and backward", lambda n: "max_pool" in n or "maxpool" in n.lower()),
    ("reductions (bias gradients, E's means)", lambda n: "reduce_kernel" in n),
    ("bias gradients as cuBLAS matrix-vector products", lambda n: "Gemv" in n or "gemv" in n or "dot_kernel" in n),
    ("add (gradients summed by autograd; on the LibTorch path also the convolution biases)", lambda n: "Functor_add" in n or "AddFunctor" in n),
    ("cat (the gate convolution's input)", lambda n: "CatArray" in n),
    ("upsampling forward and backward", lambda n: "upsample" in n),
    ("copies (layout, contiguous)", lambda n: "copy_kernel" in n),
    ("fills", lambda n: "FillFunctor" in n),
]
OTHER = "other elementwise"


def kernels(path):
    raw = gzip.open(path, "rb").read() if path.endswith(".gz") else open(path, "rb").read()
    text = raw.decode("utf-8", "replace")
    start = text.find('"ID"')
    if start < 0:
        sys.exit(f"{path}: no ncu CSV header (a line starting with \"ID\") found")
    out = []
    for row in csv.DictReader(io.StringIO(text[start:])):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        ns = float(row["Metric Value"].replace(",", ""))
        unit = row.get("Metric Unit", "ns")
        ns *= {"ns": 1, "nsecond": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6}.get(unit, 1)
        out.append((row["Kernel Name"], ns))
    return out


def last_step(ks):
    names = [n for n, _ in ks]
    for size in range(len(names) // 2, 0, -1):  # the longest tail equal to the size before it
        if names[-size:] == names[-2 * size:-size]:
            # the shortest period of that tail: a step, not two
            for p in range(1, size + 1):
                if size % p == 0 and names[-size:] == names[-p:] * (size // p):
                    return ks[-p:]
    sys.exit("no repeating step found in the kernel sequence")


def kind(name):
    for label, test in KINDS:
        if test(name):
            return label
    return OTHER


def tally(step, key):
    """{key(kernel name): [count, ms]} over the step's kernels."""
    out = defaultdict(lambda: [0, 0.0])
    for n, ns in step:
        row = out[key(n)]
        row[0] += 1
        row[1] += ns / 1e6
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    step = last_step(kernels(sys.argv[1]))
    rows = tally(step, kind)
    print("| kernels of one step | count | ms (ncu) |\n|---|---|---|")
    for label in [k for k, _ in KINDS] + [OTHER]:
        if label in rows:
            print(f"| {label} | {rows[label][0]:,} | {rows[label][1]:.2f} |")
    print(f"| **all** | **{len(step):,}** | **{sum(ns for _, ns in step) / 1e6:.2f}** |")
    if "--names" in sys.argv:
        by = tally(step, lambda n: n[:140])
        for n, (c, ms) in sorted(by.items(), key=lambda kv: -kv[1][1]):
            print(f"{c:5d} {ms:8.3f}  {n}")


if __name__ == "__main__":
    main()
