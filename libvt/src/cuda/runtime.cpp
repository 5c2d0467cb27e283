// Availability of the CUDA backend (vt_backend_info's "cuda:" line, vt_cuda_available), CUDA
// error mapping, device memory. The CUDA runtime is linked statically and loads the driver
// (libcuda.so.1) itself on first use, so on a machine without a driver or GPU every query
// here returns a reason instead of failing to load.
#include "cuda/runtime.h"
#include "cuda/w8a16_plan.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "backend.h"
#include "cuda/kernels.h"

#ifndef VT_CUDA_ARCHS
#define VT_CUDA_ARCHS "?"
#endif

namespace vt {
namespace cudak {
namespace {

std::string version_str(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

bool sticky(cudaError_t e) {
    switch (e) {
        case cudaErrorIllegalAddress:
        case cudaErrorLaunchFailure:
        case cudaErrorIllegalInstruction:
        case cudaErrorMisalignedAddress:
        case cudaErrorInvalidAddressSpace:
        case cudaErrorInvalidPc:
        case cudaErrorHardwareStackError:
        case cudaErrorAssert:
        case cudaErrorLaunchTimeout:
        case cudaErrorECCUncorrectable:
            return true;
        default:
            return false;
    }
}

// Why the CUDA runtime could not initialise, in words.
std::string init_failure(cudaError_t e) {
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    cudaGetLastError();
    switch (e) {
        case cudaErrorInsufficientDriver:
            if (drv == 0) return "no NVIDIA driver: libcuda.so.1 was not found";
            return "the NVIDIA driver supports CUDA " + version_str(drv) + ", libvt was built with CUDA " +
                   version_str(rt) + " and needs a driver for it";
        case cudaErrorNoDevice: {
            const char* vis = std::getenv("CUDA_VISIBLE_DEVICES");
            if (vis) return std::string("no CUDA device found (CUDA_VISIBLE_DEVICES=") + vis + ")";
            return "no CUDA device found";
        }
        default:
            return std::string("CUDA initialisation failed: ") + cudaGetErrorString(e) + " (" + cudaGetErrorName(e) +
                   ")";
    }
}

struct Probe {
    bool ok = false;
    std::string why;   // when !ok
    std::string line;  // "cuda: ..."
    int count = 0;
};

// Checks device `i` (the current device becomes i); fills info on success.
bool probe_device(int i, DeviceInfo* info, std::string* why) {
    cudaDeviceProp prop;
    cudaError_t e = cudaGetDeviceProperties(&prop, i);
    if (e != cudaSuccess) {
        cudaGetLastError();
        *why = "device " + std::to_string(i) + ": " + cudaGetErrorString(e);
        return false;
    }
    const std::string name = "device " + std::to_string(i) + " (" + prop.name + ")";
    if (prop.major < 8) {
        *why = name + " is sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
               "; libvt's CUDA kernels need sm_80 or newer";
        return false;
    }
    e = cudaSetDevice(i);
    if (e != cudaSuccess) {
        cudaGetLastError();
        *why = name + " cannot be used: " + cudaGetErrorString(e);
        return false;
    }
    std::string kwhy;
    if (!kernels_loadable(&kwhy)) {
        *why = name + ", sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ": " + kwhy +
               " (this build has kernels for " VT_CUDA_ARCHS ")";
        return false;
    }
    info->index = i;
    info->name = prop.name;
    info->cc_major = prop.major;
    info->cc_minor = prop.minor;
    info->sms = prop.multiProcessorCount;
    info->total_mem = prop.totalGlobalMem;
    return true;
}

std::mutex g_mu;
std::map<int, DeviceInfo> g_devices;            // usable devices probed so far
std::map<int, std::string> g_unusable;          // and why the others are not

const Probe& probe() {
    static Probe p;
    static std::once_flag once;
    std::call_once(once, [] {
        int prev = -1;
        cudaGetDevice(&prev);
        cudaGetLastError();
        int n = 0;
        const cudaError_t e = cudaGetDeviceCount(&n);
        if (e != cudaSuccess || n <= 0) {
            p.why = e != cudaSuccess ? init_failure(e) : "no CUDA device found";
            p.line = "cuda: unavailable (" + p.why + ")";
            return;
        }
        p.count = n;
        DeviceInfo d;
        std::string why;
        if (!probe_device(0, &d, &why)) {
            p.why = why;
            p.line = "cuda: unavailable (" + why + ")";
        } else {
            {
                std::lock_guard<std::mutex> lock(g_mu);
                g_devices[0] = d;
            }
            p.ok = true;
            int drv = 0;
            cudaDriverGetVersion(&drv);
            char buf[512];
            std::snprintf(buf, sizeof buf, "cuda: available (%s, sm_%d%d, %s, %d SMs%s; driver %s)", d.name.c_str(),
                          d.cc_major, d.cc_minor, gib(d.total_mem).c_str(), d.sms,
                          n > 1 ? (", " + std::to_string(n - 1) + " more device" + (n > 2 ? "s" : "")).c_str() : "",
                          version_str(drv).c_str());
            p.line = buf;
        }
        if (prev >= 0) cudaSetDevice(prev);
        cudaGetLastError();
    });
    return p;
}

}  // namespace

std::string gib(size_t bytes) {
    char buf[64];
    if (bytes >= (size_t(1) << 30)) std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / double(1u << 30));
    else std::snprintf(buf, sizeof buf, "%.1f MiB", double(bytes) / double(1u << 20));
    return buf;
}

void cuda_fail(cudaError_t err, const std::string& what) {
    cudaGetLastError();  // clear a non-sticky error so the next call starts clean
    std::string msg = "CUDA error in " + what + ": " + cudaGetErrorString(err) + " (" + cudaGetErrorName(err) + ")";
    if (sticky(err)) msg += "; the CUDA context of this process is no longer usable (restart the process)";
    vt_status st = VT_STATUS_INTERNAL;
    if (err == cudaErrorMemoryAllocation) st = VT_STATUS_OUT_OF_MEMORY;
    else if (err == cudaErrorNoDevice || err == cudaErrorInsufficientDriver || err == cudaErrorDevicesUnavailable)
        st = VT_STATUS_BACKEND_UNAVAILABLE;
    throw Error(st, msg);
}

[[noreturn]] void launch_failed(const char* what, cudaError_t err) { cuda_fail(err, std::string("launch of ") + what); }

[[noreturn]] void launch_grid_invalid(const char* what, unsigned x, unsigned y, unsigned z) {
    fail(VT_STATUS_INTERNAL, "launch of %s: grid (%u, %u, %u) is outside CUDA's limits (x <= 2^31-1, y, z <= 65535)",
         what, x, y, z);
}

const DeviceInfo& device_info(int index) {
    std::string why;
    if (!cuda_device_usable(index, &why)) throw Error(VT_STATUS_BACKEND_UNAVAILABLE, "CUDA device " + std::to_string(index) + " cannot be used: " + why);
    std::lock_guard<std::mutex> lock(g_mu);
    return g_devices.at(index);
}

DeviceGuard::DeviceGuard(int dev) {
    if (cudaGetDevice(&prev_) != cudaSuccess) prev_ = -1;
    if (prev_ != dev) check(cudaSetDevice(dev), "cudaSetDevice");
}

DeviceGuard::~DeviceGuard() {
    if (prev_ >= 0) cudaSetDevice(prev_);
}

void DevMem::alloc(int dev, size_t bytes, const char* what) {
    release();
    DeviceGuard g(dev);
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, bytes ? bytes : 256);
    if (e != cudaSuccess) {
        cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        cudaGetLastError();
        if (e == cudaErrorMemoryAllocation)
            throw Error(VT_STATUS_OUT_OF_MEMORY, "CUDA device " + std::to_string(dev) + " is out of memory: " + what +
                                                     " needs " + gib(bytes) + ", " + gib(free_b) + " of " +
                                                     gib(total_b) + " are free");
        cuda_fail(e, std::string("cudaMalloc for ") + what);
    }
    p_ = p;
    bytes_ = bytes;
    dev_ = dev;
}

void DevMem::release() noexcept {
    if (!p_) return;
    int prev = -1;
    cudaGetDevice(&prev);
    if (prev != dev_) cudaSetDevice(dev_);
    cudaFree(p_);
    if (prev >= 0 && prev != dev_) cudaSetDevice(prev);
    cudaGetLastError();
    p_ = nullptr;
    bytes_ = 0;
}

void DevMem::swap(DevMem& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    std::swap(dev_, o.dev_);
}

void PinnedMem::alloc(size_t bytes, const char* what) {
    release();
    const cudaError_t e = cudaMallocHost(&p_, bytes);
    if (e != cudaSuccess) {
        p_ = nullptr;
        cuda_fail(e, std::string("cudaMallocHost for ") + what);
    }
}

void PinnedMem::release() noexcept {
    if (p_) cudaFreeHost(p_);
    p_ = nullptr;
}

}  // namespace cudak

// ---- backend.h: availability --------------------------------------------------------------------

// Strong definitions: they replace api.cpp's weak "built without CUDA" ones.
std::string cuda_backend_line() { return cudak::probe().line; }

std::string cutlass_backend_line() {
#if defined(VT_HAVE_CUTLASS)
    return "cutlass: built (" VT_CUTLASS_KERNELS ")";
#elif defined(VT_CUTLASS_MISSING)
    return "cutlass: unavailable (" VT_CUTLASS_MISSING ")";
#else
    return "cutlass: unavailable (libvt was built without CUTLASS)";
#endif
}

bool cudak::env_on(const char* name, bool dflt) {
    const char* v = std::getenv(name);
    if (!v || !*v) return dflt;
    return !(std::strcmp(v, "0") == 0 || std::strcmp(v, "off") == 0 || std::strcmp(v, "false") == 0);
}

bool cudak::legacy_kernels() {
    static const bool on = env_on("VT_CUDA_LEGACY_KERNELS", false);
    return on;
}

bool cudak::l2_evict_first() {
    static const bool on = env_on("VT_CUDA_L2_EVICT_FIRST", true);
    return on;
}

namespace {
std::atomic<int> g_int4_four_rows{-1};  // -1: not read yet
}

bool cudak::int4_four_rows() {
    int v = g_int4_four_rows.load(std::memory_order_relaxed);
    if (v < 0) {
        v = env_on("VT_CUDA_INT4_FOUR_ROWS", false) ? 1 : 0;
        int unread = -1;
        if (!g_int4_four_rows.compare_exchange_strong(unread, v)) v = unread;  // a setter won
    }
    return v == 1;
}

void cudak::set_int4_four_rows(bool on) { g_int4_four_rows.store(on ? 1 : 0, std::memory_order_relaxed); }

bool cudak::fp8_gemm_legacy() {
    const char* v = std::getenv("VT_CUDA_FP8_GEMM");
    if (!v || !*v || std::strcmp(v, "auto") == 0) return false;
    if (std::strcmp(v, "sm89") == 0) return true;
    fail(VT_STATUS_INVALID_ARGUMENT, "VT_CUDA_FP8_GEMM=%.40s: expected auto (the default) or sm89", v);
}

bool cudak::prefill_wgmma() {
    std::string error;
    const bool wgmma = prefill_gemm_wgmma(std::getenv("VT_CUDA_PREFILL_GEMM"), &error);
    if (!error.empty()) fail(VT_STATUS_INVALID_ARGUMENT, "%s", error.c_str());
    return wgmma;
}

bool cuda_available() { return cudak::probe().ok; }

bool cuda_usable(std::string* why) {
    const cudak::Probe& p = cudak::probe();
    if (!p.ok && why) *why = p.why;
    return p.ok;
}

bool cuda_device_usable(int index, std::string* why) {
    using namespace cudak;
    const Probe& p = probe();
    if (p.count == 0) {
        if (why) *why = p.why;
        return false;
    }
    if (index < 0 || index >= p.count) {
        if (why)
            *why = "device " + std::to_string(index) + " does not exist (" + std::to_string(p.count) + " CUDA device" +
                   (p.count == 1 ? "" : "s") + ")";
        return false;
    }
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_devices.count(index)) return true;
    auto bad = g_unusable.find(index);
    if (bad == g_unusable.end()) {
        int prev = -1;
        cudaGetDevice(&prev);
        DeviceInfo d;
        std::string w;
        if (probe_device(index, &d, &w)) g_devices[index] = d;
        else bad = g_unusable.emplace(index, w).first;
        if (prev >= 0) cudaSetDevice(prev);
        cudaGetLastError();
        if (bad == g_unusable.end()) return true;
    }
    if (why) *why = bad->second;
    return false;
}

}  // namespace vt
