# cython: language_level=3
"""Device interop of the pyvt bindings: GPU memory owned by pyvt (:class:`DeviceArray`), and
device arrays of other libraries read in place — ``__cuda_array_interface__`` (PyTorch, CuPy,
Numba), DLPack capsules (JAX, ...) — with the CUDA stream to order work on.

The linears of :mod:`pyvt._ops` take their device arguments through the ``cdef`` functions
declared in ``_device.pxd``; nothing here computes.
"""

from libc.stdint cimport int32_t, int64_t, uint64_t, uint8_t, uint16_t
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid, PyCapsule_SetName
from pyvt._vt cimport *

import sys

import numpy as np

include "_errors.pxi"

# ---- streams --------------------------------------------------------------------------------

cdef object _cai_stream(object s):
    """The cudaStream_t (as an int) to order work on, from a __cuda_array_interface__ 'stream'
    value: None (no ordering asked) and 1 are the legacy default stream (0 here), 2 the
    per-thread default stream, anything else a stream handle."""
    if s is None:
        return 0
    if isinstance(s, bool) or not isinstance(s, int):
        raise TypeError(f"__cuda_array_interface__ 'stream' must be an int or None, got {s!r}")
    if s == 0:
        raise ValueError("__cuda_array_interface__ 'stream' is 0, which the protocol disallows "
                         "(1 = legacy default stream, 2 = per-thread default stream)")
    return 0 if s == 1 else s


cdef object _stream_arg(object stream):
    """A cudaStream_t as an int from the `stream=` argument: an int handle (0 = the legacy
    default stream, 2 = the per-thread default stream), a torch.cuda.Stream (.cuda_stream) or
    a cupy.cuda.Stream (.ptr)."""
    for attr in ("cuda_stream", "ptr"):
        v = getattr(stream, attr, None)
        if v is not None and not isinstance(stream, (int, np.integer)):
            stream = v
            break
    if isinstance(stream, bool) or not isinstance(stream, (int, np.integer)):
        raise TypeError(f"stream must be an int (a cudaStream_t), a torch.cuda.Stream or a "
                        f"cupy.cuda.Stream, got {type(stream).__name__}")
    if stream < 0 or stream >= 2 ** 64:
        raise ValueError(f"stream must be a cudaStream_t value (>= 0), got {stream!r}")
    return int(stream)


cdef class DeviceArray:
    """float32 array in GPU memory owned by pyvt (from vt_device_alloc), row-major, contiguous.

    Returned by the linears of weights on a GPU when their input is device memory, and by
    :func:`to_device`. Exposes ``__cuda_array_interface__`` (version 3): PyTorch
    (``torch.as_tensor(a, device="cuda")``), CuPy (``cupy.asarray(a)``) and Numba use the memory
    in place, and keep this object alive while they do. ``numpy()`` copies to the host.

    The values are ready once the stream it was produced on (``.stream``, a cudaStream_t as an
    int; 0 = the legacy default stream) reaches that point. Results of a linear on a PyTorch
    input are produced on PyTorch's current stream, so PyTorch work that follows on that
    stream sees them. ``close()`` frees the memory at once (after the GPU is done with pending
    work): views taken by other libraries must not be used after it.
    """

    def __cinit__(self):
        self._ptr = NULL
        self._dev = 0
        self._shape = ()
        self._size = 0
        self._stream = 0

    def __init__(self, *args, **kwargs):
        raise TypeError("DeviceArray objects are returned by pyvt.to_device() and by the linears "
                        "of weights on a GPU")

    def __dealloc__(self):
        if self._ptr != NULL:
            vt_device_free(self._dev, self._ptr)
            self._ptr = NULL

    cdef void* _data(self) except NULL:
        if self._ptr == NULL:
            raise RuntimeError("this DeviceArray is closed")
        return self._ptr

    def close(self):
        """Free the device memory now (idempotent; waits for the GPU's pending work, without
        holding the GIL)."""
        cdef void* p = self._ptr
        cdef int dev = self._dev
        self._ptr = NULL
        if p != NULL:
            with nogil:
                vt_device_free(dev, p)

    @property
    def closed(self):
        return self._ptr == NULL

    def __enter__(self):
        self._data()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    @property
    def shape(self):
        return self._shape

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def size(self):
        return int(self._size)

    @property
    def nbytes(self):
        return int(self._size) * 4

    @property
    def dtype(self):
        return np.dtype(np.float32)

    @property
    def device(self):
        """'cuda:N'"""
        return f"cuda:{self._dev}"

    @property
    def stream(self):
        """The cudaStream_t (as an int, 0 = legacy default) the contents are produced on."""
        return self._stream

    @property
    def data_ptr(self):
        """The device address (int)."""
        return <size_t>self._data()

    def __len__(self):
        return self._shape[0]

    @property
    def __cuda_array_interface__(self):
        cdef size_t p = <size_t>self._data()
        return {
            "version": 3,
            "shape": self._shape,
            "typestr": "<f4",
            "data": (int(p), False),
            "strides": None,
            "descr": [("", "<f4")],
            # CAI: 1 = the legacy default stream; the consumer orders its work after ours.
            "stream": 1 if self._stream == 0 else self._stream,
        }

    def numpy(self):
        """A float32 ndarray copy in host memory (waits for the array's stream)."""
        cdef void* p = self._data()
        out = np.empty(self._shape, dtype=np.float32)
        if self._size == 0:
            return out
        cdef float[::1] o = out.reshape(-1)
        cdef size_t n = self._size * 4
        cdef int dev = self._dev
        cdef size_t st_h = self._stream
        cdef vt_status st
        with nogil:
            st = vt_device_copy(dev, &o[0], p, n, VT_COPY_DEVICE_TO_HOST, <void*>st_h)
        _check(st)
        return out

    def __repr__(self):
        if self._ptr == NULL:
            return "<DeviceArray (closed)>"
        return f"<DeviceArray float32 shape={self._shape} device={self.device}>"


cdef DeviceArray _empty_device(int dev, tuple shape, object stream):
    cdef Py_ssize_t size = 1
    for d in shape:
        size *= d
    cdef void* p = NULL
    cdef size_t nbytes = size * 4
    cdef vt_status st
    with nogil:
        st = vt_device_alloc(dev, nbytes, &p)
    _check(st)
    cdef DeviceArray a = DeviceArray.__new__(DeviceArray)
    a._ptr = p
    a._dev = dev
    a._shape = shape
    a._size = size
    a._stream = stream
    return a


cdef DeviceArray _upload(object host, int dev, object stream):
    """A DeviceArray copy of a C-contiguous float32 ndarray (the copy is complete on return)."""
    cdef DeviceArray a = _empty_device(dev, tuple(host.shape), stream)
    if host.size == 0:
        return a
    cdef const float[::1] h = host.reshape(-1)
    cdef size_t n = host.size * 4
    cdef size_t st_h = stream
    cdef vt_status st
    with nogil:
        st = vt_device_copy(dev, a._ptr, &h[0], n, VT_COPY_HOST_TO_DEVICE, <void*>st_h)
    _check(st)
    return a


cdef class _DevView:
    """An array argument in device memory, as read from its __cuda_array_interface__ or its
    DLPack capsule (fields: see _device.pxd)."""


# ---- DLPack (the legacy, unversioned "dltensor" capsule: DLPack 0.x ABI) ----------------------

cdef extern from *:
    """
    #include <stdint.h>
    typedef struct { int32_t device_type; int32_t device_id; } pyvt_DLDevice;
    typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } pyvt_DLDataType;
    typedef struct {
        void* data;
        pyvt_DLDevice device;
        int32_t ndim;
        pyvt_DLDataType dtype;
        int64_t* shape;
        int64_t* strides;
        uint64_t byte_offset;
    } pyvt_DLTensor;
    typedef struct pyvt_DLManagedTensor {
        pyvt_DLTensor dl_tensor;
        void* manager_ctx;
        void (*deleter)(struct pyvt_DLManagedTensor*);
    } pyvt_DLManagedTensor;
    static void pyvt_dl_delete(pyvt_DLManagedTensor* t) { if (t && t->deleter) t->deleter(t); }
    """
    ctypedef struct pyvt_DLDevice:
        int32_t device_type
        int32_t device_id
    ctypedef struct pyvt_DLDataType:
        uint8_t code
        uint8_t bits
        uint16_t lanes
    ctypedef struct pyvt_DLTensor:
        void* data
        pyvt_DLDevice device
        int32_t ndim
        pyvt_DLDataType dtype
        int64_t* shape
        int64_t* strides
        uint64_t byte_offset
    ctypedef struct pyvt_DLManagedTensor:
        pyvt_DLTensor dl_tensor
    void pyvt_dl_delete(pyvt_DLManagedTensor* t)

cdef enum:
    _kDLCPU = 1
    _kDLCUDA = 2
    _kDLCUDAHost = 3
    _kDLCUDAManaged = 13
    _kDLFloat = 2

_DL_DEVICE_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA host (pinned)", 4: "OpenCL", 7: "Vulkan",
                    8: "Metal", 10: "ROCm", 13: "CUDA managed"}


cdef class _DLTensorOwner:
    """A consumed DLPack tensor: its producer's deleter runs when this goes."""
    cdef pyvt_DLManagedTensor* t

    def __dealloc__(self):
        if self.t != NULL:
            pyvt_dl_delete(self.t)
            self.t = NULL


cdef bint _is_dlpack_cuda(object x) except -1:
    if not (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")):
        return False
    d = x.__dlpack_device__()
    return int(d[0]) in (_kDLCUDA, _kDLCUDAManaged)


cdef _DevView _dlpack_view(object x, str name, int dev, object stream):
    """Consume x.__dlpack__ (asked to be ready for `stream`, a cudaStream_t as an int, 0 = the
    legacy default) as a float32 C-contiguous device array of device `dev`."""
    dtype_, did = x.__dlpack_device__()
    if int(did) != dev:
        raise ValueError(f"{name} is on cuda:{did} but the weight is on cuda:{dev}")
    s = 1 if stream == 0 else stream  # DLPack: 1 = the legacy default stream
    try:
        cap = x.__dlpack__(stream=s)
    except TypeError:  # a producer without the stream keyword
        cap = x.__dlpack__()
    if not PyCapsule_IsValid(cap, b"dltensor"):
        raise TypeError(f"{name}.__dlpack__() did not return an unused 'dltensor' capsule "
                        f"(DLPack 1.x versioned capsules are not read; pass a "
                        f"__cuda_array_interface__ array)")
    cdef pyvt_DLManagedTensor* mt = <pyvt_DLManagedTensor*>PyCapsule_GetPointer(cap, b"dltensor")
    PyCapsule_SetName(cap, b"used_dltensor")  # ours now: the capsule's destructor leaves it
    cdef _DLTensorOwner owner = _DLTensorOwner.__new__(_DLTensorOwner)
    owner.t = mt
    cdef pyvt_DLTensor* t = &mt.dl_tensor
    if t.device.device_type not in (_kDLCUDA, _kDLCUDAManaged) or t.device.device_id != dev:
        raise ValueError(f"{name}'s DLPack tensor is on "
                         f"{_DL_DEVICE_NAMES.get(t.device.device_type, t.device.device_type)} "
                         f"device {t.device.device_id}, expected CUDA device {dev}")
    if t.dtype.code != _kDLFloat or t.dtype.bits != 32 or t.dtype.lanes != 1:
        raise TypeError(f"{name} has DLPack dtype (code {t.dtype.code}, {t.dtype.bits} bits, "
                        f"{t.dtype.lanes} lanes); device inputs must be float32")
    cdef int64_t acc = 1
    cdef int i
    dims, steps = [], []
    for i in range(t.ndim):
        dims.append(int(t.shape[i]))
        if t.strides != NULL:
            steps.append(int(t.strides[i]))
    shape = tuple(dims)
    if t.strides != NULL:
        for i in range(t.ndim - 1, -1, -1):
            if t.shape[i] != 1 and t.strides[i] != acc:
                raise ValueError(f"{name} must be C-contiguous (got strides {tuple(steps)} "
                                 f"elements for shape {shape})")
            acc *= t.shape[i]
    size = 1
    for d in shape:
        size *= d
    if size == 0:
        raise ValueError(f"{name} is empty (shape {shape})")
    cdef size_t ptr = <size_t>t.data + <size_t>t.byte_offset
    if ptr == 0:
        raise ValueError(f"{name} has a null device pointer")
    cdef _DevView v = _DevView.__new__(_DevView)
    v.ptr = ptr
    v.shape = shape
    v.stream = stream
    v.keep = (x, owner)
    return v


cdef bint _is_device_array(object x) except -1:
    if isinstance(x, np.ndarray):
        return False
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return bool(x.is_cuda)
    return hasattr(x, "__cuda_array_interface__") or _is_dlpack_cuda(x)


cdef int _device_index_of(object x) except -2:
    """The CUDA ordinal of a PyTorch / CuPy / pyvt device array, -1 when it cannot be told."""
    if isinstance(x, DeviceArray):
        return (<DeviceArray>x)._dev
    d = getattr(x, "device", None)
    if d is None:
        return -1
    if isinstance(getattr(d, "type", None), str):  # torch.device
        if d.type != "cuda":
            return -1
        if d.index is not None:
            return int(d.index)
        torch = sys.modules.get("torch")
        return int(torch.cuda.current_device()) if torch is not None else -1
    i = getattr(d, "id", None)  # cupy.cuda.Device
    if isinstance(i, (int, np.integer)) and not isinstance(i, bool):
        return int(i)
    return -1


def _device_view(x, name):
    """Check a __cuda_array_interface__ array: float32 ('<f4'), C-contiguous, no mask, a
    non-null pointer. Returns (pointer, shape, stream to order on). Errors name `name`."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        if x.dtype != torch.float32:  # before the interface: older torch has no typestr for some
            raise TypeError(f"{name} has dtype {x.dtype}; device inputs must be float32 "
                            f"(convert it first, e.g. {name}.float())")
        x = x.detach()  # the interface refuses tensors that require grad; pyvt computes no grads
    cai = x.__cuda_array_interface__
    if not isinstance(cai, dict):
        raise TypeError(f"{name}.__cuda_array_interface__ is not a dict")
    try:
        shape = tuple(int(d) for d in cai["shape"])
        typestr = cai["typestr"]
        data = cai["data"]
    except (KeyError, TypeError, ValueError) as e:
        raise TypeError(f"{name}.__cuda_array_interface__ lacks a valid {e}") from None
    if typestr not in ("<f4", "=f4"):
        raise TypeError(f"{name} has typestr {typestr!r} ({_typestr_name(typestr)}); device inputs "
                        f"must be float32 ('<f4'): convert it first (e.g. x.astype('float32'))")
    if cai.get("mask") is not None:
        raise ValueError(f"{name} has a mask; masked arrays are not supported")
    strides = cai.get("strides")
    if strides is not None:
        want, acc = [], 4
        for d in reversed(shape):
            want.append(acc)
            acc *= d
        want.reverse()
        if any(sd != w for sd, w, d in zip(strides, want, shape) if d != 1) or len(strides) != len(shape):
            raise ValueError(f"{name} must be C-contiguous (got strides {tuple(strides)} bytes for "
                             f"shape {shape}); pass {name}.contiguous() / cupy.ascontiguousarray")
    ptr = int(data[0]) if data is not None and data[0] is not None else 0
    size = 1
    for d in shape:
        size *= d
    if size == 0:
        raise ValueError(f"{name} is empty (shape {shape})")
    if ptr == 0:
        raise ValueError(f"{name} has a null device pointer")
    return ptr, shape, _cai_stream(cai.get("stream"))


def _typestr_name(t):
    try:
        return np.dtype(t).name
    except TypeError:
        return "unknown"


cdef object _consumer_stream(object x, object cai_stream, int dev):
    """The stream to run on when none is given: PyTorch's current stream of the device for a
    torch tensor (PyTorch does not put its stream in the interface), else the one the
    producer named in its interface (legacy default when none)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(x, torch.Tensor):
        return int(torch.cuda.current_stream(dev).cuda_stream)
    return cai_stream


cdef _DevView _dev_arg(object x, str name, int dev, object dl_stream):
    """A device array argument on CUDA device `dev` (checked where the library tells), from
    its __cuda_array_interface__, else its DLPack capsule (made ready for dl_stream, a
    cudaStream_t as an int; None = the legacy default stream)."""
    torch = sys.modules.get("torch")
    is_torch = torch is not None and isinstance(x, torch.Tensor)
    # (torch first: hasattr raises for a tensor that requires grad, which _device_view detaches)
    if not is_torch and not hasattr(x, "__cuda_array_interface__"):
        return _dlpack_view(x, name, dev, 0 if dl_stream is None else dl_stream)
    xd = _device_index_of(x)
    if xd >= 0 and xd != dev:
        raise ValueError(f"{name} is on cuda:{xd} but the weight is on cuda:{dev}; move it "
                         f"(e.g. {name}.to('cuda:{dev}')) or prepack the weight there")
    ptr, shape, stream = _device_view(x, name)
    cdef _DevView v = _DevView.__new__(_DevView)
    v.ptr = ptr
    v.shape = shape
    v.stream = stream
    v.keep = x
    return v
