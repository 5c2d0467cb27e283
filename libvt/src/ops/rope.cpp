#include "ops/rope.h"

#include <cmath>

namespace vt {
namespace ops {

namespace {

// base ** (arange(0, dim, 2).float() / dim) over the rotary dims, as transformers computes it in
// float32 (each float32 op reproduced by computing in double and rounding to float).
std::vector<float> rope_pos_freqs(const LlamaConfig& c, double theta) {
    const int64_t rot = c.rotary_width(), half = rot / 2;
    const float base = float(theta);
    std::vector<float> p(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i)
        p[size_t(i)] = float(std::pow(double(base), double(float(2 * i) / float(rot))));
    return p;
}

std::vector<float> rope_pos_freqs(const LlamaConfig& c) { return rope_pos_freqs(c, c.rope_theta); }

}  // namespace

std::vector<float> rope_inv_freq(const LlamaConfig& c) {
    // transformers (float32 tensors throughout): inv_freq = 1 / base ** (arange(0, dim, 2) / dim)
    const int64_t rot = c.rotary_width();  // partial_rotary_factor's dims
    const int64_t half = rot / 2;
    double theta = c.rope_theta;
    if (c.rope.kind == RopeScaling::DYNAMIC) {
        // _compute_dynamic_ntk_parameters at __init__ (seq_len None: max_position_embeddings),
        // in Python floats: base · ((factor · M / M) − (factor − 1)) ** (dim / (dim − 2)), which is
        // base for most factors
        const double M = double(c.max_position_embeddings), f = c.rope.factor, d = double(rot);
        theta = theta * std::pow((f * M / M) - (f - 1), d / (d - 2));
    }
    const std::vector<float> pos_freqs = rope_pos_freqs(c, theta);
    std::vector<float> inv(static_cast<size_t>(half));
    for (int64_t i = 0; i < half; ++i) inv[size_t(i)] = 1.0f / pos_freqs[size_t(i)];
    if (c.rope.kind == RopeScaling::YARN) {
        // _compute_yarn_parameters: a ramp between the interpolated (1 / (factor · p)) and the
        // extrapolated (1 / p) frequencies over the dims [low, high] of the correction range.
        const double dim = double(rot), b = c.rope_theta, orig = double(c.rope.original_max_position_embeddings);
        auto corr_dim = [&](double turns) { return (dim * std::log(orig / (turns * 2 * M_PI))) / (2 * std::log(b)); };
        double low = corr_dim(c.rope.beta_fast), high = corr_dim(c.rope.beta_slow);
        if (c.rope.truncate) {
            low = std::floor(low);
            high = std::ceil(high);
        }
        low = std::max(low, 0.0);
        high = std::min(high, dim - 1);
        if (low == high) high += 0.001;
        const float lo = float(low), span = float(high - low), factor = float(c.rope.factor);
        for (int64_t i = 0; i < half; ++i) {
            const float p = pos_freqs[size_t(i)];
            const float extra = 1.0f / p, interp = 1.0f / (factor * p);
            const float ramp = std::min(1.0f, std::max(0.0f, (float(i) - lo) / span));
            const float ef = 1.0f - ramp;  // the extrapolation's share
            inv[size_t(i)] = interp * (1.0f - ef) + extra * ef;
        }
    } else if (c.rope.kind == RopeScaling::LONGROPE) {
        // _compute_longrope_parameters: 1 / (ext_factor · base ** (2i / dim)), short factors.
        for (int64_t i = 0; i < half; ++i)
            inv[size_t(i)] = 1.0f / (float(c.rope.short_factor[size_t(i)]) * pos_freqs[size_t(i)]);
    }
    if (c.rope.kind == RopeScaling::PROPORTIONAL) {
        // _compute_proportional_rope_parameters: the pairs past rope_angles at frequency 0 (not
        // rotated), every frequency divided by factor
        for (int64_t i = c.rope_angles; i < half; ++i) inv[size_t(i)] = 0.0f;
        for (auto& f : inv) f = f / float(c.rope.factor);
    } else if (c.rope.kind == RopeScaling::LINEAR) {
        for (auto& f : inv) f = f / float(c.rope.factor);
    } else if (c.rope.kind == RopeScaling::LLAMA3) {
        // _compute_llama3_parameters
        const float factor = float(c.rope.factor);
        const float lo = float(c.rope.low_freq_factor), hi = float(c.rope.high_freq_factor);
        const float old_ctx = float(c.rope.original_max_position_embeddings);
        const float low_freq_wavelen = old_ctx / lo;
        const float high_freq_wavelen = old_ctx / hi;
        const float two_pi = float(2 * M_PI);
        for (auto& f : inv) {
            const float wavelen = two_pi / f;
            float v = wavelen > low_freq_wavelen ? f / factor : f;
            const float smooth = (old_ctx / wavelen - lo) / (hi - lo);
            const float smoothed = (1 - smooth) * v / factor + smooth * v;
            const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
            f = medium ? smoothed : v;
        }
    }
    return inv;
}

std::vector<float> rope_inv_freq_dynamic(const LlamaConfig& c, int64_t seq_len) {
    // dynamic_rope_update: seq_len = max(position_ids) + 1 as an int64 tensor, then in
    // _compute_dynamic_ntk_parameters (float32 tensor ops; the exponent a Python float, which
    // torch's pow of a float32 tensor by a scalar takes in double and rounds to float32):
    //   seq_len = maximum(seq_len, M)
    //   base = base * ((factor * seq_len / M) - (factor - 1)) ** (dim / (dim - 2))
    //   inv_freq = 1.0 / (base ** (arange(0, dim, 2).float() / dim))
    const int64_t rot = c.rotary_width();
    const int64_t M = c.max_position_embeddings;
    const int64_t s = std::max(seq_len, M);
    float t = float(c.rope.factor) * float(s);
    t = t / float(M);
    t = t - float(c.rope.factor - 1.0);
    const float p = float(std::pow(double(t), double(rot) / double(rot - 2)));
    const float base = float(c.rope_theta) * p;
    std::vector<float> inv = rope_pos_freqs(c, double(base));
    for (float& f : inv) f = 1.0f / f;
    return inv;
}

// rope_inv_freq above is compiled as config.cpp compiled it (no FMA contraction: it
// reproduces float32 steps); the rotation below as forward.cpp (now cpu/engine.cpp) compiled it.
#include "ops/cpu_clones.h"

std::vector<float> rope_inv_freq_long(const LlamaConfig& c) {
    if (c.rope.kind != RopeScaling::LONGROPE) return {};
    std::vector<float> inv = rope_pos_freqs(c);
    for (size_t i = 0; i < inv.size(); ++i) inv[i] = 1.0f / (float(c.rope.long_factor[i]) * inv[i]);
    return inv;
}

float rope_attention_scale(const LlamaConfig& c) {
    if (c.rope.kind != RopeScaling::YARN && c.rope.kind != RopeScaling::LONGROPE) return 1.0f;
    return float(c.rope.attention_factor);
}

void rope_angles(const float* inv_freq, int64_t pos, int64_t hd, float* cs, float scale) {
    const int64_t half = hd / 2;
    for (int64_t k = 0; k < half; ++k) {
        const double a = double(pos) * double(inv_freq[k]);
        cs[k] = float(std::cos(a));
        cs[half + k] = float(std::sin(a));
    }
    if (scale != 1.0f)
        for (int64_t k = 0; k < hd - hd % 2; ++k) cs[k] *= scale;
}

VT_CLONES void rope(float* __restrict x, int64_t heads, int64_t hd, const float* __restrict cs, float scale,
                    int64_t rot) {
    if (rot <= 0) rot = hd;
    const int64_t half = rot / 2;
    const float* c = cs;
    const float* s = cs + half;
    for (int64_t h = 0; h < heads; ++h) {
        float* a = x + h * hd;
        float* b = a + half;
        for (int64_t i = 0; i < half; ++i) {
            const float x1 = a[i], x2 = b[i];
            a[i] = (x1 * c[i] - x2 * s[i]) * scale;
            b[i] = (x2 * c[i] + x1 * s[i]) * scale;
        }
        if (scale != 1.0f)  // the dims partial rotary embeddings leave unrotated
            for (int64_t i = rot; i < hd; ++i) a[i] *= scale;
    }
}

}  // namespace ops
}  // namespace vt
