// A small persistent thread pool for the CPU kernels (no OpenMP: the wheel must not need
// libgomp). Workers spin briefly, then sleep, so the ~200 parallel regions of one decoded
// token cost microseconds, not a syscall each.
#pragma once

#include <cstdint>
#include <type_traits>

namespace vt {

int num_threads();            // threads a parallel region uses (>= 1)
// n <= 0: default (VT_NUM_THREADS or hardware cores). Safe while other threads compute:
// regions already running finish on the pool they started with.
void set_num_threads(int n);

using RangeFn = void (*)(void* ctx, int64_t begin, int64_t end, int thread);

// Splits [0, n) into at most num_threads() contiguous chunks of at least `grain` items
// (chunk boundaries are multiples of `grain` except the last) and runs fn on each, the
// calling thread taking part. Returns when all chunks are done. Exceptions thrown by fn are
// rethrown in the caller (the first one). When another thread is already using the pool,
// the range runs inline on the caller (so many sessions on one model are safe); likewise for a
// while after a region in which a worker was descheduled (an oversubscribed machine: see
// kStallNs in threadpool.cpp).
void parallel_for_impl(int64_t n, int64_t grain, RangeFn fn, void* ctx);
// balanced: parallel_for_balanced below.
void parallel_for_impl(int64_t n, int64_t grain, RangeFn fn, void* ctx, bool balanced);

// Parallel regions run on the pool since the process started (each is one hand-off to the
// workers and one join); ranges run inline on the caller are not counted.
uint64_t parallel_regions();

template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
    auto tramp = [](void* ctx, int64_t b, int64_t e, int t) { (*static_cast<std::remove_reference_t<F>*>(ctx))(b, e, t); };
    parallel_for_impl(n, grain, tramp, const_cast<void*>(static_cast<const void*>(&f)));
}

// parallel_for for memory-bound ranges of equal items (the decode GEMVs, decode attention):
// each thread starts on its contiguous share as above, but claims it a piece at a time, and a
// thread that runs out takes pieces from the back of the others' shares. Equal shares of a
// memory stream do not finish together — one core's requests are served faster than the
// other's, by a different core each time — and a region lasts as long as its slowest share
// (on a 2-core VM, SmolLM2 decode: shares ~50 us, finishing ~5 us apart on average). fn is
// called several times per thread, with ranges that are whole multiples of `grain` (the
// last may be short), none overlapping; `thread` is the index of the share the caller
// started on (< num_threads(), as for parallel_for), not a unique id of the range.
template <class F>
void parallel_for_balanced(int64_t n, int64_t grain, F&& f) {
    auto tramp = [](void* ctx, int64_t b, int64_t e, int t) { (*static_cast<std::remove_reference_t<F>*>(ctx))(b, e, t); };
    parallel_for_impl(n, grain, tramp, const_cast<void*>(static_cast<const void*>(&f)), true);
}

}  // namespace vt
