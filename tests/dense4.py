"""Shared by tests/test_int4.py and tests/test_int4_min.py: error measures for the 4-bit
linears, the check that every CPU level the machine has (VT_ISA) gives the float64
reference's results and the same packing, and the CUDA checks (device linear against the CPU
linear of the same packed weight; run on a GPU, skip without one)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from pyvt import ops

from int16_ref import int16_gemm_applies, round_x16

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
"""  # % (shapes, ms)


def check_every_isa_level(tmp_path, prepack: str, linear: str, swiglu: str, *, shift: float = 0.0,
                          tol_linear: float, tol_swiglu: float, shapes=ISA_SHAPES) -> None:
    """ops.<prepack> / <linear> / <swiglu> at every CPU level the machine has, each in its own
    process: the packed values are the same at every level, and the outputs match float64
    math on them (on AVX2, x rounded as the integer GEMM rounds it: tests/int16_ref.py) within
    the tolerances. Skips (after checking) when the CPU lacks a level."""
    native = ops.cpu_isa()
    order = ["generic", "avx2", "avx512"]
    levels = order[: order.index(native) + 1] if native in order else ["generic"]
    if ops.cpu_vnni():
        levels.append("avx512-novnni")  # the f32 kernels CPUs without VNNI + VBMI run
    fmt = "int4-min" if "min" in prepack else ("mxfp4" if "mxfp4" in prepack else "int4")
    packed = {}
    for lvl in levels:
        path = tmp_path / f"{lvl}.npz"
        r = subprocess.run([sys.executable, "-c", _ISA_SCRIPT % (tuple(shapes), ISA_MS), str(path), prepack, linear,
                            swiglu, str(shift)],
                           env=dict(os.environ, VT_ISA=lvl), capture_output=True, text=True, timeout=900,
                           cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        with np.load(path) as z:
            res = {key: z[key] for key in z.files}
        assert str(res["isa"]) == lvl.split("-")[0]
        for out, _, block in shapes:
            wd, ud = res[f"w{out}"].astype(np.float64), res[f"u{out}"].astype(np.float64)
            packed.setdefault(out, res[f"w{out}"])
            assert np.array_equal(res[f"w{out}"], packed[out])  # packing is ISA-independent
            for m in ISA_MS:
                x = res[f"x{out}_{m}"]
                if int16_gemm_applies(fmt, m, lvl, block):  # the AVX2 integer GEMM's rounding of x
                    x = round_x16(x, block, fmt)
                x = x.astype(np.float64)
                g = x @ wd.T
                G, U = mag(x, wd, res[f"b{out}"]), mag(x, ud)
                assert rel_err(res[f"y{out}_{m}"], g + res[f"b{out}"], G) < tol_linear, (lvl, out, m)
                assert rel_err(res[f"g{out}_{m}"], g / (1 + np.exp(-g)) * (x @ ud.T), G * U) < tol_swiglu, \
                    (lvl, out, m)
    if len(levels) < 3:
        pytest.skip(f"this CPU only has {native}: {levels} checked")
    if not ops.cpu_vnni():
        pytest.skip(f"this CPU has no VNNI + VBMI (or VT_ISA hides them): {levels} checked")


# ---- CUDA: the W4A16 GEMV (m <= 8) and GEMM (m > 8) against the CPU ---------------------------

# (out, in, K-block): every block size (16: two scales per 16-byte chunk on the device), K not
# a multiple of the block (a short last block) nor of 32, K past one GEMV staging chunk.
CUDA_SHAPES = ((300, 576, 32), (37, 100, 16), (130, 1028, 128), (64, 333, 64), (96, 9000, 32))
CUDA_MS = (1, 2, 4, 5, 8, 9, 64, 130)


def check_cuda_matches_cpu(prepack: str, linear: str, swiglu: str, *, shift: float = 0.0) -> None:
    """One weight packed twice (the host packer is the same for both, so the numbers are the
    same), on the CPU and on cuda:0: the device linear (bias + GELU, no activation with W4A8,
    SwiGLU with both biases) equals the CPU linear within the device kernels' rounding, scaled
    by the magnitude of the products: 2e-5 for the GEMV (f32 inputs, f32 sums in another
    order), 3e-4 for the GEMM (inputs as two BF16 numbers, ~16 bits)."""
    pk, lin, sw = getattr(ops, prepack), getattr(ops, linear), getattr(ops, swiglu)
    for out, k, block in CUDA_SHAPES:
        rng = np.random.default_rng(out * 7 + k)
        w = (rng.standard_normal((out, k)) * 0.05 + shift).astype(np.float32)
        u = (rng.standard_normal((out, k)) * 0.05 + shift).astype(np.float32)
        b, c = (rng.standard_normal(out) * 0.1).astype(np.float32), (rng.standard_normal(out) * 0.1).astype(np.float32)
        with pk(w, block_size=block, device="cpu") as pc, pk(u, block_size=block, device="cpu") as qc, \
                pk(w, block_size=block, device="cuda") as pg, pk(u, block_size=block, device="cuda") as qg:
            assert pg.device == "cuda:0" and pc.device == "cpu"  # a device weight names its GPU
            wd, ud = pc.unpack().astype(np.float64), qc.unpack().astype(np.float64)
            assert np.array_equal(pg.unpack(), pc.unpack())
            for m in CUDA_MS:
                tol = 2e-5 if m <= 8 else 3e-4
                if int16_gemm_applies("int4-min", m) and "min" in prepack:  # the CPU rounds x to int16 (AVX2)
                    tol = max(tol, 1e-4)
                elif int16_gemm_applies("int4", m, kb=block):  # to one byte per block of 32: ~1/250 of its largest |x|
                    tol = max(tol, 1e-2)
                x = rng.standard_normal((m, k)).astype(np.float32)
                G, U = mag(x, wd, b), mag(x, ud, c)
                got, want = lin(x, pg, b, gelu=True), lin(x, pc, b, gelu=True)
                assert rel_err(got, want, G) < tol, (out, k, block, m, "gelu")
                got, want = lin(x, pg, w4a8=True), lin(x, pc, w4a8=True)
                assert rel_err(got, want, G) < tol, (out, k, block, m, "w4a8")
                got, want = sw(x, pg, qg, (b, c)), sw(x, pc, qc, (b, c))
                assert rel_err(got, want, G * U) < 2 * tol, (out, k, block, m, "swiglu")


def check_device_placement(prepack: str) -> None:
    """AUTO puts the weight on a usable GPU (the 4-bit formats have CUDA kernels), else on the
    CPU; device="cuda" without a usable GPU is BackendUnavailable, naming the device."""
    from pyvt.errors import BackendUnavailable

    pk = getattr(ops, prepack)
    w = np.ones((4, 64), np.float32)
    with pk(w, device="auto") as p:
        assert p.device == ("cuda:0" if ops.cuda_available() else "cpu")
    if ops.cuda_available():
        with pk(w, device="cuda") as p:
            assert p.device == "cuda:0"
    else:
        with pytest.raises(BackendUnavailable, match="cuda"):
            pk(w, device="cuda")


# ---- the integer GEMVs' int16 sums at their bound ---------------------------------------------

_BOUND_SCRIPT = r"""
import sys
import numpy as np
from pyvt import ops
prepack, linear, fmt = getattr(ops, sys.argv[2]), getattr(ops, sys.argv[3]), sys.argv[4]
res = {"isa": ops.cpu_isa()}
for k in (62, 64, 94):  # a short last block of 15 pairs, whole blocks, both
    w = np.zeros((32, k), np.float32)
    for r in range(32):  # every weight at the code whose product with x = +max is largest
        if fmt == "int4":  # q = 7 (u = 15), one -8 per block for the scale
            w[r] = 7.0
            w[r, ::32] = -8.0
        elif fmt == "int4-min":  # u = 15 (min 0 at the block's first weight)
            w[r] = 15.0
            w[r, ::32] = 0.0
        else:  # mxfp4: +6 (v + 12 = 24 in the VNNI / AVX2 tables) or -6, by row
            w[r] = 6.0 if r % 2 == 0 else -6.0
    p = prepack(w)
    for m in (1, 3):
        x = np.ones((m, k), np.float32)  # x rounds to its largest code exactly
        res[f"w{k}"], res[f"y{k}_{m}"] = p.unpack(), linear(x, p)
np.savez(sys.argv[1], **res)
"""


def check_sums_at_their_bound(tmp_path, prepack: str, linear: str, fmt: str) -> None:
    """Every weight at its largest code times x at its largest (all ones: rounded exactly), in
    whole K-blocks and in a short last block, at every CPU level the machine has: the GEMVs'
    int16 partial sums must not wrap (they did in the AVX2 int4 / int4-min GEMVs' short last
    block, up to 15 pairs in one int16 lane, before 2026-11-28)."""
    native = ops.cpu_isa()
    order = ["generic", "avx2", "avx512"]
    levels = order[: order.index(native) + 1] if native in order else ["generic"]
    if ops.cpu_vnni():
        levels.append("avx512-novnni")
    for lvl in levels:
        path = tmp_path / f"bound-{lvl}.npz"
        r = subprocess.run([sys.executable, "-c", _BOUND_SCRIPT, str(path), prepack, linear, fmt],
                           env=dict(os.environ, VT_ISA=lvl), capture_output=True, text=True, timeout=600, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        with np.load(path) as z:
            for k in (62, 64, 94):
                wd = z[f"w{k}"].astype(np.float64)
                for m in (1, 3):
                    want = np.ones((m, k)) @ wd.T
                    assert rel_err(z[f"y{k}_{m}"], want) < 1e-6, (lvl, k, m)


# ---- a tiny Llama in a 4-bit format against the reference of its quantized weights ----------

MODEL_PROMPT = [1, 17, 42, 5, 9, 33, 60, 2, 71, 8, 15, 44]


def check_model_matches_reference(tmp_path, fmt: str, prepack: str, tie: bool) -> np.ndarray:
    """weight_format=fmt: every layer linear is ops.<prepack>'s weight, lm_head INT8 blocked-32;
    the forward pass (prefill, and decode step by step: the GEMV path) equals the float64
    reference run on exactly those dequantized weights, and x rounded as the kernels round it
    where the integer kernels run (tests/int16_ref.py; the linear tests pin that math exactly).
    AUTO keeps the model on the CPU (the 4-bit formats run there; int4 / int4-min also on CUDA
    builds' GPUs, which these checks leave to tests/test_cuda.py). Returns the logits."""
    import llama_ref as R
    from pyvt import _model

    cfg = R.TinyConfig(hidden=96, intermediate=160, heads=2, kv_heads=1, tie=tie)
    w = R.write_checkpoint(tmp_path, cfg, seed=5)
    wq = dict(w)
    pk = getattr(ops, prepack)
    for k, v in w.items():
        if k.endswith(R.LINEAR_SUFFIXES):
            with pk(np.ascontiguousarray(v, np.float32)) as p:
                wq[k] = p.unpack()
    head = w.get("lm_head.weight", w["model.embed_tokens.weight"])
    with ops.prepack_int8_blocked(np.ascontiguousarray(head, np.float32)) as p:
        wq["lm_head.weight"] = p.unpack()
    rounds = int16_gemm_applies(fmt, 1)
    ref = R.reference_logits(wq, cfg, MODEL_PROMPT, round_x=(lambda h: round_x16(h, 32, fmt)) if rounds else None)
    # The f32 KV cache: exact math on the quantized weights.
    with _model.Model(str(tmp_path), weight_format=fmt, device="cpu", kv_cache="f32") as m:
        assert m.info["weight_format"] == fmt and m.info["block_size"] == 32 and m.info["device"] == "cpu"
        got = m.logits(MODEL_PROMPT)
        with m.new_session() as s:
            _, first = s.prefill(MODEL_PROMPT[:1], logits="last")
            rows = [first]
            for t in MODEL_PROMPT[1:]:
                rows.append(s.decode(t, want_logits=True)[1])
    scale = np.abs(ref).max()
    # x rounded in f32 here and in f64 there: an element at a rounding boundary may go either
    # way; through the layers, about 1e-4 of the logits.
    tol = 3e-4 if rounds else 1e-4
    assert np.abs(got - ref).max() / scale < tol
    assert np.abs(np.stack(rows) - ref).max() / scale < tol
    assert (got.argmax(-1) == ref.argmax(-1)).all()
    return got
