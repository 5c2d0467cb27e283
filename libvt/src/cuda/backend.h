// The CUDA backend as the rest of libvt sees it: plain C++, no CUDA header, the same
// declarations whether or not CUDA was compiled in.
//
//   built with CUDA     libvt/src/cuda/{runtime,engine,layout}.cpp + *.cu implement these.
//   built without CUDA  libvt/src/cuda/backend_none.cpp: every entry point throws
//                       vt::Error(VT_STATUS_BACKEND_UNAVAILABLE, "libvt was built without CUDA")
//                       and the availability queries say so.
//
// Ownership (the hooks are listed in docs/cuda.md): a CudaModel is meant to belong to its
// vt_model (a field `cuda`), a CudaSession to its vt_session, a CudaPacked to its vt_packed;
// the deleters free the device memory at once. The functions take these objects explicitly,
// so this code needs no field of the CPU structs beyond what they have today. Every function
// here may throw vt::Error; the C ABI boundary (vt::guard) turns that into a status. Device out
// of memory is VT_STATUS_OUT_OF_MEMORY and leaves the model / session / packed weight as it
// was.
//
// Threads: the availability queries are thread-safe. A CudaModel is read-only after upload and
// may be shared by sessions on many threads; a CudaSession is used by one thread at a time
// (like vt_session). Each call makes the right device current on the calling thread and
// restores the previous one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "../backend.h"  // cuda_backend_line(), cuda_available()
#include "vt/vt.h"

struct vt_model;
struct vt_session;
struct vt_packed;

namespace vt {

// ---- Availability ------------------------------------------------------------------------
// vt::cuda_backend_line() and vt::cuda_available() (the "cuda: ..." line of vt_backend_info()
// and vt_cuda_available()) are declared in ../backend.h; api.cpp has weak fallbacks for a
// build without CUDA, runtime.cpp the real ones, e.g.
//   "cuda: available (NVIDIA H100 80GB HBM3, sm_90, 79.19 GiB, 132 SMs; driver 13.0)"
//   "cuda: unavailable (no NVIDIA driver: libcuda.so.1 was not found)"

// True when CUDA is compiled in and device 0 can run libvt's kernels (= cuda_available());
// else *why (when not null) receives the reason, as in cuda_backend_line().
bool cuda_usable(std::string* why);

// True when device `index` exists and can run libvt's kernels; else *why says why
// ("device 3 does not exist (2 CUDA devices)", "device 0 (Tesla T4) is sm_75; ...").
bool cuda_device_usable(int index, std::string* why);

// ---- Models and sessions -------------------------------------------------------------------

struct CudaModel;
struct CudaSession;
struct CudaPacked;

struct CudaModelDeleter {
    void operator()(CudaModel* p) const noexcept;
};
struct CudaSessionDeleter {
    void operator()(CudaSession* p) const noexcept;
};
struct CudaPackedDeleter {
    void operator()(CudaPacked* p) const noexcept;
};
using CudaModelPtr = std::unique_ptr<CudaModel, CudaModelDeleter>;
using CudaSessionPtr = std::unique_ptr<CudaSession, CudaSessionDeleter>;
using CudaPackedPtr = std::unique_ptr<CudaPacked, CudaPackedDeleter>;

// Copies a fully loaded CPU model (its prepacked host weights: same 8-bit codes, same f16
// block scales, same per-row multipliers, so both backends use bit-identical weights) to
// device `device_index`, re-laid out for the GPU kernels: row-major weights, Q/K rows paired
// for RoPE, gate/up rows interleaved, embedding table, norms. `m` must stay alive and
// unchanged while the CudaModel is used (sessions read its config and RoPE table).
// Throws VT_STATUS_UNSUPPORTED for shapes the kernels do not cover (head_dim other than 64
// or 128), VT_STATUS_OUT_OF_MEMORY when the device is full (nothing is left allocated),
// VT_STATUS_BACKEND_UNAVAILABLE when the device cannot be used.
CudaModelPtr cuda_upload_model(const vt_model& m, int device_index);

// Bytes of device memory the model holds, and its device ordinal.
int64_t cuda_model_device_bytes(const CudaModel& cm);
int cuda_model_device_index(const CudaModel& cm);

// A session for model m (uploaded as cm): device KV cache (grown geometrically up to
// max_tokens, never per token), scratch, a stream and the decode step's CUDA Graph.
// max_tokens as resolved by vt::new_session (1 .. m.max_seq_len).
CudaSessionPtr cuda_new_session(const CudaModel& cm, const vt_model& m, int64_t max_tokens);

// The device half of vt::prefill / vt::decode (forward.h) for a vt_session whose device state
// is cs. The caller has validated everything (arguments, sampling options, room in the cache
// first, then the token ids): these run the tokens and have the same effect on s.len and
// s.step (the CPU fields stay the one truth for length and sampling step; vt::reset_session
// needs no CUDA hook).
void cuda_prefill(CudaSession& cs, vt_session& s, const int32_t* tokens, int64_t n,
                  const vt_sample_options* sampling, int32_t* next_token, float* logits,
                  vt_logits_mode mode);
void cuda_decode(CudaSession& cs, vt_session& s, int32_t token, const vt_sample_options* sampling,
                 int32_t* next_token, float* logits);

// Whether the session's decode graph uses programmatic dependent launch now; why_off (when not
// null) gets the capture error that last made a token run without it ("" if none). Without
// CUDA: false.
bool cuda_session_pdl(const CudaSession& cs, std::string* why_off);

// ---- Packed weights and linears (the inference API on the device) -------------------------

// Device copy of a packed weight: the dense formats (INT8_BLOCKED, FP8_BLOCKED, FP8_CHANNEL,
// BF16) for the W8A16 kernels (FP8_CHANNEL also for the CUTLASS W8A8 GEMM on sm_89+), the 2:4
// sparse formats for the CUTLASS sparse GEMM (built without CUTLASS: VT_STATUS_BACKEND_UNAVAILABLE
// saying so). docs/cuda.md "CUTLASS GEMMs" says which kernel runs which call.
CudaPackedPtr cuda_upload_packed(const vt_packed& p, int device_index);
int64_t cuda_packed_device_bytes(const CudaPacked& cp);

// vt::linear / vt::linear_swiglu (quant.h) on device copies: x and y are host f32 arrays
// (copied to and from the device), same arguments and results to within FP rounding
// (quantize_input rounds x exactly as the CPU path does). Synchronous. Validates arguments
// like the CPU path (the caller has checked that the weights are on the device).
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
