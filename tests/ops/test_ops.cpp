// The CPU ops of libvt/src/ops/ (RMSNorm, RoPE, attention, SwiGLU) against float64 math
// written here. Built by meson as vt_test_ops (`meson test cpu_ops`) and compiled on its own
// with the ops' sources by tests/test_ops_cpu.py; prints "N passed, M failed", exits 1 on a
// failure. The linears have their own tests (tests/test_linear.py); the CUDA kernels are
// checked against these same ops by tests/cuda/test_cuda.cpp.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "config.h"
#include "half.h"
#include "ops/attention.h"
#include "ops/rmsnorm.h"
#include "ops/rope.h"
#include "ops/swiglu.h"

using namespace vt;

namespace {

int g_pass = 0, g_fail = 0;

void expect(bool ok, const std::string& what, double measured) {
    ok ? ++g_pass : ++g_fail;
    std::printf("%s %s (%.3g)\n", ok ? "ok  " : "FAIL", what.c_str(), measured);
}

// max |a - b| / max |b|; a non-finite a (an unwritten or poisoned output) gives +inf.
double nerr(const float* a, const std::vector<double>& b) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < b.size(); ++i) {
        if (!std::isfinite(a[i])) return INFINITY;
        num = std::max(num, std::fabs(double(a[i]) - b[i]));
        den = std::max(den, std::fabs(b[i]));
    }
    return num / (den > 0 ? den : 1.0);
}

std::mt19937 g_rng(20261123);
std::vector<float> randn(size_t n, float sd = 1.0f) {
    std::normal_distribution<float> d(0.0f, sd);
    std::vector<float> v(n);
    for (auto& x : v) x = d(g_rng);
    return v;
}

// ---- RMSNorm ---------------------------------------------------------------------------------------

void test_rmsnorm(int64_t n, bool residual) {
    const float eps = 1e-5f;
    std::vector<float> x = randn(size_t(n), 3.0f), d = randn(size_t(n)), w = randn(size_t(n)), out(static_cast<size_t>(n));
    std::vector<double> sum(static_cast<size_t>(n)), ref(static_cast<size_t>(n));
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) {
        sum[size_t(i)] = double(x[size_t(i)]) + (residual ? double(d[size_t(i)]) : 0.0);
        ss += sum[size_t(i)] * sum[size_t(i)];
    }
    const double r = 1.0 / std::sqrt(ss / double(n) + double(eps));
    for (int64_t i = 0; i < n; ++i) ref[size_t(i)] = sum[size_t(i)] * r * double(w[size_t(i)]);
    ops::add_rmsnorm(x.data(), residual ? d.data() : nullptr, w.data(), eps, n, out.data());
    const double ex = nerr(x.data(), sum), eo = nerr(out.data(), ref);
    expect(ex < 1e-7 && eo < 5e-6,
           "rmsnorm n=" + std::to_string(n) + (residual ? " + residual (x updated)" : " (x unchanged)"),
           std::max(ex, eo));
}

// ---- RoPE ------------------------------------------------------------------------------------------

// transformers' inverse frequencies in float64 (the op reproduces its float32 steps).
std::vector<double> inv_freq_ref(const LlamaConfig& c) {
    const int64_t half = c.head_dim / 2;
    std::vector<double> inv(size_t(half), 0.0);
    for (int64_t i = 0; i < half; ++i) inv[size_t(i)] = 1.0 / std::pow(c.rope_theta, double(2 * i) / double(c.head_dim));
    if (c.rope.kind == RopeScaling::LINEAR) {
        for (auto& f : inv) f /= c.rope.factor;
    } else if (c.rope.kind == RopeScaling::LLAMA3) {
        const double old_ctx = double(c.rope.original_max_position_embeddings);
        const double lo = c.rope.low_freq_factor, hi = c.rope.high_freq_factor, factor = c.rope.factor;
        for (auto& f : inv) {
            const double wavelen = 2 * M_PI / f;
            if (wavelen < old_ctx / hi) continue;              // high frequency: kept
            if (wavelen > old_ctx / lo) { f /= factor; continue; }  // low frequency: scaled
            const double smooth = (old_ctx / wavelen - lo) / (hi - lo);
            f = (1 - smooth) * f / factor + smooth * f;
        }
    }
    return inv;
}

void test_rope_inv_freq(int64_t hd, double theta, RopeScaling::Kind kind) {
    LlamaConfig c;
    c.head_dim = hd;
    c.rope_theta = theta;
    c.rope.kind = kind;
    c.rope.factor = kind == RopeScaling::LINEAR ? 2.0 : 8.0;
    const std::vector<float> got = ops::rope_inv_freq(c);
    const std::vector<double> want = inv_freq_ref(c);
    double err = got.size() == want.size() ? 0.0 : INFINITY;
    int64_t changed = 0;  // scaled frequencies (so the scaled cases test something)
    const std::vector<double> plain = [&] {
        LlamaConfig p = c;
        p.rope.kind = RopeScaling::NONE;
        return inv_freq_ref(p);
    }();
    for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
        err = std::max(err, std::fabs(double(got[i]) - want[i]) / want[i]);
        changed += std::fabs(want[i] - plain[i]) > 1e-9 * plain[i];
    }
    const char* names[] = {"default", "linear", "llama3"};
    const bool scaled_ok = kind == RopeScaling::NONE ? changed == 0 : changed > 0;
    expect(err < 2e-6 && scaled_ok,
           std::string("rope inv_freq ") + names[kind] + " hd=" + std::to_string(hd) + " theta=" +
               std::to_string(int64_t(theta)) + " (" + std::to_string(changed) + " scaled)",
           err);
}

void test_rope(int64_t hd, int64_t heads, int64_t pos, float scale) {
    LlamaConfig c;
    c.head_dim = hd;
    c.rope_theta = 500000.0;
    c.rope.kind = RopeScaling::LLAMA3;
    c.rope.factor = 8.0;
    const std::vector<float> inv = ops::rope_inv_freq(c);
    const int64_t half = hd / 2;
    std::vector<float> cs(static_cast<size_t>(hd));
    ops::rope_angles(inv.data(), pos, hd, cs.data());
    std::vector<double> cs_ref(static_cast<size_t>(hd));
    for (int64_t k = 0; k < half; ++k) {
        const double a = double(pos) * double(inv[size_t(k)]);
        cs_ref[size_t(k)] = std::cos(a);
        cs_ref[size_t(half + k)] = std::sin(a);
    }
    double ecs = 0;
    for (int64_t k = 0; k < hd; ++k) ecs = std::max(ecs, std::fabs(double(cs[size_t(k)]) - cs_ref[size_t(k)]));
    std::vector<float> x = randn(size_t(heads * hd));
    std::vector<double> ref(x.size());
    for (int64_t h = 0; h < heads; ++h)
        for (int64_t i = 0; i < half; ++i) {  // pairs (i, i + hd/2): transformers' rotate_half
            const double x1 = x[size_t(h * hd + i)], x2 = x[size_t(h * hd + half + i)];
            ref[size_t(h * hd + i)] = (x1 * cs_ref[size_t(i)] - x2 * cs_ref[size_t(half + i)]) * scale;
            ref[size_t(h * hd + half + i)] = (x2 * cs_ref[size_t(i)] + x1 * cs_ref[size_t(half + i)]) * scale;
        }
    ops::rope(x.data(), heads, hd, cs.data(), scale);
    const double ex = nerr(x.data(), ref);
    expect(ecs < 1.2e-7 && ex < 2e-6,
           "rope hd=" + std::to_string(hd) + " heads=" + std::to_string(heads) + " pos=" + std::to_string(pos) +
               " scale=" + std::to_string(scale) + " (cos|sin, rotation)",
           std::max(ecs, ex));
}

// ---- Attention -------------------------------------------------------------------------------------

// The cache's element type.
enum Kv { kF32 = 0, kF16 = 1, kI8 = 2 };
const char* kv_name(int kind) { return kind == kI8 ? "int8 cache" : kind == kF16 ? "f16 cache" : "f32 cache"; }

struct Cache {
    int64_t nkv, hd, cap;
    std::vector<float> kt, v;  // [nkv, cap/16, hd, 16] (ops::key_index), [nkv, cap, hd]: the session's layout
    // f16: the same keys and values as halves, and kt / v hold exactly their values (the
    // reference attends over what an f16 cache stores); else empty.
    std::vector<ops::half> kth, vh;
    // int8: the keys and values as ops::store_i8 stores them, with their per-position scales
    // ([nkv, cap] each); kt / v hold scale * q (what an int8 cache stands for); else empty.
    std::vector<int8_t> kt8, v8;
    std::vector<float> ks, vs;
    float key(int64_t kvh, int64_t j, int64_t d) const { return kt[size_t(kvh * hd * cap + ops::key_index(j, d, hd))]; }
};

Cache make_cache(int64_t nkv, int64_t hd, int64_t nkeys, int kind = kF32) {
    const bool f16 = kind == kF16;
    Cache c{nkv, hd, (nkeys + 7 + ops::kKeyTile - 1) / ops::kKeyTile * ops::kKeyTile, {}, {}, {}, {}, {}, {}, {}, {}};
    c.kt = randn(size_t(nkv * hd * c.cap));
    c.v = randn(size_t(nkv * c.cap * hd));
    // Positions past the keys attended are never read: NaN there would show.
    for (int64_t h = 0; h < nkv; ++h)
        for (int64_t j = nkeys; j < c.cap; ++j)
            for (int64_t d = 0; d < hd; ++d) {
                c.kt[size_t(h * hd * c.cap + ops::key_index(j, d, hd))] = NAN;
                c.v[size_t((h * c.cap + j) * hd + d)] = NAN;
            }
    if (f16) {
        for (auto* a : {&c.kt, &c.v}) {
            std::vector<ops::half>& h = a == &c.kt ? c.kth : c.vh;
            h.resize(a->size());
            for (size_t i = 0; i < a->size(); ++i) (*a)[i] = f16_to_f32(h[i] = f32_to_f16((*a)[i]));
        }
    }
    if (kind == kI8) {
        // Past the keys attended: codes of 127 and NaN scales, which would show if read.
        c.kt8.assign(c.kt.size(), 127);
        c.v8.assign(c.v.size(), 127);
        c.ks.assign(size_t(nkv * c.cap), NAN);
        c.vs.assign(size_t(nkv * c.cap), NAN);
        std::vector<float> k(static_cast<size_t>(hd));
        for (int64_t h = 0; h < nkv; ++h)
            for (int64_t j = 0; j < nkeys; ++j) {
                const size_t kt0 = size_t(h * hd * c.cap + ops::key_index(j, 0, hd)), v0 = size_t((h * c.cap + j) * hd);
                for (int64_t d = 0; d < hd; ++d) k[size_t(d)] = c.kt[kt0 + size_t(d * ops::kKeyTile)];
                float* ks = &c.ks[size_t(h * c.cap + j)];
                float* vs = &c.vs[size_t(h * c.cap + j)];
                if (!ops::store_i8(k.data(), hd, c.kt8.data() + kt0, ops::kKeyTile, ks) ||
                    !ops::store_i8(c.v.data() + v0, hd, c.v8.data() + v0, 1, vs))
                    expect(false, "store_i8 of a finite vector", 1.0);
                for (int64_t d = 0; d < hd; ++d) {
                    c.kt[kt0 + size_t(d * ops::kKeyTile)] = *ks * float(c.kt8[kt0 + size_t(d * ops::kKeyTile)]);
                    c.v[v0 + size_t(d)] = *vs * float(c.v8[v0 + size_t(d)]);
                }
            }
    }
    return c;
}

// attend() / attend_normalized() over the cache's f32, f16 or int8 elements.
void attend(const Cache& c, int64_t kvh, const float* const* q, int64_t ng, int64_t k0, int64_t k1,
            ops::Partial out) {
    const size_t off = size_t(kvh * c.hd * c.cap);
    if (!c.kt8.empty())
        ops::attend(q, ng, c.kt8.data() + off, c.v8.data() + off, c.ks.data() + kvh * c.cap,
                    c.vs.data() + kvh * c.cap, k0, k1, c.hd, out);
    else if (c.kth.empty()) ops::attend(q, ng, c.kt.data() + off, c.v.data() + off, k0, k1, c.hd, out);
    else ops::attend(q, ng, c.kth.data() + off, c.vh.data() + off, k0, k1, c.hd, out);
}
void attend_normalized(const Cache& c, int64_t kvh, const float* const* q, int64_t ng, int64_t k0, int64_t k1,
                       float* const* out) {
    const size_t off = size_t(kvh * c.hd * c.cap);
    if (!c.kt8.empty())
        ops::attend_normalized(q, ng, c.kt8.data() + off, c.v8.data() + off, c.ks.data() + kvh * c.cap,
                               c.vs.data() + kvh * c.cap, k0, k1, c.hd, out);
    else if (c.kth.empty()) ops::attend_normalized(q, ng, c.kt.data() + off, c.v.data() + off, k0, k1, c.hd, out);
    else ops::attend_normalized(q, ng, c.kth.data() + off, c.vh.data() + off, k0, k1, c.hd, out);
}

// Scores of query q against keys [k0, k1) of KV head kvh, in double.
std::vector<double> scores(const Cache& c, int64_t kvh, const float* q, int64_t k0, int64_t k1) {
    std::vector<double> s(size_t(k1 - k0));
    for (int64_t j = k0; j < k1; ++j) {
        double acc = 0;
        for (int64_t d = 0; d < c.hd; ++d) acc += double(q[d]) * c.key(kvh, j, d);
        s[size_t(j - k0)] = acc;
    }
    return s;
}

// Causal GQA attention of m query rows at positions pos0 + i (q: [m, nh, hd], pre-scaled),
// scheduled as the CPU backend's prefill does (cpu/engine.cpp): HeadGroups units, attend_normalized per row.
void test_attention(int64_t nh, int64_t nkv, int64_t hd, int64_t m, int64_t pos0, int kind) {
    const Cache c = make_cache(nkv, hd, pos0 + m, kind);
    const std::vector<float> q = randn(size_t(m * nh * hd), 2.0f / std::sqrt(float(hd)));
    std::vector<float> out(q.size(), NAN);
    const ops::HeadGroups hg(nh, nkv, hd);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t unit = 0; unit < hg.units; ++unit) {
            const ops::HeadGroups::Unit u = hg.unit(unit);
            const float* qp[ops::kMaxGroup];
            float* op[ops::kMaxGroup];
            for (int64_t g = 0; g < u.ng; ++g) {
                qp[g] = q.data() + (i * nh + u.head0 + g) * hd;
                op[g] = out.data() + (i * nh + u.head0 + g) * hd;
            }
            attend_normalized(c, u.kvh, qp, u.ng, 0, pos0 + i + 1, op);
        }
    std::vector<double> ref(q.size());
    const int64_t G = nh / nkv;
    for (int64_t i = 0; i < m; ++i)
        for (int64_t h = 0; h < nh; ++h) {
            const int64_t kvh = h / G;  // GQA: query head h reads KV head h / G
            std::vector<double> s = scores(c, kvh, q.data() + (i * nh + h) * hd, 0, pos0 + i + 1);
            const double mx = *std::max_element(s.begin(), s.end());
            double l = 0;
            for (auto& x : s) l += (x = std::exp(x - mx));
            for (int64_t d = 0; d < hd; ++d) {
                double o = 0;
                for (size_t j = 0; j < s.size(); ++j) o += s[j] * c.v[size_t((kvh * c.cap + int64_t(j)) * hd + d)];
                ref[size_t((i * nh + h) * hd + d)] = o / l;
            }
        }
    const double err = nerr(out.data(), ref);
    char tag[160];
    std::snprintf(tag, sizeof tag, "attention nh=%lld nkv=%lld hd=%lld (group %lld) m=%lld pos0=%lld %s", (long long)nh,
                  (long long)nkv, (long long)hd, (long long)hg.gb, (long long)m, (long long)pos0, kv_name(kind));
    expect(err < 1e-5, tag, err);
}

// attend()'s unnormalized partial over a key range [k0, k1) (decode splits): m = the max
// score, l = Σ e^(s - m), acc = Σ e^(s - m) v.
void test_attend_partial(int64_t ng, int64_t hd, int64_t k0, int64_t k1, int kind) {
    const Cache c = make_cache(1, hd, k1, kind);
    const std::vector<float> q = randn(size_t(ng * hd), 2.0f / std::sqrt(float(hd)));
    std::vector<float> acc(size_t(ng * hd), NAN), mm(size_t(ng), NAN), ll(size_t(ng), NAN);
    const float* qp[ops::kMaxGroup];
    for (int64_t g = 0; g < ng; ++g) qp[g] = q.data() + g * hd;
    attend(c, 0, qp, ng, k0, k1, ops::Partial{acc.data(), mm.data(), ll.data()});
    double em = 0, el = 0;
    std::vector<double> aref(acc.size());
    for (int64_t g = 0; g < ng; ++g) {
        std::vector<double> s = scores(c, 0, q.data() + g * hd, k0, k1);
        const size_t jmax = size_t(std::max_element(s.begin(), s.end()) - s.begin());
        const double mx = s[jmax];
        // A float dot product's rounding error scales with the sum of its terms' magnitudes.
        double mag = 0;
        for (int64_t d = 0; d < hd; ++d) mag += std::fabs(double(q[size_t(g * hd + d)]) * c.key(0, k0 + int64_t(jmax), d));
        double l = 0;
        for (auto& x : s) l += (x = std::exp(x - mx));
        for (int64_t d = 0; d < hd; ++d) {
            double o = 0;
            for (size_t j = 0; j < s.size(); ++j) o += s[j] * c.v[size_t((k0 + int64_t(j)) * hd + d)];
            aref[size_t(g * hd + d)] = o;
        }
        em = std::max(em, std::isfinite(mm[size_t(g)]) ? std::fabs(mm[size_t(g)] - mx) / std::max(1.0, mag)
                                                       : INFINITY);
        el = std::max(el, std::isfinite(ll[size_t(g)]) ? std::fabs(ll[size_t(g)] - l) / l : INFINITY);
    }
    const double ea = nerr(acc.data(), aref);
    expect(em < 1e-6 && el < 1e-5 && ea < 1e-5,
           "attend partial ng=" + std::to_string(ng) + " hd=" + std::to_string(hd) + " keys [" + std::to_string(k0) +
               ", " + std::to_string(k1) + ") (max, sum, accumulator) " + kv_name(kind),
           std::max({em, el, ea}));
}

// store_i8 (how keys and values enter an int8 cache): scale = max |x| / 127, codes within
// half a step of x / scale (|code| <= 127, the largest element at +-127), zeros with scale 0
// for a zero vector, and false (zeros stored) for a NaN or an infinity.
void test_store_i8(int64_t n, int64_t stride) {
    std::vector<float> x = randn(size_t(n), 3.0f);
    std::vector<int8_t> got(size_t(n * stride), 99);
    float scale = NAN;
    const bool ok = ops::store_i8(x.data(), n, got.data(), stride, &scale);
    double amax = 0;
    for (float v : x) amax = std::max(amax, std::fabs(double(v)));
    double err = std::fabs(double(scale) - amax / 127) / (amax / 127);
    bool top = false;
    for (int64_t i = 0; i < n; ++i) {
        const int q = got[size_t(i * stride)];
        err = std::max(err, std::fabs(q - double(x[size_t(i)]) / double(scale)) - 0.5 + 1e-9 > 0 ? 1.0 : 0.0);
        top = top || std::abs(q) == 127;
        if (std::abs(q) > 127) err = 1;
    }
    std::vector<float> z(size_t(n), 0.0f);
    const bool zero_ok = ops::store_i8(z.data(), n, got.data(), stride, &scale) && scale == 0.0f &&
                         got[0] == 0 && got[size_t((n - 1) * stride)] == 0;
    // A vector too small for a finite 127 / amax (here 1e-37 and a zero): zeros, scale 0 —
    // not a NaN code for the zero and ±127 for the rest.
    std::vector<float> tiny(size_t(n), 0.0f);
    tiny[size_t(n - 1)] = -1e-37f;
    const bool tiny_ok = ops::store_i8(tiny.data(), n, got.data(), stride, &scale) && scale == 0.0f &&
                         got[0] == 0 && got[size_t((n - 1) * stride)] == 0;
    x[size_t(n / 2)] = NAN;
    const bool nan_refused = !ops::store_i8(x.data(), n, got.data(), stride, &scale) && got[size_t(n / 2 * stride)] == 0;
    x[size_t(n / 2)] = -INFINITY;
    const bool inf_refused = !ops::store_i8(x.data(), n, got.data(), stride, &scale);
    expect(ok && top && err < 1e-6 && zero_ok && tiny_ok && nan_refused && inf_refused,
           "store_i8 n=" + std::to_string(n) + " stride=" + std::to_string(stride) +
               " (scale, rounding, range, zeros, a vector below 1e-30 as zeros, NaN / inf refused)",
           err);
}

// store_f16 (how keys and values enter an f16 cache) against the scalar RNE conversion, at
// strides 1 (values) and kKeyTile (keys): ties, subnormals, the largest half, overflow.
void test_store_f16(int64_t n, int64_t stride) {
    std::vector<float> x = randn(size_t(n), 100.0f);
    const float special[] = {0.0f, -0.0f, 1.0f + 1.0f / 2048, 1.0f + 3.0f / 2048, 3e-6f, -6.1e-5f, 5.96e-8f,
                             2.9e-8f, 65504.0f, 65519.99f, -65519.0f, 1e-30f};
    for (size_t i = 0; i < sizeof special / sizeof special[0] && i < x.size(); ++i) x[i] = special[i];
    std::vector<ops::half> got(size_t(n * stride), 0x7E01);
    bool ok = ops::store_f16(x.data(), n, got.data(), stride);
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += got[size_t(i * stride)] != f32_to_f16(x[size_t(i)]);
    for (int64_t i = 0; i < n * stride; ++i) bad += i % stride != 0 && got[size_t(i)] != 0x7E01;  // untouched
    // Beyond f16's range: stored as infinity, and reported. Already infinite or NaN: not
    // f16's doing, not reported (an f32 cache would hold the same).
    std::vector<float> y = x;
    y[size_t(n / 2)] = -65520.0f;
    const bool over = !ops::store_f16(y.data(), n, got.data(), stride) && got[size_t(n / 2 * stride)] == 0xFC00;
    y[size_t(n / 2)] = INFINITY;
    y[size_t(n - 1)] = NAN;
    const bool inf_ok = ops::store_f16(y.data(), n, got.data(), stride) && got[size_t(n / 2 * stride)] == 0x7C00;
    expect(ok && bad == 0 && over && inf_ok,
           "store_f16 n=" + std::to_string(n) + " stride=" + std::to_string(stride) + " (RNE, range)", double(bad));
}

// ---- SwiGLU ----------------------------------------------------------------------------------------

void test_swiglu(int64_t n) {
    std::vector<float> g = randn(size_t(n), 4.0f), u = randn(size_t(n));
    if (n >= 6) {  // the tails: e^-x overflows a float for x < -88.7, and silu(-100) is ~-4e-42
        g[0] = -100.0f;
        g[1] = 100.0f;
        g[2] = 0.0f;
        g[3] = -20.0f;
        g[4] = 20.0f;
        g[5] = -1e-30f;
    }
    std::vector<double> ref(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) ref[size_t(i)] = double(g[size_t(i)]) / (1.0 + std::exp(-double(g[size_t(i)]))) * u[size_t(i)];
    std::vector<float> y(size_t(n), NAN);
    ops::swiglu(g.data(), u.data(), n, y.data());
    double err = nerr(y.data(), ref);
    double esilu = 0;  // silu alone, relative per element (every element, tiny ones included)
    for (int64_t i = 0; i < n; ++i) {
        const double want = double(g[size_t(i)]) / (1.0 + std::exp(-double(g[size_t(i)])));
        const double got = ops::silu(g[size_t(i)]);
        if (std::fabs(want) >= double(std::numeric_limits<float>::min()))
            esilu = std::max(esilu, std::fabs(got - want) / std::fabs(want));
        else
            esilu = std::max(esilu, std::fabs(got - want) / double(std::numeric_limits<float>::min()));
    }
    ops::swiglu(g.data(), u.data(), n, g.data());  // in place (y aliases g)
    err = std::max(err, nerr(g.data(), ref));
    expect(err < 2e-7 && esilu < 1e-7, "swiglu n=" + std::to_string(n) + " (and silu, in place)", std::max(err, esilu));
}

// GeGLU (Gemma): gelu_tanh(g) · u against float64 math; the vector tanh (8 lanes, then a
// scalar tail) and the edges: 0, tiny, the tanh saturation both ways, NaN and inf propagation.
void test_geglu_tanh(int64_t n) {
    std::vector<float> g = randn(size_t(n), 3.0f), u = randn(size_t(n));
    const float edges[] = {0.0f, -1e-30f, 1e-30f, 20.0f, -20.0f, 100.0f, -100.0f, 3e-4f, -3e-4f, 1.5f, -1.5f};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0] && i < size_t(n); ++i) g[i] = edges[i];
    const double beta = std::sqrt(2.0 / M_PI);
    std::vector<double> ref(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        const double x = g[size_t(i)];
        ref[size_t(i)] = 0.5 * x * (1.0 + std::tanh(beta * (x + 0.044715 * x * x * x))) * u[size_t(i)];
    }
    std::vector<float> y(size_t(n), NAN);
    ops::geglu_tanh(g.data(), u.data(), n, y.data());
    double err = nerr(y.data(), ref);
    // Per element, relative to max(|ref|, |x · u|): a few float roundings of GELU's own steps.
    double elem = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double scale = std::max(std::fabs(ref[size_t(i)]), std::fabs(double(g[size_t(i)]) * u[size_t(i)]));
        if (scale > 0) elem = std::max(elem, std::fabs(y[size_t(i)] - ref[size_t(i)]) / scale);
        else elem = std::max(elem, std::fabs(double(y[size_t(i)])));
    }
    ops::geglu_tanh(g.data(), u.data(), n, g.data());  // in place (y aliases g)
    err = std::max(err, nerr(g.data(), ref));
    expect(err < 1e-6 && elem < 2e-6, "geglu_tanh n=" + std::to_string(n) + " (in place)", std::max(err, elem));
    if (n >= 9) {  // NaN and +inf propagate from any lane, vector or tail
        std::vector<float> x(size_t(n), 1.0f), w(size_t(n), 2.0f), out(size_t(n), 0.0f);
        x[3] = NAN;
        x[5] = INFINITY;
        x[size_t(n - 1)] = INFINITY;
        ops::geglu_tanh(x.data(), w.data(), n, out.data());
        expect(std::isnan(out[3]) && std::isinf(out[5]) && out[5] > 0 && std::isinf(out[size_t(n - 1)]) &&
                   out[size_t(n - 1)] > 0 && std::isfinite(out[0]),
               "geglu_tanh n=" + std::to_string(n) + ": NaN and inf propagate", 0.0);
    }
}

// Gemma 2's soft-cap, cap · tanh(x / cap), against float64: scores and logits from tiny to
// saturated, both signs; the error bound is absolute in units of cap (the tanh's quotient near
// 0) plus a few ulps of the result. NaN and inf propagate (inf → ±cap), in the padded tail too.
// And the scalar gelu_tanh (the generic kernels' GeGLU epilogue) agrees with geglu_tanh's lanes.
void test_softcap(int64_t n, float cap) {
    std::vector<float> x = randn(size_t(n), 2.0f * cap);
    const float edges[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-3f, -1e-3f, 0.5f * cap, 3.0f * cap, -3.0f * cap, 100.0f * cap};
    for (size_t i = 0; i < sizeof edges / sizeof edges[0] && i < size_t(n); ++i) x[i] = edges[i];
    std::vector<float> y = x;
    ops::softcap(y.data(), n, cap);
    double err = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double ref = cap * std::tanh(double(x[size_t(i)]) / cap);
        err = std::max(err, std::fabs(y[size_t(i)] - ref) / (2e-7 * cap + 4e-7 * std::fabs(ref)));
    }
    expect(err <= 1.0, "softcap n=" + std::to_string(n) + " cap=" + std::to_string(cap) + " (error / bound)", err);
    if (n >= 9) {
        std::vector<float> z(size_t(n), 1.0f);
        z[2] = NAN;
        z[4] = INFINITY;
        z[size_t(n - 1)] = -INFINITY;
        ops::softcap(z.data(), n, cap);
        expect(std::isnan(z[2]) && z[4] == cap && z[size_t(n - 1)] == -cap && std::isfinite(z[0]),
               "softcap n=" + std::to_string(n) + ": NaN stays, inf gives the cap", 0.0);
    }
    std::vector<float> ones(size_t(n), 1.0f), g(static_cast<size_t>(n));
    ops::geglu_tanh(x.data(), ones.data(), n, g.data());
    double differ = 0;  // the same formula; FMA contraction may differ between the two builds
    for (int64_t i = 0; i < n; ++i) {
        const double a = ops::gelu_tanh(x[size_t(i)]), b = g[size_t(i)];
        differ = std::max(differ, std::fabs(a - b) / std::max(1e-30, double(std::fabs(x[size_t(i)]))));
    }
    expect(differ < 1e-6, "gelu_tanh n=" + std::to_string(n) + ": the scalar one as geglu_tanh's lanes", differ);
}

}  // namespace

int main() {
    for (int64_t n : {1, 7, 16, 96, 576, 2049}) {
        test_rmsnorm(n, false);
        test_rmsnorm(n, true);
    }
    for (int64_t hd : {64, 128}) {
        test_rope_inv_freq(hd, 10000.0, RopeScaling::NONE);
        test_rope_inv_freq(hd, 500000.0, RopeScaling::NONE);
        test_rope_inv_freq(hd, 10000.0, RopeScaling::LINEAR);
        test_rope_inv_freq(hd, 500000.0, RopeScaling::LLAMA3);
        for (int64_t pos : {0, 1, 37, 4095, 131071}) test_rope(hd, 3, pos, pos % 2 ? 1.0f : 1.0f / std::sqrt(float(hd)));
    }
    // GQA shapes: MHA, groups of 2..8, a group of 16 split in two, odd groups (3, 5, 7: AVX2's
    // value passes take 3 heads where 3 are left, else 2); head_dim 32, 64, 96, 128 (the
    // register-blocked paths) and 80 (the generic one).
    const int64_t shapes[][3] = {{4, 4, 64}, {8, 2, 64}, {32, 4, 64}, {16, 1, 64}, {9, 3, 32}, {10, 2, 64},
                                 {14, 2, 128}, {6, 2, 128}, {32, 8, 128}, {4, 2, 96}, {4, 2, 80}};
    // Each over an f32 cache, an f16 one and an int8 one (against the keys and values those
    // caches stand for: f16-rounded, or int8 codes times their scales).
    for (int kind : {kF32, kF16, kI8})
        for (const auto& sh : shapes) {
            test_attention(sh[0], sh[1], sh[2], 1, 0, kind);     // one key
            test_attention(sh[0], sh[1], sh[2], 1, 300, kind);   // decode at 300
            test_attention(sh[0], sh[1], sh[2], 20, 0, kind);    // prefill, causal
            test_attention(sh[0], sh[1], sh[2], 70, 60, kind);   // prefill after a cached prefix, across blocks
        }
    for (int kind : {kF32, kF16, kI8})
        for (int64_t hd : {64, 128})
            for (int64_t ng : {1, 3, 5, 8}) {
                test_attend_partial(ng, hd, 0, 64, kind);
                test_attend_partial(ng, hd, 128, 200, kind);
                test_attend_partial(ng, hd, 5, 6, kind);
                test_attend_partial(ng, hd, 13, 150, kind);  // starts inside a tile, crosses block and tile ends
                test_attend_partial(ng, hd, 64, 128, kind);  // exactly one aligned block
            }
    for (int64_t n : {7, 8, 64, 1001})
        for (int64_t stride : {int64_t(1), ops::kKeyTile}) test_store_f16(n, stride);
    for (int64_t n : {1, 64, 128})
        for (int64_t stride : {int64_t(1), ops::kKeyTile}) test_store_i8(n, stride);
    for (int64_t n : {1, 6, 1000}) test_swiglu(n);
    for (int64_t n : {1, 7, 8, 11, 17, 4864 + 3}) test_geglu_tanh(n);
    for (int64_t n : {1, 9, 64, 151936 + 5})
        for (float cap : {50.0f, 30.0f, 1.0f}) test_softcap(n, cap);
    std::printf("%d passed, %d failed\n", g_pass, g_fail);
    return g_fail ? 1 : 0;
}
