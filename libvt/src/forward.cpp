// The Llama forward pass on CPU: one function runs m tokens (prefill chunk or a single
// decoded token) through embedding -> blocks -> final norm -> lm_head, over preallocated
// session state. The linears are vt::linear (quant.h), the per-token ops are in ops/
// (RMSNorm, RoPE, attention); this file schedules them over rows, heads and threads.
#include "forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ops/attention.h"
#include "ops/rmsnorm.h"
#include "ops/rope.h"
#include "quant.h"
#include "sampling.h"
#include "threadpool.h"

#include "ops/cpu_clones.h"  // FMA contraction for the loops here too (the decode merge)

namespace vt {

namespace {

using ops::HeadGroups;
using ops::kKeyBlock;
using ops::kMaxGroup;

constexpr int64_t kQueryBlock = 16;   // prefill queries per attention task
constexpr int64_t kMaxSplits = 16;    // decode: key-range splits per head group

// Work below this many multiply-adds runs on the calling thread: a parallel region costs
// microseconds, about what 30k MACs take on one core.
constexpr int64_t kParallelMacs = 32768;

// The rows of one forward pass: row i is token tokens[i] of session sess[i] (batched decode)
// or of `s` (prefill / decode), at position pos(i). `s` owns the scratch buffers.
struct Pass {
    vt_session& s;
    const int32_t* tokens;     // [m]
    int64_t m;
    int64_t pos0;              // one session: positions pos0 .. pos0 + m - 1
    vt_session* const* sess;   // batched decode: [m] one session per row; else null

    vt_session& row(int64_t i) const { return sess ? *sess[i] : s; }
    int64_t pos(int64_t i) const { return sess ? sess[i]->len : pos0 + i; }
};

HeadGroups head_groups(const LlamaConfig& c) { return HeadGroups(c.num_heads, c.num_kv_heads, c.head_dim); }

// Floats of decode-attention partials per row: [units, splits, gb, HD + 2].
int64_t partial_floats(const LlamaConfig& c) {
    const HeadGroups hg = head_groups(c);
    return hg.units * kMaxSplits * hg.gb * (c.head_dim + 2);
}

// Decode attention for one layer: each row of the pass is one query per head over its own
// session's pos + 1 cached keys -> s.att row. Long ranges are split across threads and
// merged (flash-decoding), so 3 KV heads still keep 2+ cores busy.
void attention_decode(const Pass& p, int64_t layer) {
    vt_session& s = p.s;
    const LlamaConfig& c = s.model->cfg;
    const int64_t NH = c.num_heads, KV = c.num_kv_heads, HD = c.head_dim;
    const int64_t QKV = (NH + 2 * KV) * HD;
    const HeadGroups hg = head_groups(c);
    const int64_t gb = hg.gb, units = hg.units;
    const int64_t R = p.m;
    const int64_t threads = num_threads();
    int64_t splits[VT_MAX_BATCH], per[VT_MAX_BATCH], first[VT_MAX_BATCH + 1];
    first[0] = 0;
    int64_t macs = 0;
    for (int64_t r = 0; r < R; ++r) {
        const int64_t nkeys = p.pos(r) + 1;
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
    const int64_t pstride = gb * (HD + 2);
    parallel_for(tasks, grain, [&](int64_t b, int64_t e, int) {
        int64_t r = 0;
        for (int64_t t = b; t < e; ++t) {
            while (t >= first[r + 1]) ++r;
            const int64_t local = t - first[r];
            const int64_t sp = local % splits[r];
            const HeadGroups::Unit u = hg.unit(local / splits[r]);
            const vt_session& rs = p.row(r);
            const int64_t cap = rs.kv_cap;
            const float* q[kMaxGroup];
            for (int64_t g = 0; g < u.ng; ++g) q[g] = s.qkv.data() + r * QKV + (u.head0 + g) * HD;
            float* pt = part + t * pstride;
            const ops::Partial out{pt, pt + gb * HD, pt + gb * HD + gb};
            const int64_t k0 = sp * per[r], k1 = std::min(p.pos(r) + 1, k0 + per[r]);
            ops::attend(q, u.ng, rs.kt.get() + size_t((layer * KV + u.kvh) * HD * cap),
                        rs.v.get() + size_t((layer * KV + u.kvh) * cap * HD), cap, k0, k1, HD, out);
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
                float L = 0.0f;
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

// Prefill attention of rows [0, m) of the pass (positions pos0 + i) for one layer -> s.att.
void attention_prefill(vt_session& s, int64_t layer, int64_t m, int64_t pos0) {
    const LlamaConfig& c = s.model->cfg;
    const int64_t NH = c.num_heads, KV = c.num_kv_heads, HD = c.head_dim;
    const int64_t QKV = (NH + 2 * KV) * HD;
    const HeadGroups hg = head_groups(c);
    const int64_t cap = s.kv_cap;
    const float* kt_layer = s.kt.get() + size_t(layer * KV * HD * cap);
    const float* v_layer = s.v.get() + size_t(layer * KV * cap * HD);

    // Prefill: tasks = (query block, KV head, head group). Query blocks are visited in the
    // order 0, last, 1, last-1, ... so the contiguous halves parallel_for hands to each
    // thread carry equal causal work.
    const int64_t nqb = (m + kQueryBlock - 1) / kQueryBlock;
    const int64_t units = hg.units;
    const int64_t tasks = nqb * units;
    const int64_t macs = 2 * NH * HD * m * (pos0 + m);
    const int64_t grain = macs < kParallelMacs ? tasks : 1;
    parallel_for(tasks, grain, [&](int64_t b, int64_t e, int) {
        for (int64_t t = b; t < e; ++t) {
            const int64_t k = t / units;
            const int64_t qb = (k % 2 == 0) ? k / 2 : nqb - 1 - k / 2;
            const HeadGroups::Unit u = hg.unit(t % units);
            const int64_t i1 = std::min(m, (qb + 1) * kQueryBlock);
            for (int64_t i = qb * kQueryBlock; i < i1; ++i) {
                const float* q[kMaxGroup];
                float* o[kMaxGroup];
                for (int64_t g = 0; g < u.ng; ++g) {
                    q[g] = s.qkv.data() + i * QKV + (u.head0 + g) * HD;
                    o[g] = s.att.data() + i * NH * HD + (u.head0 + g) * HD;
                }
                ops::attend_normalized(q, u.ng, kt_layer + u.kvh * HD * cap, v_layer + u.kvh * cap * HD, cap, 0,
                                       pos0 + i + 1, HD, o);
            }
        }
    });
}

// ==== Session memory =====================================================================

void ensure_kv(vt_session& s, int64_t needed) {
    if (needed <= s.kv_cap) return;
    const LlamaConfig& c = s.model->cfg;
    const int64_t L = c.num_layers, KV = c.num_kv_heads, HD = c.head_dim;
    int64_t cap = std::max<int64_t>({needed, 2 * s.kv_cap, 64});
    cap = std::min(cap, s.max_tokens);
    FloatArray kt(AlignedAllocator<float>().allocate(size_t(L * KV * HD * cap)));
    FloatArray v(AlignedAllocator<float>().allocate(size_t(L * KV * cap * HD)));
    if (s.len > 0) {
        for (int64_t lk = 0; lk < L * KV; ++lk) {
            for (int64_t d = 0; d < HD; ++d)
                std::memcpy(kt.get() + (lk * HD + d) * cap, s.kt.get() + (lk * HD + d) * s.kv_cap,
                            size_t(s.len) * sizeof(float));
            std::memcpy(v.get() + lk * cap * HD, s.v.get() + lk * s.kv_cap * HD, size_t(s.len * HD) * sizeof(float));
        }
    }
    std::swap(s.kt, kt);
    std::swap(s.v, v);
    s.kv_cap = cap;
}

void ensure_rows(vt_session& s, int64_t rows) {
    if (rows <= s.rows) return;
    const LlamaConfig& c = s.model->cfg;
    const int64_t H = c.hidden_size, NH = c.num_heads, KV = c.num_kv_heads, HD = c.head_dim;
    const int64_t QKV = (NH + 2 * KV) * HD;
    auto grow = [](AlignedVec<float>& a, int64_t n) { a.assign(size_t(n), 0.0f); };
    grow(s.x, rows * H);
    grow(s.xn, rows * H);
    grow(s.qkv, rows * QKV);
    grow(s.att, rows * NH * HD);
    grow(s.mlp, rows * c.intermediate_size);
    grow(s.tmp, rows * H);
    grow(s.rope, rows * HD);
    s.rows = rows;
}

// Decode-attention partials for `rows` rows.
void ensure_part(vt_session& s, int64_t rows) {
    const size_t need = size_t(rows * partial_floats(s.model->cfg));
    if (s.part.size() < need) s.part.assign(need, 0.0f);
}

// ==== The pass ===========================================================================

// Runs the rows of the pass through the model, appending their K/V to their sessions'
// caches. When logits_out is not null, rows [r0, m) get final norm + lm_head into
// logits_out ([m - r0, V]). Sessions' lengths are the caller's to advance.
void forward(const Pass& p, int64_t r0, float* logits_out) {
    vt_session& s = p.s;
    const int32_t* tokens = p.tokens;
    const int64_t m = p.m;
    const vt_model& M = *s.model;
    const LlamaConfig& c = M.cfg;
    const int64_t H = c.hidden_size, NH = c.num_heads, KV = c.num_kv_heads, HD = c.head_dim;
    const int64_t QKV = (NH + 2 * KV) * HD;
    const float eps = float(c.rms_norm_eps);
    const float qscale = 1.0f / std::sqrt(float(HD));
    const vt_linear_options lopt = vt_linear_default_options();
    const int64_t row_grain = std::max<int64_t>(1, 8192 / H);  // per-row ops: ~8k floats per task

    float* x = s.x.data();
    float* xn = s.xn.data();

    // Embedding rows, RoPE angles, first RMSNorm.
    for (int64_t i = 0; i < m; ++i) {
        const int64_t pos = p.pos(i);
        ops::rope_angles(M.inv_freq.data(), pos, HD, s.rope.data() + i * HD);
    }
    const float* norm0 = M.layers[0].attn_norm.data();
    parallel_for(m, m > 1 ? row_grain : 1, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) {
            M.embed_row(tokens[i], x + i * H);
            ops::add_rmsnorm(x + i * H, nullptr, norm0, eps, H, xn + i * H);
        }
    });

    for (int64_t l = 0; l < c.num_layers; ++l) {
        const LayerWeights& w = M.layers[size_t(l)];

        linear(*w.qkv, xn, m, nullptr, lopt, s.qkv.data());
        // RoPE on q (pre-scaled by 1/sqrt(HD)) and k, then K/V into the cache.
        parallel_for(m, m > 1 ? row_grain : m, [&](int64_t b, int64_t e, int) {
            for (int64_t i = b; i < e; ++i) {
                float* row = s.qkv.data() + i * QKV;
                const float* cs = s.rope.data() + i * HD;
                ops::rope(row, NH, HD, cs, qscale);
                ops::rope(row + NH * HD, KV, HD, cs, 1.0f);
                vt_session& rs = p.row(i);
                const int64_t pos = p.pos(i), cap = rs.kv_cap;
                float* kt_layer = rs.kt.get() + size_t(l * KV * HD * cap);
                float* v_layer = rs.v.get() + size_t(l * KV * cap * HD);
                for (int64_t h = 0; h < KV; ++h) {
                    const float* k = row + (NH + h) * HD;
                    const float* vv = row + (NH + KV + h) * HD;
                    float* kt = kt_layer + h * HD * cap + pos;
                    for (int64_t d = 0; d < HD; ++d) kt[d * cap] = k[d];
                    std::memcpy(v_layer + (h * cap + pos) * HD, vv, size_t(HD) * sizeof(float));
                }
            }
        });
        if (p.sess || m == 1) attention_decode(p, l);
        else attention_prefill(s, l, m, p.pos0);
        linear(*w.o, s.att.data(), m, nullptr, lopt, s.tmp.data());
        parallel_for(m, m > 1 ? row_grain : m, [&](int64_t b, int64_t e, int) {
            for (int64_t i = b; i < e; ++i)
                ops::add_rmsnorm(x + i * H, s.tmp.data() + i * H, w.mlp_norm.data(), eps, H, xn + i * H);
        });
        linear_swiglu(*w.gate, *w.up, xn, m, nullptr, nullptr, lopt, s.mlp.data());
        linear(*w.down, s.mlp.data(), m, nullptr, lopt, s.tmp.data());
        const float* next_norm = l + 1 < c.num_layers ? M.layers[size_t(l + 1)].attn_norm.data() : M.final_norm.data();
        // After the last block only the rows that need logits matter.
        const int64_t first = l + 1 < c.num_layers ? 0 : std::min(r0, m);
        if (first < m)
            parallel_for(m - first, m - first > 1 ? row_grain : m, [&](int64_t b, int64_t e, int) {
                for (int64_t i = first + b; i < first + e; ++i)
                    ops::add_rmsnorm(x + i * H, s.tmp.data() + i * H, next_norm, eps, H, xn + i * H);
            });
    }
    if (logits_out && r0 < m) linear(*M.lm_head, xn + r0 * H, m - r0, nullptr, lopt, logits_out);
}

void check_tokens(const vt_model& m, const int32_t* tokens, int64_t n) {
    const int64_t V = m.cfg.vocab_size;
    for (int64_t i = 0; i < n; ++i)
        if (tokens[i] < 0 || tokens[i] >= V)
            fail(VT_STATUS_INVALID_ARGUMENT, "token id %d (tokens[%lld]) is outside the vocabulary [0, %lld)",
                 tokens[i], (long long)i, (long long)V);
}

void check_room(const vt_session& s, int64_t n) {
    if (n > s.max_tokens - s.len)
        fail(VT_STATUS_INVALID_ARGUMENT,
             "KV cache full: %lld cached positions + %lld new tokens exceed the session's max_tokens %lld",
             (long long)s.len, (long long)n, (long long)s.max_tokens);
}


}  // namespace

// ==== Entry points ======================================================================

int32_t choose_token(vt_session& s, const float* logits, const vt_sample_options* sampling) {
    const int64_t V = s.model->cfg.vocab_size;
    if (sampling && has_penalties(*sampling)) {
        std::copy(logits, logits + V, s.plogits.begin());
        apply_penalties(*sampling, s.history, s.plogits.data());
        logits = s.plogits.data();
    }
    int64_t tok;
    if (!sampling || sampling->temperature == 0.0f) tok = argmax(logits, V);
    else tok = sample(logits, V, *sampling, s.step);
    note_choice(s, int32_t(tok));
    return int32_t(tok);
}

void note_choice(vt_session& s, int32_t token) {
    s.history.add_chosen(token);
    ++s.step;
}

std::unique_ptr<vt_session> new_session(const vt_model& m, int64_t max_tokens) {
    VT_CHECK_ARG(max_tokens >= 0, "max_tokens %lld is negative (0 = the model's max_seq_len %lld)",
                 (long long)max_tokens, (long long)m.max_seq_len);
    VT_CHECK_ARG(max_tokens <= m.max_seq_len, "max_tokens %lld exceeds the model's max_seq_len %lld",
                 (long long)max_tokens, (long long)m.max_seq_len);
    auto s = std::make_unique<vt_session>();
    s->model = &m;
    s->max_tokens = max_tokens ? max_tokens : m.max_seq_len;
    s->history.init(m.cfg.vocab_size);
    s->plogits.assign(size_t(m.cfg.vocab_size), 0.0f);
    if (m.cuda) {
        s->cuda = cuda_new_session(*m.cuda, m, s->max_tokens);
        return s;
    }
    ensure_rows(*s, 1);
    ensure_part(*s, 1);
    s->logits.assign(size_t(m.cfg.vocab_size), 0.0f);
    // Small sessions get their whole cache now; large ones grow (doubling) as they fill.
    ensure_kv(*s, std::min<int64_t>(s->max_tokens, 256));
    return s;
}

void reset_session(vt_session& s) {
    s.len = 0;
    s.step = 0;
    s.history.clear();
}

void prefill(vt_session& s, const int32_t* tokens, int64_t n, const vt_sample_options* sampling, int32_t* next_token,
             float* logits, vt_logits_mode mode) {
    VT_CHECK_ARG(n >= 1, "prefill needs at least one token (n = %lld)", (long long)n);
    VT_CHECK_ARG(tokens != nullptr, "tokens is NULL");
    VT_CHECK_ARG(mode == VT_LOGITS_NONE || mode == VT_LOGITS_LAST || mode == VT_LOGITS_ALL,
                 "logits_mode %d is not a vt_logits_mode", int(mode));
    VT_CHECK_ARG(mode == VT_LOGITS_NONE || logits != nullptr, "logits is NULL but logits_mode asks for logits");
    if (next_token && sampling) check_sample_options(*sampling);
    check_room(s, n);  // first: an n larger than the cache is refused without reading tokens[n]
    check_tokens(*s.model, tokens, n);
    if (s.cuda) return cuda_prefill(*s.cuda, s, tokens, n, sampling, next_token, logits, mode);
    ensure_kv(s, s.len + n);
    ensure_rows(s, std::min(n, kPrefillChunk));

    const int64_t V = s.model->cfg.vocab_size;
    const bool need_last = next_token || mode == VT_LOGITS_LAST;
    float* last = mode == VT_LOGITS_LAST ? logits : s.logits.data();
    for (int64_t c0 = 0; c0 < n; c0 += kPrefillChunk) {
        const int64_t m = std::min(kPrefillChunk, n - c0);
        const bool final_chunk = c0 + m == n;
        const Pass p{s, tokens + c0, m, s.len + c0, nullptr};
        if (mode == VT_LOGITS_ALL) {
            forward(p, 0, logits + c0 * V);
        } else if (final_chunk && need_last) {
            forward(p, m - 1, last);
        } else {
            forward(p, m, nullptr);
        }
    }
    s.len += n;
    s.history.add_inputs(tokens, n);
    if (next_token) *next_token = choose_token(s, mode == VT_LOGITS_ALL ? logits + (n - 1) * V : last, sampling);
}

void decode(vt_session& s, int32_t token, const vt_sample_options* sampling, int32_t* next_token, float* logits) {
    if (next_token && sampling) check_sample_options(*sampling);
    check_room(s, 1);
    check_tokens(*s.model, &token, 1);
    if (s.cuda) return cuda_decode(*s.cuda, s, token, sampling, next_token, logits);
    ensure_kv(s, s.len + 1);
    float* out = logits ? logits : s.logits.data();
    forward(Pass{s, &token, 1, s.len, nullptr}, 0, (logits || next_token) ? out : nullptr);
    s.len += 1;
    s.history.add_inputs(&token, 1);
    if (next_token) *next_token = choose_token(s, out, sampling);
}

void decode_batch(vt_session* const* sessions, int64_t n, const int32_t* tokens, const vt_sample_options* sampling,
                  int32_t* next_tokens, float* logits) {
    VT_CHECK_ARG(sessions != nullptr, "sessions is NULL");
    VT_CHECK_ARG(tokens != nullptr, "tokens is NULL");
    VT_CHECK_ARG(n >= 1 && n <= VT_MAX_BATCH, "batch size %lld is outside [1, %d]", (long long)n, VT_MAX_BATCH);
    for (int64_t i = 0; i < n; ++i) {
        VT_CHECK_ARG(sessions[i] != nullptr, "sessions[%lld] is NULL", (long long)i);
        VT_CHECK_ARG(sessions[i]->model == sessions[0]->model,
                     "sessions[%lld] belongs to a different model than sessions[0]", (long long)i);
        for (int64_t j = 0; j < i; ++j)
            VT_CHECK_ARG(sessions[j] != sessions[i], "sessions[%lld] and sessions[%lld] are the same session",
                         (long long)j, (long long)i);
        if (next_tokens && sampling) check_sample_options(sampling[i]);
        check_room(*sessions[i], 1);
    }
    const vt_model& M = *sessions[0]->model;
    check_tokens(M, tokens, n);
    const int64_t V = M.cfg.vocab_size;
    if (M.cuda) {
        for (int64_t i = 0; i < n; ++i)
            decode(*sessions[i], tokens[i], sampling ? sampling + i : nullptr, next_tokens ? next_tokens + i : nullptr,
                   logits ? logits + i * V : nullptr);
        return;
    }
    for (int64_t i = 0; i < n; ++i) ensure_kv(*sessions[i], sessions[i]->len + 1);
    vt_session& s0 = *sessions[0];
    ensure_rows(s0, n);
    ensure_part(s0, n);
    float* out = logits;
    if (!out && next_tokens) {
        if (s0.logits.size() < size_t(n * V)) s0.logits.assign(size_t(n * V), 0.0f);
        out = s0.logits.data();
    }
    forward(Pass{s0, tokens, n, 0, sessions}, 0, out);
    for (int64_t i = 0; i < n; ++i) {
        vt_session& si = *sessions[i];
        si.len += 1;
        si.history.add_inputs(tokens + i, 1);
        if (next_tokens) next_tokens[i] = choose_token(si, out + i * V, sampling ? sampling + i : nullptr);
    }
}

}  // namespace vt
