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

}  // namespace vt
