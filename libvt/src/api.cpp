// The C ABI of vt.h (everything except models/sessions/generation: api_model.cpp). Each
// entry point checks its pointers and runs under vt::guard, which turns any exception into
// a status + thread-local message.

#include <mutex>
#include <set>
#include <string>

#include "backend.h"
#include "common.h"
#include "convert.h"
#include "cpu_features.h"
#include "quant.h"
#include "sampling.h"
#include "threadpool.h"

#ifndef VT_VERSION
#define VT_VERSION "0.0.0"
#define VT_VERSION_MAJOR 0
#define VT_VERSION_MINOR 0
#define VT_VERSION_PATCH 0
#endif

namespace vt {

__attribute__((weak)) std::string cuda_backend_line() {
    return "cuda: unavailable (libvt was built without CUDA)";
}
__attribute__((weak)) bool cuda_available() { return false; }
__attribute__((weak)) std::string cutlass_backend_line() { return std::string(); }

namespace {

// Strings handed out with "valid for the life of the process": interned, never freed.
const char* intern(const std::string& s) {
    static std::mutex m;
    static std::set<std::string>* pool = new std::set<std::string>();
    std::lock_guard<std::mutex> lk(m);
    return pool->insert(s).first->c_str();
}

// A dtype argument as passed (any int), checked to name a vt_dtype.
vt_dtype check_dtype(const vt_dtype& d) {
    const int v = enum_arg(d);
    VT_CHECK_ARG(v >= VT_DTYPE_F32 && v <= VT_DTYPE_I64, "unknown vt_dtype %d (expected 0..8)", v);
    return static_cast<vt_dtype>(v);
}

vt_format check_format(int32_t f) {
    VT_CHECK_ARG(f >= VT_FORMAT_FP8_CHANNEL && f <= VT_FORMAT_MXFP4,
                 "unknown vt_format %d (expected 1..9: FP8_CHANNEL, FP8_BLOCKED, INT8_BLOCKED, "
                 "INT8_SPARSE24, INT4_SPARSE24, BF16, INT4_BLOCKED, INT4_MIN_BLOCKED, MXFP4)", f);
    return static_cast<vt_format>(f);
}

}  // namespace
}  // namespace vt

extern "C" {

// ---- status, errors, version, backends ------------------------------------------------

const char* vt_last_error(void) { return vt::last_error_cstr(); }

const char* vt_status_name(vt_status status) {
    switch (vt::enum_arg(status)) {
        case VT_OK: return "VT_OK";
        case VT_STATUS_INVALID_ARGUMENT: return "VT_STATUS_INVALID_ARGUMENT";
        case VT_STATUS_FILE_NOT_FOUND: return "VT_STATUS_FILE_NOT_FOUND";
        case VT_STATUS_IO_ERROR: return "VT_STATUS_IO_ERROR";
        case VT_STATUS_FORMAT_ERROR: return "VT_STATUS_FORMAT_ERROR";
        case VT_STATUS_UNSUPPORTED: return "VT_STATUS_UNSUPPORTED";
        case VT_STATUS_OUT_OF_MEMORY: return "VT_STATUS_OUT_OF_MEMORY";
        case VT_STATUS_BACKEND_UNAVAILABLE: return "VT_STATUS_BACKEND_UNAVAILABLE";
        case VT_STATUS_CANCELLED: return "VT_STATUS_CANCELLED";
        case VT_STATUS_INTERNAL: return "VT_STATUS_INTERNAL";
    }
    return "VT_STATUS_UNKNOWN";
}

const char* vt_version(void) { return VT_VERSION; }
int vt_abi_version(void) { return VT_ABI_VERSION; }
int vt_version_major(void) { return VT_VERSION_MAJOR; }
int vt_version_minor(void) { return VT_VERSION_MINOR; }
int vt_version_patch(void) { return VT_VERSION_PATCH; }

const char* vt_backend_info(void) {
    try {
#if defined(__x86_64__)
        const char* arch = "x86-64 ";
#elif defined(__aarch64__)
        const char* arch = "aarch64 ";
#else
        const char* arch = "";
#endif
        int n = vt::num_threads();
        std::string s = vt::format("cpu: available (%s%s, %d thread%s%s)\n", arch, vt::cpu_level_name(), n,
                                   n == 1 ? "" : "s", vt::cpu_vnni() ? ", VNNI+VBMI" : "");
        s += vt::cuda_backend_line();
        const std::string cl = vt::cutlass_backend_line();
        if (!cl.empty()) s += "\n" + cl;
        return vt::intern(s);
    } catch (...) {
        return "cpu: available\ncuda: unknown";
    }
}

int vt_cuda_available(void) {
    try {
        return vt::cuda_available() ? 1 : 0;
    } catch (...) {
        return 0;
    }
}

vt_status vt_set_num_threads(int n) {
    return vt::guard([&] { vt::set_num_threads(n); });
}

int vt_get_num_threads(void) { return vt::num_threads(); }

uint64_t vt_parallel_regions(void) { return vt::parallel_regions(); }

// ---- dtypes and conversions -----------------------------------------------------------

size_t vt_dtype_size(vt_dtype dtype) {
    switch (vt::enum_arg(dtype)) {
        case VT_DTYPE_F32: return 4;
        case VT_DTYPE_F16: return 2;
        case VT_DTYPE_BF16: return 2;
        case VT_DTYPE_F8_E4M3: return 1;
        case VT_DTYPE_I8: return 1;
        case VT_DTYPE_I32: return 4;
        case VT_DTYPE_U8: return 1;
        case VT_DTYPE_F64: return 8;
        case VT_DTYPE_I64: return 8;
    }
    return 0;
}

vt_status vt_convert(const void* src, vt_dtype src_dtype, void* dst, vt_dtype dst_dtype, size_t n) {
    return vt::guard([&] { vt::convert(src, vt::check_dtype(src_dtype), dst, vt::check_dtype(dst_dtype), n); });
}

vt_status vt_transpose(const void* src, void* dst, size_t rows, size_t cols, size_t elem_size) {
    return vt::guard([&] { vt::transpose(src, dst, rows, cols, elem_size); });
}

// ---- packed weights -------------------------------------------------------------------

vt_prepack_options vt_prepack_default_options(void) {
    vt_prepack_options o;
    o.struct_size = uint32_t(sizeof o);
    o.format = VT_FORMAT_INT8_BLOCKED;
    o.block_size = 0;
    o.device = VT_DEVICE_CPU;
    o.device_index = 0;
    return o;
}

vt_status vt_prepack(const void* w, vt_dtype dtype, int64_t out_features, int64_t in_features,
                     const vt_prepack_options* options, vt_packed** out) {
    return vt::guard([&] {
        VT_CHECK_ARG(out != nullptr, "vt_prepack: out (the handle pointer) is NULL");
        VT_CHECK_ARG(w != nullptr, "vt_prepack: w is NULL");
        const vt_prepack_options o = vt::read_options(options, vt_prepack_default_options(), "vt_prepack options");
        vt_format f = vt::check_format(o.format);
        VT_CHECK_ARG(o.device == VT_DEVICE_AUTO || o.device == VT_DEVICE_CPU ||
                     o.device == VT_DEVICE_CUDA,
                     "vt_prepack: device %d is not VT_DEVICE_AUTO (0), CPU (1) or CUDA (2)", o.device);
        VT_CHECK_ARG(o.device == VT_DEVICE_CPU || o.device_index >= 0,
                     "vt_prepack: device_index must be >= 0 (got %d)", o.device_index);
        // Decide the device before quantizing: a refused device costs nothing.
        bool on_cuda = false;
        if (o.device == VT_DEVICE_CUDA) {
            std::string why;
            if (!vt::cuda_device_usable(o.device_index, &why))
                vt::fail(VT_STATUS_BACKEND_UNAVAILABLE, "vt_prepack: device cuda:%d was requested, but %s",
                         o.device_index, why.c_str());
            on_cuda = true;
        } else if (o.device == VT_DEVICE_AUTO) {
            on_cuda = vt::cuda_device_usable(o.device_index, nullptr);
        }
        // Quantized on the host (the one packer: both backends hold the same numbers), then
        // copied to the device; the host copy stays for vt_packed_unpack.
        auto p = vt::prepack(w, vt::check_dtype(dtype), out_features, in_features, f, o.block_size);
        p->device = VT_DEVICE_CPU;
        p->device_index = 0;
        if (on_cuda) {
            try {
                p->cuda = vt::cuda_upload_packed(*p, o.device_index);
                p->device = VT_DEVICE_CUDA;
                p->device_index = o.device_index;
            } catch (const vt::Error& e) {
                // AUTO keeps a format the device kernels do not cover (or this build lacks, e.g.
                // 2:4 sparse without CUTLASS) on the CPU.
                if (o.device != VT_DEVICE_AUTO ||
                    (e.status() != VT_STATUS_UNSUPPORTED && e.status() != VT_STATUS_BACKEND_UNAVAILABLE))
                    throw;
            }
        }
        *out = p.release();
    });
}

void vt_packed_free(vt_packed* packed) { delete packed; }

vt_status vt_packed_get_info(const vt_packed* packed, vt_packed_info* info) {
    return vt::guard([&] {
        VT_CHECK_ARG(packed != nullptr, "vt_packed_get_info: packed is NULL");
        VT_CHECK_ARG(info != nullptr, "vt_packed_get_info: info is NULL");
        vt_packed_info i;
        i.struct_size = uint32_t(sizeof i);
        i.format = packed->format;
        i.block_size = packed->block;
        i.out_features = packed->out;
        i.in_features = packed->in;
        i.nbytes = packed->nbytes();
        i.device = packed->device;
        i.device_index = packed->device_index;
        vt::write_info(i, info, "vt_packed_get_info info");
    });
}

vt_status vt_packed_unpack(const vt_packed* packed, float* dst) {
    return vt::guard([&] {
        VT_CHECK_ARG(packed != nullptr, "vt_packed_unpack: packed is NULL");
        VT_CHECK_ARG(dst != nullptr, "vt_packed_unpack: dst is NULL");
        vt::check_array(dst, packed->out * packed->in, sizeof(float), "vt_packed_unpack: dst");
        vt::unpack(*packed, dst);
    });
}

// ---- linears --------------------------------------------------------------------------

vt_linear_options vt_linear_default_options(void) {
    vt_linear_options o;
    o.struct_size = uint32_t(sizeof o);
    o.quantize_input = 0;
    o.activation = VT_ACTIVATION_NONE;
    return o;
}

vt_status vt_linear(const vt_packed* w, const float* x, int64_t m, const float* bias,
                    const vt_linear_options* options, float* y) {
    return vt::guard([&] {
        VT_CHECK_ARG(w != nullptr, "vt_linear: w (the packed weight) is NULL");
        if (bias) vt::check_array(bias, w->out, sizeof(float), "vt_linear: bias");
        const vt_linear_options o = vt::read_options(options, vt_linear_default_options(), "vt_linear options");
        vt::linear(*w, x, m, bias, o, y);
    });
}

vt_status vt_linear_swiglu(const vt_packed* gate, const vt_packed* up, const float* x, int64_t m,
                           const float* gate_bias, const float* up_bias,
                           const vt_linear_options* options, float* y) {
    return vt::guard([&] {
        VT_CHECK_ARG(gate != nullptr, "vt_linear_swiglu: gate is NULL");
        VT_CHECK_ARG(up != nullptr, "vt_linear_swiglu: up is NULL");
        if (gate_bias) vt::check_array(gate_bias, gate->out, sizeof(float), "vt_linear_swiglu: gate_bias");
        if (up_bias) vt::check_array(up_bias, up->out, sizeof(float), "vt_linear_swiglu: up_bias");
        const vt_linear_options o = vt::read_options(options, vt_linear_default_options(), "vt_linear options");
        vt::linear_swiglu(*gate, *up, x, m, gate_bias, up_bias, o, y);
    });
}

vt_status vt_linear_device(const vt_packed* w, const float* x, int64_t m, const float* bias,
                           const vt_linear_options* options, float* y, void* stream) {
    return vt::guard([&] {
        VT_CHECK_ARG(w != nullptr, "vt_linear_device: w (the packed weight) is NULL");
        if (bias) vt::check_array(bias, w->out, sizeof(float), "vt_linear_device: bias");
        const vt_linear_options o = vt::read_options(options, vt_linear_default_options(), "vt_linear options");
        vt::linear_device(*w, x, m, bias, o, y, stream);
    });
}

vt_status vt_linear_swiglu_device(const vt_packed* gate, const vt_packed* up, const float* x, int64_t m,
                                  const float* gate_bias, const float* up_bias,
                                  const vt_linear_options* options, float* y, void* stream) {
    return vt::guard([&] {
        VT_CHECK_ARG(gate != nullptr, "vt_linear_swiglu_device: gate is NULL");
        VT_CHECK_ARG(up != nullptr, "vt_linear_swiglu_device: up is NULL");
        if (gate_bias) vt::check_array(gate_bias, gate->out, sizeof(float), "vt_linear_swiglu_device: gate_bias");
        if (up_bias) vt::check_array(up_bias, up->out, sizeof(float), "vt_linear_swiglu_device: up_bias");
        const vt_linear_options o = vt::read_options(options, vt_linear_default_options(), "vt_linear options");
        vt::linear_swiglu_device(*gate, *up, x, m, gate_bias, up_bias, o, y, stream);
    });
}

// ---- device memory --------------------------------------------------------------------

vt_status vt_device_alloc(int32_t device_index, size_t bytes, void** ptr) {
    return vt::guard([&] {
        VT_CHECK_ARG(ptr != nullptr, "vt_device_alloc: ptr is NULL");
        VT_CHECK_ARG(device_index >= 0, "vt_device_alloc: device_index must be >= 0 (got %d)", device_index);
        *ptr = vt::cuda_device_alloc(device_index, bytes);
    });
}

void vt_device_free(int32_t device_index, void* ptr) {
    if (ptr == nullptr) return;
    try {
        vt::cuda_device_free(device_index, ptr);
    } catch (...) {  // a free cannot report; a broken context has already said so
    }
}

vt_status vt_device_copy(int32_t device_index, void* dst, const void* src, size_t bytes, int32_t kind,
                         void* stream) {
    return vt::guard([&] {
        VT_CHECK_ARG(kind == VT_COPY_HOST_TO_DEVICE || kind == VT_COPY_DEVICE_TO_HOST,
                     "vt_device_copy: kind %d is not VT_COPY_HOST_TO_DEVICE (1) or VT_COPY_DEVICE_TO_HOST (2)",
                     kind);
        VT_CHECK_ARG(device_index >= 0, "vt_device_copy: device_index must be >= 0 (got %d)", device_index);
        if (bytes == 0) return;
        VT_CHECK_ARG(dst != nullptr, "vt_device_copy: dst is NULL");
        VT_CHECK_ARG(src != nullptr, "vt_device_copy: src is NULL");
        VT_CHECK_ARG(bytes <= size_t(PTRDIFF_MAX), "vt_device_copy: %zu bytes are more than memory can hold", bytes);
        vt::check_array(dst, int64_t(bytes), 1, "vt_device_copy: dst");
        vt::check_array(src, int64_t(bytes), 1, "vt_device_copy: src");
        vt::cuda_device_copy(device_index, dst, src, bytes, kind == VT_COPY_HOST_TO_DEVICE, stream);
    });
}

// ---- sampling -------------------------------------------------------------------------

vt_status vt_argmax(const float* x, int64_t n, int64_t* index) {
    return vt::guard([&] {
        VT_CHECK_ARG(x != nullptr, "vt_argmax: x is NULL");
        VT_CHECK_ARG(index != nullptr, "vt_argmax: index is NULL");
        VT_CHECK_ARG(n >= 1, "vt_argmax: n must be >= 1 (got %lld)", static_cast<long long>(n));
        vt::check_array(x, n, sizeof(float), "vt_argmax: x");
        *index = vt::argmax(x, n);
    });
}

vt_status vt_softmax(const float* x, int64_t n, float* y) {
    return vt::guard([&] {
        VT_CHECK_ARG(x != nullptr, "vt_softmax: x is NULL");
        VT_CHECK_ARG(y != nullptr, "vt_softmax: y is NULL");
        VT_CHECK_ARG(n >= 1, "vt_softmax: n must be >= 1 (got %lld)", static_cast<long long>(n));
        vt::check_array(x, n, sizeof(float), "vt_softmax: x");
        vt::check_array(y, n, sizeof(float), "vt_softmax: y");
        vt::softmax(x, n, y);
    });
}

vt_sample_options vt_sample_default_options(void) {
    vt_sample_options o;
    o.struct_size = uint32_t(sizeof o);
    o.temperature = 0.f;
    o.top_k = 0;
    o.top_p = 1.f;
    o.seed = 42;
    o.min_p = 0.f;
    o.repetition_penalty = 1.f;
    o.frequency_penalty = 0.f;
    o.presence_penalty = 0.f;
    return o;
}

vt_status vt_sample(const float* logits, int64_t n, const vt_sample_options* options,
                    uint64_t step, int64_t* token) {
    return vt::guard([&] {
        VT_CHECK_ARG(logits != nullptr, "vt_sample: logits is NULL");
        VT_CHECK_ARG(token != nullptr, "vt_sample: token is NULL");
        VT_CHECK_ARG(n >= 1, "vt_sample: n must be >= 1 (got %lld)", static_cast<long long>(n));
        vt::check_array(logits, n, sizeof(float), "vt_sample: logits");
        const vt_sample_options o = vt::read_options(options, vt_sample_default_options(), "sampling options");
        *token = vt::sample(logits, n, o, step);
    });
}

vt_status vt_logits_process(const float* logits, int64_t n, const vt_sample_options* options, const int32_t* inputs,
                            int64_t n_inputs, const int32_t* chosen, int64_t n_chosen, int32_t flags, float* out) {
    return vt::guard([&] {
        VT_CHECK_ARG(logits != nullptr, "vt_logits_process: logits is NULL");
        VT_CHECK_ARG(out != nullptr, "vt_logits_process: out is NULL");
        VT_CHECK_ARG(n >= 1, "vt_logits_process: n must be >= 1 (got %lld)", static_cast<long long>(n));
        vt::check_array(logits, n, sizeof(float), "vt_logits_process: logits");
        vt::check_array(out, n, sizeof(float), "vt_logits_process: out");
        if (inputs && n_inputs > 0) vt::check_array(inputs, n_inputs, sizeof(int32_t), "vt_logits_process: inputs");
        if (chosen && n_chosen > 0) vt::check_array(chosen, n_chosen, sizeof(int32_t), "vt_logits_process: chosen");
        const vt_sample_options o = vt::read_options(options, vt_sample_default_options(), "sampling options");
        vt::process_logits(logits, n, o, inputs, n_inputs, chosen, n_chosen, flags, out);
    });
}

double vt_uniform(uint64_t seed, uint64_t step) { return vt::uniform(seed, step); }

}  // extern "C"
