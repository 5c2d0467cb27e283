// A small persistent thread pool for the CPU kernels (no OpenMP: the wheel must not need
// libgomp). Workers spin briefly, then sleep, so the ~200 parallel regions of one decoded
// token cost microseconds, not a syscall each.
#pragma once

#include <cstdint>

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

// Parallel regions run on the pool since the process started (each is one hand-off to the
// workers and one join); ranges run inline on the caller are not counted.
uint64_t parallel_regions();

template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
    auto tramp = [](void* ctx, int64_t b, int64_t e, int t) { (*static_cast<F*>(ctx))(b, e, t); };
    parallel_for_impl(n, grain, tramp, const_cast<void*>(static_cast<const void*>(&f)));
}

}  // namespace vt
