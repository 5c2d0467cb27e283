// Host-only check of the sm_90a INT8 W8A16 GEMM (libvt/src/cuda/cutlass_w8a16_sm90.cu) without a
// GPU: for the problems the prefill gives it (the layer linears of the TinyLlama-1.1B,
// Llama-3.2-1B and Llama-2-7B shapes with blocks of 16, 32, 64 and 128 — every pass of the
// smaller ones —, m from kW8a16MinM to a whole pass, K not a multiple of the K tile),
// w8a16_sm90_problem_error (w8a16_plan.h) accepts them and so do CUTLASS's own can_implement
// (TMA alignments, strides, the group size) and its workspace query (none: w8a16_gemm_sm90
// plans none); for broken ones (a block of 48, misaligned or null operands, short pitches,
// m = 0, overlapping passes) the plan's check names the fault before CUTLASS is asked. No
// device call is made: the arguments are built with a fixed SM count.
// tests/test_cuda_host.py compiles this with nvcc and CUTLASS's headers.
#include "cuda/cutlass_w8a16_sm90.cu"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "check_stubs.h"

// Every pass's arguments as w8a16_gemm_sm90 builds them, through CUTLASS's checks.
template <int WT>
bool implementable(const vt::cudak::W8a16Sm90Problem& p, size_t* ws, const char** status) {
    using namespace vt::cudak;
    using G = typename W8a16<WT>::Gemm;
    const int phases = w8a16_phases(p.block, p.k_pad);
    bool all = phases > 0;
    for (int b = 0; b < phases; ++b) {
        typename G::Arguments args = make_args<WT>(w8a16_pass(p, b), 0);
        args.hw_info.sm_count = 132;
        const cutlass::Status st = G::can_implement(args);
        *ws += G::get_workspace_size(args);
        if (st != cutlass::Status::kSuccess) {
            all = false;
            *status = cutlass::cutlassGetStatusString(st);
        }
    }
    return all;
}

int main() {
    using namespace vt::cudak;
    // Stand-ins for device buffers: only their addresses matter (alignment).
    alignas(256) static int8_t w[256];
    alignas(256) static uint16_t sc[256], zr[256], x[256];
    alignas(256) static float d[256];
    struct Case {
        int m, n_pad, k_pad, block, wtype;
    } good[] = {
        {64, 2560, 2048, 32, kW8a16Int8},     // TinyLlama QKV at INT8's default block, the smallest m
        {256, 2048, 2048, 128, kW8a16Int8},   // O, a whole pass
        {256, 11264, 2048, 64, kW8a16Int8},   // gate/up interleaved
        {100, 2048, 5632, 32, kW8a16Int8},    // down: K = 88 tiles
        {256, 3072, 2048, 16, kW8a16Int8},    // Llama-3.2-1B QKV, blocks of 16: four passes
        {256, 16384, 2048, 64, kW8a16Int8},   // its gate/up
        {256, 12288, 4096, 128, kW8a16Int8},  // Llama-2-7B QKV
        {130, 4096, 11008, 32, kW8a16Int8},   // its down (K = 172 tiles)
        {1000, 64, 128, 64, kW8a16Int8},      // a small linear, many rows
        {77, 576, 192, 32, kW8a16Int8},       // K = 3 tiles, m not a multiple of anything
        {100, 320, 2080, 32, kW8a16Int8},     // K = 32.5 tiles: the last group half past K
        {256, 2560, 2048, 16, kW8a16Fp8},     // FP8's default block: four passes
        {100, 2048, 5632, 5632, kW8a16Fp8},   // FP8 per channel: one group of K
        {64, 192, 128, 128, kW8a16Fp8},       // ... K = 100 padded to 128
        {256, 2560, 2048, 32, kW8a16U4},      // the 4-bit formats' default block: two passes
        {100, 2048, 5632, 64, kW8a16U4},
        {77, 192, 384, 128, kW8a16U4},        // K = 333 padded to 384
    };
    int bad = 0, n = 0;
    for (const Case& c : good) {
        const W8a16Sm90Problem p = w8a16_problem(c.m, c.n_pad, c.k_pad, c.block, c.wtype, w, sc,
                                                 c.wtype == kW8a16U4 ? zr : nullptr, x, d);
        const char* err = w8a16_sm90_problem_error(p);
        const char* status = "ok";
        size_t ws = 0;
        const bool all = c.wtype == kW8a16Int8  ? implementable<kW8a16Int8>(p, &ws, &status)
                         : c.wtype == kW8a16Fp8 ? implementable<kW8a16Fp8>(p, &ws, &status)
                                                : implementable<kW8a16U4>(p, &ws, &status);
        const int phases = w8a16_phases(c.block, c.k_pad);
        const bool ok = !err && all && ws == 0;
        static const char* const kType[] = {"int8", "e4m3", "u4+zero"};
        std::printf("%s %s m %d [%d, %d] block %d (%d pass%s): plan %s, can_implement %s, workspace %zu\n",
                    ok ? "ok  " : "FAIL", kType[c.wtype], c.m, c.n_pad, c.k_pad, c.block, phases,
                    phases == 1 ? "" : "es", err ? err : "ok", status, ws);
        bad += !ok;
        ++n;
    }
    // Problems the plan refuses, each with what it names.
    struct Bad {
        const char* why;
        W8a16Sm90Problem p;
    };
    const W8a16Sm90Problem base = w8a16_problem(64, 2048, 2048, 32, kW8a16Int8, w, sc, nullptr, x, d);
    Bad refused[10] = {{"m < 1", base}, {"block", base}, {"block", base}, {"block", base}, {"null", base},
                       {"aligned", base}, {"aligned", base}, {"pitch of x", base}, {"pitch of d", base},
                       {"between the passes", base}};
    refused[0].p.m = 0;
    refused[1].p.block = 48;     // not a block the kernel takes
    refused[2].p.block = 96;
    refused[3].p.k_pad = 2080;   // 32.5 blocks of 64
    refused[3].p.block = 64;
    refused[4].p.scales = nullptr;
    refused[5].p.x = x + 1;
    refused[6].p.d = d + 2;
    refused[7].p.ldx = 2044;
    refused[8].p.ldd = 2050;
    refused[9].p.x_phase = 63 * 2048;  // the second pass's x would overlap the first
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
