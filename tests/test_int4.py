"""Dense 4-bit weights (VT_FORMAT_INT4_BLOCKED, weight_format="int4"): the stored values are
q · d per block with q an integer in [-8, 7], every linear (GEMV, GEMM, GELU, SwiGLU, W4A8)
against a float64 reference of exactly those values, odd shapes and a short last K-block,
NaN / Inf in x propagated like a dense matmul, and every CPU level (VT_ISA) on its own."""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

from pyvt import ops

from dense4 import (check_cuda_matches_cpu, check_device_placement, check_every_isa_level, check_model_matches_reference,
                    check_sums_at_their_bound, mag, rel_err)
from int16_ref import int16_gemm_applies, round_x16

MS = [1, 2, 3, 5, 8, 9, 17, 70]
# (out, in, block): tile tails, K odd, K not a multiple of the block, K < block, K > GEMM Kc.
SHAPES = [(1, 32, 32), (17, 33, 32), (40, 96, 16), (300, 545, 32), (5, 7, 32), (33, 1000, 128), (16, 258, 64)]
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def block_grid(wd, block):
    """Per row and block: the scale d with wd = q·d, q integer in [-8, 7] (asserted)."""
    out, k = wd.shape
    for r in range(out):
        for k0 in range(0, k, block):
            v = wd[r, k0:k0 + block].astype(np.float64)
            am = np.abs(v).max()
            if am == 0:
                continue
            # The largest |q| is 8 (the weight that maps to -8) or less after the scale search.
            # (the scale is signed: the extreme weight maps to -8).
            for d in [sg * am / qm for qm in range(8, 0, -1) for sg in (1, -1)]:
                q = v / d
                if np.allclose(q, np.rint(q), atol=1e-4) and q.min() >= -8 - 1e-4 and q.max() <= 7 + 1e-4:
                    break
            else:
                raise AssertionError(f"row {r}, block at {k0}: {v} is not q·d with integer q in [-8, 7]")


def q4_0_sse(w, block):
    """Squared error of plain Q4_0 rounding (d = m / -8) per row, the bound the search beats."""
    out, k = w.shape
    tot = 0.0
    for k0 in range(0, k, block):
        b = w[:, k0:k0 + block].astype(np.float64)
        m = b[np.arange(out), np.abs(b).argmax(1)][:, None]
        d = np.where(m == 0, 1.0, m / -8)
        tot += float(((np.clip(np.rint(b / d), -8, 7) * d - b) ** 2).sum())
    return tot


@pytest.mark.parametrize("out,k,block", SHAPES)
def test_values_are_int4_grid_and_beat_q4_0(out, k, block):
    rng = np.random.default_rng(out * 1000 + k)
    w = (rng.standard_normal((out, k)) * 0.05).astype(np.float32)
    w[0, 0] = 0.9  # an outlier block
    with ops.prepack_int4_blocked(w, block_size=block) as p:
        assert p.format == "int4" and p.block_size == block and p.shape == (out, k)
        tiles = -(-out // 16)
        wbytes = -(-(-(-k // 2) * 16) // 64) * 64
        end = wbytes + -(-k // block) * 16 * 2
        assert p.nbytes == tiles * (-(-end // 64) * 64) + tiles * 16 * 4
        wd = p.unpack()
    assert np.array_equal(wd, p_unpack_again(w, block))  # deterministic packing
    block_grid(wd, block)
    sse = float(((wd.astype(np.float64) - w) ** 2).sum())
    assert sse <= q4_0_sse(w, block) * 1.01


def p_unpack_again(w, block):
    with ops.prepack_int4_blocked(w, block_size=block) as p:
        return p.unpack()


def test_zero_rows_and_blocks():
    w = np.zeros((20, 70), np.float32)
    w[3, 40] = -1.5
    with ops.prepack_int4_blocked(w) as p:
        wd = p.unpack()
        y = ops.linear_int4(np.ones((2, 70), np.float32), p)
    assert wd[3, 40] == np.float32(-1.5) and np.count_nonzero(wd) == 1
    # Exact, or (AVX2: x = 1 rounded to one byte, 127 * f32(1 / 127)) within a few ulp.
    np.testing.assert_allclose(y, np.tile(wd.sum(1), (2, 1)), rtol=3e-7, atol=0)


@pytest.mark.parametrize("out,k,block", SHAPES)
def test_linears_match_float64_reference(out, k, block):
    rng = np.random.default_rng(7 + out + k)
    w = (rng.standard_normal((out, k)) * 0.05).astype(np.float32)
    u = (rng.standard_normal((out, k)) * 0.05).astype(np.float32)
    bias = rng.standard_normal(out).astype(np.float32)
    with ops.prepack_int4_blocked(w, block_size=block) as p, ops.prepack_int4_blocked(u, block_size=block) as q:
        wd, ud = p.unpack().astype(np.float64), q.unpack().astype(np.float64)
        for m in MS:
            x = rng.standard_normal((m, k)).astype(np.float32)
            xr = round_x16(x, block, "int4") if int16_gemm_applies("int4", m, kb=block) else x  # the x the kernel multiplies
            g = xr.astype(np.float64) @ wd.T
            G, U = mag(x, wd, bias), mag(x, ud)
            assert rel_err(ops.linear_int4(x, p, bias), g + bias, G) < 2e-6, m
            ref = 0.5 * (g + bias) * _erfc(-(g + bias) / math.sqrt(2.0))
            assert rel_err(ops.linear_int4(x, p, bias, gelu=True), ref, G) < 4e-6, m
            up = xr.astype(np.float64) @ ud.T
            ref = (g + bias) / (1 + np.exp(-(g + bias))) * up
            assert rel_err(ops.linear_swiglu_int4(x, p, q, (bias, None)), ref, G * U) < 4e-6, m
            s = (np.abs(x).max(1, keepdims=True) / np.float32(127)).astype(np.float32)
            xq = (np.clip(np.rint(x / s), -127, 127) * s).astype(np.float32)  # f32 math, as libvt
            xq = (round_x16(xq, block, "int4") if int16_gemm_applies("int4", m, kb=block) else xq).astype(np.float64)
            assert rel_err(ops.linear_int4(x, p, w4a8=True), xq @ wd.T, mag(xq, wd)) < 2e-6, m
        assert ops.linear_int4(x[0], p).shape == (out,)


def test_close_to_unquantized():
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((256, 512)) * 0.05).astype(np.float32)
    x = rng.standard_normal((4, 512)).astype(np.float32)
    with ops.prepack_int4_blocked(w) as p:
        y = ops.linear_int4(x, p)
    exact = x.astype(np.float64) @ w.T.astype(np.float64)
    err = np.linalg.norm(y - exact) / np.linalg.norm(exact)
    assert 0.02 < err < 0.12  # 4 bits: ~8 % weight error, not 0 and not garbage


@pytest.mark.parametrize("m", [1, 3, 17])
def test_nan_and_inf_propagate_like_a_dense_matmul(m):
    rng = np.random.default_rng(11)
    w = (rng.standard_normal((40, 70)) * 0.05).astype(np.float32)
    w[5, 10] = 0.0  # a zero weight meets the Inf: NaN there, as 0 · Inf
    with ops.prepack_int4_blocked(w) as p:
        wd = p.unpack().astype(np.float64)
        x = rng.standard_normal((m, 70)).astype(np.float32)
        x[0, 10] = np.inf
        x[-1, 3] = np.nan if m > 1 else x[-1, 3]
        y = ops.linear_int4(x, p)
    if int16_gemm_applies("int4", m):
        # The AVX2 integer kernels: a row holding a NaN or an infinity is NaN (docs/guide.md
        # "Numerics"); the other rows are exact math on their rounded x.
        assert np.isnan(y[[0, -1]]).all()
        if m > 2:
            ok = x[1:-1]
            assert rel_err(y[1:-1], round_x16(ok, 32, "int4").astype(np.float64) @ wd.T, mag(ok, wd)) < 2e-6
        return
    with np.errstate(invalid="ignore", over="ignore"):
        ref = x.astype(np.float64) @ wd.T
    assert np.array_equal(np.isnan(y), np.isnan(ref))
    assert np.array_equal(np.isposinf(y), np.isposinf(ref)) and np.array_equal(np.isneginf(y), np.isneginf(ref))
    fin = np.isfinite(ref)
    if fin.any():
        assert rel_err(y[fin], ref[fin], mag(np.nan_to_num(x, posinf=0, nan=0), wd)) < 2e-6


def test_bad_arguments():
    w = np.ones((4, 64), np.float32)
    with pytest.raises(ValueError, match="block_size"):
        ops.prepack_int4_blocked(w, block_size=48)
    bad = w.copy()
    bad[2, 5] = np.nan
    with pytest.raises(ValueError, match="row 2, column 5 is NaN"):
        ops.prepack_int4_blocked(bad)
    with ops.prepack_int4_blocked(w) as p, ops.prepack_int8_blocked(w) as q:
        with pytest.raises(TypeError):
            ops.linear_int4(np.ones(64, np.float32), q)
        with pytest.raises(ValueError):
            ops.linear_int4(np.ones(63, np.float32), p)
        with pytest.raises(TypeError):
            ops.linear_swiglu_int4(np.ones(64, np.float32), p, q)
        # int8's SwiGLU: the wrong packed type and unequal shapes named
        with pytest.raises(TypeError, match=r"linear_swiglu_int8 \(up\) expects a PackedInt8 .*got PackedInt4"):
            ops.linear_swiglu_int8(np.ones(64, np.float32), q, p)
        with ops.prepack_int8_blocked(np.ones((8, 64), np.float32)) as r:
            with pytest.raises(ValueError, match=r"gate shape \(4, 64\) != up shape \(8, 64\)"):
                ops.linear_swiglu_int8(np.ones(64, np.float32), q, r)


def test_device_placement():
    check_device_placement("prepack_int4_blocked")


@pytest.mark.cuda
@pytest.mark.skipif(not ops.cuda_available(), reason="no usable CUDA device")
def test_cuda_linears_match_cpu():
    check_cuda_matches_cpu("prepack_int4_blocked", "linear_int4", "linear_swiglu_int4")


def test_every_isa_level_matches_the_reference(tmp_path):
    check_every_isa_level(tmp_path, "prepack_int4_blocked", "linear_int4", "linear_swiglu_int4",
                          tol_linear=2e-6, tol_swiglu=4e-6)


_SAME_BITS_SCRIPT = r"""
import sys
import numpy as np
from pyvt import ops
fmt = sys.argv[2]
pk = {"int4": ops.prepack_int4_blocked, "int4-min": ops.prepack_int4_min_blocked, "int8": ops.prepack_int8_blocked,
      "mxfp4": ops.prepack_mxfp4}[fmt]
lin = {"int4": ops.linear_int4, "int4-min": ops.linear_int4_min, "int8": ops.linear_int8_w8a16,
       "mxfp4": ops.linear_mxfp4}[fmt]
sw = {"int4": ops.linear_swiglu_int4, "int4-min": ops.linear_swiglu_int4_min, "int8": ops.linear_swiglu_int8,
      "mxfp4": ops.linear_swiglu_mxfp4}[fmt]
# from 16 rows the VNNI GEMMs take groups of 16 (gemm_int8_vnni, gemm_int4_vnni,
# gemm_int4_min_vnni, gemm_mxfp4_vnni), the last rows as the fewer rows do
ms = (1, 2, 3, 4, 5, 9, 16, 37) if fmt == "int4" else (1, 2, 4, 5, 7, 13, 16, 37) if fmt == "int8" else (1, 2, 4, 5, 6, 7, 13, 16, 37)
rng = np.random.default_rng(5)
res = {}
shapes = ((16, 32, 32), (17, 33, 32), (300, 545, 32), (1536, 576, 32), (40, 7, 32), (33, 1000, 32),
          (64, 2048, 32), (31, 95, 32), (48, 200, 16), (40, 300, 128))
if fmt == "int8":  # K a multiple of the block
    shapes = ((16, 32, 32), (17, 64, 32), (300, 544, 32), (1536, 576, 32), (33, 1024, 64), (64, 2048, 32),
              (31, 96, 16), (48, 208, 16), (40, 256, 128))
for out, k, kb in shapes:
    if fmt in ("int4", "mxfp4") and kb != 32:
        continue  # int4 with other blocks keeps the f32 kernels on AVX-512; MXFP4 has blocks of 32 only
    w = (rng.standard_normal((out, k)) * 0.05).astype(np.float32)
    u = (rng.standard_normal((out, k)) * 0.05).astype(np.float32)
    b = rng.standard_normal(out).astype(np.float32)
    with pk(w, kb) as p, pk(u, kb) as q:
        for m in ms:
            x = (rng.standard_normal((m, k)) * 10.0 ** rng.uniform(-3, 3)).astype(np.float32)
            res[f"l{out}_{k}_{m}"] = lin(x, p, b)
            res[f"s{out}_{k}_{m}"] = sw(x, p, q, (b, None))
            if fmt != "int8":
                res[f"g{out}_{k}_{m}"] = lin(x, p, b, gelu=True)
            else:
                res[f"n{out}_{k}_{m}"] = lin(x[:, ::-1].copy(), p)
np.savez(sys.argv[1], isa=ops.cpu_isa(), **res)
"""


@pytest.mark.parametrize("fmt", ["int4", "int4-min", "int8", "mxfp4"])
def test_avx512_gives_the_avx2_bits(tmp_path, fmt):
    """int4 (block 32) on an AVX-512 CPU runs AVX2's integer kernels, its GEMV with VNNI + VBMI
    where the CPU has them (kernels_avx2.cpp, gemv_int4_vnni); int4-min, int8 and MXFP4, on a CPU
    with VNNI + VBMI, run linear_int4_min_vnni / linear_int8_vnni / linear_mxfp4_vnni for every m
    (all four from 16 rows: gemm_int8_vnni / gemm_int4_vnni / gemm_int4_min_vnni /
    gemm_mxfp4_vnni): every linear (SwiGLU too; 4-bit:
    GELU), the GEMV's m and the GEMM's (groups of 8 rows, of 16 from 16 rows, and remainders),
    short and odd K-blocks for the 4-bit formats, blocks of 16-128, equal to the AVX2 level's
    bit for bit, so a model decodes the same tokens on both."""
    import subprocess

    if ops.cpu_isa() != "avx512":
        pytest.skip(f"this CPU has {ops.cpu_isa()}, not AVX-512")
    if fmt != "int4" and not ops.cpu_vnni():
        pytest.skip(f"this AVX-512 CPU lacks VNNI or VBMI: {fmt} keeps the f32 kernels")
    got = {}
    for isa in ("avx512", "avx2"):
        path = tmp_path / f"{isa}.npz"
        r = subprocess.run([sys.executable, "-c", _SAME_BITS_SCRIPT, str(path), fmt], env=dict(os.environ, VT_ISA=isa),
                           capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        with np.load(path) as z:
            got[isa] = {key: z[key] for key in z.files}
        assert str(got[isa].pop("isa")) == isa
    assert len(got["avx512"]) == {"int4": 8 * 8 * 3, "int4-min": 10 * 9 * 3, "int8": 9 * 8 * 3, "mxfp4": 8 * 9 * 3}[fmt]
    for key, want in got["avx2"].items():
        assert np.array_equal(got["avx512"][key], want, equal_nan=True), key


# ---- a model with int4 layers ----------------------------------------------------------

@pytest.mark.parametrize("tie", [False, True])
def test_model_int4_equals_reference_of_its_quantized_weights(tmp_path, tie):
    check_model_matches_reference(tmp_path, "int4", "prepack_int4_blocked", tie)


def test_integer_sums_at_their_bound(tmp_path):
    check_sums_at_their_bound(tmp_path, "prepack_int4_blocked", "linear_int4", "int4")
