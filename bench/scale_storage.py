"""Measure what storing block scales as f16 (libvt's choice) costs against f32 scales.

For each weight matrix: relative RMS error ||dequant(W) - W|| / ||W|| of
  * f32 scales: scale = absmax/127 (INT8) or absmax/448 (FP8) in float32, computed here
    with numpy (+ ml_dtypes for E4M3), the textbook math;
  * libvt:      pyvt.ops.prepack_* then unpack() (f16 scales rounded up, per-row 2^e).
Weights: a seeded Gaussian with 1% x20 outliers, and every linear weight of a real
checkpoint when one is given (a .safetensors file with BF16/F16/F32 tensors).

    python bench/scale_storage.py [model.safetensors ...]
"""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np

from pyvt import ops

try:
    import ml_dtypes
except ImportError:  # pragma: no cover
    sys.exit("needs ml_dtypes (pip install ml_dtypes)")


def f32_scale_dequant(w: np.ndarray, fmt: str, block: int) -> np.ndarray:
    out, k = w.shape
    wb = w.reshape(out, k // block, block)
    if fmt == "int8":
        s = (np.abs(wb).max(axis=2, keepdims=True) / np.float32(127)).astype(np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(s > 0, np.clip(np.rint(wb / s), -127, 127), 0)
    else:
        s = (np.abs(wb).max(axis=2, keepdims=True) / np.float32(448)).astype(np.float32)
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(s > 0, (wb / s).astype(ml_dtypes.float8_e4m3fn).astype(np.float32), 0)
    return (q * s).reshape(out, k).astype(np.float32)


def rel(a: np.ndarray, w: np.ndarray) -> float:
    a64, w64 = a.astype(np.float64), w.astype(np.float64)
    return float(np.linalg.norm(a64 - w64) / np.linalg.norm(w64))


def measure(w: np.ndarray) -> dict:
    res = {}
    for fmt, block, prep in (("int8", 32, ops.prepack_int8_blocked), ("fp8", 16, ops.prepack_fp8_blocked)):
        if w.shape[1] % block:
            continue
        with prep(w, block_size=block) as p:
            ours = p.unpack()
            nbytes = p.nbytes
        ref = f32_scale_dequant(w, fmt, block)
        res[fmt] = {"f32_scales": rel(ref, w), "f16_scales": rel(ours, w),
                    "bytes_per_weight_f16": nbytes / w.size,
                    "bytes_per_weight_f32": 1 + 4 / block}
    return res


def read_safetensors(path: Path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        base = 8 + n
    data = np.memmap(path, dtype=np.uint8, mode="r")
    for name, meta in header.items():
        if name == "__metadata__" or len(meta["shape"]) != 2 or not name.endswith("proj.weight"):
            continue
        a, b = meta["data_offsets"]
        raw = np.asarray(data[base + a: base + b])
        dt = {"BF16": ml_dtypes.bfloat16, "F16": np.float16, "F32": np.float32}[meta["dtype"]]
        yield name, raw.view(dt).reshape(meta["shape"]).astype(np.float32)


def main(argv: list[str]) -> None:
    rng = np.random.default_rng(0)
    w = rng.standard_normal((4096, 4096)).astype(np.float32)
    mask = rng.random(w.shape) < 0.01
    w[mask] *= 20
    rows = [("gaussian 4096x4096 (1% x20 outliers)", measure(w))]
    for path in argv:
        acc: dict = {}
        for name, t in read_safetensors(Path(path)):
            for fmt, r in measure(t).items():
                a = acc.setdefault(fmt, {"f32_scales": [], "f16_scales": [], "n": []})
                a["f32_scales"].append(r["f32_scales"] ** 2 * t.size)
                a["f16_scales"].append(r["f16_scales"] ** 2 * t.size)
                a["n"].append(t.size)
                a["bytes_per_weight_f16"] = r["bytes_per_weight_f16"]
                a["bytes_per_weight_f32"] = r["bytes_per_weight_f32"]
        summary = {fmt: {"f32_scales": (sum(a["f32_scales"]) / sum(a["n"])) ** 0.5,
                         "f16_scales": (sum(a["f16_scales"]) / sum(a["n"])) ** 0.5,
                         "bytes_per_weight_f16": a["bytes_per_weight_f16"],
                         "bytes_per_weight_f32": a["bytes_per_weight_f32"]} for fmt, a in acc.items()}
        rows.append((f"{Path(path).parent.name}: all *proj weights (RMS over weights)", summary))
    print(f"{'weights':58} {'format':8} {'f32 scales':>11} {'f16 scales':>11} {'ratio':>8} {'B/w f32':>8} {'B/w f16':>8}")
    for label, res in rows:
        for fmt, r in res.items():
            print(f"{label:58} {fmt:8} {r['f32_scales']:11.6f} {r['f16_scales']:11.6f} "
                  f"{r['f16_scales'] / r['f32_scales']:8.5f} {r['bytes_per_weight_f32']:8.4f} "
                  f"{r['bytes_per_weight_f16']:8.4f}")


if __name__ == "__main__":
    main(sys.argv[1:])
