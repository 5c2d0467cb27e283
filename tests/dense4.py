"""Shared by tests/test_int4.py and tests/test_int4_min.py: error measures for the 4-bit
linears, and the check that every CPU level the machine has (VT_ISA) gives the float64
reference's results and the same packing."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from pyvt import ops

# Shapes (out, in, K-block) and batch sizes of the every-level check.
ISA_SHAPES = ((300, 545, 32), (40, 96, 16), (17, 1000, 128))
ISA_MS = (1, 2, 4, 7, 8, 9, 130)


def rel_err(y, ref, scale=None):
    """max |y - ref| over `scale` (default max |ref|). The linears pass the magnitude of the
    products, max(|x|·|W|ᵀ), so cancelling sums (one output of K = 32) do not inflate it."""
    ref = np.asarray(ref, np.float64)
    scale = np.max(np.abs(ref)) if scale is None else scale
    return float(np.max(np.abs(np.asarray(y, np.float64) - ref)) / max(scale, 1e-30))


def mag(x, wd, bias=None):
    """max over outputs of sum_k |x_k w_k| (+ |bias|): the scale of a dot product's rounding."""
    v = np.abs(np.asarray(x, np.float64)) @ np.abs(np.asarray(wd, np.float64)).T
    return float(np.max(v + (0 if bias is None else np.abs(bias))))


# Run at one VT_ISA level in a fresh process: pack, unpack and run linear + swiglu at every
# shape and batch size; everything goes to an .npz for the parent to check.
_ISA_SCRIPT = r"""
import sys
import numpy as np
from pyvt import ops
prepack, linear, swiglu = (getattr(ops, n) for n in sys.argv[2:5])
shift = float(sys.argv[5])
rng = np.random.default_rng(22)
res = {"isa": ops.cpu_isa()}
for out, k, block in %r:
    w = (rng.standard_normal((out, k)) * 0.05 + shift).astype(np.float32)
    u = (rng.standard_normal((out, k)) * 0.05).astype(np.float32)
    b = rng.standard_normal(out).astype(np.float32)
    p, q = prepack(w, block_size=block), prepack(u, block_size=block)
    res[f"w{out}"], res[f"u{out}"] = p.unpack(), q.unpack()
    for m in %r:
        x = rng.standard_normal((m, k)).astype(np.float32)
        res[f"x{out}_{m}"] = x
        res[f"y{out}_{m}"] = linear(x, p, b)
        res[f"g{out}_{m}"] = swiglu(x, p, q)
    res[f"b{out}"] = b
np.savez(sys.argv[1], **res)
""" % (ISA_SHAPES, ISA_MS)


def check_every_isa_level(tmp_path, prepack: str, linear: str, swiglu: str, *, shift: float = 0.0,
                          tol_linear: float, tol_swiglu: float) -> None:
    """ops.<prepack> / <linear> / <swiglu> at every CPU level the machine has, each in its own
    process: the packed values are the same at every level, and the outputs match float64
    math on them within the tolerances. Skips (after checking) when the CPU lacks a level."""
    native = ops.cpu_isa()
    order = ["generic", "avx2", "avx512"]
    levels = order[: order.index(native) + 1] if native in order else ["generic"]
    packed = {}
    for lvl in levels:
        path = tmp_path / f"{lvl}.npz"
        r = subprocess.run([sys.executable, "-c", _ISA_SCRIPT, str(path), prepack, linear, swiglu, str(shift)],
                           env=dict(os.environ, VT_ISA=lvl), capture_output=True, text=True, timeout=900,
                           cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        with np.load(path) as z:
            res = {key: z[key] for key in z.files}
        assert str(res["isa"]) == lvl
        for out, _, _ in ISA_SHAPES:
            wd, ud = res[f"w{out}"].astype(np.float64), res[f"u{out}"].astype(np.float64)
            packed.setdefault(out, res[f"w{out}"])
            assert np.array_equal(res[f"w{out}"], packed[out])  # packing is ISA-independent
            for m in ISA_MS:
                x = res[f"x{out}_{m}"].astype(np.float64)
                g = x @ wd.T
                G, U = mag(x, wd, res[f"b{out}"]), mag(x, ud)
                assert rel_err(res[f"y{out}_{m}"], g + res[f"b{out}"], G) < tol_linear, (lvl, out, m)
                assert rel_err(res[f"g{out}_{m}"], g / (1 + np.exp(-g)) * (x @ ud.T), G * U) < tol_swiglu, \
                    (lvl, out, m)
    if len(levels) < 3:
        pytest.skip(f"this CPU only has {native}: {levels} checked")
