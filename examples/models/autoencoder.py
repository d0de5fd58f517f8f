#!/usr/bin/env python3
"""The seed study's autoencoder (784-256-64-256-784, ReLU, sigmoid output) as a TorchScript module.

    python3 examples/models/autoencoder.py --out autoencoder.pt [--features 784 --hidden 256,64 --seed 0]
    saddlescope train --model torchscript --model-file autoencoder.pt --data mnist --steps 2000

Its parameters carry the built-in model's names (encoder.fc1.weight, ...), so a run of the built-in
autoencoder can start it (init_from) from the same weights: tests/trainer/torchscript_test.cpp trains
both and expects the same metrics bit for bit. Runs with Debian's python3-torch 1.13 and PyTorch 2.x;
a file saved by a newer PyTorch may not load in an older LibTorch.
"""
import argparse

import torch
from torch import nn


class Stack(nn.Module):
    """Two Linear layers named fc1 and fc2, as the built-in model names them."""

    def __init__(self, a: int, b: int, c: int):
        super().__init__()
        self.fc1 = nn.Linear(a, b)
        self.fc2 = nn.Linear(b, c)


class Autoencoder(nn.Module):
    def __init__(self, features: int, hidden: int, code: int):
        super().__init__()
        self.encoder = Stack(features, hidden, code)
        self.decoder = Stack(code, hidden, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.flatten(x, 1)  # MNIST arrives as (N, 1, 28, 28)
        x = torch.relu(self.encoder.fc1(x))
        x = torch.relu(self.encoder.fc2(x))
        x = torch.relu(self.decoder.fc1(x))
        return torch.sigmoid(self.decoder.fc2(x))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the .pt file to write")
    p.add_argument("--features", type=int, default=784)
    p.add_argument("--hidden", default="256,64", help="two widths: hidden,code")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial weights")
    a = p.parse_args()
    widths = [int(w) for w in a.hidden.split(",")]
    if len(widths) != 2 or min(widths) < 1:
        p.error(f"--hidden must be two positive widths, got '{a.hidden}'")
    torch.manual_seed(a.seed)
    torch.jit.save(torch.jit.script(Autoencoder(a.features, *widths)), a.out)


if __name__ == "__main__":
    main()
