#include "threadpool.h"

#include <sched.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
static inline void cpu_relax() { _mm_pause(); }
#else
static inline void cpu_relax() {}
#endif

namespace vt {
namespace {

int default_threads() {
    if (const char* env = std::getenv("VT_NUM_THREADS")) {
        char* end = nullptr;
        long v = std::strtol(env, &end, 10);
        if (end != env && v > 0) return static_cast<int>(v > 256 ? 256 : v);
    }
    // The affinity mask, not hardware_concurrency(): containers and taskset restrict it.
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0) {
        int n = CPU_COUNT(&set);
        if (n > 0) return n;
    }
    unsigned n = std::thread::hardware_concurrency();
    return n ? static_cast<int>(n) : 1;
}

using Clock = std::chrono::steady_clock;

int64_t now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// A worker spins this long before sleeping: a decode step runs hundreds of short regions
// back to back, and a futex wake costs ~5-20 us each. In time, not PAUSE iterations: PAUSE
// takes ~10 cycles on some CPUs and ~140 on others (20000 of them were ~1 ms of a core on a
// Sapphire Rapids VM, taken from whatever else the machine runs).
constexpr int64_t kSpinNs = 50'000;

// Oversubscription. On a machine busier than its cores, a worker is sometimes descheduled
// in the middle of its chunk, and the caller waits for it a whole scheduler time slice
// (milliseconds) in a region that takes tens of microseconds: measured on a 2-core VM beside
// three busy processes, 2 threads decoded at 16 tok/s where 1 thread made 26. So a region
// whose caller waits for the others longer than it worked itself (and more than kStallNs)
// is a stall. When stalls take more than 1/kStallShare of the time over a window of
// kWindowNs (or one stall alone lasts a whole kInlineMinNs), the caller runs regions alone
// for a back-off period (kInlineMinNs, doubling while stalls recur, up to kInlineMaxNs), then
// tries the workers again. Not after any single stall: a process whose own other thread
// wakes now and then (the server's event loop streaming tokens between decode steps) stalls
// a region every few steps, which costs a few percent, where running alone for 20 ms each
// time cost a fifth of the server's throughput at 16 clients (bench/serve.py, 2026-11-26).
constexpr int64_t kStallNs = 1'000'000;
constexpr int64_t kWindowNs = 50'000'000;
constexpr int64_t kStallShare = 4;
constexpr int64_t kInlineMinNs = 20'000'000;
constexpr int64_t kInlineMaxNs = 1'000'000'000;

// Threads a stealing region can have (its parts are a fixed array of the pool).
constexpr int kMaxStealThreads = 64;

class Pool {
public:
    explicit Pool(int n) : nthreads_(n) {
        for (int i = 1; i < n; ++i) workers_.emplace_back([this] { worker(); });
    }
    ~Pool() {
        {
            std::lock_guard<std::mutex> lk(m_);
            stop_.store(true);
            gen_.fetch_add(1);
        }
        cv_.notify_all();
        for (auto& t : workers_) {
            // (A region nested inside a worker's chunk could hold the last reference.)
            if (t.get_id() == std::this_thread::get_id()) t.detach();
            else t.join();
        }
    }
    int size() const { return nthreads_; }

    // Whether regions should run on the caller alone now (see kStallNs).
    bool backing_off() const {
        const int64_t until = inline_until_.load(std::memory_order_relaxed);
        return until != 0 && now_ns() < until;
    }

    // Returns false (without running anything) when another caller holds the pool. With
    // `steal`, a thread that has finished its chunk takes pieces from the ends of the others'
    // (claim_piece).
    bool run(int64_t n, int64_t grain, int nchunks, RangeFn fn, void* ctx, bool steal) {
        bool expected = false;
        if (!busy_.compare_exchange_strong(expected, true, std::memory_order_acquire)) return false;
        const int64_t t0 = now_ns();
        fn_ = fn;
        ctx_ = ctx;
        n_ = n;
        grain_ = grain;
        nchunks_ = nchunks;
        steal_ = steal;
        err_ = nullptr;
        const int64_t units = (n + grain - 1) / grain;
        if (steal) {
            for (int c = 0; c < nchunks; ++c)
                parts_[c].range.store(span(units * c / nchunks, units * (c + 1) / nchunks), std::memory_order_relaxed);
        }
        // A chunk counts one; with stealing, so does every unit of `grain` items it ran.
        const int64_t target = steal ? units + nchunks : nchunks;
        done_.store(0, std::memory_order_relaxed);
        const uint64_t g = gen_.load(std::memory_order_relaxed) + 1;
        next_.store(pack(g, nchunks, 0), std::memory_order_release);
        gen_.store(g, std::memory_order_seq_cst);
        if (sleepers_.load(std::memory_order_seq_cst) > 0) {
            std::lock_guard<std::mutex> lk(m_);
            cv_.notify_all();
        }
        // Chunks go to whoever claims them first: if a worker is descheduled (a busy
        // 2-core machine), the caller runs its chunk too instead of waiting for it.
        claim_and_run(g);
        if (done_.load(std::memory_order_acquire) != target) {
            const int64_t t1 = now_ns();
            int64_t t = t1;
            for (int spins = 0; done_.load(std::memory_order_acquire) != target; ++spins) {
                if (t - t1 < kSpinNs) {
                    cpu_relax();
                    if ((spins & 63) == 0) t = now_ns();
                } else {
                    std::this_thread::yield();
                    t = now_ns();
                }
            }
            const int64_t waited = now_ns() - t1;
            note_wait(waited, t1 - t0);
        } else {
            note_wait(0, 0);
        }
        std::exception_ptr err = err_;
        busy_.store(false, std::memory_order_release);
        if (err) std::rethrow_exception(err);
        return true;
    }

private:
    // Called by the caller (the owner of busy_) after each region.
    void note_wait(int64_t waited, int64_t worked) {
        const bool stall = waited > kStallNs && waited > worked;
        const int64_t now = now_ns();
        if (win_start_ == 0) win_start_ = now;
        if (stall) win_stall_ += waited;
        bool back_off = stall && waited >= kInlineMinNs;
        if (!back_off && now - win_start_ >= kWindowNs) {
            back_off = win_stall_ * kStallShare > now - win_start_;
            win_start_ = now;
            win_stall_ = 0;
        }
        if (back_off) {
            int64_t b = backoff_ ? backoff_ : kInlineMinNs;
            inline_until_.store(now + b, std::memory_order_relaxed);
            backoff_ = b * 2 > kInlineMaxNs ? kInlineMaxNs : b * 2;
            clean_ = 0;
            win_start_ = 0;  // a fresh window when the workers are tried again
            win_stall_ = 0;
        } else if (stall) {
            clean_ = 0;
        } else if (backoff_ && ++clean_ >= 256) {
            backoff_ = 0;  // the machine is quiet again: back to the shortest back-off
            clean_ = 0;
        }
    }

    // next_ = generation (32 bits) | chunk count (16) | next chunk (16): a worker that
    // wakes late for an old job can never claim a chunk of the next one.
    static uint64_t pack(uint64_t gen, int nchunks, int next) {
        return (gen << 32) | (static_cast<uint64_t>(nchunks) << 16) | static_cast<uint64_t>(next);
    }

    void claim_and_run(uint64_t gen) {
        const uint64_t tag = gen & 0xFFFFFFFFu;
        uint64_t v = next_.load(std::memory_order_acquire);
        for (;;) {
            if ((v >> 32) != tag) return;
            const int c = static_cast<int>(v & 0xFFFF), nch = static_cast<int>((v >> 16) & 0xFFFF);
            if (c >= nch) return;
            // acq_rel: the claim reads the caller's release store, so the job fields are seen.
            if (!next_.compare_exchange_weak(v, v + 1, std::memory_order_acq_rel)) continue;
            if (steal_) {
                // One for the part claimed, besides its units: the job cannot end before every
                // part's claimer has added to done_, so the parts this thread steals from are
                // this job's, never a later one's (a part may be empty when claimed: stolen).
                done_.fetch_add(run_part(c) + 1, std::memory_order_release);
            } else {
                run_chunk(c);
                done_.fetch_add(1, std::memory_order_release);
            }
            v = next_.load(std::memory_order_acquire);
        }
    }

    // A part of a stealing job: units [lo, hi) of `grain` items not yet claimed, packed in one
    // word so that its owner (taking pieces from the front) and thieves (from the back) agree.
    static uint64_t span(int64_t lo, int64_t hi) { return (static_cast<uint64_t>(lo) << 32) | static_cast<uint64_t>(hi); }
    struct alignas(64) Part {
        std::atomic<uint64_t> range{0};
    };

    // A piece of a part with `left` units unclaimed: an eighth of them while 16 or more are
    // left, else 2 (the last one alone). Large pieces while much is left keep the claims few
    // and each thread's stream of memory long; small ones at the end leave the threads at most
    // a small piece apart when they meet.
    static int64_t piece(int64_t left) { return left >= 16 ? left / 8 : left >= 2 ? 2 : 1; }

    // Claims a piece of part c: from the front (its owner) or from the back (a thief).
    // Returns false when the part has nothing left.
    bool claim_piece(int c, bool front, int64_t& b, int64_t& e) {
        std::atomic<uint64_t>& r = parts_[c].range;
        uint64_t v = r.load(std::memory_order_relaxed);
        for (;;) {
            const int64_t lo = static_cast<int64_t>(v >> 32), hi = static_cast<int64_t>(v & 0xFFFFFFFFu);
            if (lo >= hi) return false;
            const int64_t k = piece(hi - lo);
            const uint64_t nv = front ? span(lo + k, hi) : span(lo, hi - k);
            if (r.compare_exchange_weak(v, nv, std::memory_order_relaxed)) {
                b = front ? lo : hi - k;
                e = front ? lo + k : hi;
                return true;
            }
        }
    }

    // Runs part c piece by piece, then pieces of the other parts, until none is left.
    // Returns the units it ran.
    int64_t run_part(int c) {
        int64_t ran = 0, b, e;
        while (claim_piece(c, true, b, e)) {
            run_units(b, e, c);
            ran += e - b;
        }
        for (int k = 1; k < nchunks_; ++k) {
            const int o = (c + k) % nchunks_;
            while (claim_piece(o, false, b, e)) {
                run_units(b, e, c);
                ran += e - b;
            }
        }
        return ran;
    }

    // Units [b, e) of the job: items [b * grain, min(e * grain, n)).
    void run_units(int64_t b, int64_t e, int c) {
        const int64_t ib = b * grain_, ie = e * grain_ < n_ ? e * grain_ : n_;
        if (ib >= ie) return;
        try {
            fn_(ctx_, ib, ie, c);
        } catch (...) {
            std::lock_guard<std::mutex> lk(err_m_);
            if (!err_) err_ = std::current_exception();
        }
    }

    void run_chunk(int c) {
        // Chunks are whole multiples of grain, as even as possible.
        const int64_t units = (n_ + grain_ - 1) / grain_;
        run_units(units * c / nchunks_, units * (c + 1) / nchunks_, c);
    }

    void worker() {
        uint64_t seen = 0;
        for (;;) {
            uint64_t g = gen_.load(std::memory_order_acquire);
            if (g == seen) {
                const int64_t t0 = now_ns();
                for (int spins = 1; g == seen; ++spins) {
                    cpu_relax();
                    g = gen_.load(std::memory_order_acquire);
                    if ((spins & 63) == 0 && now_ns() - t0 > kSpinNs) break;
                }
            }
            if (g == seen) {
                std::unique_lock<std::mutex> lk(m_);
                sleepers_.fetch_add(1, std::memory_order_seq_cst);
                cv_.wait(lk, [&] { return gen_.load(std::memory_order_seq_cst) != seen; });
                sleepers_.fetch_sub(1, std::memory_order_relaxed);
                g = gen_.load(std::memory_order_acquire);
            }
            seen = g;
            if (stop_.load()) return;
            claim_and_run(g);
        }
    }

    const int nthreads_;
    std::vector<std::thread> workers_;
    std::atomic<uint64_t> gen_{0};
    std::atomic<uint64_t> next_{0};  // see pack()
    std::atomic<int64_t> done_{0};  // chunks finished (a stealing job: units)
    std::atomic<int> sleepers_{0};
    std::atomic<bool> busy_{false};
    std::atomic<bool> stop_{false};
    std::atomic<int64_t> inline_until_{0};  // backing_off() until this time (ns); 0 = never
    int64_t backoff_ = 0;                   // next back-off (owner of busy_ only); 0 = kInlineMinNs
    int clean_ = 0;                         // regions without a stall since the last one
    int64_t win_start_ = 0;                 // the stall window's start (ns; 0 = none yet)
    int64_t win_stall_ = 0;                 // stalled ns in the window
    std::mutex m_;
    std::condition_variable cv_;
    std::mutex err_m_;
    std::exception_ptr err_;
    // The current job (written by the owner of busy_, read by workers after gen_ changes).
    RangeFn fn_ = nullptr;
    void* ctx_ = nullptr;
    int64_t n_ = 0, grain_ = 1;
    int nchunks_ = 0;
    bool steal_ = false;
    Part parts_[kMaxStealThreads];  // a stealing job's parts (the first nchunks_)
};

// The pool, shared: every region holds a reference for as long as it runs, so changing the
// thread count while other threads compute (vt_set_num_threads, load_model(threads=N)) only
// swaps the pointer; the old pool is joined and freed by whichever region releases it last.
// Both objects are heap-allocated and never destroyed: joining workers during exit can hang.
std::mutex* g_pool_m = new std::mutex();
std::shared_ptr<Pool>* g_pool = new std::shared_ptr<Pool>();
std::atomic<int> g_requested{0};  // 0 = default
std::atomic<uint64_t> g_regions{0};
std::atomic<int> g_threads{0};    // cached thread count (0 = not yet computed)

void after_fork_child() {
    // The child has no worker threads: forget the pool (leaked: its threads are not here to
    // join) and rebuild it lazily.
    g_pool_m = new std::mutex();
    g_pool = new std::shared_ptr<Pool>();
}

std::shared_ptr<Pool> get_pool(int want) {
    static bool atfork = (pthread_atfork(nullptr, nullptr, after_fork_child), true);
    (void)atfork;
    std::lock_guard<std::mutex> lk(*g_pool_m);
    std::shared_ptr<Pool>& p = *g_pool;
    if (!p || p->size() != want) p = want > 1 ? std::make_shared<Pool>(want) : nullptr;
    return p;
}

}  // namespace

int num_threads() {
    int t = g_threads.load(std::memory_order_relaxed);
    if (t > 0) return t;
    int r = g_requested.load();
    t = r > 0 ? r : default_threads();
    g_threads.store(t);
    return t;
}

void set_num_threads(int n) {
    g_requested.store(n > 0 ? (n > 256 ? 256 : n) : 0);
    g_threads.store(0);
}

void parallel_for_impl(int64_t n, int64_t grain, RangeFn fn, void* ctx, bool balanced) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    int64_t units = (n + grain - 1) / grain;
    int nt = num_threads();
    int nchunks = static_cast<int>(units < nt ? units : nt);
    if (nchunks <= 1) {
        fn(ctx, 0, n, 0);
        return;
    }
    // (A part's bounds are 32-bit; so many threads or units run without stealing.)
    const bool steal = balanced && nchunks <= kMaxStealThreads && units < (int64_t(1) << 31);
    std::shared_ptr<Pool> p = get_pool(nt);
    if (!p || p->backing_off() || !p->run(n, grain, nchunks, fn, ctx, steal)) {
        fn(ctx, 0, n, 0);
        return;
    }
    g_regions.fetch_add(1, std::memory_order_relaxed);
}

void parallel_for_impl(int64_t n, int64_t grain, RangeFn fn, void* ctx) { parallel_for_impl(n, grain, fn, ctx, false); }

uint64_t parallel_regions() { return g_regions.load(std::memory_order_relaxed); }

}  // namespace vt
