#!/usr/bin/env python3
"""A small GPT-style transformer for next-byte prediction (data moby-dick) as a TorchScript module.

    python3 examples/models/gpt.py --out gpt.pt [--context 64 --width 64 --heads 4 --layers 2 --seed 0]
    saddlescope train --model torchscript --model-file gpt.pt --data moby-dick --loss cross_entropy

forward(x) takes (N, T) byte values (as floats, the way saddlescope's rows hold them) and returns
(N, T, 256) logits, position t predicting byte t + 1 from bytes 0..t. Pre-norm decoder blocks written out
op by op (linear, matmul, causal softmax, layer_norm, gelu) rather than with nn.TransformerDecoderLayer,
whose fast path is one fused op on some versions: every op the arithmetic could change is one the taps,
ophash and the invariance check can name (blocks.0.attn.qkv:linear, blocks.0.attn:softmax, ...).
Runs with Debian's python3-torch 1.13 and PyTorch 2.x; a file saved by a newer PyTorch may not load in
an older LibTorch.
"""
import argparse
import math

import torch
from torch import nn


class CausalAttention(nn.Module):
    def __init__(self, width: int, heads: int, context: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.register_buffer("future", torch.ones(context, context).triu(1).bool())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, t, c = x.shape
        h = self.heads
        q, k, v = self.qkv(x).reshape(n, t, 3, h, c // h).permute(2, 0, 3, 1, 4).unbind(0)  # (n, h, t, d)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(c // h)
        scores = scores.masked_fill(self.future[:t, :t], float("-inf"))
        y = torch.matmul(torch.softmax(scores, dim=-1), v)
        return self.proj(y.transpose(1, 2).reshape(n, t, c))


class Block(nn.Module):
    def __init__(self, width: int, heads: int, context: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attn = CausalAttention(width, heads, context)
        self.norm2 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm2(x))))


class Gpt(nn.Module):
    def __init__(self, vocabulary: int, context: int, width: int, heads: int, layers: int):
        super().__init__()
        self.embed = nn.Embedding(vocabulary, width)
        self.position = nn.Parameter(torch.randn(context, width) * 0.02)
        self.blocks = nn.ModuleList([Block(width, heads, context) for _ in range(layers)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocabulary)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        t = x.shape[1]
        h = self.embed(x.long()) + self.position[:t]
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the .pt file to write")
    p.add_argument("--context", type=int, default=64, help="the longest input (data moby-dick:context=T)")
    p.add_argument("--width", type=int, default=64)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--vocabulary", type=int, default=256, help="256: bytes")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial weights")
    a = p.parse_args()
    for name in ("context", "width", "heads", "layers", "vocabulary"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be at least 1")
    if a.width % a.heads != 0:
        p.error(f"--width {a.width} must be a multiple of --heads {a.heads}")
    torch.manual_seed(a.seed)
    model = Gpt(a.vocabulary, a.context, a.width, a.heads, a.layers)
    torch.jit.save(torch.jit.script(model), a.out)


if __name__ == "__main__":
    main()
