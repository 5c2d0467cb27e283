// Linears: argument checks, optional input quantization, and dispatch to the kernels of the
// CPU level in use (a plain switch on cpu_level()). Threads split the output tiles.

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>
#include <cstring>

#include "convert.h"
#include "cpu/kernels.h"
#include "cpu_features.h"
#include "ops/swiglu.h"
#include "quant.h"
#include "threadpool.h"

namespace vt {
namespace {

cpu::DenseW dense_view(const Packed& p) {
    cpu::DenseW v;
    switch (p.format) {
        case VT_FORMAT_INT8_BLOCKED: v.kind = cpu::kInt8Blocked; break;
        case VT_FORMAT_FP8_BLOCKED: v.kind = cpu::kFp8Blocked; break;
        case VT_FORMAT_FP8_CHANNEL: v.kind = cpu::kFp8Channel; break;
        case VT_FORMAT_INT4_BLOCKED: v.kind = cpu::kInt4Blocked; break;
        case VT_FORMAT_INT4_MIN_BLOCKED: v.kind = cpu::kInt4Min; break;
        case VT_FORMAT_MXFP4: v.kind = cpu::kMxfp4; break;
        default: v.kind = cpu::kBf16; break;
    }
    v.out = p.out;
    v.in = p.in;
    v.ntiles = p.ntiles;
    v.kb = p.kb;
    v.tile_bytes = p.tile_bytes;
    v.scale_off = p.scale_off;
    v.min_off = p.min_off;
    v.tiles = p.tiles.data();
    v.rowmul = p.rowmul.data();
    v.prefetch_l2 = prefetch_to_l2();
    return v;
}

// Per-thread buffers kept between calls (a prefill makes ~100 of them); Slot tells apart
// buffers of one type that are in use together.
template <class T, int Slot = 0>
T* thread_buffer(size_t n) {
    thread_local AlignedVec<T> buf;
    if (buf.size() < n) {
        buf.clear();
        buf.shrink_to_fit();
        buf.resize(n);
    }
    return buf.data();
}

// Per-thread GEMM scratch.
float* thread_scratch(size_t floats) { return thread_buffer<float>(floats); }

// int4-min, MXFP4 and int8 on an AVX-512 CPU with VNNI + VBMI: cpu::linear_int4_min_vnni /
// linear_mxfp4_vnni / linear_int8_vnni for every m, the AVX2 integer kernels' bits (x rounded
// to int16), faster than the f32 GEMVs (docs/guide.md, "Numerics"). (Only x86 builds call it.)
[[maybe_unused]] bool vnni_linear(const cpu::DenseW& w) {
#if defined(VT_HAVE_X86_KERNELS)
    return (w.kind == cpu::kInt4Min || w.kind == cpu::kInt8Blocked || w.kind == cpu::kMxfp4) && cpu_vnni();
#else
    (void)w;
    return false;
#endif
}

// The integer kernels of kernels_avx2.cpp, which take x rounded to int16 (round_x_int16;
// int4: to one byte's range) and no float block sums, for int8 / int4 / int4-min weights (w2:
// swiglu's up weight, or null): on AVX2 CPUs, and for int4 with K-blocks of 32 on AVX-512
// CPUs too, where its byte GEMV beats the f32 one, which widens every nibble to f32 (SmolLM2
// int4 decode 1.21-1.25x faster, prefill as fast or faster; docs/performance.md, "4-bit on
// AVX-512"); int8 and int4-min, where the CPU has VNNI + VBMI, take their own kernels
// (vnni_linear), else the f32 ones (AVX2's integer GEMM prefilled them 28-50 % slower). A
// format takes one path for every m, so a row gets the same bits alone or in a batch.
bool integer_kernels(const cpu::DenseW& w, const cpu::DenseW* w2) {
#if defined(VT_HAVE_X86_KERNELS)
    // w2 of another kind could want x rounded or split otherwise (int4's bytes, int4-min's int16).
    const int level = cpu_level();
    const bool avx512_int4 = level == 2 && w.kind == cpu::kInt4Blocked && w.kb == 32;
    return (level == 1 || avx512_int4 || vnni_linear(w)) && cpu::int16_gemm_ok(w) &&
           (w2 == nullptr || w2->kind == w.kind);
#elif defined(VT_HAVE_NEON_KERNELS)
    // 64-bit ARM: int8, int4-min and int4 (run_neon; the x86 integer kernels' bits, AVX2's for
    // int4 of any even block)
    return cpu_neon() && w.kind != cpu::kMxfp4 && cpu::int16_gemm_ok(w) &&
           (w2 == nullptr || (w2->kind == w.kind && w2->kb == w.kb));
#else
    (void)w;
    (void)w2;
    return false;
#endif
}

#if defined(VT_HAVE_X86_KERNELS) || defined(VT_HAVE_NEON_KERNELS)
// x rounded to int16 per K-block once, for every thread (cpu/kernels.h, LinearJob::xq), with the
// block sums of the 4-bit kinds, by `quantize`: quantize_x16_avx2 on x86, quantize_x16_portable
// on ARM (the same numbers).
using QuantizeX16 = void (*)(const float*, int64_t, int64_t, int64_t, int16_t*, int64_t, float*, float*, int16_t);
void quantize_rows(const cpu::LinearJob& job, cpu::LinearJob& gj, QuantizeX16 quantize) {
    const int64_t in = job.w.in, nkb = cpu::num_kblocks(job.w), kb = job.w.kb, ld = cpu::xq_stride(in, kb);
    int16_t* q = thread_buffer<int16_t>(static_cast<size_t>(job.m * ld));
    float* qs = thread_buffer<float, 1>(static_cast<size_t>(job.m * nkb));
    float* qsum = cpu::int4_kind(job.w) ? thread_buffer<float, 2>(static_cast<size_t>(job.m * nkb)) : nullptr;
    const auto rows = [&](int64_t i0, int64_t i1, int) {
        quantize(job.x + i0 * in, i1 - i0, in, kb, q + i0 * ld, ld, qs + i0 * nkb, qsum ? qsum + i0 * nkb : nullptr,
                 cpu::xq_max(job.w));
    };
    if (job.m * in < (int64_t(1) << 16)) rows(0, job.m, 0);  // a decode step: not worth the pool
    else parallel_for(job.m, 1, rows);
    gj.xq = q;
    gj.xqs = qs;
    gj.xq_ld = ld;
    gj.xqsum = qsum;
}
#endif

#if defined(VT_HAVE_X86_KERNELS)
// x rounded by quantize_rows, then as the x86 integer kernels take it: narrowed to bytes (int4),
// split into bytes for the 4-bit GEMV (split) or the VNNI kernels (bytes16).
void round_x_int16(const cpu::LinearJob& job, bool split, cpu::LinearJob& gj, bool bytes16 = false,
                   int64_t bytes16_from = 0) {
    // bytes16: x split into two bytes per k for linear_int4_min_vnni (signed) / linear_int8_vnni
    // (unsigned), rows bytes16_from .. m - 1 (the others left unwritten)
    quantize_rows(job, gj, cpu::quantize_x16_avx2);
    const int64_t in = job.w.in, nkb = cpu::num_kblocks(job.w), kb = job.w.kb, ld = gj.xq_ld;
    const bool four = cpu::int4_kind(job.w);
    const int16_t* q = gj.xq;
    if (cpu::xq_max(job.w) == cpu::kXq8Max && kb == 32 && !split) {  // the int4 GEMM's and VNNI GEMV's bytes
        int8_t* xb = thread_buffer<int8_t>(static_cast<size_t>(job.m * ld));
        cpu::narrow_x8_avx2(q, job.m, nkb * kb, ld, xb, ld);
        gj.xb = xb;
        gj.xb_ld = ld;
    }
    if (bytes16) {  // the VNNI kernels' two bytes per k, in k order
        int8_t* xh = thread_buffer<int8_t, 1>(static_cast<size_t>(job.m * ld));
        int8_t* xl = thread_buffer<int8_t, 2>(static_cast<size_t>(job.m * ld));
        const int64_t r0 = bytes16_from;
        cpu::split_x16_bytes_avx2(q + r0 * ld, job.m - r0, nkb * kb, ld, xh + r0 * ld, xl + r0 * ld, ld,
                                  job.w.kind == cpu::kInt8Blocked);
        gj.xb = xh;
        gj.xbl = xl;
        gj.xb_ld = ld;
    }
    if (four && split) {
        int32_t* xp = thread_buffer<int32_t>(static_cast<size_t>(job.m * ld));
        if (cpu::xq_max(job.w) == cpu::kXq8Max) cpu::split_x8_avx2(q, job.m, (in + 1) / 2 * 2, ld, xp, ld);
        else cpu::split_x16_avx2(q, job.m, (in + 1) / 2 * 2, ld, xp, ld);
        gj.xp = xp;
        gj.xp_ld = ld;
    }
}

// int8, int4, int4-min and MXFP4 (4-bit: K-blocks of 32) with VNNI + VBMI, m >= kVnniMinM: x
// rounded as their other kernels take it (int16; int4: bytes), packed per group of 16 rows for
// cpu::gemm_int8_vnni / gemm_int4_vnni / gemm_int4_min_vnni / gemm_mxfp4_vnni.
bool vnni_gemm(const cpu::LinearJob& job) {
    return job.m >= cpu::kVnniMinM && cpu_vnni() &&
           (cpu::vnni_gemm_int8(job.w) || cpu::vnni_gemm_int4(job.w) || cpu::vnni_gemm_int4_min(job.w) ||
            cpu::vnni_gemm_mxfp4(job.w));
}

void run_vnni_gemm(const cpu::LinearJob& job, cpu::LinearJob& gj) {
    const int kind = job.w.kind;
    const bool x16 = kind != cpu::kInt4Blocked;  // x as int16 pairs (int4: bytes)
    const int64_t nkb = cpu::num_kblocks(job.w), kb = job.w.kb, groups = job.m / cpu::kVnniRows;
    const int64_t words = groups * cpu::kVnniRows * nkb * kb / (x16 ? 2 : 4), scales = groups * cpu::kVnniRows * nkb;
    // the last rows (m % 16) go to linear_int8_vnni's / linear_int4_min_vnni's kernels: x in bytes
    round_x_int16(job, false, gj, x16 && job.m % cpu::kVnniRows != 0, groups * cpu::kVnniRows);
    int32_t* xw = thread_buffer<int32_t, 1>(static_cast<size_t>(words));
    float* xws = thread_buffer<float, 3>(static_cast<size_t>(scales));
    // int4's 8 * xqsum, MXFP4's 12 * xqsum
    int32_t* xm8 = kind == cpu::kInt4Blocked || kind == cpu::kMxfp4
                       ? thread_buffer<int32_t, 2>(static_cast<size_t>(scales))
                       : nullptr;
    float* xsq = kind == cpu::kInt4Min ? thread_buffer<float, 4>(static_cast<size_t>(scales)) : nullptr;
    const auto pack = [&](int64_t g0, int64_t g1, int) {
        if (x16) cpu::pack_x16_groups_avx2(gj.xq, gj.xqs, gj.xqsum, g0, g1, nkb, kb, gj.xq_ld, xw, xws, xsq, xm8);
        else cpu::pack_x8_groups_avx2(gj.xb, gj.xqs, gj.xqsum, g0, g1, nkb, kb, gj.xb_ld, xw, xws, xm8);
    };
    if (words < (int64_t(1) << 14)) pack(0, groups, 0);
    else parallel_for(groups, 1, pack);
    gj.xw = xw;
    gj.xws = xws;
    gj.xm8 = xm8;
    gj.xsq = xsq;
    parallel_for(job.w.ntiles, 1, [&](int64_t t0, int64_t t1, int) {
        if (kind == cpu::kInt8Blocked) cpu::gemm_int8_vnni(gj, t0, t1);
        else if (kind == cpu::kInt4Blocked) cpu::gemm_int4_vnni(gj, t0, t1);
        else if (kind == cpu::kMxfp4) cpu::gemm_mxfp4_vnni(gj, t0, t1);
        else cpu::gemm_int4_min_vnni(gj, t0, t1);
    });
}
#endif

#if defined(VT_HAVE_NEON_KERNELS)
// int8, int4-min and int4 on 64-bit ARM (integer_kernels): x rounded to int16 (int4: to
// |q| <= 127) once for every thread, then cpu::linear_neon for every m (the x86 integer kernels' bits).
void run_neon(const cpu::LinearJob& job) {
    cpu::LinearJob gj = job;
    quantize_rows(job, gj, cpu::quantize_x16_portable);
    const auto run = [&](int64_t t0, int64_t t1, int) { cpu::linear_neon(gj, t0, t1); };
    if (job.m <= cpu::kGemvMaxM) parallel_for_balanced(job.w.ntiles, 1, run);  // memory-bound: balanced
    else parallel_for(job.w.ntiles, 1, run);
}
#endif

void run_dense(const cpu::LinearJob& job) {
#if defined(VT_HAVE_NEON_KERNELS)
    if (integer_kernels(job.w, cpu::gated(job.act) ? &job.w2 : nullptr)) {
        run_neon(job);
        return;
    }
#endif
    int level = cpu_level();
    const int64_t nt = job.w.ntiles;
    cpu::LinearJob gj = job;
#if defined(VT_HAVE_X86_KERNELS)
    bool vnni4 = false;  // int4's GEMV with VNNI + VBMI (same bits as the AVX2 one, x as bytes)
    if (integer_kernels(job.w, cpu::gated(job.act) ? &job.w2 : nullptr)) {
        if (vnni_gemm(job)) {
            run_vnni_gemm(job, gj);
            return;
        }
        if (vnni_linear(job.w)) {  // every m (same bits as the AVX2 integer kernels)
            round_x_int16(job, false, gj, true);
            const auto run = [&](int64_t t0, int64_t t1, int) {
                if (job.w.kind == cpu::kInt8Blocked) cpu::linear_int8_vnni(gj, t0, t1);
                else if (job.w.kind == cpu::kMxfp4) cpu::linear_mxfp4_vnni(gj, t0, t1);
                else cpu::linear_int4_min_vnni(gj, t0, t1);
            };
            if (job.m <= cpu::kGemvMaxM) parallel_for_balanced(nt, 1, run);
            else parallel_for(nt, 1, run);
            return;
        }
        vnni4 = job.m <= cpu::kGemvMaxM && cpu_vnni();
        level = 1;  // the AVX2 integer kernels, at the AVX-512 level too
        round_x_int16(job, job.m <= cpu::gemv_max_m(level) && !vnni4, gj);
    }
#endif
    if (job.m <= cpu::gemv_max_m(level)) {
        // Memory-bound: balanced (threadpool.h).
        parallel_for_balanced(nt, 1, [&](int64_t t0, int64_t t1, int) {
            switch (level) {
#if defined(VT_HAVE_X86_KERNELS)
                case 2: cpu::gemv_avx512(gj, t0, t1); break;
                case 1:
                    if (vnni4) cpu::gemv_int4_vnni(gj, t0, t1);
                    else cpu::gemv_avx2(gj, t0, t1);
                    break;
#endif
                default: cpu::gemv_generic(gj, t0, t1); break;
            }
        });
        return;
    }
    const size_t sfloats = cpu::gemm_scratch_floats(job.m, cpu::gated(job.act));
    parallel_for(nt, 1, [&](int64_t t0, int64_t t1, int) {
        float* scratch = thread_scratch(sfloats);
        switch (level) {
#if defined(VT_HAVE_X86_KERNELS)
            case 2: cpu::gemm_avx512(gj, t0, t1, scratch); break;
            case 1: cpu::gemm_avx2(gj, t0, t1, scratch); break;
#endif
            default: cpu::gemm_generic(gj, t0, t1, scratch); break;
        }
    });
}

// W8A8 and friends: round each row of x to the format's activation type, in place in xq.
void quantize_rows(const Packed& w, const float* x, int64_t m, float* xq) {
    const int64_t in = w.in;
    parallel_for(m, 1, [&](int64_t i0, int64_t i1, int) {
        for (int64_t i = i0; i < i1; ++i) {
            const float* xr = x + i * in;
            float* d = xq + i * in;
            if (w.format == VT_FORMAT_BF16) {
                for (int64_t k = 0; k < in; ++k) d[k] = bf16_to_f32(f32_to_bf16(xr[k]));
                continue;
            }
            const bool fp8 = w.format != VT_FORMAT_INT8_BLOCKED && w.format != VT_FORMAT_INT4_BLOCKED &&
                             w.format != VT_FORMAT_INT4_MIN_BLOCKED && w.format != VT_FORMAT_MXFP4;
            float amax = 0.f;
            for (int64_t k = 0; k < in; ++k) amax = std::max(amax, std::fabs(xr[k]));
            const float s = amax / (fp8 ? 448.0f : 127.0f);
            if (!(s > 0.f) || !std::isfinite(s)) {
                std::memcpy(d, xr, sizeof(float) * in);
                continue;
            }
            if (fp8) {
                for (int64_t k = 0; k < in; ++k) d[k] = fp8_to_f32(f32_to_fp8(xr[k] / s)) * s;
            } else {
                for (int64_t k = 0; k < in; ++k)
                    d[k] = std::min(127.f, std::max(-127.f, std::nearbyint(xr[k] / s))) * s;
            }
        }
    });
}

// INT4_MIN_BLOCKED: xs[i * nkb + b] = sum of x row i over K-block b (of the input the kernels
// see, so with quantize_input the sums are of the rounded x). The GEMV then adds
// min * xs once per block instead of min * x per weight. Empty for the other formats.
void block_sums(const Packed& w, const float* x, int64_t m, AlignedVec<float>& xs) {
    if (w.format != VT_FORMAT_INT4_MIN_BLOCKED) return;
    const int64_t in = w.in, kb = w.kb, nkb = (in + kb - 1) / kb;
    xs.resize(static_cast<size_t>(m * nkb));
    float* d = xs.data();
    auto rows = [&](int64_t i0, int64_t i1, int) {
        for (int64_t i = i0; i < i1; ++i)
            for (int64_t b = 0; b < nkb; ++b) {
                const float* xb = x + i * in + b * kb;
                const int64_t n = std::min(kb, in - b * kb);
                float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
                int64_t k = 0;
                for (; k + 4 <= n; k += 4) {
                    s0 += xb[k];
                    s1 += xb[k + 1];
                    s2 += xb[k + 2];
                    s3 += xb[k + 3];
                }
                for (; k < n; ++k) s0 += xb[k];
                d[i * nkb + b] = (s0 + s1) + (s2 + s3);
            }
    };
    if (m * in < (int64_t(1) << 16)) rows(0, m, 0);  // a decode step: not worth the pool
    else parallel_for(m, 1, [&](int64_t i0, int64_t i1, int t) { rows(i0, i1, t); });
}

void check_common(const char* fn, const Packed& w, const float* x, int64_t m, float* y) {
    VT_CHECK_ARG(x != nullptr, "%s: x is NULL", fn);
    VT_CHECK_ARG(y != nullptr, "%s: y is NULL", fn);
    VT_CHECK_ARG(m >= 1, "%s: m must be >= 1 (got %lld)", fn, static_cast<long long>(m));
    VT_CHECK_ARG(m <= (INT64_C(1) << 40) / w.in && m <= (INT64_C(1) << 40) / w.out,
                 "%s: m = %lld is too large", fn, static_cast<long long>(m));
    // (The messages are formatted only for a bad array: a decode step makes ~150 calls.)
    if (!array_ok(x, m * w.in, sizeof(float))) check_array(x, m * w.in, sizeof(float), format("%s: x", fn).c_str());
    if (!array_ok(y, m * w.out, sizeof(float))) check_array(y, m * w.out, sizeof(float), format("%s: y", fn).c_str());
    const char* xb = reinterpret_cast<const char*>(x);
    const char* ye = reinterpret_cast<const char*>(y + m * w.out);
    const char* xe = reinterpret_cast<const char*>(x + m * w.in);
    const char* yb = reinterpret_cast<const char*>(y);
    VT_CHECK_ARG(xe <= yb || ye <= xb, "%s: y overlaps x", fn);
}

const char* device_name(const Packed& p, char (&buf)[32]) {
    if (!p.cuda) return "cpu";
    std::snprintf(buf, sizeof(buf), "cuda:%d", static_cast<int>(p.device_index));
    return buf;
}

// What a gate/up pair must share, wherever it lives (the device copy does not keep `block`).
void check_swiglu_pair(const char* fn, const Packed& gate, const Packed& up) {
    VT_CHECK_ARG(gate.format == up.format, "%s: gate and up have different formats (%d and %d)", fn,
                 static_cast<int>(gate.format), static_cast<int>(up.format));
    VT_CHECK_ARG(gate.out == up.out && gate.in == up.in, "%s: gate [%lld, %lld] and up [%lld, %lld] "
                 "have different shapes", fn, static_cast<long long>(gate.out),
                 static_cast<long long>(gate.in), static_cast<long long>(up.out),
                 static_cast<long long>(up.in));
    VT_CHECK_ARG(gate.block == up.block, "%s: gate and up have different block sizes (%d and %d)", fn,
                 gate.block, up.block);
    char gb[32], ub[32];
    VT_CHECK_ARG(static_cast<bool>(gate.cuda) == static_cast<bool>(up.cuda) &&
                 gate.device_index == up.device_index,
                 "%s: gate is on %s and up on %s; both weights must be on the same device "
                 "(prepack them with the same device)", fn, device_name(gate, gb), device_name(up, ub));
}

// The one check of a linear call, wherever it runs (CPU, CUDA on host arrays, CUDA on device
// pointers): arguments, then the options. Backends check only their own limits after it.
void check_linear(const char* fn, const Packed& w, const float* x, int64_t m, float* y,
                  const vt_linear_options& opt) {
    check_common(fn, w, x, m, y);
    VT_CHECK_ARG(opt.activation == VT_ACTIVATION_NONE || opt.activation == VT_ACTIVATION_GELU,
                 "%s: activation %d is not VT_ACTIVATION_NONE (0) or VT_ACTIVATION_GELU (1)", fn,
                 opt.activation);
    VT_CHECK_ARG(opt.quantize_input == 0 || opt.quantize_input == 1,
                 "%s: quantize_input must be 0 or 1 (got %d)", fn, opt.quantize_input);
}

void check_swiglu(const char* fn, const Packed& gate, const Packed& up, const float* x, int64_t m, float* y,
                  const vt_linear_options& opt) {
    check_swiglu_pair(fn, gate, up);
    check_common(fn, gate, x, m, y);
    VT_CHECK_ARG(opt.activation == VT_ACTIVATION_NONE, "%s: activation must be "
                 "VT_ACTIVATION_NONE (got %d); the gated activation is implied", fn, opt.activation);
    VT_CHECK_ARG(opt.quantize_input == 0 || opt.quantize_input == 1,
                 "%s: quantize_input must be 0 or 1 (got %d)", fn, opt.quantize_input);
}

// Sparse linears: quantize x per row to int8 (absmax/127) or int4 (absmax/7), integer dot
// products, dequantize with x scale * weight scale.
void run_sparse(const Packed& w, const float* x, int64_t m, const float* bias, float* y) {
    const bool int4 = w.format == VT_FORMAT_INT4_SPARSE24;
    const float qmax = int4 ? 7.f : 127.f;
    const int64_t in = w.in;
    AlignedVec<int8_t> xq(static_cast<size_t>(m * in));
    AlignedVec<float> xs(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) {
        const float* xr = x + i * in;
        float amax = 0.f;
        bool finite = true;
        for (int64_t k = 0; k < in; ++k) {
            amax = std::max(amax, std::fabs(xr[k]));  // (std::max drops a NaN: checked apart)
            finite = finite && std::isfinite(xr[k]);
        }
        float s = amax / qmax;
        if (!(s > 0.f) || !std::isfinite(s)) s = 0.f;
        // A NaN / Inf input gives a NaN output row, as the dense linears do (x·W sees it),
        // not the finite result of a row quantized without it.
        xs[i] = finite ? s : std::numeric_limits<float>::quiet_NaN();
        for (int64_t k = 0; k < in; ++k) {
            float q = s > 0.f ? std::nearbyint(xr[k] / s) : 0.f;
            xq[i * in + k] = static_cast<int8_t>(std::min(qmax, std::max(-qmax, q)));
        }
    }
    cpu::SparseJob job;
    job.int4 = int4;
    job.out = w.out;
    job.in = in;
    job.q = w.q.data();
    job.meta = w.meta.data();
    job.wscale = w.scales.data();
    job.xq = xq.data();
    job.xscale = xs.data();
    job.m = m;
    job.bias = bias;
    job.y = y;
#if defined(VT_HAVE_X86_KERNELS)
    if (cpu_vnni()) {
        parallel_for(w.out, 16, [&](int64_t r0, int64_t r1, int) { cpu::sparse_avx512(job, r0, r1); });
        return;
    }
#endif
    parallel_for(w.out, 16, [&](int64_t r0, int64_t r1, int) { cpu::sparse_generic(job, r0, r1); });
}

}  // namespace

void linear(const Packed& w, const float* x, int64_t m, const float* bias,
            const vt_linear_options& opt, float* y) {
    check_linear("vt_linear", w, x, m, y, opt);
    if (w.cuda) return cuda_linear(*w.cuda, x, m, bias, opt, y);
    if (!w.dense()) {
        run_sparse(w, x, m, bias, y);
        if (opt.activation == VT_ACTIVATION_GELU)
            for (int64_t i = 0; i < m * w.out; ++i) y[i] = cpu::gelu_ref(y[i]);
        return;
    }
    AlignedVec<float> xq;
    const float* xin = x;
    if (opt.quantize_input) {
        xq.resize(static_cast<size_t>(m * w.in));
        quantize_rows(w, x, m, xq.data());
        xin = xq.data();
    }
    cpu::LinearJob job;
    job.w = dense_view(w);
    AlignedVec<float> xs;
    if (!integer_kernels(job.w, nullptr)) block_sums(w, xin, m, xs);  // int4-min's float path
    job.x = xin;
    job.xsum = xs.data();
    job.m = m;
    job.bias = bias;
    job.act = opt.activation == VT_ACTIVATION_GELU ? cpu::kActGelu : cpu::kActNone;
    job.y = y;
    run_dense(job);
}

namespace {

// SwiGLU or GeGLU (act) of CPU weights: gate and up in one pass, the product in the epilogue.
void linear_gated_cpu(const Packed& gate, const Packed& up, const float* x, int64_t m,
                      const float* gate_bias, const float* up_bias, const vt_linear_options& opt,
                      float* y, int act) {
    if (!gate.dense()) {
        // No fused sparse kernel: two integer linears and the product.
        AlignedVec<float> g(static_cast<size_t>(m * gate.out)), u(static_cast<size_t>(m * gate.out));
        run_sparse(gate, x, m, gate_bias, g.data());
        run_sparse(up, x, m, up_bias, u.data());
        if (act == cpu::kActGeglu)
            ops::geglu_tanh(g.data(), u.data(), m * gate.out, y);
        else
            ops::swiglu(g.data(), u.data(), m * gate.out, y);
        return;
    }
    AlignedVec<float> xq;
    const float* xin = x;
    if (opt.quantize_input) {
        xq.resize(static_cast<size_t>(m * gate.in));
        quantize_rows(gate, x, m, xq.data());
        xin = xq.data();
    }
    cpu::LinearJob job;
    job.w = dense_view(gate);
    job.w2 = dense_view(up);
    AlignedVec<float> xs;
    // gate and up share in and kb (check_swiglu_pair); int4-min's float path
    if (!integer_kernels(job.w, &job.w2)) block_sums(gate, xin, m, xs);
    job.x = xin;
    job.xsum = xs.data();
    job.m = m;
    job.bias = gate_bias;
    job.bias2 = up_bias;
    job.act = act;
    job.y = y;
    run_dense(job);
}

}  // namespace

void linear_swiglu(const Packed& gate, const Packed& up, const float* x, int64_t m,
                   const float* gate_bias, const float* up_bias, const vt_linear_options& opt,
                   float* y) {
    check_swiglu("vt_linear_swiglu", gate, up, x, m, y, opt);
    if (gate.cuda) return cuda_linear_swiglu(*gate.cuda, *up.cuda, x, m, gate_bias, up_bias, opt, y);
    linear_gated_cpu(gate, up, x, m, gate_bias, up_bias, opt, y, cpu::kActSwiglu);
}

void linear_geglu_tanh(const Packed& gate, const Packed& up, const float* x, int64_t m,
                       const float* gate_bias, const float* up_bias, const vt_linear_options& opt,
                       float* y) {
    check_swiglu("linear_geglu_tanh", gate, up, x, m, y, opt);
    VT_CHECK_ARG(!gate.cuda, "linear_geglu_tanh: CPU weights only (the CUDA engine fuses GeGLU in its own epilogue)");
    linear_gated_cpu(gate, up, x, m, gate_bias, up_bias, opt, y, cpu::kActGeglu);
}

void linear_device(const Packed& w, const float* x, int64_t m, const float* bias,
                   const vt_linear_options& opt, float* y, void* stream) {
    VT_CHECK_ARG(w.cuda, "vt_linear_device: the packed weight is on the CPU; device pointers need a "
                 "weight prepacked with device VT_DEVICE_CUDA (or use vt_linear with host arrays)");
    check_linear("vt_linear_device", w, x, m, y, opt);
    cuda_linear_device(*w.cuda, x, m, bias, opt, y, stream);
}

void linear_swiglu_device(const Packed& gate, const Packed& up, const float* x, int64_t m,
                          const float* gate_bias, const float* up_bias,
                          const vt_linear_options& opt, float* y, void* stream) {
    check_swiglu_pair("vt_linear_swiglu_device", gate, up);
    VT_CHECK_ARG(gate.cuda, "vt_linear_swiglu_device: gate and up are on the CPU; device pointers "
                 "need weights prepacked with device VT_DEVICE_CUDA (or use vt_linear_swiglu)");
    check_swiglu("vt_linear_swiglu_device", gate, up, x, m, y, opt);
    cuda_linear_swiglu_device(*gate.cuda, *up.cuda, x, m, gate_bias, up_bias, opt, y, stream);
}

}  // namespace vt
