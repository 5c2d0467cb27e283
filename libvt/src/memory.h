// Memory for what decode streams from DRAM: packed weights and the KV cache.
//
// On transparent huge pages (Linux, MADV_HUGEPAGE; elsewhere plain aligned memory). A stream
// over 4 KB pages crosses a page every 64 cache lines: a TLB miss, and a boundary the hardware
// prefetchers stop at. Small buffers share arena chunks so that they are on huge pages too
// (memory.cpp says what that measured).
#pragma once

#include <cstddef>

namespace vt {

// Uninitialized memory, 2 MB aligned and rounded up to whole 2 MB pages, advised as huge
// pages. Null when out of memory (or bytes is absurd). Free with std::free.
void* alloc_huge_pages(size_t bytes);

// A buffer of its own (never from the arena: one that is freed while packed weights live, a
// temporary or a KV cache that grows, would leave a hole there): from 4 MB on alloc_huge_pages,
// smaller ones 64-byte aligned. Uninitialized; null when out of memory. Free with std::free.
void* alloc_buffer(size_t bytes);

// Uninitialized memory for packed weights, 64-byte aligned, on huge pages: from 4 MB on in its
// own alloc_huge_pages run, smaller buffers from shared 16 MB arena chunks, one after the other
// in the order they are asked for (a model's linears are packed in the order decode reads
// them). Throws std::bad_alloc. Free with free_weights; both are thread-safe.
void* alloc_weights(size_t bytes);
void free_weights(void* p);  // p from alloc_weights, or null

// The arena's state (tests): chunks held, buffers live in them, bytes handed out of them.
struct WeightArenaStats {
    size_t chunks, buffers, bytes;
};
WeightArenaStats weight_arena_stats();

}  // namespace vt
