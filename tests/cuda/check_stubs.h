// The two error paths of libvt's CUTLASS launchers (common.cuh's fail, launch_failed), for the
// host-only checks that include a launcher's .cu (fp8_sm90_check.cu, w8a16_sm90_check.cu):
// those programs never take them, and libvt's own are hidden symbols of libvt.so. Include
// after the launcher.
#pragma once

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace vt {
[[noreturn]] void fail(vt_status, const char* fmt, ...) {
    va_list a;
    va_start(a, fmt);
    std::vprintf(fmt, a);
    va_end(a);
    std::printf("\n");
    std::abort();
}
namespace cudak {
[[noreturn]] void launch_failed(const char* what, cudaError_t) {
    std::printf("launch failed: %s\n", what);
    std::abort();
}
}  // namespace cudak
}  // namespace vt
