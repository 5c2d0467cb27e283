// Host-side CUDA runtime helpers of the backend: error mapping, device properties, device
// memory that frees itself, current-device guard. Uses the CUDA runtime API only (compiled by
// the host C++ compiler).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>

#include "common.h"

namespace vt {
namespace cudak {

// Throws vt::Error for a failed CUDA call: cudaErrorMemoryAllocation is
// VT_STATUS_OUT_OF_MEMORY, a missing driver / device VT_STATUS_BACKEND_UNAVAILABLE, anything
// else VT_STATUS_INTERNAL; the message names `what`, the CUDA error and, for the errors that
// leave the CUDA context unusable, says so. Clears the (non-sticky) error state first.
[[noreturn]] void cuda_fail(cudaError_t err, const std::string& what);
inline void check(cudaError_t err, const char* what) {
    if (err != cudaSuccess) cuda_fail(err, what);
}

struct DeviceInfo {
    int index = 0;
    std::string name;
    int cc_major = 0, cc_minor = 0;
    int sms = 0;
    size_t total_mem = 0;
};

// Properties of a usable device (throws VT_STATUS_BACKEND_UNAVAILABLE, with the reason,
// for one that is not).
const DeviceInfo& device_info(int index);

// Defined in misc.cu: can this build's kernels run on the current device?
bool kernels_loadable(std::string* why);

// Makes `dev` current for the scope (restores the previous device after).
class DeviceGuard {
public:
    explicit DeviceGuard(int dev);
    ~DeviceGuard();
    DeviceGuard(const DeviceGuard&) = delete;
    DeviceGuard& operator=(const DeviceGuard&) = delete;

private:
    int prev_ = -1;
};

// One cudaMalloc, freed on destruction (or release()). alloc() throws VT_STATUS_OUT_OF_MEMORY
// with the sizes when the device is full.
class DevMem {
public:
    DevMem() = default;
    ~DevMem() { release(); }
    DevMem(const DevMem&) = delete;
    DevMem& operator=(const DevMem&) = delete;
    void alloc(int dev, size_t bytes, const char* what);
    void release() noexcept;
    void swap(DevMem& o) noexcept;
    template <class T = void>
    T* get(size_t offset = 0) const {
        return reinterpret_cast<T*>(static_cast<char*>(p_) + offset);
    }
    size_t bytes() const { return bytes_; }

private:
    void* p_ = nullptr;
    size_t bytes_ = 0;
    int dev_ = 0;
};

// Pinned host memory (the decode step's parameters and results): the graph's copies read and
// write it asynchronously.
class PinnedMem {
public:
    PinnedMem() = default;
    ~PinnedMem() { release(); }
    PinnedMem(const PinnedMem&) = delete;
    PinnedMem& operator=(const PinnedMem&) = delete;
    void alloc(size_t bytes, const char* what);
    void release() noexcept;
    template <class T>
    T* get(size_t offset = 0) const {
        return reinterpret_cast<T*>(static_cast<char*>(p_) + offset);
    }

private:
    void* p_ = nullptr;
};

// Bump allocator for carving one DevMem into 256-byte aligned pieces: first measure (base
// null), then allocate and carve with the same sequence of take() calls.
struct Carve {
    size_t off = 0;
    size_t take(size_t bytes) {
        const size_t o = off;
        off += (bytes + 255) / 256 * 256;
        return o;
    }
};

std::string gib(size_t bytes);  // "1.25 GiB" / "512.0 MiB"

// An on/off environment switch: unset or empty gives dflt; "0", "off" and "false" are off,
// anything else on (VT_CUDA_GRAPHS, VT_CUDA_PDL, VT_CUDA_LEGACY_KERNELS).
bool env_on(const char* name, bool dflt);

// VT_CUDA_FP8_GEMM, read at each FP8_CHANNEL upload: true for `sm89` (the FP8 W8A8 linears
// of that weight keep the CUTLASS 2.x kernel on an sm_90 device), false when unset, empty or
// `auto` (the sm_90a kernel where the device runs it). Any other value: VT_STATUS_INVALID_ARGUMENT
// naming the variable and the value.
bool fp8_gemm_legacy();

// VT_CUDA_PREFILL_GEMM, read when a model is uploaded: true for `wgmma` (the prefill's INT8
// linears with blocks of 64 or 128 run on the sm_90a W8A16 kernel where the device and the
// build have it: cutlass_w8a16_sm90.cu), false when unset, empty or `mma` (gemm.cu's kernel
// for every prefill linear, the default until a GPU has validated and timed the new one). Any
// other value: VT_STATUS_INVALID_ARGUMENT naming the variable and the value.
bool prefill_wgmma();

}  // namespace cudak
}  // namespace vt
