#!/usr/bin/env python
"""Relative RMS weight error of 4-bit block-32 schemes on SmolLM2-135M's linears, to choose
INT4_BLOCKED's numerics (pack.cpp):

* Q4_0-style: d = m / -8 (m: the weight of largest |w|), q = round(w / d) in [-8, 7];
* Q4_1-style: scale and min per block (w ~ u * d + min, u in [0, 15]): 2 more bytes / 32;
* libvt int4: Q4_0's grid, d the least-squares best of a few candidates (prepack_int4_blocked).

    python bench/int4_scales.py [MODEL_DIR]   (default: the pulled SmolLM2)
"""
import sys
from pathlib import Path

import numpy as np
from safetensors.torch import load_file

from pyvt import ops


def q4_0(w):
    b = w.reshape(-1, 32).astype(np.float64)
    m = b[np.arange(len(b)), np.abs(b).argmax(1)][:, None]
    d = (m / -8).astype(np.float16).astype(np.float64)
    d[d == 0] = 1
    return (np.clip(np.round(b / d), -8, 7) * d).reshape(w.shape)


def q4_1(w):
    b = w.reshape(-1, 32).astype(np.float64)
    lo, hi = b.min(1, keepdims=True), b.max(1, keepdims=True)
    d = ((hi - lo) / 15).astype(np.float16).astype(np.float64)
    lo = lo.astype(np.float16).astype(np.float64)
    d[d == 0] = 1
    return (np.clip(np.round((b - lo) / d), 0, 15) * d + lo).reshape(w.shape)


def main():
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.home() / ".cache/pyvt/SmolLM2-135M-Instruct-bf16"
    t = load_file(str(root / "model.safetensors"))
    err = {"Q4_0-style (RTN, d = m/-8)": 0.0, "Q4_1-style (scale + min)": 0.0, "libvt int4": 0.0}
    ref = 0.0
    for name, w in t.items():
        if not name.endswith("proj.weight"):
            continue
        w = w.float().numpy()
        ref += float((w.astype(np.float64) ** 2).sum())
        for key, wd in (("Q4_0-style (RTN, d = m/-8)", q4_0(w)), ("Q4_1-style (scale + min)", q4_1(w)),
                        ("libvt int4", ops.prepack_int4_blocked(w).unpack())):
            err[key] += float(((wd - w) ** 2).sum())
    for k, v in err.items():
        print(f"{k:30s} relative RMS error {np.sqrt(v / ref):.4f}")


if __name__ == "__main__":
    main()
