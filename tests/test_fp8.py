"""FP8 E4M3 (OCP e4m3fn) and the other element conversions against ml_dtypes / numpy.

vt.h's FP8 rules: round-to-nearest-even; finite values beyond ±448 and ±Inf saturate to
±448 (ml_dtypes turns those into NaN instead, so they are checked separately); NaN stays NaN.
"""

from __future__ import annotations

import numpy as np
import pytest

from pyvt import ops

ml_dtypes = pytest.importorskip("ml_dtypes")
E4M3 = ml_dtypes.float8_e4m3fn
BF16 = ml_dtypes.bfloat16

ALL_CODES = np.arange(256, dtype=np.uint8)


def ref_encode(x: np.ndarray) -> np.ndarray:
    return np.asarray(x).astype(E4M3).view(np.uint8)


def finite_codes() -> np.ndarray:
    return ALL_CODES[(ALL_CODES & 0x7F) != 0x7F]


def test_decode_all_256_codes():
    got = ops.fp8_e4m3_decode(ALL_CODES)
    want = ALL_CODES.view(E4M3).astype(np.float32)
    assert got.dtype == np.float32 and got.shape == (256,)
    nan = np.isnan(want)
    assert list(np.flatnonzero(nan)) == [0x7F, 0xFF]
    assert np.isnan(got[nan]).all()
    assert np.array_equal(got[~nan], want[~nan])
    assert got[0x7E] == 448.0 and got[0xFE] == -448.0
    assert got[0x01] == 2.0 ** -9 and got[0x08] == 2.0 ** -6
    assert np.signbit(got[0x80]) and got[0x80] == 0.0


def test_encode_every_code_value_round_trips():
    codes = finite_codes()
    values = codes.view(E4M3).astype(np.float32)
    assert np.array_equal(ops.fp8_e4m3_encode(values), codes)


def _sorted_positive_values() -> np.ndarray:
    v = np.unique(finite_codes().view(E4M3).astype(np.float64))
    return v[v >= 0]


def test_encode_midpoints_and_neighbours_match_ml_dtypes():
    v = _sorted_positive_values()
    mids = ((v[:-1] + v[1:]) / 2).astype(np.float32)  # exact in f32
    assert np.array_equal(mids.astype(np.float64), (v[:-1] + v[1:]) / 2)
    below = np.nextafter(mids, np.float32(0))
    above = np.nextafter(mids, np.float32(np.inf))
    for arr in (mids, below, above, -mids, -below, -above):
        assert np.array_equal(ops.fp8_e4m3_encode(arr), ref_encode(arr))
    # Ties go to the even mantissa: 1.0625 is halfway between 1.0 (0x38) and 1.125 (0x39).
    assert ops.fp8_e4m3_encode(np.float32([1.0625, 1.1875]))[0] == 0x38
    assert ops.fp8_e4m3_encode(np.float32([1.1875]))[0] == 0x3A  # halfway 1.125 / 1.25 -> even


def test_encode_random_values_match_ml_dtypes():
    rng = np.random.default_rng(0)
    x = np.concatenate([
        rng.standard_normal(20000).astype(np.float32) * 10.0 ** rng.integers(-4, 3, 20000),
        rng.uniform(-460, 460, 5000).astype(np.float32),
        rng.uniform(-2 ** -6, 2 ** -6, 5000).astype(np.float32),
    ]).astype(np.float32)
    assert np.array_equal(ops.fp8_e4m3_encode(x), ref_encode(x))
    xh = x[np.abs(x) < 400].astype(np.float16)
    assert np.array_equal(ops.fp8_e4m3_encode(xh), ref_encode(xh.astype(np.float32)))
    xb = x[np.abs(x) < 400].astype(BF16)
    assert np.array_equal(ops.fp8_e4m3_encode(xb), ref_encode(xb.astype(np.float32)))


def test_saturation_nan_and_signed_zero():
    x = np.array([448, 449, 463.99, 464, 480, 1e6, np.inf, 3e38,
                  -448, -464, -1e6, -np.inf, np.nan, -np.nan, 0.0, -0.0], dtype=np.float32)
    got = ops.fp8_e4m3_encode(x)
    assert list(got[:6]) == [0x7E] * 6
    assert got[6] == 0x7E and got[7] == 0x7E
    assert list(got[8:12]) == [0xFE] * 4
    assert got[12] & 0x7F == 0x7F and got[13] & 0x7F == 0x7F
    assert got[14] == 0x00 and got[15] == 0x80


def test_subnormals():
    # Multiples of 2^-9 below 2^-6, and the ties between them (even wins).
    k = np.arange(0, 9, dtype=np.float32)
    assert list(ops.fp8_e4m3_encode(k * 2.0 ** -9)) == list(range(9))
    ties = (k[:-1] + 0.5) * np.float32(2.0 ** -9)
    want = [0, 2, 2, 4, 4, 6, 6, 8]  # 0.5 -> 0, 1.5 -> 2, ...
    assert list(ops.fp8_e4m3_encode(ties)) == want
    assert np.array_equal(ops.fp8_e4m3_encode(ties), ref_encode(ties))
    tiny = np.float32([1e-30, 2.0 ** -11, -2.0 ** -11, 1e-45])
    assert list(ops.fp8_e4m3_encode(tiny)) == [0, 0, 0x80, 0]


def test_float64_source_rounds_once():
    # 1.0625 + 2^-40 is above the 1.0 / 1.125 midpoint; rounding it to f32 first would land
    # exactly on the midpoint and tie to 1.0. Direct rounding must give 1.125 (0x39).
    d = np.array([1.0625 + 2.0 ** -40, 1.0625 - 2.0 ** -40, 1.0625], dtype=np.float64)
    assert list(ops.fp8_e4m3_encode(d)) == [0x39, 0x38, 0x38]
    assert list(ops.convert(d, "bf16")) == list(np.float64([1.0625 + 2.0 ** -40, 1.0625 - 2.0 ** -40, 1.0625])
                                              .astype(BF16).view(np.uint16))


def test_convert_f32_to_bf16_and_f16():
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(10000) * 10.0 ** rng.integers(-8, 8, 10000)).astype(np.float32)
    x = np.concatenate([x, np.float32([0.0, -0.0, np.inf, -np.inf, 65504, 65520, 65519.99, 1e-8, 6e-8,
                                       3.4e38, 1e-40])])
    assert np.array_equal(ops.convert(x, "bf16"), x.astype(BF16).view(np.uint16))
    with np.errstate(over="ignore"):  # numpy warns on the values that become Inf
        want16 = x.astype(np.float16).view(np.uint16)
    assert np.array_equal(ops.convert(x, "float16").view(np.uint16), want16)
    nan = ops.convert(np.float32([np.nan]), "bf16")
    assert np.isnan(nan.view(BF16).astype(np.float32)).all()


def test_convert_widening_and_raw_containers():
    rng = np.random.default_rng(2)
    h = rng.standard_normal(1000).astype(np.float16)
    assert np.array_equal(ops.convert(h, "float32"), h.astype(np.float32))
    b = rng.standard_normal(1000).astype(BF16)
    assert np.array_equal(ops.convert(b, "f32"), b.astype(np.float32))
    assert np.array_equal(ops.convert(b.view(np.uint16), "f32", from_dtype="bf16"), b.astype(np.float32))
    codes = ALL_CODES[(ALL_CODES & 0x7F) != 0x7F]
    assert np.array_equal(ops.convert(codes, "float64", from_dtype="fp8"),
                          codes.view(E4M3).astype(np.float64))
    x = rng.standard_normal((3, 5)).astype(np.float32)
    assert ops.convert(x, "fp8").shape == (3, 5) and ops.convert(x, "fp8").dtype == np.uint8
    assert ops.convert(np.zeros((0,), np.float32), "bf16").shape == (0,)


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.float64, np.complex64])
def test_transpose_matches_numpy(dtype):
    rng = np.random.default_rng(3)
    for shape in [(1, 1), (1, 7), (33, 65), (100, 37), (256, 64)]:
        a = rng.integers(0, 100, size=shape).astype(dtype)
        t = ops.transpose(a)
        assert t.dtype == a.dtype and t.shape == shape[::-1]
        assert np.array_equal(t, a.T)
    b = rng.standard_normal((9, 4)).astype(BF16)
    assert np.array_equal(ops.transpose(b).view(np.uint16), b.T.view(np.uint16))
