// The FP8 W8A8 GEMM for Hopper (cutlass_fp8_sm90.cu) as fp8_linear (cutlass_fp8.cu) plans it:
// the problem CUTLASS gets, and whether a finishing pass must follow. Plain C++ (no CUDA
// header) so that tests/test_cuda_host.py checks the planning on any machine (host_check.cpp).
#pragma once

#include <cstdint>

namespace vt {
namespace cudak {

// d[l][i][r] = act((acc · xs[i]) · wscale[l][r] + bias[r]) for i < m, r < n, l < batch, acc the
// FP32 sum over k < k_pad of E4M3 x[i][k] · E4M3 w[l][r][k].
struct Fp8Sm90Problem {
    int m = 0, n = 0, k_pad = 0;      // k_pad: a multiple of 16 (layout.h pads K to 32)
    int batch = 1;                    // 1, or 2 (SwiGLU: gate, up)
    const uint8_t* xq = nullptr;      // [m][k_pad] E4M3, 16-byte aligned
    const float* xs = nullptr;        // [m] row scales
    const uint8_t* w = nullptr;       // [n_pad][k_pad] E4M3 codes (n_pad >= n), 16-byte aligned
    int64_t w_batch_stride = 0;       // elements from gate's codes to up's
    const float* wscale = nullptr;    // [n] per-row weight multipliers (layout.h rowmul), 16-byte aligned
    int64_t wscale_batch_stride = 0;  // elements
    const float* bias = nullptr;      // [n] or null (batch 1 only)
    int gelu = 0;
    float* d = nullptr;               // [batch][m][ldd] f32, 16-byte aligned
    int64_t ldd = 0;                  // a multiple of 4 (16-byte rows for the TMA store)
    int64_t d_batch_stride = 0;       // elements
};

// m below which fp8_linear keeps the sm_89 kernel (a 128-row tile would be mostly padding; the
// Hopper kernel serves prefill-sized problems, m >= 16).
constexpr int64_t kFp8Sm90MinM = 16;

// The plan for y[m][n] = act(x · Wᵀ + bias), or silu(x · Wᵀ + bias) ⊙ (x · Upᵀ + up_bias) when
// w_up is not null. The GEMM writes y itself, bias and GELU included, when it can: one output,
// n a multiple of 4 (CUTLASS's TMA store wants whole 16-byte runs along N) and y 16-byte
// aligned. Otherwise it writes only the scaled products into the scratch d_ws ([batch][m][n_pad];
// d_ws_up = up's part) over n rounded up to 4 columns (the weight's padding rows and their zero
// multipliers make the extra columns zeros; bias has only n entries, so it is not read there),
// and *finish is set: a pass then writes y = act(d + bias), or silu(g + bias) · (u + up_bias).
// Elements from a to b (separate allocations: computed on the addresses, which is what CUTLASS
// adds the batch stride to; pointer subtraction across objects is not defined in C++).
template <class T>
inline int64_t elems_between(const T* a, const T* b) {
    return (int64_t(reinterpret_cast<uintptr_t>(b)) - int64_t(reinterpret_cast<uintptr_t>(a))) / int64_t(sizeof(T));
}

inline Fp8Sm90Problem fp8_sm90_plan(int64_t m, int n, int n_pad, int k_pad, const uint8_t* xq, const float* xs,
                                    const uint8_t* w, const float* wscale, const uint8_t* w_up,
                                    const float* wscale_up, const float* bias, int gelu, float* y, float* d_ws,
                                    float* d_ws_up, bool* finish) {
    Fp8Sm90Problem p;
    p.m = int(m);
    p.n = n;
    p.k_pad = k_pad;
    p.xq = xq;
    p.xs = xs;
    p.w = w;
    p.wscale = wscale;
    const bool direct = !w_up && n % 4 == 0 && reinterpret_cast<uintptr_t>(y) % 16 == 0;
    *finish = !direct;
    if (direct) {
        p.bias = bias;
        p.gelu = gelu;
        p.d = y;
        p.ldd = n;
        return p;
    }
    p.n = (n + 3) / 4 * 4;  // <= n_pad; bias and act: the finishing pass
    p.d = d_ws;
    p.ldd = n_pad;
    if (w_up) {
        p.batch = 2;
        p.w_batch_stride = elems_between(w, w_up);
        p.wscale_batch_stride = elems_between(wscale, wscale_up);
        p.d_batch_stride = elems_between(d_ws, d_ws_up);
    }
    return p;
}

}  // namespace cudak
}  // namespace vt
