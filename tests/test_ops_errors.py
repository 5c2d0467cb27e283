"""Bad input to the ops API: each a clear Python exception naming the problem, never a crash."""

from __future__ import annotations

import gc
import re
import threading
import time

import numpy as np
import pytest

from pyvt import ops

W = np.random.default_rng(0).standard_normal((40, 64)).astype(np.float32)
X = np.random.default_rng(1).standard_normal((3, 64)).astype(np.float32)


@pytest.fixture
def packed():
    with ops.prepack_int8_blocked(W) as p:
        yield p


@pytest.fixture
def fp8():
    with ops.prepack_fp8_blocked(W) as p:
        yield p


# ---- prepack ------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.uint8, np.complex64])
def test_prepack_wrong_dtype(dtype):
    with pytest.raises(TypeError, match=r"w has dtype .*expected float32, float16 or bfloat16"):
        ops.prepack_int8_blocked(W.astype(dtype))


@pytest.mark.parametrize("shape", [(64,), (2, 4, 64), ()])
def test_prepack_wrong_rank(shape):
    with pytest.raises(ValueError, match=r"w must be 2-D \[out_features, in_features\]"):
        ops.prepack_fp8(np.zeros(shape, np.float32))


def test_prepack_not_an_array():
    with pytest.raises(TypeError, match="w must be a numpy.ndarray, got list"):
        ops.prepack_fp8([[1.0, 2.0]])


def test_prepack_non_contiguous():
    with pytest.raises(ValueError, match=r"w must be C-contiguous.*np.ascontiguousarray\(w\)"):
        ops.prepack_int8_blocked(W[:, ::2])
    with pytest.raises(ValueError, match="w must be C-contiguous"):
        ops.prepack_fp8(W.T)


@pytest.mark.parametrize("shape", [(0, 64), (40, 0), (0, 0)])
def test_prepack_zero_size(shape):
    with pytest.raises(ValueError, match=r"w is empty"):
        ops.prepack_fp8_blocked(np.zeros(shape, np.float32))


@pytest.mark.parametrize("bad, name", [(np.nan, "NaN"), (np.inf, "+Inf"), (-np.inf, "-Inf")])
@pytest.mark.parametrize("prep", [ops.prepack_fp8, ops.prepack_fp8_blocked, ops.prepack_int8_blocked,
                                  ops.prepack_int8_sparse24, ops.prepack_int4_sparse24])
def test_prepack_non_finite_names_row_and_column(prep, bad, name):
    w = W.copy()
    w[7, 5] = bad
    w[30, 1] = bad  # a later one: the first is reported
    with pytest.raises(ValueError, match=rf"row 7, column 5 is {re.escape(name)}"):
        prep(w)


@pytest.mark.parametrize("block", [0, 8, 24, 256, -16])
def test_bad_block_size(block):
    with pytest.raises(ValueError, match=rf"block_size must be one of 16, 32, 64, 128 \(got {block}\)"):
        ops.prepack_int8_blocked(W, block_size=block)
    with pytest.raises(TypeError, match="block_size must be an int"):
        ops.prepack_fp8_blocked(W, block_size=16.0)


def test_in_features_not_multiple_of_block():
    w = np.ones((4, 48), np.float32)
    with pytest.raises(ValueError, match=r"in_features \(48\) is not a multiple of block_size \(32\)"):
        ops.prepack_int8_blocked(w)
    with pytest.raises(ValueError, match=r"in_features \(48\) is not a multiple of block_size \(128\)"):
        ops.prepack_fp8_blocked(w, block_size=128)
    with pytest.raises(ValueError, match=r"in_features \(10\) of a 2:4 sparse format must be a multiple of 4"):
        ops.prepack_int8_sparse24(np.ones((4, 10), np.float32))


def test_handles_cannot_be_built_directly():
    with pytest.raises(TypeError, match="created by the prepack_"):
        ops.PackedFp8()


# ---- linears ------------------------------------------------------------------------------

def test_handle_type_mismatch_names_both(packed, fp8):
    with pytest.raises(TypeError, match=r"linear_fp8 expects a PackedFp8 .* got PackedInt8"):
        ops.linear_fp8(X, packed)
    with pytest.raises(TypeError, match=r"linear_int8_w8a16 expects a PackedInt8 .* got PackedFp8"):
        ops.linear_int8_w8a16(X, fp8)
    with pytest.raises(TypeError, match=r"expects a PackedInt8Sparse24 .* got PackedInt8"):
        ops.linear_int8_sparse(X, packed)
    with pytest.raises(TypeError, match=r"expects a PackedFp8 .* got ndarray"):
        ops.linear_fp8_w8a16(X, W)
    with pytest.raises(TypeError, match=r"\(up\) expects a PackedFp8 .* got NoneType"):
        ops.linear_swiglu_fp8(X, fp8, None)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.uint8])
def test_x_wrong_dtype(packed, dtype):
    with pytest.raises(TypeError, match=r"x has dtype .*expected one of float32, float16, bfloat16"):
        ops.linear_int8_w8a16(X.astype(dtype), packed)


def test_x_wrong_rank_and_shape(packed):
    with pytest.raises(ValueError, match=r"x must be 1-D \[in_features\] or 2-D \[m, in_features\]"):
        ops.linear_int8_w8a16(X.reshape(3, 1, 64), packed)
    with pytest.raises(ValueError, match=r"x has 63 features \(shape \(3, 63\)\) but the weight has "
                                         r"in_features = 64 \(weight shape \(40, 64\)\)"):
        ops.linear_int8_w8a16(X[:, :63].copy(), packed)
    with pytest.raises(ValueError, match=r"x has 65 features"):
        ops.linear_int8_w8a16(np.zeros(65, np.float32), packed)
    with pytest.raises(TypeError, match="x must be a numpy.ndarray, got list"):
        ops.linear_int8_w8a16([0.0] * 64, packed)


def test_x_zero_size(packed):
    with pytest.raises(ValueError, match=r"x is empty \(shape \(0, 64\)\)"):
        ops.linear_int8_w8a16(np.zeros((0, 64), np.float32), packed)


def test_x_non_contiguous(packed):
    x = np.zeros((64, 6), np.float32).T  # (6, 64) with strides
    with pytest.raises(ValueError, match=r"x must be C-contiguous.*np.ascontiguousarray\(x\)"):
        ops.linear_int8_w8a16(x, packed)
    with pytest.raises(ValueError, match="x must be C-contiguous"):
        ops.linear_int8_w8a16(np.zeros(128, np.float32)[::2], packed)


def test_read_only_x_is_fine(packed):
    x = X.copy()
    x.flags.writeable = False
    assert ops.linear_int8_w8a16(x, packed).shape == (3, 40)


def test_bias_checks(packed, fp8):
    with pytest.raises(ValueError, match=r"bias must have shape \(40,\), got \(39,\)"):
        ops.linear_int8_w8a16(X, packed, np.zeros(39, np.float32))
    with pytest.raises(TypeError, match="bias has dtype int64"):
        ops.linear_int8_w8a16(X, packed, np.zeros(40, np.int64))
    with pytest.raises(ValueError, match="bias must be C-contiguous"):
        ops.linear_int8_w8a16(X, packed, np.zeros(80, np.float32)[::2])
    with pytest.raises(TypeError, match=r"bias must be None or a pair \(gate_bias, up_bias\)"):
        ops.linear_swiglu_fp8(X, fp8, fp8, np.zeros(40, np.float32))
    with pytest.raises(ValueError, match=r"bias\[1\] \(up bias\) must have shape \(40,\)"):
        ops.linear_swiglu_fp8(X, fp8, fp8, (None, np.zeros(3, np.float32)))


def test_swiglu_shape_mismatch(fp8):
    with ops.prepack_fp8_blocked(W[:32].copy()) as small:
        with pytest.raises(ValueError, match=r"gate shape \(40, 64\) != up shape \(32, 64\)"):
            ops.linear_swiglu_fp8(X, fp8, small)


# ---- lifetime -----------------------------------------------------------------------------

def test_use_after_close():
    p = ops.prepack_fp8(W)
    assert not p.closed
    p.close()
    assert p.closed
    p.close()  # idempotent
    for call in (lambda: ops.linear_fp8_w8a16(X, p), lambda: p.unpack(), lambda: p.shape,
                 lambda: p.nbytes, lambda: ops.linear_swiglu_fp8(X, p, p)):
        with pytest.raises(RuntimeError, match="this PackedFp8 is closed"):
            call()
    assert "closed" in repr(p)
    with pytest.raises(RuntimeError, match="closed"):
        with p:
            pass


def test_close_while_another_thread_computes():
    """close() during a GIL-free call on another thread: that call finishes on valid memory,
    later calls fail cleanly (the memory goes when the last call returns)."""
    w = np.random.default_rng(2).standard_normal((1024, 1024)).astype(np.float32)
    x = np.random.default_rng(3).standard_normal((64, 1024)).astype(np.float32)
    p = ops.prepack_int8_blocked(w)
    ref = ops.linear_int8_w8a16(x, p)
    outcome = {"ok": 0, "closed": 0, "other": []}

    def work():
        for _ in range(400):
            try:
                y = ops.linear_int8_w8a16(x, p)
                outcome["ok"] += 1
                assert np.array_equal(y, ref)
            except RuntimeError as e:
                if "closed" in str(e):
                    outcome["closed"] += 1
                    return
                outcome["other"].append(e)
                return

    th = threading.Thread(target=work)
    th.start()
    time.sleep(0.02)
    p.close()
    th.join(timeout=120)
    assert not th.is_alive() and not outcome["other"] and p.closed
    assert outcome["ok"] + outcome["closed"] >= 1


def test_context_manager_closes_and_gc_frees():
    with ops.prepack_int4_sparse24(W) as p:
        assert p.shape == (40, 64) and p.format == "int4-sparse24" and p.device == "cpu"
    assert p.closed
    for _ in range(50):  # dropped handles are freed (no leak, no double free)
        q = ops.prepack_int8_blocked(W)
        del q
    gc.collect()


# ---- other ops --------------------------------------------------------------------------

def test_convert_and_transpose_errors():
    with pytest.raises(ValueError, match="to_dtype 'int8' is not one of"):
        ops.convert(W, "int8")
    with pytest.raises(TypeError, match="pass from_dtype="):
        ops.convert(np.zeros(3, np.uint16), "f32")
    with pytest.raises(TypeError, match="cannot hold bfloat16"):
        ops.convert(np.zeros(3, np.uint8), "f32", from_dtype="bf16")
    with pytest.raises(ValueError, match="arr must be C-contiguous"):
        ops.convert(W[:, ::2], "bf16")
    with pytest.raises(TypeError, match="codes has dtype float32; expected uint8"):
        ops.fp8_e4m3_decode(W)
    with pytest.raises(TypeError, match="Python objects"):
        ops.transpose(np.empty((2, 2), dtype=object))
    with pytest.raises(ValueError, match="a must be 2-D"):
        ops.transpose(np.zeros(3, np.float32))
    with pytest.raises(TypeError, match="16 bytes per element"):
        ops.transpose(np.zeros((2, 2), np.complex128))
    assert ops.transpose(np.zeros((0, 3), np.float32)).shape == (3, 0)


def test_thread_and_info_functions():
    with pytest.raises(TypeError, match="n must be an int"):
        ops.set_num_threads("2")
    assert ops.version().count(".") == 2
    assert ops.backend_info().startswith("cpu: available")
    assert "cuda:" in ops.backend_info()
    assert ops.cpu_isa() in ("generic", "avx2", "avx512", "neon")
    assert ops.cuda_available() in (True, False)
