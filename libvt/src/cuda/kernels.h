// The CUDA kernels as the host code sees them: argument structs (passed by value to the
// kernels) and one launcher per op. Launchers only enqueue work on cfg.stream (they never
// synchronize), so the decode step can be captured into a CUDA Graph; they throw vt::Error
// when a launch fails.
//
// Ops (kernels → ops → decode step / prefill, as in docs/architecture.md):
//   gemv.cu        W8A16 / W4A16 GEMV, m <= 8 rows (decode): weights streamed with 16-byte loads,
//                  optional fused RMSNorm prologue, fused epilogues (below)
//   gemm.cu        tensor-core GEMM (mma.sync BF16, activations split hi+lo), any m (prefill)
//   attention.cu   decode attention split along the sequence (flash-decoding) with the merge
//                  fused in the last block; causal prefill attention
//   misc.cu        embedding, RMSNorm, SiLU·up, top-k candidates
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "cuda/device_math.h"
#include "cuda/draw.h"
#include "cuda/kv_layout.h"
#include "cuda/layout.h"

namespace vt {
namespace cudak {

constexpr int kMaxHeadDim = 256;      // head_dim a multiple of 4, at most 256
constexpr int kAttnMaxGroup = 8;      // query heads per attention block (GQA group slice)
constexpr int kAttnTile = 128;        // decode attention: keys per block iteration
constexpr int kAttnMaxSplits = 64;    // decode attention: splits along the sequence
constexpr int kGemvMaxM = 8;          // rows the GEMV takes; more go to the GEMM
constexpr int kTopK = 256;            // VT_MAX_TOP_K candidates
constexpr int kTopKSlice = 2048;      // keys one top-k block sorts

// VT_CUDA_LEGACY_KERNELS=1 (read once per process): decode attention and the GEMV's staging of
// x as they were before 2026-11-26 (128-key attention splits; loads issued one unit or four
// values at a time), kept selectable until a GPU has validated and timed the new forms (issue
// 15: the GPU check runs and times both). The engine's split count follows it.
bool legacy_kernels();
// VT_CUDA_L2_EVICT_FIRST (read once per process, default on): the GEMV streams its weights
// (and their scales) with an L2 evict-first cache policy, so a token's weights, read once,
// do not push the KV cache and the activations out of L2; 0 gives them the normal policy.
bool l2_evict_first();
// VT_CUDA_INT4_FOUR_ROWS (read once per process, default off): the 4-bit GEMVs at m = 1 give
// each warp four rows instead of two (gemv.cu), kept opt-in until a GPU has timed both.
bool int4_four_rows();
void set_int4_four_rows(bool on);  // vt_cuda_test: both forms in one process
// Keys a decode attention split holds a multiple of, for the kernels in use.
inline int attn_split_keys() { return legacy_kernels() ? kAttnTile : kAttnSplitKeys; }

// One linear in device memory (layout.h).
struct DevLinear {
    LinearShape s;
    const uint8_t* w = nullptr;        // [n_pad][row_bytes()]
    const uint16_t* scales = nullptr;  // [n_pad][nkb] f16, null without block scales
    const uint16_t* mins = nullptr;    // [n_pad][nkb] f16, INT4_MIN only
    const float* rowmul = nullptr;     // [n_pad]
    // The BF16 scale (and, 4-bit, zero) tables of the sm_90a W8A16 prefill GEMM (w8a16_plan.h),
    // only where that kernel serves this linear (VT_CUDA_PREFILL_GEMM=wgmma), else null.
    const uint16_t* scales_bf16 = nullptr;
    const uint16_t* zeros_bf16 = nullptr;
};

enum EpiKind : int32_t {
    kEpiStore = 0,   // out[i][n] = act(v + bias[n]); optional argmax over row 0
    kEpiAdd = 1,     // out[i][n] += v (the residual stream)
    kEpiSwiglu = 2,  // rows (2j, 2j+1) = (gate_j, up_j): out[i][j] = act(gate) · up (Epilogue::act)
    kEpiQkv = 3,     // fused QKV: RoPE on Q/K pairs, Q (scaled) -> out, K/V -> the cache
};

// The activation of the gated MLP's epilogue (kEpiSwiglu): act(gate) · up.
enum GateAct : int32_t {
    kActSilu = 0,      // SwiGLU (Llama, Mistral, Qwen, Phi-3)
    kActGeluTanh = 1,  // GeGLU with the tanh-approximated GELU (Gemma 2 / 3)
};

// What happens to the outputs of a linear. Rows are handled in pairs (2j, 2j+1): the row
// orders of layout.h put the two inputs of every fused op side by side.
struct Epilogue {
    int32_t kind = kEpiStore;
    int32_t gelu = 0;                      // kEpiStore: exact GELU after the bias
    int32_t act = kActSilu;                // kEpiSwiglu: the gate's activation
    float softcap = 0.0f;                  // kEpiStore: cap · tanh(v / cap) last, when > 0
    float* out = nullptr;                  // [m][ld]
    int64_t ld = 0;
    // Every kind: added to the accumulator first, indexed by device row ([n] or null;
    // layout.h's row_values puts a checkpoint's biases in the linear's row order).
    const float* bias = nullptr;
    unsigned long long* argmax = nullptr;  // kEpiStore: atomicMax of rank_key over row 0
    // kEpiQkv
    int32_t nh = 0, nkv = 0, hd = 0;
    int32_t rot = 0;                       // the dims RoPE rotates (partial rotary; 0: hd), even
    float qscale = 1.0f;                   // 1/sqrt(hd), applied to Q after RoPE
    const float* rope = nullptr;           // [m][hd]: cos[hd/2] | sin[hd/2] of each row
    const int32_t* pos = nullptr;          // device int: position of row 0
    void* kcache = nullptr;                // this layer's K, transposed [nkv][hd][cap]
    void* vcache = nullptr;                // this layer's V [nkv][cap][hd]
    int64_t cap = 0;
    // The cache's element type: f32, or f16 (kv_f16: stored rounded to nearest even, as the
    // CPU's ops::store_f16). A finite key or value f16 cannot hold (|x| >= 65520) is stored
    // as infinity and reported: atomicMin of (layer << 32 | position) into *kv_bad (all ones
    // when none), which the host turns into the CPU's refusal.
    int32_t kv_f16 = 0;
    int32_t layer = 0;
    unsigned long long* kv_bad = nullptr;
    // An int8 cache (kv_i8.h): keys and values go to kv_stage [m][2][nkv][hd] f32 instead (row
    // i's K heads, then its V heads, after RoPE), and kv_store_i8 then writes their codes and
    // scales into the cache. kv_scales: this layer's scales [nkv][cap][2] (one cache).
    float* kv_stage = nullptr;
    float* kv_scales = nullptr;
    // qkv_norm_rope of a batched decode step: row i is one token of its own session, at
    // position pos[i], into rows[i]'s cache (layer `layer` of `layers`); kcache / vcache / cap
    // unused. Null: one cache, rows at *pos + i.
    const KvRow* rows = nullptr;
    int32_t layers = 0;
};

struct LaunchCfg {
    cudaStream_t stream = nullptr;
    bool pdl = false;  // programmatic dependent launch (sm_90): see common.cuh
};

// y = epilogue(x · Wᵀ) for m in [1, kGemvMaxM]. x: [m][ldx] f32 on the device. norm_w: when
// not null, each row of x is first RMS-normalized (x · rsqrt(mean(x²) + eps) · norm_w).
void gemv(const LaunchCfg& cfg, const DevLinear& w, const float* x, int64_t ldx, int m, const float* norm_w,
          float eps, const Epilogue& e);

// The same for any m >= 1 on tensor cores: weights dequantized to BF16 (exact: INT8, INT4 and
// E4M3 codes are BF16 numbers; INT4_MIN's min term is added per 16 k in FP32), activations as a sum of two BF16 numbers (~16 significant bits),
// FP32 accumulation, block scales applied per K-block in FP32. No fused norm.
void gemm(const LaunchCfg& cfg, const DevLinear& w, const float* x, int64_t ldx, int m, const Epilogue& e);

// The launches around the sm_90a W8A16 GEMM (cutlass_w8a16_sm90.cu, w8a16_plan.h), which
// computes only d = x · Wᵀ, in `phases` passes: to_bf16_rows writes pass b's x,
// xb[b][i][k] = bf16(x[i][k]) (round to nearest even) where k < k and (k / kb) % phases == b,
// else 0 (pitch k_pad, passes m · k_pad apart); gemm_finish runs every output pair of row
// i < m through the epilogue e as gemm's does: epi((Σ_b d[b][i][n]) · w.rowmul[n], ...) for
// n < w.s.n (passes d_phase elements apart).
void to_bf16_rows(const LaunchCfg& cfg, const float* x, int64_t ldx, int m, int k, int k_pad, int phases, int kb,
                  uint16_t* xb);
void gemm_finish(const LaunchCfg& cfg, const DevLinear& w, const float* d, int64_t ldd, int m, int phases,
                 int64_t d_phase, const Epilogue& e);

struct AttnArgs {
    const float* q = nullptr;       // [m][nh·hd], RoPE applied, scaled (1/sqrt(hd) or the family's scale)
    const void* kcache = nullptr;   // [nkv][hd][cap] (this layer), f32, f16 (kv_f16) or int8 (kv_i8)
    const void* vcache = nullptr;   // [nkv][cap][hd]
    int32_t kv_f16 = 0;
    // An int8 cache (kv_i8 set, kv_f16 not): key j of KV head h is its codes times
    // kv_scales[2 (h·cap + j)], value j its codes times kv_scales[2 (h·cap + j) + 1] (this
    // layer's scales; a batched step's come from rows).
    int32_t kv_i8 = 0;
    const float* kv_scales = nullptr;
    int64_t cap = 0;
    float* out = nullptr;           // [m][nh·hd]
    const int32_t* pos = nullptr;   // device int: position of row 0 (keys 0 .. pos + i)
    int32_t nh = 0, nkv = 0, hd = 0, m = 1;
    // Sliding window: a query at position p sees keys [max(0, p + 1 - window), p] (0: all).
    int32_t window = 0;
    float softcap = 0.0f;           // scores soft-capped as cap · tanh(s / cap) when > 0 (Gemma 2)
    // decode only: splits along the sequence, their partial results and arrival counters
    int32_t splits = 1;
    float* partial = nullptr;       // [nkv·groups][splits][kAttnMaxGroup][hd + 2]
    int32_t* counters = nullptr;    // [nkv·groups], zero between launches
    // Decode of a batched step: nrows query rows (m = 1 each), row r at position pos[r] over
    // rows[r]'s cache (layer `layer` of `layers`; kcache / vcache / cap unused), q / out /
    // partial / counters each nrows times as large, row-major. Null: one row, one cache.
    const KvRow* rows = nullptr;
    int32_t nrows = 1, layer = 0, layers = 0;
};

// head_dim: any multiple of 4 up to kMaxHeadDim (the kernels are compiled for 64, 128 and 256
// and mask the dims past hd). Query heads per KV head: at most attn_max_group(hd).
int attn_max_group(int hd);
// One query row (m == 1) at position *pos over keys [lo, *pos] (lo from the window): grid (kv
// heads × head groups, splits); the last block of each group to finish merges the splits (no
// second kernel).
void attention_decode(const LaunchCfg& cfg, const AttnArgs& a);
// m query rows at positions *pos + i, causal.
void attention_prefill(const LaunchCfg& cfg, const AttnArgs& a);

// x[i][:] = table[tokens[i]][:] as f32 (table dtype F32, F16 or BF16), times `scale` when it is
// > 0 (Gemma's sqrt(hidden_size)). When argmax_reset is not null it is set to 0 (the next
// lm_head's argmax starts from scratch). Device-side token feedback (m = 1, decode_ahead.h):
// when feedback is not null and *feedback is nonzero, the token is the one the argmax key
// *feedback_key names (rank_key_index; 0 for a key of 0), not tokens[0].
void embed(const LaunchCfg& cfg, const void* table, int32_t dtype, int64_t h, const int32_t* tokens, int m,
           float* x, float scale, unsigned long long* argmax_reset, const int32_t* feedback = nullptr,
           const unsigned long long* feedback_key = nullptr);

// out[i][:] = x[i][:] · rsqrt(mean(x[i]²) + eps) · w, rows of length h (stride h).
void rmsnorm(const LaunchCfg& cfg, const float* x, const float* w, float eps, int64_t h, int m, float* out);

// x[i][:] += t[i][:] · rsqrt(mean(t[i]²) + eps) · w (Gemma's post-attention and
// post-feedforward norms before the residual add), rows of length h (stride h).
void add_rmsnorm(const LaunchCfg& cfg, float* x, const float* t, const float* w, float eps, int64_t h, int m);

// The rest of the QKV step when q and k are RMS-normalized per head before RoPE (Qwen3, Gemma
// 3), which the GEMV's per-pair epilogue cannot do: raw [m][ldr] holds the QKV linear's output
// (bias added) in the device row order of layout.h's rows_qkv. Per row and head: q and k heads
// normalized with q_norm / k_norm [hd], RoPE (rope [m][hd] tables), q scaled by e.qscale into
// e.out, k and v into the cache at position *e.pos + i (the fields of a kEpiQkv Epilogue).
void qkv_norm_rope(const LaunchCfg& cfg, const float* raw, int64_t ldr, int m, const float* q_norm,
                   const float* k_norm, float eps, const Epilogue& e);

// The int8 cache's store (Epilogue::kv_stage): each of row i's 2 · nkv key and value vectors
// in stage [m][2][nkv][hd] (f32) into the cache as kv_i8.h's codes and scale, at position
// *e.pos + i (or, a batched step, e.pos[i] of e.rows[i]'s cache, layer e.layer of e.layers),
// into e.kcache / e.vcache / e.kv_scales (cap e.cap). A vector with a non-finite
// element is stored as zeros with scale 0 and reported as the f16 cache's overflow is:
// atomicMin of (layer << 32 | position) into *e.kv_bad, when that is not null.
void kv_store_i8(const LaunchCfg& cfg, const float* stage, int m, const Epilogue& e);

// y[i] = silu(g[i]) · u[i], n values.
void silu_mul(const LaunchCfg& cfg, const float* g, const float* u, int64_t n, float* y);

// The kTopK best rank_key()s of logits[n] (value desc, index asc; NaN never), sorted, into
// out[kTopK] (0 = no candidate). scratch: topk_scratch_keys(n) u64.
size_t topk_scratch_keys(int64_t n);
void topk(const LaunchCfg& cfg, const float* logits, int64_t n, unsigned long long* scratch,
          unsigned long long* out);

// vt_sample's draw (draw.h) over topk's sorted candidates cand[kTopK] with *args (device
// memory): *out = the rank key of the token drawn (0 when there is no candidate). One block.
void draw(const LaunchCfg& cfg, const unsigned long long* cand, const DrawArgs* args, unsigned long long* out);

}  // namespace cudak
}  // namespace vt
