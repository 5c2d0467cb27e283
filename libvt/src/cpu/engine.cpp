// The CPU backend (backend.h): the forward pass on the CPU, for every family of family.h (the
// Llama block plus the features LlamaConfig resolves: biases, q/k norms, sliding windows,
// branches taken per model, not per element). One function runs m tokens (a prefill chunk, a
// decoded token, or one token of each session of a batch) through embedding -> blocks -> final
// norm -> lm_head, over preallocated session state. The linears are vt::linear (quant.h), the
// per-token ops are in ops/ (RMSNorm, RoPE, attention); this file schedules them over rows,
// heads and threads. Validation, lengths and the token choice are the session layer's
// (session.cpp).
#include <cstdlib>

#include "backend.h"
#include "weights.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "family.h"
#include "half.h"
#include "memory.h"
#include "ops/attention.h"
#include "ops/rmsnorm.h"
#include "ops/rope.h"
#include "ops/swiglu.h"
#include "quant.h"
#include "threadpool.h"

#include "ops/cpu_clones.h"  // FMA contraction for the loops here too (the decode merge)

namespace vt {

namespace {

struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
};
// 64-byte aligned, uninitialized (a std::vector would zero-fill the whole KV cache).
using ByteArray = std::unique_ptr<uint8_t[], FreeDeleter>;

// A KV cache array: from 4 MB on, on transparent huge pages (decode attention streams it
// as the GEMVs stream the weights; memory.h's alloc_buffer).
ByteArray kv_array(size_t bytes) {
    void* p = alloc_buffer(bytes);
    if (!p) throw std::bad_alloc();
    return ByteArray(static_cast<uint8_t*>(p));
}

// One session's KV cache and preallocated scratch. P = positions the session may hold,
// R = scratch rows.
struct CpuSession final : BackendSession {
    const ModelWeights* model = nullptr;
    int64_t max_tokens = 0;  // P

    // KV cache, grown geometrically up to max_tokens (never per token). Keys are stored in
    // transposed tiles of 16 positions (ops::key_index) so the scores q·K of one query
    // vectorize over positions and stream contiguous memory. Elements are f16 (ops::half),
    // f32 or int8, the model's kv_cache_dtype (vt.h); keys<T>() / values<T>() give them typed.
    // An int8 cache also holds one f32 scale per position and KV head for the key and one for
    // the value (ops::store_i8). Not zero-filled: only positions below the session's length
    // are ever read.
    int32_t kv_dtype = VT_DTYPE_F16;
    int64_t kv_cap = 0;          // positions allocated (a multiple of ops::kKeyTile)
    int64_t len = 0;             // positions the cache holds (for growing it)
    ByteArray kt;                // [L, KV, kv_cap / 16, HD, 16]  keys (after RoPE), tiled
    ByteArray v;                 // [L, KV, kv_cap, HD]  values
    ByteArray ks, vs;            // int8: [L, KV, kv_cap] f32 key / value scales (else empty)
    // LFM2's short-convolution layers hold no keys or values: L above counts the layers that
    // attend (kv_layers), each layer's slot in its own array is layer_slot[l]. A convolution
    // layer keeps B ⊙ x of every position instead (conv, [conv_layers, kv_cap, H], f32 with an
    // f32 KV cache, else f16): the kernel reads the last K of them, so truncating, copying a
    // prefix or decoding a batch works on it as on the KV cache, position by position.
    int64_t kv_layers = 0, conv_layers = 0;
    std::vector<int64_t> layer_slot;  // [L]
    ByteArray conv;
    int64_t conv_elem_bytes() const { return kv_dtype == VT_DTYPE_F32 ? 4 : 2; }
    uint8_t* conv_row(int64_t l, int64_t pos) const {
        const int64_t H = model->cfg.hidden_size;
        return conv.get() + size_t((layer_slot[size_t(l)] * kv_cap + pos) * H * conv_elem_bytes());
    }

    int64_t elem_bytes() const { return kv_dtype == VT_DTYPE_F32 ? 4 : kv_dtype == VT_DTYPE_F16 ? 2 : 1; }
    bool scaled() const { return kv_dtype == VT_DTYPE_I8; }
    // The keys (key_index) and the values of layer l, KV head h: T is the cache's element type.
    template <class T>
    T* keys(int64_t l, int64_t h) const { return reinterpret_cast<T*>(kt.get()) + head_offset(l, h); }
    template <class T>
    T* values(int64_t l, int64_t h) const { return reinterpret_cast<T*>(v.get()) + head_offset(l, h); }
    size_t head_offset(int64_t l, int64_t h) const {
        const LlamaConfig& c = model->cfg;
        return size_t((layer_slot[size_t(l)] * c.num_kv_heads + h) * c.head_dim * kv_cap);
    }
    // An int8 cache's key / value scales of layer l, KV head h ([kv_cap]).
    float* key_scales(int64_t l, int64_t h) const {
        return reinterpret_cast<float*>(ks.get()) + (layer_slot[size_t(l)] * model->cfg.num_kv_heads + h) * kv_cap;
    }
    float* value_scales(int64_t l, int64_t h) const {
        return reinterpret_cast<float*>(vs.get()) + (layer_slot[size_t(l)] * model->cfg.num_kv_heads + h) * kv_cap;
    }

    // Scratch for up to `rows` tokens per pass (prefill runs in chunks of at most kPassRows).
    int64_t rows = 0;
    AlignedVec<float> x;      // [R, H]      residual stream
    AlignedVec<float> xn;     // [R, H]      normed input of a linear
    AlignedVec<float> qkv;    // [R, QKV]    q | k | v of each token
    AlignedVec<float> att;    // [R, NH·HD]  attention output
    AlignedVec<float> mlp;    // [R, I]      silu(gate) ⊙ up (Gemma: gelu_tanh(gate) ⊙ up)
    AlignedVec<float> tmp;    // [R, H]      o_proj / down_proj output
    AlignedVec<float> rope;   // [R, HD]     cos | sin of each token's position
    AlignedVec<float> rope_local;  // [R, HD] the same with Gemma 3's local base (else empty)
    AlignedVec<float> part;   // decode attention's per-split partial results (per row)
    // Mixture of experts (else empty): the rows an expert takes gathered, its output, the
    // router's probabilities, each row's chosen experts and weights, the rows per expert.
    AlignedVec<float> moe_x;        // [R, H]
    AlignedVec<float> moe_y;        // [R, H]
    AlignedVec<float> moe_prob;     // [R, E]
    std::vector<int32_t> moe_pick;  // [R, k] expert ids
    std::vector<float> moe_wt;      // [R, k] their weights
    std::vector<int32_t> moe_rows;  // [R·k] row·k + slot, grouped by expert
    std::vector<int32_t> moe_first; // [E + 1] each expert's start in moe_rows
    std::vector<int32_t> moe_fill;  // [E] cursors while grouping
    std::vector<float> moe_choice;  // [E] sigmoid_router: one row's choice scores
    std::vector<float> moe_group;   // [groups] their groups' scores
    AlignedVec<float> moe_h;        // [R, I_e] gpt-oss: the clamped SwiGLU of an expert's gate|up
    AlignedVec<float> ones;         // [I] ungated MLPs (Phi, Starcoder2): 1s, the "up" of ops::geglu_tanh's vector GELU
    // DeepSeek's latent attention (else empty): [q_a or q | c | k_pe] of each row, q's normed
    // LoRA, q, one head's input and output of W_uk / W_uv, the heads' values before o_proj.
    AlignedVec<float> mla_a;        // [R, qkv rows]
    AlignedVec<float> mla_qa;       // [R, q_lora]
    AlignedVec<float> mla_q;        // [R, NH·(nope + rope)]
    AlignedVec<float> mla_in;       // [R, max(nope, kv_lora)]
    AlignedVec<float> mla_out;      // [R, max(kv_lora, v)]
    AlignedVec<float> mla_o;        // [R, NH·v]
    // LFM2's short convolution (else empty): [B | C | x] of each row, then y = C ⊙ conv(B ⊙ x).
    AlignedVec<float> conv_in;      // [R, 3·H]
    AlignedVec<float> conv_y;       // [R, H]
    AlignedVec<float> attn_g;       // [R, NH] LFM3: the heads' output gates; [R, NH·HD] AFMoE's per dim (else empty)

    void forward(const int32_t* tokens, int64_t n, int64_t pos, Logits out, float* logits, Pick pick,
                 Picked* picked) override;
    void reserve(int64_t len, int64_t needed) override;
    void copy_prefix(const BackendSession& src, int64_t n) override;
};

using ops::HeadGroups;
using ops::kKeyBlock;
using ops::kMaxGroup;

constexpr int64_t kQueryBlock = 16;   // prefill queries per attention task
constexpr int64_t kMaxSplits = 16;    // decode: key-range splits per head group
// Passes of at most this many rows of one session (speculative decoding's verify, a short
// prompt) attend as decode rows do: each row's keys split across tasks as needed, so a few
// KV heads still keep every thread busy (prefill's tasks are query blocks × head groups:
// SmolLM2's 3 KV heads are 3 tasks for 2 threads).
constexpr int64_t kDecodeAttentionRows = 16;

// Work below this many multiply-adds runs on the calling thread: a parallel region costs
// microseconds, about what 30k MACs take on one core.
constexpr int64_t kParallelMacs = 32768;

// The rows of one forward pass: row i is token tokens[i] of session sess[i] (batched decode)
// or of `s` (prefill / decode), at position pos(i). `s` owns the scratch buffers.
struct Pass {
    CpuSession& s;
    const int32_t* tokens;     // [m]
    int64_t m;
    int64_t pos0;              // one session: positions pos0 .. pos0 + m - 1
    CpuSession* const* sess;   // batched decode: [m] one session per row; else null
    const int64_t* poss;       // batched decode: [m] the position of each row

    CpuSession& row(int64_t i) const { return sess ? *sess[i] : s; }
    int64_t pos(int64_t i) const { return sess ? poss[i] : pos0 + i; }
};

HeadGroups head_groups(const LlamaConfig& c) { return HeadGroups(c.num_heads, c.num_kv_heads, c.head_dim); }

// Floats of decode-attention partials per row: [units, splits, gb, HD + 2].
int64_t partial_floats(const LlamaConfig& c) {
    const HeadGroups hg = head_groups(c);
    return hg.units * kMaxSplits * hg.gb * (c.head_dim + 2);
}

// ops::attend / attend_normalized over KV head h of layer l of session s's cache, whose
// element type is T (an int8 cache passes its scales too).
template <class T>
void attend_cache(const CpuSession& s, int64_t l, int64_t h, const float* const* q, int64_t ng, int64_t k0,
                  int64_t k1, ops::Partial out, float softcap, const float* alibi) {
    const int64_t HD = s.model->cfg.head_dim;
    if constexpr (std::is_same<T, int8_t>::value)
        ops::attend(q, ng, s.keys<const T>(l, h), s.values<const T>(l, h), s.key_scales(l, h), s.value_scales(l, h),
                    k0, k1, HD, out, softcap, alibi);
    else
        ops::attend(q, ng, s.keys<const T>(l, h), s.values<const T>(l, h), k0, k1, HD, out, softcap, alibi);
}
template <class T>
void attend_cache_normalized(const CpuSession& s, int64_t l, int64_t h, const float* const* q, int64_t ng,
                             int64_t k0, int64_t k1, float* const* out, float softcap, const float* alibi) {
    const int64_t HD = s.model->cfg.head_dim;
    if constexpr (std::is_same<T, int8_t>::value)
        ops::attend_normalized(q, ng, s.keys<const T>(l, h), s.values<const T>(l, h), s.key_scales(l, h),
                               s.value_scales(l, h), k0, k1, HD, out, softcap, alibi);
    else
        ops::attend_normalized(q, ng, s.keys<const T>(l, h), s.values<const T>(l, h), k0, k1, HD, out, softcap, alibi);
}

// Decode attention for one layer: each row of the pass is one query per head over its own
// session's pos + 1 cached keys -> s.att row. Long ranges are split across threads and
// merged (flash-decoding), so 3 KV heads still keep 2+ cores busy.
// The first key position a query at `pos` attends in a layer with window `window` (0: all).
inline int64_t first_key(int64_t pos, int64_t window) { return window > 0 ? std::max<int64_t>(0, pos + 1 - window) : 0; }

template <class T>
void attention_decode(const Pass& p, int64_t layer) {
    CpuSession& s = p.s;
    const LlamaConfig& c = s.model->cfg;
    const int64_t window = c.layer_window[size_t(layer)];
    const float softcap = float(c.attn_softcap);
    const float* alibi = s.model->alibi_slopes.empty() ? nullptr : s.model->alibi_slopes.data();  // (Bloom)
    const int64_t NH = c.num_heads, KV = c.num_kv_heads, HD = c.head_dim;
    const int64_t QKV = (NH + 2 * KV) * HD;
    const HeadGroups hg = head_groups(c);
    const int64_t gb = hg.gb, units = hg.units;
    const int64_t R = p.m;
    const int64_t threads = num_threads();
    int64_t splits[VT_MAX_BATCH], per[VT_MAX_BATCH], first[VT_MAX_BATCH + 1], lo[VT_MAX_BATCH];
    first[0] = 0;
    int64_t macs = 0;
    for (int64_t r = 0; r < R; ++r) {
        lo[r] = first_key(p.pos(r), window);
        const int64_t nkeys = p.pos(r) + 1 - lo[r];
        int64_t sp = 1;
        if (nkeys >= 4 * kKeyBlock && threads > 1) {
            sp = std::min<int64_t>({kMaxSplits, (2 * threads + units * R - 1) / (units * R), nkeys / (2 * kKeyBlock)});
            sp = std::max<int64_t>(1, sp);
        }
        per[r] = ((nkeys + sp - 1) / sp + kKeyBlock - 1) / kKeyBlock * kKeyBlock;
        splits[r] = (nkeys + per[r] - 1) / per[r];
        first[r + 1] = first[r] + units * splits[r];
        macs += 2 * nkeys * NH * HD;
    }
    const int64_t tasks = first[R];
    const int64_t grain = macs < kParallelMacs ? tasks : 1;
    float* part = s.part.data();
    const AlignedVec<float>& sink_vec = s.model->layers[size_t(layer)].sinks;
    const float* sinks = sink_vec.empty() ? nullptr : sink_vec.data();
    const int64_t pstride = gb * (HD + 2);
    parallel_for_balanced(tasks, grain, [&](int64_t b, int64_t e, int) {
        int64_t r = 0;
        for (int64_t t = b; t < e; ++t) {
            while (t >= first[r + 1]) ++r;
            const int64_t local = t - first[r];
            const int64_t sp = local % splits[r];
            const HeadGroups::Unit u = hg.unit(local / splits[r]);
            const CpuSession& rs = p.row(r);
            const float* q[kMaxGroup];
            for (int64_t g = 0; g < u.ng; ++g) q[g] = s.qkv.data() + r * QKV + (u.head0 + g) * HD;
            float* pt = part + t * pstride;
            const ops::Partial out{pt, pt + gb * HD, pt + gb * HD + gb};
            const int64_t k0 = lo[r] + sp * per[r], k1 = std::min(p.pos(r) + 1, k0 + per[r]);
            attend_cache<T>(rs, layer, u.kvh, q, u.ng, k0, k1, out, softcap, alibi ? alibi + u.head0 : nullptr);
        }
    });
    // Merge the splits of each head: o = Σ_s e^(m_s - M) acc_s / Σ_s e^(m_s - M) l_s.
    for (int64_t r = 0; r < R; ++r) {
        float* att = s.att.data() + r * NH * HD;
        for (int64_t unit = 0; unit < units; ++unit) {
            const HeadGroups::Unit u = hg.unit(unit);
            const float* p0 = part + (first[r] + unit * splits[r]) * pstride;
            for (int64_t g = 0; g < u.ng; ++g) {
                float* o = att + (u.head0 + g) * HD;
                float M = -std::numeric_limits<float>::infinity();
                for (int64_t sp = 0; sp < splits[r]; ++sp) M = std::max(M, p0[sp * pstride + gb * HD + g]);
                // gpt-oss: the head's sink logit joins the denominator (and the max)
                const float sink = sinks ? sinks[u.head0 + g] : -std::numeric_limits<float>::infinity();
                M = std::max(M, sink);
                float L = sinks ? std::exp(sink - M) : 0.0f;
                for (int64_t d = 0; d < HD; ++d) o[d] = 0.0f;
                for (int64_t sp = 0; sp < splits[r]; ++sp) {
                    const float* pp = p0 + sp * pstride;
                    const float w = std::exp(pp[gb * HD + g] - M);
                    L += w * pp[gb * HD + gb + g];
                    for (int64_t d = 0; d < HD; ++d) o[d] += w * pp[g * HD + d];
                }
                const float inv_l = 1.0f / L;
                for (int64_t d = 0; d < HD; ++d) o[d] *= inv_l;
            }
        }
    }
}

// Prefill attention of rows [i0, m) of the pass (positions pos0 + i) for one layer -> s.att.
template <class T>
void attention_prefill(CpuSession& s, int64_t layer, int64_t i0, int64_t m, int64_t pos0) {
    const LlamaConfig& c = s.model->cfg;
    const int64_t NH = c.num_heads, KV = c.num_kv_heads, HD = c.head_dim;
    const int64_t QKV = (NH + 2 * KV) * HD;
    const HeadGroups hg = head_groups(c);
    const int64_t window = c.layer_window[size_t(layer)];
    const float softcap = float(c.attn_softcap);
    const float* alibi = s.model->alibi_slopes.empty() ? nullptr : s.model->alibi_slopes.data();  // (Bloom)
    const AlignedVec<float>& sink_vec = s.model->layers[size_t(layer)].sinks;
    const float* sinks = sink_vec.empty() ? nullptr : sink_vec.data();  // gpt-oss

    // Prefill: tasks = (query block, KV head, head group). Query blocks are visited in the
    // order 0, last, 1, last-1, ... so the contiguous halves parallel_for hands to each
    // thread carry equal causal work.
    const int64_t nqb = (m - i0 + kQueryBlock - 1) / kQueryBlock;
    const int64_t units = hg.units;
    const int64_t tasks = nqb * units;
    const int64_t macs = 2 * NH * HD * (m - i0) * (pos0 + m);
    const int64_t grain = macs < kParallelMacs ? tasks : 1;
    parallel_for(tasks, grain, [&](int64_t b, int64_t e, int) {
        for (int64_t t = b; t < e; ++t) {
            const int64_t k = t / units;
            const int64_t qb = (k % 2 == 0) ? k / 2 : nqb - 1 - k / 2;
            const HeadGroups::Unit u = hg.unit(t % units);
            const int64_t i1 = std::min(m, i0 + (qb + 1) * kQueryBlock);
            for (int64_t i = i0 + qb * kQueryBlock; i < i1; ++i) {
                const float* q[kMaxGroup];
                float* o[kMaxGroup];
                for (int64_t g = 0; g < u.ng; ++g) {
                    q[g] = s.qkv.data() + i * QKV + (u.head0 + g) * HD;
                    o[g] = s.att.data() + i * NH * HD + (u.head0 + g) * HD;
                }
                const int64_t k0 = first_key(pos0 + i, window), k1 = pos0 + i + 1;
                if (!sinks) {
                    attend_cache_normalized<T>(s, layer, u.kvh, q, u.ng, k0, k1, o, softcap, alibi ? alibi + u.head0 : nullptr);
                    continue;
                }
                // gpt-oss: o = Σ e^(s_j - M) v_j / (Σ e^(s_j - M) + e^(sink - M)), M = max(m, sink)
                alignas(64) float acc[ops::kAccFloats];
                float mx[kMaxGroup], l[kMaxGroup];
                attend_cache<T>(s, layer, u.kvh, q, u.ng, k0, k1, ops::Partial{acc, mx, l}, softcap,
                                alibi ? alibi + u.head0 : nullptr);
                for (int64_t g = 0; g < u.ng; ++g) {
                    const float sink = sinks[u.head0 + g], M = std::max(mx[g], sink);
                    const float w = std::exp(mx[g] - M), inv = w / (w * l[g] + std::exp(sink - M));
                    for (int64_t d = 0; d < HD; ++d) o[g][d] = acc[g * HD + d] * inv;
                }
            }
        }
    });
}

// ==== Session memory =====================================================================

void ensure_kv(CpuSession& s, int64_t needed) {
    if (needed <= s.kv_cap) return;
    const LlamaConfig& c = s.model->cfg;
    const int64_t L = s.kv_layers, KV = c.num_kv_heads, HD = c.head_dim;
    int64_t cap = std::max<int64_t>({needed, 2 * s.kv_cap, 64});
    cap = std::min(cap, s.max_tokens);
    cap = (cap + ops::kKeyTile - 1) / ops::kKeyTile * ops::kKeyTile;  // whole key tiles
    const int64_t eb = s.elem_bytes();
    ByteArray kt = kv_array(size_t(L * KV * HD * cap * eb));
    ByteArray v = kv_array(size_t(L * KV * cap * HD * eb));
    if (s.len > 0) {
        // A KV head's keys are whole tiles: the ones in use move as one run.
        const int64_t tiles = (s.len + ops::kKeyTile - 1) / ops::kKeyTile;
        for (int64_t lk = 0; lk < L * KV; ++lk) {
            std::memcpy(kt.get() + lk * HD * cap * eb, s.kt.get() + lk * HD * s.kv_cap * eb,
                        size_t(tiles * HD * ops::kKeyTile * eb));
            std::memcpy(v.get() + lk * cap * HD * eb, s.v.get() + lk * s.kv_cap * HD * eb, size_t(s.len * HD * eb));
        }
    }
    if (s.scaled()) {
        ByteArray ks(AlignedAllocator<uint8_t>().allocate(size_t(L * KV * cap) * sizeof(float)));
        ByteArray vs(AlignedAllocator<uint8_t>().allocate(size_t(L * KV * cap) * sizeof(float)));
        for (int64_t lk = 0; lk < L * KV && s.len > 0; ++lk) {
            std::memcpy(ks.get() + lk * cap * 4, s.ks.get() + lk * s.kv_cap * 4, size_t(s.len) * 4);
            std::memcpy(vs.get() + lk * cap * 4, s.vs.get() + lk * s.kv_cap * 4, size_t(s.len) * 4);
        }
        std::swap(s.ks, ks);
        std::swap(s.vs, vs);
    }
    if (s.conv_layers > 0) {  // (LFM2: B ⊙ x of the positions held, layer by layer)
        const size_t row = size_t(c.hidden_size * s.conv_elem_bytes());
        ByteArray cv = kv_array(size_t(s.conv_layers * cap) * row);
        for (int64_t k = 0; k < s.conv_layers && s.len > 0; ++k)
            std::memcpy(cv.get() + size_t(k * cap) * row, s.conv.get() + size_t(k * s.kv_cap) * row, size_t(s.len) * row);
        std::swap(s.conv, cv);
    }
    std::swap(s.kt, kt);
    std::swap(s.v, v);
    s.kv_cap = cap;
}

void ensure_rows(CpuSession& s, int64_t rows) {
    if (rows <= s.rows) return;
    const LlamaConfig& c = s.model->cfg;
    const int64_t H = c.hidden_size, NH = c.num_heads, KV = c.num_kv_heads, HD = c.head_dim;
    const int64_t QKV = (NH + 2 * KV) * HD;
    auto grow = [](AlignedVec<float>& a, int64_t n) { a.assign(size_t(n), 0.0f); };
    grow(s.x, rows * H);
    grow(s.xn, rows * H);
    grow(s.qkv, rows * QKV);
    grow(s.att, rows * NH * HD);
    grow(s.mlp, rows * c.mlp_width());
    if (c.num_experts > 0) {
        const int64_t k = c.experts_per_tok;
        grow(s.moe_x, rows * H);
        grow(s.moe_y, rows * H);
        grow(s.moe_prob, rows * c.num_experts);
        s.moe_pick.assign(size_t(rows * k), 0);
        s.moe_wt.assign(size_t(rows * k), 0.0f);
        s.moe_rows.assign(size_t(rows * k), 0);
        s.moe_first.assign(size_t(c.num_experts + 1), 0);
        s.moe_fill.assign(size_t(c.num_experts), 0);
        s.moe_choice.assign(size_t(c.num_experts), 0.0f);
        s.moe_group.assign(size_t(c.moe_groups), 0.0f);
        grow(s.moe_h, c.family && c.family->gpt_oss ? rows * c.moe_intermediate : 0);
    }
    if (c.mla) {
        const int64_t A = (c.mla_q_lora > 0 ? c.mla_q_lora : NH * (c.mla_nope + c.mla_rope)) + c.mla_kv_lora + c.mla_rope;
        grow(s.mla_a, rows * A);
        grow(s.mla_qa, rows * c.mla_q_lora);
        grow(s.mla_q, rows * NH * (c.mla_nope + c.mla_rope));
        grow(s.mla_in, rows * std::max(c.mla_nope, c.mla_kv_lora));
        grow(s.mla_out, rows * std::max(c.mla_kv_lora, c.mla_v));
        grow(s.mla_o, rows * NH * c.mla_v);
    }
    if (s.conv_layers > 0) {
        grow(s.conv_in, rows * 3 * H);
        grow(s.conv_y, rows * H);
    }
    grow(s.attn_g, c.attn_gate ? rows * NH * (c.attn_gate_per_dim ? HD : 1) : 0);
    grow(s.tmp, rows * H);
    if (c.family && ungated_mlp(*c.family)) s.ones.assign(size_t(c.intermediate_size), 1.0f);
    grow(s.rope, rows * HD);
    grow(s.rope_local, s.model->inv_freq_local.empty() ? 0 : rows * HD);
    s.rows = rows;
}

// Decode-attention partials for `rows` rows.
void ensure_part(CpuSession& s, int64_t rows) {
    const size_t need = size_t(rows * partial_floats(s.model->cfg));
    if (s.part.size() < need) s.part.assign(need, 0.0f);
}

// ==== The pass ===========================================================================

// The keys and values of one token at `pos` (kv: k | v, [2, KV, HD], after RoPE) into layer
// l of its session's cache.
void store_kv(CpuSession& s, int64_t l, int64_t pos, const float* kv) {
    const LlamaConfig& c = s.model->cfg;
    const int64_t KV = c.num_kv_heads, HD = c.head_dim;
    for (int64_t h = 0; h < KV; ++h) {
        const float* k = kv + h * HD;
        const float* vv = kv + (KV + h) * HD;
        const int64_t kpos = ops::key_index(pos, 0, HD);
        if (s.scaled()) {
            // int8 with a scale per position: a non-finite key or value has no scale.
            const bool ok = ops::store_i8(k, HD, s.keys<int8_t>(l, h) + kpos, ops::kKeyTile, s.key_scales(l, h) + pos) &&
                            ops::store_i8(vv, HD, s.values<int8_t>(l, h) + pos * HD, 1, s.value_scales(l, h) + pos);
            if (!ok)
                fail(VT_STATUS_UNSUPPORTED,
                     "layer %lld: a key or value of the token at position %lld is not finite; the int8 KV cache "
                     "cannot hold it (load the model with kv_cache_dtype F32 to see it propagate)",
                     (long long)l, (long long)pos);
        } else if (s.kv_dtype == VT_DTYPE_F16) {
            // A key or value f16 cannot hold would be infinite, its scores or weighted sum
            // NaN, and every later token wrong without a sign: refuse instead.
            const bool ok = ops::store_f16(k, HD, s.keys<ops::half>(l, h) + kpos, ops::kKeyTile) &&
                            ops::store_f16(vv, HD, s.values<ops::half>(l, h) + pos * HD, 1);
            if (!ok)
                fail(VT_STATUS_UNSUPPORTED,
                     "layer %lld: a key or value of the token at position %lld is beyond the range of the f16 KV "
                     "cache (largest finite f16: 65504); load the model with kv_cache_dtype F32 (pyvt: kv_cache=\"f32\")",
                     (long long)l, (long long)pos);
        } else {
            float* kt = s.keys<float>(l, h) + kpos;
            for (int64_t d = 0; d < HD; ++d) kt[d * ops::kKeyTile] = k[d];
            std::memcpy(s.values<float>(l, h) + pos * HD, vv, size_t(HD) * sizeof(float));
        }
    }
}

// x · w over n floats, in float32 with 8 partial sums (the router's logits).
inline float dot_f32(const float* x, const float* w, int64_t n) {
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; ++j) acc[j] += x[i + j] * w[i + j];
    for (; i < n; ++i) acc[i % 8] += x[i] * w[i];
    return ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
}

// A SwiGLU expert on n rows of x ([n, H]) -> y ([n, H]); s.mlp is its scratch.
void expert_mlp(CpuSession& s, const LayerWeights::Expert& e, const float* x, int64_t n, float* y) {
    const vt_linear_options lopt = vt_linear_default_options();
    if (!e.up) {  // gpt-oss: gate|up interleaved in one linear with its bias, the clamped SwiGLU
        const LlamaConfig& c = s.model->cfg;
        const int64_t I = c.moe_intermediate;
        float* gu = s.mlp.data();
        float* h = s.moe_h.data();
        linear(*e.gate, x, n, bias_or_null(e.gate_bias), lopt, gu);
        const float lim = float(c.swiglu_limit), alpha = float(c.swiglu_alpha);
        parallel_for(n * I, std::max<int64_t>(4096, n * I / 8), [&](int64_t b, int64_t end, int) {
            for (int64_t i = b; i < end; ++i) {
                const float g = std::min(gu[2 * i], lim);  // (NaN stays NaN, as torch's clamp)
                const float u = std::min(std::max(gu[2 * i + 1], -lim), lim);
                h[i] = (u + 1.0f) * (g / (1.0f + std::exp(-alpha * g)));
            }
        });
        linear(*e.down, h, n, bias_or_null(e.down_bias), lopt, y);
        return;
    }
    linear_swiglu(*e.gate, *e.up, x, n, nullptr, nullptr, lopt, s.mlp.data());
    linear(*e.down, s.mlp.data(), n, nullptr, lopt, y);
}

// x += d (d may be null), then out = (x − mean) · rsqrt(var + eps) · w + b, as torch's
// LayerNorm (biased variance; Phi).
void add_layernorm(float* x, const float* d, const float* w, const float* b, float eps, int64_t n, float* out) {
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        if (d) x[i] += d[i];
        sum += x[i];
    }
    const float mean = float(sum / double(n));
    double var = 0.0;
    for (int64_t i = 0; i < n; ++i) var += double(x[i] - mean) * double(x[i] - mean);
    const float r = 1.0f / std::sqrt(float(var / double(n)) + eps);
    for (int64_t i = 0; i < n; ++i) out[i] = (x[i] - mean) * r * w[i] + (b ? b[i] : 0.0f);
}

// The group limit of the DeepSeek lineage's routers on one row's choice scores ch ([E]): each
// of the moe_groups groups scored by the sum of its best two (DeepSeek-V3's sigmoid router) or
// by its best (DeepSeek-V2's softmax one: two_best false), the moe_topk_groups best groups kept
// (ties: the lower index), the other groups' scores set to `masked` (-inf; V2's masked_fill: 0).
// gs: [moe_groups] scratch.
void limit_groups(const LlamaConfig& c, float* ch, float* gs, bool two_best, float masked) {
    const int64_t G = c.moe_groups, n = c.num_experts / G;
    for (int64_t g = 0; g < G; ++g) {
        float a = -INFINITY, b = -INFINITY;  // the best two
        for (int64_t e = g * n; e < (g + 1) * n; ++e) {
            if (ch[e] > a) {
                b = a;
                a = ch[e];
            } else if (ch[e] > b) {
                b = ch[e];
            }
        }
        gs[g] = two_best ? a + b : a;
    }
    for (int64_t j = 0; j < c.moe_topk_groups; ++j) {  // mark the kept groups with +inf
        int64_t best = -1;
        for (int64_t g = 0; g < G; ++g)
            if (gs[g] != INFINITY && (best < 0 || gs[g] > gs[best])) best = g;
        gs[best] = INFINITY;
    }
    for (int64_t g = 0; g < G; ++g)
        if (gs[g] != INFINITY)
            for (int64_t e = g * n; e < (g + 1) * n; ++e) ch[e] = masked;
}

// PhiMoE's router (ModelFamily::sparsemixer) on one row's logits sc ([E], float32), as
// transformers' sparsemixer computes it in inference mode: the first expert is the argmax (ties:
// the lower index), its weight its softmax probability among the experts i that
// (max - sc_i) / max(|sc_i|, max) > jitter2 does not mask; the second the argmax of the others,
// its weight the same softmax over the others with their own max. pick[2], wt[2].
void sparsemixer_top2(const float* sc, int64_t E, float jitter2, int32_t* pick, float* wt) {
    int64_t taken = -1;
    for (int j = 0; j < 2; ++j) {
        int64_t best = -1;
        for (int64_t e = 0; e < E; ++e)
            if (e != taken && (best < 0 || sc[e] > sc[best])) best = e;
        const float top = sc[best];
        float sum = 0.0f;  // (the softmax's denominator over the unmasked: exp(sc - top); best's own is 1)
        for (int64_t e = 0; e < E; ++e) {
            if (e == taken) continue;
            const float factor = std::max(std::fabs(sc[e]), top);
            if ((top - sc[e]) / factor > jitter2) continue;  // (0 / 0 is NaN, not masked, as in torch)
            sum += std::exp(sc[e] - top);
        }
        pick[j] = int32_t(best);
        wt[j] = 1.0f / sum;
        taken = best;
    }
}

// The mixture-of-experts MLP of layer w on n rows of xn ([n, H]) -> out ([n, H]), as
// transformers computes it (Mixtral / Qwen2-MoE / Qwen3-MoE): softmax of the router's
// logits in float32, each row's top k experts (ties: the lower index), their weights
// renormalized to sum 1 when norm_topk, out = sum of weight · expert(x) in expert order;
// Qwen2-MoE adds sigmoid(shared_gate · x) · shared(x), GraniteMoeShared shared(x) (Cohere 2 MoE
// averages the two: moe_shared_average); gpt-oss's router adds its bias; PhiMoE's is
// sparsemixer_top2. Each expert runs once over the rows that chose it (gathered), so a prefill
// chunk reads each expert's weights once.
void moe_mlp(CpuSession& s, const LayerWeights& w, const float* xn, int64_t n, float* out) {
    const LlamaConfig& c = s.model->cfg;
    const int64_t H = c.hidden_size, E = c.num_experts, k = c.experts_per_tok;
    float* prob = s.moe_prob.data();
    const int64_t macs = n * E * H;
    parallel_for(n * E, macs < kParallelMacs ? n * E : std::max<int64_t>(1, 4096 / H), [&](int64_t b, int64_t e, int) {
        for (int64_t t = b; t < e; ++t) {
            prob[t] = dot_f32(xn + (t / E) * H, w.router.data() + (t % E) * H, H);
            if (!w.router_bias.empty()) prob[t] += w.router_bias[size_t(t % E)];  // gpt-oss
        }
    });
    int32_t* pick = s.moe_pick.data();
    float* wt = s.moe_wt.data();
    int32_t* first = s.moe_first.data();
    std::fill(first, first + E + 1, 0);
    for (int64_t i = 0; i < n; ++i) {
        float* p = prob + i * E;
        if (c.family && c.family->sparsemixer) {  // (PhiMoE: k is 2)
            sparsemixer_top2(p, E, c.moe_jitter2, pick + i * k, wt + i * k);
            for (int64_t j = 0; j < k; ++j) ++first[pick[i * k + j] + 1];
            continue;
        }
        const float* score = p;  // what the choice compares (sigmoid_router: p + its bias)
        if (c.moe_sigmoid) {
            float* ch = s.moe_choice.data();
            const float* bias = bias_or_null(w.router_choice_bias);  // (LFM2-MoE may have none)
            for (int64_t e = 0; e < E; ++e) {
                const float logit = p[e];
                p[e] = 1.0f / (1.0f + std::exp(-logit));
                const float key = c.moe_choice_on_logits ? logit : p[e];  // (Kolibri 1: the logit)
                ch[e] = bias ? key + bias[e] : key;
            }
            if (c.moe_topk_groups < c.moe_groups) limit_groups(c, ch, s.moe_group.data(), true, -INFINITY);
            score = ch;
        } else {
            float mx = p[0];
            for (int64_t e = 1; e < E; ++e) mx = std::max(mx, p[e]);
            float sum = 0.0f;
            for (int64_t e = 0; e < E; ++e) sum += (p[e] = std::exp(p[e] - mx));
            const float inv = 1.0f / sum;
            for (int64_t e = 0; e < E; ++e) p[e] *= inv;
            if (!w.router_choice_bias.empty()) {  // ERNIE 4.5: chosen by probability + its bias
                float* ch = s.moe_choice.data();
                for (int64_t e = 0; e < E; ++e) ch[e] = p[e] + w.router_choice_bias[size_t(e)];
                score = ch;
            } else if (c.moe_topk_groups < c.moe_groups) {  // DeepSeek-V2's group_limited_greedy; Mistral 4's
                float* ch = s.moe_choice.data();
                std::copy(p, p + E, ch);
                limit_groups(c, ch, s.moe_group.data(), c.moe_groups_two_best, 0.0f);
                score = ch;
            }
        }
        float top = 0.0f;
        for (int64_t j = 0; j < k; ++j) {  // k passes of argmax over the experts not yet taken
            int64_t best = -1;
            for (int64_t e = 0; e < E; ++e) {
                if (best >= 0 && !(score[e] > score[best])) continue;
                bool taken = false;
                for (int64_t q = 0; q < j; ++q) taken |= pick[i * k + q] == e;
                if (!taken) best = e;
            }
            pick[i * k + j] = int32_t(best);
            wt[i * k + j] = p[best];
            top += p[best];
            ++first[best + 1];
        }
        if (c.moe_sigmoid) {  // (as transformers: the sum + 1e-20 (LFM2-MoE: 1e-6; Kolibri 1: 0), then the scaling)
            const float d = c.norm_topk ? top + c.moe_norm_eps : 1.0f;
            for (int64_t j = 0; j < k; ++j) wt[i * k + j] = wt[i * k + j] / d * c.routed_scaling;
        } else {
            // (ERNIE 4.5 clamps the sum at 1e-12, Mistral 4 adds 1e-20: a softmax's top k sum is larger)
            if (c.norm_topk)
                for (int64_t j = 0; j < k; ++j) wt[i * k + j] /= std::max(top, 1e-12f);
            if (c.routed_scaling != 1.0f)  // (DeepSeek-V2, Mistral 4)
                for (int64_t j = 0; j < k; ++j) wt[i * k + j] *= c.routed_scaling;
        }
    }
    for (int64_t e = 0; e < E; ++e) first[e + 1] += first[e];
    int32_t* fill = s.moe_fill.data();
    std::copy(first, first + E, fill);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < k; ++j) s.moe_rows[size_t(fill[pick[i * k + j]]++)] = int32_t(i * k + j);

    std::fill(out, out + n * H, 0.0f);
    for (int64_t e = 0; e < E; ++e) {
        const int64_t cnt = first[e + 1] - first[e];
        if (cnt == 0) continue;
        const int32_t* sel = s.moe_rows.data() + first[e];
        const float* x = xn;
        if (n > 1) {  // the rows that chose expert e, gathered
            for (int64_t r = 0; r < cnt; ++r)
                std::memcpy(s.moe_x.data() + r * H, xn + (sel[r] / k) * H, size_t(H) * sizeof(float));
            x = s.moe_x.data();
        }
        expert_mlp(s, w.experts[size_t(e)], x, cnt, s.moe_y.data());
        for (int64_t r = 0; r < cnt; ++r) {
            const float g = wt[sel[r]];
            float* o = out + (sel[r] / k) * H;
            const float* y = s.moe_y.data() + r * H;
            for (int64_t h = 0; h < H; ++h) o[h] += g * y[h];
        }
    }
    if (w.shared.gate) {
        expert_mlp(s, w.shared, xn, n, s.moe_y.data());
        for (int64_t i = 0; i < n; ++i) {
            // (GraniteMoeShared: no gate, the shared expert's output added as it is)
            const float g = w.shared_gate.empty() ? 1.0f
                                                  : 1.0f / (1.0f + std::exp(-dot_f32(xn + i * H, w.shared_gate.data(), H)));
            float* o = out + i * H;
            const float* y = s.moe_y.data() + i * H;
            for (int64_t h = 0; h < H; ++h) o[h] += g * y[h];
        }
        if (c.moe_shared_average)  // Cohere 2 MoE: (routed + shared) / 2
            for (int64_t t = 0; t < n * H; ++t) out[t] *= 0.5f;
    }
}

// Ministral 3, Mistral 4: the query at `pos` times 1 + beta · log(1 + floor(pos / orig)), in
// float32 as transformers' get_llama_4_attn_scale (1 elsewhere).
inline float llama4_scale(const LlamaConfig& c, int64_t pos) {
    if (!c.family || !c.family->llama4_attn_scale) return 1.0f;
    const float turns = std::floor(float(pos) / float(c.rope.llama4_orig));
    return 1.0f + float(c.rope.llama4_beta) * std::log(1.0f + turns);
}

// DeepSeek's latent attention, absorbed (LlamaConfig::mla), for the pass's m rows of layer l:
// each row's q ([rotated q_pe | W_uk_hᵀ · q_nope] per head, times qscale) into s.qkv, its
// cache row [rotated k_pe | RMSNormed c] (keys and values alike) into its session's cache.
// rope_dims copies a head's rope dims, in rotate-half order when the checkpoint's pairs are
// (2i, 2i + 1).
void mla_qkv(const Pass& p, const LayerWeights& w, int64_t l, const float* rope_table, float qscale,
             const vt_linear_options& lopt) {
    CpuSession& s = p.s;
    const LlamaConfig& c = s.model->cfg;
    const int64_t m = p.m, NH = c.num_heads, HD = c.head_dim, QKV = (NH + 2) * HD;
    const int64_t R = c.mla_kv_lora, RP = c.mla_rope, NP = c.mla_nope, QH = NP + RP;
    const int64_t A = w.qkv->out, QA = A - R - RP;
    // (q_a_layernorm and kv_a_layernorm: 1e-6 whatever rms_norm_eps says — transformers' DeepSeek-V2 /
    // V3, GLM-4 MoE lite, Mistral 4, MiniCPM3, Youtu-LLM and A.X-K1 build them with their RMSNorm
    // class's default eps, as DeepSeek's own code does)
    const float eps = 1e-6f;
    linear(*w.qkv, s.xn.data(), m, nullptr, lopt, s.mla_a.data());
    const float* q = s.mla_a.data();
    int64_t qs = A;  // q's row stride
    if (w.q_b) {     // q = q_b · RMSNorm(q_a · x)
        for (int64_t i = 0; i < m; ++i) {
            std::memcpy(s.mla_qa.data() + i * QA, s.mla_a.data() + i * A, size_t(QA) * sizeof(float));
            ops::rmsnorm_heads(s.mla_qa.data() + i * QA, 1, QA, w.q_a_norm.data(), eps);
        }
        linear(*w.q_b, s.mla_qa.data(), m, nullptr, lopt, s.mla_q.data());
        q = s.mla_q.data();
        qs = NH * QH;
    }
    for (int64_t h = 0; h < NH; ++h) {  // each head's q_nope into the latent: W_uk_hᵀ · q_nope
        for (int64_t i = 0; i < m; ++i)
            std::memcpy(s.mla_in.data() + i * NP, q + i * qs + h * QH, size_t(NP) * sizeof(float));
        linear(*w.uk[size_t(h)], s.mla_in.data(), m, nullptr, lopt, s.mla_out.data());
        for (int64_t i = 0; i < m; ++i)
            std::memcpy(s.qkv.data() + i * QKV + h * HD + RP, s.mla_out.data() + i * R, size_t(R) * sizeof(float));
    }
    auto rope_dims = [&](const float* src, float* dst) {
        if (!c.mla_interleaved) {
            std::memcpy(dst, src, size_t(RP) * sizeof(float));
            return;
        }
        for (int64_t j = 0; j < RP / 2; ++j) {
            dst[j] = src[2 * j];
            dst[RP / 2 + j] = src[2 * j + 1];
        }
    };
    parallel_for(m, m > 1 ? std::max<int64_t>(1, 4096 / HD) : 1, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) {
            float* row = s.qkv.data() + i * QKV;
            for (int64_t h = 0; h < NH; ++h) rope_dims(q + i * qs + h * QH + NP, row + h * HD);
            float* kv = row + NH * HD;
            const float* a = s.mla_a.data() + i * A + QA;  // [c | k_pe]
            std::memcpy(kv + RP, a, size_t(R) * sizeof(float));
            ops::rmsnorm_heads(kv + RP, 1, R, w.kv_a_norm.data(), eps);
            rope_dims(a + R, kv);
            const float* cs = rope_table + i * HD;
            ops::rope(row, NH, HD, cs, qscale * llama4_scale(c, p.pos(i)), RP);  // (Mistral 4: its query scale)
            ops::rope(kv, 1, HD, cs, 1.0f, RP);
            std::memcpy(kv + HD, kv, size_t(HD) * sizeof(float));  // the values: the same row
            store_kv(p.row(i), l, p.pos(i), kv);
        }
    });
}

// The heads' attention outputs of rows [f, f + n) (s.att: [NH, HD] each, the latent part after
// the rope dims) through their W_uv_h into s.mla_o ([NH · v] each), o_proj's input.
void mla_values(CpuSession& s, const LayerWeights& w, int64_t f, int64_t n, const vt_linear_options& lopt) {
    const LlamaConfig& c = s.model->cfg;
    const int64_t NH = c.num_heads, HD = c.head_dim, R = c.mla_kv_lora, RP = c.mla_rope, V = c.mla_v;
    for (int64_t h = 0; h < NH; ++h) {
        for (int64_t i = 0; i < n; ++i)
            std::memcpy(s.mla_in.data() + i * R, s.att.data() + (f + i) * NH * HD + h * HD + RP, size_t(R) * sizeof(float));
        linear(*w.uv[size_t(h)], s.mla_in.data(), n, nullptr, lopt, s.mla_out.data());
        for (int64_t i = 0; i < n; ++i)
            std::memcpy(s.mla_o.data() + (f + i) * NH * V + h * V, s.mla_out.data() + i * V, size_t(V) * sizeof(float));
    }
}

// LFM2's short convolution of the pass's rows in layer l: [B | C | x] = in_proj · xn; B ⊙ x of
// every row into its session's cache at its position (T: the cache's element, float or
// ops::half); then for rows [f, m), y = C ⊙ (Σ_j w[:, j] ⊙ (B ⊙ x)[pos − K + 1 + j] + bias), the
// positions before 0 being zeros -> s.conv_y. Every row reads B ⊙ x back from the cache, its
// own included, so a prefill, a decode step and a batched step compute the same numbers.
template <class T>
void short_conv(const Pass& p, const LayerWeights& w, int64_t l, int64_t f, const vt_linear_options& lopt) {
    CpuSession& s = p.s;
    const LlamaConfig& c = s.model->cfg;
    const int64_t H = c.hidden_size, K = c.conv_kernel, m = p.m;
    const int64_t grain = std::max<int64_t>(1, 8192 / (K * H));
    linear(*w.qkv, s.xn.data(), m, bias_or_null(w.qkv_bias), lopt, s.conv_in.data());
    parallel_for(m, m > 1 ? grain : 1, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) {
            const float* in = s.conv_in.data() + i * 3 * H;
            T* dst = reinterpret_cast<T*>(p.row(i).conv_row(l, p.pos(i)));
            if constexpr (std::is_same<T, float>::value) {
                for (int64_t h = 0; h < H; ++h) dst[h] = in[h] * in[2 * H + h];
            } else {
                float* bx = s.conv_y.data() + i * H;  // (scratch until the second loop below)
                for (int64_t h = 0; h < H; ++h) bx[h] = in[h] * in[2 * H + h];
                if (!ops::store_f16(bx, H, dst, 1))
                    fail(VT_STATUS_UNSUPPORTED,
                         "layer %lld: the convolution input B·x of the token at position %lld is beyond the range of "
                         "the f16 cache (largest finite f16: 65504); load the model with kv_cache_dtype F32 (pyvt: "
                         "kv_cache=\"f32\")", (long long)l, (long long)p.pos(i));
            }
        }
    });
    const float* kw = w.conv.data();  // [H, K]
    const float* kb = bias_or_null(w.conv_bias);
    parallel_for(m - f, m - f > 1 ? grain : 1, [&](int64_t b, int64_t e, int) {
        for (int64_t i = f + b; i < f + e; ++i) {
            const CpuSession& rs = p.row(i);
            const int64_t pos = p.pos(i);
            float* y = s.conv_y.data() + i * H;
            for (int64_t h = 0; h < H; ++h) y[h] = 0.0f;
            for (int64_t j = std::max<int64_t>(0, K - 1 - pos); j < K; ++j) {
                const T* bx = reinterpret_cast<const T*>(rs.conv_row(l, pos - (K - 1) + j));
                for (int64_t h = 0; h < H; ++h) {
                    if constexpr (std::is_same<T, float>::value) y[h] += kw[h * K + j] * bx[h];
                    else y[h] += kw[h * K + j] * f16_to_f32(bx[h]);
                }
            }
            const float* C = s.conv_in.data() + i * 3 * H + H;
            for (int64_t h = 0; h < H; ++h) y[h] = (kb ? y[h] + kb[h] : y[h]) * C[h];
        }
    });
}

// Runs the rows of the pass through the model, appending their K/V to their sessions'
// caches. When logits_out is not null, rows [r0, m) get final norm + lm_head into
// logits_out ([m - r0, V]). Sessions' lengths are the caller's to advance.
void run(const Pass& p, int64_t r0, float* logits_out) {
    CpuSession& s = p.s;
    const int32_t* tokens = p.tokens;
    const int64_t m = p.m;
    const ModelWeights& M = *s.model;
    const LlamaConfig& c = M.cfg;
    const int64_t H = c.hidden_size, NH = c.num_heads, KV = c.num_kv_heads, HD = c.head_dim;
    const int64_t QKV = (NH + 2 * KV) * HD;
    const int64_t ROT = c.rotary_width();  // the dims RoPE rotates (partial rotary)
    const float eps = float(c.rms_norm_eps);
    const bool gemma = c.family && c.family->gemma_block();  // Gemma 2 / 3's block
    const bool geglu = c.family && c.family->gemma != ModelFamily::NOT_GEMMA;
    // Scores are q·k / sqrt(head_dim) (Gemma 2: query_pre_attn_scalar^-0.5, as transformers).
    // (Granite: attention_multiplier)
    const float qscale = c.attn_scale > 0 ? float(c.attn_scale)
                         : gemma      ? float(std::pow(c.query_pre_attn_scalar, -0.5))
                                      : 1.0f / std::sqrt(float(HD));
    const float rscale = c.residual_scale;  // Granite: residual_multiplier (1 elsewhere)
    const int64_t mlp_width = c.mlp_width();
    const vt_linear_options lopt = vt_linear_default_options();
    const int64_t row_grain = std::max<int64_t>(1, 8192 / H);  // per-row ops: ~8k floats per task

    float* x = s.x.data();
    float* xn = s.xn.data();

    // Embedding rows, RoPE angles, first RMSNorm.
    ModelWeights::RopeFreqs freqs;  // (dynamic NTK: this pass's frequencies)
    for (int64_t i = 0; i < m; ++i) {
        const int64_t pos = p.pos(i);
        // (LongRoPE, dynamic NTK: a batched decode row's sequence ends at its position; a
        // session's pass belongs to the sequence the session layer named)
        const int64_t seq = p.sess ? pos + 1 : std::max(s.rope_seq_len, p.pos0 + m);
        ops::rope_angles(M.rope_freqs(seq, freqs), pos, ROT, s.rope.data() + i * HD, M.rope_scale_at(seq));
        if (!M.inv_freq_local.empty()) ops::rope_angles(M.inv_freq_local.data(), pos, ROT, s.rope_local.data() + i * HD);
    }
    // OLMo 2: no norm before attention or the MLP, the outputs normed before the adds.
    const bool post_only = c.family && c.family->post_norm_only;
    // the attention / MLP outputs normed before the add (GLM-4: and the pre-norms)
    // (VaultGemma: Gemma 2's block without its post norms)
    const bool post = (gemma && c.family->layer_tensors[T_POST_ATTN_NORM]) || post_only ||
                      c.sandwich_norms;
    const bool qk_full = c.family && c.family->qk_norm_full;  // q/k norms over the whole projection
    const bool norm_after_rope = c.family && c.family->qk_norm_after_rope;  // HunYuan's q/k norms
    // Phi: LayerNorm (with bias), x + attn(h) + mlp(h) with h = LN(x), an ungated GELU MLP.
    // (Cohere's too; GPT-NeoX's with the MLP's own norm of x: parallel_two_norms)
    const bool phi = c.family && (c.family->phi || c.family->parallel_block || c.parallel_two_norms || c.parallel_one_norm);
    const bool layer_norm = c.family && c.family->norm == ModelFamily::LAYER_NORM;  // (Phi, StableLM)
    // x += t, then xn = x (post_only: the next linear reads x as it is) or rmsnorm(x) · norm
    // (LayerNorm families: LayerNorm(x) · norm + bias).
    auto add_next = [&](float* xr, const float* t, const float* norm, const float* bias, float* xnr) {
        if (norm && layer_norm) {
            add_layernorm(xr, t, norm, bias, eps, H, xnr);
            return;
        }
        if (norm) {
            ops::add_rmsnorm(xr, t, norm, eps, H, xnr);
            return;
        }
        if (t)
            for (int64_t h = 0; h < H; ++h) xr[h] += t[h];
        std::memcpy(xnr, xr, size_t(H) * sizeof(float));
    };
    const float* norm0 = post_only ? nullptr : M.layers[0].attn_norm.data();
    const float* bias0 = bias_or_null(M.layers[0].attn_norm_bias);
    parallel_for(m, m > 1 ? row_grain : 1, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) {
            M.embed_row(tokens[i], x + i * H);
            if (!M.pos_embed.empty()) {  // (GPT-2 lineage: + the learned position's row)
                const float* pe = M.pos_embed.data() + (p.pos(i) + c.family->pos_embed_offset) * H;
                for (int64_t h = 0; h < H; ++h) x[i * H + h] += pe[h];
            }
            if (c.embed_scale > 0)
                for (int64_t h = 0; h < H; ++h) x[i * H + h] *= c.embed_scale;
            if (!M.embed_norm.empty() && M.embed_norm_bias.empty())  // (NanoChat: RMSNormed, weights of 1)
                ops::rmsnorm_heads(x + i * H, 1, H, M.embed_norm.data(), eps);
            else if (!M.embed_norm.empty())  // (Bloom: the embeddings LayerNormed, in place)
                add_layernorm(x + i * H, nullptr, M.embed_norm.data(), M.embed_norm_bias.data(), eps, H, x + i * H);
            add_next(x + i * H, nullptr, norm0, bias0, xn + i * H);
        }
    });

    for (int64_t l = 0; l < c.num_layers; ++l) {
        const LayerWeights& w = M.layers[size_t(l)];

        // In the last block only the rows that need logits go on past their keys and values
        // (rows [f, m)): a prefill chunk that wants none stops there, one that wants the last
        // row's runs that row alone through attention, o_proj and the MLP.
        const int64_t f = l + 1 < c.num_layers ? 0 : std::min(r0, m), n = m - f;
        float* const xf = x + f * H;
        float* const xnf = xn + f * H;
        float* const tmp = s.tmp.data() + f * H;
        float* const mlp = s.mlp.data() + f * mlp_width;
        if (c.conv_layer(l)) {  // LFM2: the short convolution instead of the attention
            if (s.kv_dtype == VT_DTYPE_F32) short_conv<float>(p, w, l, f, lopt);
            else short_conv<ops::half>(p, w, l, f, lopt);
            if (n == 0) break;
            linear(*w.o, s.conv_y.data() + f * H, n, bias_or_null(w.o_bias), lopt, tmp);
        } else {
            const float* rope_table = c.layer_local_rope[size_t(l)] ? s.rope_local.data() : s.rope.data();
            if (c.mla) mla_qkv(p, w, l, rope_table, qscale, lopt);
            else linear(*w.qkv, xn, m, bias_or_null(w.qkv_bias), lopt, s.qkv.data());
            const bool nope = size_t(l) < c.layer_nope.size() && c.layer_nope[size_t(l)];
            // (Qwen3: per-head RMSNorm of q and k,) RoPE on q (pre-scaled by 1/sqrt(HD)) and k,
            // then K/V into the cache. (DeepSeek's latent attention: mla_qkv has done so, no rows here.)
            const int64_t qk_rows = c.mla ? 0 : m;
            parallel_for(qk_rows, m > 1 ? row_grain : m, [&](int64_t b, int64_t e, int) {
                for (int64_t i = b; i < e; ++i) {
                    float* row = s.qkv.data() + i * QKV;
                    const float* cs = rope_table + i * HD;
                    if (c.qk_norm && qk_full) {  // OLMo 2, OLMoE: over the whole q and the whole k
                        ops::rmsnorm_heads(row, 1, NH * HD, w.q_norm.data(), eps);
                        ops::rmsnorm_heads(row + NH * HD, 1, KV * HD, w.k_norm.data(), eps);
                    } else if (c.qk_norm && !norm_after_rope) {
                        ops::rmsnorm_heads(row, NH, HD, w.q_norm.data(), eps);
                        ops::rmsnorm_heads(row + NH * HD, KV, HD, w.k_norm.data(), eps);
                    }
                    if (c.clip_qkv > 0) {  // OLMoE's clip_qkv: q, k and v clamped
                        const float cl = float(c.clip_qkv);
                        for (int64_t d = 0; d < QKV; ++d) row[d] = std::min(cl, std::max(-cl, row[d]));
                    }
                    if (nope) {  // SmolLM3's NoPE layers: q scaled, q and k not rotated
                        for (int64_t d = 0; d < NH * HD; ++d) row[d] *= qscale;
                    } else if (norm_after_rope) {  // HunYuan: rotate, then the per-head norms, then scale q
                        ops::rope(row, NH, HD, cs, 1.0f, ROT);
                        ops::rope(row + NH * HD, KV, HD, cs, 1.0f, ROT);
                        ops::rmsnorm_heads(row, NH, HD, w.q_norm.data(), eps);
                        ops::rmsnorm_heads(row + NH * HD, KV, HD, w.k_norm.data(), eps);
                        for (int64_t d = 0; d < NH * HD; ++d) row[d] *= qscale;
                    } else {
                        ops::rope(row, NH, HD, cs, qscale * llama4_scale(c, p.pos(i)), ROT);
                        ops::rope(row + NH * HD, KV, HD, cs, 1.0f, ROT);
                    }
                    store_kv(p.row(i), l, p.pos(i), row + NH * HD);
                }
            });
            if (n == 0) break;
            // (batched decode: r0 = 0, so f = 0; a short pass's last block, when it wants the
            // last row only, runs that row alone through prefill's attention)
            const bool decode = p.sess || m == 1 || (m <= kDecodeAttentionRows && f == 0);
            switch (s.kv_dtype) {
                case VT_DTYPE_F16:
                    decode ? attention_decode<ops::half>(p, l) : attention_prefill<ops::half>(s, l, f, m, p.pos0);
                    break;
                case VT_DTYPE_I8:
                    decode ? attention_decode<int8_t>(p, l) : attention_prefill<int8_t>(s, l, f, m, p.pos0);
                    break;
                default:
                    decode ? attention_decode<float>(p, l) : attention_prefill<float>(s, l, f, m, p.pos0);
            }
            if (w.attn_gate) {  // LFM3: each head's output times sigmoid(g_proj · h); AFMoE: each dim's
                const bool per_dim = c.attn_gate_per_dim;
                const int64_t GW = per_dim ? NH * HD : NH;
                float* g = s.attn_g.data() + f * GW;
                linear(*w.attn_gate, xnf, n, nullptr, lopt, g);
                parallel_for(n, n > 1 ? row_grain : n, [&](int64_t b, int64_t e, int) {
                    for (int64_t i = b; i < e; ++i) {
                        float* o = s.att.data() + (f + i) * NH * HD;
                        const float* gi = g + i * GW;
                        if (per_dim) {
                            for (int64_t d = 0; d < NH * HD; ++d) o[d] *= 1.0f / (1.0f + std::exp(-gi[d]));
                            continue;
                        }
                        for (int64_t h = 0; h < NH; ++h) {
                            const float gate = 1.0f / (1.0f + std::exp(-gi[h]));
                            for (int64_t d = 0; d < HD; ++d) o[h * HD + d] *= gate;
                        }
                    }
                });
            }
            if (c.mla) {
                mla_values(s, w, f, n, lopt);
                linear(*w.o, s.mla_o.data() + f * NH * c.mla_v, n, bias_or_null(w.o_bias), lopt, tmp);
            } else {
                linear(*w.o, s.att.data() + f * NH * HD, n, bias_or_null(w.o_bias), lopt, tmp);
            }
        }
        parallel_for(n, n > 1 ? row_grain : n, [&](int64_t b, int64_t e, int) {
            for (int64_t i = b; i < e; ++i) {
                if (phi) {  // the parallel block: x += attn(h); the MLP reads h (xn) too
                    if (c.parallel_two_norms)  // (GPT-NeoX: or its own norm of x, before the add)
                        add_layernorm(xf + i * H, nullptr, w.mlp_norm.data(), bias_or_null(w.mlp_norm_bias), eps, H,
                                      xnf + i * H);
                    for (int64_t h = 0; h < H; ++h) xf[i * H + h] += tmp[i * H + h];
                    continue;
                }
                if (post) ops::rmsnorm_heads(tmp + i * H, 1, H, w.post_attn_norm.data(), eps);
                if (rscale != 1.0f)
                    for (int64_t h = 0; h < H; ++h) tmp[i * H + h] *= rscale;
                add_next(xf + i * H, tmp + i * H, post_only ? nullptr : w.mlp_norm.data(), bias_or_null(w.mlp_norm_bias),
                         xnf + i * H);
            }
        });
        if (c.moe_layer(l)) {
            moe_mlp(s, w, xnf, n, tmp);
        } else if (!w.up) {  // Phi, Starcoder2, GPT-NeoX: fc2(gelu(fc1 · h + b)) + b (c_proj, c_fc); Arcee: relu²
            const int64_t I = c.intermediate_size;
            linear(*w.gate, xnf, n, bias_or_null(w.gate_bias), lopt, mlp);
            parallel_for(n, n > 1 ? 1 : n, [&](int64_t b, int64_t e, int) {
                for (int64_t i = b; i < e; ++i) {
                    float* r = mlp + i * I;
                    if (c.ungated_act == LlamaConfig::ACT_RELU2) {
                        for (int64_t k = 0; k < I; ++k) r[k] = r[k] > 0.0f ? r[k] * r[k] : 0.0f;
                    } else if (c.ungated_act == LlamaConfig::ACT_XIELU) {  // Apertus
                        const float ap = w.xielu_alpha_p, an = w.xielu_alpha_n, be = w.xielu_beta, ep = w.xielu_eps;
                        for (int64_t k = 0; k < I; ++k) {
                            const float v = r[k];
                            r[k] = v > 0.0f ? ap * v * v + be * v : (std::expm1(std::min(v, ep)) - v) * an + be * v;
                        }
                    } else if (c.ungated_act == LlamaConfig::ACT_RELU) {  // OPT
                        for (int64_t k = 0; k < I; ++k) r[k] = std::max(r[k], 0.0f);
                    } else if (c.ungated_act == LlamaConfig::ACT_GELU) {  // exact: 0.5·x·(1 + erf(x / √2))
                        for (int64_t k = 0; k < I; ++k) r[k] = 0.5f * r[k] * (1.0f + std::erf(r[k] * 0.70710678118654752f));
                    } else {
                        ops::geglu_tanh(r, s.ones.data(), I, r);
                    }
                }
            });
            linear(*w.down, mlp, n, bias_or_null(w.down_bias), lopt, tmp);
        } else {
            if (geglu)  // GeGLU: gelu_tanh(gate) ⊙ up
                linear_geglu_tanh(*w.gate, *w.up, xnf, n, nullptr, nullptr, lopt, mlp);
            else
                linear_swiglu(*w.gate, *w.up, xnf, n, bias_or_null(w.gate_bias), bias_or_null(w.up_bias), lopt, mlp);
            linear(*w.down, mlp, n, bias_or_null(w.down_bias), lopt, tmp);
        }
        if (post || (c.moe_out_norm && c.moe_layer(l)))  // (A.X-K1: its MoE block's output only)
            parallel_for(n, n > 1 ? row_grain : n, [&](int64_t b, int64_t e, int) {
                for (int64_t i = b; i < e; ++i) ops::rmsnorm_heads(tmp + i * H, 1, H, w.post_mlp_norm.data(), eps);
            });
        const float* next_norm = l + 1 >= c.num_layers ? M.final_norm.data()
                                 : post_only         ? nullptr
                                                     : M.layers[size_t(l + 1)].attn_norm.data();
        const float* next_bias = bias_or_null(l + 1 >= c.num_layers ? M.final_norm_bias
                                                                    : M.layers[size_t(l + 1)].attn_norm_bias);
        parallel_for(n, n > 1 ? row_grain : n, [&](int64_t b, int64_t e, int) {
            for (int64_t i = b; i < e; ++i) {
                if (rscale != 1.0f)
                    for (int64_t h = 0; h < H; ++h) tmp[i * H + h] *= rscale;
                add_next(xf + i * H, tmp + i * H, next_norm, next_bias, xnf + i * H);
            }
        });
    }
    if (logits_out && r0 < m) {
        linear(*M.lm_head, xn + r0 * H, m - r0, bias_or_null(M.lm_head_bias), lopt, logits_out);
        if (c.logit_scale != 1.0) {  // Cohere: logits · logit_scale
            const float sc = float(c.logit_scale);
            const int64_t n = (m - r0) * c.vocab_size;
            parallel_for(n, 65536, [&](int64_t b, int64_t e, int) {
                for (int64_t k = b; k < e; ++k) logits_out[k] *= sc;
            });
        }
        if (c.logits_scaling != 1.0) {  // Granite: logits / logits_scaling
            const float d = float(c.logits_scaling);
            const int64_t n = (m - r0) * c.vocab_size;
            parallel_for(n, 65536, [&](int64_t b, int64_t e, int) {
                for (int64_t k = b; k < e; ++k) logits_out[k] /= d;
            });
        }
        if (c.final_softcap > 0) {  // Gemma 2: cap · tanh(logit / cap)
            const float cap = float(c.final_softcap);
            const int64_t n = (m - r0) * c.vocab_size;
            parallel_for(n, 16384, [&](int64_t b, int64_t e, int) {
                ops::softcap(logits_out + b, e - b, cap);
            });
        }
    }
}

struct CpuModel final : BackendModel {
    const ModelWeights& w;
    const int32_t kv_dtype;  // the sessions' KV cache element type (VT_DTYPE_F16, F32 or I8)
    CpuModel(const ModelWeights& weights, int32_t kv) : w(weights), kv_dtype(kv) {}

    std::unique_ptr<BackendSession> new_session(int64_t capacity) const override {
        auto s = std::make_unique<CpuSession>();
        s->model = &w;
        s->kv_dtype = kv_dtype;
        s->max_tokens = capacity;
        s->layer_slot.resize(size_t(w.cfg.num_layers));
        for (int64_t l = 0; l < w.cfg.num_layers; ++l)
            s->layer_slot[size_t(l)] = w.cfg.conv_layer(l) ? s->conv_layers++ : s->kv_layers++;
        ensure_rows(*s, 1);
        ensure_part(*s, 1);
        // Small sessions get their whole cache now; large ones grow (doubling) as they fill.
        ensure_kv(*s, std::min<int64_t>(capacity, 256));
        return s;
    }
    bool batches() const override { return true; }
    // One row per session, each attending over its own cache; sessions[0] holds the scratch.
    void decode_batch(BackendSession* const* sessions, int64_t n, const int32_t* tokens, const int64_t* pos,
                      float* logits) const override {
        CpuSession* ss[VT_MAX_BATCH];
        for (int64_t i = 0; i < n; ++i) {
            ss[i] = static_cast<CpuSession*>(sessions[i]);
            ss[i]->len = pos[i];
            ensure_kv(*ss[i], pos[i] + 1);
        }
        CpuSession& s0 = *ss[0];
        ensure_rows(s0, n);
        ensure_part(s0, n);
        run(Pass{s0, tokens, n, 0, ss, pos}, 0, logits);
    }
};

}  // namespace

void CpuSession::forward(const int32_t* tokens, int64_t n, int64_t pos, Logits out, float* logits, Pick pick,
                         Picked*) {
    if (pick != Pick::None) fail(VT_STATUS_INTERNAL, "the CPU backend returns logits, not a device pick");
    len = pos;  // the session layer's length: what ensure_kv keeps when it grows
    ensure_kv(*this, pos + n);
    ensure_rows(*this, n);
    if (n <= kDecodeAttentionRows) ensure_part(*this, n);
    const Pass p{*this, tokens, n, pos, nullptr, nullptr};
    if (out == Logits::All) run(p, 0, logits);
    else if (out == Logits::Last) run(p, n - 1, logits);
    else run(p, n, nullptr);
}

void CpuSession::reserve(int64_t n_kept, int64_t needed) {
    len = n_kept;
    ensure_kv(*this, needed);
}

void CpuSession::copy_prefix(const BackendSession& from, int64_t n) {
    const CpuSession& src = static_cast<const CpuSession&>(from);
    len = 0;  // nothing of the old content is kept when the cache grows
    ensure_kv(*this, n);
    const LlamaConfig& c = model->cfg;
    const int64_t LK = kv_layers * c.num_kv_heads, HD = c.head_dim;
    const int64_t tiles = (n + ops::kKeyTile - 1) / ops::kKeyTile;  // the last one may be part used
    const int64_t eb = elem_bytes();  // the same model: the same element type as src
    for (int64_t lk = 0; lk < LK; ++lk) {
        std::memcpy(kt.get() + lk * HD * kv_cap * eb, src.kt.get() + lk * HD * src.kv_cap * eb,
                    size_t(tiles * HD * ops::kKeyTile * eb));
        std::memcpy(v.get() + lk * kv_cap * HD * eb, src.v.get() + lk * src.kv_cap * HD * eb, size_t(n * HD * eb));
        if (scaled()) {
            std::memcpy(ks.get() + lk * kv_cap * 4, src.ks.get() + lk * src.kv_cap * 4, size_t(n) * 4);
            std::memcpy(vs.get() + lk * kv_cap * 4, src.vs.get() + lk * src.kv_cap * 4, size_t(n) * 4);
        }
    }
    const size_t row = size_t(c.hidden_size * conv_elem_bytes());
    for (int64_t k = 0; k < conv_layers; ++k)
        std::memcpy(conv.get() + size_t(k * kv_cap) * row, src.conv.get() + size_t(k * src.kv_cap) * row, size_t(n) * row);
    len = n;
}

std::unique_ptr<BackendModel> cpu_backend(const ModelWeights& w, int32_t kv_dtype) {
    return std::make_unique<CpuModel>(w, kv_dtype);
}

}  // namespace vt
