// What the CPU we run on can do (cpuid), to pick kernels at run time: a build made here
// must still run on an older x86-64.
#pragma once

namespace vt {

struct CpuFeatures {
    bool avx2 = false, fma = false, f16c = false;
    bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
    bool avx512vnni = false, avx512bf16 = false, avx512vbmi = false;
};

const CpuFeatures& cpu_features();

// The kernel level in use: 0 generic, 1 AVX2+FMA+F16C, 2 AVX-512 (F/BW/VL/DQ).
// VT_ISA=generic|avx2|avx512 in the environment lowers it (never raises it).
int cpu_level();
const char* cpu_level_name();  // "generic", "avx2", "avx512"

}  // namespace vt
