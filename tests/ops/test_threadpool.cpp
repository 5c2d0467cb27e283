// libvt's thread pool (libvt/src/threadpool.cpp): parallel_for and parallel_for_balanced run
// every item of [0, n) exactly once, in ranges of whole `grain`s, with thread indices below
// num_threads(); balanced regions move work from a slow thread to a fast one; an exception in
// one range reaches the caller; regions nest (inline) and survive thread-count changes while
// other threads run regions. Built by meson as vt_test_threadpool (`meson test threadpool`)
// and compiled on its own (also under ThreadSanitizer where the compiler has it) by
// tests/test_threadpool.py; prints "N passed, M failed", exits 1 on a failure.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "selftest.h"
#include "threadpool.h"

using namespace vt;

namespace {

using selftest::expect;

// Busy work of about `ns` nanoseconds (sleeping would hand the core to the other threads,
// which is not what a slow share of a memory stream does).
void spin_ns(int64_t ns) {
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count() < ns) {
    }
}

// Every item once, ranges of whole grains (the last may be short), thread < num_threads().
template <bool Balanced>
void test_cover(int threads, int64_t n, int64_t grain, int64_t slow_below) {
    set_num_threads(threads);
    std::vector<std::atomic<int>> hits(size_t(n > 0 ? n : 1));
    for (auto& h : hits) h.store(0);
    std::atomic<int> bad_range{0}, bad_thread{0};
    auto body = [&](int64_t b, int64_t e, int t) {
        if (b < 0 || e > n || b >= e || b % grain != 0 || (e % grain != 0 && e != n)) bad_range.fetch_add(1);
        if (t < 0 || t >= num_threads()) bad_thread.fetch_add(1);
        for (int64_t i = b; i < e; ++i) {
            hits[size_t(i)].fetch_add(1);
            if (i < slow_below) spin_ns(2000);  // the first share is slow
        }
    };
    for (int rep = 0; rep < 20; ++rep) {
        if (Balanced) parallel_for_balanced(n, grain, body);
        else parallel_for(n, grain, body);
    }
    bool once = true;
    for (int64_t i = 0; i < n; ++i) once = once && hits[size_t(i)].load() == 20;
    const std::string what = std::string(Balanced ? "balanced" : "parallel_for") + " threads=" + std::to_string(threads) +
                             " n=" + std::to_string(n) + " grain=" + std::to_string(grain);
    expect(once, what + ": every item exactly once per region");
    expect(bad_range.load() == 0, what + ": ranges of whole grains inside [0, n)");
    expect(bad_thread.load() == 0, what + ": thread index < num_threads()");
}

// Stealing, without timing anything: the thread that runs item 0 (the first item of share 0)
// stays inside it until another thread has run an item of share 0 — which only a thief can
// do — or 5 s have passed (a pool that does not steal). A region that ran inline on the caller
// (the pool backing off after stalls on a loaded machine: one call with the whole range), or in
// which no other thread ran any item at all (the other pool thread not scheduled within those
// 5 s, seen under TSan on an overloaded 2-core host), says nothing about stealing and is tried
// again, after the longest back-off. A pool that does not steal still fails: its other thread
// runs its own share, so the region counts, and share 0 is not stolen.
void test_steals() {
    set_num_threads(2);
    const int64_t n = 256;
    int valid = 0, stolen_in = 0;
    for (int attempt = 0; attempt < 8 && valid < 3; ++attempt) {
        std::atomic<bool> stolen{false};
        std::atomic<int> calls{0};
        std::atomic<std::thread::id> owner{std::thread::id()};
        std::vector<std::thread::id> ran_by(static_cast<size_t>(n));  // each item written by one thread only
        parallel_for_balanced(n, 1, [&](int64_t b, int64_t e, int) {
            calls.fetch_add(1);
            for (int64_t i = b; i < e; ++i) {
                ran_by[size_t(i)] = std::this_thread::get_id();
                if (i == 0) {
                    owner.store(std::this_thread::get_id());
                    const auto t0 = std::chrono::steady_clock::now();
                    while (!stolen.load() && (b != 0 || e != n) &&
                           std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5))
                        std::this_thread::yield();
                } else if (i < n / 2 && owner.load() != std::thread::id() && owner.load() != std::this_thread::get_id()) {
                    stolen.store(true);
                }
            }
        });
        bool other_ran = false;
        for (const auto& id : ran_by) other_ran = other_ran || id != ran_by[0];
        if (calls.load() == 1 || !other_ran) {  // inline (the pool is backing off), or no other thread came
            std::this_thread::sleep_for(std::chrono::milliseconds(1100));
            continue;
        }
        ++valid;
        stolen_in += stolen.load();
    }
    expect(valid > 0 && stolen_in == valid,
           "balanced: another thread ran items of a share whose owner was held up (" + std::to_string(stolen_in) +
               " of " + std::to_string(valid) + " regions)");
}

template <bool Balanced>
void test_exception() {
    set_num_threads(2);
    bool caught = false;
    std::atomic<int64_t> ran{0};
    try {
        auto body = [&](int64_t b, int64_t e, int) {
            for (int64_t i = b; i < e; ++i) {
                if (i == 37) throw std::runtime_error("item 37");
                ran.fetch_add(1);
            }
        };
        if (Balanced) parallel_for_balanced(100, 1, body);
        else parallel_for(100, 1, body);
    } catch (const std::runtime_error& e) {
        caught = std::string(e.what()) == "item 37";
    }
    expect(caught, std::string(Balanced ? "balanced" : "parallel_for") + ": an exception in a range reaches the caller");
    // The pool is usable afterwards.
    std::atomic<int64_t> sum{0};
    parallel_for_balanced(1000, 1, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i) sum.fetch_add(i);
    });
    expect(sum.load() == 999 * 1000 / 2, "the pool runs regions after an exception");
}

// A region inside a range runs inline on that thread (the pool is busy) and completes.
void test_nested() {
    set_num_threads(2);
    std::atomic<int64_t> inner{0};
    parallel_for_balanced(8, 1, [&](int64_t b, int64_t e, int) {
        for (int64_t i = b; i < e; ++i)
            parallel_for_balanced(100, 1, [&](int64_t b2, int64_t e2, int) { inner.fetch_add(e2 - b2); });
    });
    expect(inner.load() == 800, "nested balanced regions run every item");
}

// Threads calling regions while another changes the thread count: every region complete.
void test_concurrent_resize() {
    std::atomic<bool> stop{false};
    std::atomic<int64_t> wrong{0}, regions{0};
    std::vector<std::thread> callers;
    for (int c = 0; c < 3; ++c)
        callers.emplace_back([&, c] {
            while (!stop.load()) {
                std::atomic<int64_t> sum{0};
                const int64_t n = 500 + 37 * c;
                parallel_for_balanced(n, 3, [&](int64_t b, int64_t e, int) {
                    for (int64_t i = b; i < e; ++i) sum.fetch_add(i);
                });
                if (sum.load() != n * (n - 1) / 2) wrong.fetch_add(1);
                regions.fetch_add(1);
            }
        });
    for (int k = 0; k < 200; ++k) {
        set_num_threads(1 + k % 4);
        std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    stop.store(true);
    for (auto& t : callers) t.join();
    expect(wrong.load() == 0 && regions.load() > 0,
           "regions from 3 threads while the thread count changes 200 times: all complete (" +
               std::to_string(regions.load()) + " regions)");
}

}  // namespace

int main() {
    for (int threads : {1, 2, 3, 8})
        for (int64_t n : {1, 2, 7, 64, 1000, 4099})
            for (int64_t grain : {1, 3, 16}) {
                test_cover<true>(threads, n, grain, 0);
                test_cover<false>(threads, n, grain, 0);
            }
    test_cover<true>(2, 300, 1, 150);
    test_cover<true>(4, 300, 2, 75);
    test_steals();
    test_exception<true>();
    test_exception<false>();
    test_nested();
    test_concurrent_resize();
    return selftest::finish();
}
