// vt_cuda_test: every CUDA op against the CPU backend or a float64 reference, with per-dtype
// tolerances, and (given model folders) the whole model, CPU vs CUDA. Built with the CUDA
// backend (meson), linked with libvt's objects, so it needs none of the C ABI hooks.
//
//   vt_cuda_test                 op tests (exit 77 = skipped: no usable GPU)
//   vt_cuda_test MODEL_DIR...    op tests, then model tests on each folder
//
// Output ends with "N passed, M failed"; exit status 1 when something failed.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "backend.h"
#include "cpu_features.h"
#include "cuda/cutlass_gemm.h"
#include "cuda/device_math.h"
#include "cuda/kernels.h"
#include "cuda/layout.h"
#include "cuda/runtime.h"
#include "model.h"
#include "session.h"
#include "ops/attention.h"
#include "ops/rmsnorm.h"
#include "ops/rope.h"
#include "ops/swiglu.h"
#include "quant.h"
#include "sampling.h"

using namespace vt;
using namespace vt::cudak;

namespace {

int g_pass = 0, g_fail = 0;

void expect(bool ok, const std::string& what, double measured = -1.0) {
    if (ok) ++g_pass;
    else ++g_fail;
    if (measured >= 0) std::printf("%s %s (%.3g)\n", ok ? "ok  " : "FAIL", what.c_str(), measured);
    else std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
    std::fflush(stdout);
}

// max |a - b| / max |b|; NaN anywhere (an unwritten output) gives +inf.
double nerr(const std::vector<float>& a, const std::vector<double>& b) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < a.size(); ++i) {
        if (!std::isfinite(a[i])) return INFINITY;
        num = std::max(num, std::fabs(double(a[i]) - b[i]));
        den = std::max(den, std::fabs(b[i]));
    }
    return num / (den > 0 ? den : 1.0);
}

std::vector<double> to_d(const std::vector<float>& v) { return std::vector<double>(v.begin(), v.end()); }

std::mt19937 g_rng(1234);
std::vector<float> randn(size_t n, float sd = 1.0f) {
    std::normal_distribution<float> nd(0.0f, sd);
    std::vector<float> v(n);
    for (auto& x : v) x = nd(g_rng);
    return v;
}

// Device buffers for a test.
struct Buf {
    DevMem mem;
    size_t n = 0;
    float* f() const { return mem.get<float>(); }
};
void up(Buf& b, const void* src, size_t bytes) {
    b.mem.alloc(0, bytes, "test buffer");
    b.n = bytes;
    check(cudaMemcpy(b.mem.get(), src, bytes, cudaMemcpyHostToDevice), "test upload");
}
template <class T>
void up(Buf& b, const std::vector<T>& v) {
    up(b, v.data(), v.size() * sizeof(T));
}
void poison(Buf& b, size_t bytes) {
    b.mem.alloc(0, bytes, "test buffer");
    b.n = bytes;
    check(cudaMemset(b.mem.get(), 0xFF, bytes), "poison");  // NaN floats
}
std::vector<float> down(const float* d, size_t n) {
    std::vector<float> v(n);
    check(cudaDeviceSynchronize(), "kernel");
    check(cudaMemcpy(v.data(), d, n * 4, cudaMemcpyDeviceToHost), "test download");
    return v;
}

struct DevWeight {
    DevMem mem;
    DevLinear d;
};
void upload(const Packed& p, const std::vector<RowSource>& rows, int64_t n, DevWeight& dw) {
    const LinearShape s = linear_shape(p, n);
    std::vector<uint8_t> w(s.w_bytes());
    std::vector<uint16_t> sc(size_t(s.n_pad) * size_t(s.nkb)), mn(s.min_bytes() / 2);
    std::vector<float> rm(size_t(s.n_pad));
    repack_rows(s, rows.data(), 0, s.n_pad, w.data(), s.nkb ? sc.data() : nullptr, s.has_mins() ? mn.data() : nullptr,
                rm.data());
    Carve cv;
    const size_t ow = cv.take(w.size()), os = cv.take(sc.size() * 2), om = cv.take(mn.size() * 2),
                 orm = cv.take(rm.size() * 4);
    dw.mem.alloc(0, cv.off, "test weight");
    check(cudaMemcpy(dw.mem.get(ow), w.data(), w.size(), cudaMemcpyHostToDevice), "upload");
    if (s.nkb) check(cudaMemcpy(dw.mem.get(os), sc.data(), sc.size() * 2, cudaMemcpyHostToDevice), "upload");
    if (s.has_mins()) check(cudaMemcpy(dw.mem.get(om), mn.data(), mn.size() * 2, cudaMemcpyHostToDevice), "upload");
    check(cudaMemcpy(dw.mem.get(orm), rm.data(), rm.size() * 4, cudaMemcpyHostToDevice), "upload");
    dw.d.s = s;
    dw.d.w = dw.mem.get<uint8_t>(ow);
    dw.d.scales = s.nkb ? dw.mem.get<uint16_t>(os) : nullptr;
    dw.d.mins = s.has_mins() ? dw.mem.get<uint16_t>(om) : nullptr;
    dw.d.rowmul = dw.mem.get<float>(orm);
}

const char* fmt_name(vt_format f) {
    switch (f) {
        case VT_FORMAT_INT8_BLOCKED: return "int8";
        case VT_FORMAT_FP8_BLOCKED: return "fp8";
        case VT_FORMAT_FP8_CHANNEL: return "fp8-channel";
        case VT_FORMAT_INT8_SPARSE24: return "int8-2:4";
        case VT_FORMAT_INT4_SPARSE24: return "int4-2:4";
        case VT_FORMAT_INT4_BLOCKED: return "int4";
        case VT_FORMAT_INT4_MIN_BLOCKED: return "int4-min";
        default: return "bf16";
    }
}

const LaunchCfg kCfg{nullptr, false};

// The fused QKV epilogue of a test: q out [m][nh·hd], RoPE rows, position of row 0, caches.
Epilogue qkv_epilogue(float* q, int64_t nh, int64_t nkv, int64_t hd, float qscale, const float* rope,
                      const int32_t* pos, void* kcache, void* vcache, int64_t cap) {
    Epilogue e;
    e.kind = kEpiQkv;
    e.out = q;
    e.ld = nh * hd;
    e.nh = int(nh);
    e.nkv = int(nkv);
    e.hd = int(hd);
    e.qscale = qscale;
    e.rope = rope;
    e.pos = pos;
    e.kcache = kcache;
    e.vcache = vcache;
    e.cap = cap;
    return e;
}

// f32 <-> f16 bits on the host through the C API (round to nearest even, as the caches store).
std::vector<uint16_t> to_f16(const std::vector<float>& v) {
    std::vector<uint16_t> h(v.size());
    vt_convert(v.data(), VT_DTYPE_F32, h.data(), VT_DTYPE_F16, v.size());
    return h;
}
std::vector<float> from_f16(const std::vector<uint16_t>& h) {
    std::vector<float> v(h.size());
    vt_convert(h.data(), VT_DTYPE_F16, v.data(), VT_DTYPE_F32, h.size());
    return v;
}
// n f16 values from the device, as f32.
std::vector<float> down_f16(const void* d, size_t n) {
    std::vector<uint16_t> h(n);
    check(cudaDeviceSynchronize(), "kernel");
    check(cudaMemcpy(h.data(), d, n * 2, cudaMemcpyDeviceToHost), "test download");
    return from_f16(h);
}

// ---- Linears -------------------------------------------------------------------------------------

// res + x · Wᵀ in float64 over the unpacked weights of p ([n][k]), m rows.
std::vector<double> residual_ref(const Packed& p, const std::vector<float>& x, const std::vector<float>& res, int m,
                                 int64_t n, int64_t k) {
    std::vector<float> wu(size_t(n * k));
    unpack(p, wu.data());
    std::vector<double> rref(res.size());
    for (int i = 0; i < m; ++i)
        for (int64_t r = 0; r < n; ++r) {
            double acc = 0.0;
            for (int64_t c = 0; c < k; ++c) acc += double(wu[size_t(r * k + c)]) * double(x[size_t(i) * k + c]);
            rref[size_t(i) * n + r] = res[size_t(i) * n + r] + acc;
        }
    return rref;
}

// The two checks every linear kernel gets, through `run` (which enqueues the linear with the
// epilogue it is given, x being `x` on the device): store + bias + GELU against the CPU
// backend's vt::linear, and a residual add against float64 over the unpacked weights.
template <class Run>
void check_store_and_add(const std::string& tag, const Packed& p, const std::vector<float>& x,
                         const std::vector<float>& bias, const Buf& bb, int m, int64_t n, int64_t k, double tol,
                         Run run) {
    vt_linear_options o = vt_linear_default_options();
    o.activation = VT_ACTIVATION_GELU;
    std::vector<float> ref(size_t(m) * size_t(n));
    linear(p, x.data(), m, bias.data(), o, ref.data());
    Buf by;
    poison(by, ref.size() * 4);
    Epilogue e;
    e.kind = kEpiStore;
    e.out = by.f();
    e.ld = n;
    e.bias = bb.f();
    e.gelu = 1;
    run(e);
    const double err = nerr(down(by.f(), ref.size()), to_d(ref));
    expect(err < tol, tag + " store+bias+gelu vs CPU", err);

    std::vector<float> res = randn(size_t(m) * size_t(n));
    const std::vector<double> rref = residual_ref(p, x, res, m, n, k);
    Buf br;
    up(br, res);
    Epilogue ea;
    ea.kind = kEpiAdd;
    ea.out = br.f();
    ea.ld = n;
    run(ea);
    const double err2 = nerr(down(br.f(), res.size()), rref);
    expect(err2 < tol, tag + " residual add vs float64", err2);
}

void test_linear(vt_format f, int32_t block, int64_t n, int64_t k, int m) {
    char tag[160];
    const bool four = int4_four_rows() && !legacy_kernels() && m == 1 &&
                      (f == VT_FORMAT_INT4_BLOCKED || f == VT_FORMAT_INT4_MIN_BLOCKED);
    std::snprintf(tag, sizeof tag, "%s %s/%d [%lld x %lld] m=%d%s", m <= kGemvMaxM ? "gemv" : "gemm", fmt_name(f),
                  block, (long long)n, (long long)k, m, four ? " [4 rows per warp]" : "");
    std::vector<float> w = randn(size_t(n * k), 0.05f);
    auto p = prepack(w.data(), VT_DTYPE_F32, n, k, f, block);
    DevWeight dw;
    upload(*p, rows_plain(*p), n, dw);
    std::vector<float> x = randn(size_t(m) * size_t(k)), bias = randn(size_t(n), 0.1f);
    Buf bx, bb;
    up(bx, x);
    up(bb, bias);

    const double tol = m <= kGemvMaxM ? 2e-5 : 3e-4;  // GEMM: activations as bf16 hi + lo
    check_store_and_add(tag, *p, x, bias, bb, m, n, k, tol, [&](const Epilogue& e) {
        if (m <= kGemvMaxM) gemv(kCfg, dw.d, bx.f(), k, m, nullptr, 0.0f, e);
        else gemm(kCfg, dw.d, bx.f(), k, m, e);
    });
}

// One row through the GEMV with the argmax epilogue (and the RMSNorm prologue when norm):
// the outputs, and the argmax key in *key.
std::vector<float> gemv_argmax(const DevWeight& dw, const std::vector<float>& x, const std::vector<float>* norm,
                               int64_t n, int64_t k, unsigned long long* key) {
    Buf bx, bn, by, bk;
    up(bx, x);
    if (norm) up(bn, *norm);
    poison(by, size_t(n) * 4);
    unsigned long long zero = 0;
    up(bk, &zero, 8);
    Epilogue e;
    e.kind = kEpiStore;
    e.out = by.f();
    e.ld = n;
    e.argmax = bk.mem.get<unsigned long long>();
    gemv(kCfg, dw.d, bx.f(), k, 1, norm ? bn.f() : nullptr, 1e-5f, e);
    std::vector<float> y = down(by.f(), size_t(n));
    check(cudaMemcpy(key, e.argmax, 8, cudaMemcpyDeviceToHost), "download");
    return y;
}

// The 4-bit GEMV with four rows per warp against two (m = 1): a lane visits the same chunks in
// the same order with the same fmaf sequence, reduction and epilogue in both, so the outputs
// must agree bit for bit — at shapes where a block takes several row groups (n >> the
// resident blocks), K spans two stagings, and n is not a multiple of 16.
void test_int4_four_rows_bitwise(vt_format f, int64_t n, int64_t k) {
    if (legacy_kernels()) return;  // the legacy kernels have one form only
    std::vector<float> w = randn(size_t(n * k), 0.05f);
    auto p = prepack(w.data(), VT_DTYPE_F32, n, k, f, 32);
    DevWeight dw;
    upload(*p, rows_plain(*p), n, dw);
    const std::vector<float> x = randn(size_t(k));
    std::vector<float> y[2];
    unsigned long long key[2] = {0, 0};
    const bool env = int4_four_rows();
    for (int four = 0; four < 2; ++four) {
        set_int4_four_rows(four == 1);
        y[four] = gemv_argmax(dw, x, nullptr, n, k, &key[four]);
    }
    set_int4_four_rows(env);
    const bool same = std::memcmp(y[0].data(), y[1].data(), y[0].size() * sizeof(float)) == 0;
    char tag[160];
    std::snprintf(tag, sizeof tag, "gemv %s [%lld x %lld] 4 rows per warp = 2 rows per warp, bit for bit", fmt_name(f),
                  (long long)n, (long long)k);
    expect(same && key[0] == key[1], tag, nerr(y[1], std::vector<double>(y[0].begin(), y[0].end())));
}

void test_gemv_norm_and_argmax(vt_format f = VT_FORMAT_INT8_BLOCKED) {
    const int64_t n = 1000, k = 576;
    std::vector<float> w = randn(size_t(n * k), 0.05f);
    auto p = prepack(w.data(), VT_DTYPE_F32, n, k, f, 32);
    DevWeight dw;
    upload(*p, rows_plain(*p), n, dw);
    std::vector<float> x = randn(size_t(k), 3.0f), nw = randn(size_t(k), 0.2f);
    for (auto& v : nw) v += 1.0f;
    // CPU: the norm, then the packed weights (as vt_packed_unpack gives them) times it in double
    std::vector<float> xn(static_cast<size_t>(k)), xc = x, wu(size_t(n * k));
    ops::add_rmsnorm(xc.data(), nullptr, nw.data(), 1e-5f, k, xn.data());
    unpack(*p, wu.data());
    std::vector<double> ref(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) {
        double acc = 0;
        for (int64_t c = 0; c < k; ++c) acc += double(wu[size_t(r * k + c)]) * xn[size_t(c)];
        ref[size_t(r)] = acc;
    }
    unsigned long long key = 0;
    const std::vector<float> y = gemv_argmax(dw, x, &nw, n, k, &key);
    const bool four = int4_four_rows() && !legacy_kernels() && (f == VT_FORMAT_INT4_BLOCKED || f == VT_FORMAT_INT4_MIN_BLOCKED);
    const std::string tag = std::string("gemv ") + fmt_name(f) + (four ? " [4 rows per warp]" : "");
    expect(nerr(y, ref) < 2e-5, tag + ": fused RMSNorm prologue vs CPU norm + the weights in double", nerr(y, ref));
    expect(key && int64_t(rank_key_index(key)) == argmax(y.data(), n), tag + ": argmax epilogue = argmax of its output");
}

// The gated MLP epilogue: SwiGLU (with the gate/up biases of Llama's mlp_bias when `bias`) or
// Gemma's GeGLU (tanh GELU), against the CPU's linear_swiglu / linear + ops::geglu_tanh.
void test_swiglu(vt_format f, int m, int act = kActSilu, bool bias = false) {
    const int64_t i_dim = 200, h = 256;
    std::vector<float> wg = randn(size_t(i_dim * h), 0.06f), wu = randn(size_t(i_dim * h), 0.06f);
    auto pg = prepack(wg.data(), VT_DTYPE_F32, i_dim, h, f, 0);
    auto pu = prepack(wu.data(), VT_DTYPE_F32, i_dim, h, f, 0);
    DevWeight dw;
    const std::vector<RowSource> rows = rows_interleave(*pg, *pu);
    upload(*pg, rows, 2 * i_dim, dw);
    std::vector<float> x = randn(size_t(m) * size_t(h));
    std::vector<float> gb = randn(size_t(i_dim), 0.5f), ub = randn(size_t(i_dim), 0.5f);
    std::vector<float> ref(size_t(m) * size_t(i_dim));
    const vt_linear_options o = vt_linear_default_options();
    if (act == kActSilu) {
        linear_swiglu(*pg, *pu, x.data(), m, bias ? gb.data() : nullptr, bias ? ub.data() : nullptr, o, ref.data());
    } else {
        std::vector<float> g(ref.size()), u(ref.size());
        linear(*pg, x.data(), m, bias ? gb.data() : nullptr, o, g.data());
        linear(*pu, x.data(), m, bias ? ub.data() : nullptr, o, u.data());
        ops::geglu_tanh(g.data(), u.data(), int64_t(ref.size()), ref.data());
    }
    Buf bx, by, bb;
    up(bx, x);
    poison(by, ref.size() * 4);
    Epilogue e;
    e.kind = kEpiSwiglu;
    e.act = act;
    e.out = by.f();
    e.ld = i_dim;
    if (bias) {
        up(bb, row_values(rows, {{pg.get(), gb.data()}, {pu.get(), ub.data()}}));
        e.bias = bb.f();
    }
    if (m <= kGemvMaxM) gemv(kCfg, dw.d, bx.f(), h, m, nullptr, 0.0f, e);
    else gemm(kCfg, dw.d, bx.f(), h, m, e);
    const double err = nerr(down(by.f(), ref.size()), to_d(ref));
    expect(err < (m <= kGemvMaxM ? 2e-5 : 3e-4),
           std::string(act == kActSilu ? "swiglu" : "geglu-tanh") + " epilogue" + (bias ? " with biases " : " ") +
               fmt_name(f) + " m=" + std::to_string(m) + " vs CPU",
           err);
}

// The store epilogue with a bias and Gemma 2's final soft-cap, and the argmax over the capped
// values, against the CPU's linear + cap · tanh(v / cap) and vt_argmax.
void test_store_softcap(int m) {
    const int64_t n = 300, k = 192;
    const float cap = 3.0f;
    std::vector<float> w = randn(size_t(n * k), 0.2f), b = randn(size_t(n), 1.0f), x = randn(size_t(m * k));
    auto p = prepack(w.data(), VT_DTYPE_F32, n, k, VT_FORMAT_INT8_BLOCKED, 0);
    DevWeight dw;
    upload(*p, rows_plain(*p), n, dw);
    std::vector<float> ref(size_t(m * n));
    linear(*p, x.data(), m, b.data(), vt_linear_default_options(), ref.data());
    for (float& v : ref) v = std::tanh(v / cap) * cap;
    Buf bx, by, bb, bam;
    up(bx, x);
    up(bb, b);
    poison(by, ref.size() * 4);
    const unsigned long long zero = 0;
    up(bam, &zero, 8);
    Epilogue e;
    e.kind = kEpiStore;
    e.out = by.f();
    e.ld = n;
    e.bias = bb.f();
    e.softcap = cap;
    if (m <= kGemvMaxM) e.argmax = bam.mem.get<unsigned long long>();
    if (m <= kGemvMaxM) gemv(kCfg, dw.d, bx.f(), k, m, nullptr, 0.0f, e);
    else gemm(kCfg, dw.d, bx.f(), k, m, e);
    const std::vector<float> got = down(by.f(), ref.size());
    const double err = nerr(got, to_d(ref));
    bool am = true;
    if (m <= kGemvMaxM) {
        unsigned long long key = 0;
        check(cudaMemcpy(&key, bam.mem.get(), 8, cudaMemcpyDeviceToHost), "download");
        am = key && int64_t(rank_key_index(key)) == argmax(got.data(), n);
    }
    expect(err < (m <= kGemvMaxM ? 2e-5 : 3e-4) && am,
           "store epilogue with bias and soft-cap m=" + std::to_string(m) + " vs CPU (and its argmax)", err);
}

// ---- The CUTLASS linears (through the inference API's device path) --------------------------------
//
// cuda_upload_packed + cuda_linear / cuda_linear_swiglu (host arrays in and out) against the CPU
// backend's vt::linear / vt::linear_swiglu on the same packed weights: the 2:4 sparse formats
// (INT8 and INT4: the same integer math as the CPU, so only the GELU differs) and FP8_CHANNEL
// with quantize_input (W8A8: E4M3 × E4M3 products are exact, FP32 sums in another order).

bool cutlass_built() { return cutlass_backend_line().rfind("cutlass: built", 0) == 0; }

// Normalized error bound of an FP8 W8A8 linear against the CPU: 1e-5 (FP32 sums in another
// order), 1e-3 on the sm_90a kernel, whose tensor core keeps fewer bits than FP32 inside each
// 128-k promotion interval. Measured on an H200 (2026-11-29, 44 cases): 1.3e-4 to 3.4e-4 at
// every K from 100 to 4096 and every m from 16 to 1000 (the sm_89 kernel: at most 1.3e-6 in
// the same run, so x, scales, bias and GELU agree), above the first estimate of 3e-4; a wrong
// scale, bias or row would be O(1).
double fp8_tol(const CudaPacked& w, int64_t m) { return cuda_packed_fp8_hopper(w) && m >= 16 ? 1e-3 : 1e-5; }

void test_cutlass_linear(vt_format f, int64_t n, int64_t k, int m, bool gelu) {
    char tag[160];
    std::snprintf(tag, sizeof tag, "cutlass %s [%lld x %lld] m=%d%s", fmt_name(f), (long long)n, (long long)k, m,
                  gelu ? " +bias+gelu" : " +bias");
    std::vector<float> w = randn(size_t(n * k), 0.05f);
    auto p = prepack(w.data(), VT_DTYPE_F32, n, k, f, 0);
    CudaPackedPtr cp = cuda_upload_packed(*p, 0);
    std::vector<float> x = randn(size_t(m) * size_t(k)), bias = randn(size_t(n), 0.1f);
    if (m > 2)
        for (int64_t c = 0; c < k; ++c) x[size_t(2 * k + c)] = 0.0f;  // a zero row (scale 0)
    vt_linear_options o = vt_linear_default_options();
    o.activation = gelu ? VT_ACTIVATION_GELU : VT_ACTIVATION_NONE;
    o.quantize_input = f == VT_FORMAT_FP8_CHANNEL ? 1 : 0;
    std::vector<float> ref(size_t(m) * size_t(n)), y(ref.size(), NAN);
    linear(*p, x.data(), m, bias.data(), o, ref.data());
    cuda_linear(*cp, x.data(), m, bias.data(), o, y.data());
    const bool sparse = f == VT_FORMAT_INT8_SPARSE24 || f == VT_FORMAT_INT4_SPARSE24;
    // Sparse: the same integer sums and the same f32 epilogue operations as the CPU (bit-equal
    // without GELU); GELU erff vs the CPU's double erfc. FP8: f32 sums of exact products; on
    // the sm_90a kernel the tensor core adds 4 wgmma steps (128 k) in its own narrower
    // accumulator before each FP32 promotion (fp8_tol).
    const double tol = sparse ? (gelu ? 1e-6 : 0.0) : fp8_tol(*cp, m);
    const double err = nerr(y, to_d(ref));
    expect(err <= tol, std::string(tag) + " vs CPU", err);
}

void test_cutlass_swiglu(vt_format f, int m) {
    const int64_t i_dim = 200, h = 260;  // K not a multiple of 128 (and of 8 groups for the metadata)
    std::vector<float> wg = randn(size_t(i_dim * h), 0.06f), wu = randn(size_t(i_dim * h), 0.06f);
    auto pg = prepack(wg.data(), VT_DTYPE_F32, i_dim, h, f, 0);
    auto pu = prepack(wu.data(), VT_DTYPE_F32, i_dim, h, f, 0);
    CudaPackedPtr cg = cuda_upload_packed(*pg, 0), cu = cuda_upload_packed(*pu, 0);
    std::vector<float> x = randn(size_t(m) * size_t(h)), gb = randn(size_t(i_dim), 0.1f), ub = randn(size_t(i_dim), 0.1f);
    vt_linear_options o = vt_linear_default_options();
    o.quantize_input = f == VT_FORMAT_FP8_CHANNEL ? 1 : 0;
    std::vector<float> ref(size_t(m) * size_t(i_dim)), y(ref.size(), NAN);
    linear_swiglu(*pg, *pu, x.data(), m, gb.data(), ub.data(), o, ref.data());
    cuda_linear_swiglu(*cg, *cu, x.data(), m, gb.data(), ub.data(), o, y.data());
    const double err = nerr(y, to_d(ref));
    const double tol = f == VT_FORMAT_FP8_CHANNEL ? fp8_tol(*cg, m) : 1e-5;
    expect(err <= tol, std::string("cutlass swiglu ") + fmt_name(f) + " m=" + std::to_string(m) + " vs CPU", err);
}

// Whether uploading p fails with `status` and a message containing `needle`.
bool upload_refused(const vt_packed& p, vt_status status, const char* needle) {
    try {
        cuda_upload_packed(p, 0);
    } catch (const Error& e) {
        return e.status() == status && std::strstr(e.what(), needle);
    }
    return false;
}

// FP8 W8A8 on sm_90: the wgmma kernel (cutlass_fp8_sm90.cu) by default, the CUTLASS 2.x one with
// VT_CUDA_FP8_GEMM=sm89 (read at upload), an unknown value refused naming it. Both kernels
// against the CPU on the shapes that take each of the sm_90a path's two output routes: y
// written by the GEMM itself (n a multiple of 4) and through the scratch (n = 130, 37; SwiGLU).
void test_fp8_hopper_choice() {
    const DeviceInfo& di = device_info(0);
    std::vector<float> w = randn(64 * 128, 0.05f);
    auto p = prepack(w.data(), VT_DTYPE_F32, 64, 128, VT_FORMAT_FP8_CHANNEL, 0);
    const bool hopper = cuda_packed_fp8_hopper(*cuda_upload_packed(*p, 0));
    if (cutlass_backend_line().find("wgmma for sm_90a") != std::string::npos)
        expect(hopper == (di.cc_major == 9 && di.cc_minor == 0),
               "FP8_CHANNEL uploads to the sm_90a kernel exactly on an sm_90 device (this build has it)");
    else
        expect(!hopper, "no sm_90a FP8 kernel in this build: never chosen");
    setenv("VT_CUDA_FP8_GEMM", "bogus", 1);
    expect(upload_refused(*p, VT_STATUS_INVALID_ARGUMENT, "VT_CUDA_FP8_GEMM=bogus"),
           "VT_CUDA_FP8_GEMM=bogus: the upload is VT_STATUS_INVALID_ARGUMENT naming it");
    setenv("VT_CUDA_FP8_GEMM", "sm89", 1);
    expect(!cuda_packed_fp8_hopper(*cuda_upload_packed(*p, 0)), "VT_CUDA_FP8_GEMM=sm89: the CUTLASS 2.x kernel");
    for (int m : {16, 17, 300}) {  // the sm_89 kernel where the default would take the sm_90a one
        test_cutlass_linear(VT_FORMAT_FP8_CHANNEL, 256, 576, m, true);
        test_cutlass_linear(VT_FORMAT_FP8_CHANNEL, 130, 1028, m, false);
    }
    test_cutlass_swiglu(VT_FORMAT_FP8_CHANNEL, 100);
    unsetenv("VT_CUDA_FP8_GEMM");
    if (!hopper) return;
    for (int m : {16, 17, 128, 129, 300}) {
        test_cutlass_linear(VT_FORMAT_FP8_CHANNEL, 256, 576, m, true);    // y written by the GEMM
        test_cutlass_linear(VT_FORMAT_FP8_CHANNEL, 256, 576, m, false);
        test_cutlass_linear(VT_FORMAT_FP8_CHANNEL, 130, 1028, m, true);   // n % 4 != 0: the scratch
        test_cutlass_linear(VT_FORMAT_FP8_CHANNEL, 37, 100, m, false);
    }
    test_cutlass_linear(VT_FORMAT_FP8_CHANNEL, 2048, 4096, 1000, false);  // many tiles, K past one stage
    for (int m : {16, 64, 257}) test_cutlass_swiglu(VT_FORMAT_FP8_CHANNEL, m);
}

// The sm_90a W8A16 prefill GEMM (cutlass_w8a16_sm90.cu, VT_CUDA_PREFILL_GEMM=wgmma) with its two
// passes, as run_linear runs it (x to BF16, the GEMM, the epilogue pass), against the CPU:
// store + bias + GELU vs vt::linear, residual add vs float64. Tolerance: x, the block scales
// and each dequantized weight are rounded to BF16 (at most 2^-8 of each, relative), the sums are FP32.
#if defined(VT_HAVE_CUTLASS_W8A16_SM90)
int w8a16_weight_of(vt_format f) {
    switch (f) {
        case VT_FORMAT_INT8_BLOCKED: return kW8a16Int8;
        case VT_FORMAT_FP8_BLOCKED:
        case VT_FORMAT_FP8_CHANNEL: return kW8a16Fp8;
        default: return kW8a16U4;
    }
}

void test_w8a16_linear(vt_format f, int32_t block, int64_t n, int64_t k, int m) {
    char tag[160];
    std::snprintf(tag, sizeof tag, "w8a16 sm90a %s/%d [%lld x %lld] m=%d", fmt_name(f), block, (long long)n,
                  (long long)k, m);
    std::vector<float> w = randn(size_t(n * k), 0.05f);
    auto p = prepack(w.data(), VT_DTYPE_F32, n, k, f, block);
    DevWeight dw;
    upload(*p, rows_plain(*p), n, dw);
    const LinearShape s = dw.d.s;
    const int wt = w8a16_weight_of(f);
    std::vector<uint16_t> sc(size_t(s.n_pad) * size_t(s.nkb)), mn(sc.size());
    std::vector<uint16_t> sb(w8a16_scale_entries(s.kb, s.k_pad, s.n_pad)), zb(sb.size());
    if (s.nkb) check(cudaMemcpy(sc.data(), dw.d.scales, sc.size() * 2, cudaMemcpyDeviceToHost), "download");
    if (s.has_mins()) check(cudaMemcpy(mn.data(), dw.d.mins, mn.size() * 2, cudaMemcpyDeviceToHost), "download");
    w8a16_scales(s.nkb ? sc.data() : nullptr, s.n_pad, s.k_pad, s.kb, sb.data());
    // Zeros for the 4-bit weights alone, as upload_linear does: a per-channel FP8 weight has no
    // block scales (sc is empty), and reading them crashed this test on the H200 (2026-11-29).
    if (wt == kW8a16U4) w8a16_zeros(sc.data(), s.has_mins() ? mn.data() : nullptr, s.n_pad, s.k_pad, s.kb, zb.data());
    const int phases = w8a16_phases(s.kb, s.k_pad);
    Buf bsb, bzb, bx, bb, bxb, bd;
    up(bsb, sb);
    up(bzb, zb);
    dw.d.scales_bf16 = bsb.mem.get<uint16_t>();
    dw.d.zeros_bf16 = wt == kW8a16U4 ? bzb.mem.get<uint16_t>() : nullptr;
    std::vector<float> x = randn(size_t(m) * size_t(k)), bias = randn(size_t(n), 0.1f);
    up(bx, x);
    up(bb, bias);
    poison(bxb, size_t(phases) * size_t(m) * size_t(s.k_pad) * 2);
    const auto run = [&](const Epilogue& e) {
        poison(bd, size_t(phases) * size_t(m) * size_t(s.n_pad) * 4);
        to_bf16_rows(kCfg, bx.f(), k, m, s.k, s.k_pad, phases, s.kb, bxb.mem.get<uint16_t>());
        const W8a16Sm90Problem q = w8a16_problem(m, s.n_pad, s.k_pad, s.kb, wt, dw.d.w, dw.d.scales_bf16,
                                                 dw.d.zeros_bf16, bxb.mem.get<uint16_t>(), bd.f());
        w8a16_gemm_sm90(nullptr, q, 0);
        gemm_finish(kCfg, dw.d, bd.f(), s.n_pad, m, phases, q.d_phase, e);
    };
    // 4-bit: u · s + z in BF16 loses up to 2^-8 of 15 s, against |w| of a few s.
    const double tol = wt == kW8a16U4 ? 3e-2 : 2e-2;

    check_store_and_add(tag, *p, x, bias, bb, m, n, k, tol, run);
}
#endif

void test_w8a16() {
    const DeviceInfo& di = device_info(0);
    const bool built = cutlass_backend_line().find("W8A16 wgmma") != std::string::npos;
#if defined(VT_HAVE_CUTLASS_W8A16_SM90)
    const bool runs = w8a16_sm90_supported(di.cc_major, di.cc_minor);
    expect(built && runs == (di.cc_major == 9 && di.cc_minor == 0),
           "the sm_90a W8A16 kernel runs exactly on an sm_90 device (this build has it)");
    if (!runs) return;
    for (int32_t block : {16, 32, 64, 128})  // 4, 2, 1, 1 passes
        for (int m : {64, 77, 128, 256, 1000}) {
            test_w8a16_linear(VT_FORMAT_INT8_BLOCKED, block, 256, 1024, m);
            test_w8a16_linear(VT_FORMAT_INT8_BLOCKED, block, 130, 256, m);  // n_pad 192: a partial tile of W
        }
    test_w8a16_linear(VT_FORMAT_INT8_BLOCKED, 32, 300, 2080, 100);  // 65 blocks: pass 2's last group empty
    test_w8a16_linear(VT_FORMAT_INT8_BLOCKED, 32, 2560, 2048, 256);  // TinyLlama's QKV, O and down shapes
    test_w8a16_linear(VT_FORMAT_INT8_BLOCKED, 128, 2048, 2048, 200);
    test_w8a16_linear(VT_FORMAT_INT8_BLOCKED, 32, 2048, 5632, 256);
    for (int m : {64, 100, 257}) {
        test_w8a16_linear(VT_FORMAT_FP8_BLOCKED, 16, 256, 1024, m);  // FP8's default: four passes
        test_w8a16_linear(VT_FORMAT_FP8_CHANNEL, 0, 256, 576, m);    // one scale per row: group = K
        test_w8a16_linear(VT_FORMAT_FP8_CHANNEL, 0, 130, 100, m);    // K = 100 (k_pad 128)
        for (vt_format f4 : {VT_FORMAT_INT4_BLOCKED, VT_FORMAT_INT4_MIN_BLOCKED}) {
            test_w8a16_linear(f4, 32, 256, 1024, m);  // the 4-bit default block: two passes
            test_w8a16_linear(f4, 64, 130, 333, m);   // odd K (k_pad 384)
            test_w8a16_linear(f4, 128, 256, 2048, m);
        }
    }
#else
    (void)di;
    expect(!built, "no sm_90a W8A16 kernel in this build: the backend line does not claim one");
#endif
}

void test_cutlass() {
    std::printf("%s\n", cutlass_backend_line().c_str());
    if (!cutlass_built()) {
        // Without CUTLASS the sparse formats are refused at upload, naming why.
        std::vector<float> w = randn(64 * 128, 0.05f);
        auto p = prepack(w.data(), VT_DTYPE_F32, 64, 128, VT_FORMAT_INT8_SPARSE24, 0);
        expect(upload_refused(*p, VT_STATUS_BACKEND_UNAVAILABLE, "CUTLASS"),
               "without CUTLASS a 2:4 sparse upload is VT_STATUS_BACKEND_UNAVAILABLE naming CUTLASS");
        return;
    }
    for (vt_format f : {VT_FORMAT_INT8_SPARSE24, VT_FORMAT_INT4_SPARSE24, VT_FORMAT_FP8_CHANNEL}) {
        for (int m : {1, 3, 17, 1000}) {
            test_cutlass_linear(f, 300, 576, m, false);
            test_cutlass_linear(f, 37, 100, m, true);  // K not a multiple of 128 (nor of 16)
        }
        test_cutlass_linear(f, 130, 1028, 64, true);
        test_cutlass_linear(f, 1000, 4096, 129, false);
        for (int m : {1, 5, 100}) test_cutlass_swiglu(f, m);
    }
    test_fp8_hopper_choice();
    test_w8a16();
}

// ---- Row counts past the grid's y limit (vt_linear_device accepts m up to 2^24) ------------------
//
// The GEMM puts 64-row tiles on the grid's y dimension (65535 max: 4.19M rows per launch), the
// 2:4 sparse epilogue 32-row tiles (2.1M rows), CUTLASS's sparse GEMM 128-row tiles (8.4M rows):
// past those the launches are split. Rows around each split and at both ends against the CPU.

float hash_x(int64_t i) {  // cheap deterministic activations in [-1, 1) for billions of elements
    uint64_t z = uint64_t(i) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 31)) * 0xBF58476D1CE4E5B9ull;
    return float(int64_t(z >> 40) - (int64_t(1) << 23)) / float(int64_t(1) << 23);
}

void test_large_m(vt_format f, int64_t m, int64_t n, int64_t k, std::vector<int64_t> around) {
    char tag[160];
    std::snprintf(tag, sizeof tag, "vt_linear_device %s [%lld x %lld] m=%lld (split launches)", fmt_name(f),
                  (long long)n, (long long)k, (long long)m);
    std::vector<float> w = randn(size_t(n * k), 0.05f);
    auto p = prepack(w.data(), VT_DTYPE_F32, n, k, f, 0);
    CudaPackedPtr cp = cuda_upload_packed(*p, 0);
    DevMem dx, dy;
    try {
        dx.alloc(0, size_t(m * k) * 4, "large-m input");
        dy.alloc(0, size_t(m * n) * 4, "large-m output");
    } catch (const Error& e) {
        std::printf("skip %s: %s\n", tag, e.what());
        return;
    }
    {
        std::vector<float> hx(size_t(1) << 24);
        for (int64_t b = 0; b < m * k; b += int64_t(hx.size())) {
            const int64_t cnt = std::min<int64_t>(int64_t(hx.size()), m * k - b);
            for (int64_t i = 0; i < cnt; ++i) hx[size_t(i)] = hash_x(b + i);
            check(cudaMemcpy(dx.get<float>() + b, hx.data(), size_t(cnt) * 4, cudaMemcpyHostToDevice), "upload");
        }
    }
    check(cudaMemset(dy.get(), 0xFF, size_t(m * n) * 4), "poison");
    vt_linear_options o = vt_linear_default_options();
    cuda_linear_device(*cp, dx.get<float>(), m, nullptr, o, dy.get<float>(), nullptr);
    check(cudaDeviceSynchronize(), "large-m linear");
    around.push_back(0);
    around.push_back(m);
    double worst = 0.0;
    for (int64_t c : around) {
        const int64_t r0 = std::max<int64_t>(0, c - 70), r1 = std::min(m, c + 70);
        std::vector<float> x(size_t((r1 - r0) * k)), ref(size_t((r1 - r0) * n)), y(ref.size());
        for (size_t i = 0; i < x.size(); ++i) x[i] = hash_x(r0 * k + int64_t(i));
        linear(*p, x.data(), r1 - r0, nullptr, o, ref.data());
        check(cudaMemcpy(y.data(), dy.get<float>() + r0 * n, y.size() * 4, cudaMemcpyDeviceToHost), "download");
        worst = std::max(worst, nerr(y, to_d(ref)));
    }
    const bool sparse = f == VT_FORMAT_INT8_SPARSE24 || f == VT_FORMAT_INT4_SPARSE24;
    expect(worst <= (sparse ? 0.0 : 3e-4), std::string(tag) + " rows around the splits vs CPU", worst);
}

// The lm_head of a Llama-3 vocabulary: the GEMV's fused argmax over 128256 rows (many blocks
// racing on one 64-bit key), with ties placed across blocks, against vt_argmax.
void test_argmax_wide_vocab() {
    const int64_t n = 128256, k = 2048;
    std::vector<float> w = randn(size_t(n * k), 0.02f);
    // Two equal rows far apart (different blocks, the same slot in them: bit-equal outputs):
    // the lower index must win when they are the max.
    for (int64_t c = 0; c < k; ++c) w[size_t(126992 * k + c)] = w[size_t(1232 * k + c)] = 0.05f;
    auto p = prepack(w.data(), VT_DTYPE_F32, n, k, VT_FORMAT_INT8_BLOCKED, 32);
    DevWeight dw;
    upload(*p, rows_plain(*p), n, dw);
    for (int trial = 0; trial < 2; ++trial) {
        std::vector<float> x = randn(size_t(k));
        if (trial == 1)
            for (auto& v : x) v = std::fabs(v);  // positive x: rows 1232 and 126992 are the max
        std::vector<float> ref(static_cast<size_t>(n));
        linear(*p, x.data(), 1, nullptr, vt_linear_default_options(), ref.data());
        unsigned long long key = 0;
        const std::vector<float> y = gemv_argmax(dw, x, nullptr, n, k, &key);
        const int64_t want = argmax(y.data(), n);
        expect(nerr(y, to_d(ref)) < 2e-5 && key && int64_t(rank_key_index(key)) == want &&
                   (trial == 0 || want == 1232),
               "gemv argmax over a 128256-wide vocabulary = vt_argmax" + std::string(trial ? " (tie: lower index)" : ""));
    }
}

// ---- QKV + RoPE + KV cache, attention --------------------------------------------------------------

struct AttnCase {
    int nh, nkv, hd;
};

// An int8 cache as the CPU's store_kv writes one (ops::store_i8 per key and value vector):
// codes in the device layout (keys [nkv][hd][cap], values [nkv][cap][hd]), the CPU's scales
// (ks, vs: [nkv][cap]) and the device's interleaved pairs (sc: [nkv][cap][2]).
struct I8Cache {
    std::vector<int8_t> k, v;
    std::vector<float> ks, vs, sc;
};
I8Cache to_i8(const std::vector<float>& kt, const std::vector<float>& v, int64_t nkv, int64_t hd, int64_t cap) {
    I8Cache c;
    c.k.resize(kt.size());
    c.v.resize(v.size());
    c.ks.resize(size_t(nkv * cap));
    c.vs.resize(size_t(nkv * cap));
    c.sc.resize(size_t(2 * nkv * cap));
    for (int64_t h = 0; h < nkv; ++h)
        for (int64_t j = 0; j < cap; ++j) {
            const size_t at = size_t(h * cap + j);
            std::vector<float> key(static_cast<size_t>(hd));
            for (int64_t d = 0; d < hd; ++d) key[size_t(d)] = kt[size_t((h * hd + d) * cap + j)];
            std::vector<int8_t> code(static_cast<size_t>(hd));
            ops::store_i8(key.data(), hd, code.data(), 1, &c.ks[at]);
            for (int64_t d = 0; d < hd; ++d) c.k[size_t((h * hd + d) * cap + j)] = code[size_t(d)];
            ops::store_i8(v.data() + (h * cap + j) * hd, hd, c.v.data() + (h * cap + j) * hd, 1, &c.vs[at]);
            c.sc[2 * at] = c.ks[at];
            c.sc[2 * at + 1] = c.vs[at];
        }
    return c;
}

// The QKV step: the fused epilogue (RoPE, scale, K/V into the cache), with the q/k/v biases
// when `bias`; with `qk_norm`, the store epilogue + qkv_norm_rope (Qwen3 / Gemma 3's per-head
// RMSNorm of q and k before RoPE), against the CPU's ops::rmsnorm_heads + ops::rope. kv: the
// cache, 0 f32, 1 f16, 2 int8 (the staging, then kv_store_i8: codes within one of the CPU's
// ops::store_i8 of the reference vectors, which round the same way up to the f32 error).
void test_qkv(const AttnCase& ac, int m, int pos0, bool bias = false, bool qk_norm = false, int kv = 0,
              int64_t rot = 0) {
    const bool f16 = kv == 1, i8 = kv == 2;
    const int64_t h = 128, nh = ac.nh, nkv = ac.nkv, hd = ac.hd, rows = (nh + 2 * nkv) * hd, cap = pos0 + m + 5;
    const float eps = 1e-6f;
    std::vector<float> w = randn(size_t(rows * h), 0.08f);
    auto p = prepack(w.data(), VT_DTYPE_F32, rows, h, VT_FORMAT_BF16, 0);
    std::vector<float> wu(size_t(rows * h));
    unpack(*p, wu.data());
    DevWeight dw;
    if (rot <= 0) rot = hd;
    const std::vector<RowSource> order = rows_qkv(*p, nh, nkv, hd, rot);
    upload(*p, order, rows, dw);
    const std::vector<float> b = randn(size_t(rows), 0.5f), qn = randn(size_t(hd), 0.5f), kn = randn(size_t(hd), 0.5f);
    std::vector<float> x = randn(size_t(m * h));
    LlamaConfig rc;
    rc.head_dim = hd;
    rc.rotary_dim = rot;
    rc.rope_theta = 10000.0;
    const std::vector<float> inv_freq = ops::rope_inv_freq(rc);
    std::vector<float> rope(size_t(m * hd));
    for (int i = 0; i < m; ++i) ops::rope_angles(inv_freq.data(), pos0 + i, rot, rope.data() + size_t(i * hd));
    const float qscale = 1.0f / std::sqrt(float(hd));
    std::vector<double> qref(size_t(m * nh * hd)), kref(size_t(nkv * hd * cap), 0.0), vref(size_t(nkv * cap * hd), 0.0);
    for (int i = 0; i < m; ++i) {
        // The linear in double, then RoPE as the CPU backend applies it (ops::rope).
        std::vector<float> y(static_cast<size_t>(rows));
        for (int64_t r = 0; r < rows; ++r) {
            double acc = 0;
            for (int64_t c = 0; c < h; ++c) acc += double(wu[size_t(r * h + c)]) * x[size_t(i * h + c)];
            y[size_t(r)] = float(acc) + (bias ? b[size_t(r)] : 0.0f);
        }
        if (qk_norm) {
            ops::rmsnorm_heads(y.data(), nh, hd, qn.data(), eps);
            ops::rmsnorm_heads(y.data() + nh * hd, nkv, hd, kn.data(), eps);
        }
        const float* cs = rope.data() + size_t(i * hd);
        ops::rope(y.data(), nh, hd, cs, qscale, rot);
        ops::rope(y.data() + nh * hd, nkv, hd, cs, 1.0f, rot);
        for (int64_t d = 0; d < nh * hd; ++d) qref[size_t(i * nh * hd + d)] = y[size_t(d)];
        for (int64_t kh = 0; kh < nkv; ++kh)
            for (int64_t d = 0; d < hd; ++d) kref[size_t((kh * hd + d) * cap + pos0 + i)] = y[size_t((nh + kh) * hd + d)];
        for (int64_t kh = 0; kh < nkv; ++kh)
            for (int64_t d = 0; d < hd; ++d)
                vref[size_t((kh * cap + pos0 + i) * hd + d)] = y[size_t((nh + nkv + kh) * hd + d)];
    }
    Buf bx, brope, bpos, bq, bk, bv;
    up(bx, x);
    up(brope, rope);
    const int32_t p0 = pos0;
    up(bpos, &p0, 4);
    poison(bq, qref.size() * 4);
    std::vector<float> zeros(kref.size(), 0.0f);
    Buf bstage, bscales;
    if (f16) {
        const std::vector<uint16_t> hz(kref.size(), 0);
        up(bk, hz);
        up(bv, hz);
    } else if (i8) {
        const std::vector<int8_t> z8(kref.size(), 0);
        up(bk, z8);
        up(bv, z8);
        up(bscales, std::vector<float>(size_t(nkv * cap * 2), 0.0f));
        poison(bstage, size_t(m * 2 * nkv * hd) * 4);
    } else {
        up(bk, zeros);
        up(bv, zeros);
    }
    Epilogue e = qkv_epilogue(bq.f(), nh, nkv, hd, qscale, brope.f(), bpos.mem.get<int32_t>(), bk.f(), bv.f(), cap);
    e.kv_f16 = f16;
    e.rot = int(rot);
    if (i8) {
        e.kv_stage = bstage.f();
        e.kv_scales = bscales.f();
    }
    Buf bb, braw, bqn, bkn, bbad;
    const unsigned long long none = ~0ull;
    if (f16 || i8) {
        up(bbad, &none, 8);
        e.kv_bad = bbad.mem.get<unsigned long long>();
    }
    if (bias) up(bb, row_values(order, {{p.get(), b.data()}}));
    Epilogue el = e;  // the linear's epilogue
    if (qk_norm) {
        poison(braw, size_t(m * rows) * 4);
        el = Epilogue();
        el.kind = kEpiStore;
        el.out = braw.f();
        el.ld = rows;
    }
    el.bias = bias ? bb.f() : nullptr;
    if (m <= kGemvMaxM) gemv(kCfg, dw.d, bx.f(), h, m, nullptr, 0.0f, el);
    else gemm(kCfg, dw.d, bx.f(), h, m, el);
    if (qk_norm) {
        up(bqn, qn);
        up(bkn, kn);
        qkv_norm_rope(kCfg, braw.f(), rows, m, bqn.f(), bkn.f(), eps, e);
    }
    if (i8) kv_store_i8(kCfg, bstage.f(), m, e);
    const double tol = m <= kGemvMaxM ? 2e-5 : 3e-4;
    char tag[160];
    std::snprintf(tag, sizeof tag, "qkv+rope%s%s%s nh=%d nkv=%d hd=%d rot=%lld m=%d pos0=%d", bias ? " +bias" : "",
                  qk_norm ? " +q/k norm" : "", f16 ? " f16 cache" : i8 ? " int8 cache" : "", ac.nh, ac.nkv, ac.hd,
                  (long long)rot, m, pos0);
    const double eq = nerr(down(bq.f(), qref.size()), qref);
    if (i8) {
        // The device's codes and scales against ops::store_i8 of the reference vectors (to_i8;
        // positions no row wrote: zeros in both).
        const I8Cache want = to_i8(std::vector<float>(kref.begin(), kref.end()),
                                   std::vector<float>(vref.begin(), vref.end()), nkv, hd, cap);
        std::vector<int8_t> kc(kref.size()), vc(vref.size());
        std::vector<float> sc(want.sc.size());
        check(cudaMemcpy(kc.data(), bk.mem.get(), kc.size(), cudaMemcpyDeviceToHost), "download");
        check(cudaMemcpy(vc.data(), bv.mem.get(), vc.size(), cudaMemcpyDeviceToHost), "download");
        check(cudaMemcpy(sc.data(), bscales.mem.get(), sc.size() * 4, cudaMemcpyDeviceToHost), "download");
        unsigned long long bad = 0;
        check(cudaMemcpy(&bad, bbad.mem.get(), 8, cudaMemcpyDeviceToHost), "download");
        int worst = 0;
        for (size_t j = 0; j < kc.size(); ++j) worst = std::max(worst, std::abs(int(kc[j]) - int(want.k[j])));
        for (size_t j = 0; j < vc.size(); ++j) worst = std::max(worst, std::abs(int(vc[j]) - int(want.v[j])));
        double scale_err = 0.0;
        for (size_t j = 0; j < sc.size(); ++j)
            scale_err = std::max(scale_err, std::fabs(double(sc[j]) - want.sc[j]) / std::max(1e-30, double(want.sc[j])));
        expect(eq < tol && worst <= 1 && scale_err < 10 * tol && bad == none,
               std::string(tag) + " q, K/V codes (within 1 of ops::store_i8), scales", std::max(eq, scale_err));
        return;
    }
    // An f16 cache holds the values rounded to f16 (half an f16 ulp: 2^-12 relative), plus the
    // kernel's own error before rounding.
    const double ek = nerr(f16 ? down_f16(bk.f(), kref.size()) : down(bk.f(), kref.size()), kref);
    const double ev = nerr(f16 ? down_f16(bv.f(), vref.size()) : down(bv.f(), vref.size()), vref);
    const double tkv = f16 ? tol + 5e-4 : tol;
    bool in_range = true;
    if (f16) {
        unsigned long long bad = 0;
        check(cudaMemcpy(&bad, bbad.mem.get(), 8, cudaMemcpyDeviceToHost), "download");
        in_range = bad == none;
    }
    expect(eq < tol && ek < tkv && ev < tkv && in_range, std::string(tag) + " q, K cache, V cache",
           std::max({eq, ek, ev}));
}

// The CPU backend's attention (ops::attend_normalized over its head groups, as cpu/engine.cpp
// runs it) for one query row at position pos: q [nh][hd], caches as on the device (keys
// [nkv][hd][cap], values [nkv][cap][hd]; int8: with the CPU's per-head scales ks, vs
// [nkv][cap]); the keys are copied into the CPU session's tiles (ops::key_index) first.
// tests/ops/test_ops.cpp checks it against float64.
template <class T>
void attn_cpu(const float* q, const std::vector<T>& kdev, const std::vector<T>& v, int64_t cap,
              const AttnCase& ac, int64_t pos, double* out, int64_t window = 0, float softcap = 0.0f,
              const float* ks = nullptr, const float* vs = nullptr) {
    const int64_t hd = ac.hd;
    const int64_t capt = (cap + ops::kKeyTile - 1) / ops::kKeyTile * ops::kKeyTile;
    std::vector<T> kt(size_t(ac.nkv * hd * capt), T(0));
    for (int64_t h = 0; h < ac.nkv; ++h)
        for (int64_t d = 0; d < hd; ++d)
            for (int64_t j = 0; j < cap; ++j)
                kt[size_t(h * hd * capt + ops::key_index(j, d, hd))] = kdev[size_t((h * hd + d) * cap + j)];
    const ops::HeadGroups hg(ac.nh, ac.nkv, hd);
    std::vector<float> o(size_t(ac.nh * hd));
    for (int64_t unit = 0; unit < hg.units; ++unit) {
        const ops::HeadGroups::Unit u = hg.unit(unit);
        const float* qp[ops::kMaxGroup];
        float* op[ops::kMaxGroup];
        for (int64_t g = 0; g < u.ng; ++g) {
            qp[g] = q + (u.head0 + g) * hd;
            op[g] = o.data() + (u.head0 + g) * hd;
        }
        const int64_t k0 = window > 0 ? std::max<int64_t>(0, pos + 1 - window) : 0;  // cpu/engine.cpp's first_key
        if constexpr (std::is_same<T, int8_t>::value)
            ops::attend_normalized(qp, u.ng, kt.data() + u.kvh * hd * capt, v.data() + u.kvh * cap * hd,
                                   ks + u.kvh * cap, vs + u.kvh * cap, k0, pos + 1, hd, op, softcap);
        else
            ops::attend_normalized(qp, u.ng, kt.data() + u.kvh * hd * capt, v.data() + u.kvh * cap * hd, k0, pos + 1,
                                   hd, op, softcap);
    }
    std::copy(o.begin(), o.end(), out);
}

// kv: 0 f32 caches, 1 f16 (caches of f16 bits against the CPU's attention over the same f16
// caches, ops::half), 2 int8 (codes and scales as ops::store_i8 makes them, against the CPU's
// attention over the same int8 cache).
void test_attention(const AttnCase& ac, int m, int pos0, int splits, int window = 0, float softcap = 0.0f,
                    int kv = 0) {
    const bool f16 = kv == 1, i8 = kv == 2;
    const int64_t hd = ac.hd, cap = pos0 + m + 3;
    std::vector<float> kt = randn(size_t(ac.nkv * hd * cap)), v = randn(size_t(ac.nkv * cap * hd));
    std::vector<float> q = randn(size_t(m * ac.nh * hd), 1.0f / std::sqrt(float(hd)) * 2.0f);
    std::vector<double> ref(size_t(m * ac.nh * hd));
    const std::vector<uint16_t> kh = f16 ? to_f16(kt) : std::vector<uint16_t>();
    const std::vector<uint16_t> vh = f16 ? to_f16(v) : std::vector<uint16_t>();
    const I8Cache c8 = i8 ? to_i8(kt, v, ac.nkv, hd, cap) : I8Cache();
    for (int i = 0; i < m; ++i) {
        const float* qi = q.data() + size_t(i * ac.nh * hd);
        double* ri = ref.data() + size_t(i * ac.nh * hd);
        if (f16) attn_cpu(qi, kh, vh, cap, ac, pos0 + i, ri, window, softcap);
        else if (i8) attn_cpu(qi, c8.k, c8.v, cap, ac, pos0 + i, ri, window, softcap, c8.ks.data(), c8.vs.data());
        else attn_cpu(qi, kt, v, cap, ac, pos0 + i, ri, window, softcap);
    }
    const int G = ac.nh / ac.nkv, gb = std::min(G, kAttnMaxGroup), units = ac.nkv * ((G + gb - 1) / gb);
    Buf bq, bk, bv, bo, bpos, bpart, bcnt, bsc;
    up(bq, q);
    if (f16) {
        up(bk, kh);
        up(bv, vh);
    } else if (i8) {
        up(bk, c8.k);
        up(bv, c8.v);
        up(bsc, c8.sc);
    } else {
        up(bk, kt);
        up(bv, v);
    }
    const int32_t p0 = pos0;
    up(bpos, &p0, 4);
    poison(bo, ref.size() * 4);
    poison(bpart, size_t(units) * size_t(splits) * kAttnMaxGroup * size_t(hd + 2) * 4);
    std::vector<int32_t> zero(size_t(units), 0);
    up(bcnt, zero);
    AttnArgs a;
    a.q = bq.f();
    a.kcache = bk.f();
    a.vcache = bv.f();
    a.cap = cap;
    a.out = bo.f();
    a.pos = bpos.mem.get<int32_t>();
    a.nh = ac.nh;
    a.nkv = ac.nkv;
    a.hd = ac.hd;
    a.m = m;
    a.window = window;
    a.softcap = softcap;
    a.kv_f16 = f16;
    a.kv_i8 = i8;
    a.kv_scales = i8 ? bsc.f() : nullptr;
    a.splits = splits;
    a.partial = bpart.f();
    a.counters = bcnt.mem.get<int32_t>();
    char tag[192];
    std::snprintf(tag, sizeof tag, "attention %s nh=%d nkv=%d hd=%d m=%d pos0=%d splits=%d window=%d softcap=%g%s",
                  m == 1 ? "decode" : "prefill", ac.nh, ac.nkv, ac.hd, m, pos0, splits, window, double(softcap),
                  f16 ? " f16 cache" : i8 ? " int8 cache" : "");
    if (m == 1) {
        attention_decode(kCfg, a);
        const double e1 = nerr(down(bo.f(), ref.size()), ref);
        attention_decode(kCfg, a);  // again: the counters must have been reset
        const double e2 = nerr(down(bo.f(), ref.size()), ref);
        const std::vector<int32_t> cnt = [&] {
            std::vector<int32_t> c(static_cast<size_t>(units));
            check(cudaMemcpy(c.data(), a.counters, c.size() * 4, cudaMemcpyDeviceToHost), "download");
            return c;
        }();
        expect(e1 < 1e-5 && e2 < 1e-5 && std::all_of(cnt.begin(), cnt.end(), [](int32_t c) { return c == 0; }),
               std::string(tag) + " (twice, counters reset)", std::max(e1, e2));
    } else {
        attention_prefill(kCfg, a);
        const double err = nerr(down(bo.f(), ref.size()), ref);
        expect(err < 1e-5, tag, err);
    }
}

// kv_store_i8 against ops::store_i8 on the same f32 vectors, bit for bit (codes and scales):
// random vectors, vectors of exact ties (x · 127 / amax = k + 1/2), an all-zero vector and one
// below kKvI8MinAmax (codes 0, scale 0), and non-finite elements (an infinite key, a NaN value: zeros, scale 0, reported
// as the smallest layer << 32 | position); head_dim `hd` (40: lanes past the vector idle).
void test_kv_i8_store(int64_t hd) {
    const int m = 3, pos0 = 7;
    const int64_t nkv = 2, cap = 16;
    std::vector<float> stage = randn(size_t(m * 2 * nkv * hd), 3.0f);
    // Row 0, key head 1: ties. amax 127 makes inv exactly 1, so x = k + 0.5 rounds to even.
    float* tie = stage.data() + size_t((0 * 2 + 0) * nkv + 1) * size_t(hd);
    for (int64_t d = 0; d < hd; ++d) tie[d] = d == 0 ? 127.0f : float(d % 50) - 25.0f + 0.5f;
    float* zero = stage.data() + size_t((0 * 2 + 1) * nkv + 0) * size_t(hd);  // row 0, value head 0
    for (int64_t d = 0; d < hd; ++d) zero[d] = 0.0f;
    // Row 1, value head 1: a vector below kKvI8MinAmax (a finite 127 / amax is impossible at
    // 1e-37): zeros, scale 0, as a zero vector.
    float* tiny = stage.data() + size_t((1 * 2 + 1) * nkv + 1) * size_t(hd);
    for (int64_t d = 0; d < hd; ++d) tiny[d] = d == 2 ? -1e-37f : 0.0f;
    stage[size_t((1 * 2 + 0) * nkv + 0) * size_t(hd) + 5] = std::numeric_limits<float>::infinity();  // row 1 (pos 8)
    stage[size_t((2 * 2 + 1) * nkv + 1) * size_t(hd) + 3] = std::numeric_limits<float>::quiet_NaN();  // row 2 (pos 9)
    Buf bstage, bk, bv, bsc, bpos, bbad;
    up(bstage, stage);
    up(bk, std::vector<int8_t>(size_t(nkv * hd * cap), 99));
    up(bv, std::vector<int8_t>(size_t(nkv * cap * hd), 99));
    up(bsc, std::vector<float>(size_t(nkv * cap * 2), -1.0f));
    const int32_t p0 = pos0;
    up(bpos, &p0, 4);
    const unsigned long long none = ~0ull;
    up(bbad, &none, 8);
    Epilogue e;
    e.kind = kEpiQkv;
    e.nkv = int(nkv);
    e.hd = int(hd);
    e.pos = bpos.mem.get<int32_t>();
    e.kcache = bk.mem.get();
    e.vcache = bv.mem.get();
    e.kv_scales = bsc.f();
    e.cap = cap;
    e.layer = 5;
    e.kv_bad = bbad.mem.get<unsigned long long>();
    kv_store_i8(kCfg, bstage.f(), m, e);
    std::vector<int8_t> kc(size_t(nkv * hd * cap)), vc(size_t(nkv * cap * hd));
    std::vector<float> sc(size_t(nkv * cap * 2));
    unsigned long long bad = 0;
    check(cudaMemcpy(kc.data(), bk.mem.get(), kc.size(), cudaMemcpyDeviceToHost), "download");
    check(cudaMemcpy(vc.data(), bv.mem.get(), vc.size(), cudaMemcpyDeviceToHost), "download");
    check(cudaMemcpy(sc.data(), bsc.f(), sc.size() * 4, cudaMemcpyDeviceToHost), "download");
    check(cudaMemcpy(&bad, bbad.mem.get(), 8, cudaMemcpyDeviceToHost), "download");
    bool same = true, untouched = true;
    for (int i = 0; i < m; ++i)
        for (int which = 0; which < 2; ++which)
            for (int64_t h = 0; h < nkv; ++h) {
                const float* x = stage.data() + size_t((i * 2 + which) * nkv + h) * size_t(hd);
                std::vector<int8_t> want(static_cast<size_t>(hd));
                float ws = -2.0f;
                ops::store_i8(x, hd, want.data(), 1, &ws);
                const int64_t p = pos0 + i;
                for (int64_t d = 0; d < hd; ++d) {
                    const int8_t got = which ? vc[size_t((h * cap + p) * hd + d)] : kc[size_t((h * hd + d) * cap + p)];
                    same = same && got == want[size_t(d)];
                }
                const float gs = sc[size_t((h * cap + p) * 2 + which)];
                same = same && std::memcmp(&gs, &ws, 4) == 0;
            }
    for (int64_t h = 0; h < nkv; ++h)  // positions no row wrote keep their contents
        for (int64_t p = 0; p < cap; ++p) {
            if (p >= pos0 && p < pos0 + m) continue;
            untouched = untouched && sc[size_t((h * cap + p) * 2)] == -1.0f && vc[size_t((h * cap + p) * hd)] == 99 &&
                        kc[size_t(h * hd * cap + p)] == 99;
        }
    expect(same && untouched && bad == ((5ull << 32) | 8ull),
           "int8 KV cache store hd=" + std::to_string(hd) +
               ": codes and scales = ops::store_i8 bit for bit (ties, zeros, non-finite reported)");
}

// The f16 cache's range report: a key or value beyond f16 (|x| >= 65520) is stored as infinity
// and reported as the smallest (layer << 32 | position), through both the fused epilogue and
// qkv_norm_rope; values that f16 holds report nothing.
void test_kv_f16_range() {
    const int64_t h = 64, nh = 2, nkv = 1, hd = 64, rows = (nh + 2 * nkv) * hd, cap = 16;
    std::vector<float> w(size_t(rows * h), 0.0f);
    for (int64_t r = 0; r < rows; ++r) w[size_t(r * h + r % h)] = 1.0f;  // y[r] = x[r % h]
    auto p = prepack(w.data(), VT_DTYPE_F32, rows, h, VT_FORMAT_BF16, 0);
    DevWeight dw;
    upload(*p, rows_qkv(*p, nh, nkv, hd), rows, dw);
    std::vector<float> rope(size_t(3 * hd), 0.0f);
    for (int i = 0; i < 3; ++i)
        for (int64_t j = 0; j < hd / 2; ++j) rope[size_t(i * hd + j)] = 1.0f;  // cos 1, sin 0
    for (int pass = 0; pass < 3; ++pass) {  // in range; out of range (fused); out of range (qkv_norm_rope)
        std::vector<float> x(size_t(3 * h), 1.0f);
        if (pass > 0) {
            x[size_t(1 * h + 5)] = 1e5f;   // row 1 (position 8), dim 5 of every head: Q, K and V
            x[size_t(2 * h + 7)] = -7e4f;  // row 2 (position 9)
        }
        Buf bx, brope, bpos, bq, bk, bv, bbad, braw, bn;
        up(bx, x);
        up(brope, rope);
        const int32_t p0 = 7;
        up(bpos, &p0, 4);
        poison(bq, size_t(3 * nh * hd) * 4);
        const std::vector<uint16_t> hz(size_t(nkv * hd * cap), 0);
        up(bk, hz);
        up(bv, hz);
        const unsigned long long none = ~0ull;
        up(bbad, &none, 8);
        Epilogue e = qkv_epilogue(bq.f(), nh, nkv, hd, 1.0f, brope.f(), bpos.mem.get<int32_t>(), bk.f(), bv.f(), cap);
        e.kv_f16 = 1;
        e.layer = 3;
        e.kv_bad = bbad.mem.get<unsigned long long>();
        if (pass < 2) {
            gemv(kCfg, dw.d, bx.f(), h, 3, nullptr, 0.0f, e);
        } else {
            // (the q/k norms bring K back into range; V, not normalized, still overflows)
            poison(braw, size_t(3 * rows) * 4);
            up(bn, std::vector<float>(size_t(hd), 1.0f));
            Epilogue er;
            er.kind = kEpiStore;
            er.out = braw.f();
            er.ld = rows;
            gemv(kCfg, dw.d, bx.f(), h, 3, nullptr, 0.0f, er);
            qkv_norm_rope(kCfg, braw.f(), rows, 3, bn.f(), bn.f(), 1e-6f, e);
        }
        check(cudaDeviceSynchronize(), "kernel");
        unsigned long long bad = 0;
        check(cudaMemcpy(&bad, bbad.mem.get(), 8, cudaMemcpyDeviceToHost), "download");
        const unsigned long long want = pass == 0 ? none : (3ull << 32) | 8ull;
        expect(bad == want, std::string("f16 KV cache range report, ") +
                                (pass == 0 ? "in range: none" : pass == 1 ? "fused epilogue" : "qkv_norm_rope"));
    }
}

// ---- Small ops --------------------------------------------------------------------------------------

void test_small_ops() {
    // embedding in each dtype
    const int64_t v = 50, h = 96;
    std::vector<float> tab = randn(size_t(v * h));
    std::vector<uint16_t> tb(tab.size()), th(tab.size());
    for (size_t i = 0; i < tab.size(); ++i) {
        uint32_t u;
        std::memcpy(&u, &tab[i], 4);
        tb[i] = uint16_t(u >> 16);
    }
    vt_convert(tab.data(), VT_DTYPE_F32, th.data(), VT_DTYPE_F16, tab.size());
    const std::vector<int32_t> toks = {3, 0, 49, 3, 17};
    for (int dt : {int(VT_DTYPE_F32), int(VT_DTYPE_F16), int(VT_DTYPE_BF16)}) {
        Buf bt, btok, bx;
        if (dt == VT_DTYPE_F32) up(bt, tab);
        else up(bt, dt == VT_DTYPE_F16 ? th : tb);
        up(btok, toks);
        poison(bx, toks.size() * size_t(h) * 4);
        embed(kCfg, bt.mem.get(), dt, h, btok.mem.get<int32_t>(), int(toks.size()), bx.f(), 0.0f, nullptr);
        const std::vector<float> got = down(bx.f(), toks.size() * size_t(h));
        bool ok = true;
        for (size_t i = 0; i < toks.size(); ++i)
            for (int64_t c = 0; c < h; ++c) {
                const size_t src = size_t(toks[i]) * size_t(h) + size_t(c);
                float want = tab[src];
                if (dt == VT_DTYPE_BF16) {
                    const uint32_t u = uint32_t(tb[src]) << 16;
                    std::memcpy(&want, &u, 4);
                } else if (dt == VT_DTYPE_F16) {
                    vt_convert(&th[src], VT_DTYPE_F16, &want, VT_DTYPE_F32, 1);
                }
                ok = ok && got[i * size_t(h) + size_t(c)] == want;
            }
        expect(ok, "embedding lookup dtype " + std::to_string(dt) + " exact");
    }
    // embedding times Gemma's scale
    {
        Buf bt, btok, bx;
        up(bt, tab);
        up(btok, toks);
        poison(bx, toks.size() * size_t(h) * 4);
        const float scale = std::sqrt(float(h));
        embed(kCfg, bt.mem.get(), VT_DTYPE_F32, h, btok.mem.get<int32_t>(), int(toks.size()), bx.f(), scale, nullptr);
        const std::vector<float> got = down(bx.f(), toks.size() * size_t(h));
        bool ok = true;
        for (size_t i = 0; i < toks.size(); ++i)
            for (int64_t c = 0; c < h; ++c) ok = ok && got[i * size_t(h) + size_t(c)] == tab[size_t(toks[i]) * size_t(h) + size_t(c)] * scale;
        expect(ok, "embedding lookup times the embedding scale, exact");
    }
    // x += rmsnorm(t) · w (Gemma's post norms)
    {
        const int m = 3;
        std::vector<float> x = randn(size_t(m * h), 2.0f), t = randn(size_t(m * h), 3.0f), w = randn(size_t(h));
        std::vector<float> ref = x, tc = t;
        for (int i = 0; i < m; ++i) {
            ops::rmsnorm_heads(tc.data() + i * h, 1, h, w.data(), 1e-6f);
            for (int64_t c = 0; c < h; ++c) ref[size_t(i * h + c)] += tc[size_t(i * h + c)];
        }
        Buf bx, bt, bw;
        up(bx, x);
        up(bt, t);
        up(bw, w);
        add_rmsnorm(kCfg, bx.f(), bt.f(), bw.f(), 1e-6f, h, m);
        const double err = nerr(down(bx.f(), x.size()), to_d(ref));
        expect(err < 2e-6, "add_rmsnorm vs CPU ops::rmsnorm_heads + add", err);
    }
    // rmsnorm
    {
        const int m = 3;
        std::vector<float> x = randn(size_t(m * h), 2.0f), w = randn(size_t(h));
        std::vector<float> cpu(x.size()), xc = x;
        for (int i = 0; i < m; ++i) ops::add_rmsnorm(xc.data() + i * h, nullptr, w.data(), 1e-6f, h, cpu.data() + i * h);
        const std::vector<double> ref = to_d(cpu);
        Buf bx, bw, bo;
        up(bx, x);
        up(bw, w);
        poison(bo, x.size() * 4);
        rmsnorm(kCfg, bx.f(), bw.f(), 1e-6f, h, m, bo.f());
        const double err = nerr(down(bo.f(), x.size()), ref);
        expect(err < 2e-6, "rmsnorm vs CPU ops::add_rmsnorm", err);
    }
    // top-k candidates: sizes around the slice, ties, NaN, -inf
    for (int64_t n : {int64_t(7), int64_t(300), int64_t(2048), int64_t(2049), int64_t(32000), int64_t(128256)}) {
        std::vector<float> lg = randn(size_t(n));
        for (int64_t i = 0; i < n; i += 97) lg[size_t(i)] = 1.5f;  // ties
        if (n > 10) {
            lg[3] = NAN;
            lg[5] = -INFINITY;
        }
        std::vector<uint64_t> keys(static_cast<size_t>(n));
        for (int64_t i = 0; i < n; ++i) keys[size_t(i)] = rank_key(lg[size_t(i)], uint32_t(i));
        std::sort(keys.begin(), keys.end(), std::greater<uint64_t>());
        keys.resize(kTopK, 0);
        Buf bl, bs, bo;
        up(bl, lg);
        poison(bs, topk_scratch_keys(n) * 8);
        poison(bo, kTopK * 8);
        topk(kCfg, bl.f(), n, bs.mem.get<unsigned long long>(), bo.mem.get<unsigned long long>());
        std::vector<uint64_t> got(kTopK);
        check(cudaDeviceSynchronize(), "topk");
        check(cudaMemcpy(got.data(), bo.mem.get(), kTopK * 8, cudaMemcpyDeviceToHost), "download");
        expect(got == keys, "top-k candidates n=" + std::to_string(n) + " = sorted host keys");
    }
}

// ---- Whole model: CPU vs CUDA ---------------------------------------------------------------------

void test_model(const std::string& dir, vt_format f) {
    const std::string tag = dir + " " + fmt_name(f);
    vt_model_options o = vt_model_default_options();
    o.weight_format = f;
    o.device = VT_DEVICE_CPU;
    std::unique_ptr<vt_model> m;
    try {
        m = load_model(dir.c_str(), o);
    } catch (const Error& e) {
        expect(false, tag + ": load: " + e.what());
        return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::unique_ptr<BackendModel> cm = cuda_backend(*m, 0, m->kv_cache_dtype);
    const double up_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("     %s: %.1f MiB on the device, upload %.0f ms\n", tag.c_str(),
                double(cm->device_bytes()) / 1048576.0, up_ms);
    const int64_t V = m->cfg.vocab_size;
    std::vector<int32_t> prompt;
    for (int i = 0; i < 40; ++i) prompt.push_back(int32_t((i * 7919 + 13) % V));

    // Prefill logits (ALL) — also the GEMM path (40 > 8 rows) — and the short-prompt GEMV path.
    for (int n : {40, 5, 1}) {
        auto sc = new_session(*m, 64);
        auto sg = new_session(*m, 64, cm.get());
        std::vector<float> lc(size_t(n * V)), lg(size_t(n * V));
        prefill(*sc, prompt.data(), n, nullptr, nullptr, lc.data(), VT_LOGITS_ALL);
        prefill(*sg, prompt.data(), n, nullptr, nullptr, lg.data(), VT_LOGITS_ALL);
        const double err = nerr(lg, to_d(lc));
        expect(err < (f == VT_FORMAT_BF16 ? 2e-3 : 5e-3), tag + ": prefill logits CPU vs CUDA, n=" + std::to_string(n), err);
    }
    // Greedy decoding: logits at every step, tokens.
    {
        auto sc = new_session(*m, 0);
        auto sg = new_session(*m, 0, cm.get());
        int32_t tc = 0, tg = 0;
        std::vector<float> lc(static_cast<size_t>(V)), lg(static_cast<size_t>(V));
        prefill(*sc, prompt.data(), 12, nullptr, &tc, nullptr, VT_LOGITS_NONE);
        prefill(*sg, prompt.data(), 12, nullptr, &tg, nullptr, VT_LOGITS_NONE);
        double worst = 0.0;
        int same = tc == tg, steps = 1;
        for (int step = 0; step < 40; ++step) {
            const int32_t in = tc;  // teacher-forced by the CPU's choice
            decode(*sc, in, nullptr, &tc, lc.data());
            decode(*sg, in, nullptr, &tg, lg.data());
            worst = std::max(worst, nerr(lg, to_d(lc)));
            same += tc == tg;
            ++steps;
            if (tg != int32_t(argmax(lg.data(), V))) worst = INFINITY;  // device argmax == its logits' argmax
        }
        expect(worst < (f == VT_FORMAT_BF16 ? 1e-3 : 3e-3), tag + ": decode logits CPU vs CUDA over 40 steps", worst);
        {
            const char* env = std::getenv("VT_CUDA_PDL");
            const bool off = env && (!std::strcmp(env, "0") || !std::strcmp(env, "off") || !std::strcmp(env, "false"));
            const bool want = device_info(0).cc_major >= 9 && !off;
            std::string why;
            expect(sg->backend->uses_pdl(&why) == want,
                   tag + ": the decode graph " + (want ? "uses PDL" : "runs without PDL") + " as configured" +
                       (why.empty() ? "" : " (" + why + ")"));
        }
        std::printf("     %s: greedy tokens equal at %d of %d steps\n", tag.c_str(), same, steps);
        expect(same >= steps - 2, tag + ": greedy tokens CPU vs CUDA (near-ties aside)");
    }
    // Graph replay vs eager launches: identical bits.
    {
        std::vector<std::vector<float>> runs;
        for (const char* graphs : {"1", "0"}) {
            setenv("VT_CUDA_GRAPHS", graphs, 1);
            auto sg = new_session(*m, 0, cm.get());
            int32_t t = 0;
            prefill(*sg, prompt.data(), 9, nullptr, &t, nullptr, VT_LOGITS_NONE);
            std::vector<float> all;
            std::vector<float> lg(static_cast<size_t>(V));
            for (int i = 0; i < 12; ++i) {
                decode(*sg, t, nullptr, &t, lg.data());
                all.insert(all.end(), lg.begin(), lg.end());
            }
            runs.push_back(all);
        }
        unsetenv("VT_CUDA_GRAPHS");
        expect(runs[0] == runs[1], tag + ": graph replay and eager launches give identical logits");
    }
    // Device-side token feedback (cuda/decode_ahead.h): greedy decoding without logits runs
    // each step ahead of the host. The tokens must be bit for bit those with it off, through
    // every way a step launched ahead is dropped: another token than the device fed it, a call
    // that wants logits, a sampled call, a prefill, a copy of the session (source and target),
    // the KV cache's first growth (512 positions) and the end of a session's capacity.
    {
        struct Run {
            std::vector<int32_t> toks;
            bool on = false;
            int64_t used = 0, dropped = 0;
        };
        std::vector<Run> runs;
        const std::pair<const char*, const char*> modes[] = {{"1", "1"}, {"0", "1"}, {"1", "0"}};  // feedback, graphs
        for (const auto& mode : modes) {
            setenv("VT_CUDA_FEEDBACK", mode.first, 1);
            setenv("VT_CUDA_GRAPHS", mode.second, 1);
            Run run;
            auto sg = new_session(*m, 0, cm.get());
            auto sh = new_session(*m, 0, cm.get());
            int32_t t = 0;
            prefill(*sg, prompt.data(), 9, nullptr, &t, nullptr, VT_LOGITS_NONE);
            run.toks.push_back(t);
            std::vector<float> lg(static_cast<size_t>(V));
            vt_sample_options so = vt_sample_default_options();
            so.temperature = 0.7f;
            so.seed = 7;
            for (int i = 0; i < 40; ++i) {
                const int32_t in = i == 10 ? (t + 1) % int32_t(V) : t;
                if (i == 15) {
                    decode(*sg, in, nullptr, &t, lg.data());
                } else if (i == 20) {
                    prefill(*sg, prompt.data() + 20, 3, nullptr, &t, nullptr, VT_LOGITS_NONE);
                } else if (i == 30) {
                    decode(*sg, in, &so, &t, nullptr);
                } else {
                    if (i == 25) {
                        // The copy reads the source with a step in flight; its own first decode
                        // runs ahead again.
                        copy_prefix(*sh, *sg, sg->len);
                        int32_t u = t;
                        for (int j = 0; j < 3; ++j) {
                            decode(*sh, u, nullptr, &u, nullptr);
                            run.toks.push_back(u);
                        }
                    }
                    decode(*sg, in, nullptr, &t, nullptr);
                }
                run.toks.push_back(t);
            }
            run.on = sg->backend->feedback_counts(&run.used, &run.dropped);
            // Across the first KV growth: positions 505 .. 524.
            if (m->max_seq_len >= 600) {
                auto sl = new_session(*m, 0, cm.get());
                std::vector<int32_t> longp;
                for (int i = 0; i < 505; ++i) longp.push_back(int32_t((i * 31337 + 7) % V));
                prefill(*sl, longp.data(), 505, nullptr, &t, nullptr, VT_LOGITS_NONE);
                for (int i = 0; i < 20; ++i) {
                    decode(*sl, t, nullptr, &t, nullptr);
                    run.toks.push_back(t);
                }
            }
            // To the end of a session of 20 positions: the last step cannot run ahead.
            {
                auto ss = new_session(*m, 20, cm.get());
                prefill(*ss, prompt.data(), 9, nullptr, &t, nullptr, VT_LOGITS_NONE);
                while (ss->len < 20) {
                    decode(*ss, t, nullptr, &t, nullptr);
                    run.toks.push_back(t);
                }
                bool full = false;
                try {
                    decode(*ss, t, nullptr, &t, nullptr);
                } catch (const Error& e) {
                    full = e.status() == VT_STATUS_INVALID_ARGUMENT;
                }
                expect(full, tag + ": a full session refuses another decode with a step launched ahead or not");
            }
            runs.push_back(run);
        }
        unsetenv("VT_CUDA_FEEDBACK");
        unsetenv("VT_CUDA_GRAPHS");
        std::printf("     %s: feedback on: %lld steps launched ahead used, %lld dropped\n", tag.c_str(),
                    (long long)runs[0].used, (long long)runs[0].dropped);
        expect(runs[0].toks == runs[1].toks, tag + ": greedy tokens with device-side feedback = without it");
        expect(runs[2].toks == runs[1].toks, tag + ": ... and with feedback on eager launches (VT_CUDA_GRAPHS=0)");
        // sg's 40 calls: the first decode after the prefill and after each call that launched
        // nothing (i = 0, 16, 21) run their own step; the ones that drop the step in flight:
        // the other token (i = 10), the call that wants logits (15), the prefill (20), the
        // sampled call (30: drawn on the device, it launches a step that draws) and the greedy
        // call after it (31); the copy (25) leaves the source's step in flight, used. 32 used.
        expect(runs[0].on && runs[0].used == 32 && runs[0].dropped == 5,
               tag + ": feedback on: steps launched ahead are used (" + std::to_string(runs[0].used) + ") and dropped (" +
                   std::to_string(runs[0].dropped) + ") as the calls ask");
        expect(!runs[1].on && runs[1].used == 0 && runs[1].dropped == 0, tag + ": VT_CUDA_FEEDBACK=0 runs nothing ahead");
    }
    // The batched decode step (CudaModel::decode_batch): 12 sessions at different positions
    // (two GEMV launches of 8 + 4 rows per linear; one session grows its KV cache past 512
    // positions inside the step; two had a step launched ahead, dropped by the batch) give
    // each row the logits of that session's own single decode step, and later single steps
    // go on from the caches the batch wrote.
    if (cm->batches() && m->max_seq_len >= 600) {
        constexpr int kN = 12;
        std::vector<std::unique_ptr<vt_session>> sb, sr;
        std::vector<int32_t> tb(kN), tr(kN);
        for (int i = 0; i < kN; ++i) {
            sb.push_back(new_session(*m, 0, cm.get()));
            sr.push_back(new_session(*m, 0, cm.get()));
            std::vector<int32_t> p0;
            const int len = i == 5 ? 511 : 3 + 7 * i;  // session 5 is at the cache's first capacity
            for (int j = 0; j < len; ++j) p0.push_back(int32_t((j * 7919 + 13 * i + 1) % V));
            prefill(*sb.back(), p0.data(), len, nullptr, &tb[size_t(i)], nullptr, VT_LOGITS_NONE);
            prefill(*sr.back(), p0.data(), len, nullptr, &tr[size_t(i)], nullptr, VT_LOGITS_NONE);
            if (i < 2) {  // greedy steps without logits: each leaves a step in flight
                decode(*sb.back(), tb[size_t(i)], nullptr, &tb[size_t(i)], nullptr);
                decode(*sr.back(), tr[size_t(i)], nullptr, &tr[size_t(i)], nullptr);
            }
        }
        std::vector<vt_session*> ptrs;
        for (auto& p : sb) ptrs.push_back(p.get());
        std::vector<float> lb(size_t(kN) * size_t(V)), lr(static_cast<size_t>(V));
        double worst = 0.0;
        bool same = tb == tr;
        for (int step = 0; step < 3; ++step) {
            std::vector<int32_t> nb(kN);
            decode_batch(ptrs.data(), kN, tb.data(), nullptr, nb.data(), lb.data());
            for (int i = 0; i < kN; ++i) {
                int32_t nr = 0;
                decode(*sr[size_t(i)], tr[size_t(i)], nullptr, &nr, lr.data());
                worst = std::max(worst, nerr(std::vector<float>(lb.begin() + i * V, lb.begin() + (i + 1) * V), to_d(lr)));
                same = same && nb[size_t(i)] == nr;
                tr[size_t(i)] = nr;
            }
            tb = nb;
        }
        // Single steps after the batch read what it wrote.
        for (int i = 0; i < kN; ++i) {
            int32_t a = 0, b = 0;
            decode(*sb[size_t(i)], tb[size_t(i)], nullptr, &a, lr.data());
            std::vector<float> la = lr;
            decode(*sr[size_t(i)], tr[size_t(i)], nullptr, &b, lr.data());
            worst = std::max(worst, nerr(la, to_d(lr)));
            same = same && a == b;
        }
        expect(worst < 1e-5, tag + ": batched decode step of 12 sessions = their single decode steps (logits)", worst);
        expect(same, tag + ": batched decode step of 12 sessions = their single decode steps (tokens)");
    }
    // Sampling: the token drawn on the device (draw.h), and the one drawn on the host from the
    // device's top-k candidates (VT_CUDA_DEVICE_DRAW=0), = vt::sample of the step's logits.
    vt_sample_options opts[3] = {vt_sample_default_options(), vt_sample_default_options(), vt_sample_default_options()};
    opts[0].temperature = 0.8f;
    opts[0].top_k = 40;
    opts[0].top_p = 0.9f;
    opts[1].temperature = 1.3f;
    opts[1].min_p = 0.05f;
    opts[1].seed = 1234;
    opts[2].temperature = 0.5f;
    opts[2].seed = 99;
    for (const char* device_draw : {"1", "0"}) {
        setenv("VT_CUDA_DEVICE_DRAW", device_draw, 1);
        bool ok = true;
        for (const vt_sample_options& so : opts) {
            auto sg = new_session(*m, 0, cm.get());
            int32_t t = 0;
            prefill(*sg, prompt.data(), 6, &so, &t, nullptr, VT_LOGITS_NONE);
            std::vector<float> lg(static_cast<size_t>(V));
            for (int i = 0; i < 16; ++i) {
                const uint64_t step = sg->step;
                int32_t nt = 0;
                decode(*sg, t, &so, &nt, lg.data());
                ok = ok && nt == int32_t(sample(lg.data(), V, so, step));
                t = nt;
            }
        }
        expect(ok, tag + (*device_draw == '1' ? ": sampled tokens drawn on the device"
                                               : ": sampled tokens drawn on the host from the device's candidates") +
                       " = vt::sample of the logits");
    }
    // Sampled decoding without logits: the draw on the device with the next step launched
    // ahead (fed the token drawn), without feedback, and drawn on the host: the same tokens.
    {
        std::vector<std::vector<int32_t>> runs;
        int64_t used = 0, dropped = 0;
        const std::pair<const char*, const char*> modes[] = {{"1", "1"}, {"0", "1"}, {"1", "0"}};  // feedback, device draw
        for (const auto& mode : modes) {
            setenv("VT_CUDA_FEEDBACK", mode.first, 1);
            setenv("VT_CUDA_DEVICE_DRAW", mode.second, 1);
            std::vector<int32_t> toks;
            for (const vt_sample_options& so : opts) {
                auto sg = new_session(*m, 0, cm.get());
                int32_t t = 0;
                prefill(*sg, prompt.data(), 7, &so, &t, nullptr, VT_LOGITS_NONE);
                for (int i = 0; i < 24; ++i) {
                    decode(*sg, t, &so, &t, nullptr);
                    toks.push_back(t);
                }
                if (runs.empty()) {
                    int64_t u = 0, d = 0;
                    sg->backend->feedback_counts(&u, &d);
                    used += u;
                    dropped += d;
                }
            }
            runs.push_back(toks);
        }
        std::printf("     %s: sampled, feedback on: %lld steps launched ahead used, %lld dropped\n", tag.c_str(),
                    (long long)used, (long long)dropped);
        expect(runs[0] == runs[1] && runs[0] == runs[2],
               tag + ": sampled tokens drawn on the device with feedback = without it = drawn on the host");
        expect(used == 3 * 23 && dropped == 0, tag + ": sampled decoding uses every step launched ahead but the first");
    }
    unsetenv("VT_CUDA_FEEDBACK");
    unsetenv("VT_CUDA_DEVICE_DRAW");
    // Long context: prefill past one chunk and decode past the first KV growth.
    if (m->max_seq_len >= 2100) {
        auto sc = new_session(*m, 2100);
        auto sg = new_session(*m, 2100, cm.get());
        std::vector<int32_t> longp;
        for (int i = 0; i < 2050; ++i) longp.push_back(int32_t((i * 31337 + 7) % V));
        prefill(*sc, longp.data(), 2050, nullptr, nullptr, nullptr, VT_LOGITS_NONE);
        prefill(*sg, longp.data(), 2050, nullptr, nullptr, nullptr, VT_LOGITS_NONE);
        std::vector<float> lc(static_cast<size_t>(V)), lg(static_cast<size_t>(V));
        double worst = 0.0;
        for (int i = 0; i < 40; ++i) {
            const int32_t tok = int32_t((i * 101 + 5) % V);
            decode(*sc, tok, nullptr, nullptr, lc.data());
            decode(*sg, tok, nullptr, nullptr, lg.data());
            worst = std::max(worst, nerr(lg, to_d(lc)));
        }
        expect(worst < 5e-3, tag + ": decode logits at positions 2050..2089 CPU vs CUDA", worst);
    }
    // Out of device memory: a clear error; afterwards the model and a new session still work.
    {
        bool oom = false;
        std::string msg;
        // A session made before the device fills up: its first decode (the graph capture) may
        // fail for memory, which must not turn PDL off for good.
        auto sp = new_session(*m, 0, cm.get());
        int32_t tp = 0;
        prefill(*sp, prompt.data(), 4, nullptr, &tp, nullptr, VT_LOGITS_NONE);
        const bool pdl_start = sp->backend->uses_pdl(nullptr);
        {
            // Take the device's memory down to the last MiB: 1 GiB chunks, then halving the
            // chunk at each refusal down to 1 MiB (a tiny model's session needs ~3 MB, so a
            // 1 GiB granularity could leave it room).
            std::vector<std::unique_ptr<DevMem>> hog;
            for (size_t chunk = size_t(1) << 30; chunk >= (size_t(1) << 20) && hog.size() < 100000;) {
                try {
                    std::unique_ptr<DevMem> d(new DevMem);
                    d->alloc(0, chunk, "test hog");
                    hog.push_back(std::move(d));
                } catch (const Error& e) {
                    if (msg.empty()) {
                        oom = e.status() == VT_STATUS_OUT_OF_MEMORY;
                        msg = e.what();
                    }
                    if (e.status() != VT_STATUS_OUT_OF_MEMORY) break;
                    chunk /= 2;
                }
            }
            bool session_oom = false;
            try {
                auto sg = new_session(*m, 0, cm.get());
            } catch (const Error& e) {
                session_oom = e.status() == VT_STATUS_OUT_OF_MEMORY;
            }
            expect(session_oom, tag + ": a session on a full device fails with VT_STATUS_OUT_OF_MEMORY");
            try {
                decode(*sp, tp, nullptr, &tp, nullptr);
            } catch (const Error& e) {
                std::printf("     decode on a full device: %s\n", e.what());
            }
        }
        std::printf("     %s\n", msg.c_str());
        expect(oom, tag + ": device out of memory is VT_STATUS_OUT_OF_MEMORY");
        auto sg = new_session(*m, 0, cm.get());
        int32_t t = -1;
        prefill(*sg, prompt.data(), 4, nullptr, &t, nullptr, VT_LOGITS_NONE);
        expect(t >= 0 && t < V, tag + ": the model works after the out-of-memory error");
        std::string why;
        decode(*sp, tp, nullptr, &tp, nullptr);
        expect(sp->backend->uses_pdl(&why) == pdl_start,
               tag + ": PDL " + (pdl_start ? "still on" : "still off") + " after decoding on a full device" +
                   (why.empty() ? "" : " (" + why + ")"));
    }
}

}  // namespace

int main(int argc, char** argv) {
    // The CPU references run libvt's float kernels (x as it is): the integer kernels of AVX2,
    // of AVX-512 with VNNI + VBMI and of int4 with blocks of 32 round x to int16 or to a byte
    // per block (docs/guide.md, "Numerics"), which the device's W8A16 / W4A16 kernels do not,
    // so against them the linears differ by x's rounding (up to 1e-2 for int4), not by the
    // device's own. VT_ISA set by the caller is kept.
    setenv("VT_ISA", "generic", 0);
    std::string why;
    if (!cuda_usable(&why)) {
        std::printf("skipped: %s\n", why.c_str());
        return 77;
    }
    std::printf("%s\n", cuda_backend_line().c_str());
    std::printf("CPU references: %s kernels (VT_ISA=%s)\n", cpu_level_name(), std::getenv("VT_ISA"));
    try {
        for (vt_format f : {VT_FORMAT_INT8_BLOCKED, VT_FORMAT_FP8_BLOCKED, VT_FORMAT_FP8_CHANNEL, VT_FORMAT_BF16})
            for (int m : {1, 2, 3, 4, 5, 8, 9, 64, 100})
                test_linear(f, 0, 300, 576, m);
        for (int32_t block : {16, 64, 128}) {
            test_linear(VT_FORMAT_INT8_BLOCKED, block, 130, 1024, 1);
            test_linear(VT_FORMAT_FP8_BLOCKED, block, 130, 1024, 1);
            test_linear(VT_FORMAT_INT8_BLOCKED, block, 130, 1024, 70);
        }
        // K past the GEMV's staging chunk (8192 floats for m = 1) and not a multiple of 2048.
        test_linear(VT_FORMAT_INT8_BLOCKED, 32, 64, 11008, 1);
        test_linear(VT_FORMAT_INT8_BLOCKED, 32, 64, 5632, 4);
        test_linear(VT_FORMAT_BF16, 0, 64, 8200, 8);
        test_linear(VT_FORMAT_FP8_CHANNEL, 0, 40, 100, 3);  // K not a multiple of 16
        test_linear(VT_FORMAT_BF16, 0, 40, 37, 20);
        // W4A16: every block size (kb 16: two scales per 16-byte chunk), the GEMV's three
        // staging shapes, K past one staging chunk, odd K (a short last block), the GEMM.
        for (vt_format f : {VT_FORMAT_INT4_BLOCKED, VT_FORMAT_INT4_MIN_BLOCKED}) {
            for (int m : {1, 2, 3, 4, 5, 8, 9, 64, 100}) test_linear(f, 0, 300, 576, m);
            for (int32_t block : {16, 64, 128}) {
                test_linear(f, block, 130, 1024, 1);
                test_linear(f, block, 130, 1024, 6);
                test_linear(f, block, 130, 1024, 70);
            }
            test_linear(f, 32, 64, 11008, 1);
            test_linear(f, 32, 64, 5632, 4);
            test_linear(f, 32, 64, 8200, 8);
            test_linear(f, 128, 40, 333, 3);
            test_linear(f, 32, 40, 37, 20);
        }
        test_gemv_norm_and_argmax();
        // The 4-bit GEMV with four rows per warp (VT_CUDA_INT4_FOUR_ROWS; m = 1, m > 1 keeps
        // two): the same cases (block sizes, K past a staging chunk, odd K), the gated
        // epilogue's pairs, the fused norm and the argmax over both of a warp's row pairs.
        const bool four_rows_env = int4_four_rows();
        set_int4_four_rows(true);
        for (vt_format f : {VT_FORMAT_INT4_BLOCKED, VT_FORMAT_INT4_MIN_BLOCKED}) {
            for (int m : {1, 3}) test_linear(f, 0, 300, 576, m);
            for (int32_t block : {16, 64, 128}) test_linear(f, block, 130, 1024, 1);
            test_linear(f, 32, 64, 11008, 1);
            test_linear(f, 32, 64, 5632, 1);
            test_linear(f, 128, 40, 333, 1);
            for (int m : {1, 3}) test_swiglu(f, m);
            test_gemv_norm_and_argmax(f);
            for (auto nk : {std::pair<int64_t, int64_t>{2048, 2048}, {5632, 2048}, {49160, 576}, {2048, 11008}})
                test_int4_four_rows_bitwise(f, nk.first, nk.second);
        }
        set_int4_four_rows(four_rows_env);
        for (vt_format f : {VT_FORMAT_INT8_BLOCKED, VT_FORMAT_FP8_BLOCKED, VT_FORMAT_BF16, VT_FORMAT_INT4_BLOCKED,
                            VT_FORMAT_INT4_MIN_BLOCKED})
            for (int m : {1, 3, 8, 33}) {
                test_swiglu(f, m);
                test_swiglu(f, m, kActSilu, true);
                test_swiglu(f, m, kActGeluTanh);
            }
        for (int m : {1, 4, 8, 20}) test_store_softcap(m);
        const AttnCase cases[] = {{4, 4, 64}, {8, 2, 64}, {32, 4, 64}, {16, 1, 64}, {4, 4, 128}, {8, 2, 128},
                                  {32, 8, 128}, {6, 2, 128}};
        for (const AttnCase& ac : cases) {
            test_qkv(ac, 1, 0);
            test_qkv(ac, 1, 37);
            test_qkv(ac, 5, 3);
            test_qkv(ac, 20, 11);
            for (int pos : {0, 6, 127, 128, 1000, 2500}) {
                test_attention(ac, 1, pos, 1);
                test_attention(ac, 1, pos, 7);
                test_attention(ac, 1, pos, 32);
            }
            test_attention(ac, 3, 0, 1);
            test_attention(ac, 40, 0, 1);
            test_attention(ac, 40, 70, 1);
            test_attention(ac, 130, 5, 1);
            // The f16 cache (the default): the kernels read f16 bits, the QKV step stores them.
            test_qkv(ac, 1, 37, false, false, true);
            test_qkv(ac, 20, 11, true, false, true);
            test_qkv(ac, 5, 3, false, true, true);
            for (int pos : {0, 127, 1000}) {
                test_attention(ac, 1, pos, 1, 0, 0.0f, true);
                test_attention(ac, 1, pos, 7, 0, 0.0f, true);
            }
            test_attention(ac, 40, 70, 1, 0, 0.0f, true);
            test_attention(ac, 130, 5, 1, 6, 3.0f, true);
            // The int8 cache (kv_cache "int8"): the staging + kv_store_i8, the kernels over codes
            // and per-vector scales.
            test_qkv(ac, 1, 37, false, false, 2);
            test_qkv(ac, 20, 11, true, false, 2);
            test_qkv(ac, 5, 3, false, true, 2);
            for (int pos : {0, 127, 1000}) {
                test_attention(ac, 1, pos, 1, 0, 0.0f, 2);
                test_attention(ac, 1, pos, 7, 0, 0.0f, 2);
            }
            test_attention(ac, 40, 70, 1, 0, 0.0f, 2);
            test_attention(ac, 130, 5, 1, 6, 3.0f, 2);
        }
        test_kv_f16_range();
        test_kv_i8_store(64);
        test_kv_i8_store(40);
        // The family features: head_dim other than 64 / 128 (the tiny test models' 8..32,
        // Phi-3's 96, Gemma's 256), q/k/v biases, q/k norms, sliding windows (starting inside
        // a tile and a split), soft-capping.
        const AttnCase fam[] = {{4, 2, 8}, {3, 1, 12}, {4, 1, 24}, {4, 4, 32}, {32, 32, 96}, {8, 4, 256}, {8, 1, 256}, {6, 2, 128}};
        for (const AttnCase& ac : fam) {
            test_qkv(ac, 1, 37, true);
            test_qkv(ac, 20, 11, true);
            test_qkv(ac, 1, 0, false, true);
            test_qkv(ac, 5, 3, true, true);
            test_qkv(ac, 20, 11, false, true);
            for (int pos : {0, 6, 200, 1000}) {
                test_attention(ac, 1, pos, 1);
                test_attention(ac, 1, pos, 7);
                for (int window : {1, 6, 130})
                    for (int splits : {1, 7}) test_attention(ac, 1, pos, splits, window);
                test_attention(ac, 1, pos, 7, 0, 3.0f);
                test_attention(ac, 1, pos, 7, 130, 50.0f);
            }
            for (int window : {0, 1, 6, 40}) {
                test_attention(ac, 40, 0, 1, window);
                test_attention(ac, 40, 70, 1, window, 3.0f);
                test_attention(ac, 130, 5, 1, window);
            }
            // Partial rotary embeddings (half of the dims rotate; Phi-4-mini rotates 3/4).
            if (ac.hd % 4 == 0) {
                test_qkv(ac, 1, 37, true, false, false, ac.hd / 2);
                test_qkv(ac, 20, 11, false, true, true, ac.hd / 2);
            }
            // The f16 cache at these head dims (8-byte V loads when hd is not a multiple of 8).
            test_qkv(ac, 20, 11, true, true, true);
            test_attention(ac, 1, 200, 7, 130, 50.0f, true);
            test_attention(ac, 40, 70, 1, 6, 3.0f, true);
            // The int8 cache at these head dims (4-byte V loads when hd is not a multiple of 8).
            test_qkv(ac, 20, 11, true, true, 2);
            test_attention(ac, 1, 200, 7, 130, 50.0f, 2);
            test_attention(ac, 40, 70, 1, 6, 3.0f, 2);
        }
        test_small_ops();
        test_argmax_wide_vocab();
        test_cutlass();
        // Split launches past the grid's y limit (memory permitting: ~1.6 GB dense, ~10 GB sparse).
        test_large_m(VT_FORMAT_INT8_BLOCKED, 65535 * 64 + 100, 64, 32, {65535 * 64});
        test_large_m(VT_FORMAT_BF16, 65535 * 64 + 100, 64, 32, {65535 * 64});
        if (cutlass_built())
            test_large_m(VT_FORMAT_INT8_SPARSE24, (int64_t(1) << 23) + 100, 32, 64,
                         {65535 * 32, int64_t(1) << 22, int64_t(1) << 23});
        for (int i = 1; i < argc; ++i)
            for (vt_format f : {VT_FORMAT_BF16, VT_FORMAT_INT8_BLOCKED, VT_FORMAT_FP8_BLOCKED, VT_FORMAT_INT4_BLOCKED,
                                VT_FORMAT_INT4_MIN_BLOCKED})
                test_model(argv[i], f);
    } catch (const Error& e) {
        expect(false, std::string("exception: ") + e.what());
    }
    std::printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
