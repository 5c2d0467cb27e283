// The CUDA backend when libvt is built without CUDA (meson -Dcuda=disabled, or no nvcc with
// -Dcuda=auto): availability queries say so, every entry point is a named error.
#include "backend.h"

#include "common.h"

namespace vt {
namespace {

constexpr const char kWhy[] = "libvt was built without CUDA";

[[noreturn]] void unavailable() { throw Error(VT_STATUS_BACKEND_UNAVAILABLE, kWhy); }

}  // namespace

// cuda_backend_line() / cuda_available(): the weak definitions in api.cpp say the same.

bool cuda_usable(std::string* why) {
    if (why) *why = kWhy;
    return false;
}

bool cuda_device_usable(int, std::string* why) { return cuda_usable(why); }

// No CudaPacked can exist in this build: the deleter never runs on a non-null pointer.
void CudaPackedDeleter::operator()(CudaPacked*) const noexcept {}

std::unique_ptr<BackendModel> cuda_backend(const ModelWeights&, int, int32_t) { unavailable(); }
CudaPackedPtr cuda_upload_packed(const vt_packed&, int) { unavailable(); }
int64_t cuda_packed_device_bytes(const CudaPacked&) { return 0; }
bool cuda_packed_fp8_hopper(const CudaPacked&) { return false; }
void cuda_linear(const CudaPacked&, const float*, int64_t, const float*, const vt_linear_options&, float*) {
    unavailable();
}
void cuda_linear_swiglu(const CudaPacked&, const CudaPacked&, const float*, int64_t, const float*, const float*,
                        const vt_linear_options&, float*) {
    unavailable();
}
void cuda_linear_device(const CudaPacked&, const float*, int64_t, const float*, const vt_linear_options&, float*,
                        void*) {
    unavailable();
}
void cuda_linear_swiglu_device(const CudaPacked&, const CudaPacked&, const float*, int64_t, const float*,
                               const float*, const vt_linear_options&, float*, void*) {
    unavailable();
}
void* cuda_device_alloc(int, size_t) { unavailable(); }
void cuda_device_free(int, void*) { unavailable(); }
void cuda_device_copy(int, void*, const void*, size_t, bool, void*) { unavailable(); }

}  // namespace vt
