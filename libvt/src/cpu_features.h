// What the CPU we run on can do (cpuid), to pick kernels at run time: a build made here
// must still run on an older x86-64.
#pragma once

namespace vt {

struct CpuFeatures {
    bool avx2 = false, fma = false, f16c = false;
    bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
    bool avx512vnni = false, avx512bf16 = false, avx512vbmi = false;
    bool intel = false;  // cpuid vendor "GenuineIntel"
};

const CpuFeatures& cpu_features();

// The kernel level in use: 0 generic, 1 AVX2+FMA+F16C, 2 AVX-512 (F/BW/VL/DQ).
// VT_ISA=generic|avx2|avx512 in the environment lowers it (never raises it); avx512-novnni
// also hides VNNI and VBMI from cpu_features().
int cpu_level();
const char* cpu_level_name();  // "generic", "avx2", "avx512"; on 64-bit ARM "neon" (cpu_neon())

// 64-bit ARM builds: the NEON int8 linears run (kernels_neon.cpp) unless VT_ISA=generic.
// (cpu_level() stays 0 there: the levels name x86's kernels.) False elsewhere.
bool cpu_neon();

// The AVX-512 level with VNNI and VBMI: the kernels that need both run (int4's GEMV, the int8
// and int4-min linears, the 2:4 sparse ones).
bool cpu_vnni();

// Whether the CPU GEMVs prefetch the next tile's weights into L2 (prefetcht1) rather than
// into L1 (prefetcht0): on Intel CPUs, where L1 prefetches hold the core's few line-fill
// buffers while they wait on DRAM, else L1. VT_PREFETCH=l1|l2 overrides it (read once).
bool prefetch_to_l2();

}  // namespace vt
