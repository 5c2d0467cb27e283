// tools/exp_check.cpp: attention.cpp's vector exp (exp_nonpos_v, 8 lanes) against its scalar exp_nonpos,
// bit for bit, on every non-positive float (−0 .. −inf), both compiled as the AVX2 attention body is.
// Needs an AVX2 CPU. Build and run from the repository root (about 8 s):
//   g++ -O3 -fno-math-errno -std=c++17 -DVT_HAVE_X86_KERNELS=1 -Ilibvt/src -Ilibvt/include \
//       tools/exp_check.cpp libvt/src/cpu_features.cpp -o /tmp/exp_check && /tmp/exp_check
#include "ops/attention.cpp"
#include <cstdio>
#include <cstring>
using namespace vt::ops;
__attribute__((target("arch=x86-64-v3"), noinline)) void scal(const float* x, float* y, int n) {
    for (int i = 0; i < n; ++i) y[i] = exp_nonpos(x[i]);
}
__attribute__((target("arch=x86-64-v3"), noinline)) void vec(const float* x, float* y, int n) {
    for (int i = 0; i < n; i += 8) {
        v8 v = *reinterpret_cast<const v8u*>(x + i);
        exp_nonpos_v(v);
        *reinterpret_cast<v8u*>(y + i) = v;
    }
}
int main() {
    const int N = 1 << 20;
    static float x[N], a[N], b[N];
    long long diff = 0, total = 0;
    // negative floats: bit patterns 0x80000000 (−0) .. 0xFF800000 (−inf), plus NaNs skipped
    for (uint64_t base = 0x80000000u; base <= 0xFF800000u; base += N) {
        int n = 0;
        for (; n < N && base + n <= 0xFF800000u; ++n) { uint32_t u = uint32_t(base + n); std::memcpy(&x[n], &u, 4); }
        while (n % 8) { x[n] = 0.0f; ++n; }
        scal(x, a, n);
        vec(x, b, n);
        for (int i = 0; i < n; ++i) { ++total; if (std::memcmp(&a[i], &b[i], 4)) { if (diff < 5) std::printf("differ at %a: %a vs %a\n", x[i], a[i], b[i]); ++diff; } }
    }
    std::printf("%lld inputs, %lld differ\n", total, diff);
    return diff != 0;
}
