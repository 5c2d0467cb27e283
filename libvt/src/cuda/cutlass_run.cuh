// Running a CUTLASS device-level GEMM (2.x `device::GemmUniversal` / `device::SparseGemm`, 3.x
// `GemmUniversalAdapter`: the same four calls) the way the cutlass_*.cu launchers all need it:
// CUTLASS's own check of the problem first (its refusal names the problem), no workspace (none
// is planned: a kernel that asks for some is a configuration change, reported as such), then
// initialize + run on the stream; a refused launch is a launch error naming `what`, any other
// failure names CUTLASS's status. Header-only (each launcher's own CUTLASS headers are
// included before it).
#pragma once

#include <cuda_runtime.h>

#include <atomic>

#include <cutlass/cutlass.h>

#include "cuda/common.cuh"

namespace vt {
namespace cudak {

// SM counts per device, queried once (CUTLASS 3.x's persistent tile schedulers size their grids
// by them; 0 lets CUTLASS query it itself).
inline int cutlass_sm_count(int device) {
    constexpr int kMaxDevices = 64;
    static std::atomic<int> counts[kMaxDevices];
    if (device < 0 || device >= kMaxDevices) return 0;
    int c = counts[device].load(std::memory_order_relaxed);
    if (c > 0) return c;
    if (cudaDeviceGetAttribute(&c, cudaDevAttrMultiProcessorCount, device) != cudaSuccess) {
        cudaGetLastError();
        return 0;
    }
    counts[device].store(c, std::memory_order_relaxed);
    return c;
}

// what: "FP8 GEMM (CUTLASS)"; shape: "m = 17 [256, 576]" (for the can_implement message).
template <class G>
void run_cutlass(const typename G::Arguments& args, cudaStream_t stream, const char* what, const char* shape) {
    cutlass::Status st = G::can_implement(args);
    if (st != cutlass::Status::kSuccess)
        fail(VT_STATUS_INTERNAL, "%s %s: CUTLASS cannot implement it (%s)", what, shape,
             cutlass::cutlassGetStatusString(st));
    const size_t ws = G::get_workspace_size(args);
    if (ws != 0) fail(VT_STATUS_INTERNAL, "%s: CUTLASS asks for %zu bytes of workspace (none planned)", what, ws);
    G gemm;
    st = gemm.initialize(args, nullptr, stream);
    if (st == cutlass::Status::kSuccess) st = gemm.run(stream);
    if (st != cutlass::Status::kSuccess) {
        const cudaError_t err = cudaGetLastError();
        if (err != cudaSuccess) launch_failed(what, err);
        fail(VT_STATUS_INTERNAL, "%s: %s", what, cutlass::cutlassGetStatusString(st));
    }
}

}  // namespace cudak
}  // namespace vt
