"""Every linear against a float64 numpy reference of the same quantized math, the
quantization against the bounds each format implies, and the three CPU kernel levels
(generic / avx2 / avx512) against each other (subprocesses with VT_ISA)."""

from __future__ import annotations

import json
import math
import os
import platform
import subprocess
import sys

import numpy as np
import pytest

from pyvt import ops

from int16_ref import X16_SCRIPT, int16_gemm_applies, round_x16

ml_dtypes = pytest.importorskip("ml_dtypes")

MS = [1, 2, 3, 7, 17, 64, 130]
_erfc = np.vectorize(math.erfc, otypes=[np.float64])


def rel_err(y, ref):
    """max |y - ref| normalized by max |ref| (the normalized error of a quantized GEMM)."""
    ref = np.asarray(ref, np.float64)
    return float(np.max(np.abs(np.asarray(y, np.float64) - ref)) / max(np.max(np.abs(ref)), 1e-30))


def ref_linear(x, wd, bias=None):
    y = np.asarray(x, np.float64) @ np.asarray(wd, np.float64).T
    return y if bias is None else y + bias


def gelu(v):
    return 0.5 * v * _erfc(-v / math.sqrt(2.0))


def silu(v):
    return v / (1.0 + np.exp(-v))


def qdq_fp8_rows(x):
    """Per-row absmax/448 E4M3 quantize-dequantize, in float32 like libvt."""
    x = np.asarray(x, np.float32)
    s = (np.max(np.abs(x), axis=-1, keepdims=True) / np.float32(448)).astype(np.float32)
    q = (x / s).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
    return q.astype(np.float64) * s


def q_int_rows(x, qmax):
    x = np.asarray(x, np.float32)
    s = (np.max(np.abs(x), axis=-1, keepdims=True) / np.float32(qmax)).astype(np.float32)
    q = np.clip(np.rint(x / s), -qmax, qmax)
    return q * s.astype(np.float64)


PREPACK = {
    "fp8-channel": ops.prepack_fp8,
    "fp8": ops.prepack_fp8_blocked,
    "int8": ops.prepack_int8_blocked,
}
W8A16 = {"fp8-channel": ops.linear_fp8_w8a16, "fp8": ops.linear_fp8_w8a16, "int8": ops.linear_int8_w8a16}


def shapes(fmt, rng, n=3):
    """(out, in) pairs: tails of the 16-row tiles, K multiple of the block (blocked formats)
    or anything (per-channel), and one shape larger than the GEMM blocking (8 tiles x 256 K)."""
    outs = [1, 17, 40, 300]
    if fmt == "fp8-channel":
        ins = [1, 3, 33, 100, 545]
    elif fmt == "fp8":
        ins = [16, 48, 160, 544]
    else:
        ins = [32, 96, 160, 544]
    return [(outs[i], ins[i]) for i in range(4)]


# ---- dense formats: W8A16 ----------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["fp8-channel", "fp8", "int8"])
def test_w8a16_matches_quantized_math(fmt):
    rng = np.random.default_rng(10)
    for out, k in shapes(fmt, rng):
        w = (rng.standard_normal((out, k)) * 0.05).astype(np.float32)
        bias = rng.standard_normal(out).astype(np.float32)
        with PREPACK[fmt](w) as p:
            assert p.format == fmt and p.shape == (out, k)
            wd = p.unpack()
            for m in MS:
                x = rng.standard_normal((m, k)).astype(np.float32)
                y = W8A16[fmt](x, p, bias)
                assert y.shape == (m, out) and y.dtype == np.float32
                xr = round_x16(x, p.block_size, fmt) if int16_gemm_applies(fmt, m, kb=p.block_size) else x
                assert rel_err(y, ref_linear(xr, wd, bias)) < 2e-6 * max(1.0, math.sqrt(k) / 8), (fmt, out, k, m)
            y1 = W8A16[fmt](x[0], p)
            assert y1.shape == (out,)
            x1 = round_x16(x[:1], p.block_size, fmt) if int16_gemm_applies(fmt, 1, kb=p.block_size) else x[:1]
            assert rel_err(y1, ref_linear(x1, wd)[0]) < 1e-5


def test_int8_gemm_block_sizes_and_nonfinite_rows():
    """The INT8 GEMM (m > 4) for every block size, with rows of very different magnitude
    per block (and an all-zero block), matches exact math on x as the kernel rounds it
    (round_x16 on AVX2); a row holding a NaN or an infinity gives a non-finite row and
    leaves the other rows as they are without it."""
    rng = np.random.default_rng(31)
    out, k, m = 40, 256, 9
    w = (rng.standard_normal((out, k)) * 0.05).astype(np.float32)
    x = rng.standard_normal((m, k)).astype(np.float32)
    x *= np.repeat(np.float32(10.0) ** rng.integers(-3, 4, (m, k // 16)), 16, axis=1).astype(np.float32)
    x[3, 32:64] = 0.0
    for kb in (16, 32, 64, 128):
        with ops.prepack_int8_blocked(w, block_size=kb) as p:
            wd = p.unpack()
            y = ops.linear_int8_w8a16(x, p)
            xr = round_x16(x, kb) if int16_gemm_applies("int8", m) else x
            assert rel_err(y, ref_linear(xr, wd)) < 2e-6, kb
            bad = x.copy()
            bad[2, 5] = np.nan
            bad[6, 100] = np.inf
            yb = ops.linear_int8_w8a16(bad, p)
            for r in (2, 6):
                assert not np.isfinite(yb[r]).any(), (kb, r)
            keep = [r for r in range(m) if r not in (2, 6)]
            assert np.allclose(yb[keep], y[keep], rtol=1e-6, atol=1e-6 * np.abs(y).max()), kb


@pytest.mark.parametrize("fmt", ["fp8-channel", "fp8", "int8"])
def test_w8a16_close_to_unquantized(fmt):
    """The product error stays within what the format's weight error implies."""
    rng = np.random.default_rng(11)
    out, k, m = 64, 256, 5
    w = (rng.standard_normal((out, k)) * 0.05).astype(np.float32)
    x = rng.standard_normal((m, k)).astype(np.float32)
    with PREPACK[fmt](w) as p:
        wd = p.unpack().astype(np.float64)
        y = W8A16[fmt](x, p)
    err_w = np.abs(wd - w)
    # Elementwise weight bounds: INT8 half a step of its block; FP8 half an ulp (2^-4
    # relative) or half the subnormal step of its scale.
    if fmt == "int8":
        step = np.repeat(np.abs(w).reshape(out, -1, 32).max(axis=2) / 127.0, 32, axis=1)
        assert np.all(err_w <= step * 0.5 * (1 + 2 ** -9) + 1e-12)
    else:
        blk = 16 if fmt == "fp8" else k
        scale = np.repeat(np.abs(w).reshape(out, -1, blk).max(axis=2) / 448.0, blk, axis=1)
        assert np.all(err_w <= np.maximum(np.abs(w) * 2.0 ** -4, scale * 2.0 ** -10) * (1 + 2 ** -9) + 1e-12)
    # Product: |y - x.w| <= sum_k |x_k| |dw_k| per output.
    bound = np.abs(x).astype(np.float64) @ err_w.T
    assert np.all(np.abs(y - x.astype(np.float64) @ w.T.astype(np.float64)) <= bound * (1 + 1e-3) + 1e-5)
    typical = {"int8": 0.01, "fp8": 0.04, "fp8-channel": 0.06}[fmt]
    assert rel_err(y, x.astype(np.float64) @ w.T) < typical


def test_blocked16_beats_per_channel_with_outliers():
    """A per-row FP8 scale set by an outlier pushes the bulk of the row into E4M3's
    subnormals (steps of 2^-9 of the scale); one scale per 16 weights keeps it normal."""
    rng = np.random.default_rng(12)
    out, k = 64, 512
    w = (rng.standard_normal((out, k)) * 0.01).astype(np.float32)
    w[:, 7] = 2000.0  # an outlier input channel (2e5 sigma)
    x = rng.standard_normal((8, k)).astype(np.float32)
    x[:, 7] = 0.0    # compare what the outlier does to the *other* weights
    exact = x.astype(np.float64) @ w.T
    bulk = np.ones_like(w, dtype=bool)
    bulk[:, 7] = False
    with ops.prepack_fp8(w) as pc, ops.prepack_fp8_blocked(w, 16) as pb:
        ec = rel_err(ops.linear_fp8_w8a16(x, pc), exact)
        eb = rel_err(ops.linear_fp8_w8a16(x, pb), exact)
        wc = np.linalg.norm((pc.unpack() - w)[bulk]) / np.linalg.norm(w[bulk])
        wb = np.linalg.norm((pb.unpack() - w)[bulk]) / np.linalg.norm(w[bulk])
    assert eb < ec / 3 and wb < wc / 3, (eb, ec, wb, wc)
    assert eb < 0.1


@pytest.mark.parametrize("block", [16, 32, 64, 128])
@pytest.mark.parametrize("fmt", ["fp8", "int8"])
def test_block_sizes(fmt, block):
    rng = np.random.default_rng(13)
    w = (rng.standard_normal((33, 256)) * 0.1).astype(np.float32)
    x = rng.standard_normal((3, 256)).astype(np.float32)
    with PREPACK[fmt](w, block_size=block) as p:
        assert p.block_size == block
        xr = round_x16(x, block, fmt) if int16_gemm_applies(fmt, 3, kb=block) else x
        assert rel_err(W8A16[fmt](x, p), ref_linear(xr, p.unpack())) < 1e-5
        # f16 scales (2 bytes per block) + 16-row tiles + one f32 per row
        tiles = -(-33 // 16)
        assert p.nbytes >= 33 * 256 + 33 * (256 // block) * 2


def test_scale_edge_cases_zero_and_tiny_and_huge():
    rng = np.random.default_rng(14)
    w = (rng.standard_normal((20, 64)) * 0.1).astype(np.float32)
    w[0] = 0.0                      # an all-zero row
    w[1, :32] = 0.0                 # an all-zero block
    w[2] *= 1e-30                   # a tiny row
    w[3, :32] *= 1e-12              # a tiny block beside normal ones
    w[4] *= 1e30                    # a huge row
    x = rng.standard_normal((2, 64)).astype(np.float32)
    for fmt in ("fp8-channel", "fp8", "int8"):
        with PREPACK[fmt](w) as p:
            wd = p.unpack()
            assert np.isfinite(wd).all()
            assert (wd[0] == 0).all() and (wd[1, :32] == 0).all()
            for r in (2, 4):
                wr, dr = w[r].astype(np.float64), wd[r].astype(np.float64)
                assert np.linalg.norm(dr - wr) <= 0.1 * np.linalg.norm(wr)
            y = W8A16[fmt](x, p)
            assert np.isfinite(y).all()
            xr = round_x16(x, p.block_size, fmt) if int16_gemm_applies(fmt, 2, kb=p.block_size) else x
            assert rel_err(y[:, 5:], ref_linear(xr, wd)[:, 5:]) < 1e-5


@pytest.mark.parametrize("blocked", [False, True])
def test_every_fp8_code_through_the_kernels(blocked):
    """Rows holding every finite E4M3 value (subnormals included), scaled so 448 is the row
    (or block) maximum: the packed codes are exactly those values, and the GEMV/GEMM must
    reproduce x . unpack(W) for them."""
    codes = np.arange(256, dtype=np.uint8)
    vals = codes[(codes & 0x7F) != 0x7F].view(ml_dtypes.float8_e4m3fn).astype(np.float32)  # 254
    rng = np.random.default_rng(30)
    w = np.zeros((32, 256), np.float32)
    for r in range(32):
        row = rng.permutation(np.concatenate([vals, [448.0, -448.0]]).astype(np.float32))
        w[r] = row * np.float32(2.0 ** rng.integers(-8, 8))
    if blocked:  # every 16-block needs its own 448 so each block's scale is exact
        w.reshape(32, 16, 16)[:, :, 0] = 448.0 * np.abs(w).reshape(32, 16, 16).max(axis=2) / 448.0
    with (ops.prepack_fp8_blocked(w) if blocked else ops.prepack_fp8(w)) as p:
        wd = p.unpack()
        if not blocked:
            assert np.array_equal(wd, w)  # exact: scale = absmax/448 is a power of two here
        for m in (1, 3, 8, 20):
            x = rng.standard_normal((m, 256)).astype(np.float32)
            assert rel_err(ops.linear_fp8_w8a16(x, p), ref_linear(x, wd)) < 2e-6, m


def test_float16_bfloat16_inputs():
    rng = np.random.default_rng(15)
    w = (rng.standard_normal((40, 96)) * 0.05).astype(np.float32)
    x = rng.standard_normal((3, 96)).astype(np.float32)
    for dt in (np.float16, ml_dtypes.bfloat16):
        with ops.prepack_int8_blocked(w.astype(dt)) as p:
            wd = p.unpack()
            # packing a half-precision weight = packing its float32 values
            with ops.prepack_int8_blocked(w.astype(dt).astype(np.float32)) as p32:
                assert np.array_equal(wd, p32.unpack())
            xd = x.astype(dt)
            y = ops.linear_int8_w8a16(xd, p)
            xr = xd.astype(np.float32)
            xr = round_x16(xr, 32) if int16_gemm_applies("int8", 3) else xr
            assert rel_err(y, ref_linear(xr, wd)) < 1e-5


# ---- W8A8, GELU, SwiGLU ------------------------------------------------------------------

@pytest.mark.parametrize("blocked", [False, True])
def test_w8a8_fp8(blocked):
    rng = np.random.default_rng(16)
    k = 160
    w = (rng.standard_normal((40, k)) * 0.05).astype(np.float32)
    bias = rng.standard_normal(40).astype(np.float32)
    with (ops.prepack_fp8_blocked(w) if blocked else ops.prepack_fp8(w)) as p:
        wd = p.unpack()
        for m in MS:
            x = rng.standard_normal((m, k)).astype(np.float32)
            y = ops.linear_fp8(x, p, bias)
            assert rel_err(y, ref_linear(qdq_fp8_rows(x), wd, bias)) < 1e-5, m
            # and it is not the W8A16 result
            assert rel_err(y, ref_linear(x, wd, bias)) > 1e-4


def test_gelu_fp8():
    rng = np.random.default_rng(17)
    k = 96
    w = (rng.standard_normal((40, k)) * 0.2).astype(np.float32)
    bias = rng.standard_normal(40).astype(np.float32)
    with ops.prepack_fp8_blocked(w) as p:
        wd = p.unpack()
        for m in MS:
            x = rng.standard_normal((m, k)).astype(np.float32)
            ref = gelu(ref_linear(x, wd, bias))
            y = ops.linear_gelu_fp8(x, p, bias)
            assert rel_err(y, ref) < 2e-6, m
    # the deep negative tail keeps relative accuracy (erfc, not 1 + erf)
    with ops.prepack_fp8_blocked(np.eye(16, dtype=np.float32)) as p:
        v = np.linspace(-9, 3, 16).astype(np.float32)
        y = ops.linear_gelu_fp8(v, p)
        ref = gelu(p.unpack().astype(np.float64) @ v)
        assert np.all(np.abs(y - ref) <= 1e-5 * np.abs(ref) + 1e-30)


def test_swiglu_fp8():
    rng = np.random.default_rng(18)
    k = 160
    for out in (1, 40, 300):
        g = (rng.standard_normal((out, k)) * 0.1).astype(np.float32)
        u = (rng.standard_normal((out, k)) * 0.1).astype(np.float32)
        gb = rng.standard_normal(out).astype(np.float32)
        ub = rng.standard_normal(out).astype(np.float32)
        with ops.prepack_fp8_blocked(g) as pg, ops.prepack_fp8_blocked(u) as pu:
            gd, ud = pg.unpack(), pu.unpack()
            for m in MS:
                x = rng.standard_normal((m, k)).astype(np.float32)
                ref = silu(ref_linear(x, gd, gb)) * ref_linear(x, ud, ub)
                assert rel_err(ops.linear_swiglu_fp8(x, pg, pu, (gb, ub)), ref) < 1e-5, (out, m)
                ref0 = silu(ref_linear(x, gd)) * ref_linear(x, ud)
                assert rel_err(ops.linear_swiglu_fp8(x, pg, pu), ref0) < 1e-5
            ref1 = silu(ref_linear(x, gd, gb)) * ref_linear(x, ud)
            assert rel_err(ops.linear_swiglu_fp8(x, pg, pu, (gb, None)), ref1) < 1e-5
            assert ops.linear_swiglu_fp8(x[0], pg, pu).shape == (out,)


@pytest.mark.parametrize("prepack", [ops.prepack_fp8, ops.prepack_fp8_blocked])
def test_gelu_and_swiglu_fp8_w8a8(prepack):
    # w8a8=True: the input is quantized per row to E4M3 exactly as linear_fp8 does, then the
    # same fused epilogue; so each equals its unfused composition over linear_fp8.
    rng = np.random.default_rng(19)
    k, out = 96, 40
    g = (rng.standard_normal((out, k)) * 0.1).astype(np.float32)
    u = (rng.standard_normal((out, k)) * 0.1).astype(np.float32)
    gb = rng.standard_normal(out).astype(np.float32)
    ub = rng.standard_normal(out).astype(np.float32)
    with prepack(g) as pg, prepack(u) as pu:
        for m in MS:
            x = (rng.standard_normal((m, k)) * 3).astype(np.float32)
            yg = ops.linear_fp8(x, pg, gb).astype(np.float64)
            yu = ops.linear_fp8(x, pu, ub).astype(np.float64)
            assert rel_err(ops.linear_gelu_fp8(x, pg, gb, w8a8=True), gelu(yg)) < 2e-6, m
            assert rel_err(ops.linear_swiglu_fp8(x, pg, pu, (gb, ub), w8a8=True), silu(yg) * yu) < 1e-5, m
            # and it is not the W8A16 result: the input rounding shows
            assert rel_err(ops.linear_gelu_fp8(x, pg, gb), gelu(yg)) > 1e-4, m
        with pytest.raises(TypeError, match="w8a8 must be True or False"):
            ops.linear_gelu_fp8(x, pg, w8a8="yes")
        with pytest.raises(TypeError, match="w8a8 must be True or False"):
            ops.linear_swiglu_fp8(x, pg, pu, w8a8=None)


# ---- 2:4 sparse -------------------------------------------------------------------------

def expected_mask(w):
    """True where 2:4 magnitude pruning keeps a weight (2 largest |w| of each 4; ties: lower)."""
    out, k = w.shape
    g = np.abs(w).reshape(out, k // 4, 4)
    order = np.argsort(-g, axis=2, kind="stable")[..., :2]
    mask = np.zeros_like(g, dtype=bool)
    np.put_along_axis(mask, order, True, axis=2)
    return mask.reshape(out, k)


@pytest.mark.parametrize("bits", [8, 4])
def test_sparse24_pruning_and_values(bits):
    rng = np.random.default_rng(19)
    w = (rng.standard_normal((37, 64)) * 0.1).astype(np.float32)
    w[0, :4] = [0.5, -0.5, 0.5, 0.1]           # ties: indices 0 and 1 kept
    w[1, :4] = 0.0                             # all zero group
    prep = ops.prepack_int8_sparse24 if bits == 8 else ops.prepack_int4_sparse24
    qmax = 127 if bits == 8 else 7
    with prep(w) as p:
        assert p.format == ("int8-sparse24" if bits == 8 else "int4-sparse24")
        wd = p.unpack()
        mask = expected_mask(w)
        assert not np.any(wd[~mask]), "pruned entries must be zero"
        assert (np.count_nonzero(wd.reshape(37, 16, 4), axis=2) <= 2).all()
        s = np.abs(w).max(axis=1, keepdims=True) / qmax
        assert np.all(np.abs(wd - w)[mask] <= np.broadcast_to(s, w.shape)[mask] * 0.5 * (1 + 1e-6))
        assert wd[0, 0] != 0 and wd[0, 1] != 0 and wd[0, 2] == 0
        nb = 37 * (64 // 2 if bits == 8 else 64 // 4) + 37 * 16 + 37 * 4
        assert p.nbytes == nb


@pytest.mark.parametrize("bits", [8, 4])
def test_sparse24_linear_integer_math(bits):
    rng = np.random.default_rng(20)
    prep = ops.prepack_int8_sparse24 if bits == 8 else ops.prepack_int4_sparse24
    lin = ops.linear_int8_sparse if bits == 8 else ops.linear_int4_sparse
    qmax = 127 if bits == 8 else 7
    for out, k in [(1, 4), (37, 64), (300, 544)]:
        w = (rng.standard_normal((out, k)) * 0.1).astype(np.float32)
        bias = rng.standard_normal(out).astype(np.float32)
        with prep(w) as p:
            wd = p.unpack()
            for m in MS:
                x = rng.standard_normal((m, k)).astype(np.float32)
                ref = ref_linear(q_int_rows(x, qmax), wd, bias)
                assert rel_err(lin(x, p, bias), ref) < 1e-5, (out, k, m)
            dense = ref_linear(x, w)
            assert rel_err(lin(x, p), dense) < (0.8 if bits == 8 else 1.2)


@pytest.mark.parametrize("bits", [8, 4])
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_sparse24_non_finite_inputs_give_non_finite_rows(bits, bad):
    # As the dense linears: a NaN / Inf in a row of x makes that row's outputs non-finite
    # (they were finite garbage: the row was quantized as if the value were not there).
    rng = np.random.default_rng(22)
    prep = ops.prepack_int8_sparse24 if bits == 8 else ops.prepack_int4_sparse24
    lin = ops.linear_int8_sparse if bits == 8 else ops.linear_int4_sparse
    w = (rng.standard_normal((48, 64)) * 0.1).astype(np.float32)
    x = rng.standard_normal((3, 64)).astype(np.float32)
    x[1, 17] = bad
    with prep(w) as p:
        y = lin(x, p, np.ones(48, np.float32))
        with ops.prepack_int8_blocked(w) as d:
            dense = ops.linear_int8_w8a16(x, d)
    assert np.isfinite(y[[0, 2]]).all() and not np.isfinite(y[1]).any()
    assert not np.isfinite(dense[1]).any()


# ---- threads, ISA levels -------------------------------------------------------------------

def test_thread_count_does_not_change_results():
    rng = np.random.default_rng(21)
    w = (rng.standard_normal((300, 544)) * 0.05).astype(np.float32)
    x = rng.standard_normal((70, 544)).astype(np.float32)
    before = ops.get_num_threads()
    with ops.prepack_int8_blocked(w) as p:
        ys = []
        for n in (1, 2, 3):
            ops.set_num_threads(n)
            assert ops.get_num_threads() == n
            ys.append((ops.linear_int8_w8a16(x, p), ops.linear_int8_w8a16(x[:1], p)))
        ops.set_num_threads(0)
        assert ops.get_num_threads() >= 1
    ops.set_num_threads(before)
    for y, y1 in ys[1:]:
        assert np.array_equal(y, ys[0][0]) and np.array_equal(y1, ys[0][1])


_ISA_SCRIPT = r"""
import sys
import numpy as np
from pyvt import ops
""" + X16_SCRIPT + r"""
rng = np.random.default_rng(22)
res = {}
k = 544
w = (rng.standard_normal((300, k)) * 0.05).astype(np.float32)
u = (rng.standard_normal((300, k)) * 0.05).astype(np.float32)
b = rng.standard_normal(300).astype(np.float32)
xs = {m: rng.standard_normal((m, k)).astype(np.float32) for m in (1, 3, 7, 17, 130)}
packs = {"fp8c": ops.prepack_fp8(w), "fp8": ops.prepack_fp8_blocked(w), "int8": ops.prepack_int8_blocked(w),
         "s8": ops.prepack_int8_sparse24(w), "s4": ops.prepack_int4_sparse24(w)}
up = ops.prepack_fp8_blocked(u)
for m, x in xs.items():
    res[f"fp8c{m}"] = ops.linear_fp8_w8a16(x, packs["fp8c"], b)
    res[f"fp8{m}"] = ops.linear_fp8_w8a16(x, packs["fp8"], b)
    res[f"int8{m}"] = ops.linear_int8_w8a16(x, packs["int8"], b)
    res[f"int8r{m}"] = ops.linear_int8_w8a16(round_x16(x, 32), packs["int8"], b)
    res[f"w8a8{m}"] = ops.linear_fp8(x, packs["fp8"], b)
    res[f"gelu{m}"] = ops.linear_gelu_fp8(x, packs["fp8"], b)
    res[f"swiglu{m}"] = ops.linear_swiglu_fp8(x, packs["fp8"], up, (b, None))
    res[f"s8{m}"] = ops.linear_int8_sparse(x, packs["s8"])
    res[f"s4{m}"] = ops.linear_int4_sparse(x, packs["s4"])
np.savez(sys.argv[1], isa=ops.cpu_isa(), **res)
"""


def _run_isa(level, path):
    env = dict(os.environ, VT_ISA=level)
    # cwd away from the repository root, so the subprocess imports the installed pyvt
    # rather than the source folder.
    out = subprocess.run([sys.executable, "-c", _ISA_SCRIPT, str(path)], env=env,
                         capture_output=True, text=True, timeout=900, cwd=path.parent)
    assert out.returncode == 0, out.stderr
    with np.load(path) as z:
        return {key: z[key] for key in z.files}


def test_isa_levels_agree(tmp_path):
    native = ops.cpu_isa()
    order = ["generic", "neon"] if native == "neon" else ["generic", "avx2", "avx512"]
    levels = order[: order.index(native) + 1]
    if ops.cpu_vnni():
        levels.append("avx512-novnni")  # the f32 kernels CPUs without VNNI + VBMI run
    results = {lvl: _run_isa(lvl, tmp_path / f"{lvl}.npz") for lvl in levels}
    for lvl in levels:
        assert str(results[lvl].pop("isa")) == lvl.split("-")[0]  # VT_ISA lowered the level as asked
    base = results["generic"]
    for lvl in levels[1:]:
        for key, ref in base.items():
            if int16_gemm_applies("int8", 1, lvl) and key.startswith("int8") and not key.startswith("int8r"):
                ref = base["int8r" + key[4:]]  # the integer kernels: exact for the rounded x
            assert rel_err(results[lvl][key], ref) < 2e-6, (lvl, key)
    if len(levels) < 3:
        pytest.skip(f"this CPU only has {native}: {levels} compared")


def test_unknown_isa_is_named_and_ignored(tmp_path):
    """A VT_ISA value that names no level is reported in one line on stderr and the CPU keeps its
    own level (a typo must not silently benchmark the wrong kernels)."""
    arm = platform.machine().lower() in ("aarch64", "arm64")
    if platform.machine().lower() not in ("x86_64", "amd64") and not arm:
        pytest.skip("VT_ISA chooses among the x86 kernels, and on 64-bit ARM between generic and neon")
    r = subprocess.run([sys.executable, "-c", "from pyvt import ops; print(ops.cpu_isa())"],
                       env=dict(os.environ, VT_ISA="avx-512"), capture_output=True, text=True, timeout=120,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    if "VT_ISA" not in os.environ:  # else this process runs at a lowered level
        assert r.stdout.strip() == ops.cpu_isa()
    lines = [ln for ln in r.stderr.splitlines() if "VT_ISA" in ln]
    want = ("libvt: VT_ISA=avx-512 is neither generic nor neon (64-bit ARM); ignored" if arm else
            "libvt: VT_ISA=avx-512 is not one of generic, avx2, avx512, avx512-novnni; ignored")
    assert lines == [want], r.stderr


_PREFETCH_SCRIPT = r"""
import sys
import numpy as np
from pyvt import ops
rng = np.random.default_rng(23)
k = 1088
w = (rng.standard_normal((200, k)) * 0.05).astype(np.float32)
u = (rng.standard_normal((200, k)) * 0.05).astype(np.float32)
res = {}
for name, pk, lin in (("int8", ops.prepack_int8_blocked, ops.linear_int8_w8a16),
                      ("fp8", ops.prepack_fp8_blocked, ops.linear_fp8_w8a16),
                      ("fp8c", ops.prepack_fp8, ops.linear_fp8_w8a16),
                      ("int4", ops.prepack_int4_blocked, ops.linear_int4),
                      ("int4m", ops.prepack_int4_min_blocked, ops.linear_int4_min)):
    with pk(w) as p:
        for m in (1, 3, 6, 17):
            res[f"{name}{m}"] = lin(rng.standard_normal((m, k)).astype(np.float32), p)
with ops.prepack_int4_blocked(w) as p, ops.prepack_int4_blocked(u) as q:
    res["swiglu4"] = ops.linear_swiglu_int4(rng.standard_normal((2, k)).astype(np.float32), p, q)
np.savez(sys.argv[1], **res)
"""


def test_prefetch_hint_changes_no_bits(tmp_path):
    """VT_PREFETCH (the GEMVs' prefetch of the next tile into L1 or L2, cpu_features.h) only
    moves data: every format's linear, m 1-17, gives the same bits either way; a value that is
    neither l1 nor l2 is named in one line on stderr and left at the CPU's default."""
    got = {}
    for hint in ("l1", "l2", "bogus"):
        path = tmp_path / f"{hint}.npz"
        r = subprocess.run([sys.executable, "-c", _PREFETCH_SCRIPT, str(path)], env=dict(os.environ, VT_PREFETCH=hint),
                           capture_output=True, text=True, timeout=300, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        warned = "VT_PREFETCH=bogus is neither l1 nor l2; ignored" in r.stderr
        assert warned == (hint == "bogus"), r.stderr
        with np.load(path) as z:
            got[hint] = {key: z[key] for key in z.files}
    assert len(got["l1"]) == 5 * 4 + 1
    for hint in ("l2", "bogus"):
        for key, want in got["l1"].items():
            assert np.array_equal(got[hint][key], want, equal_nan=True), (hint, key)


@pytest.mark.parametrize("fmt", ["int8", "int4", "int4-min"])
def test_a_row_alone_equals_the_row_in_a_batch(fmt):
    """On AVX2 the integer GEMV (m <= 4) and GEMM (m > 4) give a row the same bits, linear and
    SwiGLU, K with a short last block for the 4-bit formats: a sequence decoded in a batch equals
    its lone run (docs/guide.md, "The KV cache"). Other levels: equal up to float rounding."""
    pk = {"int8": ops.prepack_int8_blocked, "int4": ops.prepack_int4_blocked,
          "int4-min": ops.prepack_int4_min_blocked}[fmt]
    lin = {"int8": ops.linear_int8_w8a16, "int4": ops.linear_int4, "int4-min": ops.linear_int4_min}[fmt]
    sw = {"int4": ops.linear_swiglu_int4, "int4-min": ops.linear_swiglu_int4_min}.get(fmt)
    rng = np.random.default_rng(41)
    for k in (576, 545) if fmt != "int8" else (576,):
        w = (rng.standard_normal((300, k)) * 0.05).astype(np.float32)
        u = (rng.standard_normal((300, k)) * 0.05).astype(np.float32)
        b = rng.standard_normal(300).astype(np.float32)
        x = rng.standard_normal((9, k)).astype(np.float32)
        with pk(w) as p, pk(u) as q:
            batched = [lin(x, p, b)] + ([sw(x, p, q)] if sw else [])
            alone = [np.stack([lin(x[i], p, b) for i in range(9)])]
            alone += [np.stack([sw(x[i:i + 1], p, q)[0] for i in range(9)])] if sw else []
            pairs = np.concatenate([lin(x[i:i + 2], p, b) for i in range(0, 8, 2)] + [lin(x[8:], p, b)])
        for a, y in zip(alone + [pairs], batched + [batched[0]]):
            if int16_gemm_applies(fmt, 9):
                assert np.array_equal(a, y), (fmt, k)
            else:
                np.testing.assert_allclose(a, y, rtol=1e-5, atol=1e-5 * np.abs(y).max())


def test_parallel_regions_count_hand_offs_to_the_pool():
    """ops.parallel_regions() counts regions run on the worker threads: at most one per linear
    call, none for work too small to split or with one thread, and it never goes back."""
    rng = np.random.default_rng(43)
    before = ops.get_num_threads()
    try:
        with ops.prepack_int8_blocked((rng.standard_normal((4096, 512)) * 0.05).astype(np.float32)) as big, \
                ops.prepack_int8_blocked((rng.standard_normal((16, 64)) * 0.05).astype(np.float32)) as small:
            x, xs = rng.standard_normal((1, 512)).astype(np.float32), rng.standard_normal((1, 64)).astype(np.float32)
            ops.set_num_threads(2)
            r0 = ops.parallel_regions()
            for _ in range(20):
                ops.linear_int8_w8a16(x, big)
            r1 = ops.parallel_regions()
            assert 0 <= r1 - r0 <= 20  # one per call at most (a call may run inline: see threadpool.h)
            for _ in range(20):
                ops.linear_int8_w8a16(xs, small)  # one 16-row tile: nothing to split
            r2 = ops.parallel_regions()
            assert r2 == r1
            ops.set_num_threads(1)
            for _ in range(5):
                ops.linear_int8_w8a16(x, big)
            assert ops.parallel_regions() == r2
    finally:
        ops.set_num_threads(before)


# ---- int8, int4-min and int4 linears: the same bits on every CPU whose integer kernels run --
#
# AVX2, AVX-512 with VNNI + VBMI and 64-bit ARM (NEON) compute an int8, int4-min or int4 linear in the
# same integers and f32 steps (docs/guide.md, "Numerics"), so their outputs are bit for bit
# those an x86 machine recorded in tests/data/integer_linear_bits.json (written by
# INTEGER_BITS_WRITE=1 pytest -k integer_linears_give_the_recorded_bits, on x86 with AVX2 or
# VNNI). The inputs are integer formulas, not a random generator: the same floats on any machine.

INTEGER_BITS = os.path.join(os.path.dirname(__file__), "data", "integer_linear_bits.json")


def _formula(rows: int, cols: int, a: int, b: int, scale: float) -> np.ndarray:
    i = np.arange(rows, dtype=np.int64)[:, None]
    j = np.arange(cols, dtype=np.int64)[None, :]
    return (((i * a + j * b + i * j) % 2001 - 1000) * scale).astype(np.float32)


def _integer_bits_outputs(fmt: str) -> dict[str, np.ndarray]:
    res = {}
    out_f = 40  # two tiles and a half
    for in_f in (320, 77) if fmt != "int8" else (320,):  # 4-bit: any K (a short, odd last block)
        w = _formula(out_f, in_f, 7919, 104729, 5e-5)
        u = _formula(out_f, in_f, 15485863, 7, 4e-5)
        bias = _formula(1, out_f, 3, 11, 1e-3)[0]
        for m in (1, 2, 3, 17):
            x = _formula(m, in_f, 31, 17, 2e-3)
            key = f"{fmt} K={in_f} m={m}"
            if fmt == "int8":
                pw, pu = ops.prepack_int8_blocked(w), ops.prepack_int8_blocked(u)
                res[f"{key} linear"] = ops.linear_int8_w8a16(x, pw, bias)
                res[f"{key} swiglu"] = ops.linear_swiglu_int8(x, pw, pu, (bias, None))
            elif fmt == "int4-min":
                pw, pu = ops.prepack_int4_min_blocked(w), ops.prepack_int4_min_blocked(u)
                res[f"{key} linear"] = ops.linear_int4_min(x, pw, bias)
                res[f"{key} gelu"] = ops.linear_int4_min(x, pw, bias, gelu=True)
                res[f"{key} swiglu"] = ops.linear_swiglu_int4_min(x, pw, pu, (bias, None))
            else:
                pw, pu = ops.prepack_int4_blocked(w), ops.prepack_int4_blocked(u)
                res[f"{key} linear"] = ops.linear_int4(x, pw, bias)
                res[f"{key} gelu"] = ops.linear_int4(x, pw, bias, gelu=True)
                res[f"{key} swiglu"] = ops.linear_swiglu_int4(x, pw, pu, (bias, None))
    return res


def _bits(a: np.ndarray) -> list[int]:
    return np.ascontiguousarray(a, np.float32).ravel().view(np.uint32).tolist()


@pytest.mark.parametrize("fmt", ["int8", "int4-min", "int4"])
def test_integer_linears_give_the_recorded_bits(fmt):
    if not int16_gemm_applies(fmt, 1):
        pytest.skip(f"{fmt} linears here ({ops.cpu_isa()}) are the f32 kernels, not the integer ones")
    got = {k: _bits(v) for k, v in _integer_bits_outputs(fmt).items()}
    if os.environ.get("INTEGER_BITS_WRITE") == "1":
        rec = {}
        if os.path.exists(INTEGER_BITS):
            with open(INTEGER_BITS, encoding="utf-8") as f:
                rec = json.load(f)
        rec.setdefault("outputs", {}).update(got)
        rec.update(machine=platform.machine(), isa=ops.cpu_isa())
        with open(INTEGER_BITS, "w", encoding="utf-8") as f:
            json.dump(rec, f)
    with open(INTEGER_BITS, encoding="utf-8") as f:
        want = {k: v for k, v in json.load(f)["outputs"].items() if k.startswith(fmt + " ")}
    assert sorted(got) == sorted(want)
    for key, bits in want.items():
        diff = [i for i, (a, b) in enumerate(zip(got[key], bits)) if a != b]
        assert not diff, f"{key}: {len(diff)} of {len(bits)} values differ from the recorded bits (first at {diff[0]})"
