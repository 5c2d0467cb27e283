#include "memory.h"

#include <cstdint>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace vt {

namespace {

constexpr size_t kHuge = size_t(2) << 20;

// Buffers below kArenaMax share chunks of kChunk bytes. A small model's linears are all small
// (SmolLM2-135M's largest, gate and up, is 885 KB): each in its own malloc'd run of 4 KB pages,
// SmolLM2's direct decode loop ran 5-7 % slower than from the arena (2-core EPYC VM,
// 2026-11-27, 10 alternating rounds; through generate() within noise: docs/performance.md).
// A buffer never moves and its space is not reused: a chunk is freed when its last buffer is
// (a closed model gives its memory back), and the chunk being filled stays only while it holds
// a buffer. So temporaries must not come from here — a temporary between two packed linears
// would leave a hole for the model's lifetime.
constexpr size_t kArenaMax = size_t(4) << 20;
constexpr size_t kChunk = size_t(16) << 20;

class Arena {
public:
    void* alloc(size_t bytes) {
        const size_t need = (bytes + 63) / 64 * 64;
        std::lock_guard<std::mutex> lk(mu_);
        auto it = current_ ? chunks_.find(current_) : chunks_.end();
        if (it == chunks_.end() || it->second.size - it->second.used < need) {
            void* c = alloc_huge_pages(kChunk);
            if (!c) throw std::bad_alloc();
            try {
                it = chunks_.emplace(reinterpret_cast<uintptr_t>(c), Chunk{kChunk, 0, 0}).first;
            } catch (...) {
                std::free(c);
                throw;
            }
            // The chunk left behind holds a buffer (an empty chunk is freed at once): its
            // last buffer's free_weights frees it.
            current_ = it->first;
        }
        void* p = reinterpret_cast<void*>(it->first + it->second.used);
        it->second.used += need;
        ++it->second.live;
        return p;
    }

    // True when p was one of the arena's buffers (and is now freed).
    bool free(void* p) {
        const uintptr_t a = reinterpret_cast<uintptr_t>(p);
        std::lock_guard<std::mutex> lk(mu_);
        auto it = chunks_.upper_bound(a);
        if (it == chunks_.begin()) return false;
        --it;
        if (a >= it->first + it->second.used) return false;
        if (--it->second.live == 0) {
            if (it->first == current_) current_ = 0;
            std::free(reinterpret_cast<void*>(it->first));
            chunks_.erase(it);
        }
        return true;
    }

    WeightArenaStats stats() {
        std::lock_guard<std::mutex> lk(mu_);
        WeightArenaStats s{chunks_.size(), 0, 0};
        for (const auto& c : chunks_) {
            s.buffers += c.second.live;
            s.bytes += c.second.used;
        }
        return s;
    }

private:
    struct Chunk {
        size_t size, used, live;  // bytes; bytes handed out (a bump pointer); buffers not yet freed
    };
    std::mutex mu_;
    std::map<uintptr_t, Chunk> chunks_;  // by start address
    uintptr_t current_ = 0;              // the chunk being filled (0: none)
};

Arena& arena() {
    static Arena* a = new Arena;  // never destroyed: a model may be freed during static destruction
    return *a;
}

}  // namespace

void* alloc_huge_pages(size_t bytes) {
    if (bytes > SIZE_MAX - kHuge) return nullptr;
    const size_t rounded = bytes ? (bytes + kHuge - 1) / kHuge * kHuge : kHuge;
    void* p = std::aligned_alloc(kHuge, rounded);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    if (p) madvise(p, rounded, MADV_HUGEPAGE);  // advice only: failure is harmless
#endif
    return p;
}

void* alloc_buffer(size_t bytes) {
    if (bytes >= kArenaMax) return alloc_huge_pages(bytes);
    return std::aligned_alloc(64, bytes ? (bytes + 63) / 64 * 64 : 64);
}

void* alloc_weights(size_t bytes) {
    void* p = bytes >= kArenaMax ? alloc_huge_pages(bytes) : arena().alloc(bytes ? bytes : 1);
    if (!p) throw std::bad_alloc();
    return p;
}

void free_weights(void* p) {
    if (p && !arena().free(p)) std::free(p);
}

WeightArenaStats weight_arena_stats() { return arena().stats(); }

}  // namespace vt
