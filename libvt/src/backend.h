// Backend availability lines for vt_backend_info() / vt_cuda_available(). api.cpp holds
// weak definitions for a build without CUDA; a CUDA backend file overrides them by defining
// the same functions (strong symbols win at link time), so api.cpp needs no #ifdef.
#pragma once

#include <string>

namespace vt {

// One line, no trailing newline, e.g. "cuda: unavailable (libvt was built without CUDA)".
std::string cuda_backend_line();
// True when CUDA was compiled in and at least one device can be used.
bool cuda_available();
// The "cutlass: ..." line of a CUDA build (which CUTLASS GEMMs were compiled in, or why none
// were), e.g. "cutlass: built (2:4 sparse INT8/INT4 for sm_80, sm_90; FP8 W8A8 for sm_89,
// sm_90)"; empty in a build without CUDA (api.cpp's weak definition).
std::string cutlass_backend_line();

}  // namespace vt
