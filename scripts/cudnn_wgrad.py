# An independent check of docs/rounding.md's cuDNN finding, with PyTorch alone (no saddlescope code):
# float32 weight gradients of PredNet-shaped 3x3 convolutions (cuDNN on with each algorithm policy, and
# off), against float64 on the CPU (exact enough here: products of floats are exact in float64, the
# sums carry far less error than float32's bound). Per case: the share of elements beyond
# gamma_n * sum|x g| (n = batch * positions), the largest error/bound, and the elements whose every
# product is exactly zero but whose float32 result is not. Inputs are ReLU outputs (half zero);
# output gradients are dense or 5% dense (as after ReLU masks).
#   python3 scripts/cudnn_wgrad.py        (needs a CUDA device; 8 s on the H200 host)
import torch, torch.nn.functional as F
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
cases = [("l1.conv_ahat", 4, 32, 32, 32, 32), ("l2.conv_a", 4, 64, 32, 32, 64), ("l2.conv_ahat", 4, 64, 16, 16, 64),
         ("l3.conv_a", 4, 128, 16, 16, 128), ("l3.conv_ahat", 4, 128, 8, 8, 128), ("l0.lstm", 4, 35, 64, 64, 4)]
for cudnn in (True, False):
  for det in (False, True):
    for bench in (False, True):
      if not cudnn and (det or bench): continue
      torch.backends.cudnn.enabled = cudnn
      torch.backends.cudnn.deterministic = det
      torch.backends.cudnn.benchmark = bench
      for density in (1.0, 0.05):
        for name, N, C, H, W, O in cases:
          g0 = torch.Generator().manual_seed(1)
          x = torch.relu(torch.randn(N, C, H, W, generator=g0)).cuda()
          g = (torch.randn(N, O, H, W, generator=g0) * (torch.rand(N, O, H, W, generator=g0) < density)).cuda()
          w = torch.randn(O, C, 3, 3, generator=g0).cuda().requires_grad_(True)
          F.conv2d(x, w, padding=1).backward(g)
          xd, gd = x.double().cpu(), g.double().cpu()
          ex = torch.nn.grad.conv2d_weight(xd, w.shape, gd, padding=1)
          ab = torch.nn.grad.conv2d_weight(xd.abs(), w.shape, gd.abs(), padding=1)
          n = N * H * W
          gamma = n * 2.0**-24 / (1 - n * 2.0**-24)
          err = (w.grad.double().cpu() - ex).abs()
          beyond = (err > gamma * ab).double().mean().item()
          ratio = (err / (gamma * ab)).nan_to_num(0, posinf=1e300).max().item()
          zero_nz = ((ab == 0) & (w.grad.cpu() != 0)).sum().item()
          print(f"cudnn={cudnn:d} det={det:d} bench={bench:d} density={density:<4} {name:13s} beyond={beyond:.4f} "
                f"max err/bound={ratio:.3g} exact-zero-but-observed-nonzero={zero_nz}", flush=True)
