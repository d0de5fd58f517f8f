#!/usr/bin/env python3
"""Each byte value x = 0..255 as a float32 pixel two ways: x / 255 divided (the CPU's kernel: correctly
rounded) and x * fl32(1/255) (what PyTorch's CUDA div_ computes for a CPU-scalar divisor: "a *
reciprocal(b)", in float32), emulated here on the CPU with PyTorch; writes pixel-quotients.json.

  python3 pixel_quotients.py > pixel-quotients.json
"""
import json
from fractions import Fraction

import torch

x = torch.arange(256, dtype=torch.float32)
divided = x / 255.0
recip = torch.tensor(1.0, dtype=torch.float32) / torch.tensor(255.0, dtype=torch.float32)
multiplied = x * recip
# Correct rounding of the division, checked exactly: no float32 neighbour is nearer k/255.
up = torch.nextafter(divided, torch.tensor(2.0))
down = torch.nextafter(divided, torch.tensor(-1.0))
correct = all(abs(Fraction(divided[k].item()) - Fraction(k, 255)) <= min(abs(Fraction(up[k].item()) - Fraction(k, 255)),
                                                                       abs(Fraction(down[k].item()) - Fraction(k, 255)))
              for k in range(256))
bits = lambda t: t.view(torch.int32).to(torch.int64)
ulps = (bits(multiplied) - bits(divided)).tolist()
differ = [k for k in range(256) if ulps[k] != 0]
rel = max(abs(multiplied[k].item() - divided[k].item()) / divided[k].item() for k in differ)
print(json.dumps({
    "torch": torch.__version__,
    "division_correctly_rounded": correct,
    "bytes": 256,
    "bytes_that_differ": len(differ),
    "differing_bytes": differ,
    "ulp_differences": sorted(set(ulps)),
    "max_relative_difference": rel,
}, indent=1))
