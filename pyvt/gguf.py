"""A GGUF reader in pure Python + numpy (GGUF versions 2 and 3).

GGUF is llama.cpp's single-file model format::

    magic "GGUF" | u32 version | u64 tensor_count | u64 kv_count
    kv_count x   (string key, u32 value_type, value)
    tensor_count x (string name, u32 n_dims, u64 dims[n_dims], u32 ggml_type, u64 offset)
    padding to `general.alignment` (default 32)
    tensor data (each tensor at data_start + offset)

All integers are little-endian; a string is a u64 byte length followed by UTF-8 bytes. `dims`
are in ggml order (fastest-varying first), so a ggml tensor with dims ``[in, out]`` is the numpy
array of shape ``(out, in)`` -- the Hugging Face ``[out_features, in_features]`` layout.

The file is memory-mapped; nothing but the header is read until a tensor is asked for.
:meth:`GGUFFile.dequantize` returns a fresh float32 array for the tensor types listed in
:data:`DEQUANTIZABLE` (float types, the legacy 32-blocks Q4_0/Q4_1/Q5_0/Q5_1/Q8_0 and the
K-quants Q2_K..Q6_K).

Every malformed input raises ``ValueError`` naming the file and what is wrong (a missing file
raises ``FileNotFoundError``). The reader never trusts a count: every length is checked against
the bytes left in the file before anything is allocated, so a lying header can neither hang it
nor make it allocate more than the file could hold.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any


import numpy as np

from ._files import open_regular

__all__ = [
    "GGUFFile",
    "TensorInfo",
    "GGMLType",
    "GGUFValueType",
    "DEQUANTIZABLE",
    "read_gguf",
    "dequantize",
]

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4  # GGML_MAX_DIMS
_HEADER_READ = 16 << 20  # bytes of a GGUF read first for its header (more when it is longer)
MAX_ARRAY_NESTING = 8


# --------------------------------------------------------------------------------------------
# Value and tensor types
# --------------------------------------------------------------------------------------------


class GGUFValueType:
    """Metadata value type codes (gguf.h `enum gguf_type`)."""

    UINT8 = 0
    INT8 = 1
    UINT16 = 2
    INT16 = 3
    UINT32 = 4
    INT32 = 5
    FLOAT32 = 6
    BOOL = 7
    STRING = 8
    ARRAY = 9
    UINT64 = 10
    INT64 = 11
    FLOAT64 = 12


# Fixed-size scalar value types: code -> numpy little-endian dtype.
_SCALAR_DTYPES: dict[int, np.dtype] = {
    GGUFValueType.UINT8: np.dtype("<u1"),
    GGUFValueType.INT8: np.dtype("<i1"),
    GGUFValueType.UINT16: np.dtype("<u2"),
    GGUFValueType.INT16: np.dtype("<i2"),
    GGUFValueType.UINT32: np.dtype("<u4"),
    GGUFValueType.INT32: np.dtype("<i4"),
    GGUFValueType.FLOAT32: np.dtype("<f4"),
    GGUFValueType.BOOL: np.dtype("<u1"),
    GGUFValueType.UINT64: np.dtype("<u8"),
    GGUFValueType.INT64: np.dtype("<i8"),
    GGUFValueType.FLOAT64: np.dtype("<f8"),
}
_STRUCT_CODES = {
    GGUFValueType.UINT8: "<B",
    GGUFValueType.INT8: "<b",
    GGUFValueType.UINT16: "<H",
    GGUFValueType.INT16: "<h",
    GGUFValueType.UINT32: "<I",
    GGUFValueType.INT32: "<i",
    GGUFValueType.FLOAT32: "<f",
    GGUFValueType.BOOL: "<B",
    GGUFValueType.UINT64: "<Q",
    GGUFValueType.INT64: "<q",
    GGUFValueType.FLOAT64: "<d",
}


class GGMLType:
    """Tensor type codes (ggml.h `enum ggml_type`)."""

    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q4_1 = 3
    Q5_0 = 6
    Q5_1 = 7
    Q8_0 = 8
    Q8_1 = 9
    Q2_K = 10
    Q3_K = 11
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    Q8_K = 15
    IQ2_XXS = 16
    IQ2_XS = 17
    IQ3_XXS = 18
    IQ1_S = 19
    IQ4_NL = 20
    IQ3_S = 21
    IQ2_S = 22
    IQ4_XS = 23
    I8 = 24
    I16 = 25
    I32 = 26
    I64 = 27
    F64 = 28
    IQ1_M = 29
    BF16 = 30
    TQ1_0 = 34
    TQ2_0 = 35
    MXFP4 = 39


# type code -> (name, elements per block, bytes per block). Every type ggml defines is listed so
# that a file's layout can be checked even when its tensors cannot be dequantized here.
GGML_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34),
    9: ("Q8_1", 32, 40),
    10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66),
    17: ("IQ2_XS", 256, 74),
    18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18),
    21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82),
    23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1),
    25: ("I16", 1, 2),
    26: ("I32", 1, 4),
    27: ("I64", 1, 8),
    28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2),
    34: ("TQ1_0", 256, 54),
    35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17),
}


def ggml_type_name(ggml_type: int) -> str:
    entry = GGML_TYPES.get(ggml_type)
    return entry[0] if entry else f"unknown type {ggml_type}"


# --------------------------------------------------------------------------------------------
# Dequantization (vectorized; one row of blocks per numpy row)
# --------------------------------------------------------------------------------------------


def _f16(blocks: np.ndarray, start: int) -> np.ndarray:
    """The little-endian f16 at byte `start` of each block, as a float32 column [n_blocks, 1]."""
    return np.ascontiguousarray(blocks[:, start : start + 2]).view("<f2").astype(np.float32)


def _nibbles(qs: np.ndarray) -> np.ndarray:
    """[n, 16] packed bytes -> [n, 32]: the 16 low nibbles, then the 16 high nibbles."""
    return np.concatenate([qs & 0x0F, qs >> 4], axis=1)


def _deq_q8_0(b: np.ndarray) -> np.ndarray:  # d f16 | qs i8[32]
    return _f16(b, 0) * b[:, 2:].view(np.int8).astype(np.float32)


def _deq_q4_0(b: np.ndarray) -> np.ndarray:  # d f16 | qs u8[16]; x = d * (q - 8)
    q = _nibbles(b[:, 2:]).astype(np.int8) - np.int8(8)
    return _f16(b, 0) * q.astype(np.float32)


def _deq_q4_1(b: np.ndarray) -> np.ndarray:  # d f16 | m f16 | qs u8[16]; x = d * q + m
    return _f16(b, 0) * _nibbles(b[:, 4:]).astype(np.float32) + _f16(b, 2)


# MXFP4's E2M1 values, doubled (ggml's kvalues_mxfp4), by 4-bit code.
_E2M1_X2 = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], np.float32)


def mxfp4_half_scale(e: np.ndarray) -> np.ndarray:
    """e8m0 scale bytes -> 2^(e - 128) as float32 (ggml_e8m0_to_fp32_half: half the block's
    scale, which multiplies the doubled codes), NaN for 0xFF."""
    out = np.ldexp(np.float32(1), e.astype(np.int32) - 128).astype(np.float32)
    return np.where(e == 0xFF, np.float32(np.nan), out)


def _deq_mxfp4(b: np.ndarray) -> np.ndarray:  # e u8 (e8m0) | qs u8[16]; x = kvalues[q] * 2^(e - 128)
    return mxfp4_half_scale(b[:, :1]) * _E2M1_X2[_nibbles(b[:, 1:])]


def _q5_high_bits(qh_bytes: np.ndarray) -> np.ndarray:
    """[n, 4] bytes of a little-endian u32 -> [n, 32] bit i of it, as 0/16."""
    bits = np.unpackbits(np.ascontiguousarray(qh_bytes), axis=1, bitorder="little")
    return bits.astype(np.uint8) << 4


def _deq_q5_0(b: np.ndarray) -> np.ndarray:  # d f16 | qh u32 | qs u8[16]; x = d * (q - 16)
    q = (_nibbles(b[:, 6:]) | _q5_high_bits(b[:, 2:6])).astype(np.int8) - np.int8(16)
    return _f16(b, 0) * q.astype(np.float32)


def _roundf(x: np.ndarray) -> np.ndarray:
    """C ``roundf`` of float32 values: round half away from zero (numpy's rint rounds half to
    even). trunc(x ± 0.5) in float64, where adding 0.5 to a float32 is exact (in float32,
    0.49999997 + 0.5 would round up to 1); fewer passes over the array than a floor-based form
    (a GGUF's 5- and 6-bit tensors go through here at conversion)."""
    y = np.asarray(x, np.float32).astype(np.float64)
    y += np.copysign(0.5, y)
    return np.trunc(y, out=y)


def quantize_q8_0(x: np.ndarray) -> np.ndarray:
    """float rows -> Q8_0 blocks as a uint8 array ``[n_blocks, 34]`` (row-major blocks).

    Bit-exact with ggml ``quantize_row_q8_0_ref``: ``d = amax / 127`` (float32),
    ``id = d ? 1/d : 0``, ``q = roundf(x * id)``, ``d`` stored as f16.
    """
    x = np.asarray(x, dtype=np.float32)
    if x.size % 32:
        raise ValueError(f"Q8_0 needs a multiple of 32 elements, got {x.size}")
    b = x.reshape(-1, 32)
    d = np.abs(b).max(axis=1, keepdims=True) / np.float32(127)
    with np.errstate(divide="ignore"):
        inv = np.where(d == 0, np.float32(0), np.float32(1) / d).astype(np.float32)
    # x * id can round to 127.5 -> 128 only for the max element, where x*id is 127 (+-ulp);
    # clip guards against that ulp anyway.
    q = np.clip(_roundf(b * inv), -127, 127).astype(np.int8)
    out = np.empty((b.shape[0], 34), np.uint8)
    out[:, :2] = d.astype(np.float16).view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q.view(np.uint8)
    return out


def q5_0_as_q8_0(b: np.ndarray) -> np.ndarray:
    """Q5_0 blocks [n, 22] -> the Q8_0 blocks [n, 34] of the same numbers, exactly: Q5_0's
    x = d·(q − 16) with q in [0, 31] is Q8_0's x = d·c with the int8 code c = q − 16."""
    out = np.empty((b.shape[0], 34), np.uint8)
    out[:, :2] = b[:, :2]
    out[:, 2:] = ((_nibbles(b[:, 6:]) | _q5_high_bits(b[:, 2:6])).astype(np.int8) - np.int8(16)).view(np.uint8)
    return out


def _deq_q5_1(b: np.ndarray) -> np.ndarray:  # d f16 | m f16 | qh u32 | qs u8[16]; x = d*q + m
    q = _nibbles(b[:, 8:]) | _q5_high_bits(b[:, 4:8])
    return _f16(b, 0) * q.astype(np.float32) + _f16(b, 2)


def _k_scale_min(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The 12 packed scale bytes of a Q4_K/Q5_K block -> 8 six-bit scales and 8 mins."""
    s = s.astype(np.uint8)
    sc = np.empty((s.shape[0], 8), np.uint8)
    mn = np.empty((s.shape[0], 8), np.uint8)
    sc[:, :4] = s[:, 0:4] & 63
    mn[:, :4] = s[:, 4:8] & 63
    sc[:, 4:] = (s[:, 8:12] & 0x0F) | ((s[:, 0:4] >> 6) << 4)
    mn[:, 4:] = (s[:, 8:12] >> 4) | ((s[:, 4:8] >> 6) << 4)
    return sc.astype(np.float32), mn.astype(np.float32)


def _deq_q2_k(b: np.ndarray) -> np.ndarray:
    # scales u8[16] | qs u8[64] | d f16 | dmin f16
    n = b.shape[0]
    sc = b[:, 0:16]
    qs = b[:, 16:80].reshape(n, 2, 1, 32)
    d, dmin = _f16(b, 80), _f16(b, 82)
    shifts = np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)
    q = ((qs >> shifts) & 3).reshape(n, 16, 16).astype(np.float32)
    dl = (d * (sc & 0x0F).astype(np.float32))[:, :, None]
    ml = (dmin * (sc >> 4).astype(np.float32))[:, :, None]
    return (dl * q - ml).reshape(n, 256)


def _deq_q3_k(b: np.ndarray) -> np.ndarray:
    # hmask u8[32] | qs u8[64] | scales u8[12] | d f16
    n = b.shape[0]
    hm = b[:, 0:32]
    qs = b[:, 32:96].reshape(n, 2, 1, 32)
    s = b[:, 96:108]
    d = _f16(b, 108)
    # 16 six-bit scales: low 4 bits from s[0:8] nibbles, high 2 bits from s[8:12].
    low = np.concatenate([s[:, 0:8] & 0x0F, s[:, 0:8] >> 4], axis=1)  # [n, 16]
    high = np.concatenate([(s[:, 8:12] >> sh) & 3 for sh in (0, 2, 4, 6)], axis=1)  # [n, 16]
    scales = (low | (high << 4)).astype(np.int16) - 32  # [n, 16]
    shifts = np.array([0, 2, 4, 6], np.uint8).reshape(1, 1, 4, 1)
    q = ((qs >> shifts) & 3).astype(np.int8)  # [n, half 2, j 4, 32]
    # hmask bit (4*half + j) of byte l set -> no offset, else -4.
    bit = np.arange(8, dtype=np.uint8).reshape(1, 2, 4, 1)
    hbit = (hm.reshape(n, 1, 1, 32) >> bit) & 1
    q = q - (4 * (1 - hbit)).astype(np.int8)
    q = q.reshape(n, 16, 16).astype(np.float32)
    return ((d * scales.astype(np.float32))[:, :, None] * q).reshape(n, 256)


def _deq_q4_k(b: np.ndarray) -> np.ndarray:
    # d f16 | dmin f16 | scales u8[12] | qs u8[128]
    n = b.shape[0]
    d, dmin = _f16(b, 0), _f16(b, 2)
    sc, mn = _k_scale_min(b[:, 4:16])
    qs = b[:, 16:144].reshape(n, 4, 1, 32)
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=2).reshape(n, 8, 32).astype(np.float32)
    return ((d * sc)[:, :, None] * q - (dmin * mn)[:, :, None]).reshape(n, 256)


def q4_k_as_q4_1(b: np.ndarray) -> np.ndarray:
    """Q4_K superblocks [n, 144] -> the Q4_1 blocks [8n, 20] of their eight sub-blocks of 32:
    a sub-block is w = (d·sc)·u − dmin·m with u in [0, 15], Q4_1's w = u·d' + m', so d' =
    f16(d·sc) and m' = f16(−dmin·m) (rounded to nearest: within 2^-12 of the products, which
    need up to 17 bits) and the codes move unchanged (Q4_K's sub-block 2k is the low nibbles
    of its 32 bytes k, 2k + 1 their high ones; Q4_1 keeps element j < 16 low, j + 16 high).
    The caller checks q4_k_fits_q4_1 first."""
    n = b.shape[0]
    d, dmin = _f16(b, 0), _f16(b, 2)
    sc, mn = _k_scale_min(b[:, 4:16])
    qs = b[:, 16:144].reshape(n, 4, 32)
    u = np.concatenate([qs & 0x0F, qs >> 4], axis=2).reshape(n, 8, 32)  # [n, sub-block, 32 codes]
    out = np.empty((n, 8, 20), np.uint8)
    out[:, :, 0:2] = (d * sc).astype("<f2").view(np.uint8).reshape(n, 8, 2)
    out[:, :, 2:4] = (-(dmin * mn)).astype("<f2").view(np.uint8).reshape(n, 8, 2)
    out[:, :, 4:] = u[:, :, :16] | (u[:, :, 16:] << 4)
    return out.reshape(n * 8, 20)


def q4_k_fits_q4_1(b: np.ndarray) -> bool:
    """Whether every sub-block scale d·sc and min dmin·m of Q4_K superblocks [n, 144] is a finite
    number an f16 holds (q4_k_as_q4_1); weights never come near the f16 range, corrupt files may."""
    with np.errstate(all="ignore"):
        d, dmin = _f16(b, 0), _f16(b, 2)
        big = np.float32(65504) / np.float32(63)  # sc, m <= 63
        return bool(np.all(np.isfinite(d) & np.isfinite(dmin) & (np.abs(d) <= big) & (np.abs(dmin) <= big)))


def _deq_q5_k(b: np.ndarray) -> np.ndarray:
    # d f16 | dmin f16 | scales u8[12] | qh u8[32] | qs u8[128]
    n = b.shape[0]
    d, dmin = _f16(b, 0), _f16(b, 2)
    sc, mn = _k_scale_min(b[:, 4:16])
    qh = b[:, 16:48].reshape(n, 1, 32)
    qs = b[:, 48:176].reshape(n, 4, 1, 32)
    low = np.concatenate([qs & 0x0F, qs >> 4], axis=2).reshape(n, 8, 32)
    high = ((qh >> np.arange(8, dtype=np.uint8).reshape(1, 8, 1)) & 1) << 4
    q = (low | high).astype(np.float32)
    return ((d * sc)[:, :, None] * q - (dmin * mn)[:, :, None]).reshape(n, 256)


def _deq_q6_k(b: np.ndarray) -> np.ndarray:
    # ql u8[128] | qh u8[64] | scales i8[16] | d f16
    n = b.shape[0]
    ql = b[:, 0:128].reshape(n, 2, 64)
    qh = b[:, 128:192].reshape(n, 2, 32)
    sc = b[:, 192:208].view(np.int8).astype(np.float32).reshape(n, 2, 8)
    d = _f16(b, 208).reshape(n, 1, 1)
    low = np.concatenate([ql & 0x0F, ql >> 4], axis=2)  # [n, 2, 128]
    high = np.concatenate([(qh >> sh) & 3 for sh in (0, 2, 4, 6)], axis=2)  # [n, 2, 128]
    q = (low | (high << 4)).astype(np.int8) - np.int8(32)
    y = (d * np.repeat(sc, 16, axis=2)) * q.astype(np.float32)
    return y.reshape(n, 256)


#: IQ4_NL / IQ4_XS's 16 non-uniform levels (ggml-common.h kvalues_iq4nl).
_IQ4NL_VALUES = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], np.float32)


def _deq_iq4_nl(b: np.ndarray) -> np.ndarray:  # d f16 | qs u8[16]; x = d * kvalues[q]
    return _f16(b, 0) * _IQ4NL_VALUES[_nibbles(b[:, 2:18])]


def _iq4_xs_scales(b: np.ndarray) -> np.ndarray:
    """IQ4_XS superblocks [n, 136] -> their sub-blocks' ls - 32 [n, 8] (int32): the 6-bit ls
    from a nibble of scales_l (bytes 4..7) and two bits of the u16 scales_h (bytes 2..3)."""
    sh = b[:, 2].astype(np.uint16) | (b[:, 3].astype(np.uint16) << 8)
    ib = np.arange(8)
    low = (b[:, 4:8][:, ib // 2] >> (4 * (ib % 2)).astype(np.uint8)) & 0x0F
    high = (sh[:, None] >> (2 * ib).astype(np.uint16)) & 3
    return (low.astype(np.int32) | (high.astype(np.int32) << 4)) - 32


def iq4_nl_as_q8_0(b: np.ndarray) -> np.ndarray:
    """IQ4_NL blocks [n, 18] -> the Q8_0 blocks [n, 34] of the same numbers, exactly: x =
    d·kvalues[q] is Q8_0's x = d·c with the int8 code c = kvalues[q] (levels −127..113)."""
    out = np.empty((b.shape[0], 34), np.uint8)
    out[:, :2] = b[:, :2]
    out[:, 2:] = _IQ4NL_VALUES[_nibbles(b[:, 2:18])].astype(np.int8).view(np.uint8)
    return out


def iq4_xs_as_q8_0(b: np.ndarray) -> np.ndarray:
    """IQ4_XS superblocks [n, 136] -> the Q8_0 blocks [8n, 34] of their sub-blocks: x =
    d·(ls − 32)·kvalues[q] is Q8_0's x = d'·c with c = kvalues[q] and d' = f16(d·(ls − 32)) (a
    product of an f16 and a 6-bit integer, rounded to nearest: within 2^-12 of it)."""
    n = b.shape[0]
    d, ls = _f16(b, 0), _iq4_xs_scales(b)
    out = np.empty((n, 8, 34), np.uint8)
    with np.errstate(over="ignore", invalid="ignore"):
        out[:, :, 0:2] = (d * ls.astype(np.float32)).astype("<f2").view(np.uint8).reshape(n, 8, 2)
    q = _nibbles(b[:, 8:136].reshape(n * 8, 16)).reshape(n, 8, 32)
    out[:, :, 2:] = _IQ4NL_VALUES[q].astype(np.int8).view(np.uint8)
    return out.reshape(n * 8, 34)


def _deq_iq4_xs(b: np.ndarray) -> np.ndarray:
    # d f16 | scales_h u16 | scales_l u8[4] | qs u8[128]: eight sub-blocks of 32, each
    # x = d * (ls - 32) * kvalues[q] with the 6-bit ls from a nibble of scales_l and 2 bits of scales_h
    n = b.shape[0]
    d, ls = _f16(b, 0), _iq4_xs_scales(b)
    q = _nibbles(b[:, 8:136].reshape(n * 8, 16)).reshape(n, 8, 32)
    return ((d * ls.astype(np.float32))[:, :, None] * _IQ4NL_VALUES[q]).reshape(n, 256)


_DEQUANT_BLOCKS = {
    GGMLType.Q4_0: _deq_q4_0,
    GGMLType.Q4_1: _deq_q4_1,
    GGMLType.Q5_0: _deq_q5_0,
    GGMLType.Q5_1: _deq_q5_1,
    GGMLType.Q8_0: _deq_q8_0,
    GGMLType.Q2_K: _deq_q2_k,
    GGMLType.Q3_K: _deq_q3_k,
    GGMLType.Q4_K: _deq_q4_k,
    GGMLType.Q5_K: _deq_q5_k,
    GGMLType.Q6_K: _deq_q6_k,
    GGMLType.MXFP4: _deq_mxfp4,
    GGMLType.IQ4_NL: _deq_iq4_nl,
    GGMLType.IQ4_XS: _deq_iq4_xs,
}
_PLAIN_DTYPES = {
    GGMLType.F32: np.dtype("<f4"),
    GGMLType.F16: np.dtype("<f2"),
    GGMLType.F64: np.dtype("<f8"),
    GGMLType.I8: np.dtype("<i1"),
    GGMLType.I16: np.dtype("<i2"),
    GGMLType.I32: np.dtype("<i4"),
    GGMLType.I64: np.dtype("<i8"),
}

#: Tensor types :func:`dequantize` handles.
DEQUANTIZABLE = frozenset(
    GGML_TYPES[t][0] for t in (*_DEQUANT_BLOCKS, *_PLAIN_DTYPES, GGMLType.BF16)
)

# Dequantize this many blocks at a time, to bound the temporaries (a few x 64 MiB at most).
_CHUNK_BLOCKS = 1 << 18


def dequantize(raw, ggml_type: int, shape) -> np.ndarray:
    """Dequantize the raw bytes of one tensor to a new float32 array of numpy `shape`.

    `raw` is anything numpy can view as bytes (bytes, memoryview, uint8 array). `shape` is in
    numpy order (slowest-varying first). Raises ValueError for a type not handled here or for a
    byte count that does not fit the shape.
    """
    shape = tuple(int(s) for s in shape)
    n = 1
    for s in shape:
        if s < 0:
            raise ValueError(f"negative dimension in shape {shape}")
        n *= s
    entry = GGML_TYPES.get(int(ggml_type))
    if entry is None:
        raise ValueError(f"unknown GGML tensor type {ggml_type}")
    name, block, type_size = entry
    if n % block:
        raise ValueError(f"{name}: {n} elements is not a multiple of the block size {block}")
    buf = np.frombuffer(raw, dtype=np.uint8)
    nbytes = n // block * type_size
    if buf.size != nbytes:
        raise ValueError(f"{name}: shape {shape} needs {nbytes} bytes, got {buf.size}")
    if ggml_type in _PLAIN_DTYPES:
        with np.errstate(all="ignore"):  # F64 values past the float32 range become inf
            return buf.view(_PLAIN_DTYPES[ggml_type]).astype(np.float32).reshape(shape)
    if ggml_type == GGMLType.BF16:
        out = np.empty(n, np.uint32)
        out[:] = buf.view("<u2")
        out <<= 16
        return out.view(np.float32).reshape(shape)
    fn = _DEQUANT_BLOCKS.get(ggml_type)
    if fn is None:
        raise ValueError(
            f"tensor type {name} cannot be dequantized by pyvt "
            f"(supported: {', '.join(sorted(DEQUANTIZABLE))})"
        )
    blocks = buf.reshape(-1, type_size)
    out = np.empty((blocks.shape[0], block), np.float32)
    # Scales that are inf/NaN in a corrupt file give inf/NaN values, not warnings.
    with np.errstate(all="ignore"):
        for i in range(0, blocks.shape[0], _CHUNK_BLOCKS):
            out[i : i + _CHUNK_BLOCKS] = fn(blocks[i : i + _CHUNK_BLOCKS])
    return out.reshape(shape)


# --------------------------------------------------------------------------------------------
# The file
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TensorInfo:
    """One tensor of a GGUF file."""

    name: str
    shape: tuple[int, ...]  # numpy order (reversed ggml dims): (rows, ..., cols)
    ggml_type: int
    offset: int  # absolute byte offset of the data in the file
    nbytes: int
    n_elements: int

    @property
    def type_name(self) -> str:
        return ggml_type_name(self.ggml_type)


class _NeedMore(Exception):
    """The header runs past the bytes read so far (not past the file): read more, parse again."""


class _Cursor:
    """Bounds-checked little-endian reads from the first ``len(buf)`` bytes of a file of
    ``end`` bytes; errors name the file. A read inside the file but past ``buf`` raises
    :class:`_NeedMore`."""

    __slots__ = ("buf", "pos", "end", "have", "path")

    def __init__(self, buf, path: str, end: int | None = None):
        self.buf = buf
        self.pos = 0
        self.have = len(buf)
        self.end = self.have if end is None else end
        self.path = path

    def more(self, n: int) -> None:
        if self.pos + n > self.have:
            raise _NeedMore

    def fail(self, what: str) -> ValueError:
        return ValueError(f"{self.path}: malformed GGUF: {what}")

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.end:
            raise self.fail(
                f"{what} needs {n} bytes at offset {self.pos}, but the file has {self.end} bytes"
            )
        self.more(n)

    def unpack(self, code: str, size: int, what: str):
        self.need(size, what)
        v = struct.unpack_from(code, self.buf, self.pos)[0]
        self.pos += size
        return v

    def u32(self, what: str) -> int:
        return self.unpack("<I", 4, what)

    def u64(self, what: str) -> int:
        return self.unpack("<Q", 8, what)

    def raw_string(self, what: str) -> bytes:
        n = self.u64(f"length of {what}")
        if n > self.end - self.pos:
            raise self.fail(
                f"{what} has length {n} at offset {self.pos - 8}, past the end of the file "
                f"({self.end - self.pos} bytes left)"
            )
        self.more(n)
        s = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return s

    def string(self, what: str) -> str:
        b = self.raw_string(what)
        try:
            return b.decode("utf-8")
        except UnicodeDecodeError as e:
            raise self.fail(f"{what} is not valid UTF-8 ({e})") from None


def _min_size(vtype: int) -> int:
    """The fewest bytes one value of `vtype` can take (used to reject lying counts)."""
    if vtype in _SCALAR_DTYPES:
        return _SCALAR_DTYPES[vtype].itemsize
    if vtype == GGUFValueType.STRING:
        return 8
    return 12  # array: u32 type + u64 count


class GGUFFile:
    """An open GGUF file.

    Attributes: ``path`` (Path), ``version`` (2 or 3), ``metadata`` (dict: key -> value; strings
    as str, numbers as int/float/bool, arrays of numbers as numpy arrays, arrays of strings as
    lists), ``tensors`` (dict: name -> :class:`TensorInfo`, in file order), ``alignment`` and
    ``data_offset`` (where tensor data begins).

    Use as a context manager or call :meth:`close`. The file is read, not memory-mapped: a
    mapping kills the process with SIGBUS when another process truncates the file while it is
    read. Here a file that shrinks or is rewritten while open (its size or modification time
    changes) is a ``ValueError`` naming it, from :meth:`raw` and :meth:`dequantize`.
    """

    def __init__(self, path):
        self.path = Path(os.fspath(path))
        p = str(self.path)
        if not self.path.exists():
            raise FileNotFoundError(f"GGUF file not found: {p}")
        if self.path.is_dir():
            raise ValueError(f"{p}: is a directory, not a GGUF file")
        self._fd = None
        try:
            # A FIFO or a device must not block or stream forever: a regular file only.
            self._fd = open_regular(self.path, "GGUF file")
            st = os.fstat(self._fd)
            self._stat = (st.st_ino, st.st_size, st.st_mtime_ns)
            if st.st_size < 24:
                raise ValueError(
                    f"{p}: not a GGUF file: {st.st_size} bytes is shorter than a GGUF header"
                )
        except FileNotFoundError:
            self.close()
            raise FileNotFoundError(f"GGUF file not found: {p}") from None
        except OSError as e:
            self.close()
            raise ValueError(f"{p}: cannot read GGUF file: {e}") from None
        except BaseException:
            self.close()
            raise
        try:
            # The header (metadata, vocabulary, tensor infos) is read into memory: the first
            # 16 MiB, and 4x more whenever it turns out longer (then parsed again).
            size, have = st.st_size, min(st.st_size, _HEADER_READ)
            while True:
                buf = self._read(0, have).tobytes()
                try:
                    self._parse(buf, p, size)
                    break
                except _NeedMore:
                    if have == size:  # cannot happen: every read checks the file size first
                        raise ValueError(f"{p}: malformed GGUF: header past the end of the file")
                    have = min(size, have * 4)
        except BaseException:
            self.close()
            raise

    @property
    def file_stat(self) -> tuple[int, int, int]:
        """(inode, size, mtime_ns) of the file when it was opened; every read checks it still is."""
        return self._stat

    def _changed(self) -> ValueError:
        return ValueError(
            f"{self.path}: the GGUF file changed or was truncated while it was being read "
            "(another process wrote to it)"
        )

    def _read(self, offset: int, n: int) -> np.ndarray:
        """``n`` bytes at ``offset`` as a new uint8 array; ValueError if the file changed."""
        if self._fd is None:
            raise ValueError(f"{self.path}: GGUF file is closed")
        out = np.empty(n, dtype=np.uint8)
        view = memoryview(out)
        got = 0
        try:
            while got < n:
                r = os.preadv(self._fd, [view[got:]], offset + got)
                if r == 0:
                    raise self._changed()
                got += r
            st = os.fstat(self._fd)
        except OSError as e:
            raise ValueError(f"{self.path}: cannot read GGUF file: {e}") from None
        if (st.st_ino, st.st_size, st.st_mtime_ns) != self._stat:
            raise self._changed()
        return out

    # -- parsing -----------------------------------------------------------------------------

    def _parse(self, buf, p: str, size: int) -> None:
        c = _Cursor(buf, p, size)
        magic = bytes(buf[0:4])
        if magic != GGUF_MAGIC:
            raise ValueError(f"{p}: not a GGUF file: bad magic {magic!r} (expected b'GGUF')")
        c.pos = 4
        version = c.u32("version")
        if version not in SUPPORTED_VERSIONS:
            if version & 0xFFFF == 0 and (version >> 24) in SUPPORTED_VERSIONS:
                raise ValueError(f"{p}: big-endian GGUF files are not supported")
            raise ValueError(
                f"{p}: unsupported GGUF version {version} (supported: 2, 3)"
            )
        self.version = version
        n_tensors = c.u64("tensor count")
        n_kv = c.u64("metadata count")
        # A key/value takes at least 8 (key length) + 4 (type) + 1 bytes; a tensor info at
        # least 8 + 4 + 4 + 8. Reject counts the file cannot possibly hold before looping.
        left = c.end - c.pos
        if n_kv > left // 13:
            raise c.fail(f"metadata count {n_kv} is impossible for a file of {c.end} bytes")
        if n_tensors > left // 24:
            raise c.fail(f"tensor count {n_tensors} is impossible for a file of {c.end} bytes")

        meta: dict[str, Any] = {}
        for i in range(n_kv):
            key = c.string(f"metadata key #{i}")
            if key in meta:
                raise c.fail(f"duplicate metadata key {key!r}")
            vtype = c.u32(f"type of metadata {key!r}")
            meta[key] = self._read_value(c, vtype, key, 0)
        self.metadata = meta

        alignment = meta.get("general.alignment", DEFAULT_ALIGNMENT)
        if (
            isinstance(alignment, bool)
            or not isinstance(alignment, int)
            or alignment <= 0
            or alignment & (alignment - 1)
        ):
            raise c.fail(f"general.alignment must be a positive power of two, got {alignment!r}")
        self.alignment = alignment

        infos = []
        names = set()
        for i in range(n_tensors):
            name = c.string(f"name of tensor #{i}")
            if name in names:
                raise c.fail(f"duplicate tensor name {name!r}")
            names.add(name)
            n_dims = c.u32(f"dimension count of tensor {name!r}")
            if n_dims > MAX_DIMS:
                raise c.fail(f"tensor {name!r} has {n_dims} dimensions (at most {MAX_DIMS})")
            c.need(8 * n_dims, f"dimensions of tensor {name!r}")
            dims = struct.unpack_from(f"<{n_dims}Q", buf, c.pos)
            c.pos += 8 * n_dims
            ggml_type = c.u32(f"type of tensor {name!r}")
            offset = c.u64(f"data offset of tensor {name!r}")
            infos.append((name, dims, ggml_type, offset))

        data_offset = -(-c.pos // alignment) * alignment
        if infos and data_offset > c.end:
            raise c.fail(f"tensor data would start at {data_offset}, past the end of the file")
        self.data_offset = data_offset

        tensors: dict[str, TensorInfo] = {}
        for name, dims, ggml_type, offset in infos:
            entry = GGML_TYPES.get(ggml_type)
            if entry is None:
                raise c.fail(f"tensor {name!r} has unknown tensor type {ggml_type}")
            tname, block, type_size = entry
            n = 1
            for d in dims:
                n *= d
            if dims and dims[0] % block:
                raise c.fail(
                    f"tensor {name!r}: row length {dims[0]} is not a multiple of the "
                    f"{tname} block size {block}"
                )
            nbytes = n // block * type_size
            if offset % alignment:
                raise c.fail(
                    f"tensor {name!r}: data offset {offset} is not a multiple of the "
                    f"alignment {alignment}"
                )
            start = data_offset + offset
            if start + nbytes > c.end:
                raise c.fail(
                    f"tensor {name!r} ({tname}, dims {list(dims)}) spans bytes "
                    f"{start}..{start + nbytes}, past the end of the file ({c.end} bytes)"
                )
            tensors[name] = TensorInfo(
                name=name,
                shape=tuple(int(d) for d in reversed(dims)),
                ggml_type=ggml_type,
                offset=start,
                nbytes=nbytes,
                n_elements=n,
            )
        self.tensors = tensors

    def _read_value(self, c: _Cursor, vtype: int, key: str, depth: int):
        if vtype in _STRUCT_CODES:
            size = _SCALAR_DTYPES[vtype].itemsize
            v = c.unpack(_STRUCT_CODES[vtype], size, f"value of {key!r}")
            if vtype == GGUFValueType.BOOL:
                return bool(v)
            return v
        if vtype == GGUFValueType.STRING:
            b = c.raw_string(f"value of {key!r}")
            try:
                return b.decode("utf-8")
            except UnicodeDecodeError:
                return b  # kept as bytes rather than refusing the file
        if vtype == GGUFValueType.ARRAY:
            if depth >= MAX_ARRAY_NESTING:
                raise c.fail(f"{key!r}: arrays nested deeper than {MAX_ARRAY_NESTING}")
            etype = c.u32(f"element type of array {key!r}")
            count = c.u64(f"length of array {key!r}")
            if etype not in _SCALAR_DTYPES and etype not in (
                GGUFValueType.STRING,
                GGUFValueType.ARRAY,
            ):
                raise c.fail(f"array {key!r} has unknown element type {etype}")
            if count > (c.end - c.pos) // _min_size(etype):
                raise c.fail(
                    f"array {key!r} claims {count} elements, more than the "
                    f"{c.end - c.pos} bytes left in the file can hold"
                )
            if etype in _SCALAR_DTYPES:
                dt = _SCALAR_DTYPES[etype]
                c.more(count * dt.itemsize)
                arr = np.frombuffer(c.buf, dtype=dt, count=count, offset=c.pos).copy()
                c.pos += count * dt.itemsize
                return arr.astype(bool) if etype == GGUFValueType.BOOL else arr
            if etype == GGUFValueType.STRING:
                out = []
                buf, end, have, pos = c.buf, c.end, c.have, c.pos
                unpack = struct.unpack_from
                for i in range(count):
                    if pos + 8 > end:
                        c.pos = pos
                        raise c.fail(f"array {key!r}: element {i} runs past the end of the file")
                    if pos + 8 > have:
                        raise _NeedMore
                    n = unpack("<Q", buf, pos)[0]
                    pos += 8
                    if n > end - pos:
                        c.pos = pos
                        raise c.fail(
                            f"array {key!r}: string #{i} has length {n}, past the end of the file"
                        )
                    if pos + n > have:
                        raise _NeedMore
                    b = buf[pos : pos + n]
                    pos += n
                    try:
                        out.append(b.decode("utf-8"))
                    except UnicodeDecodeError:
                        out.append(bytes(b))
                c.pos = pos
                return out
            return [
                self._read_value(c, GGUFValueType.ARRAY, f"{key}[{i}]", depth + 1)
                for i in range(count)
            ]
        raise c.fail(f"metadata {key!r} has unknown value type {vtype}")

    # -- access ------------------------------------------------------------------------------

    def _info(self, name: str) -> TensorInfo:
        try:
            return self.tensors[name]
        except KeyError:
            raise KeyError(f"{self.path}: no tensor named {name!r}") from None

    def raw(self, name: str, start: int = 0, stop: int | None = None) -> np.ndarray:
        """The bytes of a tensor (or its bytes ``[start, stop)``, to read a large one in
        pieces), read into a new read-only uint8 array."""
        if self._fd is None:
            raise ValueError(f"{self.path}: GGUF file is closed")
        t = self._info(name)
        stop = t.nbytes if stop is None else stop
        if not 0 <= start <= stop <= t.nbytes:
            raise ValueError(f"{self.path}: tensor {name!r}: bytes [{start}, {stop}) are outside its {t.nbytes}")
        out = self._read(t.offset + start, stop - start)
        out.flags.writeable = False
        return out

    def dequantize(self, name: str) -> np.ndarray:
        """The tensor as a new float32 array of shape ``info.shape``."""
        t = self._info(name)
        try:
            return dequantize(self.raw(name), t.ggml_type, t.shape)
        except ValueError as e:
            raise ValueError(f"{self.path}: tensor {name!r}: {e}") from None

    def get(self, key: str, default=None):
        return self.metadata.get(key, default)

    def close(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __enter__(self) -> "GGUFFile":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return (
            f"GGUFFile({str(self.path)!r}, version={self.version}, "
            f"tensors={len(self.tensors)}, metadata={len(self.metadata)})"
        )


def read_gguf(path) -> GGUFFile:
    """Open and parse a GGUF file (see :class:`GGUFFile`)."""
    return GGUFFile(path)


# --------------------------------------------------------------------------------------------
# Typed metadata values
# --------------------------------------------------------------------------------------------

_KIND_NAMES = {
    "string": "a string",
    "bool": "a boolean",
    "int": "an integer",
    "strings": "an array of strings",
    "ints": "an array of integers",
    "numbers": "an array of numbers",
}


def _describe(v) -> str:
    """A value for an error message, without building the repr of a million-entry array."""
    if isinstance(v, list):
        return f"an array of {len(v)} values"
    if isinstance(v, np.ndarray):
        return f"an array of {v.size} {v.dtype} values"
    return f"{v!r:.60}"


def meta_value(meta: dict, key: str, kind: str, path, default=None):
    """``meta[key]`` when it is of the kind the converter needs, ``default`` when absent; else
    a one-line ValueError naming the file and the key (a list where a string belongs once
    raised TypeError, an array where a flag belongs numpy's "truth value is ambiguous").

    kind: "string"; "bool" (a GGUF bool, or the integers 0 / 1); "int" (an integer, not a
    bool); "strings" (an array of strings: str, or bytes for those that are not UTF-8);
    "ints" / "numbers" (a 1-D numeric array, integer / integer or float)."""
    if key not in meta:
        return default
    v = meta[key]
    is_int = isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
    if kind == "string":
        ok = isinstance(v, str)
    elif kind == "bool":
        ok = isinstance(v, (bool, np.bool_)) or (is_int and int(v) in (0, 1))
        v = bool(v) if ok else v
    elif kind == "int":
        ok = is_int
    elif kind == "strings":
        ok = isinstance(v, list) and all(isinstance(x, (str, bytes)) for x in v)
    elif kind in ("ints", "numbers"):
        ok = isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype.kind in ("iu" if kind == "ints" else "iuf")
    else:
        raise ValueError(f"meta_value: unknown kind {kind!r}")
    if not ok:
        raise ValueError(f"{path}: {key} = {_describe(v)} is not {_KIND_NAMES[kind]}")
    return v
