# cython: language_level=3
"""Cython bindings over libvt's quantized inference API, conversions and sampling.

The public face is :mod:`pyvt.ops`. Arrays cross into libvt without copies when they are
C-contiguous float32; strided input is refused with a message naming the argument (make it
contiguous with ``np.ascontiguousarray``); float16 / bfloat16 inputs are converted natively.
Every compute call releases the GIL.

Weights prepacked with ``device="cuda"`` live on a GPU; their linears take numpy arrays (copied
in and out) or device arrays exposing ``__cuda_array_interface__`` (PyTorch CUDA tensors, CuPy,
:class:`DeviceArray`), used in place, and then return a :class:`DeviceArray`. That interop
(DeviceArray, the array interface, DLPack, streams) is its own module, ``_device.pyx``.

Sections, by concern: packed weight handles, device memory (``to_device``), linears,
conversions, sampling, library.
"""

from libc.stdint cimport int32_t, int64_t, uint64_t, uint8_t, uint16_t
from pyvt._vt cimport *
from pyvt._device cimport (DeviceArray, _DevView, _consumer_stream, _dev_arg, _empty_device,
                          _is_device_array, _stream_arg, _upload)

import math
import re

import numpy as np

include "_errors.pxi"

# ---- helpers ------------------------------------------------------------------------------

_FORMAT_NAMES = {
    VT_FORMAT_FP8_CHANNEL: "fp8-channel",
    VT_FORMAT_FP8_BLOCKED: "fp8",
    VT_FORMAT_INT8_BLOCKED: "int8",
    VT_FORMAT_INT8_SPARSE24: "int8-sparse24",
    VT_FORMAT_INT4_SPARSE24: "int4-sparse24",
    VT_FORMAT_BF16: "bf16",
    VT_FORMAT_INT4_BLOCKED: "int4",
    VT_FORMAT_INT4_MIN_BLOCKED: "int4-min",
    VT_FORMAT_MXFP4: "mxfp4",
}

# numpy dtype name -> vt_dtype, for the float types libvt reads.
_FLOAT_DTYPES = {
    "float32": VT_DTYPE_F32,
    "float16": VT_DTYPE_F16,
    "bfloat16": VT_DTYPE_BF16,
    "float64": VT_DTYPE_F64,
}


cdef object _require_ndarray(object a, str name):
    if not isinstance(a, np.ndarray):
        raise TypeError(f"{name} must be a numpy.ndarray, got {type(a).__name__}")
    if not a.dtype.isnative:
        # libvt reads the machine's byte order; a big-endian array would be read as garbage.
        raise TypeError(f"{name} has the non-native byte order dtype {a.dtype.str!r}; pass "
                        f"{name}.astype({a.dtype.newbyteorder('=').str!r}) (a native copy)")
    return a


cdef object _require_contiguous(object a, str name):
    if not a.flags.c_contiguous:
        raise ValueError(
            f"{name} must be C-contiguous (got strides {a.strides} for shape {a.shape}); "
            f"pass np.ascontiguousarray({name})")
    return a


cdef object _raw_view(object a):
    """A buffer-compatible view of a float array (bfloat16 has no buffer format)."""
    if a.dtype.itemsize == 2:
        return a.view(np.uint16)
    return a


cdef object _to_f32(object a):
    """A C-contiguous float32 array with a's values (a itself when it already is one)."""
    if a.dtype == np.float32:
        return a
    cdef int src_dt = _FLOAT_DTYPES[a.dtype.name]
    out = np.empty(a.shape, dtype=np.float32)
    if a.size == 0:
        return out
    cdef const uint8_t[::1] src = _raw_view(a).reshape(-1).view(np.uint8)
    cdef float[::1] dst = out.reshape(-1)
    cdef size_t n = a.size
    cdef vt_status st
    with nogil:
        st = vt_convert(&src[0], <vt_dtype>src_dt, &dst[0], VT_DTYPE_F32, n)
    _check(st)
    return out


cdef object _float_input(object x, str name, tuple allowed=("float32", "float16", "bfloat16")):
    _require_ndarray(x, name)
    if x.dtype.name not in allowed:
        raise TypeError(f"{name} has dtype {x.dtype}; expected one of {', '.join(allowed)}")
    return _require_contiguous(x, name)


# ---- packed weight handles ------------------------------------------------------------------

cdef class _Packed:
    """A quantized weight owned by libvt (one vt_packed handle). Freed when the object goes,
    or at once by close() / leaving a with-block."""

    cdef vt_packed* _p
    # Calls running without the GIL on this handle (from any thread). close() while some
    # run only marks the handle closed; the last of them frees it (no use-after-free).
    cdef int _users
    cdef bint _close_pending

    def __cinit__(self):
        self._p = NULL
        self._users = 0
        self._close_pending = False

    def __init__(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} objects are created by the prepack_* functions")

    def __dealloc__(self):
        if self._p != NULL:
            vt_packed_free(self._p)
            self._p = NULL

    cdef vt_packed* _handle(self) except NULL:
        if self._p == NULL or self._close_pending:
            raise RuntimeError(f"this {type(self).__name__} is closed")
        return self._p

    cdef vt_packed* _acquire(self) except NULL:
        """The handle, kept alive until the matching _release() (call with the GIL)."""
        cdef vt_packed* p = self._handle()
        self._users += 1
        return p

    cdef void _release(self):
        self._users -= 1
        if self._users == 0 and self._close_pending and self._p != NULL:
            vt_packed_free(self._p)
            self._p = NULL

    cdef vt_packed_info _info(self) except *:
        cdef vt_packed_info info
        info.struct_size = sizeof(vt_packed_info)
        _check(vt_packed_get_info(self._handle(), &info))
        return info

    def close(self):
        """Free the native weight now (idempotent). If another thread is computing with it,
        the memory is freed when that call returns; new calls fail at once."""
        if self._p == NULL:
            return
        if self._users > 0:
            self._close_pending = True
            return
        vt_packed_free(self._p)
        self._p = NULL

    @property
    def closed(self):
        return self._p == NULL or self._close_pending

    def __enter__(self):
        self._handle()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def shape(self):
        """(out_features, in_features)"""
        cdef vt_packed_info i = self._info()
        return (int(i.out_features), int(i.in_features))

    @property
    def format(self):
        """'fp8-channel', 'fp8', 'int8', 'int4', 'int4-min', 'mxfp4', 'int8-sparse24' or
        'int4-sparse24'."""
        return _FORMAT_NAMES[self._info().format]

    @property
    def block_size(self):
        """Weights per scale along K (in_features for per-channel and sparse formats)."""
        return int(self._info().block_size)

    @property
    def nbytes(self):
        """Bytes held: quantized weights + scales + metadata."""
        return int(self._info().nbytes)

    @property
    def device(self):
        """Where the weight is and its linears run: 'cpu' or 'cuda:N'."""
        cdef vt_packed_info i = self._info()
        return "cpu" if i.device == VT_DEVICE_CPU else f"cuda:{i.device_index}"

    def unpack(self):
        """Dequantize to a float32 ndarray [out_features, in_features] (pruned entries 0)."""
        cdef vt_packed_info i = self._info()
        out = np.empty((i.out_features, i.in_features), dtype=np.float32)
        cdef float[:, ::1] o = out
        cdef vt_status st
        cdef vt_packed* p = self._acquire()
        try:
            with nogil:
                st = vt_packed_unpack(p, &o[0, 0])
        finally:
            self._release()
        _check(st)
        return out

    def __repr__(self):
        if self._p == NULL:
            return f"<{type(self).__name__} (closed)>"
        return (f"<{type(self).__name__} {self.format} shape={self.shape} "
                f"block_size={self.block_size} nbytes={self.nbytes} device={self.device}>")


cdef class PackedFp8(_Packed):
    """FP8 E4M3 weight, per-channel (prepack_fp8) or per-K-block (prepack_fp8_blocked) scales."""


cdef class PackedInt8(_Packed):
    """Symmetric INT8 weight with one scale per K-block (prepack_int8_blocked)."""


cdef class PackedInt4(_Packed):
    """Dense 4-bit weight (q in [-8, 7]) with one scale per K-block (prepack_int4_blocked)."""


cdef class PackedInt4Min(_Packed):
    """Dense 4-bit weight with a per-block minimum (u in [0, 15], w = u * scale + min, one
    scale and one min per K-block: llama.cpp Q4_1's grid; prepack_int4_min_blocked)."""


cdef class PackedMxfp4(_Packed):
    """OCP MXFP4 weight: FP4 E2M1 values with one power-of-two scale per 32 weights along K
    (prepack_mxfp4)."""


cdef class PackedInt8Sparse24(_Packed):
    """2:4 magnitude-pruned INT8 weight, per-channel scales (prepack_int8_sparse24)."""


cdef class PackedInt4Sparse24(_Packed):
    """2:4 magnitude-pruned INT4 weight, per-channel scales (prepack_int4_sparse24)."""


cdef tuple _device_arg(object device):
    """(vt_device_kind, device_index) of 'cpu', 'cuda', 'cuda:N', 'auto' (or a torch.device)."""
    if not isinstance(device, str):
        if isinstance(getattr(device, "type", None), str) and hasattr(device, "index"):
            device = str(device)  # torch.device('cuda', 1) -> 'cuda:1'
        else:
            raise TypeError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got "
                            f"{type(device).__name__}")
    d = device.strip().lower()
    if d == "cpu":
        return (VT_DEVICE_CPU, 0)
    if d == "auto":
        return (VT_DEVICE_AUTO, 0)
    if d == "cuda":
        return (VT_DEVICE_CUDA, 0)
    m = re.fullmatch(r"cuda:([0-9]{1,4})", d)
    if m is None:
        raise ValueError(f"device must be 'cpu', 'cuda', 'cuda:N' or 'auto', got {device!r}")
    return (VT_DEVICE_CUDA, int(m.group(1)))


cdef object _prepack(object w, int fmt, int block, type cls, object device="cpu"):
    dev_kind, dev_index = _device_arg(device)
    _require_ndarray(w, "w")
    if w.ndim != 2:
        raise ValueError(f"w must be 2-D [out_features, in_features], got shape {w.shape}")
    if w.dtype.name not in ("float32", "float16", "bfloat16"):
        raise TypeError(f"w has dtype {w.dtype}; expected float32, float16 or bfloat16")
    _require_contiguous(w, "w")
    if w.size == 0:
        raise ValueError(f"w is empty (shape {w.shape}); out_features and in_features must be >= 1")
    cdef int dt = _FLOAT_DTYPES[w.dtype.name]
    cdef const uint8_t[::1] buf = _raw_view(w).reshape(-1).view(np.uint8)
    cdef vt_prepack_options o = vt_prepack_default_options()
    o.format = fmt
    o.block_size = block
    o.device = dev_kind
    o.device_index = dev_index
    cdef int64_t out_f = w.shape[0], in_f = w.shape[1]
    cdef vt_packed* p = NULL
    cdef vt_status st
    with nogil:
        st = vt_prepack(&buf[0], <vt_dtype>dt, out_f, in_f, &o, &p)
    _check(st)
    cdef _Packed h = cls.__new__(cls)
    h._p = p
    return h


cdef int _block_arg(object block_size) except -1:
    if isinstance(block_size, bool) or not isinstance(block_size, (int, np.integer)):
        raise TypeError(f"block_size must be an int, got {type(block_size).__name__}")
    if block_size not in (16, 32, 64, 128):
        raise ValueError(f"block_size must be one of 16, 32, 64, 128 (got {block_size})")
    return block_size


def prepack_fp8(w, device="cpu"):
    """FP8 E4M3 weight with one scale per output channel (absmax / 448).

    w: float32 / float16 / bfloat16 ndarray [out_features, in_features], C-contiguous, finite.
    device: 'cpu' (default), 'cuda' / 'cuda:N' (quantized on the host, then copied to that GPU;
    BackendUnavailable naming the reason when it cannot be used) or 'auto' (the GPU when one
    can be used and covers the format, else the CPU). ``handle.device`` says where it went.
    """
    return _prepack(w, VT_FORMAT_FP8_CHANNEL, 0, PackedFp8, device)


def prepack_fp8_blocked(w, block_size=16, device="cpu"):
    """FP8 E4M3 weight with one scale per `block_size` weights along K (absmax / 448).

    block_size: 16 (default), 32, 64 or 128, dividing in_features. w, device: as prepack_fp8.
    """
    return _prepack(w, VT_FORMAT_FP8_BLOCKED, _block_arg(block_size), PackedFp8, device)


def prepack_int8_blocked(w, block_size=32, device="cpu"):
    """Symmetric INT8 weight, one scale per `block_size` weights along K (absmax / 127).

    block_size: 32 (default), 16, 64 or 128, dividing in_features. w, device: as prepack_fp8.
    """
    return _prepack(w, VT_FORMAT_INT8_BLOCKED, _block_arg(block_size), PackedInt8, device)


def prepack_int4_blocked(w, block_size=32, device="cpu"):
    """Dense 4-bit weight: q in [-8, 7], one scale per `block_size` weights along K, chosen
    per block for the least squared error (vt.h VT_FORMAT_INT4_BLOCKED). block_size: 32
    (default), 16, 64 or 128; in_features need not be a multiple of it (the last block is
    shorter). w, device: as prepack_fp8 (on CUDA: the W4A16 GEMV / GEMM)."""
    return _prepack(w, VT_FORMAT_INT4_BLOCKED, _block_arg(block_size), PackedInt4, device)


def prepack_int4_min_blocked(w, block_size=32, device="cpu"):
    """Dense 4-bit weight with a per-block minimum (llama.cpp Q4_1's grid, vt.h
    VT_FORMAT_INT4_MIN_BLOCKED): per `block_size` weights along K, min = min(w),
    scale = (max(w) - min) / 15, u = round((w - min) / scale) in [0, 15], w ~ u * scale + min.
    0.625 bytes per weight at block 32 (int4: 0.5625). block_size: 32 (default), 16, 64 or
    128; in_features need not be a multiple of it (the last block is shorter). w, device: as
    prepack_fp8 (on CUDA: the W4A16 GEMV / GEMM)."""
    return _prepack(w, VT_FORMAT_INT4_MIN_BLOCKED, _block_arg(block_size), PackedInt4Min, device)


def prepack_mxfp4(w, block_size=32, device="cpu"):
    """OCP Microscaling FP4 (vt.h VT_FORMAT_MXFP4): per 32 weights along K one power-of-two
    scale 2^e, e = floor(log2(max |w|)) - 2, and each w / 2^e rounded to the nearest FP4 E2M1
    value (0, ±0.5, ±1, ±1.5, ±2, ±3, ±4, ±6; ties to the even code), clamped to ±6: the
    format of gpt-oss's experts, which it holds exactly. 0.5625 bytes per weight;
    in_features need not be a multiple of 32 (the last block is shorter). block_size: 32
    (MXFP4's block; another is refused). w: as prepack_fp8; device: "cpu" (the CUDA backend
    has no MXFP4 kernels: "cuda" is refused, "auto" keeps it on the CPU)."""
    return _prepack(w, VT_FORMAT_MXFP4, _block_arg(block_size), PackedMxfp4, device)


def prepack_int8_sparse24(w, device="cpu"):
    """2:4 sparse INT8: the 2 largest |w| of every 4 along K kept (ties: lower index),
    per-channel scale absmax / 127. in_features must be a multiple of 4.

    device: 'cpu' (default) or 'auto' (the CPU: the GPU kernels do not cover the 2:4 formats
    yet; 'cuda' is refused with ValueError)."""
    return _prepack(w, VT_FORMAT_INT8_SPARSE24, 0, PackedInt8Sparse24, device)


def prepack_int4_sparse24(w, device="cpu"):
    """2:4 sparse INT4 (values in [-7, 7]), per-channel scale absmax / 7.
    in_features must be a multiple of 4. device: as prepack_int8_sparse24."""
    return _prepack(w, VT_FORMAT_INT4_SPARSE24, 0, PackedInt4Sparse24, device)


# ---- device memory (DeviceArray, __cuda_array_interface__, DLPack: _device.pyx) -----------

def to_device(a, device="cuda", stream=None):
    """Copy a host array (float32 / float16 / bfloat16 ndarray, C-contiguous) to a GPU as a
    float32 :class:`DeviceArray`. device: 'cuda' or 'cuda:N'. stream: where the copy is ordered
    (default: the legacy default stream); the copy is complete when this returns.
    BackendUnavailable (naming the reason) when the GPU cannot be used."""
    kind, idx = _device_arg(device)
    if kind != VT_DEVICE_CUDA:
        raise ValueError(f"to_device: device must be 'cuda' or 'cuda:N', got {device!r}")
    _float_input(a, "a")
    s = 0 if stream is None else _stream_arg(stream)
    return _upload(_to_f32(a), idx, s)


# ---- linears ------------------------------------------------------------------------------

cdef _Packed _packed_arg(object packed, type cls, str fn, str hint):
    if not isinstance(packed, cls):
        raise TypeError(f"{fn} expects a {cls.__name__} (from {hint}), got {type(packed).__name__}")
    return <_Packed>packed


cdef object _bias_arg(object bias, str name, int64_t out_f):
    if bias is None:
        return None
    _float_input(bias, name)
    if bias.ndim != 1 or bias.shape[0] != out_f:
        raise ValueError(f"{name} must have shape ({out_f},), got {bias.shape}")
    return _to_f32(bias)


cdef tuple _x_arg(object x, int64_t in_f, int64_t out_f):
    """(x as [m, in] float32, m, was_1d)"""
    _float_input(x, "x")
    if x.ndim not in (1, 2):
        raise ValueError(f"x must be 1-D [in_features] or 2-D [m, in_features], got shape {x.shape}")
    if x.shape[x.ndim - 1] != in_f:
        raise ValueError(f"x has {x.shape[x.ndim - 1]} features (shape {x.shape}) but the weight "
                         f"has in_features = {in_f} (weight shape ({out_f}, {in_f}))")
    if x.size == 0:
        raise ValueError(f"x is empty (shape {x.shape})")
    was_1d = x.ndim == 1
    x2 = _to_f32(x).reshape(1, in_f) if was_1d else _to_f32(x)
    return x2, x2.shape[0], was_1d


cdef object _host_weight_refuses(object x, vt_packed_info info):
    raise TypeError(f"x is GPU memory ({type(x).__name__}) but the weight is on the CPU: prepack "
                    f"the weight with device='cuda' to run there, or pass a host array "
                    f"(e.g. x.cpu().numpy())")


cdef object _no_stream_for_host(object stream):
    if stream is not None:
        raise ValueError("stream= applies to inputs in GPU memory (with a weight on the GPU); "
                         "with host arrays the call is synchronous")


cdef tuple _dev_x(_DevView xv, vt_packed_info info):
    """(m, was_1d) of a device input [in] or [m, in]."""
    shape = xv.shape
    if len(shape) not in (1, 2):
        raise ValueError(f"x must be 1-D [in_features] or 2-D [m, in_features], got shape {shape}")
    if shape[len(shape) - 1] != info.in_features:
        raise ValueError(f"x has {shape[len(shape) - 1]} features (shape {shape}) but the weight "
                         f"has in_features = {info.in_features} (weight shape "
                         f"({info.out_features}, {info.in_features}))")
    return (1 if len(shape) == 1 else shape[0]), len(shape) == 1


cdef tuple _dev_bias(object bias, str name, int64_t out_f, int dev, object stream):
    """(device pointer or 0, object to keep alive for the call) of a bias: a device array
    [out] used in place, or a host array uploaded for the call."""
    if bias is None:
        return 0, None
    cdef _DevView v
    if _is_device_array(bias):
        v = _dev_arg(bias, name, dev, stream)
        if v.shape != (out_f,):
            raise ValueError(f"{name} must have shape ({out_f},), got {v.shape}")
        return v.ptr, v
    b = _bias_arg(bias, name, out_f)
    cdef DeviceArray a = _upload(b, dev, stream)
    return <size_t>a._ptr, a


cdef tuple _dev_out(object out, tuple shape, int dev, object stream):
    """(device pointer, the object to return) for the result: `out` when given (a device
    array of exactly `shape`, float32, C-contiguous, on device `dev`, written in place), else
    a new DeviceArray."""
    cdef DeviceArray y
    cdef _DevView v
    if out is None:
        y = _empty_device(dev, shape, stream)
        return <size_t>y._ptr, y
    if not _is_device_array(out):
        raise TypeError(f"out must be a device array (__cuda_array_interface__) on cuda:{dev}, "
                        f"got {type(out).__name__}")
    v = _dev_arg(out, "out", dev, stream)
    if v.shape != shape:
        raise ValueError(f"out must have shape {shape}, got {v.shape}")
    if isinstance(out, DeviceArray):
        (<DeviceArray>out)._stream = stream  # its contents now come from this stream
    return v.ptr, out


cdef object _no_out_for_host(object out):
    if out is not None:
        raise ValueError("out= applies to inputs in GPU memory (with a weight on the GPU)")


cdef vt_linear_options _linear_options(int quantize, int act):
    cdef vt_linear_options o = vt_linear_default_options()
    o.quantize_input = quantize
    o.activation = act
    return o


cdef bint _on_device(object x, vt_packed_info info, object stream, object out) except -1:
    """Where a linear runs: True for an input in device memory (the weight must be on a GPU
    too); False for a host input, which takes neither stream= nor out=."""
    if _is_device_array(x):
        if info.device != VT_DEVICE_CUDA:
            _host_weight_refuses(x, info)
        return True
    _no_stream_for_host(stream)
    _no_out_for_host(out)
    return False


cdef object _linear_device(_Packed packed, vt_packed_info info, object x, object bias,
                           int quantize, int act, object stream, object out):
    cdef int dev = info.device_index
    given = _stream_arg(stream) if stream is not None else None
    cdef _DevView xv = _dev_arg(x, "x", dev, given)
    m_obj, was_1d = _dev_x(xv, info)
    st_obj = given if given is not None else _consumer_stream(x, xv.stream, dev)
    bp_obj, bkeep = _dev_bias(bias, "bias", info.out_features, dev, st_obj)
    yp_obj, y = _dev_out(out, (info.out_features,) if was_1d else (m_obj, info.out_features),
                         dev, st_obj)
    cdef int64_t m = m_obj
    cdef size_t xp = xv.ptr, bp = bp_obj, sp = st_obj, yp = yp_obj
    cdef vt_linear_options o = _linear_options(quantize, act)
    cdef vt_status st
    cdef vt_packed* p = packed._acquire()
    try:
        with nogil:
            st = vt_linear_device(p, <const float*>xp, m, <const float*>bp, &o, <float*>yp,
                                  <void*>sp)
    finally:
        packed._release()
    _check(st)
    return y


cdef object _linear(_Packed packed, object x, object bias, int quantize, int act, object stream,
                    object out):
    cdef vt_packed_info info = packed._info()
    if _on_device(x, info, stream, out):
        return _linear_device(packed, info, x, bias, quantize, act, stream, out)
    xa, m_obj, was_1d = _x_arg(x, info.in_features, info.out_features)
    b = _bias_arg(bias, "bias", info.out_features)
    cdef int64_t m = m_obj
    out = np.empty((m, info.out_features), dtype=np.float32)
    cdef const float[:, ::1] xv = xa
    cdef float[:, ::1] yv = out
    cdef const float[::1] bv
    cdef const float* bp = NULL
    if b is not None:
        bv = b
        bp = &bv[0]
    cdef vt_linear_options o = _linear_options(quantize, act)
    cdef vt_status st
    cdef vt_packed* p = packed._acquire()
    try:
        with nogil:
            st = vt_linear(p, &xv[0, 0], m, bp, &o, &yv[0, 0])
    finally:
        packed._release()
    _check(st)
    return out.reshape(info.out_features) if was_1d else out


def linear_fp8(x, packed, bias=None, *, stream=None, out=None):
    """W8A8: y = fp8(x)·Wᵀ + bias, x quantized per row to E4M3 (scale absmax / 448).

    x: float32/float16/bfloat16 [in] or [m, in]; packed: PackedFp8; bias: None or [out].
    Returns float32 [out] or [m, out].

    Every linear, for a weight on a GPU (prepack_*(..., device='cuda')): x (and bias) may be
    host arrays (copied in and out; a numpy result, synchronous) or float32 C-contiguous
    arrays in that GPU's memory exposing __cuda_array_interface__ (PyTorch CUDA tensors,
    CuPy, DeviceArray) or, failing that, DLPack (__dlpack__ / __dlpack_device__: JAX, ...),
    used in place: the result is a DeviceArray, the work is enqueued on
    `stream` (default: PyTorch's current stream for a torch tensor, else the stream the
    input's interface names, else the legacy default stream) and the call returns without
    waiting for it. A host bias with a device x is uploaded for the call (which then waits).
    out: None, or (device inputs only) a device array of the result's shape, float32,
    C-contiguous, written in place and returned: reusing it saves an allocation per call and
    the free of the result, which waits for the GPU (cudaFree).
    """
    return _linear(_packed_arg(packed, PackedFp8, "linear_fp8", "prepack_fp8 / prepack_fp8_blocked"),
                   x, bias, 1, VT_ACTIVATION_NONE, stream, out)


def linear_fp8_w8a16(x, packed, bias=None, *, stream=None, out=None):
    """W8A16: y = x·Wᵀ + bias with the input kept in float (the recommended LLM path)."""
    return _linear(_packed_arg(packed, PackedFp8, "linear_fp8_w8a16",
                               "prepack_fp8 / prepack_fp8_blocked"), x, bias, 0, VT_ACTIVATION_NONE, stream, out)


def linear_int8_w8a16(x, packed, bias=None, *, stream=None, out=None):
    """W8A16 over a blocked INT8 weight: y = x·Wᵀ + bias, input kept in float."""
    return _linear(_packed_arg(packed, PackedInt8, "linear_int8_w8a16", "prepack_int8_blocked"),
                   x, bias, 0, VT_ACTIVATION_NONE, stream, out)


def linear_int4(x, packed, bias=None, *, gelu=False, w4a8=False):
    """W4A16 over a PackedInt4: y = x·Wᵀ + bias (gelu=True: exact GELU after the bias), the
    input kept in float and f32 accumulation. w4a8=True rounds x per row to INT8 (absmax /
    127) first, as vt_linear_options.quantize_input does."""
    return _linear(_packed_arg(packed, PackedInt4, "linear_int4", "prepack_int4_blocked"), x, bias,
                   _w8a8_arg(w4a8), VT_ACTIVATION_GELU if gelu else VT_ACTIVATION_NONE, None, None)


def linear_int4_min(x, packed, bias=None, *, gelu=False, w4a8=False):
    """W4A16 over a PackedInt4Min: y = x·Wᵀ + bias (gelu=True: exact GELU after the bias), the
    input kept in float and f32 accumulation. w4a8=True rounds x per row to INT8 (absmax /
    127) first, as vt_linear_options.quantize_input does."""
    return _linear(_packed_arg(packed, PackedInt4Min, "linear_int4_min", "prepack_int4_min_blocked"), x,
                   bias, _w8a8_arg(w4a8), VT_ACTIVATION_GELU if gelu else VT_ACTIVATION_NONE, None, None)


def linear_mxfp4(x, packed, bias=None, *, gelu=False, w4a8=False):
    """W4A16 over a PackedMxfp4: y = x·Wᵀ + bias (gelu=True: exact GELU after the bias), the
    input kept in float and f32 accumulation. w4a8=True rounds x per row to INT8 (absmax /
    127) first, as vt_linear_options.quantize_input does."""
    return _linear(_packed_arg(packed, PackedMxfp4, "linear_mxfp4", "prepack_mxfp4"), x, bias,
                   _w8a8_arg(w4a8), VT_ACTIVATION_GELU if gelu else VT_ACTIVATION_NONE, None, None)


def linear_gelu_fp8(x, packed, bias=None, *, w8a8=False, stream=None, out=None):
    """y = gelu(x·Wᵀ + bias), exact (erf) GELU fused into the FP8 linear.

    W8A16 by default (x kept in float, as linear_fp8_w8a16); w8a8=True quantizes x per row
    to E4M3 first, as linear_fp8 does (on CUDA with per-channel weights: the CUTLASS FP8
    tensor-core GEMM with GELU in its epilogue).
    """
    return _linear(_packed_arg(packed, PackedFp8, "linear_gelu_fp8",
                               "prepack_fp8 / prepack_fp8_blocked"), x, bias, _w8a8_arg(w8a8),
                   VT_ACTIVATION_GELU, stream, out)


cdef int _w8a8_arg(object w8a8) except -1:
    if not isinstance(w8a8, (bool, np.bool_)):
        raise TypeError(f"w8a8 must be True or False, got {type(w8a8).__name__}")
    return 1 if w8a8 else 0


def linear_int8_sparse(x, packed, bias=None, *, stream=None, out=None):
    """2:4 sparse INT8: x quantized per row to INT8 (absmax / 127), int32 accumulation,
    dequantized with x scale · weight scale, plus bias."""
    return _linear(_packed_arg(packed, PackedInt8Sparse24, "linear_int8_sparse",
                               "prepack_int8_sparse24"), x, bias, 1, VT_ACTIVATION_NONE, stream, out)


def linear_int4_sparse(x, packed, bias=None, *, stream=None, out=None):
    """2:4 sparse INT4: x quantized per row to INT4 (absmax / 7), integer accumulation."""
    return _linear(_packed_arg(packed, PackedInt4Sparse24, "linear_int4_sparse",
                               "prepack_int4_sparse24"), x, bias, 1, VT_ACTIVATION_NONE, stream, out)


cdef struct _PackedPair:
    vt_packed* gate
    vt_packed* up


cdef _PackedPair _acquire_pair(_Packed g, _Packed u) except *:
    """Both weights of a SwiGLU held for one call (released by _release_pair: the C call
    between them cannot raise)."""
    cdef _PackedPair pair
    pair.gate = g._acquire()
    try:
        pair.up = u._acquire()
    except BaseException:
        g._release()
        raise
    return pair


cdef void _release_pair(_Packed g, _Packed u):
    u._release()
    g._release()


cdef object _swiglu_device(_Packed g, _Packed u, vt_packed_info gi, object x, object bias,
                           object stream, object out, int quantize):
    cdef int dev = gi.device_index
    given = _stream_arg(stream) if stream is not None else None
    cdef _DevView xv = _dev_arg(x, "x", dev, given)
    m_obj, was_1d = _dev_x(xv, gi)
    st_obj = given if given is not None else _consumer_stream(x, xv.stream, dev)
    gb_obj, gkeep = _dev_bias(None if bias is None else bias[0], "bias[0] (gate bias)",
                              gi.out_features, dev, st_obj)
    ub_obj, ukeep = _dev_bias(None if bias is None else bias[1], "bias[1] (up bias)",
                              gi.out_features, dev, st_obj)
    yp_obj, y = _dev_out(out, (gi.out_features,) if was_1d else (m_obj, gi.out_features),
                         dev, st_obj)
    cdef int64_t m = m_obj
    cdef size_t xp = xv.ptr, gbp = gb_obj, ubp = ub_obj, sp = st_obj, yp = yp_obj
    cdef vt_linear_options o = _linear_options(quantize, VT_ACTIVATION_NONE)
    cdef vt_status st
    cdef _PackedPair w = _acquire_pair(g, u)
    with nogil:
        st = vt_linear_swiglu_device(w.gate, w.up, <const float*>xp, m, <const float*>gbp,
                                     <const float*>ubp, &o, <float*>yp, <void*>sp)
    _release_pair(g, u)
    _check(st)
    return y


def linear_swiglu_fp8(x, gate, up, bias=None, *, w8a8=False, stream=None, out=None):
    """y = silu(x·gateᵀ + gate_bias) ⊙ (x·upᵀ + up_bias), fused.

    gate, up: PackedFp8 of the same shape and format, on the same device. bias: None, or a
    pair (gate_bias, up_bias) where each is None or float [out]. W8A16 by default; w8a8=True
    quantizes x per row to E4M3 first, as linear_fp8 does (on CUDA with per-channel weights:
    gate and up as one batched CUTLASS FP8 GEMM, SiLU·up in its epilogue). Device inputs,
    `stream`, `out`: as linear_fp8.
    """
    return _linear_swiglu(x, gate, up, bias, _w8a8_arg(w8a8), stream, out, PackedFp8,
                          "linear_swiglu_fp8", "prepack_fp8 / prepack_fp8_blocked")


def linear_swiglu_int8(x, gate, up, bias=None, *, stream=None, out=None):
    """y = silu(x·gateᵀ + gate_bias) ⊙ (x·upᵀ + up_bias), fused, over two PackedInt8 of the
    same shape and block size, the input kept in float (W8A16, as linear_int8_w8a16). bias,
    stream, out: as linear_swiglu_fp8."""
    return _linear_swiglu(x, gate, up, bias, 0, stream, out, PackedInt8, "linear_swiglu_int8",
                          "prepack_int8_blocked")


def linear_swiglu_int4(x, gate, up, bias=None, *, w4a8=False):
    """y = silu(x·gateᵀ + gate_bias) ⊙ (x·upᵀ + up_bias), fused, over two PackedInt4 of the
    same shape and block size. bias, w4a8: as linear_swiglu_fp8 / linear_int4."""
    return _linear_swiglu(x, gate, up, bias, _w8a8_arg(w4a8), None, None, PackedInt4,
                          "linear_swiglu_int4", "prepack_int4_blocked")


def linear_swiglu_int4_min(x, gate, up, bias=None, *, w4a8=False):
    """y = silu(x·gateᵀ + gate_bias) ⊙ (x·upᵀ + up_bias), fused, over two PackedInt4Min of
    the same shape and block size. bias, w4a8: as linear_swiglu_fp8 / linear_int4_min."""
    return _linear_swiglu(x, gate, up, bias, _w8a8_arg(w4a8), None, None, PackedInt4Min,
                          "linear_swiglu_int4_min", "prepack_int4_min_blocked")


def linear_swiglu_mxfp4(x, gate, up, bias=None, *, w4a8=False):
    """y = silu(x·gateᵀ + gate_bias) ⊙ (x·upᵀ + up_bias), fused, over two PackedMxfp4 of the
    same shape. bias, w4a8: as linear_swiglu_fp8 / linear_mxfp4."""
    return _linear_swiglu(x, gate, up, bias, _w8a8_arg(w4a8), None, None, PackedMxfp4,
                          "linear_swiglu_mxfp4", "prepack_mxfp4")


cdef object _linear_swiglu(object x, object gate, object up, object bias, int quantize, object stream,
                           object out, type cls, str fn, str hint):
    cdef _Packed g = _packed_arg(gate, cls, fn + " (gate)", hint)
    cdef _Packed u = _packed_arg(up, cls, fn + " (up)", hint)
    cdef vt_packed_info gi = g._info()
    cdef vt_packed_info ui = u._info()
    if (gi.out_features, gi.in_features) != (ui.out_features, ui.in_features):
        raise ValueError(f"gate shape ({gi.out_features}, {gi.in_features}) != up shape "
                         f"({ui.out_features}, {ui.in_features})")
    if bias is None:
        gb, ub = None, None
    elif not (isinstance(bias, (tuple, list)) and len(bias) == 2):
        raise TypeError("bias must be None or a pair (gate_bias, up_bias)")
    if gi.device != ui.device or gi.device_index != ui.device_index:
        raise ValueError(f"gate is on {g.device} and up on {u.device}; both must be on the same "
                         f"device (prepack them with the same device=)")
    if _on_device(x, gi, stream, out):
        return _swiglu_device(g, u, gi, x, bias, stream, out, quantize)
    if bias is not None:
        gb = _bias_arg(bias[0], "bias[0] (gate bias)", gi.out_features)
        ub = _bias_arg(bias[1], "bias[1] (up bias)", gi.out_features)
    xa, m_obj, was_1d = _x_arg(x, gi.in_features, gi.out_features)
    cdef int64_t m = m_obj
    out = np.empty((m, gi.out_features), dtype=np.float32)
    cdef const float[:, ::1] xv = xa
    cdef float[:, ::1] yv = out
    cdef const float[::1] gbv
    cdef const float[::1] ubv
    cdef const float* gbp = NULL
    cdef const float* ubp = NULL
    if gb is not None:
        gbv = gb
        gbp = &gbv[0]
    if ub is not None:
        ubv = ub
        ubp = &ubv[0]
    cdef vt_linear_options o = _linear_options(quantize, VT_ACTIVATION_NONE)
    cdef vt_status st
    cdef _PackedPair w = _acquire_pair(g, u)
    with nogil:
        st = vt_linear_swiglu(w.gate, w.up, &xv[0, 0], m, gbp, ubp, &o, &yv[0, 0])
    _release_pair(g, u)
    _check(st)
    return out.reshape(gi.out_features) if was_1d else out


# ---- conversions ----------------------------------------------------------------------------

_DTYPE_ALIASES = {
    "f32": "float32", "float32": "float32",
    "f64": "float64", "float64": "float64",
    "f16": "float16", "float16": "float16",
    "bf16": "bfloat16", "bfloat16": "bfloat16",
    "fp8": "fp8", "f8": "fp8", "f8_e4m3": "fp8", "float8_e4m3fn": "fp8", "e4m3": "fp8",
}
_VT_OF = {"float32": VT_DTYPE_F32, "float64": VT_DTYPE_F64, "float16": VT_DTYPE_F16,
          "bfloat16": VT_DTYPE_BF16, "fp8": VT_DTYPE_F8_E4M3}
# What the result array holds: bf16 and fp8 come back as raw uint16 / uint8 codes.
_NP_OF = {"float32": np.float32, "float64": np.float64, "float16": np.float16,
          "bfloat16": np.uint16, "fp8": np.uint8}


cdef str _dtype_name(object d, str what):
    if not isinstance(d, str):
        d = np.dtype(d).name
    key = d.lower()
    if key not in _DTYPE_ALIASES:
        raise ValueError(f"{what} {d!r} is not one of float32, float64, float16, bfloat16, fp8")
    return _DTYPE_ALIASES[key]


cdef object _convert(object a, str src, str dst):
    out = np.empty(a.shape, dtype=_NP_OF[dst])
    if a.size == 0:
        return out
    cdef const uint8_t[::1] s = a.reshape(-1).view(np.uint8)
    cdef uint8_t[::1] d = out.reshape(-1).view(np.uint8)
    cdef size_t n = a.size
    cdef int sd = _VT_OF[src], dd = _VT_OF[dst]
    cdef vt_status st
    with nogil:
        st = vt_convert(&s[0], <vt_dtype>sd, &d[0], <vt_dtype>dd, n)
    _check(st)
    return out


def convert(arr, to_dtype, from_dtype=None):
    """Convert a float array natively (round-to-nearest-even; FP8 saturates to ±448).

    to_dtype: 'float32', 'float64', 'float16', 'bfloat16' (returned as its uint16 codes) or
    'fp8' (E4M3, returned as uint8 codes). from_dtype: the element type of arr when it is a
    raw container (uint16 holding bfloat16/float16 bits, uint8 holding FP8 codes); default:
    arr.dtype.
    """
    _require_ndarray(arr, "arr")
    _require_contiguous(arr, "arr")
    dst = _dtype_name(to_dtype, "to_dtype")
    if from_dtype is None:
        name = arr.dtype.name
        if name not in ("float32", "float64", "float16", "bfloat16"):
            raise TypeError(f"arr has dtype {arr.dtype}; pass from_dtype= to say what its "
                            f"elements are (float32, float64, float16, bfloat16, fp8)")
        src = name
        raw = _raw_view(arr)
    else:
        src = _dtype_name(from_dtype, "from_dtype")
        want = {"fp8": 1, "float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}[src]
        if arr.dtype.itemsize != want or arr.dtype.hasobject:
            raise TypeError(f"arr has dtype {arr.dtype} ({arr.dtype.itemsize} bytes per element), "
                            f"which cannot hold {src} ({want} bytes)")
        raw = arr
    return _convert(raw, src, dst)


def fp8_e4m3_encode(x):
    """E4M3 (OCP e4m3fn) codes of x as uint8, same shape. Round-to-nearest-even; finite
    values beyond ±448 and ±Inf saturate to ±448 (0x7E / 0xFE); NaN -> 0x7F / 0xFF."""
    _float_input(x, "x", ("float32", "float64", "float16", "bfloat16"))
    return _convert(_raw_view(x), x.dtype.name, "fp8")


def fp8_e4m3_decode(codes):
    """float32 values of E4M3 codes (uint8 array, any shape)."""
    _require_ndarray(codes, "codes")
    if codes.dtype != np.uint8:
        raise TypeError(f"codes has dtype {codes.dtype}; expected uint8")
    _require_contiguous(codes, "codes")
    return _convert(codes, "fp8", "float32")


def transpose(a):
    """Native cache-blocked, multithreaded transpose of a 2-D array of 1/2/4/8-byte elements."""
    _require_ndarray(a, "a")
    if a.ndim != 2:
        raise ValueError(f"a must be 2-D, got shape {a.shape}")
    if a.dtype.hasobject:
        raise TypeError("a holds Python objects; transpose() moves raw elements only")
    if a.dtype.itemsize not in (1, 2, 4, 8):
        raise TypeError(f"a has dtype {a.dtype} ({a.dtype.itemsize} bytes per element); "
                        f"expected 1, 2, 4 or 8 bytes")
    _require_contiguous(a, "a")
    out = np.empty((a.shape[1], a.shape[0]), dtype=a.dtype)
    if a.size == 0:
        return out
    cdef const uint8_t[::1] s = a.reshape(-1).view(np.uint8)
    cdef uint8_t[::1] d = out.reshape(-1).view(np.uint8)
    cdef size_t rows = a.shape[0], cols = a.shape[1], es = a.dtype.itemsize
    cdef vt_status st
    with nogil:
        st = vt_transpose(&s[0], &d[0], rows, cols, es)
    _check(st)
    return out


# ---- sampling -------------------------------------------------------------------------------

cdef object _logits_1d(object x, str name):
    _float_input(x, name, ("float32", "float16", "bfloat16", "float64"))
    if x.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {x.shape}")
    if x.size == 0:
        raise ValueError(f"{name} is empty")
    return _to_f32(x)


def argmax(x):
    """Index of the largest value of a 1-D array; ties -> lowest index; NaN never chosen
    (all NaN -> 0)."""
    xa = _logits_1d(x, "x")
    cdef const float[::1] xv = xa
    cdef int64_t n = xa.shape[0], idx = 0
    cdef vt_status st
    with nogil:
        st = vt_argmax(&xv[0], n, &idx)
    _check(st)
    return int(idx)


def softmax(x):
    """Numerically stable softmax (max-subtracted, accumulated in float64) of a 1-D array,
    or of each row of a 2-D array. Returns float32."""
    _float_input(x, "x", ("float32", "float16", "bfloat16", "float64"))
    if x.ndim not in (1, 2):
        raise ValueError(f"x must be 1-D or 2-D, got shape {x.shape}")
    if x.size == 0:
        raise ValueError(f"x is empty (shape {x.shape})")
    xa = _to_f32(x)
    x2 = xa.reshape(-1, xa.shape[xa.ndim - 1])
    out = np.empty(x2.shape, dtype=np.float32)
    cdef const float[:, ::1] xv = x2
    cdef float[:, ::1] yv = out
    cdef int64_t rows = x2.shape[0], n = x2.shape[1], i
    cdef vt_status st = VT_OK
    with nogil:
        for i in range(rows):
            st = vt_softmax(&xv[i, 0], n, &yv[i, 0])
            if st != VT_OK:
                break
    _check(st)
    return out.reshape(x.shape)


cdef uint64_t _u64(object v, str name) except? 0:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(v).__name__}")
    if v < 0 or v >= 2 ** 64:
        raise ValueError(f"{name} must be in [0, 2**64), got {v!r}")
    return <uint64_t>int(v)


def sample(logits, temperature=0.0, top_k=None, top_p=1.0, seed=42, step=0):
    """Draw a token id from 1-D logits, exactly as vt_sample documents:

    top-k (k = top_k, or 256 when None; capped at 256), divide by temperature, softmax in
    float64, keep the smallest prefix reaching top_p, draw with uniform(seed, step) by
    inverse CDF. temperature == 0 is argmax. Invalid options raise ValueError naming them.
    """
    cdef vt_sample_options o = vt_sample_default_options()
    try:
        t = float(temperature)
    except (TypeError, ValueError):
        raise TypeError(f"temperature must be a number, got {type(temperature).__name__}") from None
    if not t >= 0.0 or math.isinf(t):
        raise ValueError(f"temperature must be a finite number >= 0, got {temperature!r}")
    try:
        tp = float(top_p)
    except (TypeError, ValueError):
        raise TypeError(f"top_p must be a number, got {type(top_p).__name__}") from None
    if not (0.0 < tp <= 1.0):
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
    if top_k is None:
        k = 0
    else:
        if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)):
            raise TypeError(f"top_k must be an int or None, got {type(top_k).__name__}")
        if top_k < 1:
            raise ValueError(f"top_k must be >= 1 (or None for no cap), got {top_k!r}")
        k = min(int(top_k), VT_MAX_TOP_K)
    o.temperature = t
    o.top_p = tp
    o.top_k = k
    o.seed = _u64(seed, "seed")
    cdef uint64_t stp = _u64(step, "step")
    xa = _logits_1d(logits, "logits")
    cdef const float[::1] xv = xa
    cdef int64_t n = xa.shape[0], tok = 0
    cdef vt_status st
    with nogil:
        st = vt_sample(&xv[0], n, &o, stp, &tok)
    _check(st)
    return int(tok)


def logits_process(logits, inputs=(), chosen=(), *, temperature=0.0, top_k=0, top_p=1.0, min_p=0.0,
                   repetition_penalty=1.0, frequency_penalty=0.0, presence_penalty=0.0,
                   penalties=True, min_p_mask=True, candidates=False):
    """float32 copy of 1-D logits processed as libvt's token chooser sees them
    (vt_logits_process): the penalties over the history (repetition on ``inputs`` and
    ``chosen``, frequency / presence on ``chosen``), then the min-p mask (temperature > 0),
    then, with ``candidates``, -inf on every token vt_sample could not draw. Not divided by
    temperature. Invalid options or ids raise ValueError naming them."""
    cdef vt_sample_options o = vt_sample_default_options()
    o.temperature = float(temperature)
    o.top_k = int(top_k)
    o.top_p = float(top_p)
    o.min_p = float(min_p)
    o.repetition_penalty = float(repetition_penalty)
    o.frequency_penalty = float(frequency_penalty)
    o.presence_penalty = float(presence_penalty)
    cdef int32_t flags = ((VT_PROCESS_PENALTIES if penalties else 0) | (VT_PROCESS_MIN_P if min_p_mask else 0)
                          | (VT_PROCESS_CANDIDATES if candidates else 0))
    xa = _logits_1d(logits, "logits")
    ia = np.ascontiguousarray(np.asarray(inputs, dtype=np.int64).reshape(-1))
    ca = np.ascontiguousarray(np.asarray(chosen, dtype=np.int64).reshape(-1))
    if (ia.size and (ia.min() < -2**31 or ia.max() >= 2**31)) or (ca.size and (ca.min() < -2**31 or ca.max() >= 2**31)):
        raise ValueError("token ids must fit in int32")
    ia32 = ia.astype(np.int32)
    ca32 = ca.astype(np.int32)
    out = np.empty(xa.shape[0], dtype=np.float32)
    cdef const float[::1] xv = xa
    cdef const int32_t[::1] iv = ia32
    cdef const int32_t[::1] cv = ca32
    cdef float[::1] ov = out
    cdef int64_t n = xa.shape[0], ni = ia32.shape[0], nc = ca32.shape[0]
    cdef const int32_t* ip = &iv[0] if ni else NULL
    cdef const int32_t* cp = &cv[0] if nc else NULL
    cdef vt_status st
    with nogil:
        st = vt_logits_process(&xv[0], n, &o, ip, ni, cp, nc, flags, &ov[0])
    _check(st)
    return out


def uniform(seed, step):
    """The documented RNG: a double in [0, 1) from 53 bits of
    splitmix64(seed ^ splitmix64(step + 0x9E3779B97F4A7C15))."""
    return vt_uniform(_u64(seed, "seed"), _u64(step, "step"))


# ---- library ------------------------------------------------------------------------------

def set_num_threads(n):
    """Worker threads for CPU kernels; n <= 0 restores the default (cores or VT_NUM_THREADS).
    Process-wide; safe while other threads generate (running work keeps its pool)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"n must be an int, got {type(n).__name__}")
    _check(vt_set_num_threads(max(-1, min(int(n), 1 << 20))))


def get_num_threads():
    """Worker threads CPU kernels use."""
    return int(vt_get_num_threads())


def parallel_regions():
    """Parallel regions the CPU kernels have run on the worker threads since the process
    started (one hand-off and one join each; work run on the calling thread alone is not
    counted). The difference across a call is that call's count."""
    return int(vt_parallel_regions())


def version():
    """libvt version string, e.g. '0.1.0'."""
    return vt_version().decode()


def backend_info():
    """One line per backend, e.g. 'cpu: available (x86-64 avx512, 2 threads)'."""
    return vt_backend_info().decode()


def cpu_isa():
    """The CPU kernel level in use: 'generic', 'avx2' or 'avx512' (VT_ISA can lower it); on
    64-bit ARM 'neon' (its int8 kernels) or 'generic' (VT_ISA=generic)."""
    m = re.search(r"^cpu: available \((?:[^ ,]+ )?(generic|avx2|avx512|neon),", backend_info(), re.M)
    return m.group(1) if m else "generic"


def cpu_vnni():
    """True when the CPU runs at the AVX-512 level with VNNI and VBMI, whose kernels (int4's
    GEMV, the int8 and int4-min linears) then run: backend_info() names them."""
    return bool(re.search(r"^cpu: available \(.*avx512,.*, VNNI\+VBMI\)", backend_info(), re.M))


def cuda_available():
    """True when libvt was built with CUDA and a device can be used."""
    return bool(vt_cuda_available())
