"""The AVX2 integer GEMM's rounding of x, for the tests of the linears that use it.

On an AVX2 CPU (without AVX-512) an int8, int4, int4-min or mxfp4 linear of any number of rows, and
on an AVX-512 CPU an int4 linear with K-blocks of 32 and (with VNNI + VBMI) an int4-min, mxfp4 or
int8 one, rounds x per row and K-block to int16 (scale = max |x| of the block / 32639, round to
nearest even; int4: / 127, one signed byte's range)
and multiplies it with the weights in integers
(libvt/src/cpu/kernels.h, int16_gemm_ok / int16_gemv_ok; docs/guide.md "Numerics"). Its results are exact math on that rounded x, which round_x16
reproduces bit for bit. X16_SCRIPT is also run as text by subprocess checks."""

from __future__ import annotations

import numpy as np

from pyvt import ops

X16_SCRIPT = r"""
def round_x16(x, kb, fmt="int8"):
    qmax = np.float32(127 if fmt == "int4" else 32639)
    x = np.asarray(x, np.float32)
    m, k = x.shape
    nkb = -(-k // kb)  # the last block may be short (4-bit formats)
    xb = np.zeros((m, nkb * kb), np.float32)
    xb[:, :k] = x
    xb = xb.reshape(m, nkb, kb)
    amax = np.abs(xb).max(axis=2, keepdims=True)
    safe = np.where(amax > 0, amax, np.float32(1))
    inv = np.where(amax > 0, qmax / safe, np.float32(0)).astype(np.float32)
    q = np.rint((xb * inv).astype(np.float32))
    s = (amax / qmax).astype(np.float32)
    return (q * s).astype(np.float32).reshape(m, nkb * kb)[:, :k]
"""
exec(X16_SCRIPT)

INT16_FORMATS = ("int8", "int4", "int4-min", "mxfp4")


def cpu_has_vnni() -> bool:
    """Whether this CPU has AVX-512 VNNI and VBMI, whatever VT_ISA says in this process (a child
    run with VT_ISA=avx512 uses them): /proc/cpuinfo, else what this process reports."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), None)
    except OSError:
        flags = None
    if flags is None:
        return ops.cpu_vnni()
    return "avx512_vnni" in flags and "avx512vbmi" in flags


def int16_gemm_applies(fmt: str, m: int, isa: str | None = None, kb: int = 32) -> bool:
    """Whether a linear of format fmt over m rows with K-blocks of kb rounds x as round_x16 does
    (at CPU level isa, default the one in use): every integer format on AVX2, int4 with kb = 32
    on AVX-512 too, and int4-min, mxfp4 and int8 on AVX-512 CPUs with VNNI + VBMI (libvt/src/linear.cpp,
    integer_kernels; ops.cpu_vnni() tells, for this CPU), and int8, int4 and int4-min on 64-bit ARM ("neon"). Every block size the tests use is
    even and <= 512."""
    del m  # every number of rows: the GEMV (m <= 4) and the GEMM alike
    # a process of this level has the VNNI + VBMI kernels? (VT_ISA=avx512-novnni: not)
    vnni = ops.cpu_vnni() if isa is None else (isa == "avx512" and cpu_has_vnni())
    isa = "avx512" if isa == "avx512-novnni" else (isa or ops.cpu_isa())
    avx512 = isa == "avx512" and ((fmt == "int4" and kb == 32) or (fmt in ("int4-min", "int8", "mxfp4") and vnni))
    neon = isa == "neon" and fmt != "mxfp4"  # 64-bit ARM's (libvt/src/cpu/kernels_neon.cpp)
    return fmt in INT16_FORMATS and (isa == "avx2" or avx512 or neon)


def exact_batch_kv_cache() -> str:
    """The KV cache for tests that demand a batched (or chunk-prefilled) sequence equal its lone
    run token for token (their models are int8). Where the int8 linears give a row the same bits
    alone or in a batch — AVX2, AVX-512 with VNNI + VBMI (the GEMV scales as the GEMM does) and
    64-bit ARM's NEON kernels (one kernel for every m) —
    the default f16 cache is checked (on the VNNI Xeon: 10 runs of test_engine and
    test_structured, 2026-11-28). Where the f32 GEMV and GEMM round differently (AVX-512 without
    VNNI, generic), keys and values differ by float rounding, which the f16 cache's rounding can
    magnify into another token at a near-tie (measured before the linears were made exact: 1 run
    in ~10 of test_engine::test_concurrent_requests_equal_their_single_runs): f32 there."""
    return "f16" if ops.cpu_isa() in ("avx2", "neon") or ops.cpu_vnni() else "f32"
