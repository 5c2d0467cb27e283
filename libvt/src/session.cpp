// The session layer (session.h): validation, KV bookkeeping, prefill chunks, decode, the
// batched decode step, penalties and the one token chooser, over any backend (backend.h).
#include "session.h"

#include <algorithm>

namespace vt {

namespace {

void check_tokens(const vt_model& m, const int32_t* tokens, int64_t n) {
    const int64_t V = m.cfg.vocab_size;
    for (int64_t i = 0; i < n; ++i)
        if (tokens[i] < 0 || tokens[i] >= V)
            fail(VT_STATUS_INVALID_ARGUMENT, "token id %d (tokens[%lld]) is outside the vocabulary [0, %lld)",
                 tokens[i], (long long)i, (long long)V);
}

void check_room(const vt_session& s, int64_t n) {
    if (n > s.max_tokens - s.len)
        fail(VT_STATUS_INVALID_ARGUMENT,
             "KV cache full: %lld cached positions + %lld new tokens exceed the session's max_tokens %lld",
             (long long)s.len, (long long)n, (long long)s.max_tokens);
}

float* host_row(vt_session& s, int64_t floats) {
    if (s.logits.size() < size_t(floats)) s.logits.assign(size_t(floats), 0.0f);
    return s.logits.data();
}

// tokens[n] ran at the session's next positions: its length, ids and penalty history grow.
void note_inputs(vt_session& s, const int32_t* tokens, int64_t n) {
    s.len += n;
    s.ids.insert(s.ids.end(), tokens, tokens + n);
    s.history.add_inputs(tokens, n);
}

// The session holds its first n ids' positions, as if reset and prefilled with them.
void restart_at(vt_session& s, int64_t n) {
    s.ids.resize(size_t(n));
    s.step = 0;
    s.history.clear();
    s.history.add_inputs(s.ids.data(), n);
    s.len = n;
}

void note_choice(vt_session& s, int32_t token) {
    s.history.add_chosen(token);
    ++s.step;
}

// The one chooser. From one row of raw logits[V]: the session's penalties (on a copy), then
// argmax (sampling NULL or temperature 0) or vt_sample at the session's step. Records the
// choice in the history and advances the step.
int32_t choose_token(vt_session& s, const float* logits, const vt_sample_options* sampling) {
    const int64_t V = s.model->cfg.vocab_size;
    if (sampling && has_penalties(*sampling)) {
        std::copy(logits, logits + V, s.plogits.begin());
        apply_penalties(*sampling, s.history, s.plogits.data());
        logits = s.plogits.data();
    }
    int64_t tok;
    if (!sampling || sampling->temperature == 0.0f) tok = argmax(logits, V);
    else tok = sample(logits, V, *sampling, s.step);
    note_choice(s, int32_t(tok));
    return int32_t(tok);
}

// What the backend picks for the chooser, when it can do so more cheaply than returning the
// row: the argmax (greedy), or for sampling the token drawn on the device (draw_options and
// draw_step set for it) or else the top kMaxCandidates (every draw picks among them, so
// vt::sample over them gives the token the full row would). Penalties need the whole row.
Pick device_pick(vt_session& s, const vt_sample_options* sampling) {
    if (!s.backend_model->can_pick() || (sampling && has_penalties(*sampling))) return Pick::None;
    if (!sampling || sampling->temperature == 0.0f) return Pick::Argmax;
    if (!s.backend->can_draw()) return Pick::Top;
    s.backend->draw_options = sampling;
    s.backend->draw_step = s.step;
    return Pick::Draw;
}

// The chooser over a device pick (no penalties: device_pick said so).
int32_t choose_picked(vt_session& s, Pick pick, const vt_sample_options* sampling) {
    const Picked& p = s.picked;
    int32_t tok = p.argmax;  // Pick::Argmax and Pick::Draw
    if (pick == Pick::Top) tok = p.n == 0 ? 0 : p.id[sample(p.value, p.n, *sampling, s.step)];
    note_choice(s, tok);
    return tok;
}

// One validated decode step of one session.
void decode_step(vt_session& s, int32_t token, const vt_sample_options* sampling, int32_t* next_token,
                 float* logits) {
    const int64_t V = s.model->cfg.vocab_size;
    const Pick pick = next_token ? device_pick(s, sampling) : Pick::None;
    float* out = logits;
    if (!out && next_token && pick == Pick::None) out = host_row(s, V);
    s.backend->rope_seq_len = s.len + 1;
    s.backend->forward(&token, 1, s.len, out ? Logits::Last : Logits::None, out, pick, &s.picked);
    note_inputs(s, &token, 1);
    if (next_token) *next_token = pick != Pick::None ? choose_picked(s, pick, sampling) : choose_token(s, out, sampling);
}

}  // namespace

void BackendModel::decode_batch(BackendSession* const*, int64_t, const int32_t*, const int64_t*, float*) const {
    fail(VT_STATUS_INTERNAL, "decode_batch on a backend that runs sessions in turn");
}

std::unique_ptr<vt_session> new_session(const vt_model& m, int64_t max_tokens, const BackendModel* backend) {
    VT_CHECK_ARG(max_tokens >= 0, "max_tokens %lld is negative (0 = the model's max_seq_len %lld)",
                 (long long)max_tokens, (long long)m.max_seq_len);
    VT_CHECK_ARG(max_tokens <= m.max_seq_len, "max_tokens %lld exceeds the model's max_seq_len %lld",
                 (long long)max_tokens, (long long)m.max_seq_len);
    auto s = std::make_unique<vt_session>();
    s->model = &m;
    s->backend_model = backend ? backend : m.backend.get();
    s->max_tokens = max_tokens ? max_tokens : m.max_seq_len;
    s->history.init(m.cfg.vocab_size);
    s->plogits.assign(size_t(m.cfg.vocab_size), 0.0f);
    s->backend = s->backend_model->new_session(s->max_tokens);
    return s;
}

void reset_session(vt_session& s) {
    s.len = 0;
    s.step = 0;
    s.ids.clear();
    s.history.clear();
}

void copy_prefix(vt_session& dst, const vt_session& src, int64_t n) {
    VT_CHECK_ARG(&dst != &src, "dst and src are the same session");
    VT_CHECK_ARG(dst.model == src.model && dst.backend_model == src.backend_model,
                 "src belongs to a different model than dst");
    VT_CHECK_ARG(n >= 0 && n <= src.len, "n = %lld is outside [0, src length %lld]", (long long)n,
                 (long long)src.len);
    VT_CHECK_ARG(n <= dst.max_tokens, "n = %lld exceeds dst's max_tokens %lld", (long long)n,
                 (long long)dst.max_tokens);
    reset_session(dst);
    dst.ids.reserve(size_t(n));  // may throw: before the cache changes
    dst.backend->copy_prefix(*src.backend, n);  // throws: dst stays empty (len 0 above)
    dst.ids.assign(src.ids.begin(), src.ids.begin() + n);
    restart_at(dst, n);
}

void prefill(vt_session& s, const int32_t* tokens, int64_t n, const vt_sample_options* sampling, int32_t* next_token,
             float* logits, vt_logits_mode mode) {
    VT_CHECK_ARG(n >= 1, "prefill needs at least one token (n = %lld)", (long long)n);
    VT_CHECK_ARG(tokens != nullptr, "tokens is NULL");
    VT_CHECK_ARG(mode == VT_LOGITS_NONE || mode == VT_LOGITS_LAST || mode == VT_LOGITS_ALL,
                 "logits_mode %d is not a vt_logits_mode", int(mode));
    VT_CHECK_ARG(mode == VT_LOGITS_NONE || logits != nullptr, "logits is NULL but logits_mode asks for logits");
    if (next_token && sampling) check_sample_options(*sampling);
    check_room(s, n);  // first: an n larger than the cache is refused without reading tokens[n]
    check_array(tokens, n, sizeof(int32_t), "tokens");
    const int64_t V = s.model->cfg.vocab_size;
    if (mode != VT_LOGITS_NONE) check_array(logits, mode == VT_LOGITS_ALL ? n * V : V, sizeof(float), "logits");
    check_tokens(*s.model, tokens, n);

    // The device picks only when the caller wants no logits row it could choose from.
    const Pick pick = next_token && mode == VT_LOGITS_NONE ? device_pick(s, sampling) : Pick::None;
    float* last = mode == VT_LOGITS_LAST ? logits : nullptr;
    if (!last && next_token && mode == VT_LOGITS_NONE && pick == Pick::None) last = host_row(s, V);
    s.backend->reserve(s.len, s.len + n);
    s.backend->rope_seq_len = s.len + n;  // every chunk of a prefill: its whole length
    for (int64_t c0 = 0; c0 < n; c0 += kPassRows) {
        const int64_t m = std::min(kPassRows, n - c0);
        const bool final_chunk = c0 + m == n;
        if (mode == VT_LOGITS_ALL)
            s.backend->forward(tokens + c0, m, s.len + c0, Logits::All, logits + c0 * V, Pick::None, nullptr);
        else if (final_chunk)
            s.backend->forward(tokens + c0, m, s.len + c0, last ? Logits::Last : Logits::None, last, pick, &s.picked);
        else
            s.backend->forward(tokens + c0, m, s.len + c0, Logits::None, nullptr, Pick::None, nullptr);
    }
    note_inputs(s, tokens, n);
    if (!next_token) return;
    if (pick != Pick::None) *next_token = choose_picked(s, pick, sampling);
    else *next_token = choose_token(s, mode == VT_LOGITS_ALL ? logits + (n - 1) * V : last, sampling);
}

void decode(vt_session& s, int32_t token, const vt_sample_options* sampling, int32_t* next_token, float* logits) {
    if (next_token && sampling) check_sample_options(*sampling);
    check_room(s, 1);
    check_tokens(*s.model, &token, 1);
    if (logits) check_array(logits, s.model->cfg.vocab_size, sizeof(float), "logits");
    decode_step(s, token, sampling, next_token, logits);
}

void truncate(vt_session& s, int64_t n) {
    VT_CHECK_ARG(n >= 0 && n <= s.len, "n = %lld is outside [0, session length %lld]", (long long)n, (long long)s.len);
    restart_at(s, n);
}

int64_t verify(vt_session& s, const int32_t* tokens, int64_t n, const vt_sample_options* sampling,
               int32_t* out_tokens) {
    VT_CHECK_ARG(tokens != nullptr, "tokens is NULL");
    VT_CHECK_ARG(out_tokens != nullptr, "out_tokens is NULL");
    VT_CHECK_ARG(n >= 1 && n <= VT_MAX_VERIFY, "verify takes 1 to %d tokens (n = %lld)", VT_MAX_VERIFY,
                 (long long)n);
    if (sampling) check_sample_options(*sampling);
    check_room(s, n);
    check_array(tokens, n, sizeof(int32_t), "tokens");
    check_array(out_tokens, n, sizeof(int32_t), "out_tokens");
    check_tokens(*s.model, tokens, n);
    const int64_t V = s.model->cfg.vocab_size;
    float* rows = host_row(s, n * V);
    s.ids.reserve(s.ids.size() + size_t(n));  // may throw: before anything changes
    s.backend->reserve(s.len, s.len + n);
    s.backend->rope_seq_len = s.len + n;
    s.backend->forward(tokens, n, s.len, Logits::All, rows, Pick::None, nullptr);
    // Row i's pick sees the history a decode call at its position would: the inputs up to
    // tokens[i] (every earlier draft token was confirmed) and the picks before it.
    int64_t i = 0;
    for (;; ++i) {
        note_inputs(s, tokens + i, 1);
        out_tokens[i] = choose_token(s, rows + i * V, sampling);
        if (i + 1 == n || out_tokens[i] != tokens[i + 1]) break;
    }
    return i + 1;
}

void decode_batch(vt_session* const* sessions, int64_t n, const int32_t* tokens, const vt_sample_options* sampling,
                  int32_t* next_tokens, float* logits) {
    VT_CHECK_ARG(sessions != nullptr, "sessions is NULL");
    VT_CHECK_ARG(tokens != nullptr, "tokens is NULL");
    VT_CHECK_ARG(n >= 1 && n <= VT_MAX_BATCH, "batch size %lld is outside [1, %d]", (long long)n, VT_MAX_BATCH);
    check_array(sessions, n, sizeof(vt_session*), "sessions");
    check_array(tokens, n, sizeof(int32_t), "tokens");
    if (next_tokens) check_array(next_tokens, n, sizeof(int32_t), "next_tokens");
    for (int64_t i = 0; i < n; ++i) {
        VT_CHECK_ARG(sessions[i] != nullptr, "sessions[%lld] is NULL", (long long)i);
        VT_CHECK_ARG(sessions[i]->model == sessions[0]->model && sessions[i]->backend_model == sessions[0]->backend_model,
                     "sessions[%lld] belongs to a different model than sessions[0]", (long long)i);
        for (int64_t j = 0; j < i; ++j)
            VT_CHECK_ARG(sessions[j] != sessions[i], "sessions[%lld] and sessions[%lld] are the same session",
                         (long long)j, (long long)i);
        if (next_tokens && sampling) check_sample_options(sampling[i]);
        check_room(*sessions[i], 1);
    }
    check_tokens(*sessions[0]->model, tokens, n);
    const int64_t V = sessions[0]->model->cfg.vocab_size;
    if (logits) check_array(logits, n * V, sizeof(float), "logits");
    const BackendModel& B = *sessions[0]->backend_model;
    if (!B.batches()) {
        for (int64_t i = 0; i < n; ++i)
            decode_step(*sessions[i], tokens[i], sampling ? sampling + i : nullptr, next_tokens ? next_tokens + i : nullptr,
                        logits ? logits + i * V : nullptr);
        return;
    }
    BackendSession* bs[VT_MAX_BATCH];
    int64_t pos[VT_MAX_BATCH];
    for (int64_t i = 0; i < n; ++i) {
        bs[i] = sessions[i]->backend.get();
        pos[i] = sessions[i]->len;
    }
    float* out = logits;
    if (!out && next_tokens) out = host_row(*sessions[0], n * V);
    B.decode_batch(bs, n, tokens, pos, out);
    for (int64_t i = 0; i < n; ++i) {
        vt_session& si = *sessions[i];
        note_inputs(si, tokens + i, 1);
        if (next_tokens) next_tokens[i] = choose_token(si, out + i * V, sampling ? sampling + i : nullptr);
    }
}

}  // namespace vt
