/*
 * vt.h — the C ABI of libvt, the core of pyvt.
 *
 * libvt owns quantized weights, CPU (and, when built with it, CUDA) kernels and the LLM
 * decode loop. It works at the token level: token ids in, token ids and logits out.
 * Text (tokenizers, chat templates) is the caller's business.
 *
 * Conventions
 * -----------
 * - Every fallible call returns a vt_status. VT_OK (0) means success; on any other value
 *   vt_last_error() returns a human-readable message for the calling thread, and every
 *   output argument is left untouched (handles are not created, buffers may be partially
 *   written only where a function says so). No C++ exception, abort() or exit() ever
 *   crosses this boundary; bad input returns an error instead.
 * - Extensible structs. Every options and info struct starts with `uint32_t struct_size`,
 *   so fields can be appended in later versions without breaking callers built against an
 *   older vt.h:
 *   - options structs come from vt_<thing>_default_options(), which sets struct_size to
 *     sizeof; libvt reads the first struct_size bytes and uses its defaults for fields the
 *     caller's (older) struct lacks. struct_size 0 (an options struct not made by the
 *     defaults function) or larger than this libvt knows is VT_STATUS_INVALID_ARGUMENT. A
 *     NULL options pointer means "all defaults";
 *   - info / stats structs are filled by libvt: the caller sets struct_size = sizeof
 *     (VT_INFO_INIT does), libvt writes at most that many bytes and sets struct_size to
 *     what it wrote.
 *   VT_ABI_VERSION / vt_abi_version() change whenever a struct or signature changes.
 * - Weight matrices use the Hugging Face layout: row-major [out_features, in_features].
 *   A linear computes y[m, out] = x[m, in] · Wᵀ (+ bias[out]).
 * - Every object created by a *_new / *_load / vt_prepack has exactly one matching *_free,
 *   which accepts NULL. Objects are not reference counted: free them once, after every call
 *   that uses them has returned.
 * - Thread safety: functions taking only const handles may be called concurrently from many
 *   threads on the same handle (a packed weight, a loaded model). A vt_session is owned by
 *   one thread at a time. vt_set_num_threads may be called while other threads compute:
 *   work already running finishes with the thread count it started with.
 * - This header is the same whatever backends were compiled in; ask vt_backend_info().
 */
#ifndef VT_VT_H
#define VT_VT_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#  if defined(VT_BUILDING_LIBRARY)
#    define VT_API __declspec(dllexport)
#  else
#    define VT_API __declspec(dllimport)
#  endif
#else
#  define VT_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ==================================================================================== */
/* Status, errors, version, backends                                                    */
/* ==================================================================================== */

typedef enum vt_status {
    VT_OK = 0,
    VT_STATUS_INVALID_ARGUMENT = 1, /* a value, shape, dtype or option is not acceptable  */
    VT_STATUS_FILE_NOT_FOUND = 2,   /* a path does not exist                               */
    VT_STATUS_IO_ERROR = 3,         /* a file exists but could not be opened/read/mapped   */
    VT_STATUS_FORMAT_ERROR = 4,     /* corrupt/truncated file, bad JSON, shape mismatch    */
    VT_STATUS_UNSUPPORTED = 5,      /* valid input this build cannot handle (architecture,
                                       dtype, format)                                     */
    VT_STATUS_OUT_OF_MEMORY = 6,    /* host or device allocation failed; nothing leaked    */
    VT_STATUS_BACKEND_UNAVAILABLE = 7, /* e.g. CUDA asked for but not built / no device    */
    VT_STATUS_CANCELLED = 8,        /* stopped by a callback returning non-zero            */
    VT_STATUS_INTERNAL = 99         /* a bug in libvt; the message says where             */
} vt_status;

/* Message of the last failed call on the calling thread ("" after a successful call). The
 * pointer stays valid until the next libvt call on this thread. */
VT_API const char* vt_last_error(void);

/* Stable name of a status, e.g. "VT_STATUS_FORMAT_ERROR". Never NULL. */
VT_API const char* vt_status_name(vt_status status);

/* The ABI this header describes (2: the struct_size fields) and the ABI of the library
 * actually loaded: a caller can refuse a library whose vt_abi_version() differs. */
#define VT_ABI_VERSION 2
VT_API int vt_abi_version(void);

/* An info / stats struct ready to be filled: VT_INFO_INIT(vt_model_info) as its initializer
 * (or set struct_size = sizeof the struct before the call). */
#ifdef __cplusplus
#define VT_INFO_INIT(type) ([] { type vt_info_{}; vt_info_.struct_size = static_cast<uint32_t>(sizeof(type)); return vt_info_; }())
#else
#define VT_INFO_INIT(type) {.struct_size = (uint32_t)sizeof(type)}
#endif

/* Library version "MAJOR.MINOR.PATCH". */
VT_API const char* vt_version(void);
VT_API int vt_version_major(void);
VT_API int vt_version_minor(void);
VT_API int vt_version_patch(void);

/* One line per backend, e.g.
 *   "cpu: available (x86-64 avx512, 2 threads)\ncuda: unavailable (libvt was built without CUDA)"
 * Never NULL; valid for the life of the process. */
VT_API const char* vt_backend_info(void);

/* 1 when the CUDA backend was compiled in and at least one device can be used, else 0. */
VT_API int vt_cuda_available(void);

/* Worker threads used by CPU kernels. n <= 0 restores the default (number of cores, or
 * the VT_NUM_THREADS environment variable when set). Process-wide; safe to call while other
 * threads compute. On a machine busier than its cores, the kernels run on the calling
 * thread alone for a while after a worker was descheduled mid-step (docs/guide.md). */
VT_API vt_status vt_set_num_threads(int n);
VT_API int vt_get_num_threads(void);
/* Parallel regions the CPU kernels have run on the worker threads since the process started
 * (each one hand-off and one join; work small enough to run on the calling thread alone is
 * not counted). A diagnostic: the difference across a decode step is that step's count. */
VT_API uint64_t vt_parallel_regions(void);

/* ==================================================================================== */
/* Element types and conversions                                                        */
/* ==================================================================================== */

typedef enum vt_dtype {
    VT_DTYPE_F32 = 0,
    VT_DTYPE_F16 = 1,      /* IEEE binary16                                              */
    VT_DTYPE_BF16 = 2,     /* bfloat16 (upper half of an f32)                            */
    VT_DTYPE_F8_E4M3 = 3,  /* OCP float8 e4m3fn: bias 7, no infinities, 0x7F/0xFF = NaN, max 448 */
    VT_DTYPE_I8 = 4,
    VT_DTYPE_I32 = 5,
    VT_DTYPE_U8 = 6,
    VT_DTYPE_F64 = 7,
    VT_DTYPE_I64 = 8
} vt_dtype;

/* Size in bytes of one element, 0 for an unknown dtype. */
VT_API size_t vt_dtype_size(vt_dtype dtype);

/* Element-wise conversion of n values between F32, F64, F16, BF16 and F8_E4M3 (any pair).
 * Rounding is round-to-nearest-even. Narrowing to F8_E4M3 saturates finite values to ±448,
 * maps ±Inf to ±448 and keeps NaN as NaN (0x7F / 0xFF); to F16/BF16, Inf and NaN are kept.
 * src and dst must not overlap. */
VT_API vt_status vt_convert(const void* src, vt_dtype src_dtype, void* dst, vt_dtype dst_dtype,
                            size_t n);

/* dst[cols, rows] = transpose(src[rows, cols]) for elements of elem_size bytes (1, 2, 4 or 8).
 * Cache-blocked and multi-threaded. src and dst must not overlap. */
VT_API vt_status vt_transpose(const void* src, void* dst, size_t rows, size_t cols,
                              size_t elem_size);

/* ==================================================================================== */
/* Packed (quantized) weights                                                           */
/* ==================================================================================== */

typedef enum vt_format {
    /* Model loading only (vt_model_options.weight_format; vt_prepack refuses it): every
     * linear a checkpoint stores as GGUF blocks (pyvt's GGUF conversion keeps Q8_0, Q4_0
     * and Q4_1 tensors as they are) is packed from those blocks into the format that holds
     * the same numbers exactly — Q8_0 -> INT8_BLOCKED, Q4_0 -> INT4_BLOCKED, Q4_1 ->
     * INT4_MIN_BLOCKED, block 32, no second quantization —, gpt-oss's MXFP4 experts into
     * MXFP4 (exactly), and every float linear into INT8_BLOCKED. vt_model_info.weight_format
     * then reports the layers' format (that of layer 0's q_proj).                          */
    VT_FORMAT_AUTO = 0,
    /* FP8 E4M3 weights, one f32 scale per output channel (scale = absmax/448).            */
    VT_FORMAT_FP8_CHANNEL = 1,
    /* FP8 E4M3 weights, one scale per block_size weights along K (default 16,
     * scale ~ absmax/448, see below).                                                   */
    VT_FORMAT_FP8_BLOCKED = 2,
    /* Symmetric INT8 weights, one scale per block_size weights along K (default 32,
     * scale ~ absmax/127, q = round_half_even(w/scale) clamped to [-127, 127]).
     * Blocked scales are stored as f16 times a per-row power of two: absmax/127 (or /448)
     * rounded *up* to that grid, and w is quantized against the rounded scale. This costs
     * < 0.1% extra weight error and saves 2 bytes per block (bench/scale_storage.py).    */
    VT_FORMAT_INT8_BLOCKED = 3,
    /* 2:4 sparse INT8: in every group of 4 along K the 2 largest |w| are kept (ties: the
     * lower index), quantized with one f32 scale per output channel (absmax/127).
     * Storage (CPU): values [out, in/2] int8 in K order, and metadata [out, in/4] uint8
     * where byte g holds the two kept indices of group g: idx0 | idx1 << 2, idx0 < idx1.
     * Linears quantize the input per row to INT8 (absmax/127) and accumulate in int32.
     * On CUDA the same values and metadata are repacked at upload for CUTLASS's sparse
     * GEMM (mma.sp): values [out, in/2] int8, metadata one 32-bit word per 32 K (the meta
     * bytes of 8 groups as nibbles) reordered as cutlass::reorder_meta does; INT4 values
     * are widened to int8 there and run on the same kernel with the same integer results
     * (libvt/src/cuda/layout.h; docs/cuda.md "CUTLASS GEMMs").                           */
    VT_FORMAT_INT8_SPARSE24 = 4,
    /* As INT8_SPARSE24 with INT4 values in [-7, 7] (scale absmax/7), two per byte, the
     * lower K index in the low nibble: values [out, in/4] bytes. Linears quantize the
     * input per row to INT4 (absmax/7), as INT4×INT4 sparse tensor cores do.            */
    VT_FORMAT_INT4_SPARSE24 = 5,
    /* Unquantized bfloat16 [out, in]: the reference mode.                                 */
    VT_FORMAT_BF16 = 6,
    /* Dense 4-bit weights (W4A16): q in [-8, 7], w = q * scale, one scale per block_size
     * weights along K (default 32; in_features need not be a multiple of it: the last
     * block is shorter). Each block's scale minimizes the block's squared error over a few
     * candidates around absmax/8 (the largest |w| maps to -8, as llama.cpp's Q4_0) and is
     * stored as f16 times a per-row power of two, like INT8_BLOCKED: 0.5625 bytes per
     * weight at block 32. Linears keep the input in f32 and accumulate in f32
     * (quantize_input 1 rounds it per row to INT8 first, as for INT8_BLOCKED). CPU and
     * CUDA (W4A16 GEMV / tensor-core GEMM, docs/cuda.md).                                */
    VT_FORMAT_INT4_BLOCKED = 7,
    /* Dense 4-bit weights with a per-block minimum (W4A16, llama.cpp Q4_1's grid): u in
     * [0, 15], w = u * scale + min, one f16 scale and one f16 min per block_size weights
     * along K (default 32; in_features need not be a multiple of it: the last block is
     * shorter). Q4_1's rule per block: min = min(w), scale = (max(w) - min) / 15,
     * u = clamp(round((w - min) / scale), 0, 15), with scale and min stored as f16 times a
     * per-row power of two (like INT4_BLOCKED) and u quantized against the stored pair.
     * 0.625 bytes per weight at block 32 (INT4_BLOCKED: 0.5625); a block whose weights are
     * not centred on 0 keeps all 16 levels. GGUF Q4_1 tensors load into it exactly (AUTO).
     * Linears keep the input in f32 and accumulate in f32 (quantize_input 1 rounds it per
     * row to INT8 first, as for INT4_BLOCKED). CPU and CUDA (W4A16, docs/cuda.md).      */
    VT_FORMAT_INT4_MIN_BLOCKED = 8,
    /* OCP Microscaling FP4 (MXFP4, W4A16): each weight an FP4 E2M1 code (sign, 2-bit
     * exponent, 1-bit mantissa: 0, ±0.5, ±1, ±1.5, ±2, ±3, ±4, ±6), one power-of-two scale
     * 2^e per block of 32 along K (block_size 32 only; in_features need not be a multiple
     * of it: the last block is shorter). The OCP rule: e = floor(log2(max |w|)) - 2, each
     * w / 2^e rounded to the nearest E2M1 value (ties to the even code), clamped to ±6.
     * gpt-oss checkpoints' MXFP4 experts load into it exactly (AUTO). Stored as the E2M1
     * code in INT4_BLOCKED's nibbles and 2^e as an f16 block scale times a per-row power of
     * two (exact while a row's block exponents span at most 38 binades; blocks further below
     * the row's largest one are quantized against 2^(emax - 38)): 0.5625 bytes per weight.
     * Linears keep the input in f32 and accumulate in f32 (quantize_input 1 rounds it per
     * row to INT8 first, as for INT4_BLOCKED). CPU only (the CUDA backend refuses it).    */
    VT_FORMAT_MXFP4 = 9
} vt_format;

typedef enum vt_device_kind {
    VT_DEVICE_AUTO = 0, /* CUDA when available (and, for vt_prepack, the format is
                           covered there), else CPU                                       */
    VT_DEVICE_CPU = 1,
    VT_DEVICE_CUDA = 2
} vt_device_kind;

typedef struct vt_prepack_options {
    uint32_t struct_size; /* sizeof(vt_prepack_options) as the caller knows it (Conventions) */
    int32_t format;       /* vt_format; default VT_FORMAT_INT8_BLOCKED                     */
    int32_t block_size;   /* along K for *_BLOCKED; 0 = the format's default (FP8 16,
                             INT8 32, INT4 32, MXFP4 32); allowed 16, 32, 64, 128 (MXFP4:
                             32); in_features % block == 0 (INT4_BLOCKED, INT4_MIN_BLOCKED,
                             MXFP4: any in_features)                                       */
    int32_t device;       /* vt_device_kind; default VT_DEVICE_CPU. CUDA: the weight is
                             quantized on the host, then copied to device device_index
                             (VT_STATUS_BACKEND_UNAVAILABLE naming the reason when that
                             device cannot be used; VT_STATUS_UNSUPPORTED for a format the
                             device kernels do not cover). AUTO: CUDA device device_index
                             when it can be used and covers the format, else the CPU.     */
    int32_t device_index; /* CUDA ordinal when device is CUDA or AUTO (>= 0); default 0    */
} vt_prepack_options;

VT_API vt_prepack_options vt_prepack_default_options(void);

typedef struct vt_packed vt_packed;

/* Quantize w[out_features, in_features] (dtype F32, F16 or BF16, row-major, contiguous, in
 * host memory) into a new packed handle. Non-finite weights are refused
 * (VT_STATUS_INVALID_ARGUMENT naming the first bad row/column). A handle on a CUDA device
 * holds the device copy (freed by vt_packed_free) and keeps its host copy, from which
 * vt_packed_unpack reads (both hold bit-identical numbers). */
VT_API vt_status vt_prepack(const void* w, vt_dtype dtype, int64_t out_features,
                            int64_t in_features, const vt_prepack_options* options,
                            vt_packed** out);
VT_API void vt_packed_free(vt_packed* packed);

typedef struct vt_packed_info {
    uint32_t struct_size; /* sizeof(vt_packed_info) as the caller knows it (Conventions) */
    int32_t format;        /* vt_format                                                   */
    int32_t block_size;    /* K-block for blocked formats; in_features for per-channel     */
    int64_t out_features;
    int64_t in_features;
    int64_t nbytes;        /* bytes of weights + scales + metadata                        */
    int32_t device;        /* vt_device_kind where the linears run: CPU or CUDA            */
    int32_t device_index;  /* CUDA ordinal when device is CUDA, else 0                     */
} vt_packed_info;

VT_API vt_status vt_packed_get_info(const vt_packed* packed, vt_packed_info* info);

/* Dequantize back to f32 dst[out_features, in_features] (host memory; pruned entries are
 * 0). For a weight on a CUDA device this reads the host copy (no device access). */
VT_API vt_status vt_packed_unpack(const vt_packed* packed, float* dst);

/* ==================================================================================== */
/* Linears                                                                              */
/* ==================================================================================== */

typedef enum vt_activation {
    VT_ACTIVATION_NONE = 0,
    VT_ACTIVATION_GELU = 1 /* exact GELU: 0.5·x·(1 + erf(x/√2)), after the bias           */
} vt_activation;

typedef struct vt_linear_options {
    uint32_t struct_size; /* sizeof(vt_linear_options) as the caller knows it (Conventions) */
    /* 0: keep the input in 16/32-bit (W8A16). 1: quantize the input per row first, to the
     * packed format's activation type (FP8 E4M3 with scale absmax/448 for FP8 formats —
     * W8A8; INT8 with scale absmax/127 for INT8_BLOCKED, INT4_BLOCKED,
     * INT4_MIN_BLOCKED and MXFP4; bf16 rounding
     * for BF16).
     * Sparse formats always quantize (see vt_format). Default 0.                          */
    int32_t quantize_input;
    int32_t activation; /* vt_activation; default VT_ACTIVATION_NONE                      */
} vt_linear_options;

VT_API vt_linear_options vt_linear_default_options(void);

/* y[m, out] = act(x[m, in] · Wᵀ + bias). x, y f32 row-major contiguous host arrays; bias
 * NULL or [out]. m >= 1 (m == 1 is the decode GEMV fast path). y must not overlap x.
 * Runs where the weight is: for a weight on a CUDA device, x and bias are copied to the
 * device and y back (synchronous; vt_linear_device avoids the copies). */
VT_API vt_status vt_linear(const vt_packed* w, const float* x, int64_t m, const float* bias,
                           const vt_linear_options* options, float* y);

/* y[m, out] = silu(x·gateᵀ + gate_bias) ⊙ (x·upᵀ + up_bias), fused. gate and up must have
 * the same shape, format and block size and be on the same device (both CPU, or both the
 * same CUDA device; else VT_STATUS_INVALID_ARGUMENT); gate_bias/up_bias NULL or [out]. */
VT_API vt_status vt_linear_swiglu(const vt_packed* gate, const vt_packed* up, const float* x,
                                  int64_t m, const float* gate_bias, const float* up_bias,
                                  const vt_linear_options* options, float* y);

/* ---- Linears on device memory (CUDA) ------------------------------------------------ */

/* As vt_linear / vt_linear_swiglu, with x, bias (NULL or [out]) and y in device memory of
 * the weight's CUDA device (checked: host memory or another device's memory is
 * VT_STATUS_INVALID_ARGUMENT naming the argument). No copies.
 * stream: a cudaStream_t passed as void*; NULL means the legacy default stream. The call is
 * ASYNCHRONOUS: it enqueues the work on `stream` after whatever is already there (so x may
 * still be being written by earlier work on that stream) and returns; y is ready when the
 * stream reaches that point (cudaStreamSynchronize, an event, or later work on the same
 * stream). Temporaries are stream-ordered; x, bias, y must stay allocated until then.
 * Exception: with quantize_input = 1 (W8A8) the input is rounded on the host, so the call
 * first waits for `stream`, copies x out and the rounded x back in (still asynchronous with
 * respect to the linear itself). Launch and argument errors are reported by the call; a fault
 * inside the kernels shows up at the next synchronization.
 * Weights on the CPU: VT_STATUS_INVALID_ARGUMENT. Built without CUDA:
 * VT_STATUS_BACKEND_UNAVAILABLE. */
VT_API vt_status vt_linear_device(const vt_packed* w, const float* x, int64_t m, const float* bias,
                                  const vt_linear_options* options, float* y, void* stream);
VT_API vt_status vt_linear_swiglu_device(const vt_packed* gate, const vt_packed* up, const float* x,
                                         int64_t m, const float* gate_bias, const float* up_bias,
                                         const vt_linear_options* options, float* y, void* stream);

/* ---- Device memory (for callers without a CUDA runtime of their own) -------------------- */

/* cudaMalloc of `bytes` (0 allowed: a valid minimal allocation) on CUDA device
 * device_index into *ptr. VT_STATUS_OUT_OF_MEMORY with the sizes when the device is full;
 * VT_STATUS_BACKEND_UNAVAILABLE naming the reason when the device cannot be used. */
VT_API vt_status vt_device_alloc(int32_t device_index, size_t bytes, void** ptr);
/* Frees memory from vt_device_alloc (NULL: no-op). cudaFree waits for the device's pending
 * work, so memory still used by an enqueued linear is not reused under it. */
VT_API void vt_device_free(int32_t device_index, void* ptr);

typedef enum vt_copy_kind {
    VT_COPY_HOST_TO_DEVICE = 1,
    VT_COPY_DEVICE_TO_HOST = 2
} vt_copy_kind;

/* Copies `bytes` between host memory and device memory of device device_index, ordered on
 * `stream` (cudaStream_t as void*, NULL = legacy default): after the work already enqueued
 * there. SYNCHRONOUS: the copy is complete when the call returns. */
VT_API vt_status vt_device_copy(int32_t device_index, void* dst, const void* src, size_t bytes,
                                int32_t kind, void* stream);

/* ==================================================================================== */
/* Sampling                                                                             */
/* ==================================================================================== */

/* Index of the largest value; ties go to the lowest index; NaN is never chosen unless all
 * values are NaN (then 0). n >= 1. */
VT_API vt_status vt_argmax(const float* x, int64_t n, int64_t* index);

/* Numerically stable softmax (max-subtracted, accumulated in f64) of n values. */
VT_API vt_status vt_softmax(const float* x, int64_t n, float* y);

typedef struct vt_sample_options {
    uint32_t struct_size; /* sizeof(vt_sample_options) as the caller knows it (Conventions) */
    float temperature;  /* 0 = argmax (greedy); > 0 = sample. Default 0.                  */
    int32_t top_k;      /* 0 = no cap (at most VT_MAX_TOP_K candidates); else capped at it */
    float top_p;        /* nucleus mass in (0, 1]; default 1                               */
    uint64_t seed;      /* default 42                                                      */
    float min_p;        /* in [0, 1]; 0 = off (default). See vt_sample, step 3.            */
    /* Penalties, applied by sessions only (they know the history; vt_sample ignores them),
     * to a copy of the logits before choosing, in float32 and in this order:
     *   repetition: every token the session has seen (prefilled, decoded or chosen since
     *     the last reset): logit > 0 ? logit / r : logit * r   (CTRL / transformers);
     *   frequency and presence: every token the session has chosen c > 0 times:
     *     logit = (logit - c * f) - p                         (OpenAI).              */
    float repetition_penalty; /* > 0; 1 = off (default)                                   */
    float frequency_penalty;  /* finite; 0 = off (default)                                */
    float presence_penalty;   /* finite; 0 = off (default)                                */
} vt_sample_options;

#define VT_MAX_TOP_K 256

VT_API vt_sample_options vt_sample_default_options(void);

/* Draw a token from logits[n]:
 *   1. keep the top-k logits (k = top_k or VT_MAX_TOP_K, at most n; ties by lower index),
 *   2. divide by temperature, softmax in f64,
 *   3. min_p > 0: drop the candidates with (logit - max logit) / temperature < ln(min_p)
 *      (probability below min_p times the top one's), renormalize,
 *   4. keep the smallest prefix (by decreasing probability) whose mass reaches top_p,
 *   5. renormalize and draw with u = vt_uniform(seed, step) by inverse CDF.
 * temperature == 0 returns vt_argmax. The same inputs give the same token on every machine.
 * step lets a caller draw a sequence of tokens from one seed (generation uses the index of
 * the token being generated). */
VT_API vt_status vt_sample(const float* logits, int64_t n, const vt_sample_options* options,
                           uint64_t step, int64_t* token);

/* Logits processing: the row the sampler weighs, for callers that want it (log-probabilities
 * of the processed distribution, a choice made outside libvt that must equal libvt's).
 * out[n] = logits[n] (out may be logits), then, by flags:
 *   VT_PROCESS_PENALTIES: the penalties of `options` (as vt_sample_options defines them) over
 *     a token history: repetition on every id in inputs[0..n_inputs) and chosen[0..n_chosen),
 *     frequency and presence on the ids of chosen by how often each occurs there — what a
 *     session that prefilled `inputs` and then chose `chosen` applies;
 *   VT_PROCESS_MIN_P (temperature > 0 and min_p > 0): every token with
 *     (logit - max logit) / temperature < ln(min_p) (f64) set to -inf over the whole row (a NaN
 *     anywhere: nothing is cut);
 *   VT_PROCESS_CANDIDATES (temperature > 0): every token vt_sample could not draw (outside
 *     top-k, min-p, top-p: its steps 1-4) set to -inf.
 * The row is not divided by temperature. vt_sample(out) after PENALTIES (and MIN_P) is the
 * token a session with that history chooses. Ids outside [0, n) are INVALID_ARGUMENT. */
#define VT_PROCESS_PENALTIES 1
#define VT_PROCESS_MIN_P 2
#define VT_PROCESS_CANDIDATES 4
VT_API vt_status vt_logits_process(const float* logits, int64_t n, const vt_sample_options* options,
                                   const int32_t* inputs, int64_t n_inputs, const int32_t* chosen,
                                   int64_t n_chosen, int32_t flags, float* out);

/* The documented RNG: a uniform double in [0, 1) from 53 bits of
 * splitmix64(seed ^ splitmix64(step + 0x9E3779B97F4A7C15)), i.e. (r >> 11) * 2^-53, where
 * splitmix64(z) is SplitMix64's output mix (mod 2^64):
 *   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9; z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
 *   return z ^ (z >> 31).
 * Pure integer arithmetic. */
VT_API double vt_uniform(uint64_t seed, uint64_t step);


/* ==================================================================================== */
/* Models (Llama family, SafeTensors)                                                   */
/* ==================================================================================== */

typedef struct vt_model vt_model;

/* Progress during load: done/total in weight bytes processed. Return non-zero to cancel
 * (the load then fails with VT_STATUS_CANCELLED). */
typedef int (*vt_progress_fn)(void* user, int64_t done, int64_t total);

typedef struct vt_model_options {
    uint32_t struct_size; /* sizeof(vt_model_options) as the caller knows it (Conventions) */
    int32_t weight_format; /* vt_format: INT8_BLOCKED (default), FP8_BLOCKED, FP8_CHANNEL,
                              BF16, INT4_BLOCKED, INT4_MIN_BLOCKED or MXFP4 (lm_head then
                              INT8_BLOCKED), or AUTO (GGUF blocks and MXFP4 experts as they
                              are, see vt_format).
                              A format other than AUTO re-quantizes GGUF blocks (dequantized
                              exactly, then packed in that format).                        */
    int32_t block_size;    /* 0 = the format's default (INT8 32, FP8 16, INT4 32)          */
    int32_t num_layers;    /* load only the first N blocks; 0 = all                        */
    int32_t device;        /* vt_device_kind; default VT_DEVICE_AUTO                       */
    int32_t device_index;  /* CUDA ordinal; default 0                                      */
    int64_t max_seq_len;   /* KV capacity limit; 0 = max_position_embeddings of the config
                              (or 2048 without one; rope type dynamic: factor times it)    */
    vt_progress_fn progress; /* NULL = silent                                              */
    void* progress_user;
    /* More EOS ids, appended (no repeats) to those of config.json, generation_config.json and
     * <dir>/tokenizer.json: the tokenizer's EOS when the caller tokenizes with another file
     * (a tokenizer elsewhere, a SentencePiece-only tokenizer.model). The model's one EOS list
     * (vt_model_info.eos_token_ids, what vt_generate stops on). NULL / 0 = none; each id >= 0. */
    const int32_t* extra_eos_ids;
    int32_t num_extra_eos;      /* 0 .. VT_MAX_EOS                                          */
    /* A folder for the packed-weight cache (created if absent), or NULL (default): no cache.
     * A load writes its prepacked linears there (one file per checkpoint, format, block size
     * and layer count; written to a temporary name and renamed, so concurrent loads are safe);
     * a later load of the same, unchanged checkpoint reads them instead of quantizing again.
     * A cache file that does not match (another libvt layout, a changed checkpoint or config,
     * a wrong size or checksum) is not used and is rewritten; a folder that cannot be written
     * only means no cache. */
    const char* packed_cache_dir;
    /* The element type of the CPU backend's KV cache: VT_DTYPE_F16 (default), VT_DTYPE_F32 or
     * VT_DTYPE_I8. F16 halves the cache's memory and the bytes attention reads per token; keys
     * and values are rounded to f16 (round-to-nearest-even) when stored, and scores, softmax
     * and the weighted sum of values stay f32. A key or value beyond f16's range (|x| > 65504)
     * would become infinite: the pass that would store it fails with VT_STATUS_UNSUPPORTED
     * naming the layer and kv_cache_dtype F32 as the remedy, instead of producing wrong tokens.
     * I8 halves f16's bytes again (plus two f32 scales per position and KV head): each key and
     * each value vector (head_dim elements) is rounded to int8 with its own scale, max |x| / 127
     * (round-to-nearest-even); attention multiplies the scores by the key scales and the
     * softmax weights by the value scales, in f32. A non-finite key or value fails the pass
     * with VT_STATUS_UNSUPPORTED. Less faithful than F16: docs/guide.md gives its measured
     * agreement.
     * The CUDA backend keeps F16 (the same rounding and the same refusal) or F32; I8 there is
     * VT_STATUS_UNSUPPORTED (with VT_DEVICE_AUTO the model then runs on the CPU).
     * vt_model_info.kv_cache_dtype reports the type the model's sessions use. Any other value
     * is VT_STATUS_INVALID_ARGUMENT. */
    int32_t kv_cache_dtype;
} vt_model_options;

VT_API vt_model_options vt_model_default_options(void);

/* Load a Llama-family checkpoint. path: a .safetensors file, one shard of a sharded
 * checkpoint (the whole set is found through the index beside it, or the
 * model-XXXXX-of-YYYYY naming), a model.safetensors.index.json, or a folder holding either.
 * config.json (and generation_config.json) beside the weights are read when present; else
 * the shapes are used with TinyLlama defaults (head_dim 64, eps 1e-5, theta 10000).
 * Weights are F32, F16 or BF16; all layer weights are prepacked at load (Q/K/V and
 * gate/up fused). Errors name the file and tensor (VT_STATUS_FILE_NOT_FOUND,
 * VT_STATUS_FORMAT_ERROR, VT_STATUS_UNSUPPORTED listing what does not fit). */
VT_API vt_status vt_model_load(const char* path, const vt_model_options* options,
                               vt_model** out);
VT_API void vt_model_free(vt_model* model);

#define VT_MAX_EOS 16

typedef struct vt_model_info {
    uint32_t struct_size; /* sizeof(vt_model_info) as the caller knows it (Conventions) */
    int64_t vocab_size;
    int64_t hidden_size;
    int64_t intermediate_size;
    int32_t num_layers;        /* loaded blocks                                             */
    int32_t num_heads;
    int32_t num_kv_heads;
    int32_t head_dim;
    int64_t max_seq_len;       /* KV capacity limit in tokens                               */
    float rms_norm_eps;
    float rope_theta;
    int32_t tie_word_embeddings;
    int32_t bos_token_id;      /* -1 when unknown                                           */
    /* The model's one EOS list, decided at load: config.json's eos_token_id, then
     * generation_config.json's, then tokenizer_config.json's eos_token as tokenizer.json
     * maps it to an id (no repeats). vt_generate stops on these. */
    int32_t num_eos;           /* entries of eos_token_ids                                  */
    int32_t eos_token_ids[VT_MAX_EOS];
    int32_t weight_format;     /* vt_format                                                 */
    int32_t block_size;
    int32_t device;            /* vt_device_kind in use                                     */
    int32_t device_index;
    int64_t weight_bytes;      /* bytes read per decoded token (packed linears + norms; an
                                  * MoE layer: router, shared expert, k average experts)     */
    int64_t total_bytes;       /* all memory held by the model                               */
    /* The model family (NUL-terminated): "Llama", "Mistral", "Qwen2", "Qwen3", "Phi3", "Phi", "StableLM", "Starcoder2", "Exaone", "IQuestCoder", "InternLM3", "Exaone4", "Gemma",
     * "Gemma2", "Gemma3", "SmolLM3", "Granite", "GraniteSWA", "HyperCLOVAX", "OLMo2", "FlexOlmo", "GraniteMoE", "GraniteMoeShared", "OLMoE",
     * "GptOss", "Mixtral", "Qwen2MoE", "Qwen3MoE", "ExaoneMoE", "Glm4MoE", "SolarOpen", "Dots1", "DeepseekV3", "MiniCPM3", "Youtu", "Mistral4", "Glm4MoeLite", "DeepseekV2", "MiniMaxM2", "Ernie4_5_MoE", "HunYuanMoEV1", "Helium", "Ernie4_5", "SeedOss", "Glm", "Glm4",
     * "OLMo3", "Ministral", "Cwm", "Ministral3", "Cohere", "Cohere2", "Arcee", "NanoChat", "Apertus", "Nemotron", "Jais2", "HunYuanDenseV1", "VaultGemma",
     * "GPTNeoX", "GPT2", "GPTBigCode", "GPTJ", "OPT", "Falcon", "Bloom", "MPT", "GPTNeo", "OLMo", "Lfm2", "Lfm2Moe", "Lfm3", "Afmoe", "PhiMoE",
     * "SarvamMoE", "SarvamMLA", "Kolibri1", "HYV3", "Cohere2Moe", "AXK1", "Mellum", "Flint". */
    char family[32];
    /* Its variant features, comma-separated (NUL-terminated; "" for a plain Llama block):
     * "qkv-bias", "attention-bias" (q/k/v/o), "mlp-bias", "qk-norm", "fused-qkv",
     * "fused-gate-up", "gemma-norms", "geglu", "query-pre-attn-scalar S", "local-rope-theta T",
     * "attn-softcap C", "final-softcap C", "head-dim N" (head_dim × num_heads != hidden_size),
     * "sliding-window W (every layer | layer A | layers A..B | layers A,B,... | K of N layers)",
     * "moe E experts top-K" (+ " (M of N layers)" when some layers are dense), "norm-topk",
     * "shared-expert I" (+ " average": Cohere 2 MoE's (routed + shared) / 2), "moe-output-norm" (A.X-K1: the MoE
     * block's output RMSNormed), "sigmoid-router" / "softmax-router" (+ " logit-choice": Kolibri 1, the choice on
     * the logit + bias; + " groups K/G", " scale S": GLM-4 MoE, dots1, DeepSeek, MiniMax-M2),
     * "mla kv-lora R[ q-lora Q] heads N+P v V" (DeepSeek's latent attention), "no-rope (layers ...)" (SmolLM3's NoPE layers, listed as the window's),
     * "embedding-multiplier M", "attention-multiplier M", "residual-multiplier M",
     * "logits-scaling S" (Granite), "attention-sinks" (gpt-oss, GraniteSWA, Flint), "qk-norm-full" (OLMo 2, OLMoE), "post-norm" (OLMo 2), "clip-qkv C" (OLMoE),
     * "interleaved-rope" (Helium, ERNIE 4.5, GLM, DeepSeek: RoPE over pairs (2i, 2i + 1)), "sandwich-norms" (GLM-4, LFM3, HyperCLOVA X, AFMoE),
     * "rotary-dim N" (partial rotary embeddings), "parallel-block" and "logit-scale S" (Cohere; HyperCLOVA X's logits_scaling), "relu2-mlp" (Arcee, Nemotron, Jais2), "xielu-mlp" (Apertus), "layer-norm-1p" (Nemotron's LayerNorm1P),
     * "qk-norm-after-rope" and "ntk-alpha A" (HunYuan dense), "no-post-norms" (VaultGemma),
     * "parallel-block-two-norms" (GPT-NeoX's x + attn(LN1(x)) + mlp(LN2(x))), "gelu-exact-mlp" (an ungated MLP
     * whose GELU is erf's, hidden_act "gelu"), "learned-positions" (GPT-2, GPTBigCode: wpe, no RoPE),
     * "conv1d-weights" (GPT-2), "multi-query" (GPTBigCode, Falcon), "attention-scale S" (scale_attn_weights false: 1),
     * "relu-mlp" (OPT), "alibi" (Bloom, MPT), "embedding-norm" (Bloom; NanoChat's without weights),
     * "softmax-scale S" (MPT), "out-bias" (GPT-Neo: o_proj's bias alone),
     * "no-norm-weights" (OLMo 1: LayerNorms without weights or biases; NanoChat: RMSNorms without weights),
     * "negated-rope" (NanoChat: each pair turns by -θ),
     * "short-conv K (layers ...)" and "conv-bias" (LFM2's short-convolution layers, K taps),
     * "attention-gate" (LFM3: each head's output times a sigmoid gate; "attention-gate per-dim": AFMoE's,
     * one gate per output dim), "mup-embedding-scale S" (AFMoE's mup_enabled), "proportional-rope R of D dims"
     * (proportional RoPE: R of each head's D dims turn, the others at frequency 0),
     * "query-log-scale B per O" (Ministral 3, Mistral 4: queries times 1 + B · log(1 + floor(pos / O))),
     * "sparsemixer-router jitter J" (PhiMoE's router, its router_jitter_noise J), "lm-head-bias" (PhiMoE's lm_head_bias). */
    char features[256];
    int32_t kv_cache_dtype;    /* vt_dtype of the sessions' KV cache (F16, F32 or I8)        */
    /* Bytes one cached position takes in a session: each attending layer's keys and values
     * (F32 / F16 elements, I8 ones plus an f32 scale per vector), each short-convolution
     * layer's B·x row (LFM2: hidden_size elements, f16 beside an F16 or I8 cache).          */
    int64_t cache_bytes_per_token;
} vt_model_info;

VT_API vt_status vt_model_get_info(const vt_model* model, vt_model_info* info);

/* ---- Sessions: one KV cache, one sequence ------------------------------------------ */

typedef struct vt_session vt_session;

/* A session holds the KV cache for up to max_tokens positions (<= the model's max_seq_len;
 * 0 = max_seq_len) and the sampling step counter. Many sessions may use one model at once,
 * from different threads. The model must outlive its sessions. */
VT_API vt_status vt_session_new(const vt_model* model, int64_t max_tokens, vt_session** out);
VT_API void vt_session_free(vt_session* session);

/* Forget all cached positions (keeps the allocation). */
VT_API vt_status vt_session_reset(vt_session* session);

/* Number of positions currently cached. */
VT_API int64_t vt_session_length(const vt_session* session);

/* Make dst hold the first n cached positions of src (the same model; 0 <= n <= src's length,
 * n <= dst's max_tokens): dst's earlier content is dropped, its sampling step restarts at 0 and
 * its penalty history holds those n tokens as inputs -- as if dst had been reset and prefilled
 * with them, without running the model. A prefix cache's building block: sessions sharing a
 * prompt prefix copy its keys and values instead of recomputing them. src is only read (it must
 * not be used by another thread during the call). On error dst is left empty (length 0). */
VT_API vt_status vt_session_copy_prefix(vt_session* dst, const vt_session* src, int64_t n);

typedef enum vt_logits_mode {
    VT_LOGITS_NONE = 0,
    VT_LOGITS_LAST = 1, /* logits[vocab] of the last token                                */
    VT_LOGITS_ALL = 2   /* logits[n, vocab], one row per token                            */
} vt_logits_mode;

/* Run n tokens (n >= 1) through the model as one batched pass (matrix-matrix work, causal
 * attention), appending them to the KV cache. When next_token is not NULL, the token that
 * follows is chosen from the last position's logits with `sampling` (NULL = greedy).
 * logits receives what logits_mode asks for (may be NULL for VT_LOGITS_NONE).
 * Token ids must be in [0, vocab); the cache must have room. On error nothing is appended. */
VT_API vt_status vt_session_prefill(vt_session* session, const int32_t* tokens, int64_t n,
                                    const vt_sample_options* sampling, int32_t* next_token,
                                    float* logits, vt_logits_mode logits_mode);

/* One decode step, one call: embedding of `token`, all blocks (its K/V appended to the
 * cache), final norm, lm_head, then argmax or sampling -> *next_token. logits (NULL or
 * [vocab]) receives the raw logits. */
VT_API vt_status vt_session_decode(vt_session* session, int32_t token,
                                   const vt_sample_options* sampling, int32_t* next_token,
                                   float* logits);

/* Forget the cached positions from n on (0 <= n <= length): the session then holds the first n
 * positions as if it had been reset and prefilled with them, without running the model (as
 * vt_session_copy_prefix: its sampling step restarts at 0 and its penalty history holds those
 * n tokens as inputs). The positions dropped are overwritten by the next tokens run. */
VT_API vt_status vt_session_truncate(vt_session* session, int64_t n);

/* The most tokens one vt_session_verify call takes (the input and up to 63 drafted ones). */
#define VT_MAX_VERIFY 64

/* Speculative decoding's step: check a draft of the tokens expected next in one batched pass.
 * tokens[0] is the token a vt_session_decode call would take as input; tokens[1 .. n) are a
 * draft of what follows it (from any source: a prompt lookup, a smaller model). All n run
 * through the model as one pass (1 <= n <= VT_MAX_VERIFY; the cache must have room for n);
 * then, row by row, the session's chooser picks the token each position gives -- with
 * `sampling` (NULL = greedy), the penalties over the history up to that row and the session's
 * own sampling step, so each pick is the one a vt_session_decode call at that position would
 * make (up to the float rounding of batched GEMMs) -- and stops at the first pick that differs
 * from the draft. out_tokens[n] receives the picks c_0 .. c_a, *n_out = a + 1: the draft's
 * first a tokens were confirmed and c_a is the model's own next token. The session keeps
 * tokens[0 .. a] (its length grows by a + 1), the same state as a + 1 decode calls that chose
 * c_0 .. c_{a-1}; the cache positions of the rejected rows are dropped. On error nothing is
 * appended. */
VT_API vt_status vt_session_verify(vt_session* session, const int32_t* tokens, int64_t n,
                                   const vt_sample_options* sampling, int32_t* out_tokens, int64_t* n_out);

/* The largest batch vt_session_decode_batch takes. */
#define VT_MAX_BATCH 64

/* One decode step for n sessions of the same model at once (1 <= n <= VT_MAX_BATCH): the
 * linears run on all n rows together (one pass over the weights for the whole batch), each
 * row attends over its own session's cache at its own position. Equivalent to calling
 * vt_session_decode on each session in turn: the same tokens and logits (up to float
 * rounding in the batched GEMMs; greedy choices agree). tokens[n] are the inputs;
 * sampling is NULL (greedy for all) or [n] (one per session, each drawn at that session's
 * own step); next_tokens is NULL or [n]; logits is NULL or [n, vocab] (raw, row i for
 * session i). The sessions must be distinct, all on the same model, each with room for
 * one more position. Everything is checked before any session changes; on error none
 * has. The caller must not use these sessions from other threads during the call.
 * On a CUDA model the rows run as one batched step (VT_CUDA_BATCH=0: one session after
 * the other, where a failure in a later session leaves the earlier ones advanced). */
VT_API vt_status vt_session_decode_batch(vt_session* const* sessions, int64_t n, const int32_t* tokens,
                                         const vt_sample_options* sampling, int32_t* next_tokens,
                                         float* logits);

/* ---- One-call generation ------------------------------------------------------------ */

typedef struct vt_generate_options {
    uint32_t struct_size; /* sizeof(vt_generate_options) as the caller knows it (Conventions) */
    int32_t max_new_tokens;     /* default 50                                              */
    int32_t stop_on_eos;        /* default 1: stop after emitting any of the model's EOS   */
    vt_sample_options sampling; /* default vt_sample_default_options(); stays the last field:
                                   its own struct_size says how much of it the caller has */
} vt_generate_options;

VT_API vt_generate_options vt_generate_default_options(void);

typedef struct vt_generate_stats {
    uint32_t struct_size; /* sizeof(vt_generate_stats) as the caller knows it (Conventions) */
    int64_t prompt_tokens;
    int64_t generated_tokens;
    double prefill_ms;          /* prompt pass, including the first token's choice          */
    double decode_ms;           /* all decode steps                                          */
    int32_t finish_reason;      /* 0 = length, 1 = eos                                       */
} vt_generate_stats;

/* Prefill `prompt` in a fresh session, then decode up to max_new_tokens tokens into
 * out_tokens, whose capacity out_capacity must hold what the call can generate:
 * min(max_new_tokens, max_seq_len - n_prompt + 1), since generation stops at the context
 * limit. *n_out receives the count. stats may be NULL. */
VT_API vt_status vt_generate(const vt_model* model, const int32_t* prompt, int64_t n_prompt,
                             const vt_generate_options* options, int32_t* out_tokens,
                             int64_t out_capacity, int64_t* n_out, vt_generate_stats* stats);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* VT_VT_H */
