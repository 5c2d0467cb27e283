// The backend seam: what the session layer (session.cpp), the linears (linear.cpp) and the C
// API see of a backend. Plain C++, no CUDA header; the same declarations whether or not CUDA
// was compiled in.
//
//   CPU   cpu/engine.cpp implements BackendModel / BackendSession (cpu_backend).
//   CUDA  cuda/{engine,runtime,layout}.cpp + *.cu implement them (cuda_backend) and the CUDA
//         functions below; built without CUDA, cuda/backend_none.cpp makes every CUDA entry
//         point throw vt::Error(VT_STATUS_BACKEND_UNAVAILABLE, "libvt was built without CUDA")
//         and the availability queries say so (never a link failure).
//
// The session layer validates everything (token ids, room in the cache, options) before a
// backend runs; backends only run tokens. Every function here may throw vt::Error; the C ABI
// boundary (vt::guard) turns that into a status. Device out of memory is
// VT_STATUS_OUT_OF_MEMORY and leaves the model / session / packed weight as it was.
//
// Threads: the availability queries are thread-safe. A BackendModel is read-only after it is
// made and may be shared by sessions on many threads; a BackendSession is used by one thread at
// a time (like vt_session).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "vt/vt.h"

struct vt_packed;

namespace vt {

struct ModelWeights;

// ---- Availability -------------------------------------------------------------------------
// api.cpp holds weak definitions of cuda_backend_line / cuda_available / cutlass_backend_line
// for a build without CUDA; cuda/runtime.cpp overrides them (strong symbols win at link time),
// so api.cpp needs no #ifdef.

// One line, no trailing newline, e.g. "cuda: unavailable (libvt was built without CUDA)",
// "cuda: available (NVIDIA H100 80GB HBM3, sm_90, 79.19 GiB, 132 SMs; driver 13.0)".
std::string cuda_backend_line();
// True when CUDA was compiled in and at least one device can be used.
bool cuda_available();
// The "cutlass: ..." line of a CUDA build (which CUTLASS GEMMs were compiled in, or why none
// were); empty in a build without CUDA (api.cpp's weak definition).
std::string cutlass_backend_line();

// True when CUDA is compiled in and device 0 can run libvt's kernels (= cuda_available());
// else *why (when not null) receives the reason, as in cuda_backend_line().
bool cuda_usable(std::string* why);
// True when device `index` exists and can run libvt's kernels; else *why says why
// ("device 3 does not exist (2 CUDA devices)", "device 0 (Tesla T4) is sm_75; ...").
bool cuda_device_usable(int index, std::string* why);

// ---- Models and sessions: the interface both backends implement ---------------------------

// Rows one forward call runs at most (the session layer splits a longer prefill into chunks
// of this size; it bounds the backends' scratch memory).
constexpr int64_t kPassRows = 256;
// Candidates a backend returns for a sampled choice (= VT_MAX_TOP_K: every option's draw can
// only pick among the top VT_MAX_TOP_K, so choosing among these gives the token the full row
// would).
constexpr int kMaxCandidates = VT_MAX_TOP_K;

// What one forward call returns on the host.
enum class Logits { None, Last, All };   // no logits / the last row's [V] / every row's [n, V]
// Pick::Draw: the backend draws the last row's token itself, as vt_sample would from the row
// with *BackendSession::draw_options at step draw_step (only where BackendSession::can_draw()).
enum class Pick { None, Argmax, Top, Draw };   // the last row's argmax / its top kMaxCandidates / a draw

// A choice made on the device: the argmax (ties: lowest id; all NaN: 0) or, for Pick::Draw,
// the token drawn, in `argmax`; or the top candidates by (value desc, id asc), n of them (0
// when every logit is NaN).
struct Picked {
    int32_t argmax = 0;
    int n = 0;
    float value[kMaxCandidates];
    int32_t id[kMaxCandidates];
};

struct BackendSession {
    virtual ~BackendSession() = default;
    // The length of the sequence the next forward() belongs to, set by the session layer:
    // a prefill's final length, a decode's position + 1. RoPE types that depend on it
    // (LongRoPE: ModelWeights::rope_freqs) read it; transformers decides per forward call.
    int64_t rope_seq_len = 0;
    // Pick::Draw's options (temperature > 0, validated, no penalties) and sampling step, set by
    // the session layer before a forward that asks for it.
    const vt_sample_options* draw_options = nullptr;
    uint64_t draw_step = 0;
    // True when forward() takes Pick::Draw (the CUDA backend unless VT_CUDA_DEVICE_DRAW=0).
    virtual bool can_draw() const { return false; }
    // Runs tokens[0, n) (1 <= n <= kPassRows, ids valid) at positions pos .. pos + n - 1,
    // appending their keys and values to the cache (pos + n <= the session's capacity; the
    // positions below pos are those of earlier calls). `logits` receives what `out` asks for;
    // `picked` (Pick other than None: only on a backend whose can_pick() is true) the choice
    // over the last row. Positions and lengths are the session layer's: a call that throws
    // leaves the cache holding at least the first pos positions.
    virtual void forward(const int32_t* tokens, int64_t n, int64_t pos, Logits out, float* logits, Pick pick,
                         Picked* picked) = 0;
    // Grows the cache to hold `needed` positions (<= capacity), keeping the first `len`. A
    // prefill reserves its whole length before its first chunk, so one that cannot fit fails
    // (VT_STATUS_OUT_OF_MEMORY) before any work, with the session as it was.
    virtual void reserve(int64_t len, int64_t needed) = 0;
    // Replaces this cache's content with the first n positions of `src` (a session of the same
    // backend model, n <= its length and <= this session's capacity): the prefix cache's copy.
    // On failure (VT_STATUS_OUT_OF_MEMORY) this session holds nothing the caller may rely on;
    // the session layer then treats it as empty.
    virtual void copy_prefix(const BackendSession& src, int64_t n) = 0;
    // CUDA: whether the decode step uses programmatic dependent launch now (why_off: the
    // capture error that last turned it off, "" if none). CPU: false.
    virtual bool uses_pdl(std::string* why_off) const {
        if (why_off) why_off->clear();
        return false;
    }
    // CUDA: whether greedy decode steps run ahead of the host (device-side token feedback,
    // cuda/decode_ahead.h; VT_CUDA_FEEDBACK=0: off), with how many steps launched ahead were
    // used and how many dropped (waited for and run again, or left unused). CPU: false, 0, 0.
    virtual bool feedback_counts(int64_t* used, int64_t* dropped) const {
        *used = *dropped = 0;
        return false;
    }
};

struct BackendModel {
    virtual ~BackendModel() = default;
    // A session holding up to `capacity` positions (1 .. the model's max_seq_len, checked by
    // the session layer).
    virtual std::unique_ptr<BackendSession> new_session(int64_t capacity) const = 0;
    // True when forward() can return Pick::Argmax / Pick::Top more cheaply than the logits.
    virtual bool can_pick() const { return false; }
    // True when decode_batch runs the rows in one pass; else the session layer decodes the
    // sessions in turn.
    virtual bool batches() const { return false; }
    // One decode step of n sessions (all of this model): token tokens[i] at position pos[i]
    // of sessions[i] -> logits [n, V] (null: none wanted). Only called when batches().
    virtual void decode_batch(BackendSession* const* sessions, int64_t n, const int32_t* tokens, const int64_t* pos,
                              float* logits) const;
    // Bytes of device memory held (0 on the CPU).
    virtual int64_t device_bytes() const { return 0; }
};

// The CPU backend over the model's host weights (which must outlive it); its sessions keep
// their KV cache in f16, f32 or int8 (kv_dtype: vt_model_options.kv_cache_dtype).
std::unique_ptr<BackendModel> cpu_backend(const ModelWeights& w, int32_t kv_dtype);

// The CUDA backend: copies the model's weights (its prepacked host linears: same 8-bit codes,
// same f16 block scales, same per-row multipliers, so both backends use bit-identical weights)
// to device `device_index`, re-laid out for the GPU kernels: row-major weights, Q/K rows paired
// for RoPE, gate/up rows interleaved, embedding table, norms. Keeps nothing of `w` but its
// RoPE tables, read through a pointer (w owns its backend and outlives it); its packed linears
// may be freed afterwards. Its sessions keep their KV cache in f16 or f32 (kv_dtype,
// as the CPU's). Throws VT_STATUS_UNSUPPORTED for what the kernels do not cover (head_dim not
// a multiple of 4 or above 256, the int8 KV cache), VT_STATUS_OUT_OF_MEMORY when the device is
// full (nothing is left allocated), VT_STATUS_BACKEND_UNAVAILABLE when the device cannot be used.
std::unique_ptr<BackendModel> cuda_backend(const ModelWeights& w, int device_index, int32_t kv_dtype);

// ---- Packed weights and linears on the device (the inference API) ------------------------

struct CudaPacked;
struct CudaPackedDeleter {
    void operator()(CudaPacked* p) const noexcept;
};
using CudaPackedPtr = std::unique_ptr<CudaPacked, CudaPackedDeleter>;

// Device copy of a packed weight: the dense formats (INT8_BLOCKED, FP8_BLOCKED, FP8_CHANNEL,
// BF16) for the W8A16 kernels (FP8_CHANNEL also for the CUTLASS W8A8 GEMM on sm_89+), the 2:4
// sparse formats for the CUTLASS sparse GEMM (built without CUTLASS: VT_STATUS_BACKEND_UNAVAILABLE
// saying so). docs/cuda.md "CUTLASS GEMMs" says which kernel runs which call.
CudaPackedPtr cuda_upload_packed(const vt_packed& p, int device_index);
int64_t cuda_packed_device_bytes(const CudaPacked& cp);
// Whether this weight's FP8 W8A8 linears with m >= 16 run on the sm_90a (wgmma) kernel:
// FP8_CHANNEL on an sm_90 device, built with it, VT_CUDA_FP8_GEMM not `sm89` at upload.
bool cuda_packed_fp8_hopper(const CudaPacked& cp);

// vt::linear / vt::linear_swiglu (quant.h) on device copies: x and y are host f32 arrays
// (copied to and from the device), same arguments and results to within FP rounding
// (quantize_input rounds x exactly as the CPU path does). Synchronous. The caller
// (linear.cpp's check_linear / check_swiglu, the one check of a linear call) has validated
// the arguments and options; these add only the CUDA limits (m <= 2^24, device pointers).
void cuda_linear(const CudaPacked& w, const float* x, int64_t m, const float* bias,
                 const vt_linear_options& opt, float* y);
void cuda_linear_swiglu(const CudaPacked& gate, const CudaPacked& up, const float* x, int64_t m,
                        const float* gate_bias, const float* up_bias, const vt_linear_options& opt,
                        float* y);

// The same on device pointers (vt_linear_device / vt_linear_swiglu_device in vt.h): x, bias,
// y are device memory of the weight's device (checked with cudaPointerGetAttributes, naming
// the argument); the work is enqueued on `stream` (a cudaStream_t; NULL = the legacy default
// stream) and the call returns without waiting for it, except with quantize_input = 1, where x
// is rounded on the host (linear.cpp's arithmetic) after waiting for the stream. Temporaries
// are stream-ordered (cudaMallocAsync / cudaFreeAsync on `stream`).
void cuda_linear_device(const CudaPacked& w, const float* x, int64_t m, const float* bias,
                        const vt_linear_options& opt, float* y, void* stream);
void cuda_linear_swiglu_device(const CudaPacked& gate, const CudaPacked& up, const float* x, int64_t m,
                               const float* gate_bias, const float* up_bias, const vt_linear_options& opt,
                               float* y, void* stream);

// ---- Device memory for callers (vt_device_alloc / vt_device_free / vt_device_copy) --------

// cudaMalloc on device `device_index` (VT_STATUS_OUT_OF_MEMORY with the sizes when full).
void* cuda_device_alloc(int device_index, size_t bytes);
// cudaFree (after the device has finished the work using it); null is a no-op.
void cuda_device_free(int device_index, void* p);
// Copies `bytes` between host and device memory of device `device_index` (to_device: src is
// host memory, dst device memory; else the reverse), ordered on `stream` (NULL = legacy
// default), and waits for it: the copy is complete when the call returns.
void cuda_device_copy(int device_index, void* dst, const void* src, size_t bytes, bool to_device, void* stream);

}  // namespace vt
