"""PyTorch PredNet step time, the peers of bench_prednet (docs/benchmarks.md).

The same network as trainer/prednet.cpp (stacks 1-32-64-128, 3x3, nt = 10, ConvLSTM with separate
i/f/o/c convolutions, L0 loss, Adam), written the plain way in Python. Random frames: the step time
does not depend on the pixels. MODE:
  eager                  the step as written; Adam(foreach) as PyTorch defaults to
  graph                  the whole step (forward, backward, Adam(capturable)) captured by hand as one CUDA
                         graph and replayed (PyTorch's "whole network capture" recipe)
  compile                torch.compile(model) (Inductor, default mode), Adam(fused=True)
  compile-reduce-overhead  torch.compile(model, mode="reduce-overhead") (Inductor's kernels replayed as
                         CUDA graphs), Adam(fused=True)
The compile modes compile in the warm-up, from an empty Inductor cache of their own (cold): that time is
reported apart. Prints one markdown row: | device | batch | pytorch <version> <mode> | threads | min |
median | max | compile s | (ms/step).
Usage: python3 bench/prednet_pytorch.py DEVICE BATCH THREADS STEPS REPEATS [MODE]
"""
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class PredNet(nn.Module):
    def __init__(self, a=(1, 32, 64, 128), r=(1, 32, 64, 128), k=3):
        super().__init__()
        self.a, self.r, n = a, r, len(a)
        conv = lambda i, o: nn.Conv2d(i, o, k, padding=k // 2)
        self.conv_a = nn.ModuleList([conv(2 * a[l - 1], a[l]) if l else nn.Identity() for l in range(n)])
        gates_in = [2 * a[l] + r[l] + (r[l + 1] if l + 1 < n else 0) for l in range(n)]
        self.gates = nn.ModuleList([nn.ModuleList([conv(gates_in[l], r[l]) for _ in range(4)]) for l in range(n)])
        self.conv_ahat = nn.ModuleList([conv(r[l], a[l]) for l in range(n)])
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.zeros_(m.bias)

    def forward(self, x):  # x: (B, T, 1, H, W) -> L0 loss
        b, frames, _, h, w = x.shape
        n = len(self.a)
        e = [x.new_zeros(b, 2 * self.a[l], h >> l, w >> l) for l in range(n)]
        r = [x.new_zeros(b, self.r[l], h >> l, w >> l) for l in range(n)]
        c = [x.new_zeros(b, self.r[l], h >> l, w >> l) for l in range(n)]
        loss = 0
        for t in range(frames):
            for l in reversed(range(n)):
                parts = [e[l], r[l]]
                if l + 1 < n:
                    parts.append(F.interpolate(r[l + 1], scale_factor=2, mode="nearest"))
                z = torch.cat(parts, 1)
                gi, gf, go, gc = self.gates[l]
                c[l] = torch.sigmoid(gf(z)) * c[l] + torch.sigmoid(gi(z)) * torch.tanh(gc(z))
                r[l] = torch.sigmoid(go(z)) * torch.tanh(c[l])
            for l in range(n):
                ahat = F.relu(self.conv_ahat[l](r[l]))
                if l == 0:
                    ahat = ahat.clamp(max=1.0)
                    a = x[:, t]
                else:
                    a = F.max_pool2d(F.relu(self.conv_a[l](e[l - 1])), 2)
                e[l] = torch.cat([F.relu(a - ahat), F.relu(ahat - a)], 1)
                if l == 0 and t > 0:
                    loss = loss + e[0].mean() / (frames - 1)
        return loss


def whole_step_graph(model, opt, x, warmup):
    """The step captured as one CUDA graph after `warmup` eager steps on a side stream; returns replay."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(warmup):
            opt.zero_grad(set_to_none=True)
            model(x).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)  # the captured backward allocates the grads; replays rewrite them
    with torch.cuda.graph(graph):
        model(x).backward()
        opt.step()
    return graph.replay


def main():
    device, batch, threads, steps, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    mode = sys.argv[6] if len(sys.argv) > 6 else "eager"
    modes = ("eager", "graph", "compile", "compile-reduce-overhead")
    if mode not in modes:
        sys.exit(f"prednet_pytorch.py: MODE must be one of {', '.join(modes)}, got '{mode}'")
    if mode != "eager" and not device.startswith("cuda"):
        sys.exit(f"prednet_pytorch.py: MODE {mode} needs a CUDA device")
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    model = PredNet().to(device)
    x = torch.rand(batch, 10, 1, 64, 64, device=device)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)

    compile_s = ""
    if mode == "graph":
        opt = torch.optim.Adam(model.parameters(), lr=1e-3, capturable=True)
        step = whole_step_graph(model, opt, x, 3)
        step()
    else:
        if mode.startswith("compile"):
            opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=True)
            net = torch.compile(model, mode="reduce-overhead" if mode.endswith("reduce-overhead") else "default")
        else:
            opt = torch.optim.Adam(model.parameters(), lr=1e-3)
            net = model

        def step():
            opt.zero_grad(set_to_none=True)
            net(x).backward()
            opt.step()

        t0 = time.perf_counter()
        for _ in range(3):  # compiles (compile modes), records the CUDA graphs (reduce-overhead)
            step()
        sync()
        if mode.startswith("compile"):
            compile_s = f" {time.perf_counter() - t0:.1f} |"
    times = []
    for _ in range(repeats):
        sync()
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        times.append((time.perf_counter() - t0) * 1e3 / steps)
    print(f"| {device} | {batch} | pytorch {torch.__version__} {mode} | {threads} | {min(times):.2f} | "
          f"{statistics.median(times):.2f} | {max(times):.2f} |{compile_s}")


if __name__ == "__main__":
    main()
