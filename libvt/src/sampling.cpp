#include "sampling.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common.h"

namespace vt {
namespace {

// SplitMix64's output function (Steele, Lea, Flood 2014): the whole generator state
// advance is the caller's `+ 0x9E3779B97F4A7C15`.
inline uint64_t splitmix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

struct Cand {
    float v;
    int64_t i;
};
// a ranks before b: larger value, then lower index.
inline bool before(const Cand& a, const Cand& b) { return a.v > b.v || (a.v == b.v && a.i < b.i); }

}  // namespace

int64_t argmax(const float* x, int64_t n) {
    int64_t best = -1;
    float bv = 0.f;
    for (int64_t i = 0; i < n; ++i) {
        const float v = x[i];
        if (v != v) continue;  // NaN is never chosen
        if (best < 0 || v > bv) {
            best = i;
            bv = v;
        }
    }
    return best < 0 ? 0 : best;
}

void softmax(const float* x, int64_t n, float* y) {
    // NaN entries count as -inf (probability 0). If every entry is -inf/NaN the result is
    // uniform; if some are +inf, they share the mass equally.
    double mx = -INFINITY;
    int64_t ninf = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (x[i] != x[i]) continue;
        mx = std::max(mx, static_cast<double>(x[i]));
        if (x[i] == INFINITY) ++ninf;
    }
    if (mx == -INFINITY) {
        for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(1.0 / static_cast<double>(n));
        return;
    }
    if (ninf > 0) {
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] == INFINITY ? static_cast<float>(1.0 / ninf) : 0.f;
        return;
    }
    double sum = 0.0;
    for (int64_t i = 0; i < n; ++i)
        if (x[i] == x[i]) sum += std::exp(static_cast<double>(x[i]) - mx);
    for (int64_t i = 0; i < n; ++i)
        y[i] = x[i] == x[i] ? static_cast<float>(std::exp(static_cast<double>(x[i]) - mx) / sum) : 0.f;
}

double uniform(uint64_t seed, uint64_t step) {
    uint64_t r = splitmix64(seed ^ splitmix64(step + 0x9E3779B97F4A7C15ULL));
    return static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);  // 53 bits / 2^53
}

void check_sample_options(const vt_sample_options& o) {
    VT_CHECK_ARG(o.temperature >= 0.f, "temperature must be >= 0 (got %g)",
                 static_cast<double>(o.temperature));  // also rejects NaN
    VT_CHECK_ARG(std::isfinite(o.temperature), "temperature must be finite (got %g)",
                 static_cast<double>(o.temperature));
    VT_CHECK_ARG(o.top_p > 0.f && o.top_p <= 1.f, "top_p must be in (0, 1] (got %g)",
                 static_cast<double>(o.top_p));
    VT_CHECK_ARG(o.top_k >= 0, "top_k must be >= 0, 0 meaning no cap (got %d)", o.top_k);
    VT_CHECK_ARG(o.min_p >= 0.f && o.min_p <= 1.f, "min_p must be in [0, 1], 0 meaning off (got %g)",
                 static_cast<double>(o.min_p));
    VT_CHECK_ARG(o.repetition_penalty > 0.f && std::isfinite(o.repetition_penalty),
                 "repetition_penalty must be finite and > 0, 1 meaning off (got %g)",
                 static_cast<double>(o.repetition_penalty));
    VT_CHECK_ARG(std::isfinite(o.frequency_penalty), "frequency_penalty must be finite, 0 meaning off (got %g)",
                 static_cast<double>(o.frequency_penalty));
    VT_CHECK_ARG(std::isfinite(o.presence_penalty), "presence_penalty must be finite, 0 meaning off (got %g)",
                 static_cast<double>(o.presence_penalty));
}

Candidates select_candidates(const float* logits, int64_t n, const vt_sample_options& o) {
    Candidates c;
    // 1. top-k by partial selection: a min-heap (worst candidate on top) of k entries.
    int64_t k = o.top_k > 0 ? std::min<int64_t>(o.top_k, VT_MAX_TOP_K) : VT_MAX_TOP_K;
    k = std::min(k, n);
    std::vector<Cand> heap;
    heap.reserve(static_cast<size_t>(k));
    auto worse_on_top = [](const Cand& a, const Cand& b) { return before(a, b); };
    for (int64_t i = 0; i < n; ++i) {
        const float v = logits[i];
        if (v != v) continue;
        if (static_cast<int64_t>(heap.size()) < k) {
            heap.push_back({v, i});
            std::push_heap(heap.begin(), heap.end(), worse_on_top);
        } else if (v > heap.front().v) {  // equal values never win: the earlier index stays
            std::pop_heap(heap.begin(), heap.end(), worse_on_top);
            heap.back() = {v, i};
            std::push_heap(heap.begin(), heap.end(), worse_on_top);
        }
    }
    if (heap.empty()) return c;  // all NaN
    std::sort(heap.begin(), heap.end(), before);
    for (const Cand& h : heap) c.ids.push_back(h.i);
    const Cand& top = heap.front();
    if (std::isinf(top.v)) {  // +inf dominates; all -inf: nothing to weigh
        c.p.assign(1, 1.0);
        c.ids.resize(1);
        return c;
    }

    // 2. temperature, softmax in f64.
    const double t = o.temperature;
    const double zmax = static_cast<double>(top.v) / t;
    std::vector<double>& p = c.p;
    p.resize(heap.size());
    double sum = 0.0;
    for (size_t j = 0; j < heap.size(); ++j) {
        p[j] = std::exp(static_cast<double>(heap[j].v) / t - zmax);
        sum += p[j];
    }
    for (double& v : p) v /= sum;

    // 3. min-p: candidates are sorted, so the dropped ones are a suffix; renormalize.
    size_t kept = p.size();
    if (o.min_p > 0.f) {
        const double cut = std::log(static_cast<double>(o.min_p));
        for (size_t j = 1; j < heap.size(); ++j)
            if ((static_cast<double>(heap[j].v) - static_cast<double>(top.v)) / t < cut) {
                kept = j;
                break;
            }
        if (kept < p.size()) {
            double s2 = 0.0;
            for (size_t j = 0; j < kept; ++j) s2 += p[j];
            for (size_t j = 0; j < kept; ++j) p[j] /= s2;
            p.resize(kept);
        }
    }

    // 4. nucleus: the smallest prefix whose mass reaches top_p.
    size_t keep = p.size();
    double cum = 0.0;
    for (size_t j = 0; j < p.size(); ++j) {
        cum += p[j];
        if (cum >= static_cast<double>(o.top_p)) {
            keep = j + 1;
            break;
        }
    }
    p.resize(keep);
    c.ids.resize(keep);
    return c;
}

int64_t draw(const Candidates& c, uint64_t seed, uint64_t step) {
    if (c.ids.empty()) return 0;  // all NaN: argmax's answer
    // 5. inverse CDF over the renormalized prefix.
    double total = 0.0;
    for (double v : c.p) total += v;
    const double target = uniform(seed, step) * total;
    double cum = 0.0;
    for (size_t j = 0; j < c.p.size(); ++j) {
        cum += c.p[j];
        if (target < cum) return c.ids[j];
    }
    return c.ids.back();
}

int64_t sample(const float* logits, int64_t n, const vt_sample_options& o, uint64_t step) {
    check_sample_options(o);
    if (o.temperature == 0.f) return argmax(logits, n);
    return draw(select_candidates(logits, n, o), o.seed, step);
}

void min_p_mask(const vt_sample_options& o, int64_t n, float* x) {
    if (!(o.temperature > 0.f) || !(o.min_p > 0.f)) return;
    // The largest entry as numpy's max finds it: NaN if any entry is NaN (then nothing is cut).
    float xm = x[0];
    for (int64_t i = 0; i < n; ++i) {
        if (x[i] != x[i]) {
            xm = x[i];
            break;
        }
        xm = x[i] > xm ? x[i] : xm;
    }
    const double t = o.temperature, cut = std::log(static_cast<double>(o.min_p));
    for (int64_t i = 0; i < n; ++i)
        if ((static_cast<double>(x[i]) - static_cast<double>(xm)) / t < cut) x[i] = -INFINITY;
}

void process_logits(const float* logits, int64_t n, const vt_sample_options& o, const int32_t* inputs,
                    int64_t n_inputs, const int32_t* chosen, int64_t n_chosen, int flags, float* out) {
    check_sample_options(o);
    VT_CHECK_ARG((flags & ~(VT_PROCESS_PENALTIES | VT_PROCESS_MIN_P | VT_PROCESS_CANDIDATES)) == 0,
                 "flags %d has bits that are not VT_PROCESS_* flags", flags);
    VT_CHECK_ARG(n_inputs >= 0 && (n_inputs == 0 || inputs), "inputs is NULL or n_inputs (%lld) negative",
                 (long long)n_inputs);
    VT_CHECK_ARG(n_chosen >= 0 && (n_chosen == 0 || chosen), "chosen is NULL or n_chosen (%lld) negative",
                 (long long)n_chosen);
    for (int64_t i = 0; i < n_inputs; ++i)
        VT_CHECK_ARG(inputs[i] >= 0 && inputs[i] < n, "inputs[%lld] = %d is outside [0, %lld)", (long long)i,
                     inputs[i], (long long)n);
    for (int64_t i = 0; i < n_chosen; ++i)
        VT_CHECK_ARG(chosen[i] >= 0 && chosen[i] < n, "chosen[%lld] = %d is outside [0, %lld)", (long long)i,
                     chosen[i], (long long)n);
    if (out != logits) std::copy(logits, logits + n, out);
    if ((flags & VT_PROCESS_PENALTIES) && has_penalties(o)) {
        TokenHistory h;
        h.init(n);
        h.add_inputs(inputs, n_inputs);
        for (int64_t i = 0; i < n_chosen; ++i) h.add_chosen(chosen[i]);
        apply_penalties(o, h, out);
    }
    if (flags & VT_PROCESS_MIN_P) min_p_mask(o, n, out);
    if ((flags & VT_PROCESS_CANDIDATES) && o.temperature > 0.f) {
        const Candidates c = select_candidates(out, n, o);
        std::vector<uint8_t> keep(static_cast<size_t>(n), 0);
        for (int64_t i : c.ids) keep[static_cast<size_t>(i)] = 1;
        for (int64_t i = 0; i < n; ++i)
            if (!keep[static_cast<size_t>(i)]) out[i] = -INFINITY;
    }
}

// ==== Penalties ============================================================================

void TokenHistory::init(int64_t vocab) {
    seen.assign(static_cast<size_t>(vocab), 0);
    counts.assign(static_cast<size_t>(vocab), 0);
    seen_ids.clear();
    chosen_ids.clear();
}

void TokenHistory::add_inputs(const int32_t* tokens, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        uint8_t& f = seen[static_cast<size_t>(tokens[i])];
        if (!f) {
            f = 1;
            seen_ids.push_back(tokens[i]);
        }
    }
}

void TokenHistory::add_chosen(int32_t token) {
    add_inputs(&token, 1);
    if (counts[static_cast<size_t>(token)]++ == 0) chosen_ids.push_back(token);
}

void TokenHistory::clear() {
    for (int32_t t : seen_ids) seen[static_cast<size_t>(t)] = 0;
    for (int32_t t : chosen_ids) counts[static_cast<size_t>(t)] = 0;
    seen_ids.clear();
    chosen_ids.clear();
}

bool has_penalties(const vt_sample_options& o) {
    return o.repetition_penalty != 1.f || o.frequency_penalty != 0.f || o.presence_penalty != 0.f;
}

void apply_penalties(const vt_sample_options& o, const TokenHistory& h, float* logits) {
    // Separate float statements (no contraction into FMAs: libvt builds with ISO C++, whose
    // fp-contract is off), so the results equal numpy's float32 arithmetic bit for bit.
    if (o.repetition_penalty != 1.f) {
        const float r = o.repetition_penalty;
        for (int32_t t : h.seen_ids) {
            float& v = logits[t];
            v = v > 0.f ? v / r : v * r;
        }
    }
    if (o.frequency_penalty != 0.f || o.presence_penalty != 0.f) {
        for (int32_t t : h.chosen_ids) {
            const float fc = o.frequency_penalty * static_cast<float>(h.counts[static_cast<size_t>(t)]);
            float v = logits[t] - fc;
            logits[t] = v - o.presence_penalty;
        }
    }
}

}  // namespace vt
