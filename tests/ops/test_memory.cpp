// libvt's weight memory (libvt/src/memory.cpp): alloc_weights hands out 64-byte aligned
// buffers that never overlap, small ones from shared huge-page chunks in order, large ones on
// their own; free_weights in any order gives every chunk back once its last buffer goes; many
// threads at once keep all of that; alloc_huge_pages is 2 MB aligned. Built by meson as
// vt_test_memory (`meson test memory`) and compiled on its own (also under AddressSanitizer
// and ThreadSanitizer where the compiler has them) by tests/test_memory.py; prints
// "N passed, M failed", exits 1 on a failure.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "memory.h"
#include "selftest.h"

using namespace vt;

namespace {

using selftest::expect;

struct Buf {
    unsigned char* p;
    size_t n;
    unsigned char tag;
};

// Fills every byte of b with its tag (a buffer that overlapped another would lose bytes).
void fill(const Buf& b) { std::memset(b.p, b.tag, b.n); }
bool intact(const Buf& b) {
    for (size_t i = 0; i < b.n; ++i)
        if (b.p[i] != b.tag) return false;
    return true;
}

void test_sequence() {
    const WeightArenaStats s0 = weight_arena_stats();
    expect(s0.chunks == 0 && s0.buffers == 0 && s0.bytes == 0, "the arena starts empty");
    // Sizes of a small model's linears and their odd neighbours: 36 of them, ~40 MB, so
    // several chunks; one of 6 MB (its own run) in the middle.
    std::vector<Buf> bufs;
    const size_t sizes[] = {587520, 352512, 940032, 1, 63, 64, 65, 4095, 3 << 20, (4 << 20) - 1};
    for (int i = 0; i < 36; ++i) {
        const size_t n = i == 17 ? size_t(6) << 20 : sizes[i % 10];
        bufs.push_back({static_cast<unsigned char*>(alloc_weights(n)), n, static_cast<unsigned char>(i + 1)});
        fill(bufs.back());
    }
    bool aligned = true;
    for (const Buf& b : bufs) aligned = aligned && reinterpret_cast<uintptr_t>(b.p) % 64 == 0;
    expect(aligned, "every buffer is 64-byte aligned");
    // Small buffers in the order asked for: each starts where the one before ended (rounded to
    // 64 bytes), except where a new chunk began.
    std::vector<Buf> small;
    size_t want_bytes = 0;
    for (const Buf& b : bufs)
        if (b.n < (size_t(4) << 20)) {
            small.push_back(b);
            want_bytes += (b.n + 63) / 64 * 64;
        }
    size_t adjacent = 0;
    for (size_t i = 1; i < small.size(); ++i)
        adjacent += small[i].p == small[i - 1].p + (small[i - 1].n + 63) / 64 * 64;
    const WeightArenaStats s1 = weight_arena_stats();
    expect(s1.buffers == 35 && small.size() == 35,
           "35 small buffers live in the arena (the 6 MB one is on its own): " + std::to_string(s1.buffers));
    expect(s1.bytes == want_bytes, "the arena handed out exactly their 64-byte rounded sizes");
    const size_t least = (want_bytes + (16 << 20) - 1) / (16 << 20);
    expect(s1.chunks >= least && s1.chunks <= least + 1,
           "they fill " + std::to_string(s1.chunks) + " chunks of 16 MB (at least " + std::to_string(least) + ")");
    expect(adjacent == small.size() - s1.chunks,
           "each small buffer follows the one before it, but where a chunk began (" + std::to_string(adjacent) +
               " of " + std::to_string(small.size() - 1) + " pairs adjacent)");
    bool all_intact = true;
    for (const Buf& b : bufs) all_intact = all_intact && intact(b);
    expect(all_intact, "no two buffers overlap (each keeps every byte written to it)");
    // Free in a scrambled order; the rest stays intact throughout; all chunks go at the end.
    std::mt19937 rng(7);
    std::shuffle(bufs.begin(), bufs.end(), rng);
    bool still = true;
    for (size_t i = 0; i < bufs.size(); ++i) {
        free_weights(bufs[i].p);
        for (size_t j = i + 1; j < bufs.size(); j += 5) still = still && intact(bufs[j]);
    }
    expect(still, "freeing buffers leaves the others intact");
    const WeightArenaStats s2 = weight_arena_stats();
    expect(s2.chunks == 0 && s2.buffers == 0 && s2.bytes == 0,
           "every chunk is given back once its last buffer is freed (chunks left: " + std::to_string(s2.chunks) + ")");
    free_weights(nullptr);
    expect(true, "free_weights(nullptr) does nothing");
}

void test_threads() {
    // 4 threads, each allocating, checking and freeing its own buffers in rounds, interleaved
    // with the others in the same chunks.
    std::vector<std::thread> ts;
    std::vector<int> ok(4, 1);
    for (int t = 0; t < 4; ++t)
        ts.emplace_back([t, &ok] {
            std::mt19937 rng(unsigned(t + 1));
            for (int round = 0; round < 20; ++round) {
                std::vector<Buf> mine;
                for (int i = 0; i < 12; ++i) {
                    const size_t n = 64 + rng() % (300 << 10);
                    mine.push_back({static_cast<unsigned char*>(alloc_weights(n)), n,
                                    static_cast<unsigned char>(t * 50 + i + 1)});
                    fill(mine.back());
                }
                for (const Buf& b : mine) ok[size_t(t)] = ok[size_t(t)] && intact(b);
                for (const Buf& b : mine) free_weights(b.p);
            }
        });
    for (auto& th : ts) th.join();
    expect(std::all_of(ok.begin(), ok.end(), [](int v) { return v != 0; }),
           "4 threads allocating and freeing at once: no buffer overlaps another");
    const WeightArenaStats s = weight_arena_stats();
    expect(s.chunks == 0 && s.buffers == 0, "after the threads, every chunk is given back");
}

void test_huge_pages() {
    void* p = alloc_huge_pages(3 << 20);
    expect(p != nullptr && reinterpret_cast<uintptr_t>(p) % (2 << 20) == 0, "alloc_huge_pages is 2 MB aligned");
    if (p) std::memset(p, 1, 4 << 20);  // rounded up to whole 2 MB pages: 4 MB are usable
    std::free(p);
    void* small = alloc_buffer(1000);
    void* large = alloc_buffer(size_t(5) << 20);
    expect(small && large && reinterpret_cast<uintptr_t>(small) % 64 == 0 &&
               reinterpret_cast<uintptr_t>(large) % (2 << 20) == 0 && weight_arena_stats().buffers == 0,
           "alloc_buffer: 64-byte aligned below 4 MB, 2 MB aligned from 4 MB, never from the arena");
    std::free(small);
    std::free(large);
    expect(alloc_huge_pages(SIZE_MAX - 1) == nullptr, "alloc_huge_pages of an absurd size is null, not a wrap");
    bool threw = false;
    try {
        alloc_weights(SIZE_MAX - 4096);  // past the 2 MB rounding: refused before any allocator sees it
    } catch (const std::bad_alloc&) {
        threw = true;
    }
    expect(threw, "alloc_weights that cannot be met throws std::bad_alloc");
}

}  // namespace

int main() {
    test_sequence();
    test_threads();
    test_huge_pages();
    return selftest::finish();
}
