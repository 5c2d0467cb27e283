"""Dense 4-bit weights with a per-block minimum (VT_FORMAT_INT4_MIN_BLOCKED,
weight_format="int4-min", llama.cpp Q4_1's grid): prepack against a numpy implementation of
the documented rule (bit for bit), the error bound of Q4_1's rounding, every linear (GEMV,
GEMM, GELU, SwiGLU, W4A8) against a float64 reference of exactly the dequantized values, odd
shapes and short last K-blocks, constant blocks, non-finite weights refused, every CPU level
(VT_ISA) on its own, and a model loaded as int4-min (reference, bf16, packed cache)."""

from __future__ import annotations

import math
import os
import sys

import numpy as np
import pytest

from pyvt import ops

sys.path.insert(0, os.path.dirname(__file__))
import llama_ref as R  # noqa: E402
from dense4 import (MODEL_PROMPT, check_cuda_matches_cpu, check_device_placement, check_every_isa_level,  # noqa: E402
                    check_model_matches_reference, check_sums_at_their_bound, mag, rel_err)
from int16_ref import int16_gemm_applies, round_x16  # noqa: E402

MS = [1, 2, 3, 5, 8, 9, 17, 70]
# (out, in, block): tile tails, K odd, K not a multiple of the block, K < block, K > GEMM Kc.
SHAPES = [(1, 32, 32), (17, 33, 32), (40, 96, 16), (300, 545, 32), (5, 7, 32), (33, 1000, 128), (16, 258, 64)]
_erfc = np.vectorize(math.erfc, otypes=[np.float64])
F32 = np.float32


# ---- numpy implementation of the documented packing rule (pack.cpp, vt.h) ---------------

def _f16_up(v):
    """Smallest f16 >= v (float32 in, float32 out)."""
    h = np.float16(v)
    if F32(h) < v:
        h = np.nextafter(h, np.float16(np.inf))
    return F32(h)


def _f16_down(v):
    h = np.float16(v)
    if F32(h) > v:
        h = np.nextafter(h, np.float16(-np.inf))
    return F32(h)


def q4_1_reference(w, block):
    """(dequantized [out, in] float32, u, scale, min per block) as libvt packs them: Q4_1's
    min / (max - min) / 15 per block, the min rounded down and the scale up on the grid f16
    times the row's 2^e, u = clip(rint((w - min) / scale), 0, 15); w = (u*s + m) * 2^e."""
    out, k = w.shape
    wd = np.empty((out, k), F32)
    info = []
    for r in range(out):
        row = w[r].astype(F32)
        blocks = [row[k0:k0 + block] for k0 in range(0, k, block)]
        lo = [F32(b.min()) for b in blocks]
        hi = [F32(b.max()) for b in blocks]
        big = max(max(abs(a), F32(z - a) / F32(15)) for a, z in zip(lo, hi))
        e = max(math.frexp(float(big))[1] - 1 - 14, -126) if big > 0 else 0
        pow2 = F32(2.0 ** e)
        for bi, (b, a, z) in enumerate(zip(blocks, lo, hi)):
            if a == z:
                hm, hs = F32(np.float16(a / pow2)), F32(0)
            else:
                hm = _f16_down(a / pow2)
                me = hm * pow2
                hs = _f16_up(F32(F32(z / pow2) - F32(me / pow2)) / F32(15))
                while F32(15.0 * float(hs) + float(hm)) < z / pow2:  # fma, rounded once
                    hs = F32(np.nextafter(np.float16(hs), np.float16(np.inf)))
            se, me = hs * pow2, hm * pow2
            if se > 0:
                u = np.clip(np.rint((b - me) * (F32(1) / se)), 0, 15).astype(F32)
            else:
                u = np.zeros_like(b)
            wd[r, bi * block:bi * block + len(b)] = (u * hs + hm) * pow2
            info.append((r, bi, u, se, me))
    return wd, info


def q4_1_textbook(w, block):
    """Per block (min, scale) of Q4_1 in float64, no storage rounding: the error budget."""
    out, k = w.shape
    res = []
    for r in range(out):
        for k0 in range(0, k, block):
            b = w[r, k0:k0 + block].astype(np.float64)
            res.append((r, k0, b.min(), (b.max() - b.min()) / 15))
    return res


@pytest.mark.parametrize("out,k,block", SHAPES)
def test_packing_is_the_documented_q4_1_rule(out, k, block):
    rng = np.random.default_rng(out * 1000 + k)
    w = (rng.standard_normal((out, k)) * 0.05 + 0.01).astype(F32)
    w[0, 0] = 0.9  # an outlier block
    if out > 3:
        w[3] += 2.0  # a row far from 0: the min dominates the scale
    with ops.prepack_int4_min_blocked(w, block_size=block) as p:
        assert p.format == "int4-min" and p.block_size == block and p.shape == (out, k)
        tiles = -(-out // 16)
        wbytes = -(-(-(-k // 2) * 16) // 64) * 64
        end = wbytes + 2 * (-(-k // block) * 16 * 2)  # scales, then mins
        assert p.nbytes == tiles * (-(-end // 64) * 64) + tiles * 16 * 4
        wd = p.unpack()
    ref, _ = q4_1_reference(w, block)
    np.testing.assert_array_equal(wd, ref)  # bit for bit
    # Q4_1's error bound: half a step of the block (plus the f16 rounding of scale and min).
    for r, k0, mn, sc in q4_1_textbook(w, block):
        err = np.abs(wd[r, k0:k0 + block].astype(np.float64) - w[r, k0:k0 + block]).max()
        assert err <= sc / 2 * (1 + 2 ** -9) + abs(mn) * 2 ** -10 + 1e-12, (r, k0, err, sc)


def test_error_is_below_symmetric_int4_on_shifted_weights():
    """Blocks not centred on 0 are where the min pays: all 16 levels stay in use."""
    rng = np.random.default_rng(4)
    w = (rng.random((64, 256)) * 0.1 + 0.02).astype(F32)  # all positive
    with ops.prepack_int4_min_blocked(w) as p, ops.prepack_int4_blocked(w) as q:
        e_min = float(np.sqrt(((p.unpack().astype(np.float64) - w) ** 2).mean()))
        e_sym = float(np.sqrt(((q.unpack().astype(np.float64) - w) ** 2).mean()))
    assert 0 < e_min < 0.6 * e_sym, (e_min, e_sym)


def test_constant_and_zero_blocks():
    w = np.zeros((20, 70), F32)
    w[3, :32] = -1.5       # a constant block: max == min, scale 0
    w[4, 32:64] = 0.3      # another (0.3 is not an f16: the nearest is kept)
    w[5, 64:] = 7.0        # a constant short last block
    w[6, 40] = 2.0         # one non-zero weight
    with ops.prepack_int4_min_blocked(w) as p:
        wd = p.unpack()
        x = np.ones((2, 70), F32)
        y = ops.linear_int4_min(x, p)
        y1 = ops.linear_int4_min(x[0], p)
    assert np.isfinite(wd).all() and np.isfinite(y).all()
    assert (wd[3, :32] == F32(-1.5)).all() and (wd[5, 64:] == F32(7.0)).all()
    assert np.abs(wd[4, 32:64] - F32(0.3)).max() <= 0.3 * 2 ** -11
    # min 0 is exact; 2.0 sits on the grid's top, 15 * (2/15 rounded up to f16): within 2^-10.
    assert abs(wd[6, 40] - 2.0) <= 2.0 * 2 ** -10 and np.count_nonzero(wd[6]) == 1
    assert np.count_nonzero(wd[[0, 1, 2, 7]]) == 0
    np.testing.assert_allclose(y, np.tile(wd.astype(np.float64).sum(1), (2, 1)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(y1, y[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("out,k,block", SHAPES)
def test_linears_match_float64_reference(out, k, block):
    rng = np.random.default_rng(7 + out + k)
    w = (rng.standard_normal((out, k)) * 0.05 + 0.02).astype(F32)
    u = (rng.standard_normal((out, k)) * 0.05 - 0.01).astype(F32)
    bias = rng.standard_normal(out).astype(F32)
    with ops.prepack_int4_min_blocked(w, block_size=block) as p, \
            ops.prepack_int4_min_blocked(u, block_size=block) as q:
        wd, ud = p.unpack().astype(np.float64), q.unpack().astype(np.float64)
        for m in MS:
            x = rng.standard_normal((m, k)).astype(F32)
            xr = round_x16(x, block) if int16_gemm_applies("int4-min", m) else x  # the x the kernel multiplies
            g = xr.astype(np.float64) @ wd.T
            G, U = mag(x, wd, bias), mag(x, ud)
            assert rel_err(ops.linear_int4_min(x, p, bias), g + bias, G) < 4e-6, m
            ref = 0.5 * (g + bias) * _erfc(-(g + bias) / math.sqrt(2.0))
            assert rel_err(ops.linear_int4_min(x, p, bias, gelu=True), ref, G) < 6e-6, m
            up = xr.astype(np.float64) @ ud.T
            ref = (g + bias) / (1 + np.exp(-(g + bias))) * up
            assert rel_err(ops.linear_swiglu_int4_min(x, p, q, (bias, None)), ref, G * U) < 8e-6, m
            s = (np.abs(x).max(1, keepdims=True) / F32(127)).astype(F32)
            xq = (np.clip(np.rint(x / s), -127, 127) * s).astype(np.float32)  # f32 math, as libvt
            xq = (round_x16(xq, block) if int16_gemm_applies("int4-min", m) else xq).astype(np.float64)
            assert rel_err(ops.linear_int4_min(x, p, w4a8=True), xq @ wd.T, mag(xq, wd)) < 4e-6, m
            assert rel_err(ops.linear_swiglu_int4_min(x, p, q, w4a8=True),
                           (xq @ wd.T) / (1 + np.exp(-(xq @ wd.T))) * (xq @ ud.T), mag(xq, wd) * mag(xq, ud)) < 8e-6, m
        assert ops.linear_int4_min(x[0], p).shape == (out,)


def test_close_to_unquantized():
    rng = np.random.default_rng(3)
    w = (rng.standard_normal((256, 512)) * 0.05).astype(F32)
    x = rng.standard_normal((4, 512)).astype(F32)
    with ops.prepack_int4_min_blocked(w) as p:
        y = ops.linear_int4_min(x, p)
    exact = x.astype(np.float64) @ w.T.astype(np.float64)
    err = np.linalg.norm(y - exact) / np.linalg.norm(exact)
    assert 0.02 < err < 0.12  # 4 bits: ~8 % weight error, not 0 and not garbage


@pytest.mark.parametrize("m", [1, 3, 17])
def test_nan_and_inf_in_x_propagate(m):
    rng = np.random.default_rng(11)
    w = (rng.standard_normal((40, 70)) * 0.05).astype(F32)
    with ops.prepack_int4_min_blocked(w) as p:
        x = rng.standard_normal((m, 70)).astype(F32)
        x[0, 10] = np.inf
        x[-1, 3] = np.nan if m > 1 else x[-1, 3]
        y = ops.linear_int4_min(x, p)
    # Every weight is u*s + min: an Inf or NaN in x makes its whole row of y non-finite.
    assert not np.isfinite(y[0]).any() and not np.isfinite(y[-1]).any()
    if m > 2:
        assert np.isfinite(y[1:-1]).all()


def test_bad_arguments():
    w = np.ones((4, 64), F32)
    with pytest.raises(ValueError, match="block_size"):
        ops.prepack_int4_min_blocked(w, block_size=48)
    for bad_value, name in ((np.nan, "NaN"), (np.inf, "\\+Inf"), (-np.inf, "-Inf")):
        bad = w.copy()
        bad[2, 5] = bad_value
        with pytest.raises(ValueError, match=f"row 2, column 5 is {name}"):
            ops.prepack_int4_min_blocked(bad)
    with ops.prepack_int4_min_blocked(w) as p, ops.prepack_int4_blocked(w) as q:
        with pytest.raises(TypeError):
            ops.linear_int4_min(np.ones(64, F32), q)  # an int4 handle is not int4-min
        with pytest.raises(TypeError):
            ops.linear_int4(np.ones(64, F32), p)
        with pytest.raises(ValueError):
            ops.linear_int4_min(np.ones(63, F32), p)
        with pytest.raises(TypeError):
            ops.linear_swiglu_int4_min(np.ones(64, F32), p, q)


def test_device_placement():
    check_device_placement("prepack_int4_min_blocked")


@pytest.mark.cuda
@pytest.mark.skipif(not ops.cuda_available(), reason="no usable CUDA device")
def test_cuda_linears_match_cpu():
    check_cuda_matches_cpu("prepack_int4_min_blocked", "linear_int4_min", "linear_swiglu_int4_min", shift=0.02)


def test_every_isa_level_matches_the_reference(tmp_path):
    # Weights shifted off zero: the block minimums matter.
    check_every_isa_level(tmp_path, "prepack_int4_min_blocked", "linear_int4_min", "linear_swiglu_int4_min",
                          shift=0.02, tol_linear=4e-6, tol_swiglu=8e-6)


# ---- a model with int4-min layers ----------------------------------------------------------

PROMPT = MODEL_PROMPT


@pytest.mark.parametrize("tie", [False, True])
def test_model_int4_min_equals_reference_of_its_quantized_weights(tmp_path, tie):
    """check_model_matches_reference (tests/dense4.py), and the model stays close to bf16."""
    from pyvt import _model

    got = check_model_matches_reference(tmp_path, "int4-min", "prepack_int4_min_blocked", tie)
    # Against the bf16 model: 4-bit weights move the logits (relative RMS, measured 0.09-0.16
    # on these random Gaussian weights), about as much as int4 (0.09-0.13), far more than int8.
    lg = {}
    for f in ("bf16", "int8", "int4"):
        with _model.Model(str(tmp_path), weight_format=f, device="cpu") as b:
            lg[f] = b.logits(PROMPT).astype(np.float64)
    bf = lg["bf16"]

    def d(y):
        return float(np.linalg.norm(y - bf) / np.linalg.norm(bf - bf.mean(-1, keepdims=True)))

    assert 5 * d(lg["int8"]) < d(got) < min(0.25, 1.6 * d(lg["int4"])), (d(got), d(lg["int4"]), d(lg["int8"]))


def test_model_int4_min_generates_deterministically_and_caches(tmp_path):
    """Greedy generation repeats itself; a second load reads the packed cache (scales, mins
    and min_off restored: the same logits and tokens) without rewriting it."""
    from pyvt import _model

    cfg = R.TinyConfig(hidden=96, intermediate=160, heads=2, kv_heads=1)
    R.write_checkpoint(tmp_path / "ck", cfg, seed=9)
    cache = tmp_path / "cache"

    def run():
        with _model.Model(str(tmp_path / "ck"), weight_format="int4-min", device="cpu",
                          packed_cache_dir=str(cache)) as m:
            g1, _ = m.generate(PROMPT, max_new_tokens=12, stop_on_eos=False)
            g2, _ = m.generate(PROMPT, max_new_tokens=12, stop_on_eos=False)
            assert m.info["weight_format"] == "int4-min"
            return m.logits(PROMPT), g1, g2

    a, g1, g2 = run()
    assert g1 == g2 and len(g1) == 12
    files = [p for p in cache.iterdir() if p.name.endswith(".vtpack")]
    assert len(files) == 1
    before = files[0].stat().st_mtime_ns
    b, h1, _ = run()
    np.testing.assert_array_equal(b, a)
    assert h1 == g1
    assert files[0].stat().st_mtime_ns == before  # read, not rewritten
    # Another format gets its own file (int4 is not int4-min).
    with _model.Model(str(tmp_path / "ck"), weight_format="int4", device="cpu", packed_cache_dir=str(cache)) as m:
        assert not np.array_equal(m.logits(PROMPT), a)
    assert len([p for p in cache.iterdir() if p.name.endswith(".vtpack")]) == 2


def test_integer_sums_at_their_bound(tmp_path):
    check_sums_at_their_bound(tmp_path, "prepack_int4_min_blocked", "linear_int4_min", "int4-min")
