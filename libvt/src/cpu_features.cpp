#include "cpu_features.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace vt {
namespace {

#if defined(__x86_64__) || defined(__i386__)
uint64_t read_xcr0() {
    uint32_t eax, edx;
    __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
    return (static_cast<uint64_t>(edx) << 32) | eax;
}

CpuFeatures detect() {
    CpuFeatures f;
    unsigned a, b, c, d;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return f;
    unsigned max_leaf = a;
    f.intel = b == 0x756e6547u && d == 0x49656e69u && c == 0x6c65746eu;  // "Genu" "ineI" "ntel"
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    bool osxsave = c & (1u << 27);
    bool avx = c & (1u << 28);
    bool fma = c & (1u << 12);
    bool f16c = c & (1u << 29);
    // The OS must save the wide registers on context switch, else using them corrupts state.
    uint64_t xcr0 = osxsave ? read_xcr0() : 0;
    bool os_avx = (xcr0 & 0x6) == 0x6;              // XMM + YMM
    bool os_avx512 = os_avx && (xcr0 & 0xE0) == 0xE0; // opmask + ZMM_Hi256 + Hi16_ZMM
    if (!(avx && os_avx)) return f;
    f.fma = fma;
    f.f16c = f16c;
    if (max_leaf >= 7) {
        __cpuid_count(7, 0, a, b, c, d);
        f.avx2 = b & (1u << 5);
        if (os_avx512) {
            f.avx512f = b & (1u << 16);
            f.avx512dq = b & (1u << 17);
            f.avx512bw = b & (1u << 30);
            f.avx512vl = b & (1u << 31);
            f.avx512vnni = c & (1u << 11);
            f.avx512vbmi = c & (1u << 1);
            unsigned max_sub = a;
            if (max_sub >= 1) {
                __cpuid_count(7, 1, a, b, c, d);
                f.avx512bf16 = a & (1u << 5);
            }
        }
    }
    return f;
}
#else
CpuFeatures detect() { return CpuFeatures{}; }
#endif

#if defined(VT_HAVE_X86_KERNELS)
// VT_ISA, read once: the highest level it allows (2: any) and whether it hides VNNI + VBMI
// (x86 only: it chooses among the x86 kernels).
struct IsaCap {
    int level = 2;
    bool novnni = false;
};
const IsaCap& isa_cap() {
    static const IsaCap cap = [] {
        IsaCap c;
        const char* env = std::getenv("VT_ISA");
        if (!env) return c;
        if (!std::strcmp(env, "generic")) c.level = 0;
        else if (!std::strcmp(env, "avx2")) c.level = 1;
        else if (!std::strcmp(env, "avx512-novnni")) c.novnni = true;
        else if (std::strcmp(env, "avx512") != 0)
            std::fprintf(stderr, "libvt: VT_ISA=%s is not one of generic, avx2, avx512, avx512-novnni; ignored\n",
                         env);
        return c;
    }();
    return cap;
}
#endif

int detect_level(const CpuFeatures& f) {
#if defined(VT_HAVE_X86_KERNELS)
    int level = 0;
    if (f.avx2 && f.fma && f.f16c) level = 1;
    if (level == 1 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq) level = 2;
    return level < isa_cap().level ? level : isa_cap().level;  // lowering only: never enable what the CPU lacks
#else
    (void)f;
    return 0;
#endif
}

}  // namespace

const CpuFeatures& cpu_features() {
    static const CpuFeatures f = [] {
        CpuFeatures d = detect();
        // VT_ISA=avx512-novnni: the AVX-512 level without the VNNI + VBMI kernels (as on CPUs
        // that lack them), so their f32 replacements can be checked on a CPU that has them.
#if defined(VT_HAVE_X86_KERNELS)
        if (isa_cap().novnni) d.avx512vnni = d.avx512vbmi = false;
#endif
        return d;
    }();
    return f;
}

int cpu_level() {
    static const int level = detect_level(cpu_features());
    return level;
}

bool cpu_vnni() {
    const CpuFeatures& f = cpu_features();
    return cpu_level() == 2 && f.avx512vnni && f.avx512vbmi;
}

bool prefetch_to_l2() {
    static const bool l2 = [] {
        if (const char* env = std::getenv("VT_PREFETCH")) {
            if (!std::strcmp(env, "l1")) return false;
            if (!std::strcmp(env, "l2")) return true;
            std::fprintf(stderr, "libvt: VT_PREFETCH=%s is neither l1 nor l2; ignored\n", env);
        }
        return cpu_features().intel;
    }();
    return l2;
}

bool cpu_neon() {
#if defined(VT_HAVE_NEON_KERNELS)
    static const bool on = [] {
        const char* env = std::getenv("VT_ISA");
        if (!env || !std::strcmp(env, "neon")) return true;
        if (!std::strcmp(env, "generic")) return false;
        std::fprintf(stderr, "libvt: VT_ISA=%s is neither generic nor neon (64-bit ARM); ignored\n", env);
        return true;
    }();
    return on;
#else
    return false;
#endif
}

const char* cpu_level_name() {
    if (cpu_neon()) return "neon";
    switch (cpu_level()) {
        case 2: return "avx512";
        case 1: return "avx2";
        default: return "generic";
    }
}

}  // namespace vt
