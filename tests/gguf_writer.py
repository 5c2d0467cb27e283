"""A small GGUF writer and block quantizers for tests (numpy only, independent of pyvt.gguf).

    write_gguf(path, metadata, tensors, version=3, alignment=32)

metadata: {key: value} where value is a `Val(type, value)` or a plain Python value (str -> STRING,
bool -> BOOL, int -> INT32/UINT64 by range, float -> FLOAT32, list of str -> ARRAY[STRING], list of
int -> ARRAY[INT32], list of float -> ARRAY[FLOAT32]).
tensors: list of (name, ggml_type, numpy_shape, raw_bytes). Use the quantizers below to get
raw bytes for a float array; each follows the ggml block layout literally.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

# value types
UINT8, INT8, UINT16, INT16, UINT32, INT32, FLOAT32, BOOL, STRING, ARRAY, UINT64, INT64, FLOAT64 = range(13)
# tensor types
F32, F16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 = 0, 1, 2, 3, 6, 7, 8
Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, BF16 = 10, 11, 12, 13, 14, 30
IQ4_NL, IQ4_XS = 20, 23
MXFP4 = 39
Q4_K_BLOCK = 256

_SCALAR_FMT = {
    UINT8: "<B", INT8: "<b", UINT16: "<H", INT16: "<h", UINT32: "<I", INT32: "<i",
    FLOAT32: "<f", BOOL: "<?", UINT64: "<Q", INT64: "<q", FLOAT64: "<d",
}


@dataclass
class Val:
    type: int
    value: object
    elem_type: int | None = None  # for ARRAY


def _string(s) -> bytes:
    b = s if isinstance(s, bytes) else s.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _infer(v) -> Val:
    if isinstance(v, Val):
        return v
    if isinstance(v, bool):
        return Val(BOOL, v)
    if isinstance(v, int):
        return Val(INT32 if -(2**31) <= v < 2**31 else UINT64, v)
    if isinstance(v, float):
        return Val(FLOAT32, v)
    if isinstance(v, (str, bytes)):
        return Val(STRING, v)
    if isinstance(v, (list, tuple)):
        if all(isinstance(x, (str, bytes)) for x in v):
            return Val(ARRAY, list(v), STRING)
        if all(isinstance(x, bool) for x in v):
            return Val(ARRAY, list(v), BOOL)
        if all(isinstance(x, int) for x in v):
            return Val(ARRAY, list(v), INT32)
        if all(isinstance(x, (int, float)) for x in v):
            return Val(ARRAY, list(v), FLOAT32)
    raise TypeError(f"cannot infer a GGUF type for {v!r}")


def _value(val: Val) -> bytes:
    if val.type in _SCALAR_FMT:
        return struct.pack(_SCALAR_FMT[val.type], val.value)
    if val.type == STRING:
        return _string(val.value)
    if val.type == ARRAY:
        out = struct.pack("<IQ", val.elem_type, len(val.value))
        for x in val.value:
            if val.elem_type == ARRAY:
                out += _value(x if isinstance(x, Val) else _infer(x))
            else:
                out += _value(Val(val.elem_type, x))
        return out
    raise ValueError(val.type)


def write_gguf(path, metadata: dict, tensors=(), *, version: int = 3, alignment: int | None = None,
               offsets=None) -> bytes:
    """Write a GGUF file; returns its bytes. `offsets` overrides the tensor data offsets."""
    align = alignment if alignment is not None else 32
    meta = dict(metadata)
    if alignment is not None:
        meta["general.alignment"] = Val(UINT32, alignment)
    out = bytearray(b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(meta)))
    for k, v in meta.items():
        val = _infer(v)
        out += _string(k) + struct.pack("<I", val.type) + _value(val)
    data = bytearray()
    offs = []
    for name, ggml_type, shape, raw in tensors:
        data += b"\0" * (-len(data) % align)
        offs.append(len(data))
        data += raw
    if offsets is not None:
        offs = list(offsets)
    for (name, ggml_type, shape, raw), off in zip(tensors, offs):
        dims = list(reversed(shape))
        out += _string(name) + struct.pack("<I", len(dims))
        out += struct.pack(f"<{len(dims)}Q", *dims) + struct.pack("<IQ", ggml_type, off)
    out += b"\0" * (-len(out) % align)
    out += data
    with open(path, "wb") as f:
        f.write(out)
    return bytes(out)


# ---------------------------------------------------------------------------------------------
# Quantizers: float array -> raw bytes in the ggml block layout (round to nearest).
# ---------------------------------------------------------------------------------------------


def _f16_bytes(x) -> bytes:
    return np.float16(x).tobytes()


def quant_f32(x) -> bytes:
    return np.ascontiguousarray(x, "<f4").tobytes()


def quant_f16(x) -> bytes:
    return np.ascontiguousarray(x, "<f2").tobytes()


def quant_bf16(x) -> bytes:
    u = np.ascontiguousarray(x, np.float32).view(np.uint32)
    return (u >> 16).astype("<u2").tobytes()  # truncation: exact for values that are already bf16


def quant_q8_0(x) -> bytes:
    out = bytearray()
    for blk in np.asarray(x, np.float32).reshape(-1, 32):
        amax = float(np.abs(blk).max())
        d = amax / 127.0
        q = np.zeros(32, np.int8) if d == 0 else np.round(blk / d).astype(np.int8)
        out += _f16_bytes(d) + q.tobytes()
    return bytes(out)


def quant_q4_0(x) -> bytes:
    out = bytearray()
    for blk in np.asarray(x, np.float32).reshape(-1, 32):
        m = blk[np.argmax(np.abs(blk))]
        d = m / -8.0
        q = np.zeros(32, np.uint8) if d == 0 else np.clip(np.round(blk / d) + 8, 0, 15).astype(np.uint8)
        out += _f16_bytes(d) + (q[:16] | (q[16:] << 4)).astype(np.uint8).tobytes()
    return bytes(out)


def quant_q4_1(x) -> bytes:
    out = bytearray()
    for blk in np.asarray(x, np.float32).reshape(-1, 32):
        lo, hi = float(blk.min()), float(blk.max())
        d = (hi - lo) / 15.0
        q = np.zeros(32, np.uint8) if d == 0 else np.clip(np.round((blk - lo) / d), 0, 15).astype(np.uint8)
        out += _f16_bytes(d) + _f16_bytes(lo) + (q[:16] | (q[16:] << 4)).astype(np.uint8).tobytes()
    return bytes(out)


def quant_q5_0(x) -> bytes:
    out = bytearray()
    for blk in np.asarray(x, np.float32).reshape(-1, 32):
        m = blk[np.argmax(np.abs(blk))]
        d = m / -16.0
        q = np.zeros(32, np.uint32) if d == 0 else np.clip(np.round(blk / d) + 16, 0, 31).astype(np.uint32)
        qh = int(sum(((int(v) >> 4) & 1) << i for i, v in enumerate(q)))
        lo = (q & 0xF).astype(np.uint8)
        out += _f16_bytes(d) + struct.pack("<I", qh) + (lo[:16] | (lo[16:] << 4)).tobytes()
    return bytes(out)


def quant_q5_1(x) -> bytes:
    out = bytearray()
    for blk in np.asarray(x, np.float32).reshape(-1, 32):
        lo_v, hi_v = float(blk.min()), float(blk.max())
        d = (hi_v - lo_v) / 31.0
        q = np.zeros(32, np.uint32) if d == 0 else np.clip(np.round((blk - lo_v) / d), 0, 31).astype(np.uint32)
        qh = int(sum(((int(v) >> 4) & 1) << i for i, v in enumerate(q)))
        lo = (q & 0xF).astype(np.uint8)
        out += _f16_bytes(d) + _f16_bytes(lo_v) + struct.pack("<I", qh) + (lo[:16] | (lo[16:] << 4)).tobytes()
    return bytes(out)


_MXFP4_X2 = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], np.float32)


def quant_mxfp4(x) -> bytes:
    """ggml's MXFP4 blocks (e8m0 e | qs[16]; element j < 16 in the low nibble of qs[j], j + 16 in
    its high nibble; x = doubled E2M1 value · 2^(e - 128)), each value the nearest code at
    e = floor(log2(amax)) - 2 + 127 (ggml's choice). Values already on that grid (as the tests'
    are) are kept exactly."""
    blocks = np.asarray(x, np.float32).reshape(-1, 32)
    amax = np.abs(blocks).max(axis=1)
    with np.errstate(divide="ignore"):
        e = np.where(amax > 0, np.floor(np.log2(np.where(amax > 0, amax, 1))) - 2 + 127, 0).astype(np.uint8)
    half = np.ldexp(np.float32(1), e.astype(np.int32) - 128).astype(np.float32)
    codes = np.abs(half[:, None, None] * _MXFP4_X2[None, None, :] - blocks[:, :, None]).argmin(axis=2).astype(np.uint8)
    qs = codes[:, :16] | (codes[:, 16:] << 4)
    return np.concatenate([e[:, None], qs], axis=1).astype(np.uint8).tobytes()


def quant_q4_k(x) -> bytes:
    """Q4_K superblocks (d f16 | dmin f16 | 12 bytes of 6-bit sub-block scales and mins |
    qs[128]) of rows whose length is a multiple of 256: each sub-block of 32 gets min(0, min x)
    and (max - min) / 15 as its min and scale, quantized to 6 bits against the superblock's d and
    dmin (a simple rule, not llama.cpp's search; any valid block serves the tests)."""
    sb = np.asarray(x, np.float32).reshape(-1, 8, 32)
    n = sb.shape[0]
    lo = np.minimum(sb.min(axis=2), 0)
    scale = (sb.max(axis=2) - lo) / 15
    d = (scale.max(axis=1) / 63).astype(np.float16)
    dmin = ((-lo).max(axis=1) / 63).astype(np.float16)
    df, dmf = d.astype(np.float32), dmin.astype(np.float32)
    sc = np.clip(np.rint(scale / np.where(df > 0, df, 1)[:, None]), 0, 63).astype(np.uint8)
    mn = np.clip(np.rint(-lo / np.where(dmf > 0, dmf, 1)[:, None]), 0, 63).astype(np.uint8)
    step = (df[:, None] * sc)[:, :, None]
    u = np.clip(np.rint((sb + (dmf[:, None] * mn)[:, :, None]) / np.where(step > 0, step, 1)), 0, 15).astype(np.uint8)
    out = np.zeros((n, 144), np.uint8)
    out[:, 0:2] = d.view(np.uint8).reshape(n, 2)
    out[:, 2:4] = dmin.view(np.uint8).reshape(n, 2)
    out[:, 4:8] = (sc[:, 0:4] & 63) | ((sc[:, 4:8] >> 4) << 6)
    out[:, 8:12] = (mn[:, 0:4] & 63) | ((mn[:, 4:8] >> 4) << 6)
    out[:, 12:16] = (sc[:, 4:8] & 15) | ((mn[:, 4:8] & 15) << 4)
    out[:, 16:] = (u[:, 0::2] | (u[:, 1::2] << 4)).reshape(n, 128)
    return out.tobytes()


def quant_q6_k(x) -> bytes:
    """Q6_K superblocks (ql[128] low nibbles | qh[64] high 2-bit pairs | 16 int8 sub-block
    scales | d f16) of rows whose length is a multiple of 256: x = d·sc·(q − 32), q in [0, 63];
    each sub-block of 16 gets max|x| / 31 as its scale, quantized to int8 against the
    superblock's d = max scale / 127 (a simple rule, not llama.cpp's search)."""
    sb = np.asarray(x, np.float32).reshape(-1, 16, 16)
    n = sb.shape[0]
    scale = np.abs(sb).max(axis=2) / 31
    d = (scale.max(axis=1) / 127).astype(np.float16)
    df = d.astype(np.float32)
    sc = np.clip(np.rint(scale / np.where(df > 0, df, 1)[:, None]), -128, 127).astype(np.int8)
    step = (df[:, None] * sc)[:, :, None]
    q = (np.clip(np.rint(sb / np.where(step != 0, step, 1)), -32, 31) + 32).astype(np.uint8).reshape(n, 2, 128)
    low, high = q & 0x0F, q >> 4
    out = np.zeros((n, 210), np.uint8)
    out[:, 0:128] = (low[:, :, :64] | (low[:, :, 64:] << 4)).reshape(n, 128)
    hi = high.reshape(n, 2, 4, 32)
    out[:, 128:192] = (hi[:, :, 0] | (hi[:, :, 1] << 2) | (hi[:, :, 2] << 4) | (hi[:, :, 3] << 6)).reshape(n, 64)
    out[:, 192:208] = sc.view(np.uint8)
    out[:, 208:210] = d.view(np.uint8).reshape(n, 2)
    return out.tobytes()


_IQ4NL = np.array([-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], np.float32)


def _iq4_codes(v: np.ndarray) -> np.ndarray:
    """The nearest of IQ4's 16 levels to each value (already divided by its scale)."""
    return np.abs(v[..., None] - _IQ4NL).argmin(axis=-1).astype(np.uint8)


def quant_iq4_nl(x) -> bytes:
    """IQ4_NL blocks (d f16 | qs[16]): x = d·kvalues[q], d = max|x| / 127 (a simple rule)."""
    b = np.asarray(x, np.float32).reshape(-1, 32)
    d = (np.abs(b).max(axis=1) / 127).astype(np.float16)
    df = d.astype(np.float32)
    q = _iq4_codes(b / np.where(df > 0, df, 1)[:, None])
    out = np.zeros((len(b), 18), np.uint8)
    out[:, 0:2] = d.view(np.uint8).reshape(-1, 2)
    out[:, 2:] = q[:, :16] | (q[:, 16:] << 4)
    return out.tobytes()


def quant_iq4_xs(x) -> bytes:
    """IQ4_XS superblocks (d f16 | scales_h u16 | scales_l[4] | qs[128]) of rows whose length is
    a multiple of 256: sub-block j of 32 is x = d·(ls_j − 32)·kvalues[q], with ls_j − 32 in
    [0, 31] here from max|x_j| / 127 against d = the largest of those / 31."""
    sb = np.asarray(x, np.float32).reshape(-1, 8, 32)
    n = sb.shape[0]
    s = np.abs(sb).max(axis=2) / 127
    d = (s.max(axis=1) / 31).astype(np.float16)
    df = d.astype(np.float32)
    ls = np.clip(np.rint(s / np.where(df > 0, df, 1)[:, None]), 0, 31).astype(np.int32) + 32
    step = (df[:, None] * (ls - 32))[:, :, None]
    q = _iq4_codes(sb / np.where(step > 0, step, 1))
    out = np.zeros((n, 136), np.uint8)
    out[:, 0:2] = d.view(np.uint8).reshape(n, 2)
    sh = np.zeros(n, np.uint16)
    for j in range(8):
        sh |= ((ls[:, j] >> 4) & 3).astype(np.uint16) << (2 * j)
        out[:, 4 + j // 2] |= ((ls[:, j] & 15) << (4 * (j % 2))).astype(np.uint8)
    out[:, 2:4] = sh.view(np.uint8).reshape(n, 2)
    out[:, 8:] = (q[:, :, :16] | (q[:, :, 16:] << 4)).reshape(n, 128)
    return out.tobytes()


QUANTIZERS = {
    F32: quant_f32, F16: quant_f16, BF16: quant_bf16, Q8_0: quant_q8_0,
    Q4_0: quant_q4_0, Q4_1: quant_q4_1, Q5_0: quant_q5_0, Q5_1: quant_q5_1, MXFP4: quant_mxfp4,
    Q4_K: quant_q4_k, Q6_K: quant_q6_k, IQ4_NL: quant_iq4_nl, IQ4_XS: quant_iq4_xs,
}


# ---------------------------------------------------------------------------------------------
# Reference dequantizers: one block at a time, element by element, straight from ggml's C code.
# ---------------------------------------------------------------------------------------------


def _f16_at(b: bytes, i: int) -> float:
    return float(np.frombuffer(b[i:i + 2], "<f2")[0])


def ref_dequant(raw: bytes, ggml_type: int, n: int) -> np.ndarray:
    if ggml_type == F32:
        return np.frombuffer(raw, "<f4").astype(np.float32)
    if ggml_type == F16:
        return np.frombuffer(raw, "<f2").astype(np.float32)
    if ggml_type == BF16:
        return (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
    sizes = {Q8_0: 34, Q4_0: 18, Q4_1: 20, Q5_0: 22, Q5_1: 24}
    ts = sizes[ggml_type]
    y = []
    for k in range(n // 32):
        b = raw[k * ts:(k + 1) * ts]
        blk = [0.0] * 32
        if ggml_type == Q8_0:
            d = _f16_at(b, 0)
            for j in range(32):
                blk[j] = d * struct.unpack_from("<b", b, 2 + j)[0]
        elif ggml_type == Q4_0:
            d = _f16_at(b, 0)
            for j in range(16):
                blk[j] = ((b[2 + j] & 0x0F) - 8) * d
                blk[j + 16] = ((b[2 + j] >> 4) - 8) * d
        elif ggml_type == Q4_1:
            d, m = _f16_at(b, 0), _f16_at(b, 2)
            for j in range(16):
                blk[j] = (b[4 + j] & 0x0F) * d + m
                blk[j + 16] = (b[4 + j] >> 4) * d + m
        elif ggml_type == Q5_0:
            d = _f16_at(b, 0)
            qh = struct.unpack_from("<I", b, 2)[0]
            for j in range(16):
                xh0 = ((qh >> j) << 4) & 0x10
                xh1 = (qh >> (j + 12)) & 0x10
                blk[j] = (((b[6 + j] & 0x0F) | xh0) - 16) * d
                blk[j + 16] = (((b[6 + j] >> 4) | xh1) - 16) * d
        elif ggml_type == Q5_1:
            d, m = _f16_at(b, 0), _f16_at(b, 2)
            qh = struct.unpack_from("<I", b, 4)[0]
            for j in range(16):
                xh0 = ((qh >> j) << 4) & 0x10
                xh1 = (qh >> (j + 12)) & 0x10
                blk[j] = ((b[8 + j] & 0x0F) | xh0) * d + m
                blk[j + 16] = ((b[8 + j] >> 4) | xh1) * d + m
        y.extend(blk)
    return np.array(y, np.float32)
