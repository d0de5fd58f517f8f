#!/usr/bin/env python3
"""A small ResNet for CIFAR-10 (32x32 colour images, 10 classes) as a TorchScript module.

    python3 examples/models/resnet.py --out resnet.pt [--width 16 --blocks 1 --seed 0]
    python3 examples/models/resnet.py --out constnet.pt --init constant    # ConstNet's symmetric start
    saddlescope train --model torchscript --model-file resnet.pt --data cifar10 --loss cross_entropy

Three stages of basic blocks (3x3 convolutions, batch norm, ReLU) at widths w, 2w, 4w, strided
convolutions between stages with 1x1 projections on the skip path, global average pooling and a
linear head: He et al.'s CIFAR ResNet (depth 6 * blocks + 2: ResNet-8 by default), small enough to train
on a laptop CPU.

--init constant is the constant initialisation of Blumenfeld, Gilboa and Soudry (ICML 2020, "ConstNet"):
every convolution and the head start with one value per layer (scaled by the fan-in), batch norm at
weight 1 and bias 0, so every channel of a layer is a bitwise copy of the others and stays one under
exact arithmetic: the gradient of each copy is the same. Only the arithmetic (or injected noise) can
break the symmetry. The input's three colour channels differ, so the first convolution's output
channels are copies, not its input channels.

Runs with Debian's python3-torch 1.13 and PyTorch 2.x; a file saved by a newer PyTorch may not load in
an older LibTorch.
"""
import argparse

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, inputs: int, outputs: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(inputs, outputs, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(outputs)
        self.conv2 = nn.Conv2d(outputs, outputs, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(outputs)
        self.skip = nn.Sequential()
        if stride != 1 or inputs != outputs:
            self.skip = nn.Sequential(nn.Conv2d(inputs, outputs, 1, stride, bias=False), nn.BatchNorm2d(outputs))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + self.skip(x))


class ResNet(nn.Module):
    def __init__(self, width: int, blocks: int, classes: int):
        super().__init__()
        self.stem = nn.Conv2d(3, width, 3, 1, 1, bias=False)
        self.bn = nn.BatchNorm2d(width)
        stages = []
        inputs = width
        for stage, outputs in enumerate((width, 2 * width, 4 * width)):
            for b in range(blocks):
                stages.append(Block(inputs, outputs, 2 if stage > 0 and b == 0 else 1))
                inputs = outputs
        self.stages = nn.Sequential(*stages)
        self.head = nn.Linear(inputs, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn(self.stem(x)))
        x = self.stages(x)
        return self.head(x.mean(dim=(2, 3)))


def constant_init(model: nn.Module, value: float) -> None:
    """ConstNet: every weight of a convolution or linear layer `value / fan_in`, biases 0, batch norm 1 and 0."""
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            fan_in = m.weight[0].numel()
            nn.init.constant_(m.weight, value / fan_in)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True, help="the .pt file to write")
    p.add_argument("--width", type=int, default=16, help="channels of the first stage (then 2w, 4w)")
    p.add_argument("--blocks", type=int, default=1, help="basic blocks per stage")
    p.add_argument("--classes", type=int, default=10)
    p.add_argument("--init", choices=("default", "constant"), default="default",
                   help="PyTorch's default initialisation (seeded), or ConstNet's constant one")
    p.add_argument("--value", type=float, default=1.0, help="--init constant: each weight is value / fan-in")
    p.add_argument("--seed", type=int, default=0, help="seed of the initial weights (--init default)")
    a = p.parse_args()
    for name in ("width", "blocks", "classes"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be at least 1")
    torch.manual_seed(a.seed)
    model = ResNet(a.width, a.blocks, a.classes)
    if a.init == "constant":
        constant_init(model, a.value)
    torch.jit.save(torch.jit.script(model), a.out)


if __name__ == "__main__":
    main()
