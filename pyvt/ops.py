"""The quantized inference API, conversions and sampling primitives of libvt.

Packed weights
    ``prepack_fp8(w)`` (per-channel FP8 E4M3), ``prepack_fp8_blocked(w, block_size=16)``,
    ``prepack_int8_blocked(w, block_size=32)``, ``prepack_int4_blocked(w, block_size=32)``,
    ``prepack_int4_min_blocked(w, block_size=32)`` (4-bit with a per-block min: Q4_1's grid),
    ``prepack_mxfp4(w)`` (OCP MXFP4: FP4 E2M1 with a power-of-two scale per 32),
    ``prepack_int8_sparse24(w)``, ``prepack_int4_sparse24(w)`` quantize a float32 / float16 /
    bfloat16 weight in the Hugging Face layout ``[out_features, in_features]`` into a handle
    (:class:`PackedFp8`, :class:`PackedInt8`, :class:`PackedInt4`, :class:`PackedInt4Min`,
    :class:`PackedMxfp4`, :class:`PackedInt8Sparse24`,
    :class:`PackedInt4Sparse24`) that owns
    native memory: freed when the object goes, or at once with ``close()`` / ``with``.
    ``handle.unpack()`` gives the dequantized float32 matrix back.

Linears (``x``: ``[in]`` or ``[m, in]``, float32 / float16 / bfloat16; result float32)
    ``linear_fp8_w8a16`` and ``linear_int8_w8a16`` keep the input in float (the LLM path);
    ``linear_fp8`` quantizes the input per row to FP8 first (W8A8); ``linear_gelu_fp8`` fuses
    bias + exact GELU; ``linear_swiglu_fp8(x, gate, up, bias)`` computes
    ``silu(x·gateᵀ) ⊙ (x·upᵀ)`` in one pass (both W8A16, or W8A8 with ``w8a8=True``);
    ``linear_swiglu_int8`` is the same over two PackedInt8 (W8A16);
    ``linear_int4`` / ``linear_swiglu_int4`` are the same over a dense 4-bit weight (W4A16:
    float input, f32 accumulation; ``gelu=True`` fuses the GELU), ``linear_int4_min`` /
    ``linear_swiglu_int4_min`` over a PackedInt4Min, ``linear_mxfp4`` / ``linear_swiglu_mxfp4``
    over a PackedMxfp4 (CPU only); ``linear_int8_sparse`` / ``linear_int4_sparse``
    quantize the input per row to INT8 / INT4 and accumulate in integers.
    float32 C-contiguous inputs are used without a copy; strided arrays are refused with a
    message naming the argument. m == 1 is the memory-bound decode GEMV; m > 1 a GEMM.

Weights on a GPU (builds with CUDA)
    ``prepack_*(w, ..., device="cuda" | "cuda:N" | "auto")`` quantizes on the host and keeps
    the weight in that GPU's memory (``handle.device`` is ``"cuda:N"``; ``"auto"`` falls back
    to the CPU, ``"cuda"`` raises :class:`BackendUnavailable` naming the reason). Its linears
    take host arrays (copied; numpy result) or float32 C-contiguous device arrays exposing
    ``__cuda_array_interface__`` (PyTorch CUDA tensors, CuPy, :class:`DeviceArray`) or DLPack,
    used in place, enqueued on the consumer's stream (PyTorch's current stream, or ``stream=``) without
    waiting, and returning a :class:`DeviceArray` that PyTorch / CuPy read in place
    (``torch.as_tensor(y, device="cuda")``). ``to_device(a)`` copies a host array to a GPU.

Conversions
    ``convert``, ``fp8_e4m3_encode``, ``fp8_e4m3_decode`` (OCP e4m3fn, round-to-nearest-even,
    saturating to ±448), ``transpose``.

Sampling
    ``argmax``, ``softmax``, ``sample(logits, temperature, top_k, top_p, seed, step)`` and its
    RNG ``uniform(seed, step)``, bit-for-bit as ``vt.h`` documents them.

Library
    ``set_num_threads``, ``get_num_threads``, ``parallel_regions`` (a diagnostic: regions run on
    the worker threads so far), ``version``, ``backend_info``, ``cpu_isa``, ``cpu_vnni``, ``cuda_available``.
"""

from __future__ import annotations

from ._device import DeviceArray
from ._ops import (
    PackedFp8,
    PackedInt4,
    PackedInt4Min,
    PackedInt4Sparse24,
    PackedInt8,
    PackedInt8Sparse24,
    PackedMxfp4,
    argmax,
    backend_info,
    convert,
    cpu_isa,
    cpu_vnni,
    cuda_available,
    fp8_e4m3_decode,
    fp8_e4m3_encode,
    get_num_threads,
    linear_fp8,
    linear_fp8_w8a16,
    linear_gelu_fp8,
    linear_int4,
    linear_int4_min,
    linear_int4_sparse,
    linear_int8_sparse,
    linear_int8_w8a16,
    linear_mxfp4,
    linear_swiglu_fp8,
    linear_swiglu_int4,
    linear_swiglu_int4_min,
    linear_swiglu_int8,
    linear_swiglu_mxfp4,
    parallel_regions,
    prepack_fp8,
    prepack_fp8_blocked,
    prepack_int4_blocked,
    prepack_int4_min_blocked,
    prepack_int4_sparse24,
    prepack_int8_blocked,
    prepack_int8_sparse24,
    prepack_mxfp4,
    sample,
    set_num_threads,
    softmax,
    to_device,
    transpose,
    uniform,
    version,
)
from .errors import BackendUnavailable

__all__ = [
    "BackendUnavailable",
    "DeviceArray",
    "PackedFp8",
    "PackedInt4",
    "PackedInt4Min",
    "PackedInt4Sparse24",
    "PackedInt8",
    "PackedInt8Sparse24",
    "PackedMxfp4",
    "argmax",
    "backend_info",
    "convert",
    "cpu_isa",
    "cpu_vnni",
    "cuda_available",
    "fp8_e4m3_decode",
    "fp8_e4m3_encode",
    "get_num_threads",
    "linear_fp8",
    "linear_fp8_w8a16",
    "linear_gelu_fp8",
    "linear_int4",
    "linear_int4_min",
    "linear_int4_sparse",
    "linear_int8_sparse",
    "linear_int8_w8a16",
    "linear_mxfp4",
    "linear_swiglu_fp8",
    "linear_swiglu_int4",
    "linear_swiglu_int4_min",
    "linear_swiglu_int8",
    "linear_swiglu_mxfp4",
    "parallel_regions",
    "prepack_fp8",
    "prepack_fp8_blocked",
    "prepack_int4_blocked",
    "prepack_int4_min_blocked",
    "prepack_int4_sparse24",
    "prepack_int8_blocked",
    "prepack_int8_sparse24",
    "prepack_mxfp4",
    "sample",
    "set_num_threads",
    "softmax",
    "to_device",
    "transpose",
    "uniform",
    "version",
]
