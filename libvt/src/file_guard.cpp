#include "file_guard.h"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <mutex>

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

namespace vt {

namespace {

// An index loads up to 4096 shard files at once (all mapped), plus loads in other threads.
constexpr int kSlots = 8192;

struct Slot {
    std::atomic<unsigned> seq{0};             // odd while begin / end are being changed
    std::atomic<uintptr_t> begin{0}, end{0};  // end == 0: free
    std::atomic<int> faulted{0};
};

// Sets a slot's range (under g_mutex) so that the handler never sees half of a change.
void set_range(Slot& s, uintptr_t begin, uintptr_t end) {
    s.seq.fetch_add(1, std::memory_order_acq_rel);
    s.begin.store(begin, std::memory_order_release);
    s.end.store(end, std::memory_order_release);
    s.seq.fetch_add(1, std::memory_order_acq_rel);
}

Slot g_slots[kSlots];
std::atomic<int> g_high{0};   // slots in [0, g_high) may be in use
std::mutex g_mutex;           // registration, install / restore of the handler
int g_registered = 0;         // under g_mutex
struct sigaction g_prev;      // the handler before ours, while ours is installed
std::atomic<uintptr_t> g_page{4096};

// Async-signal-safe: atomics, mmap (a plain system call on Linux) and sigaction.
void on_sigbus(int sig, siginfo_t* info, void* ctx) {
    const int saved_errno = errno;
    const uintptr_t addr = reinterpret_cast<uintptr_t>(info->si_addr);
    const int high = g_high.load(std::memory_order_acquire);
    for (int i = 0; i < high; ++i) {
        Slot& s = g_slots[i];
        const unsigned q = s.seq.load(std::memory_order_acquire);
        const uintptr_t b = s.begin.load(std::memory_order_acquire), e = s.end.load(std::memory_order_acquire);
        if ((q & 1) || s.seq.load(std::memory_order_acquire) != q) continue;  // being changed: not a load's
        if (e == 0 || addr < b || addr >= e) continue;
        const uintptr_t page = addr & ~(g_page.load(std::memory_order_relaxed) - 1);
        // Zero pages from here to the end of the mapping: the faulting read then completes
        // (on zeros) and later reads do not fault again, page after page.
        void* r = ::mmap(reinterpret_cast<void*>(page), e - page, PROT_READ,
                         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
        if (r != MAP_FAILED) {
            s.faulted.store(1, std::memory_order_release);
            errno = saved_errno;
            return;
        }
        break;  // cannot repair: behave as without us
    }
    // Not ours: the previous handler, or the default action (the fault recurs on return).
    const struct sigaction& p = g_prev;
    if ((p.sa_flags & SA_SIGINFO) && p.sa_sigaction) {
        p.sa_sigaction(sig, info, ctx);
    } else if (p.sa_handler != SIG_DFL && p.sa_handler != SIG_IGN) {
        p.sa_handler(sig);
    } else {
        struct sigaction dfl;
        sigemptyset(&dfl.sa_mask);
        dfl.sa_flags = 0;
        dfl.sa_handler = SIG_DFL;
        ::sigaction(SIGBUS, &dfl, nullptr);
    }
    errno = saved_errno;
}

bool ours_installed() {
    struct sigaction cur;
    if (::sigaction(SIGBUS, nullptr, &cur) != 0) return false;
    return (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_sigbus;
}

}  // namespace

int guard_mapping(const void* base, size_t len) {
    if (!base || len == 0) return -1;
    std::lock_guard<std::mutex> lock(g_mutex);
    int slot = -1;
    for (int i = 0; i < kSlots; ++i)
        if (g_slots[i].end.load(std::memory_order_relaxed) == 0) {
            slot = i;
            break;
        }
    if (slot < 0) return -1;
    if (g_registered == 0 && !ours_installed()) {
        long ps = ::sysconf(_SC_PAGESIZE);
        if (ps > 0) g_page.store(uintptr_t(ps), std::memory_order_relaxed);
        struct sigaction prev, act;
        if (::sigaction(SIGBUS, nullptr, &prev) != 0) return -1;
        g_prev = prev;  // set before ours can run
        sigemptyset(&act.sa_mask);
        act.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
        act.sa_sigaction = on_sigbus;
        if (::sigaction(SIGBUS, &act, nullptr) != 0) return -1;
    }
    ++g_registered;
    Slot& s = g_slots[slot];
    s.faulted.store(0, std::memory_order_relaxed);
    set_range(s, reinterpret_cast<uintptr_t>(base), reinterpret_cast<uintptr_t>(base) + len);
    if (slot >= g_high.load(std::memory_order_relaxed)) g_high.store(slot + 1, std::memory_order_release);
    return slot;
}

bool guard_faulted(int slot) {
    return slot >= 0 && g_slots[slot].faulted.load(std::memory_order_acquire) != 0;
}

void unguard_mapping(int slot) {
    if (slot < 0) return;
    std::lock_guard<std::mutex> lock(g_mutex);
    set_range(g_slots[slot], 0, 0);
    if (--g_registered == 0 && ours_installed()) ::sigaction(SIGBUS, &g_prev, nullptr);
}

}  // namespace vt
