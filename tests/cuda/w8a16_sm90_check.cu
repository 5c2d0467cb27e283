// Host-only check of the sm_90a INT8 W8A16 GEMM (libvt/src/cuda/cutlass_w8a16_sm90.cu) without a
// GPU: for the problems the prefill gives it (the layer linears of the TinyLlama-1.1B,
// Llama-3.2-1B and Llama-2-7B shapes with blocks of 64 and 128, m from kW8a16MinM to a whole pass,
// K not a multiple of the K tile), w8a16_sm90_problem_error (w8a16_plan.h) accepts them and so
// do CUTLASS's own can_implement (TMA alignments, strides, the group size) and its workspace
// query (none: w8a16_gemm_sm90 plans none); for broken ones (a block of 32, misaligned or null
// operands, short pitches, m = 0) the plan's check names the fault before CUTLASS is asked. No
// device call is made: the arguments are built with a fixed SM count.
// tests/test_cuda_host.py compiles this with nvcc and CUTLASS's headers.
#include "cuda/cutlass_w8a16_sm90.cu"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

// The two error paths of cutlass_w8a16_sm90.cu, which this program never takes (libvt's own
// are hidden symbols of libvt.so).
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

int main() {
    using namespace vt::cudak;
    // Stand-ins for device buffers: only their addresses matter (alignment).
    alignas(256) static int8_t w[256];
    alignas(256) static uint16_t sc[256], x[256];
    alignas(256) static float d[256];
    struct Case {
        int m, n_pad, k_pad, group;
    } good[] = {
        {64, 2560, 2048, 64},     // TinyLlama QKV, the smallest m
        {256, 2048, 2048, 128},   // O, a whole pass
        {256, 11264, 2048, 64},   // gate/up interleaved
        {100, 2048, 5632, 64},    // down: K = 88 tiles
        {256, 3072, 2048, 128},   // Llama-3.2-1B QKV
        {256, 16384, 2048, 64},   // its gate/up
        {256, 12288, 4096, 128},  // Llama-2-7B QKV
        {130, 4096, 11008, 64},   // its down (K = 172 tiles)
        {1000, 64, 128, 64},      // a small linear, many rows
        {77, 576, 192, 64},       // K = 3 tiles, m not a multiple of anything
    };
    int bad = 0, n = 0;
    for (const Case& c : good) {
        W8a16Sm90Problem p;
        p.m = c.m;
        p.n_pad = c.n_pad;
        p.k_pad = c.k_pad;
        p.group = c.group;
        p.w = w;
        p.scales = sc;
        p.x = x;
        p.ldx = c.k_pad;
        p.d = d;
        p.ldd = c.n_pad;
        const char* err = w8a16_sm90_problem_error(p);
        typename Gemm::Arguments args = make_args(p, 0);
        args.hw_info.sm_count = 132;
        const cutlass::Status st = Gemm::can_implement(args);
        const size_t ws = Gemm::get_workspace_size(args);
        const bool ok = !err && st == cutlass::Status::kSuccess && ws == 0;
        std::printf("%s m %d [%d, %d] block %d: plan %s, can_implement %s, workspace %zu\n", ok ? "ok  " : "FAIL", c.m,
                    c.n_pad, c.k_pad, c.group, err ? err : "ok", cutlass::cutlassGetStatusString(st), ws);
        bad += !ok;
        ++n;
    }
    // Problems the plan refuses, each with what it names.
    struct Bad {
        const char* why;
        W8a16Sm90Problem p;
    };
    W8a16Sm90Problem base;
    base.m = 64;
    base.n_pad = 2048;
    base.k_pad = 2048;
    base.group = 64;
    base.w = w;
    base.scales = sc;
    base.x = x;
    base.ldx = 2048;
    base.d = d;
    base.ldd = 2048;
    Bad refused[9] = {{"m < 1", base}, {"block", base}, {"block", base}, {"block", base}, {"null", base},
                      {"aligned", base}, {"aligned", base}, {"pitch of x", base}, {"pitch of d", base}};
    refused[0].p.m = 0;
    refused[1].p.group = 32;     // INT8's default block: gemm.cu's kernel
    refused[2].p.group = 16;
    refused[3].p.k_pad = 2080;   // not whole blocks
    refused[4].p.scales = nullptr;
    refused[5].p.x = x + 1;
    refused[6].p.d = d + 2;
    refused[7].p.ldx = 2044;
    refused[8].p.ldd = 2050;
    for (const Bad& b : refused) {
        const char* err = w8a16_sm90_problem_error(b.p);
        const bool ok = err && std::strstr(err, b.why);
        std::printf("%s refused (%s): %s\n", ok ? "ok  " : "FAIL", b.why, err ? err : "accepted");
        bad += !ok;
        ++n;
    }
    std::printf("%d passed, %d failed\n", n - bad, bad);
    return bad ? 1 : 0;
}
