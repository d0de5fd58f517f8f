#!/usr/bin/env python3
"""TorchScript modules for tests/trainer/torchscript_test.cpp, written into DIR.

    /usr/bin/python3 tests/trainer/make_modules.py DIR FEATURES CLASSES

good ones: classifier.pt (FEATURES -> 16 -> CLASSES logits), module_loss.pt (an autoencoder with its own
scripted loss), convnet.pt (two convolutions, one strided, one grouped and dilated; FEATURES = 24); for
tests/trainer/invariance_test.cpp, elementwise.pt (relu(x·w + b) per element, each op correctly rounded:
batch-invariant by construction) and split_sum.pt (a row sum split in two halves when the batch has more than one row:
the reduction order depends on the batch, as a split-K kernel's does); conv_lists.pt (FEATURES = 24: a
functional conv2d with one-element stride and padding lists); linear_f64.pt (a linear of the root's own
weight, in float64 when the batch has more than one row). Bad ones, each refused before a run directory exists: wrong_input.pt (expects 10
features), no_params.pt, float32_only.pt (casts its input to float32: refuses float64 runs),
tuple_out.pt (forward returns a tuple).
"""
import sys

import torch
from torch import nn


class Classifier(nn.Module):
    def __init__(self, features: int, classes: int):
        super().__init__()
        self.fc1 = nn.Linear(features, 16)
        self.fc2 = nn.Linear(16, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(torch.flatten(x, 1))))


class ModuleLoss(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.fc1 = nn.Linear(features, 8)
        self.fc2 = nn.Linear(8, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.fc2(torch.relu(self.fc1(x))))

    @torch.jit.export
    def loss(self, prediction: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        return (prediction - target.reshape(prediction.shape)).abs().mean()


class ConvNet(nn.Module):
    """Rows of 24 values as 1x4x6 images: a strided, padded conv, a grouped dilated one, a linear head."""

    def __init__(self, features: int):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, stride=(1, 2), padding=1)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=2, dilation=2, groups=2)
        self.head = nn.Linear(4 * 4 * 3, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.reshape(-1, 1, 4, 6)
        x = torch.tanh(self.conv1(x))
        x = torch.relu(self.conv2(x))
        return torch.sigmoid(self.head(torch.flatten(x, 1)))


class Elementwise(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.scale = nn.Parameter(torch.randn(features))
        self.shift = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x * self.scale + self.shift)


class SplitSum(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.w = nn.Parameter(torch.randn(features))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * self.w
        half = h.size(1) // 2
        if h.size(0) > 1:
            y = h[:, :half].sum(1) + h[:, half:].sum(1)
        else:
            y = h.sum(1)
        return h + y.unsqueeze(1)  # a prediction of the input's shape


class ConvLists(nn.Module):
    """A functional conv2d given one-element stride and padding lists (one value for both axes)."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(1, 1, 3, 3) * 0.3)
        self.bias = nn.Parameter(torch.zeros(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.conv2d(x.reshape(-1, 1, 4, 6), self.weight, self.bias, [1], [1])
        return torch.sigmoid(torch.flatten(y, 1))


class LinearF64InBatches(nn.Module):
    """A parameter-free-named linear (its weight is the root's own) run in float64 when the batch has
    more than one row: the first op that differs is `linear`, whose mm the taps evaluate."""

    def __init__(self, features: int):
        super().__init__()
        self.w = nn.Parameter(torch.randn(features, features) * 0.2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.size(0) > 1:
            return torch.nn.functional.linear(x.double(), self.w.double()).float()
        return torch.nn.functional.linear(x, self.w)


class WrongInput(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(10, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class NoParams(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)


class Float32Only(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x.float())


class TupleOut(nn.Module):
    def __init__(self, features: int):
        super().__init__()
        self.fc = nn.Linear(features, features)

    def forward(self, x: torch.Tensor):
        y = self.fc(x)
        return y, y


def main() -> None:
    out, features, classes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    torch.manual_seed(0)
    for name, module in [("classifier", Classifier(features, classes)), ("module_loss", ModuleLoss(features)),
                         ("convnet", ConvNet(features)), ("elementwise", Elementwise(features)),
                         ("split_sum", SplitSum(features)), ("conv_lists", ConvLists()),
                         ("linear_f64", LinearF64InBatches(features)),
                         ("wrong_input", WrongInput()), ("no_params", NoParams()),
                         ("float32_only", Float32Only(features)), ("tuple_out", TupleOut(features))]:
        torch.jit.save(torch.jit.script(module), f"{out}/{name}.pt")


if __name__ == "__main__":
    main()
