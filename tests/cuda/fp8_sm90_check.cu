// Host-only check of the sm_90a FP8 GEMM (libvt/src/cuda/cutlass_fp8_sm90.cu) without a GPU:
// for problems as fp8_linear plans them (fp8_sm90_plan.h: y written directly, through the
// scratch with n not a multiple of 4 or a misaligned y, SwiGLU's batch of two, square and
// prefill shapes), CUTLASS's own can_implement (TMA alignments, strides) accepts them and asks
// for no workspace (fp8_gemm_sm90 plans none). No device call is made: the arguments are built
// with a fixed SM count. tests/test_cuda_host.py compiles this with nvcc and CUTLASS's headers.
#include "cuda/cutlass_fp8_sm90.cu"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "check_stubs.h"

int main() {
    using namespace vt::cudak;
    // Stand-ins for device buffers: only their addresses matter (alignment, batch strides).
    alignas(256) static uint8_t xq[256], w[256], wu[256];
    alignas(256) static float xs[64], sg[64], su[64], bias[64], y[256], d[256], du[256];
    struct Case {
        int m, n, n_pad, k_pad;
        bool up;
        float* y;
        bool finish;  // expected
    } cases[] = {
        {16, 256, 256, 576, false, y, false},         // y written by the GEMM
        {17, 130, 192, 1056, false, y, true},         // n % 4 != 0: the scratch
        {1000, 37, 64, 128, false, y, true},
        {300, 256, 256, 576, false, y + 1, true},     // y not 16-byte aligned
        {100, 200, 256, 288, true, y, true},          // SwiGLU: a batch of two
        {4096, 4096, 4096, 4096, false, y, false},
        {2048, 5632, 5632, 2048, true, y, true},
        {512, 2048, 2048, 5632, false, y, false},
    };
    int bad = 0, n = 0;
    for (const Case& c : cases) {
        bool fin = false;
        const Fp8Sm90Problem p = fp8_sm90_plan(c.m, c.n, c.n_pad, c.k_pad, xq, xs, w, sg, c.up ? wu : nullptr,
                                               c.up ? su : nullptr, c.up ? nullptr : bias, 1, c.y, d, du, &fin);
        typename Gemm::Arguments args = make_args(p, 0);
        args.hw_info.sm_count = 132;
        const cutlass::Status st = Gemm::can_implement(args);
        const size_t ws = Gemm::get_workspace_size(args);
        const bool ok = st == cutlass::Status::kSuccess && ws == 0 && fin == c.finish;
        std::printf("%s m %d n %d (GEMM N %d) k_pad %d%s%s: can_implement %s, workspace %zu\n", ok ? "ok  " : "FAIL",
                    c.m, c.n, p.n, c.k_pad, c.up ? " swiglu" : "", fin ? " via scratch" : "",
                    cutlass::cutlassGetStatusString(st), ws);
        bad += !ok;
        ++n;
    }
    std::printf("%d passed, %d failed\n", n - bad, bad);
    return bad ? 1 : 0;
}
