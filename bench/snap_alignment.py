#!/usr/bin/python3
"""Which 3x3 of a stride-2 5x5 / 7x7 (SAME pads) LatticeStride2AsymPadConvMaxPoolPattern should
keep under its Pad(bottom 1, right 1) + 3x3 stride 2 without pads: the taps that read the same
pixels (what --snap-weights transfer keeps) or the centre 3x3 (the kernel's centre moved one pixel,
as the pattern moves an unsnapped 3x3). Prints ||y' - y|| / ||y|| at the conv's output (no bias)
for white noise in [-1, 1) and the same noise box-filtered 5x5 (neighbouring pixels correlated).
    bench/snap_alignment.py MODEL.onnx:WEIGHT_NAME ...
"""
import sys

import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

torch.manual_seed(0)
for arg in sys.argv[1:]:
    path, name = arg.rsplit(":", 1)
    tensor = next(t for t in onnx.load(path).graph.initializer if t.name == name)
    w = torch.tensor(numpy_helper.to_array(tensor).copy())
    p = w.shape[-1] // 2
    x = torch.rand(4, w.shape[1], 64, 64) * 2 - 1
    smooth = F.avg_pool2d(F.pad(x, (2, 2, 2, 2), mode="replicate"), 5, 1)
    for kind, inp in (("white", x), ("smooth", smooth / smooth.pow(2).mean().sqrt())):
        y = F.conv2d(inp, w, stride=2, padding=p)
        cells = []
        for label, first in (("same pixels", p), ("centre", p - 1)):
            y3 = F.conv2d(F.pad(inp, (0, 1, 0, 1)), w[:, :, first:first + 3, first:first + 3], stride=2)
            cells.append(f"{label} (taps {first}-{first + 2}) {((y3 - y).norm() / y.norm()).item():.2f}")
        print(f"{path.split('/')[-1]} {name} {kind}: " + "; ".join(cells))
