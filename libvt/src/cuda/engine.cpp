// The CUDA backend (backend.h): model upload, sessions (device KV cache, scratch, the decode
// step's CUDA Graph), the forward pass of a prefill chunk or a decoded token, and the linears
// of the inference API on the device. Host code only (CUDA runtime API); the kernels are
// behind kernels.h. Validation, lengths and the token choice are the session layer's
// (session.cpp): a forward call gets validated tokens and its positions, and returns logits,
// the argmax or the top candidates.
//
// One decoded token = one graph replay: a copy of the step's inputs (token, position, RoPE
// cos/sin, computed on the host exactly as the CPU path computes them) from pinned memory, the
// embedding, per layer [RMSNorm+QKV+RoPE+KV write] [attention] [o_proj + residual]
// [RMSNorm+gate/up+SiLU·up] [down_proj + residual], then final norm + lm_head + argmax (or
// top-k candidates) and a copy of the result back. The host waits once per token, to read the
// chosen id; a step whose token the device chooses (greedy, or drawn on the device) and that
// wants no logits first launches the next position's step, fed that token on the device
// (decode_ahead.h), so the GPU does not wait for the host. Position and
// lengths live in device memory, so the graph is captured once per session, sampling mode and
// slot and replayed for every token (captured again only when the KV cache grows).
//
// The family features (family.h), as cpu/engine.cpp's run computes them: biases in the
// linears' epilogues (in device row order: layout.h's row_values); q/k norms as a separate
// kernel after a storing QKV linear (qkv_norm_rope); sliding windows and score soft-capping in
// the attention kernels; Gemma's embedding scale in the embedding, GeGLU in the gate/up
// epilogue, its post-attention and post-feedforward norms as o_proj / down_proj into a
// temporary + add_rmsnorm, the final soft-cap in the lm_head epilogue (before the argmax), and
// Gemma 3's local RoPE table for its sliding layers.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "backend.h"
#include "convert.h"
#include "cuda/cutlass_gemm.h"
#include "cuda/decode_ahead.h"
#include "cuda/device_math.h"
#include "cuda/kernels.h"
#include "cuda/layout.h"
#include "cuda/runtime.h"
#include "family.h"
#include "ops/rope.h"
#include "quant.h"
#include "sampling.h"
#include "threadpool.h"
#include "weights.h"

namespace vt {

using namespace cudak;

namespace {

constexpr int64_t kChunk = kPassRows;  // rows per forward call at most
static_assert(kTopK == kMaxCandidates, "the device's top-k is the session layer's candidate count");
constexpr int64_t kInitialCap = 512;   // first KV allocation (positions), then doubling
constexpr int kPdlRetries = 3;          // captures with PDL retried after one fails (not OOM)
// What the decode step's head leaves for the host (enqueue_head), also its graph's index.
constexpr int kHeadArgmax = 0, kHeadTop = 1, kHeadDraw = 2;

static_assert(kStepRopeFloats == kMaxHeadDim, "StepParams holds a RoPE table of every head_dim");

struct CudaLayer {
    DevLinear qkv;   // [QKV, H], Q/K rows paired for RoPE
    DevLinear o;     // [H, NH·HD]
    DevLinear gu;    // [2I, H], gate/up rows interleaved
    DevLinear down;  // [H, I]
    const float* attn_norm = nullptr;  // [H]
    const float* mlp_norm = nullptr;   // [H] (Gemma: pre_feedforward_layernorm)
    // The family's optional vectors (null when the model has none).
    const float* qkv_bias = nullptr;        // in qkv's device row order
    const float* o_bias = nullptr;          // [H]
    const float* gu_bias = nullptr;         // gate/up biases interleaved as gu's rows
    const float* down_bias = nullptr;       // [H]
    const float* q_norm = nullptr;          // [HD]
    const float* k_norm = nullptr;          // [HD]
    const float* post_attn_norm = nullptr;  // [H] (Gemma)
    const float* post_mlp_norm = nullptr;   // [H] (Gemma)
    int32_t window = 0;                     // sliding window (0: all keys)
    bool local_rope = false;                // rotates with the local RoPE base (Gemma 3)
    bool no_rope = false;                   // attends without RoPE (SmolLM3's NoPE layers)
};

// A vector to upload with the weights: its host values and where its device address goes.
struct VecPlan {
    std::vector<float> v;
    size_t off = 0;
    const float** dst = nullptr;
};

// One linear to upload: its device shape, its rows, its place in the model's allocation.
struct LinearPlan {
    LinearShape s;
    std::vector<RowSource> rows;
    size_t off_w = 0, off_s = 0, off_m = 0, off_r = 0, off_sb = 0, off_zb = 0;
    bool w8a16 = false;  // also the BF16 tables of the sm_90a W8A16 prefill GEMM
    DevLinear* dst = nullptr;
};

// The W8A16 prefill GEMM's reading of a device format (w8a16_plan.h), -1 where it has none.
int w8a16_weight(int fmt) {
    switch (fmt) {
        case kDevInt8: return kW8a16Int8;
        case kDevFp8:
        case kDevFp8Channel: return kW8a16Fp8;
        case kDevInt4:
        case kDevInt4Min: return kW8a16U4;
        default: return -1;
    }
}

void plan_linear(LinearPlan& p, Carve& cv) {
    p.off_w = cv.take(p.s.w_bytes());
    p.off_s = cv.take(p.s.scale_bytes());
    p.off_m = cv.take(p.s.min_bytes());
    p.off_r = cv.take(p.s.rowmul_bytes());
    if (p.w8a16) p.off_sb = cv.take(w8a16_scale_entries(p.s.kb, p.s.k_pad, p.s.n_pad) * 2);
    if (p.w8a16 && w8a16_weight(p.s.fmt) == kW8a16U4)
        p.off_zb = cv.take(w8a16_scale_entries(p.s.kb, p.s.k_pad, p.s.n_pad) * 2);
}

// Repacks on the host (all threads) and copies to the device.
void upload_linear(const LinearPlan& p, const DevMem& mem) {
    const LinearShape& s = p.s;
    std::vector<uint8_t> w(s.w_bytes());
    std::vector<uint16_t> sc(size_t(s.n_pad) * size_t(s.nkb));
    std::vector<uint16_t> mn(s.min_bytes() / 2);
    std::vector<float> rm(size_t(s.n_pad));
    parallel_for(s.n_pad, 16, [&](int64_t r0, int64_t r1, int) {
        repack_rows(s, p.rows.data(), r0, r1, w.data(), s.nkb ? sc.data() : nullptr, s.has_mins() ? mn.data() : nullptr,
                    rm.data());
    });
    check(cudaMemcpy(mem.get(p.off_w), w.data(), w.size(), cudaMemcpyHostToDevice), "weight upload");
    if (s.nkb) check(cudaMemcpy(mem.get(p.off_s), sc.data(), sc.size() * 2, cudaMemcpyHostToDevice), "scale upload");
    if (s.has_mins()) check(cudaMemcpy(mem.get(p.off_m), mn.data(), mn.size() * 2, cudaMemcpyHostToDevice), "min upload");
    check(cudaMemcpy(mem.get(p.off_r), rm.data(), rm.size() * 4, cudaMemcpyHostToDevice), "scale upload");
    if (p.w8a16) {
        std::vector<uint16_t> tb(w8a16_scale_entries(s.kb, s.k_pad, s.n_pad));
        w8a16_scales(s.nkb ? sc.data() : nullptr, s.n_pad, s.k_pad, s.kb, tb.data());
        check(cudaMemcpy(mem.get(p.off_sb), tb.data(), tb.size() * 2, cudaMemcpyHostToDevice), "scale upload");
        p.dst->scales_bf16 = mem.get<uint16_t>(p.off_sb);
        if (w8a16_weight(s.fmt) == kW8a16U4) {
            w8a16_zeros(sc.data(), s.has_mins() ? mn.data() : nullptr, s.n_pad, s.k_pad, s.kb, tb.data());
            check(cudaMemcpy(mem.get(p.off_zb), tb.data(), tb.size() * 2, cudaMemcpyHostToDevice), "scale upload");
            p.dst->zeros_bf16 = mem.get<uint16_t>(p.off_zb);
        }
    }
    p.dst->s = s;
    p.dst->w = mem.get<uint8_t>(p.off_w);
    p.dst->scales = s.nkb ? mem.get<uint16_t>(p.off_s) : nullptr;
    p.dst->mins = s.has_mins() ? mem.get<uint16_t>(p.off_m) : nullptr;
    p.dst->rowmul = mem.get<float>(p.off_r);
}

}  // namespace

// ==== Model ======================================================================================

struct CudaModel final : BackendModel {
    int dev = 0;
    DeviceInfo info;
    DevMem mem;                     // every weight, one allocation
    std::vector<CudaLayer> layers;  // [L]
    DevLinear lm_head;              // [V, H]
    const float* final_norm = nullptr;
    const void* embed = nullptr;    // [V, H] in embed_dtype
    int32_t embed_dtype = VT_DTYPE_BF16;
    int64_t H = 0, I = 0, V = 0, NH = 0, KV = 0, HD = 0, L = 0;
    int64_t ROT = 0;  // the dims RoPE rotates (partial rotary embeddings: < HD)
    float eps = 0.0f, qscale = 1.0f;
    // SmolLM3's NoPE layers: RoPE rows of the identity rotation (cos 1, sin 0), one per row a
    // pass or a batched step can have; the QKV epilogue reads them instead of the step's.
    const float* rope_none = nullptr;  // [max(kChunk, VT_MAX_BATCH)][HD], else null
    // The RoPE tables (the host computes the angles): the model's own, which outlives its
    // backend (vt_model owns both) — frequencies, Gemma 3's local ones, LongRoPE's choice, scale.
    const ModelWeights* rope = nullptr;
    bool qk_norm = false;               // q/k norms: the QKV linear stores, qkv_norm_rope goes on
    bool gemma = false;                 // Gemma 2 / 3: the post-attention / post-feedforward norms
    bool geglu = false;                 // every Gemma: the MLP is GeGLU (tanh GELU)
    float embed_scale = 0.0f;           // > 0: embeddings times this (Gemma)
    float attn_softcap = 0.0f, final_softcap = 0.0f;  // > 0: soft-capping (Gemma 2)
    // The sessions' KV cache: VT_DTYPE_F16 (default), I8 (int8 codes with f32 scales, kv_i8.h)
    // or F32.
    int32_t kv_dtype = VT_DTYPE_F16;
    bool kv_f16() const { return kv_dtype == VT_DTYPE_F16; }
    bool kv_i8() const { return kv_dtype == VT_DTYPE_I8; }
    // Caches whose store can fail (f16: beyond its range; int8: not finite), reported
    // through the sessions' kv_bad word.
    bool kv_checked() const { return kv_f16() || kv_i8(); }
    int kv_eb() const { return kv_f16() ? 2 : kv_i8() ? 1 : 4; }  // bytes per cache element

    std::unique_ptr<BackendSession> new_session(int64_t capacity) const override;
    bool can_pick() const override { return true; }
    int64_t device_bytes() const override {
        std::lock_guard<std::mutex> lock(batch_mu);
        return int64_t(mem.bytes()) + int64_t(batch_mem.bytes());
    }
    // The batched decode step (VT_CUDA_BATCH=0: the sessions in turn, as before 2026-11-27).
    bool batches() const override { return batched; }
    void decode_batch(BackendSession* const* sessions, int64_t n, const int32_t* tokens, const int64_t* pos,
                      float* logits) const override;

    bool batched = true;
    // VT_CUDA_PREFILL_GEMM=wgmma on an sm_90 device with the kernel built: the layer linears
    // that have scales_bf16 run prefill (m >= kW8a16MinM) on the sm_90a W8A16 GEMM; the
    // largest phases · n_pad and phases · k_pad among them size the sessions' scratch for it.
    bool w8a16 = false;
    int64_t w8a16_n = 0, w8a16_k = 0;
    // The batched step's activations, grown to the largest batch seen (one step at a time).
    mutable std::mutex batch_mu;
    mutable DevMem batch_mem;
};

std::unique_ptr<BackendModel> cuda_backend(const ModelWeights& m, int device_index, int32_t kv_dtype) {
    const LlamaConfig& c = m.cfg;
    // (device="auto" then runs the model on the CPU)
    if (c.mla)  // (before the MoE check: a DeepSeek whose layers are all dense is refused for this)
        fail(VT_STATUS_UNSUPPORTED, "%s: multi-head latent attention runs on the CPU backend only (the CUDA backend "
             "has no q / latent absorption yet)", c.family ? c.family->name : "this model");
    if (c.num_experts > 0)
        fail(VT_STATUS_UNSUPPORTED, "%s: mixture-of-experts models run on the CPU backend only (the CUDA backend has "
             "no expert routing yet)", c.family ? c.family->name : "this model");
    if (std::find(c.layer_conv.begin(), c.layer_conv.end(), uint8_t(1)) != c.layer_conv.end())
        fail(VT_STATUS_UNSUPPORTED, "%s: short-convolution layers run on the CPU backend only (the CUDA backend has "
             "no convolution state yet)", c.family ? c.family->name : "this model");
    if (c.family && c.family->llama4_attn_scale)
        fail(VT_STATUS_UNSUPPORTED, "%s: its position-dependent query scale (llama_4_scaling_beta) runs on the CPU "
             "backend only (the CUDA RoPE kernel scales every query alike)", c.family->name);
    if (c.attn_gate)
        fail(VT_STATUS_UNSUPPORTED, "%s: its heads' output gate runs on the CPU backend only (the CUDA attention has "
             "no gate in its epilogue yet)", c.family ? c.family->name : "this model");
    if (c.family && (c.family->post_norm_only || c.family->qk_norm_full || c.clip_qkv > 0))
        fail(VT_STATUS_UNSUPPORTED, "%s: its block (q/k norms over the whole projection, OLMo 2's post norms, "
             "clip_qkv) runs on the CPU backend only (the CUDA kernels norm q and k per head and fuse a pre-norm into "
             "every block)", c.family ? c.family->name : "this model");
    if (c.family && c.family->norm == ModelFamily::LAYER_NORM)  // (Phi, StableLM)
        fail(VT_STATUS_UNSUPPORTED, "%s: its block (LayerNorm %s%s) runs on the CPU backend only (the CUDA "
             "kernels fuse an RMSNorm%s into every block)", c.family->name,
             c.family->norm_without_bias ? "without biases" : "with biases",
             c.family->phi ? "; the parallel attention / MLP residual, an ungated GELU MLP, lm_head's bias"
             : c.family->parallel_block ? "; the parallel attention / MLP residual, logit_scale"
             : c.parallel_two_norms ? "; the parallel attention / MLP residual with two norms, an ungated GELU MLP"
             : c.parallel_one_norm ? "; the parallel attention / MLP residual, an ungated GELU MLP"
             : ungated_mlp(*c.family) ? (std::strcmp(c.family->activation, "relu2") == 0 ? "; an ungated relu² MLP"
                                                                                 : "; an ungated GELU MLP")
                                      : "",
             ungated_mlp(*c.family) ? " and a gated MLP" : "");
    if (c.family && c.family->gemma_block() && !c.family->layer_tensors[T_POST_ATTN_NORM])
        fail(VT_STATUS_UNSUPPORTED, "%s: Gemma 2's block without its post norms runs on the CPU backend only (the "
             "CUDA Gemma path norms every attention and MLP output)", c.family->name);
    if (c.family && c.family->qk_norm_after_rope)
        fail(VT_STATUS_UNSUPPORTED, "%s: its q/k norms after RoPE run on the CPU backend only (the CUDA kernels norm "
             "q and k before RoPE)", c.family->name);
    if (c.sandwich_norms)
        fail(VT_STATUS_UNSUPPORTED, "%s: its block (the attention and MLP outputs RMSNormed before the residual adds "
             "of a pre-norm block) runs on the CPU backend only (the CUDA kernels have those norms for Gemma's block "
             "only)", c.family->name);
    if (c.family && ungated_mlp(*c.family) && c.family->norm != ModelFamily::LAYER_NORM)
        fail(VT_STATUS_UNSUPPORTED, "%s: its ungated MLP (%s of one linear) runs on the CPU backend only (the CUDA "
             "kernels have the gated SwiGLU / GeGLU epilogues)", c.family->name, c.family->activation);
    if (c.family && c.family->multipliers)
        fail(VT_STATUS_UNSUPPORTED, "%s: its multipliers (residual_multiplier, logits_scaling, attention_multiplier) "
             "run on the CPU backend only (the CUDA kernels' epilogues have no such scales yet)", c.family->name);
    if (kv_dtype != VT_DTYPE_F16 && kv_dtype != VT_DTYPE_F32 && kv_dtype != VT_DTYPE_I8)
        fail(VT_STATUS_UNSUPPORTED, "KV cache dtype %d is not one the CUDA backend has (F16, F32, I8)", int(kv_dtype));
    const DeviceInfo& info = device_info(device_index);
    std::unique_ptr<CudaModel> cm(new CudaModel);
    cm->dev = device_index;
    cm->info = info;
    cm->batched = env_on("VT_CUDA_BATCH", true);
    const bool want_w8a16 = prefill_wgmma();  // a bad value is an error in every build
#if defined(VT_HAVE_CUTLASS_W8A16_SM90)
    if (want_w8a16) {
        // The kernel image check (cudaFuncGetAttributes) runs on the current device: make it
        // the model's, as the FP8 GEMM's check does.
        DeviceGuard g(device_index);
        cm->w8a16 = w8a16_sm90_supported(info.cc_major, info.cc_minor);
    }
#else
    (void)want_w8a16;
#endif
    cm->H = c.hidden_size;
    cm->I = c.intermediate_size;
    cm->V = c.vocab_size;
    cm->NH = c.num_heads;
    cm->KV = c.num_kv_heads;
    cm->HD = c.head_dim;
    cm->L = c.num_layers;
    cm->eps = float(c.rms_norm_eps);
    cm->gemma = c.family && c.family->gemma_block();
    cm->geglu = c.family && c.family->gemma != ModelFamily::NOT_GEMMA;
    // Scores are q·k / sqrt(head_dim) (Gemma 2: query_pre_attn_scalar^-0.5), as the CPU's run.
    cm->qscale = cm->gemma ? float(std::pow(c.query_pre_attn_scalar, -0.5)) : 1.0f / std::sqrt(float(c.head_dim));
    cm->rope = &m;
    cm->qk_norm = c.qk_norm;
    cm->embed_scale = c.embed_scale;
    cm->attn_softcap = float(c.attn_softcap);
    cm->final_softcap = float(c.final_softcap);
    cm->kv_dtype = kv_dtype;
    cm->ROT = c.rotary_width();
    if (cm->HD % 4 != 0 || cm->HD > kMaxHeadDim)
        fail(VT_STATUS_UNSUPPORTED, "the CUDA backend supports head_dim a multiple of 4 up to %d; this model has %lld",
             kMaxHeadDim, (long long)cm->HD);
    if (cm->NH / cm->KV > attn_max_group(int(cm->HD)))
        fail(VT_STATUS_UNSUPPORTED,
             "the CUDA backend supports up to %d query heads per KV head at head_dim %lld; this model has %lld",
             attn_max_group(int(cm->HD)), (long long)cm->HD, (long long)(cm->NH / cm->KV));
    if (cm->V >= (int64_t(1) << 31) || cm->H >= (int64_t(1) << 30) || cm->I >= (int64_t(1) << 30))
        fail(VT_STATUS_UNSUPPORTED, "model dimensions exceed the CUDA kernels' 32-bit indexing");
    if (m.embed_dtype != VT_DTYPE_F32 && m.embed_dtype != VT_DTYPE_F16 && m.embed_dtype != VT_DTYPE_BF16)
        fail(VT_STATUS_UNSUPPORTED, "embedding dtype %d is not F32, F16 or BF16", int(m.embed_dtype));

    // Plan: every linear and vector in one allocation.
    std::vector<LinearPlan> plans;
    plans.reserve(size_t(4 * cm->L + 1));
    std::vector<VecPlan> vecs;  // norms, biases (device row order), q/k norms
    auto add_vec = [&](std::vector<float> v, const float** dst) {
        if (v.empty()) return;
        VecPlan vp;
        vp.v = std::move(v);
        vp.dst = dst;
        vecs.push_back(std::move(vp));
    };
    auto host_vec = [](const AlignedVec<float>& a) { return std::vector<float>(a.begin(), a.end()); };
    auto nz = [](const AlignedVec<float>& a) { return a.empty() ? nullptr : a.data(); };
    cm->layers.resize(size_t(cm->L));
    Carve cv;
    for (int64_t l = 0; l < cm->L; ++l) {
        const LayerWeights& w = m.layers[size_t(l)];
        CudaLayer& d = cm->layers[size_t(l)];
        // What the kernels need of each, checked before anything reads them: refused here,
        // never read out of bounds.
        auto sized = [](const AlignedVec<float>& v, int64_t n) { return v.empty() || int64_t(v.size()) == n; };
        if ((cm->qk_norm && (int64_t(w.q_norm.size()) != cm->HD || int64_t(w.k_norm.size()) != cm->HD)) ||
            (cm->gemma && (int64_t(w.post_attn_norm.size()) != cm->H || int64_t(w.post_mlp_norm.size()) != cm->H)) ||
            !sized(w.qkv_bias, w.qkv->out) || !sized(w.o_bias, w.o->out) || !sized(w.gate_bias, w.gate->out) ||
            !sized(w.up_bias, w.up->out) || !sized(w.down_bias, w.down->out))
            fail(VT_STATUS_INTERNAL, "layer %lld: a norm or bias the config enables is missing or of the wrong size",
                 (long long)l);
        // gate and up become one interleaved device linear of gate's layout (the loader packs
        // the pair in one format: model.cpp).
        if (w.gate->format != w.up->format || w.gate->block != w.up->block || w.gate->in != w.up->in ||
            w.gate->out != w.up->out)
            fail(VT_STATUS_INTERNAL, "layer %lld: gate and up differ in format, block size or shape", (long long)l);
        LinearPlan p;
        p.s = linear_shape(*w.qkv, w.qkv->out);
        p.rows = rows_qkv(*w.qkv, cm->NH, cm->KV, cm->HD, c.rotary_dim);
        p.dst = &d.qkv;
        if (!w.qkv_bias.empty()) add_vec(row_values(p.rows, {{w.qkv.get(), w.qkv_bias.data()}}), &d.qkv_bias);
        plans.push_back(std::move(p));
        p = LinearPlan();
        p.s = linear_shape(*w.o, w.o->out);
        p.rows = rows_plain(*w.o);
        p.dst = &d.o;
        plans.push_back(std::move(p));
        p = LinearPlan();
        p.s = linear_shape(*w.gate, 2 * w.gate->out);
        p.rows = rows_interleave(*w.gate, *w.up);
        p.dst = &d.gu;
        if (!w.gate_bias.empty() || !w.up_bias.empty())
            add_vec(row_values(p.rows, {{w.gate.get(), nz(w.gate_bias)}, {w.up.get(), nz(w.up_bias)}}), &d.gu_bias);
        plans.push_back(std::move(p));
        p = LinearPlan();
        p.s = linear_shape(*w.down, w.down->out);
        p.rows = rows_plain(*w.down);
        p.dst = &d.down;
        plans.push_back(std::move(p));
        add_vec(host_vec(w.attn_norm), &d.attn_norm);
        add_vec(host_vec(w.mlp_norm), &d.mlp_norm);
        add_vec(host_vec(w.o_bias), &d.o_bias);
        add_vec(host_vec(w.down_bias), &d.down_bias);
        add_vec(host_vec(w.q_norm), &d.q_norm);
        add_vec(host_vec(w.k_norm), &d.k_norm);
        add_vec(host_vec(w.post_attn_norm), &d.post_attn_norm);
        add_vec(host_vec(w.post_mlp_norm), &d.post_mlp_norm);
        const int64_t win = c.layer_window[size_t(l)];
        d.window = win > 0 && win < (int64_t(1) << 31) ? int32_t(win) : 0;
        d.local_rope = !m.inv_freq_local.empty() && c.layer_local_rope[size_t(l)];
        d.no_rope = size_t(l) < c.layer_nope.size() && c.layer_nope[size_t(l)];
    }
    if (std::any_of(cm->layers.begin(), cm->layers.end(), [](const CudaLayer& d) { return d.no_rope; })) {
        const int64_t rows = std::max<int64_t>(kChunk, VT_MAX_BATCH);
        std::vector<float> id(size_t(rows * cm->HD), 0.0f);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t k = 0; k < cm->ROT / 2; ++k) id[size_t(r * cm->HD + k)] = 1.0f;
        add_vec(std::move(id), &cm->rope_none);
    }
    {
        LinearPlan p;
        p.s = linear_shape(*m.lm_head, m.lm_head->out);
        p.rows = rows_plain(*m.lm_head);
        p.dst = &cm->lm_head;
        plans.push_back(std::move(p));
    }
    // The layer linears the W8A16 prefill GEMM takes (not the LM head: prefill needs one row
    // of it, and its scratch would be [rows][vocabulary]).
    for (size_t i = 0; i + 1 < plans.size() && cm->w8a16; ++i) {
        LinearPlan& p = plans[i];
        const int wt = w8a16_weight(p.s.fmt);
        p.w8a16 = wt >= 0 && w8a16_shape_ok(p.s.kb, p.s.k_pad, p.s.n_pad, wt);
        if (p.w8a16) {
            const int64_t ph = w8a16_phases(p.s.kb, p.s.k_pad);
            cm->w8a16_n = std::max<int64_t>(cm->w8a16_n, ph * p.s.n_pad);
            cm->w8a16_k = std::max<int64_t>(cm->w8a16_k, ph * p.s.k_pad);
        }
    }
    for (LinearPlan& p : plans) plan_linear(p, cv);
    add_vec(host_vec(m.final_norm), &cm->final_norm);
    for (VecPlan& v : vecs) v.off = cv.take(v.v.size() * 4);
    const size_t embed_off = cv.take(m.embed.size());

    cm->mem.alloc(cm->dev, cv.off, "the model weights");
    DeviceGuard guard(cm->dev);
    for (const LinearPlan& p : plans) upload_linear(p, cm->mem);
    for (const VecPlan& v : vecs) {
        check(cudaMemcpy(cm->mem.get(v.off), v.v.data(), v.v.size() * 4, cudaMemcpyHostToDevice), "norm/bias upload");
        *v.dst = cm->mem.get<float>(v.off);
    }
    check(cudaMemcpy(cm->mem.get(embed_off), m.embed.data(), m.embed.size(), cudaMemcpyHostToDevice),
          "embedding upload");
    cm->embed = cm->mem.get(embed_off);
    cm->embed_dtype = m.embed_dtype;
    check(cudaDeviceSynchronize(), "model upload");
    return cm;
}

// ==== Session ====================================================================================

struct CudaSession final : BackendSession {
    const CudaModel* cm = nullptr;
    int dev = 0;
    cudaStream_t stream = nullptr;
    bool use_graphs = true;  // VT_CUDA_GRAPHS=0: launch eagerly (debugging, the replay test)
    bool pdl = false;        // programmatic dependent launch (sm_90; VT_CUDA_PDL=0 turns it off)
    bool pdl_wanted = false; // pdl as the session started; a failed capture may turn pdl off
    int pdl_retries = 0;     // captures with PDL still to try after one failed (run_decode)
    std::string pdl_off_why; // the last capture error that made a token run without PDL

    int64_t max_tokens = 0;
    int64_t cap = 0;         // KV positions allocated
    int splits = 1;          // decode attention splits (depends on cap)
    // K^T [L][KV][HD][cap] | V [L][KV][cap][HD], f16, f32 or int8 (cm->kv_eb()); int8 then
    // its f32 scales [L][KV][cap][2] (key, value; cuda/kv_layout.h)
    DevMem kv;
    size_t eb = 2;           // bytes per cache element

    DevMem scratch;
    float* x = nullptr;       // [R][H]  residual stream
    float* xn = nullptr;      // [R][H]  normed rows (GEMM inputs)
    float* q = nullptr;       // [R][NH·HD]
    float* att = nullptr;     // [R][NH·HD]
    float* mlp = nullptr;     // [R][I]
    float* qkv_raw = nullptr; // [R][QKV] q/k-norm models: the QKV linear's output, device row order
    float* kv_stage = nullptr; // [R][2][KV][HD] int8 cache: the keys and values before kv_store_i8
    uint16_t* xb = nullptr;   // [R][cm->w8a16_k] BF16 inputs of the W8A16 prefill GEMM (cm->w8a16), per pass
    float* yd = nullptr;      // [R][cm->w8a16_n] its products, per pass, before the epilogue pass
    float* tmp = nullptr;     // [R][H]  Gemma: o_proj / down_proj output before its post norm
    float* logits = nullptr;  // [V]
    float* partial = nullptr; // decode attention partials
    int32_t* counters = nullptr;
    int32_t* tokens = nullptr;  // [R]
    int32_t* pos = nullptr;     // prefill: position of row 0
    float* rope = nullptr;      // [R][HD]
    float* rope_local = nullptr;  // [R][HD] with the local RoPE base (Gemma 3), else null
    StepParams* step = nullptr;             // [2] the decode step's inputs, per slot (decode_ahead.h)
    unsigned long long* argmax = nullptr;   // [2] per slot: the lm_head's argmax key (prefill: slot 0)
    unsigned long long* topk_scratch = nullptr;
    unsigned long long* cand = nullptr;  // [kTopK]
    unsigned long long* kv_bad = nullptr;  // f16 cache: the first (layer, position) out of range

    DevMem logits_rows;  // [kChunk][V], only for VT_LOGITS_ALL (allocated on first use)

    PinnedMem host;
    StepParams* h_step = nullptr;            // [2] per slot
    unsigned long long* h_result = nullptr;  // [2][kTopK] per slot
    unsigned long long* h_kv_bad = nullptr;  // [2] per slot: kv_bad as that slot's last step left it

    cudaGraphExec_t graphs[3][2] = {};  // [kHeadArgmax, kHeadTop, kHeadDraw][slot]
    cudaEvent_t done[2] = {nullptr, nullptr};  // per slot: recorded after its last decode step

    // Device-side token feedback (decode_ahead.h; VT_CUDA_FEEDBACK=0 turns it off).
    bool feedback = true;
    bool device_draw = true;  // Pick::Draw taken (VT_CUDA_DEVICE_DRAW=0: sampled tokens drawn on the host)
    AheadStep ahead;
    int64_t ahead_used = 0, ahead_dropped = 0;

    void* kcache(int64_t l) const { return kv_layer_k(kv.get(), cap, int(l), int(cm->KV), int(cm->HD), int(eb)); }
    void* vcache(int64_t l) const {
        return kv_layer_v(kv.get(), cap, int(l), int(cm->L), int(cm->KV), int(cm->HD), int(eb));
    }
    float* kv_scales(int64_t l) const {  // int8 cache only: layer l's [KV][cap][2]
        return kv_layer_scales(kv.get(), cap, int(l), int(cm->L), int(cm->KV), int(cm->HD));
    }
    LaunchCfg cfg() const { return LaunchCfg{stream, pdl}; }

    void forward(const int32_t* toks, int64_t n, int64_t pos0, Logits out, float* host_logits, Pick pick,
                 Picked* picked) override;
    void reserve(int64_t len, int64_t needed) override;
    void copy_prefix(const BackendSession& src, int64_t n) override;
    bool uses_pdl(std::string* why_off) const override {
        if (why_off) *why_off = pdl_off_why;
        return pdl;
    }
    bool can_draw() const override { return device_draw; }
    bool feedback_counts(int64_t* used, int64_t* dropped) const override {
        *used = ahead_used;
        *dropped = ahead_dropped;
        return feedback;
    }

    // Waits for a step launched ahead and forgets it (before anything that would rewrite its
    // inputs, free its cache or run another step at its position). The keys and values it
    // wrote at its position are overwritten by whatever runs there next.
    void settle() {
        if (!ahead.in_flight) return;
        ahead.in_flight = false;
        ++ahead_dropped;
        check(cudaEventSynchronize(done[step_slot(ahead.pos)]), "decode step launched ahead");
    }

    void drop_graphs() noexcept {
        for (auto& mode : graphs)
            for (auto& g : mode)
                if (g) {
                    cudaGraphExecDestroy(g);  // one still running is freed when it completes
                    g = nullptr;
                }
    }
    ~CudaSession() {
        int prev = -1;
        cudaGetDevice(&prev);
        cudaSetDevice(dev);
        drop_graphs();
        if (stream) {
            cudaStreamSynchronize(stream);
            cudaStreamDestroy(stream);
        }
        for (cudaEvent_t e : done)
            if (e) cudaEventDestroy(e);
        cudaGetLastError();
        if (prev >= 0) cudaSetDevice(prev);
    }
};

namespace {

int attention_units(const CudaModel& cm) {
    const int64_t G = cm.NH / cm.KV, gb = std::min<int64_t>(G, kAttnMaxGroup);
    return int(cm.KV * ((G + gb - 1) / gb));
}

// The first n positions of a KV cache of capacity scap (src) into one of capacity dcap (dst):
// the K^T rows and the V planes, elements of eb bytes (eb 1, an int8 cache: then the rows of
// its (key, value) scale pairs), enqueued on `stream`.
void copy_kv(const CudaModel& c, char* dst, int64_t dcap, const char* src, int64_t scap, int64_t n, size_t eb,
             cudaStream_t stream, const char* what) {
    const size_t rows_k = size_t(c.L * c.KV * c.HD), rows_v = size_t(c.L * c.KV);
    check(cudaMemcpy2DAsync(dst, size_t(dcap) * eb, src, size_t(scap) * eb, size_t(n) * eb, rows_k,
                            cudaMemcpyDeviceToDevice, stream),
          what);
    check(cudaMemcpy2DAsync(dst + rows_k * size_t(dcap) * eb, size_t(dcap * c.HD) * eb,
                            src + rows_k * size_t(scap) * eb, size_t(scap * c.HD) * eb, size_t(n * c.HD) * eb, rows_v,
                            cudaMemcpyDeviceToDevice, stream),
          what);
    if (eb == 1) {  // [L][KV] rows of (key, value) f32 scale pairs after both planes
        const char* ss = reinterpret_cast<const char*>(kv_layer_scales(const_cast<char*>(src), scap, 0, int(c.L),
                                                                       int(c.KV), int(c.HD)));
        char* ds = reinterpret_cast<char*>(kv_layer_scales(dst, dcap, 0, int(c.L), int(c.KV), int(c.HD)));
        check(cudaMemcpy2DAsync(ds, size_t(dcap) * 8, ss, size_t(scap) * 8, size_t(n) * 8, rows_v,
                                cudaMemcpyDeviceToDevice, stream),
              what);
    }
}

// Grows the KV cache to hold `needed` positions (keeping the first `len`); invalidates the
// graphs, whose kernels hold the old addresses. On failure the session is unchanged.
void ensure_kv(CudaSession& s, int64_t needed, int64_t len) {
    if (needed <= s.cap) return;
    s.settle();  // (a step launched ahead only ever writes below cap; the old cache is freed here)
    const CudaModel& c = *s.cm;
    const int64_t cap = std::min(s.max_tokens, std::max({needed, 2 * s.cap, kInitialCap}));
    DevMem nk;
    nk.alloc(s.dev, size_t(kv_cache_bytes(cap, int(c.L), int(c.KV), int(c.HD), int(s.eb))), "the KV cache");
    if (len > 0) {
        copy_kv(c, nk.get<char>(), cap, s.kv.get<char>(), s.cap, len, s.eb, s.stream, "KV cache growth");
        check(cudaStreamSynchronize(s.stream), "KV cache growth");
    }
    s.kv.swap(nk);
    s.cap = cap;
    s.drop_graphs();
    const int units = attention_units(c);
    int splits = int((2 * c.info.sms + units - 1) / units);
    const int sk = attn_split_keys();
    splits = std::max(1, std::min({splits, kAttnMaxSplits, int((cap + sk - 1) / sk)}));
    s.splits = splits;
}

// A linear of the forward pass: GEMV with fused RMSNorm for m <= 8, else RMSNorm + GEMM.
void run_linear(CudaSession& s, const DevLinear& w, const float* x, int64_t ldx, int m, const float* norm,
                const Epilogue& e) {
    const LaunchCfg lc = s.cfg();
    if (m <= kGemvMaxM) {
        gemv(lc, w, x, ldx, m, norm, s.cm->eps, e);
        return;
    }
    const float* in = x;
    if (norm) {
        rmsnorm(lc, x, norm, s.cm->eps, ldx, m, s.xn);
        in = s.xn;
    }
#if defined(VT_HAVE_CUTLASS_W8A16_SM90)
    if (w.scales_bf16 && s.xb && m >= kW8a16MinM) {
        // The sm_90a W8A16 GEMM (VT_CUDA_PREFILL_GEMM=wgmma): x to BF16 (one copy per pass),
        // the GEMM's passes into s.yd, then the epilogue, which adds them. (rmsnorm writes s.xn
        // with the pitch of x.)
        const int phases = w8a16_phases(w.s.kb, w.s.k_pad);
        const W8a16Sm90Problem p = w8a16_problem(m, w.s.n_pad, w.s.k_pad, w.s.kb, w8a16_weight(w.s.fmt), w.w,
                                                 w.scales_bf16, w.zeros_bf16, s.xb, s.yd);
        to_bf16_rows(lc, in, ldx, m, w.s.k, w.s.k_pad, phases, w.s.kb, s.xb);
        w8a16_gemm_sm90(s.stream, p, s.dev);
        gemm_finish(lc, w, s.yd, p.ldd, m, phases, p.d_phase, e);
        return;
    }
#endif
    gemm(lc, w, in, ldx, m, e);
}

// o_proj or down_proj (x · Wᵀ + bias) into the residual stream; with a post norm (Gemma)
// into s.tmp first, then x += rmsnorm(tmp) · post_norm.
void linear_to_residual(CudaSession& s, const DevLinear& w, const float* in, int64_t ldin, int m, const float* bias,
                        const float* post_norm) {
    const CudaModel& c = *s.cm;
    Epilogue e;
    e.kind = post_norm ? kEpiStore : kEpiAdd;
    e.out = post_norm ? s.tmp : s.x;
    e.ld = c.H;
    e.bias = bias;
    run_linear(s, w, in, ldin, m, nullptr, e);
    if (post_norm) add_rmsnorm(s.cfg(), s.x, s.tmp, post_norm, c.eps, c.H, m);
}

// All blocks for m rows already embedded in s.x, at positions *pos + i with RoPE rows `rope`
// (and `rope_local` for the layers that rotate with the local base).
// Layer l's QKV epilogue (RoPE, q into `q`, k and v into the cache) for rows at `pos` with the
// RoPE rows `rope` / `rope_local`; the cache fields (one cache, or a batch's KvRow table) are
// the caller's.
Epilogue qkv_epilogue(const CudaModel& c, int64_t l, float* q, const int32_t* pos, const float* rope,
                      const float* rope_local, unsigned long long* kv_bad) {
    Epilogue eq;
    eq.kind = kEpiQkv;
    eq.out = q;
    eq.ld = c.NH * c.HD;
    eq.nh = int(c.NH);
    eq.nkv = int(c.KV);
    eq.hd = int(c.HD);
    eq.rot = int(c.ROT);
    eq.qscale = c.qscale;
    eq.rope = c.layers[size_t(l)].no_rope ? c.rope_none : c.layers[size_t(l)].local_rope ? rope_local : rope;
    eq.pos = pos;
    eq.kv_f16 = c.kv_f16();
    eq.layer = int32_t(l);
    eq.kv_bad = c.kv_checked() ? kv_bad : nullptr;
    return eq;
}

// Layer l's attention arguments (queries q, output out, rows at `pos`, m rows; decode:
// `splits` and their scratch); the cache fields are the caller's, as for qkv_epilogue.
AttnArgs attn_args(const CudaModel& c, int64_t l, const float* q, float* out, const int32_t* pos, int m, int splits,
                   float* partial, int32_t* counters) {
    AttnArgs a;
    a.q = q;
    a.kv_f16 = c.kv_f16();
    a.kv_i8 = c.kv_i8();
    a.out = out;
    a.pos = pos;
    a.nh = int(c.NH);
    a.nkv = int(c.KV);
    a.hd = int(c.HD);
    a.m = m;
    a.window = c.layers[size_t(l)].window;
    a.softcap = c.attn_softcap;
    a.splits = splits;
    a.partial = partial;
    a.counters = counters;
    return a;
}

void enqueue_blocks(CudaSession& s, int m, const int32_t* pos, const float* rope, const float* rope_local) {
    const CudaModel& c = *s.cm;
    const int64_t QKV = (c.NH + 2 * c.KV) * c.HD;
    for (int64_t l = 0; l < c.L; ++l) {
        const CudaLayer& w = c.layers[size_t(l)];
        Epilogue eq = qkv_epilogue(c, l, s.q, pos, rope, rope_local, s.kv_bad);
        eq.kcache = s.kcache(l);
        eq.vcache = s.vcache(l);
        eq.cap = s.cap;
        if (c.kv_i8()) {  // keys and values into the staging, then their codes into the cache
            eq.kv_stage = s.kv_stage;
            eq.kv_scales = s.kv_scales(l);
        }
        if (c.qk_norm) {
            // q/k norms need a whole head: the linear stores (bias added), a kernel goes on.
            Epilogue er;
            er.kind = kEpiStore;
            er.out = s.qkv_raw;
            er.ld = QKV;
            er.bias = w.qkv_bias;
            run_linear(s, w.qkv, s.x, c.H, m, w.attn_norm, er);
            qkv_norm_rope(s.cfg(), s.qkv_raw, QKV, m, w.q_norm, w.k_norm, c.eps, eq);
        } else {
            eq.bias = w.qkv_bias;
            run_linear(s, w.qkv, s.x, c.H, m, w.attn_norm, eq);
        }
        if (c.kv_i8()) kv_store_i8(s.cfg(), s.kv_stage, m, eq);

        AttnArgs a = attn_args(c, l, s.q, s.att, pos, m, s.splits, s.partial, s.counters);
        a.kcache = s.kcache(l);
        a.vcache = s.vcache(l);
        a.cap = s.cap;
        if (c.kv_i8()) a.kv_scales = s.kv_scales(l);
        if (m == 1) attention_decode(s.cfg(), a);
        else attention_prefill(s.cfg(), a);

        linear_to_residual(s, w.o, s.att, c.NH * c.HD, m, w.o_bias, w.post_attn_norm);

        Epilogue eg;
        eg.kind = kEpiSwiglu;
        eg.act = c.geglu ? kActGeluTanh : kActSilu;
        eg.out = s.mlp;
        eg.ld = c.I;
        eg.bias = w.gu_bias;
        run_linear(s, w.gu, s.x, c.H, m, w.mlp_norm, eg);

        linear_to_residual(s, w.down, s.mlp, c.I, m, w.down_bias, w.post_mlp_norm);
    }
}

// Slot `slot`'s result buffers (decode_ahead.h; prefill uses slot 0).
unsigned long long* result_slot(const CudaSession& s, int slot) { return s.h_result + size_t(slot) * kTopK; }

// Final norm + lm_head of row `row` of s.x into s.logits, then the choice: kHeadArgmax the
// argmax (into slot `slot`'s key), kHeadTop the top-k candidates, kHeadDraw those and the token
// drawn from them with slot `slot`'s draw arguments (its key into the slot's key); then what
// the host reads back into that slot's pinned result buffer (a key, or the candidates).
void enqueue_head(CudaSession& s, int64_t row, int mode, int slot) {
    const CudaModel& c = *s.cm;
    Epilogue el;
    el.kind = kEpiStore;
    el.out = s.logits;
    el.ld = c.V;
    el.argmax = mode == kHeadArgmax ? s.argmax + slot : nullptr;
    el.softcap = c.final_softcap;
    gemv(s.cfg(), c.lm_head, s.x + row * c.H, c.H, 1, c.final_norm, c.eps, el);
    if (mode != kHeadArgmax) topk(s.cfg(), s.logits, c.V, s.topk_scratch, s.cand);
    if (mode == kHeadDraw) draw(s.cfg(), s.cand, &s.step[slot].draw, s.argmax + slot);
    if (mode == kHeadTop) {
        check(cudaMemcpyAsync(result_slot(s, slot), s.cand, kTopK * sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                              s.stream),
              "result copy");
    } else {
        check(cudaMemcpyAsync(result_slot(s, slot), s.argmax + slot, sizeof(unsigned long long), cudaMemcpyDeviceToHost,
                              s.stream),
              "result copy");
    }
}

// The whole decode step of slot `slot` (captured into that slot's graph). With the slot's
// feedback flag set, the embedding takes its token from the other slot's argmax key: the
// choice of the step before, still on the device.
void enqueue_decode(CudaSession& s, int mode, int slot) {
    const CudaModel& c = *s.cm;
    StepParams* st = s.step + slot;
    check(cudaMemcpyAsync(st, s.h_step + slot, sizeof(StepParams), cudaMemcpyHostToDevice, s.stream), "step input copy");
    if (c.kv_checked())
        check(cudaMemsetAsync(s.kv_bad, 0xFF, sizeof(unsigned long long), s.stream), "KV range flag reset");
    // The first kernel after a copy: launched without the PDL attribute.
    embed(LaunchCfg{s.stream, false}, c.embed, c.embed_dtype, c.H, &st->token, 1, s.x, c.embed_scale, s.argmax + slot,
          &st->feedback, s.argmax + (1 - slot));
    enqueue_blocks(s, 1, &st->pos, st->rope, st->rope_local);
    enqueue_head(s, 0, mode, slot);
    if (c.kv_checked())
        check(cudaMemcpyAsync(s.h_kv_bad + slot, s.kv_bad, sizeof(unsigned long long), cudaMemcpyDeviceToHost, s.stream),
              "result copy");
}

// After the stream is done with slot `slot`'s forward: an f16 cache that could not hold a key
// or value, or an int8 cache given a non-finite one, fails the call, as the CPU's store_kv
// does (same messages).
void check_kv_range(const CudaSession& s, int slot) {
    const unsigned long long k = s.h_kv_bad[slot];
    if (!s.cm->kv_checked() || k == ~0ull) return;
    if (s.cm->kv_i8())
        fail(VT_STATUS_UNSUPPORTED,
             "layer %lld: a key or value of the token at position %lld is not finite; the int8 KV cache cannot hold "
             "it (load the model with kv_cache_dtype F32 to see it propagate)",
             (long long)(k >> 32), (long long)(k & 0xFFFFFFFFull));
    fail(VT_STATUS_UNSUPPORTED,
         "layer %lld: a key or value of the token at position %lld is beyond the range of the f16 KV cache (largest "
         "finite f16: 65504); load the model with kv_cache_dtype F32 (pyvt: kv_cache=\"f32\")",
         (long long)(k >> 32), (long long)(k & 0xFFFFFFFFull));
}

void capture(CudaSession& s, int mode, int slot) {
    // Capture from an idle stream (a step launched ahead may still be running: it stays valid).
    check(cudaStreamSynchronize(s.stream), "decode graph capture");
    cudaGraph_t g = nullptr;
    check(cudaStreamBeginCapture(s.stream, cudaStreamCaptureModeThreadLocal), "cudaStreamBeginCapture");
    try {
        enqueue_decode(s, mode, slot);
    } catch (...) {
        cudaStreamEndCapture(s.stream, &g);
        if (g) cudaGraphDestroy(g);
        cudaGetLastError();
        throw;
    }
    check(cudaStreamEndCapture(s.stream, &g), "cudaStreamEndCapture (decode graph)");
    cudaGraphExec_t ge = nullptr;
    const cudaError_t e = cudaGraphInstantiate(&ge, g, 0);
    cudaGraphDestroy(g);
    if (e != cudaSuccess) cuda_fail(e, "cudaGraphInstantiate (decode graph)");
    s.graphs[mode][slot] = ge;
}

// Enqueues slot `slot`'s decode step (its pinned inputs written) and records the slot's event.
void run_decode(CudaSession& s, int mode, int slot) {
    if (!s.use_graphs) {
        enqueue_decode(s, mode, slot);
        check(cudaEventRecord(s.done[slot], s.stream), "cudaEventRecord (decode step)");
        return;
    }
    cudaGraphExec_t& ge = s.graphs[mode][slot];
    // A token that ran without PDL after a failed capture: try PDL again, a bounded number of
    // times (kPdlRetries), with fresh graphs.
    if (ge && !s.pdl && s.pdl_wanted && s.pdl_retries > 0) {
        --s.pdl_retries;
        s.pdl = true;
        s.drop_graphs();
    }
    if (!ge) {
        try {
            capture(s, mode, slot);
        } catch (const Error& e) {
            // Out of memory has nothing to do with PDL: the error goes to the caller and the next
            // token captures again, PDL unchanged. Anything else (a driver that cannot capture
            // programmatic launches): this token captures without PDL, and the next ones retry.
            if (!s.pdl || e.status() == VT_STATUS_OUT_OF_MEMORY) throw;
            s.pdl = false;
            s.pdl_off_why = e.what();
            s.drop_graphs();
            capture(s, mode, slot);
        }
    }
    check(cudaGraphLaunch(ge, s.stream), "cudaGraphLaunch (decode step)");
    check(cudaEventRecord(s.done[slot], s.stream), "cudaEventRecord (decode step)");
}

// What enqueue_head copied back into slot `slot`, as the session layer's Picked: the argmax
// key, or the top kTopK candidates by (value desc, index asc) (keys of 0 end the list: NaN
// logits). The embedding of a step fed back decodes the key the same way (misc.cu).
void read_pick(const CudaSession& s, int mode, int slot, Picked* p) {
    const unsigned long long* r = result_slot(s, slot);
    p->n = 0;
    if (mode != kHeadTop) {
        const unsigned long long key = r[0];
        p->argmax = key ? int32_t(rank_key_index(key)) : 0;
        return;
    }
    int n = 0;
    for (; n < kTopK && r[n]; ++n) {
        p->value[n] = rank_key_value(r[n]);
        p->id[n] = int32_t(rank_key_index(r[n]));
    }
    p->n = n;
    p->argmax = n ? p->id[0] : 0;
}

// The inputs of the decode step at `pos` (token, or feedback = 1: the other slot's argmax),
// RoPE as the CPU path computes it for a sequence of length seq_len, into *st (zero-filled
// first, so that two fills of the same step compare equal byte for byte: ahead_matches).
// A step that draws its token on the device (draw not null) gets its options and sampling step.
void fill_step(const CudaSession& s, int32_t token, int64_t pos, int64_t seq_len, int32_t feedback,
               const vt_sample_options* draw, uint64_t draw_step, StepParams* st) {
    const CudaModel& c = *s.cm;
    std::memset(st, 0, sizeof(StepParams));
    st->token = token;
    st->pos = int32_t(pos);
    st->feedback = feedback;
    if (draw) {
        DrawArgs& a = st->draw;
        a.temperature = double(draw->temperature);
        a.top_p = double(draw->top_p);
        a.use_min_p = draw->min_p > 0.0f;
        a.log_min_p = a.use_min_p ? std::log(double(draw->min_p)) : 0.0;  // sampling.cpp's cut
        a.seed = draw->seed;
        a.step = draw_step;
        a.top_k = draw->top_k;
    }
    const ModelWeights& r = *c.rope;
    ModelWeights::RopeFreqs freqs;  // (dynamic NTK: computed for seq_len)
    ops::rope_angles(r.rope_freqs(seq_len, freqs), pos, c.ROT, st->rope, r.rope_scale_at(seq_len));
    if (!r.inv_freq_local.empty()) ops::rope_angles(r.inv_freq_local.data(), pos, c.ROT, st->rope_local);
}

}  // namespace

std::unique_ptr<BackendSession> CudaModel::new_session(int64_t max_tokens) const {
    const CudaModel& cm = *this;
    VT_CHECK_ARG(max_tokens >= 1, "max_tokens %lld is below 1", (long long)max_tokens);
    DeviceGuard guard(cm.dev);
    std::unique_ptr<CudaSession> s(new CudaSession);
    s->cm = &cm;
    s->dev = cm.dev;
    s->max_tokens = max_tokens;
    s->use_graphs = env_on("VT_CUDA_GRAPHS", true);
    s->pdl = s->pdl_wanted = cm.info.cc_major >= 9 && env_on("VT_CUDA_PDL", true);
    s->pdl_retries = kPdlRetries;
    s->feedback = env_on("VT_CUDA_FEEDBACK", true);
    s->device_draw = env_on("VT_CUDA_DEVICE_DRAW", true);
    check(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking), "cudaStreamCreate");
    for (cudaEvent_t& e : s->done) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate");

    const int64_t R = std::min(kChunk, max_tokens);
    const int units = attention_units(cm);
    Carve cv;
    const size_t o_x = cv.take(size_t(R * cm.H) * 4);
    const size_t o_xn = cv.take(size_t(R * cm.H) * 4);
    const size_t o_q = cv.take(size_t(R * cm.NH * cm.HD) * 4);
    const size_t o_att = cv.take(size_t(R * cm.NH * cm.HD) * 4);
    const size_t o_mlp = cv.take(size_t(R * cm.I) * 4);
    const size_t o_raw = cm.qk_norm ? cv.take(size_t(R * (cm.NH + 2 * cm.KV) * cm.HD) * 4) : 0;
    const size_t o_stage = cm.kv_i8() ? cv.take(size_t(R * 2 * cm.KV * cm.HD) * 4) : 0;
    const size_t o_tmp = cm.gemma ? cv.take(size_t(R * cm.H) * 4) : 0;
    const size_t o_rope_local = cm.rope->inv_freq_local.empty() ? 0 : cv.take(size_t(R * cm.HD) * 4);
    const size_t o_logits = cv.take(size_t(cm.V) * 4);
    const size_t o_part = cv.take(size_t(units) * kAttnMaxSplits * kAttnMaxGroup * size_t(cm.HD + 2) * 4);
    const size_t o_cnt = cv.take(size_t(units) * 4);
    const size_t o_tok = cv.take(size_t(R) * 4);
    const size_t o_pos = cv.take(4);
    const size_t o_rope = cv.take(size_t(R * cm.HD) * 4);
    const size_t o_step = cv.take(2 * sizeof(StepParams));
    const size_t o_amax = cv.take(2 * 8);
    const size_t o_tks = cv.take(topk_scratch_keys(cm.V) * 8);
    const size_t o_cand = cv.take(kTopK * 8);
    const size_t o_bad = cv.take(8);
    const bool w8a16 = cm.w8a16 && cm.w8a16_n > 0 && R >= kW8a16MinM;
    const size_t o_xb = w8a16 ? cv.take(size_t(R * cm.w8a16_k) * 2) : 0;
    const size_t o_yd = w8a16 ? cv.take(size_t(R * cm.w8a16_n) * 4) : 0;
    s->scratch.alloc(cm.dev, cv.off, "session scratch");
    if (w8a16) {
        s->xb = s->scratch.get<uint16_t>(o_xb);
        s->yd = s->scratch.get<float>(o_yd);
    }
    s->x = s->scratch.get<float>(o_x);
    s->xn = s->scratch.get<float>(o_xn);
    s->q = s->scratch.get<float>(o_q);
    s->att = s->scratch.get<float>(o_att);
    s->mlp = s->scratch.get<float>(o_mlp);
    if (cm.qk_norm) s->qkv_raw = s->scratch.get<float>(o_raw);
    if (cm.kv_i8()) s->kv_stage = s->scratch.get<float>(o_stage);
    if (cm.gemma) s->tmp = s->scratch.get<float>(o_tmp);
    if (!cm.rope->inv_freq_local.empty()) s->rope_local = s->scratch.get<float>(o_rope_local);
    s->logits = s->scratch.get<float>(o_logits);
    s->partial = s->scratch.get<float>(o_part);
    s->counters = s->scratch.get<int32_t>(o_cnt);
    s->tokens = s->scratch.get<int32_t>(o_tok);
    s->pos = s->scratch.get<int32_t>(o_pos);
    s->rope = s->scratch.get<float>(o_rope);
    s->step = s->scratch.get<StepParams>(o_step);
    s->argmax = s->scratch.get<unsigned long long>(o_amax);
    s->topk_scratch = s->scratch.get<unsigned long long>(o_tks);
    s->cand = s->scratch.get<unsigned long long>(o_cand);
    s->kv_bad = s->scratch.get<unsigned long long>(o_bad);
    s->eb = size_t(cm.kv_eb());
    // Counters must start at zero (the attention kernel's last block resets them after use).
    check(cudaMemsetAsync(s->scratch.get(), 0, cv.off, s->stream), "session scratch init");

    s->host.alloc(2 * (sizeof(StepParams) + kTopK * 8 + 8), "the decode step's parameters");
    s->h_step = s->host.get<StepParams>(0);
    s->h_result = s->host.get<unsigned long long>(2 * sizeof(StepParams));
    s->h_kv_bad = s->host.get<unsigned long long>(2 * (sizeof(StepParams) + kTopK * 8));
    std::memset(s->h_step, 0, 2 * sizeof(StepParams));
    s->h_kv_bad[0] = s->h_kv_bad[1] = ~0ull;

    ensure_kv(*s, std::min(max_tokens, kInitialCap), 0);
    check(cudaStreamSynchronize(s->stream), "session creation");
    return s;
}

void CudaSession::reserve(int64_t len, int64_t needed) {
    DeviceGuard guard(dev);
    ensure_kv(*this, needed, len);
}

void CudaSession::copy_prefix(const BackendSession& from, int64_t n) {
    const CudaSession& src = static_cast<const CudaSession&>(from);
    const CudaModel& c = *cm;
    DeviceGuard guard(dev);
    settle();  // this cache is rewritten
    ensure_kv(*this, n, 0);
    if (n == 0) return;
    // The source's queued work must be done before its cache is read.
    check(cudaStreamSynchronize(src.stream), "prefix copy");
    copy_kv(c, kv.get<char>(), cap, src.kv.get<char>(), src.cap, n, eb, stream, "prefix copy");
    check(cudaStreamSynchronize(stream), "prefix copy");
}

void CudaSession::forward(const int32_t* toks, int64_t n, int64_t pos0, Logits out, float* host_logits, Pick pick,
                          Picked* picked) {
    CudaSession& cs = *this;
    const CudaModel& c = *cs.cm;
    if (n < 1 || n > kChunk || (pick != Pick::None && (out == Logits::All || !picked)))
        fail(VT_STATUS_INTERNAL, "CUDA forward: %lld rows (1 .. %lld), logits %d with pick %d", (long long)n,
             (long long)kChunk, int(out), int(pick));
    DeviceGuard guard(cs.dev);
    ensure_kv(cs, pos0 + n, pos0);
    if (pick == Pick::Draw && (!cs.device_draw || !cs.draw_options))
        fail(VT_STATUS_INTERNAL, "CUDA forward: a device draw without its options");
    // Drawn on the device in a decode step; a prefill's draw is made on the host from the
    // device's candidates (the same token: draw.h is vt_sample's arithmetic).
    const int mode = pick == Pick::Draw && n == 1 ? kHeadDraw : pick == Pick::Argmax || pick == Pick::None ? kHeadArgmax
                                                                                                            : kHeadTop;

    if (n == 1 && out != Logits::All) {
        // The decode step: one graph replay (the greedy graph, which stores the full logits
        // too, unless top candidates are asked for), or the step launched ahead by the last
        // call when it is this one (decode_ahead.h).
        const int slot = step_slot(pos0);
        const bool device_chooses = (pick == Pick::Argmax || pick == Pick::Draw) && out == Logits::None;
        const vt_sample_options* dopt = mode == kHeadDraw ? cs.draw_options : nullptr;
        StepParams want;
        fill_step(cs, toks[0], pos0, std::max(cs.rope_seq_len, pos0 + 1), 0, dopt, cs.draw_step, &want);
        if (ahead_matches(cs.ahead, cs.h_step[slot], want, device_chooses)) {
            cs.ahead.in_flight = false;
            ++cs.ahead_used;
        } else {
            cs.settle();
            cs.h_step[slot] = want;
            run_decode(cs, mode, slot);
        }
        if (may_run_ahead(cs.feedback, device_chooses, pos0, cs.cap)) {
            // Slot 1 - slot's last step (pos0 - 1, or older) is done: every call waits for its own.
            // Its draw (if any) is the session's next sampling step.
            fill_step(cs, 0, pos0 + 1, std::max(cs.rope_seq_len, pos0 + 2), 1, dopt, cs.draw_step + 1,
                      cs.h_step + (1 - slot));
            try {
                run_decode(cs, mode, 1 - slot);
                cs.ahead.in_flight = true;
                cs.ahead.pos = pos0 + 1;
                cs.ahead.token = -1;
            } catch (const Error&) {
                // Only a head start: this call is whole without it. What failed (a graph capture
                // out of memory, say) fails again, with its message, when a call runs that slot.
                // It may have failed after its graph was launched (the event record): wait for
                // the stream, so that no untracked step still reads h_step[1 - slot] when the
                // next call rewrites it.
                cudaStreamSynchronize(cs.stream);
                cudaGetLastError();
            }
        }
        if (out == Logits::Last)
            check(cudaMemcpyAsync(host_logits, cs.logits, size_t(c.V) * 4, cudaMemcpyDeviceToHost, cs.stream),
                  "logits copy");
        // Logits copied after the step (no step runs ahead of a call that wants them).
        check(out == Logits::Last ? cudaStreamSynchronize(cs.stream) : cudaEventSynchronize(cs.done[slot]),
              "decode step");
        if (pick != Pick::None) read_pick(cs, mode, slot, picked);
        if (cs.ahead.in_flight) cs.ahead.token = picked->argmax;  // the token the device fed it
        check_kv_range(cs, slot);
        return;
    }
    cs.settle();

    if (out == Logits::All && !cs.logits_rows.bytes())
        cs.logits_rows.alloc(cs.dev, size_t(std::min(kChunk, cs.max_tokens) * c.V) * 4, "prefill logits");
    const LaunchCfg lc = cs.cfg();
    const int m = int(n);
    const int32_t pos = int32_t(pos0);
    const ModelWeights& rw = *c.rope;
    const bool local = !rw.inv_freq_local.empty();
    std::vector<float> rope(size_t(m) * size_t(c.HD) * (local ? 2 : 1));
    float* rope_local = rope.data() + size_t(m) * size_t(c.HD);
    ModelWeights::RopeFreqs freqs;  // (dynamic NTK: computed once for the pass's sequence)
    for (int i = 0; i < m; ++i) {
        const int64_t seq = std::max<int64_t>(cs.rope_seq_len, pos0 + n);
        ops::rope_angles(rw.rope_freqs(seq, freqs), pos + i, c.ROT, rope.data() + size_t(i) * size_t(c.HD),
                         rw.rope_scale_at(seq));
        if (local) ops::rope_angles(rw.inv_freq_local.data(), pos + i, c.ROT, rope_local + size_t(i) * size_t(c.HD));
    }
    check(cudaMemcpyAsync(cs.tokens, toks, size_t(m) * 4, cudaMemcpyHostToDevice, cs.stream), "token copy");
    check(cudaMemcpyAsync(cs.pos, &pos, 4, cudaMemcpyHostToDevice, cs.stream), "position copy");
    check(cudaMemcpyAsync(cs.rope, rope.data(), size_t(m) * size_t(c.HD) * 4, cudaMemcpyHostToDevice, cs.stream),
          "RoPE copy");
    if (local)
        check(cudaMemcpyAsync(cs.rope_local, rope_local, size_t(m) * size_t(c.HD) * 4, cudaMemcpyHostToDevice,
                              cs.stream),
              "RoPE copy");
    if (c.kv_checked())
        check(cudaMemsetAsync(cs.kv_bad, 0xFF, sizeof(unsigned long long), cs.stream), "KV range flag reset");
    embed(LaunchCfg{cs.stream, false}, c.embed, c.embed_dtype, c.H, cs.tokens, m, cs.x, c.embed_scale, cs.argmax,
          nullptr, nullptr);
    enqueue_blocks(cs, m, cs.pos, cs.rope, cs.rope_local);
    if (out == Logits::All) {
        Epilogue el;
        el.kind = kEpiStore;
        el.out = cs.logits_rows.get<float>();
        el.ld = c.V;
        el.softcap = c.final_softcap;
        run_linear(cs, c.lm_head, cs.x, c.H, m, c.final_norm, el);
        check(cudaMemcpyAsync(host_logits, el.out, size_t(m) * size_t(c.V) * 4, cudaMemcpyDeviceToHost, cs.stream),
              "logits copy");
    } else if (pick != Pick::None) {
        // Final norm + lm_head of the last row into cs.logits with the device's choice.
        enqueue_head(cs, m - 1, mode, 0);
        if (out == Logits::Last)
            check(cudaMemcpyAsync(host_logits, cs.logits, size_t(c.V) * 4, cudaMemcpyDeviceToHost, cs.stream),
                  "logits copy");
    } else if (out == Logits::Last) {
        Epilogue el;
        el.kind = kEpiStore;
        el.out = cs.logits;
        el.ld = c.V;
        el.softcap = c.final_softcap;
        gemv(lc, c.lm_head, cs.x + int64_t(m - 1) * c.H, c.H, 1, c.final_norm, c.eps, el);
        check(cudaMemcpyAsync(host_logits, cs.logits, size_t(c.V) * 4, cudaMemcpyDeviceToHost, cs.stream),
              "logits copy");
    }
    if (c.kv_checked())
        check(cudaMemcpyAsync(cs.h_kv_bad, cs.kv_bad, sizeof(unsigned long long), cudaMemcpyDeviceToHost, cs.stream),
              "result copy");
    // The host buffers (pos, rope) live until the stream is done with them.
    check(cudaStreamSynchronize(cs.stream), "prefill");
    check_kv_range(cs, 0);
    if (pick != Pick::None) read_pick(cs, mode, 0, picked);
    if (pick == Pick::Draw) picked->argmax = picked->n ? picked->id[sample(picked->value, picked->n, *cs.draw_options,
                                                                           cs.draw_step)]
                                                       : 0;
}

// The batched decode step: row i is token tokens[i] of sessions[i] at position pos[i]. The
// linears run over all rows at once (GEMVs of up to 8 rows, so each row's arithmetic is the
// single decode step's kernel at another row count: the weights are read once per 8 rows
// instead of once per session); the RoPE + KV write and the attention, which read and write
// each row's own cache, take every row in one launch each (qkv_norm_rope without norms,
// attention_decode over grid z = rows, both given each row's cache: KvRow). All of it on
// sessions[0]'s stream, eagerly (no graph: the set of sessions changes step to step), with the
// activations in the model's batch scratch; logits [n][V] back to the host.
void CudaModel::decode_batch(BackendSession* const* sessions, int64_t n, const int32_t* tokens, const int64_t* pos,
                             float* logits) const {
    if (n < 1 || n > VT_MAX_BATCH) fail(VT_STATUS_INTERNAL, "CUDA decode_batch: %lld rows", (long long)n);
    DeviceGuard guard(dev);
    std::lock_guard<std::mutex> lock(batch_mu);
    std::vector<CudaSession*> ss(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
        ss[size_t(i)] = static_cast<CudaSession*>(sessions[i]);
        CudaSession& si = *ss[size_t(i)];
        si.settle();
        ensure_kv(si, pos[i] + 1, pos[i]);
    }
    CudaSession& s0 = *ss[0];
    // The step writes every session's cache from s0's stream: their own work must be done.
    for (int64_t i = 1; i < n; ++i) check(cudaStreamSynchronize(ss[size_t(i)]->stream), "batched decode");

    const int64_t QKV = (NH + 2 * KV) * HD, QD = NH * HD;
    const bool local = !rope->inv_freq_local.empty();
    const int units = attention_units(*this);
    int splits = 1;
    for (const CudaSession* si : ss) splits = std::max(splits, si->splits);
    const size_t counter_bytes = size_t(VT_MAX_BATCH) * size_t(units) * 4;
    Carve cv;
    const size_t o_cnt = cv.take(counter_bytes);  // first: zeroed once, reset by the kernels after use
    const size_t o_x = cv.take(size_t(n * H) * 4), o_raw = cv.take(size_t(n * QKV) * 4),
                 o_q = cv.take(size_t(n * QD) * 4), o_att = cv.take(size_t(n * QD) * 4),
                 o_mlp = cv.take(size_t(n * I) * 4), o_tmp = gemma ? cv.take(size_t(n * H) * 4) : 0,
                 o_log = cv.take(size_t(n * V) * 4), o_tok = cv.take(size_t(n) * 4), o_pos = cv.take(size_t(n) * 4),
                 o_rope = cv.take(size_t(n * HD) * 4), o_rl = local ? cv.take(size_t(n * HD) * 4) : 0,
                 o_rows = cv.take(size_t(n) * sizeof(KvRow)),
                 o_stage = kv_i8() ? cv.take(size_t(n * 2 * KV * HD) * 4) : 0,
                 o_part = cv.take(size_t(n) * size_t(units) * size_t(splits) * kAttnMaxGroup * size_t(HD + 2) * 4);
    if (batch_mem.bytes() < cv.off) {
        DevMem fresh;
        fresh.alloc(dev, cv.off, "the batched decode step's activations");
        check(cudaMemsetAsync(fresh.get(), 0, counter_bytes, s0.stream), "batched decode scratch init");
        check(cudaStreamSynchronize(s0.stream), "batched decode scratch init");
        batch_mem.swap(fresh);
    }
    int32_t* d_cnt = batch_mem.get<int32_t>(o_cnt);
    KvRow* d_rows = batch_mem.get<KvRow>(o_rows);
    float* d_part = batch_mem.get<float>(o_part);
    float* x = batch_mem.get<float>(o_x);
    float* raw = batch_mem.get<float>(o_raw);
    float* q = batch_mem.get<float>(o_q);
    float* att = batch_mem.get<float>(o_att);
    float* mlp = batch_mem.get<float>(o_mlp);
    float* tmp = gemma ? batch_mem.get<float>(o_tmp) : nullptr;
    float* lg = batch_mem.get<float>(o_log);
    int32_t* d_tok = batch_mem.get<int32_t>(o_tok);
    int32_t* d_pos = batch_mem.get<int32_t>(o_pos);
    float* d_rope = batch_mem.get<float>(o_rope);
    float* d_rl = local ? batch_mem.get<float>(o_rl) : nullptr;
    float* d_stage = kv_i8() ? batch_mem.get<float>(o_stage) : nullptr;

    // RoPE as a single decode step computes it (the session layer sets rope_seq_len = pos + 1).
    std::vector<int32_t> h_pos(static_cast<size_t>(n));
    std::vector<KvRow> h_rows(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) h_rows[size_t(i)] = KvRow{ss[size_t(i)]->kv.get(), ss[size_t(i)]->cap};
    std::vector<float> h_rope(size_t(n * HD) * (local ? 2 : 1), 0.0f);
    ModelWeights::RopeFreqs freqs;  // (dynamic NTK: each row's own sequence)
    for (int64_t i = 0; i < n; ++i) {
        h_pos[size_t(i)] = int32_t(pos[i]);
        ops::rope_angles(rope->rope_freqs(pos[i] + 1, freqs), pos[i], ROT, h_rope.data() + i * HD,
                         rope->rope_scale_at(pos[i] + 1));
        if (local) ops::rope_angles(rope->inv_freq_local.data(), pos[i], ROT, h_rope.data() + (n + i) * HD);
    }
    const cudaStream_t st = s0.stream;
    const LaunchCfg lc = s0.cfg();
    try {
        check(cudaMemcpyAsync(d_tok, tokens, size_t(n) * 4, cudaMemcpyHostToDevice, st), "token copy");
        check(cudaMemcpyAsync(d_pos, h_pos.data(), size_t(n) * 4, cudaMemcpyHostToDevice, st), "position copy");
        check(cudaMemcpyAsync(d_rows, h_rows.data(), size_t(n) * sizeof(KvRow), cudaMemcpyHostToDevice, st),
              "KV cache table copy");
        check(cudaMemcpyAsync(d_rope, h_rope.data(), size_t(n * HD) * 4, cudaMemcpyHostToDevice, st), "RoPE copy");
        if (local)
            check(cudaMemcpyAsync(d_rl, h_rope.data() + n * HD, size_t(n * HD) * 4, cudaMemcpyHostToDevice,
                                  st),
                  "RoPE copy");
        if (kv_checked())
            check(cudaMemsetAsync(s0.kv_bad, 0xFF, sizeof(unsigned long long), st), "KV range flag reset");
        cudak::embed(LaunchCfg{st, false}, embed, embed_dtype, H, d_tok, int(n), x, embed_scale, nullptr);

        // x_in [n][ldx] · Wᵀ (fused RMSNorm with `norm`) with epilogue e, in GEMVs of <= 8 rows.
        const auto linear = [&](const DevLinear& w, const float* xin, int64_t ldx, const float* norm, Epilogue e) {
            float* out0 = e.out;
            for (int64_t r0 = 0; r0 < n; r0 += kGemvMaxM) {
                e.out = out0 + r0 * e.ld;
                gemv(lc, w, xin + r0 * ldx, ldx, int(std::min<int64_t>(kGemvMaxM, n - r0)), norm, eps, e);
            }
        };
        const auto to_residual = [&](const DevLinear& w, const float* in, int64_t ldin, const float* bias,
                                     const float* post_norm) {
            Epilogue e;
            e.kind = post_norm ? kEpiStore : kEpiAdd;
            e.out = post_norm ? tmp : x;
            e.ld = H;
            e.bias = bias;
            linear(w, in, ldin, nullptr, e);
            if (post_norm) add_rmsnorm(lc, x, tmp, post_norm, eps, H, int(n));
        };
        for (int64_t l = 0; l < L; ++l) {
            const CudaLayer& w = layers[size_t(l)];
            Epilogue er;
            er.kind = kEpiStore;
            er.out = raw;
            er.ld = QKV;
            er.bias = w.qkv_bias;
            linear(w.qkv, x, H, w.attn_norm, er);
            Epilogue eq = qkv_epilogue(*this, l, q, d_pos, d_rope, d_rl, s0.kv_bad);
            eq.rows = d_rows;
            eq.layers = int32_t(L);
            eq.kv_stage = d_stage;  // int8 cache (else null): then kv_store_i8 into each row's cache
            qkv_norm_rope(lc, raw, QKV, int(n), qk_norm ? w.q_norm : nullptr, qk_norm ? w.k_norm : nullptr, eps, eq);
            if (kv_i8()) kv_store_i8(lc, d_stage, int(n), eq);
            // Splits: the largest of the rows' (a split past a row's keys does nothing).
            AttnArgs a = attn_args(*this, l, q, att, d_pos, 1, splits, d_part, d_cnt);
            a.rows = d_rows;
            a.nrows = int32_t(n);
            a.layer = int32_t(l);
            a.layers = int32_t(L);
            attention_decode(lc, a);
            to_residual(w.o, att, QD, w.o_bias, w.post_attn_norm);
            Epilogue eg;
            eg.kind = kEpiSwiglu;
            eg.act = geglu ? kActGeluTanh : kActSilu;
            eg.out = mlp;
            eg.ld = I;
            eg.bias = w.gu_bias;
            linear(w.gu, x, H, w.mlp_norm, eg);
            to_residual(w.down, mlp, I, w.down_bias, w.post_mlp_norm);
        }
        if (logits) {
            Epilogue el;
            el.kind = kEpiStore;
            el.out = lg;
            el.ld = V;
            el.softcap = final_softcap;
            linear(lm_head, x, H, final_norm, el);
            check(cudaMemcpyAsync(logits, lg, size_t(n * V) * 4, cudaMemcpyDeviceToHost, st), "logits copy");
        }
        if (kv_checked())
            check(cudaMemcpyAsync(s0.h_kv_bad, s0.kv_bad, sizeof(unsigned long long), cudaMemcpyDeviceToHost, st),
                  "result copy");
    } catch (...) {
        // What was queued before the throw still writes the rows' caches and reads the shared
        // scratch (d_rows, the counters, batch_mem): wait for it before the lock goes and a
        // row's own stream or the next batch touches either.
        cudaStreamSynchronize(st);
        cudaGetLastError();
        throw;
    }
    // The host buffers (tokens, positions, RoPE) live until the stream is done with them.
    check(cudaStreamSynchronize(st), "batched decode");
    check_kv_range(s0, 0);
}

// ==== Inference API: packed weights on the device ===============================================

struct CudaPacked {
    int dev = 0;
    DevMem mem;
    DevLinear d;                // dense formats
    DevSparse sp;               // 2:4 sparse formats (CUTLASS)
    bool sparse = false;
    bool fp8_w8a8 = false;      // FP8_CHANNEL and this device runs the CUTLASS FP8 GEMM
    bool fp8_sm90 = false;      // ... and its sm_90a (wgmma) kernel for m >= kFp8Sm90MinM
    vt_format format = VT_FORMAT_INT8_BLOCKED;
    int64_t out = 0, in = 0;
};

void CudaPackedDeleter::operator()(CudaPacked* p) const noexcept { delete p; }

int64_t cuda_packed_device_bytes(const CudaPacked& cp) { return int64_t(cp.mem.bytes()); }
bool cuda_packed_fp8_hopper(const CudaPacked& cp) { return cp.fp8_sm90; }

namespace {

// ---- The CUTLASS linears (cutlass_gemm.h): 2:4 sparse, and FP8_CHANNEL with W8A8 -----------------

// 2:4 sparse weights: layout.h's sparse layout, one allocation.
void upload_sparse(const vt_packed& p, CudaPacked& cp) {
#if defined(VT_HAVE_CUTLASS)
    const SparseShape s = sparse_shape(p);
    std::vector<int8_t> a(s.a_bytes());
    std::vector<uint32_t> e(s.e_bytes() / 4);
    std::vector<float> ws(size_t(s.n_pad));
    repack_sparse(s, p, a.data(), e.data(), ws.data());
    Carve cv;
    const size_t oa = cv.take(a.size()), oe = cv.take(e.size() * 4), ow = cv.take(ws.size() * 4);
    cp.mem.alloc(cp.dev, cv.off, "the packed weight");
    DeviceGuard guard(cp.dev);
    check(cudaMemcpy(cp.mem.get(oa), a.data(), a.size(), cudaMemcpyHostToDevice), "weight upload");
    check(cudaMemcpy(cp.mem.get(oe), e.data(), e.size() * 4, cudaMemcpyHostToDevice), "metadata upload");
    check(cudaMemcpy(cp.mem.get(ow), ws.data(), ws.size() * 4, cudaMemcpyHostToDevice), "scale upload");
    cp.sp.s = s;
    cp.sp.a = cp.mem.get<int8_t>(oa);
    cp.sp.e = cp.mem.get<uint32_t>(oe);
    cp.sp.wscale = cp.mem.get<float>(ow);
    cp.sparse = true;
#else
    (void)cp;
    fail(VT_STATUS_BACKEND_UNAVAILABLE, "2:4 sparse weights (format %d) run on CUDA through CUTLASS, and %s",
         int(p.format), VT_CUTLASS_MISSING);
#endif
}

// Does this linear run on a CUTLASS kernel? 2:4 sparse always (the CPU path quantizes x for
// them whatever quantize_input says); FP8_CHANNEL when the input is quantized (W8A8) and the
// device runs the FP8 GEMM. Everything else: the W8A16 GEMV / GEMM (kernels.h).
bool uses_cutlass(const CudaPacked& w, int quantize_input) { return w.sparse || (w.fp8_w8a8 && quantize_input); }

// Device scratch of a CUTLASS linear (swiglu: gate and up) for m rows.
size_t cutlass_ws_bytes(const CudaPacked& w, bool swiglu, int64_t m) {
#if defined(VT_HAVE_CUTLASS)
    if (w.sparse) return sparse_workspace_bytes(w.sp.s, m) * (swiglu ? 2 : 1);
#endif
#if defined(VT_HAVE_CUTLASS_FP8)
    if (w.fp8_w8a8) return fp8_workspace_bytes(w.d.s, m, swiglu ? 2 : 1);
#endif
    (void)w, (void)swiglu, (void)m;
    return 0;
}

// y_dev = act(x_dev · Wᵀ + bias) on the CUTLASS kernels (uses_cutlass(w) must hold); with up:
// silu(x·gateᵀ + gb) ⊙ (x·upᵀ + ub). x unquantized f32 (the kernels quantize it), device
// pointers, enqueued on lc.stream; ws: cutlass_ws_bytes() of device scratch.
void cutlass_linear(const LaunchCfg& lc, const CudaPacked& w, const CudaPacked* up, const float* xd, int64_t m,
                    const float* biasd, const float* up_biasd, int gelu, float* yd, void* ws) {
#if defined(VT_HAVE_CUTLASS)
    if (w.sparse) return sparse_linear(lc, w.sp, xd, m, biasd, gelu, yd, ws, up ? &up->sp : nullptr, up_biasd);
#endif
#if defined(VT_HAVE_CUTLASS_FP8)
    if (w.fp8_w8a8)
        return fp8_linear(lc, w.d, xd, m, biasd, gelu, yd, ws, up ? &up->d : nullptr, up_biasd,
                          w.fp8_sm90 && (!up || up->fp8_sm90));
#endif
    (void)lc, (void)up, (void)xd, (void)m, (void)biasd, (void)up_biasd, (void)gelu, (void)yd, (void)ws;
    fail(VT_STATUS_INTERNAL, "cutlass_linear: format %d has no CUTLASS kernel in this build", int(w.format));
}

}  // namespace

CudaPackedPtr cuda_upload_packed(const vt_packed& p, int device_index) {
    const DeviceInfo& di = device_info(device_index);
    CudaPackedPtr cp(new CudaPacked);
    cp->dev = device_index;
    cp->format = p.format;
    cp->out = p.out;
    cp->in = p.in;
    if (!p.dense()) {
        upload_sparse(p, *cp);
        return cp;
    }
#if defined(VT_HAVE_CUTLASS_FP8)
    if (p.format == VT_FORMAT_FP8_CHANNEL) {
        DeviceGuard g(device_index);
        cp->fp8_w8a8 = fp8_gemm_supported(di.cc_major, di.cc_minor);
#if defined(VT_HAVE_CUTLASS_FP8_SM90)
        cp->fp8_sm90 = cp->fp8_w8a8 && !fp8_gemm_legacy() && fp8_sm90_supported(di.cc_major, di.cc_minor);
#else
        (void)fp8_gemm_legacy();  // a bad value is an error in every build
#endif
    }
#else
    (void)di;
#endif
    LinearPlan plan;
    plan.s = linear_shape(p, p.out);
    plan.rows = rows_plain(p);
    plan.dst = &cp->d;
    Carve cv;
    plan_linear(plan, cv);
    cp->mem.alloc(device_index, cv.off, "the packed weight");
    DeviceGuard guard(device_index);
    upload_linear(plan, cp->mem);
    return cp;
}

namespace {

// linear.cpp's input quantization (W8A8), row by row, identical arithmetic, for the dense
// formats that do not run on CUTLASS (uses_cutlass() false: 2:4 sparse never comes here).
void quantize_rows_host(vt_format format, const float* x, int64_t m, int64_t in, float* xq) {
    for (int64_t i = 0; i < m; ++i) {
        const float* xr = x + i * in;
        float* d = xq + i * in;
        if (format == VT_FORMAT_BF16) {
            for (int64_t k = 0; k < in; ++k) d[k] = bf16_to_f32(f32_to_bf16(xr[k]));
            continue;
        }
        // Integer formats (INT8, and the 4-bit ones: linear.cpp rounds their inputs the same way)
        // to [-127, 127] · absmax/127; FP8 to E4M3 · absmax/448.
        const bool fp8 = format == VT_FORMAT_FP8_BLOCKED || format == VT_FORMAT_FP8_CHANNEL;
        float amax = 0.f;
        for (int64_t k = 0; k < in; ++k) amax = std::max(amax, std::fabs(xr[k]));
        const float sc = amax / (fp8 ? 448.0f : 127.0f);
        if (!(sc > 0.f) || !std::isfinite(sc)) {
            std::memcpy(d, xr, sizeof(float) * size_t(in));
            continue;
        }
        if (fp8) {
            for (int64_t k = 0; k < in; ++k) d[k] = fp8_to_f32(f32_to_fp8(xr[k] / sc)) * sc;
        } else {
            for (int64_t k = 0; k < in; ++k) d[k] = std::min(127.f, std::max(-127.f, std::nearbyint(xr[k] / sc))) * sc;
        }
    }
}

// The CUDA kernels' own limit (linear.cpp's check_linear has checked everything else).
void check_rows(const char* fn, int64_t m) {
    VT_CHECK_ARG(m <= (INT64_C(1) << 24), "%s: m = %lld is too large for the CUDA kernels (at most 2^24 rows)", fn,
                 (long long)m);
}

// y_dev = x_dev · Wᵀ + bias, activation on the W8A16 GEMV / GEMM; device pointers, on
// cfg.stream. Callers send what uses_cutlass() claims (2:4 sparse, FP8 W8A8) to cutlass_linear.
void device_linear(const LaunchCfg& lc, const CudaPacked& w, const float* xd, int64_t m, const float* biasd, int gelu,
                   float* yd) {
    if (w.sparse) fail(VT_STATUS_INTERNAL, "device_linear: 2:4 sparse weights run on cutlass_linear");
    Epilogue e;
    e.kind = kEpiStore;
    e.out = yd;
    e.ld = w.out;
    e.bias = biasd;
    e.gelu = gelu;
    if (m <= kGemvMaxM) gemv(lc, w.d, xd, w.in, int(m), nullptr, 0.0f, e);
    else gemm(lc, w.d, xd, w.in, int(m), e);
}

}  // namespace

void cuda_linear(const CudaPacked& w, const float* x, int64_t m, const float* bias, const vt_linear_options& opt,
                 float* y) {
    check_rows("vt_linear", m);
    const bool cl = uses_cutlass(w, opt.quantize_input);
    std::vector<float> xq;
    if (opt.quantize_input && !cl) {
        xq.resize(size_t(m * w.in));
        quantize_rows_host(w.format, x, m, w.in, xq.data());
        x = xq.data();
    }
    DeviceGuard guard(w.dev);
    const cudaStream_t st = cudaStreamPerThread;
    Carve cv;
    const size_t ox = cv.take(size_t(m * w.in) * 4), oy = cv.take(size_t(m * w.out) * 4),
                 ob = cv.take(size_t(w.out) * 4), ows = cl ? cv.take(cutlass_ws_bytes(w, false, m)) : 0;
    DevMem buf;
    buf.alloc(w.dev, cv.off, "vt_linear's input and output");
    check(cudaMemcpyAsync(buf.get(ox), x, size_t(m * w.in) * 4, cudaMemcpyHostToDevice, st), "input copy");
    if (bias) check(cudaMemcpyAsync(buf.get(ob), bias, size_t(w.out) * 4, cudaMemcpyHostToDevice, st), "bias copy");
    if (cl)
        cutlass_linear(LaunchCfg{st, false}, w, nullptr, buf.get<float>(ox), m, bias ? buf.get<float>(ob) : nullptr,
                       nullptr, opt.activation == VT_ACTIVATION_GELU, buf.get<float>(oy), buf.get(ows));
    else
        device_linear(LaunchCfg{st, false}, w, buf.get<float>(ox), m, bias ? buf.get<float>(ob) : nullptr,
                      opt.activation == VT_ACTIVATION_GELU, buf.get<float>(oy));
    check(cudaMemcpyAsync(y, buf.get(oy), size_t(m * w.out) * 4, cudaMemcpyDeviceToHost, st), "output copy");
    check(cudaStreamSynchronize(st), "vt_linear");
}

void cuda_linear_swiglu(const CudaPacked& gate, const CudaPacked& up, const float* x, int64_t m,
                        const float* gate_bias, const float* up_bias, const vt_linear_options& opt, float* y) {
    check_rows("vt_linear_swiglu", m);
    VT_CHECK_ARG(gate.sparse == up.sparse && gate.fp8_w8a8 == up.fp8_w8a8,
                 "vt_linear_swiglu: gate and up were uploaded differently");
    const bool cl = uses_cutlass(gate, opt.quantize_input);
    std::vector<float> xq;
    if (opt.quantize_input && !cl) {
        xq.resize(size_t(m * gate.in));
        quantize_rows_host(gate.format, x, m, gate.in, xq.data());
        x = xq.data();
    }
    DeviceGuard guard(gate.dev);
    const cudaStream_t st = cudaStreamPerThread;
    const int64_t n = gate.out;
    Carve cv;
    const size_t ox = cv.take(size_t(m * gate.in) * 4), og = cv.take(size_t(m * n) * 4), ou = cv.take(size_t(m * n) * 4),
                 oy = cv.take(size_t(m * n) * 4), ogb = cv.take(size_t(n) * 4), oub = cv.take(size_t(n) * 4),
                 ows = cl ? cv.take(cutlass_ws_bytes(gate, true, m)) : 0;
    DevMem buf;
    buf.alloc(gate.dev, cv.off, "vt_linear_swiglu's input and outputs");
    check(cudaMemcpyAsync(buf.get(ox), x, size_t(m * gate.in) * 4, cudaMemcpyHostToDevice, st), "input copy");
    if (gate_bias) check(cudaMemcpyAsync(buf.get(ogb), gate_bias, size_t(n) * 4, cudaMemcpyHostToDevice, st), "bias copy");
    if (up_bias) check(cudaMemcpyAsync(buf.get(oub), up_bias, size_t(n) * 4, cudaMemcpyHostToDevice, st), "bias copy");
    const LaunchCfg lc{st, false};
    if (cl) {
        cutlass_linear(lc, gate, &up, buf.get<float>(ox), m, gate_bias ? buf.get<float>(ogb) : nullptr,
                       up_bias ? buf.get<float>(oub) : nullptr, 0, buf.get<float>(oy), buf.get(ows));
    } else {
        device_linear(lc, gate, buf.get<float>(ox), m, gate_bias ? buf.get<float>(ogb) : nullptr, 0, buf.get<float>(og));
        device_linear(lc, up, buf.get<float>(ox), m, up_bias ? buf.get<float>(oub) : nullptr, 0, buf.get<float>(ou));
        silu_mul(lc, buf.get<float>(og), buf.get<float>(ou), m * n, buf.get<float>(oy));
    }
    check(cudaMemcpyAsync(y, buf.get(oy), size_t(m * n) * 4, cudaMemcpyDeviceToHost, st), "output copy");
    check(cudaStreamSynchronize(st), "vt_linear_swiglu");
}

// ==== Inference API on device pointers (vt_linear_device) and device memory for callers =========

namespace {

// p must be device (or managed) memory of device `dev`: a host pointer handed to a kernel
// would be an illegal address that poisons the whole context, so it is refused up front.
void check_device_ptr(const char* fn, const char* name, const void* p, int dev) {
    VT_CHECK_ARG(p != nullptr, "%s: %s is NULL", fn, name);
    cudaPointerAttributes a{};
    const cudaError_t e = cudaPointerGetAttributes(&a, p);
    if (e != cudaSuccess) {
        cudaGetLastError();
        fail(VT_STATUS_INVALID_ARGUMENT, "%s: %s (%p) is not memory CUDA knows (%s)", fn, name, p,
             cudaGetErrorString(e));
    }
    VT_CHECK_ARG(a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged,
                 "%s: %s (%p) is %s memory, not device memory of cuda:%d", fn, name, p,
                 a.type == cudaMemoryTypeHost ? "pinned host" : "host", dev);
    VT_CHECK_ARG(a.type == cudaMemoryTypeManaged || a.device == dev,
                 "%s: %s (%p) is memory of cuda:%d, expected memory of cuda:%d", fn, name, p, a.device, dev);
}

bool mempools_supported(int dev) {
    int v = 0;
    if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryPoolsSupported, dev) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return v != 0;
}

// A temporary ordered on a stream: cudaMallocAsync / cudaFreeAsync, so the caller need not
// wait for the kernels that use it. Without memory pools: cudaMalloc, and the destructor
// waits for the stream before cudaFree.
class StreamBuf {
public:
    StreamBuf(int dev, cudaStream_t st, size_t bytes, const char* what) : st_(st), async_(mempools_supported(dev)) {
        const size_t n = bytes ? bytes : 256;
        const cudaError_t e = async_ ? cudaMallocAsync(&p_, n, st) : cudaMalloc(&p_, n);
        if (e == cudaErrorMemoryAllocation) {
            cudaGetLastError();
            fail(VT_STATUS_OUT_OF_MEMORY, "CUDA device %d is out of memory: %s needs %s", dev, what, gib(n).c_str());
        }
        check(e, what);
    }
    ~StreamBuf() {
        if (async_) {
            cudaFreeAsync(p_, st_);
        } else {
            cudaStreamSynchronize(st_);
            cudaFree(p_);
        }
    }
    StreamBuf(const StreamBuf&) = delete;
    StreamBuf& operator=(const StreamBuf&) = delete;
    float* f32() const { return static_cast<float*>(p_); }

private:
    void* p_ = nullptr;
    cudaStream_t st_;
    bool async_;
};

// W8A8 on device input: wait for x, round it on the host exactly as linear.cpp does, and put
// the rounded copy in `buf` (enqueued on st; the host buffer may go once the call returns:
// a pageable host-to-device copy has been staged by then).
void stage_quantized(vt_format format, const float* xd, int64_t m, int64_t in, cudaStream_t st, float* buf) {
    const size_t bytes = size_t(m * in) * sizeof(float);
    std::vector<float> h(size_t(m * in)), q(size_t(m * in));
    check(cudaMemcpyAsync(h.data(), xd, bytes, cudaMemcpyDeviceToHost, st), "input copy for quantize_input");
    check(cudaStreamSynchronize(st), "waiting for the input (quantize_input)");
    quantize_rows_host(format, h.data(), m, in, q.data());
    check(cudaMemcpyAsync(buf, q.data(), bytes, cudaMemcpyHostToDevice, st), "quantized input copy");
}

}  // namespace

void cuda_linear_device(const CudaPacked& w, const float* x, int64_t m, const float* bias, const vt_linear_options& opt,
                        float* y, void* stream) {
    const char* fn = "vt_linear_device";
    check_rows(fn, m);
    DeviceGuard guard(w.dev);
    check_device_ptr(fn, "x", x, w.dev);
    check_device_ptr(fn, "y", y, w.dev);
    if (bias) check_device_ptr(fn, "bias", bias, w.dev);
    const cudaStream_t st = static_cast<cudaStream_t>(stream);
    const int gelu = opt.activation == VT_ACTIVATION_GELU;
    if (uses_cutlass(w, opt.quantize_input)) {
        // 2:4 sparse, FP8-channel W8A8: the kernels quantize x on the device; no host wait.
        StreamBuf ws(w.dev, st, cutlass_ws_bytes(w, false, m), "vt_linear_device's GEMM scratch");
        cutlass_linear(LaunchCfg{st, false}, w, nullptr, x, m, bias, nullptr, gelu, y, ws.f32());
        return;
    }
    if (opt.quantize_input) {
        StreamBuf xq(w.dev, st, size_t(m * w.in) * 4, "vt_linear_device's quantized input");
        stage_quantized(w.format, x, m, w.in, st, xq.f32());
        device_linear(LaunchCfg{st, false}, w, xq.f32(), m, bias, gelu, y);
        return;
    }
    device_linear(LaunchCfg{st, false}, w, x, m, bias, gelu, y);
}

void cuda_linear_swiglu_device(const CudaPacked& gate, const CudaPacked& up, const float* x, int64_t m,
                               const float* gate_bias, const float* up_bias, const vt_linear_options& opt, float* y,
                               void* stream) {
    const char* fn = "vt_linear_swiglu_device";
    check_rows(fn, m);
    DeviceGuard guard(gate.dev);
    check_device_ptr(fn, "x", x, gate.dev);
    check_device_ptr(fn, "y", y, gate.dev);
    if (gate_bias) check_device_ptr(fn, "gate_bias", gate_bias, gate.dev);
    if (up_bias) check_device_ptr(fn, "up_bias", up_bias, gate.dev);
    VT_CHECK_ARG(gate.sparse == up.sparse && gate.fp8_w8a8 == up.fp8_w8a8, "%s: gate and up were uploaded differently",
                 fn);
    const cudaStream_t st = static_cast<cudaStream_t>(stream);
    const int64_t n = gate.out;
    if (uses_cutlass(gate, opt.quantize_input)) {
        // One CUTLASS launch for gate and up, SiLU·up in its epilogue; x quantized on the device.
        StreamBuf ws(gate.dev, st, cutlass_ws_bytes(gate, true, m), "vt_linear_swiglu_device's GEMM scratch");
        cutlass_linear(LaunchCfg{st, false}, gate, &up, x, m, gate_bias, up_bias, 0, y, ws.f32());
        return;
    }
    // [xq (quantize_input only)][g: m*n][u: m*n], one stream-ordered temporary.
    const size_t xq_floats = opt.quantize_input ? size_t(m * gate.in) : 0;
    StreamBuf tmp(gate.dev, st, (xq_floats + 2 * size_t(m * n)) * 4, "vt_linear_swiglu_device's temporaries");
    const float* xin = x;
    if (opt.quantize_input) {
        stage_quantized(gate.format, x, m, gate.in, st, tmp.f32());
        xin = tmp.f32();
    }
    float* g = tmp.f32() + xq_floats;
    float* u = g + m * n;
    const LaunchCfg lc{st, false};
    device_linear(lc, gate, xin, m, gate_bias, 0, g);
    device_linear(lc, up, xin, m, up_bias, 0, u);
    silu_mul(lc, g, u, m * n, y);
}

void* cuda_device_alloc(int device_index, size_t bytes) {
    device_info(device_index);
    DeviceGuard guard(device_index);
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes ? bytes : 256);
    if (e == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        cudaGetLastError();
        fail(VT_STATUS_OUT_OF_MEMORY, "CUDA device %d is out of memory: vt_device_alloc needs %s, %s of %s are free",
             device_index, gib(bytes).c_str(), gib(free_b).c_str(), gib(total_b).c_str());
    }
    check(e, "vt_device_alloc");
    return p;
}

void cuda_device_free(int device_index, void* p) {
    DeviceGuard guard(device_index);
    cudaFree(p);
    cudaGetLastError();
}

void cuda_device_copy(int device_index, void* dst, const void* src, size_t bytes, bool to_device, void* stream) {
    device_info(device_index);
    DeviceGuard guard(device_index);
    check_device_ptr("vt_device_copy", to_device ? "dst" : "src", to_device ? dst : src, device_index);
    const cudaStream_t st = static_cast<cudaStream_t>(stream);
    check(cudaMemcpyAsync(dst, src, bytes, to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, st),
          "vt_device_copy");
    check(cudaStreamSynchronize(st), "vt_device_copy");
}

}  // namespace vt
