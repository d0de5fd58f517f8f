#!/usr/bin/env python3
"""A small transformer classifier for MNIST (each image row a token) as a TorchScript module.

    python3 examples/models/transformer.py --out transformer.pt [--width 64 --heads 4 --layers 2 --seed 0]
    saddlescope train --model torchscript --model-file transformer.pt --data mnist --loss cross_entropy
    saddlescope invariance --model torchscript --model-file transformer.pt --data mnist --loss cross_entropy

Pre-norm blocks written out op by op (linear, matmul, softmax, layer_norm, gelu) rather than with
nn.TransformerEncoderLayer, whose inference fast path is one fused op on some versions: here every op
a batch could change is an op the taps and the invariance check can name (blocks.0.attn.qkv:linear,
blocks.0.attn:softmax, ...). Runs with Debian's python3-torch 1.13 and PyTorch 2.x; a file saved by a
newer PyTorch may not load in an older LibTorch.
"""
import argparse
import math

import torch
from torch import nn


class Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, t, c = x.shape
        h = self.heads
        q, k, v = self.qkv(x).reshape(n, t, 3, h, c // h).permute(2, 0, 3, 1, 4).unbind(0)  # (n, h, t, d)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(c // h)
        y = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.proj(y.transpose(1, 2).reshape(n, t, c))


class Mlp(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = Mlp(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Transformer(nn.Module):
    def __init__(self, tokens: int, features: int, width: int, heads: int, layers: int, classes: int):
        super().__init__()
        self.tokens, self.features = tokens, features
        self.embed = nn.Linear(features, width)
        self.position = nn.Parameter(torch.randn(tokens, width) * 0.02)
        self.blocks = nn.ModuleList([Block(width, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(x.shape[0], self.tokens, self.features)  # MNIST arrives as (N, 1, 28, 28)
        x = self.embed(x) + self.position
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x).mean(dim=1))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the .pt file to write")
    p.add_argument("--tokens", type=int, default=28, help="tokens per example (MNIST: 28 rows)")
    p.add_argument("--features", type=int, default=28, help="features per token (MNIST: 28 pixels)")
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--seed", type=int, default=0, help="seed of the initial weights")
    a = p.parse_args()
    if a.width % a.heads != 0:
        p.error(f"--width {a.width} must be a multiple of --heads {a.heads}")
    for name in ("tokens", "features", "width", "heads", "layers", "classes"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be at least 1")
    torch.manual_seed(a.seed)
    model = Transformer(a.tokens, a.features, a.width, a.heads, a.layers, a.classes)
    torch.jit.save(torch.jit.script(model), a.out)


if __name__ == "__main__":
    main()
