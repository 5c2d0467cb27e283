"""The inference API with weights on a GPU: prepack_*(..., device=...), linears on device
arrays (__cuda_array_interface__: PyTorch, CuPy, pyvt.DeviceArray), DeviceArray.

Unmarked tests run everywhere (CI has no GPU): device selection and its errors, argument
checks that come before any device work. Tests marked `cuda` need a usable GPU (skipped
otherwise; bench/gpu_check.sh runs them): every dense format and linear against the CPU handle
of the same weights, zero-copy round trips with torch, streams, bad input, memory release.
The same behaviour at the C level: tests/c/test_device_api.c.
"""

from __future__ import annotations

import ctypes
import gc
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import pyvt
from pyvt import _device

HAVE_CUDA = pyvt.ops.cuda_available()
# Set by test_python_side_on_an_emulated_gpu for its child run (tests/c/emulated_gpu.c).
EMULATED = os.environ.get("PYVT_TEST_EMULATED_GPU") == "1"
needs_real_gpu = pytest.mark.skipif(EMULATED, reason="checks libvt's CUDA code, which the emulation replaces")
ROOT = Path(__file__).resolve().parent.parent


def on_gpu(test):
    """Marked `cuda` (bench/gpu_check.sh selects these) and skipped without a usable GPU."""
    skip = pytest.mark.skipif(not HAVE_CUDA, reason="no usable CUDA device: " + pyvt.backends())
    return pytest.mark.cuda(skip(test))


no_gpu_only = pytest.mark.skipif(HAVE_CUDA, reason="checks the behaviour without a usable GPU")

TOL = 2e-3  # normalized error GPU vs CPU on the same quantized weights (as tests/test_cuda.py)


def nerr(a, b) -> float:
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    assert np.isfinite(a).all()
    return float(np.abs(a - b).max() / np.abs(b).max())


def rand(*shape, seed=0, scale=1.0):
    return (np.random.default_rng(seed).standard_normal(shape) * scale).astype(np.float32)


class FakeCAI:
    """An object that claims to be device memory (nothing here dereferences it)."""

    def __init__(self, **cai):
        base = dict(shape=(2, 64), typestr="<f4", data=(0x7F0000001000, False), version=3, strides=None)
        base.update(cai)
        self.__cuda_array_interface__ = base


class DLPackOf:
    """A DLPack producer (legacy 'dltensor' capsule, built with ctypes) over the memory of a
    pyvt.DeviceArray: device arrays that only speak DLPack, without PyTorch."""

    class _Dev(ctypes.Structure):
        _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]

    class _DType(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]

    class _Tensor(ctypes.Structure):
        pass

    _Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)

    def __init__(self, arr, device=(2, 0), dtype=(2, 32, 1), shape=None, strides=None):
        self.arr, self.device, self.deleted, self.streams = arr, device, 0, []
        shape = arr.shape if shape is None else shape
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        self._fields = (arr.data_ptr, device, len(shape), dtype)

        def deleter(_):
            self.deleted += 1

        self._deleter = self._Deleter(deleter)

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        T = type(self)
        fields = [("data", ctypes.c_void_p), ("device", T._Dev), ("ndim", ctypes.c_int32),
                  ("dtype", T._DType), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                  ("byte_offset", ctypes.c_uint64), ("manager_ctx", ctypes.c_void_p),
                  ("deleter", T._Deleter)]
        Managed = type("Managed", (ctypes.Structure,), {"_fields_": fields})
        ptr, dev, ndim, dt = self._fields
        self._managed = Managed(ptr, T._Dev(*dev), ndim, T._DType(*dt), ctypes.addressof(self._shape),
                                None if self._strides is None else ctypes.addressof(self._strides),
                                0, None, self._deleter)
        new = ctypes.pythonapi.PyCapsule_New
        new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
        return new(ctypes.addressof(self._managed), b"dltensor", None)


class FakeDLPackDevice:
    """Claims to be CUDA memory through DLPack (its capsule is never asked for)."""

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        raise AssertionError("not to be consumed")


# ==== everywhere ===========================================================================


def test_backend_unavailable_is_exported_and_a_runtime_error():
    assert issubclass(pyvt.BackendUnavailable, RuntimeError)
    assert pyvt.ops.BackendUnavailable is pyvt.BackendUnavailable
    assert "DeviceArray" in pyvt.ops.__all__ and "to_device" in pyvt.ops.__all__


def test_default_device_is_cpu():
    with pyvt.prepack_int8_blocked(rand(16, 64)) as p:
        assert p.device == "cpu" and "device=cpu" in repr(p)


@no_gpu_only
@pytest.mark.parametrize("device", ["cuda", "cuda:0", "cuda:3"])
def test_cuda_refused_without_gpu_naming_the_reason(device):
    idx = device.split(":")[1] if ":" in device else "0"
    with pytest.raises(pyvt.BackendUnavailable, match=rf"cuda:{idx} was requested, but \w.{{8,}}"):
        pyvt.prepack_fp8_blocked(rand(16, 64), device=device)


@no_gpu_only
def test_model_device_cuda_without_gpu_is_backend_unavailable(tmp_path):
    import llama_ref as R
    from pyvt import _model

    R.write_checkpoint(tmp_path, R.TinyConfig(), seed=3)
    with pytest.raises(pyvt.BackendUnavailable, match="was requested, but"):
        _model.Model(str(tmp_path), device="cuda")


@pytest.mark.parametrize("prepack", [pyvt.prepack_fp8, pyvt.prepack_fp8_blocked, pyvt.prepack_int8_blocked])
def test_auto_uses_the_gpu_when_there_is_one_else_the_cpu(prepack):
    w = rand(24, 64)
    with prepack(w, device="auto") as p, prepack(w) as c:
        assert p.device == ("cuda:0" if HAVE_CUDA else "cpu")
        np.testing.assert_array_equal(p.unpack(), c.unpack())
        x = rand(3, 64, seed=1)
        y = pyvt.linear_fp8_w8a16(x, p) if isinstance(p, pyvt.PackedFp8) else pyvt.linear_int8_w8a16(x, p)
        assert isinstance(y, np.ndarray) and y.shape == (3, 24)


CUTLASS_BUILT = any(ln.startswith("cutlass: built") for ln in pyvt.backends().splitlines())


@pytest.mark.parametrize("prepack", [pyvt.prepack_int8_sparse24, pyvt.prepack_int4_sparse24])
def test_auto_places_sparse_formats_where_they_run(prepack):
    # 2:4 sparse runs on CUDA only through the CUTLASS GEMMs; without them "auto" keeps it on the CPU.
    with prepack(rand(8, 64), device="auto") as p:
        assert p.device == ("cuda:0" if HAVE_CUDA and CUTLASS_BUILT and not EMULATED else "cpu")


@pytest.mark.parametrize("device, exc, match", [
    ("tpu", ValueError, "'cpu', 'cuda', 'cuda:N' or 'auto'"),
    ("cuda:", ValueError, "'cuda:'"),
    ("cuda:-1", ValueError, "'cuda:-1'"),
    ("cuda:x", ValueError, "'cuda:x'"),
    (0, TypeError, "got int"),
    (None, TypeError, "got NoneType"),
])
def test_bad_device_argument(device, exc, match):
    with pytest.raises(exc, match=match):
        pyvt.prepack_int8_blocked(rand(8, 64), device=device)


def test_device_accepts_torch_device():
    torch = pytest.importorskip("torch")
    with pyvt.prepack_int8_blocked(rand(8, 64), device=torch.device("cpu")) as p:
        assert p.device == "cpu"


def test_device_array_is_not_constructible():
    with pytest.raises(TypeError, match="to_device"):
        pyvt.DeviceArray()


@no_gpu_only
def test_to_device_without_gpu():
    with pytest.raises(pyvt.BackendUnavailable):
        pyvt.to_device(np.zeros((2, 3), np.float32))


def test_to_device_argument_checks():
    with pytest.raises(ValueError, match="'cuda' or 'cuda:N'"):
        pyvt.to_device(np.zeros(3, np.float32), device="cpu")
    with pytest.raises(TypeError, match="a has dtype int32"):
        pyvt.to_device(np.zeros(3, np.int32))
    with pytest.raises(TypeError, match="numpy.ndarray"):
        pyvt.to_device([1.0, 2.0])
    with pytest.raises(ValueError, match="C-contiguous"):
        pyvt.to_device(np.zeros((4, 4), np.float32)[:, ::2])


@pytest.mark.parametrize("fn, prepack", [
    (pyvt.linear_int8_w8a16, pyvt.prepack_int8_blocked),
    (pyvt.linear_fp8_w8a16, pyvt.prepack_fp8_blocked),
    (pyvt.linear_fp8, pyvt.prepack_fp8),
    (pyvt.linear_gelu_fp8, pyvt.prepack_fp8),
    (pyvt.linear_int8_sparse, pyvt.prepack_int8_sparse24),
    (pyvt.linear_int4_sparse, pyvt.prepack_int4_sparse24),
])
def test_device_input_with_a_cpu_weight_is_refused(fn, prepack):
    with prepack(rand(16, 64)) as p:
        with pytest.raises(TypeError, match=r"x is GPU memory \(FakeCAI\) but the weight is on the CPU"):
            fn(FakeCAI(), p)


def test_dlpack_cuda_input_with_a_cpu_weight_is_refused():
    with pyvt.prepack_int8_blocked(rand(16, 64)) as p:
        with pytest.raises(TypeError, match=r"x is GPU memory \(FakeDLPackDevice\) but the weight is on the CPU"):
            pyvt.linear_int8_w8a16(FakeDLPackDevice(), p)


def test_device_input_with_cpu_swiglu_weights_is_refused():
    with pyvt.prepack_fp8(rand(16, 64)) as g, pyvt.prepack_fp8(rand(16, 64, seed=1)) as u:
        with pytest.raises(TypeError, match="the weight is on the CPU"):
            pyvt.linear_swiglu_fp8(FakeCAI(), g, u)


def test_torch_cuda_tensor_with_a_cpu_weight_is_refused():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    with pyvt.prepack_int8_blocked(rand(16, 64)) as p:
        with pytest.raises(TypeError, match="the weight is on the CPU"):
            pyvt.linear_int8_w8a16(torch.zeros(2, 64, device="cuda"), p)


def test_stream_and_out_with_host_arrays_are_refused():
    with pyvt.prepack_int8_blocked(rand(16, 64)) as p, pyvt.prepack_fp8(rand(16, 64)) as f:
        with pytest.raises(ValueError, match="stream= applies to inputs in GPU memory"):
            pyvt.linear_int8_w8a16(rand(2, 64), p, stream=0)
        with pytest.raises(ValueError, match="out= applies to inputs in GPU memory"):
            pyvt.linear_int8_w8a16(rand(2, 64), p, out=np.empty((2, 16), np.float32))
        with pytest.raises(ValueError, match="out= applies to inputs in GPU memory"):
            pyvt.linear_swiglu_fp8(rand(2, 64), f, f, out=np.empty((2, 16), np.float32))


# The checks a device input goes through before it reaches libvt (libvt then checks that the
# pointer is memory of the weight's device).

def test_device_view_accepts_contiguous_float32():
    ptr, shape, stream = _device._device_view(FakeCAI(), "x")
    assert (ptr, shape, stream) == (0x7F0000001000, (2, 64), 0)
    # explicit C-contiguous strides, and strides of size-1 dimensions, are fine
    assert _device._device_view(FakeCAI(strides=(256, 4)), "x")[1] == (2, 64)
    assert _device._device_view(FakeCAI(shape=(1, 64), strides=(4, 4)), "x")[1] == (1, 64)


@pytest.mark.parametrize("stream, want", [(None, 0), (1, 0), (2, 2), (0x55AA00, 0x55AA00)])
def test_device_view_stream(stream, want):
    assert _device._device_view(FakeCAI(stream=stream), "x")[2] == want


@pytest.mark.parametrize("cai, exc, match", [
    (dict(typestr="<f2"), TypeError, r"x has typestr '<f2' \(float16\); device inputs must be float32"),
    (dict(typestr="<f8"), TypeError, r"\(float64\)"),
    (dict(typestr="|i1"), TypeError, "must be float32"),
    (dict(strides=(4, 256)), ValueError, "x must be C-contiguous"),
    (dict(strides=(512, 8)), ValueError, "x must be C-contiguous"),
    (dict(mask=(1, False)), ValueError, "mask"),
    (dict(shape=(0, 64)), ValueError, "x is empty"),
    (dict(data=(0, False)), ValueError, "null device pointer"),
    (dict(stream=0), ValueError, "'stream' is 0"),
    (dict(stream="s"), TypeError, "'stream' must be an int"),
])
def test_device_view_refuses(cai, exc, match):
    with pytest.raises(exc, match=match):
        _device._device_view(FakeCAI(**cai), "x")


def test_device_view_names_the_argument():
    with pytest.raises(TypeError, match=r"^bias\[0\] \(gate bias\) has typestr"):
        _device._device_view(FakeCAI(typestr="<f2"), "bias[0] (gate bias)")


@pytest.mark.skipif(HAVE_CUDA, reason="a GPU is here: the `cuda` tests run for real")
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the emulation is an LD_PRELOAD shim (glibc)")
def test_python_side_on_an_emulated_gpu(tmp_path):
    """Run this file's `cuda` tests against tests/c/emulated_gpu.c, an LD_PRELOAD shim that
    stands in for the GPU (host memory as device memory, CPU linears as device linears), so the
    Python side of the device API runs in CI: DeviceArray, device inputs and their checks,
    1-D / 2-D shapes, bias upload, out=, lifetimes. Tests that need PyTorch on CUDA skip."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    shim = tmp_path / "emulated_gpu.so"
    build = subprocess.run([cc, "-shared", "-fPIC", "-O1", "-Wall", "-Wextra", "-Werror",
                            f"-I{pyvt.get_include()}", "-o", str(shim),
                            str(ROOT / "tests" / "c" / "emulated_gpu.c"), "-ldl"],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    env = dict(os.environ, LD_PRELOAD=str(shim), PYVT_TEST_EMULATED_GPU="1")
    # cwd outside the repo: `-m` puts it on sys.path, and the repo's pyvt/ is the source tree
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "cuda",
                          "-rs", str(Path(__file__).resolve())],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    passed = int(out.split(" passed")[0].rsplit(None, 1)[-1])
    assert passed >= 30, out  # the formats x m grid, swiglu, DeviceArray round trips


# ==== on a GPU ===============================================================================

DENSE = [  # (prepack, linear, quantize_input)
    ("int8-b32", lambda w, d: pyvt.prepack_int8_blocked(w, 32, device=d), pyvt.linear_int8_w8a16),
    ("int8-b128", lambda w, d: pyvt.prepack_int8_blocked(w, 128, device=d), pyvt.linear_int8_w8a16),
    ("fp8-b16", lambda w, d: pyvt.prepack_fp8_blocked(w, 16, device=d), pyvt.linear_fp8_w8a16),
    ("fp8-b64", lambda w, d: pyvt.prepack_fp8_blocked(w, 64, device=d), pyvt.linear_fp8_w8a16),
    ("fp8-channel", lambda w, d: pyvt.prepack_fp8(w, device=d), pyvt.linear_fp8_w8a16),
    ("fp8-w8a8", lambda w, d: pyvt.prepack_fp8_blocked(w, 16, device=d), pyvt.linear_fp8),
    ("fp8-gelu", lambda w, d: pyvt.prepack_fp8(w, device=d), pyvt.linear_gelu_fp8),
]


@pytest.fixture(scope="module")
def torch_cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch


@on_gpu
@pytest.mark.parametrize("name, prepack, fn", DENSE, ids=[d[0] for d in DENSE])
@pytest.mark.parametrize("m", [1, 3, 17, 100])
def test_gpu_linear_matches_cpu(name, prepack, fn, m):
    out_f, in_f = 72, 256
    w, x, b = rand(out_f, in_f, seed=2, scale=0.05), rand(m, in_f, seed=3), rand(out_f, seed=4, scale=0.1)
    with prepack(w, "cpu") as c, prepack(w, "cuda") as g:
        assert g.device == "cuda:0" and c.device == "cpu"
        np.testing.assert_array_equal(g.unpack(), c.unpack())  # same numbers on both
        ref = fn(x, c, b)
        # host arrays in, numpy out (copied, synchronous)
        yh = fn(x, g, b)
        assert isinstance(yh, np.ndarray) and yh.shape == (m, out_f)
        assert nerr(yh, ref) < TOL, nerr(yh, ref)
        # device arrays in (pyvt's own), DeviceArray out
        with pyvt.to_device(x) as xd, pyvt.to_device(b) as bd:
            yd = fn(xd, g, bd)
            assert isinstance(yd, pyvt.DeviceArray) and yd.shape == (m, out_f) and yd.device == "cuda:0"
            assert nerr(yd.numpy(), ref) < TOL, nerr(yd.numpy(), ref)
            yd2 = fn(xd, g, b)  # host bias with device x: uploaded for the call
            assert nerr(yd2.numpy(), ref) < TOL
            yd.close(), yd2.close()
        # 1-D input -> 1-D result
        with pyvt.to_device(x[0]) as x1:
            y1 = fn(x1, g, b)
            assert y1.shape == (out_f,)
            assert nerr(y1.numpy(), ref[0]) < TOL


@on_gpu
@pytest.mark.parametrize("prepack, swiglu", [(pyvt.prepack_fp8_blocked, pyvt.linear_swiglu_fp8),
                                             (pyvt.prepack_int8_blocked, pyvt.linear_swiglu_int8)],
                         ids=["fp8", "int8"])
@pytest.mark.parametrize("m", [1, 5, 40])
def test_gpu_swiglu_matches_cpu(prepack, swiglu, m):
    in_f, out_f = 128, 96
    wg, wu = rand(out_f, in_f, seed=5, scale=0.05), rand(out_f, in_f, seed=6, scale=0.05)
    x, gb, ub = rand(m, in_f, seed=7), rand(out_f, seed=8, scale=0.1), rand(out_f, seed=9, scale=0.1)
    with prepack(wg) as cg, prepack(wu) as cu, prepack(wg, device="cuda") as gg, prepack(wu, device="cuda") as gu:
        ref = swiglu(x, cg, cu, (gb, ub))
        assert nerr(swiglu(x, gg, gu, (gb, ub)), ref) < TOL
        with pyvt.to_device(x) as xd, pyvt.to_device(gb) as gbd:
            y = swiglu(xd, gg, gu, (gbd, ub))
            assert isinstance(y, pyvt.DeviceArray) and y.shape == (m, out_f)
            assert nerr(y.numpy(), ref) < TOL
        with pytest.raises(ValueError, match="same device"):
            swiglu(x, gg, cu)


@on_gpu
@needs_real_gpu
def test_gpu_sparse_formats_need_cutlass():
    if CUTLASS_BUILT:
        with pyvt.prepack_int8_sparse24(rand(8, 64), device="cuda") as p:
            assert p.device == "cuda:0"
    else:
        with pytest.raises(pyvt.BackendUnavailable, match="CUTLASS"):
            pyvt.prepack_int8_sparse24(rand(8, 64), device="cuda")


@on_gpu
def test_gpu_dlpack_inputs():
    w, x, b = rand(24, 64, seed=17, scale=0.05), rand(5, 64, seed=18), rand(24, seed=19)
    with pyvt.prepack_int8_blocked(w) as c, pyvt.prepack_int8_blocked(w, device="cuda") as g, \
            pyvt.to_device(x) as xd, pyvt.to_device(b) as bd:
        ref = pyvt.linear_int8_w8a16(x, c, b)
        dx, dbias = DLPackOf(xd), DLPackOf(bd)
        y = pyvt.linear_int8_w8a16(dx, g, dbias)
        assert isinstance(y, pyvt.DeviceArray) and y.shape == (5, 24)
        assert nerr(y.numpy(), ref) < TOL
        assert dx.deleted == 1 and dbias.deleted == 1  # consumed capsules are given back
        assert dx.streams == [1] and dbias.streams == [1]  # asked ready for the legacy default stream
        out = pyvt.to_device(np.zeros((5, 24), np.float32))
        assert pyvt.linear_int8_w8a16(dx, g, out=DLPackOf(out)) is not None
        assert nerr(out.numpy(), pyvt.linear_int8_w8a16(x, c)) < TOL
        # explicit C-contiguous strides (in elements) are fine; others are not
        y2 = pyvt.linear_int8_w8a16(DLPackOf(xd, strides=(64, 1)), g)
        assert nerr(y2.numpy(), pyvt.linear_int8_w8a16(x, c)) < TOL
        bad = DLPackOf(xd, strides=(1, 5))
        with pytest.raises(ValueError, match=r"x must be C-contiguous \(got strides \(1, 5\) elements"):
            pyvt.linear_int8_w8a16(bad, g)
        assert bad.deleted == 1  # given back on errors too
        with pytest.raises(TypeError, match=r"x has DLPack dtype \(code 2, 16 bits, 1 lanes\)"):
            pyvt.linear_int8_w8a16(DLPackOf(xd, dtype=(2, 16, 1)), g)
        with pytest.raises(ValueError, match="x has 32 features"):
            pyvt.linear_int8_w8a16(DLPackOf(xd, shape=(10, 32)), g)
        with pytest.raises(ValueError, match="x is on cuda:1 but the weight is on cuda:0"):
            pyvt.linear_int8_w8a16(DLPackOf(xd, device=(2, 1)), g)


@on_gpu
def test_gpu_device_array_interface_and_roundtrip():
    a = rand(3, 5, seed=10)
    with pyvt.to_device(a) as d:
        cai = d.__cuda_array_interface__
        assert cai["version"] == 3 and cai["typestr"] == "<f4" and cai["shape"] == (3, 5)
        assert cai["strides"] is None and cai["data"] == (d.data_ptr, False) and cai["stream"] == 1
        assert d.dtype == np.float32 and d.ndim == 2 and d.size == 15 and d.nbytes == 60 and len(d) == 3
        np.testing.assert_array_equal(d.numpy(), a)
    assert d.closed
    with pytest.raises(RuntimeError, match="closed"):
        d.numpy()
    with pytest.raises(RuntimeError, match="closed"):
        d.__cuda_array_interface__
    d.close()  # idempotent
    # float16 host input is converted to float32 on the way
    with pyvt.to_device(a.astype(np.float16)) as h:
        np.testing.assert_array_equal(h.numpy(), a.astype(np.float16).astype(np.float32))


@on_gpu
@needs_real_gpu
def test_gpu_host_pointer_posing_as_device_memory_is_refused():
    """A __cuda_array_interface__ that points at host memory (wrong device) is caught by
    libvt before any kernel could fault on it."""
    host = rand(2, 64)
    fake = FakeCAI(data=(host.ctypes.data, False))
    with pyvt.prepack_int8_blocked(rand(16, 64), device="cuda") as g:
        with pytest.raises(ValueError, match=r"x \(0x[0-9a-f]+\) is (pinned )?host memory"):
            pyvt.linear_int8_w8a16(fake, g)
        # the weight and the context are still fine
        y = pyvt.linear_int8_w8a16(host, g)
        assert y.shape == (2, 16) and np.isfinite(y).all()


@on_gpu
def test_gpu_torch_zero_copy(torch_cuda):
    torch = torch_cuda
    out_f, in_f = 64, 256
    w = rand(out_f, in_f, seed=11, scale=0.05)
    with pyvt.prepack_int8_blocked(w) as c, pyvt.prepack_int8_blocked(w, device="cuda") as g:
        xt = torch.randn(9, in_f, device="cuda", dtype=torch.float32)
        bt = torch.randn(out_f, device="cuda", dtype=torch.float32)
        y = pyvt.linear_int8_w8a16(xt, g, bt)
        assert isinstance(y, pyvt.DeviceArray) and y.shape == (9, out_f)
        assert y.stream == torch.cuda.current_stream().cuda_stream
        t = torch.as_tensor(y, device="cuda")
        assert t.data_ptr() == y.data_ptr and t.dtype == torch.float32 and tuple(t.shape) == (9, out_f)
        ref = pyvt.linear_int8_w8a16(xt.cpu().numpy(), c, bt.cpu().numpy())
        assert nerr(t.cpu().numpy(), ref) < TOL
        # the tensor keeps the DeviceArray (and its memory) alive
        ptr = y.data_ptr
        del y
        gc.collect()
        assert t.data_ptr() == ptr and nerr(t.cpu().numpy(), ref) < TOL
        # the same tensor through DLPack only
        class OnlyDLPack:
            def __dlpack__(self, stream=None):
                return xt.__dlpack__(stream=stream)

            def __dlpack_device__(self):
                return xt.__dlpack_device__()

        yl = pyvt.linear_int8_w8a16(OnlyDLPack(), g, bt)
        assert nerr(torch.as_tensor(yl, device="cuda").cpu().numpy(), ref) < TOL
        # chained: a torch view of a pyvt result feeds the next linear, and so does a DeviceArray
        w2 = rand(32, out_f, seed=12, scale=0.05)
        with pyvt.prepack_int8_blocked(w2) as c2, pyvt.prepack_int8_blocked(w2, device="cuda") as g2:
            ref2 = pyvt.linear_int8_w8a16(t.cpu().numpy(), c2)
            z = pyvt.linear_int8_w8a16(t, g2)
            assert z.shape == (9, 32) and nerr(torch.as_tensor(z, device="cuda").cpu().numpy(), ref2) < TOL
            w3 = rand(16, 32, seed=14, scale=0.05)
            with pyvt.prepack_int8_blocked(w3) as c3, pyvt.prepack_int8_blocked(w3, device="cuda") as g3:
                z3 = pyvt.linear_int8_w8a16(z, g3)  # DeviceArray in, on the stream z names
                assert isinstance(z3, pyvt.DeviceArray) and z3.shape == (9, 16)
                assert nerr(z3.numpy(), pyvt.linear_int8_w8a16(z.numpy(), c3)) < TOL


@on_gpu
def test_gpu_out_argument(torch_cuda):
    torch = torch_cuda
    w, wu = rand(40, 128, seed=15, scale=0.05), rand(40, 128, seed=16, scale=0.05)
    with pyvt.prepack_fp8(w) as c, pyvt.prepack_fp8(w, device="cuda") as g, \
            pyvt.prepack_fp8(wu) as cu, pyvt.prepack_fp8(wu, device="cuda") as gu:
        xt = torch.randn(6, 128, device="cuda")
        x_host = xt.cpu().numpy()
        out = torch.full((6, 40), float("nan"), device="cuda")
        r = pyvt.linear_fp8_w8a16(xt, g, out=out)
        assert r is out
        assert nerr(out.cpu().numpy(), pyvt.linear_fp8_w8a16(x_host, c)) < TOL
        r = pyvt.linear_swiglu_fp8(xt, g, gu, out=out)
        assert r is out and nerr(out.cpu().numpy(), pyvt.linear_swiglu_fp8(x_host, c, cu)) < TOL
        with pyvt.to_device(x_host) as xd:
            yd = pyvt.linear_gelu_fp8(xd, g)
            assert pyvt.linear_gelu_fp8(xd, g, out=yd) is yd  # a DeviceArray as out
            assert nerr(yd.numpy(), pyvt.linear_gelu_fp8(x_host, c)) < TOL
        with pytest.raises(ValueError, match=r"out must have shape \(6, 40\), got \(6, 41\)"):
            pyvt.linear_fp8_w8a16(xt, g, out=torch.empty(6, 41, device="cuda"))
        with pytest.raises(TypeError, match="out must be a device array"):
            pyvt.linear_fp8_w8a16(xt, g, out=np.empty((6, 40), np.float32))
        with pytest.raises(TypeError, match="out has dtype torch.float16"):
            pyvt.linear_fp8_w8a16(xt, g, out=torch.empty(6, 40, device="cuda", dtype=torch.float16))
        buf = torch.zeros(6, 128, device="cuda")
        with pytest.raises(ValueError, match="y overlaps x"):
            pyvt.linear_fp8_w8a16(buf, g, out=buf.view(-1)[:240].view(6, 40))


@on_gpu
def test_gpu_torch_side_stream(torch_cuda):
    torch = torch_cuda
    w = rand(48, 128, seed=13, scale=0.05)
    with pyvt.prepack_fp8_blocked(w) as c, pyvt.prepack_fp8_blocked(w, device="cuda") as g:
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            xt = torch.randn(20, 128, device="cuda")
            y = pyvt.linear_fp8_w8a16(xt, g)
            assert y.stream == s.cuda_stream and y.__cuda_array_interface__["stream"] == s.cuda_stream
            got = torch.as_tensor(y, device="cuda").cpu().numpy()  # ordered on s
            x_host = xt.cpu().numpy()
        assert nerr(got, pyvt.linear_fp8_w8a16(x_host, c)) < TOL
        # an explicit stream= wins
        y2 = pyvt.linear_fp8_w8a16(xt, g, stream=s)
        assert y2.stream == s.cuda_stream
        s.synchronize()
        assert nerr(y2.numpy(), pyvt.linear_fp8_w8a16(x_host, c)) < TOL


@on_gpu
def test_gpu_torch_bad_inputs(torch_cuda):
    torch = torch_cuda
    with pyvt.prepack_int8_blocked(rand(16, 64), device="cuda") as g:
        with pytest.raises(TypeError, match=r"x has dtype torch.float16; device inputs must be float32"):
            pyvt.linear_int8_w8a16(torch.zeros(2, 64, device="cuda", dtype=torch.float16), g)
        with pytest.raises(TypeError, match=r"x has dtype torch.bfloat16; device inputs must be float32"):
            pyvt.linear_int8_w8a16(torch.zeros(2, 64, device="cuda", dtype=torch.bfloat16), g)
        with pytest.raises(TypeError, match=r"bias has dtype torch.float64"):
            pyvt.linear_int8_w8a16(torch.zeros(2, 64, device="cuda"), g,
                                   torch.zeros(16, device="cuda", dtype=torch.float64))
        # a tensor that requires grad is read as is (pyvt computes no gradients)
        xg = torch.ones(2, 64, device="cuda", requires_grad=True)
        assert pyvt.linear_int8_w8a16(xg, g).shape == (2, 16)
        with pytest.raises(ValueError, match="x must be C-contiguous"):
            pyvt.linear_int8_w8a16(torch.zeros(64, 4, device="cuda").t(), g)
        with pytest.raises(ValueError, match="x must be C-contiguous"):
            pyvt.linear_int8_w8a16(torch.zeros(2, 128, device="cuda")[:, ::2], g)
        with pytest.raises(ValueError, match="x has 32 features"):
            pyvt.linear_int8_w8a16(torch.zeros(2, 32, device="cuda"), g)
        with pytest.raises(ValueError, match="1-D .* or 2-D"):
            pyvt.linear_int8_w8a16(torch.zeros(2, 2, 64, device="cuda"), g)
        with pytest.raises(ValueError, match=r"bias must have shape \(16,\)"):
            pyvt.linear_int8_w8a16(torch.zeros(2, 64, device="cuda"), g, torch.zeros(15, device="cuda"))
        with pytest.raises(TypeError, match="stream must be"):
            pyvt.linear_int8_w8a16(torch.zeros(2, 64, device="cuda"), g, stream="default")
        # a CPU tensor is not a numpy array: the host path says so
        with pytest.raises(TypeError, match="numpy.ndarray"):
            pyvt.linear_int8_w8a16(torch.zeros(2, 64), g)
        if torch.cuda.device_count() > 1:
            with pytest.raises(ValueError, match="x is on cuda:1 but the weight is on cuda:0"):
                pyvt.linear_int8_w8a16(torch.zeros(2, 64, device="cuda:1"), g)


@on_gpu
def test_gpu_close_frees_device_memory(torch_cuda):
    torch = torch_cuda
    torch.cuda.synchronize()

    def free():
        return torch.cuda.mem_get_info()[0]

    mib = 1 << 20
    f0 = free()
    a = pyvt.to_device(np.zeros((64, mib // 4), np.float32))  # 64 MiB
    f1 = free()
    assert f0 - f1 >= 60 * mib, (f0, f1)
    a.close()
    assert free() >= f1 + 60 * mib

    w = np.zeros((4096, 4096), np.float32)
    w[::7, ::5] = 1.0
    f0 = free()
    p = pyvt.prepack_int8_blocked(w, device="cuda")  # 16 MiB of INT8 codes + scales
    f1 = free()
    assert f0 - f1 >= 15 * mib, (f0, f1)
    p.close()
    assert free() >= f1 + 15 * mib
    # results freed by close() too
    with pyvt.prepack_int8_blocked(rand(4096, 256, scale=0.05), device="cuda") as g, pyvt.to_device(rand(1024, 256)) as x:
        f0 = free()
        y = pyvt.linear_int8_w8a16(x, g)  # 16 MiB
        assert f0 - free() >= 15 * mib
        y.close()
        assert free() >= f0 - 8 * mib
