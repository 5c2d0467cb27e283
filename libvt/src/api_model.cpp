// C ABI: models, sessions and one-call generation (vt.h). Every entry point goes through
// vt::guard, so no exception crosses the boundary.
#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <vector>

#include "common.h"
#include "session.h"
#include "model.h"
#include "sampling.h"

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// vt_generate_options: the fields before `sampling` as read_options does, then `sampling` by
// its own struct_size (an older caller's vt_sample_options is shorter).
vt_generate_options read_generate_options(const vt_generate_options* p) {
    vt_generate_options o = vt_generate_default_options();
    if (!p) return o;
    const uint32_t size = p->struct_size;
    vt::check_struct_size(size, sizeof o, "vt_generate options", false);
    const size_t head = offsetof(vt_generate_options, sampling);
    std::memcpy(static_cast<void*>(&o), p, size < head ? size : head);
    o.struct_size = uint32_t(sizeof o);
    if (size > head) {
        VT_CHECK_ARG(p->sampling.struct_size <= size - head,
                     "vt_generate options: sampling.struct_size %u does not fit in struct_size %u",
                     p->sampling.struct_size, size);
        o.sampling = vt::read_options(&p->sampling, vt_sample_default_options(), "vt_generate options.sampling");
    }
    return o;
}

}  // namespace

extern "C" {

VT_API vt_model_options vt_model_default_options(void) {
    vt_model_options o;
    o.struct_size = uint32_t(sizeof o);
    o.weight_format = VT_FORMAT_INT8_BLOCKED;
    o.block_size = 0;
    o.num_layers = 0;
    o.device = VT_DEVICE_AUTO;
    o.device_index = 0;
    o.max_seq_len = 0;
    o.progress = nullptr;
    o.progress_user = nullptr;
    o.extra_eos_ids = nullptr;
    o.num_extra_eos = 0;
    o.packed_cache_dir = nullptr;
    o.kv_cache_dtype = VT_DTYPE_F16;
    return o;
}

VT_API vt_status vt_model_load(const char* path, const vt_model_options* options, vt_model** out) {
    return vt::guard([&] {
        VT_CHECK_ARG(path != nullptr, "path is NULL");
        VT_CHECK_ARG(out != nullptr, "out is NULL");
        const vt_model_options opt = vt::read_options(options, vt_model_default_options(), "vt_model_load options");
        *out = vt::load_model(path, opt).release();
    });
}

VT_API void vt_model_free(vt_model* model) { delete model; }

VT_API vt_status vt_model_get_info(const vt_model* model, vt_model_info* info) {
    return vt::guard([&] {
        VT_CHECK_ARG(model != nullptr, "model is NULL");
        VT_CHECK_ARG(info != nullptr, "info is NULL");
        vt_model_info i;
        vt::get_model_info(*model, &i);
        vt::write_info(i, info, "vt_model_get_info info");
    });
}

VT_API vt_status vt_session_new(const vt_model* model, int64_t max_tokens, vt_session** out) {
    return vt::guard([&] {
        VT_CHECK_ARG(model != nullptr, "model is NULL");
        VT_CHECK_ARG(out != nullptr, "out is NULL");
        *out = vt::new_session(*model, max_tokens).release();
    });
}

// Frees only the session's own memory (it never touches the model).
VT_API void vt_session_free(vt_session* session) { delete session; }

VT_API vt_status vt_session_reset(vt_session* session) {
    return vt::guard([&] {
        VT_CHECK_ARG(session != nullptr, "session is NULL");
        vt::reset_session(*session);
    });
}

VT_API vt_status vt_session_copy_prefix(vt_session* dst, const vt_session* src, int64_t n) {
    return vt::guard([&] {
        VT_CHECK_ARG(dst != nullptr, "dst is NULL");
        VT_CHECK_ARG(src != nullptr, "src is NULL");
        vt::copy_prefix(*dst, *src, n);
    });
}

VT_API int64_t vt_session_length(const vt_session* session) { return session ? session->len : 0; }

VT_API vt_status vt_session_prefill(vt_session* session, const int32_t* tokens, int64_t n,
                                    const vt_sample_options* sampling, int32_t* next_token, float* logits,
                                    vt_logits_mode logits_mode) {
    return vt::guard([&] {
        VT_CHECK_ARG(session != nullptr, "session is NULL");
        const int mode = vt::enum_arg(logits_mode);
        VT_CHECK_ARG(mode == VT_LOGITS_NONE || mode == VT_LOGITS_LAST || mode == VT_LOGITS_ALL,
                     "logits_mode %d is not a vt_logits_mode", mode);
        const vt_sample_options so = vt::read_options(sampling, vt_sample_default_options(), "sampling options");
        vt::prefill(*session, tokens, n, sampling ? &so : nullptr, next_token, logits,
                    static_cast<vt_logits_mode>(mode));
    });
}

VT_API vt_status vt_session_decode(vt_session* session, int32_t token, const vt_sample_options* sampling,
                                   int32_t* next_token, float* logits) {
    return vt::guard([&] {
        VT_CHECK_ARG(session != nullptr, "session is NULL");
        const vt_sample_options so = vt::read_options(sampling, vt_sample_default_options(), "sampling options");
        vt::decode(*session, token, sampling ? &so : nullptr, next_token, logits);
    });
}

VT_API vt_status vt_session_truncate(vt_session* session, int64_t n) {
    return vt::guard([&] {
        VT_CHECK_ARG(session != nullptr, "session is NULL");
        vt::truncate(*session, n);
    });
}

VT_API vt_status vt_session_verify(vt_session* session, const int32_t* tokens, int64_t n,
                                   const vt_sample_options* sampling, int32_t* out_tokens, int64_t* n_out) {
    return vt::guard([&] {
        VT_CHECK_ARG(session != nullptr, "session is NULL");
        VT_CHECK_ARG(n_out != nullptr, "n_out is NULL");
        const vt_sample_options so = vt::read_options(sampling, vt_sample_default_options(), "sampling options");
        *n_out = vt::verify(*session, tokens, n, sampling ? &so : nullptr, out_tokens);
    });
}

VT_API vt_status vt_session_decode_batch(vt_session* const* sessions, int64_t n, const int32_t* tokens,
                                         const vt_sample_options* sampling, int32_t* next_tokens, float* logits) {
    return vt::guard([&] {
        // sampling[n]: elements sampling[0].struct_size bytes apart (a caller's older struct).
        std::vector<vt_sample_options> so;
        if (sampling) {
            VT_CHECK_ARG(n >= 1 && n <= VT_MAX_BATCH, "batch size %lld is outside [1, %d]", (long long)n, VT_MAX_BATCH);
            const uint32_t stride = sampling->struct_size;
            vt::check_struct_size(stride, sizeof(vt_sample_options), "sampling[0]", false);
            for (int64_t i = 0; i < n; ++i) {
                const auto* e = reinterpret_cast<const vt_sample_options*>(reinterpret_cast<const char*>(sampling) +
                                                                           size_t(i) * stride);
                VT_CHECK_ARG(e->struct_size == stride, "sampling[%lld].struct_size %u differs from sampling[0]'s %u",
                             (long long)i, e->struct_size, stride);
                so.push_back(vt::read_options(e, vt_sample_default_options(), "sampling options"));
            }
        }
        vt::decode_batch(sessions, n, tokens, sampling ? so.data() : nullptr, next_tokens, logits);
    });
}

VT_API vt_generate_options vt_generate_default_options(void) {
    vt_generate_options o;
    o.struct_size = uint32_t(sizeof o);
    o.max_new_tokens = 50;
    o.stop_on_eos = 1;
    o.sampling = vt_sample_default_options();
    return o;
}

VT_API vt_status vt_generate(const vt_model* model, const int32_t* prompt, int64_t n_prompt,
                             const vt_generate_options* options, int32_t* out_tokens, int64_t out_capacity,
                             int64_t* n_out, vt_generate_stats* stats) {
    return vt::guard([&] {
        VT_CHECK_ARG(model != nullptr, "model is NULL");
        VT_CHECK_ARG(prompt != nullptr || n_prompt == 0, "prompt is NULL");
        VT_CHECK_ARG(n_out != nullptr, "n_out is NULL");
        const vt_generate_options opt = read_generate_options(options);
        VT_CHECK_ARG(opt.max_new_tokens >= 0, "max_new_tokens %d is negative", opt.max_new_tokens);
        VT_CHECK_ARG(n_prompt >= 1, "the prompt is empty (n_prompt = %lld): give at least one token",
                     (long long)n_prompt);
        VT_CHECK_ARG(out_tokens != nullptr || opt.max_new_tokens == 0, "out_tokens is NULL");
        vt::check_sample_options(opt.sampling);
        const int64_t max_seq = model->max_seq_len;
        VT_CHECK_ARG(n_prompt <= max_seq, "the prompt has %lld tokens, more than the model's max_seq_len %lld",
                     (long long)n_prompt, (long long)max_seq);
        // At most max_seq - n_prompt + 1 tokens can come (the context stops generation), so a
        // huge max_new_tokens needs no huge buffer.
        const int64_t can_make = std::min<int64_t>(opt.max_new_tokens, max_seq - n_prompt + 1);
        vt::check_array(prompt, n_prompt, sizeof(int32_t), "prompt");
        if (can_make > 0) vt::check_array(out_tokens, can_make, sizeof(int32_t), "out_tokens");
        VT_CHECK_ARG(out_capacity >= can_make,
                     "out_capacity %lld is less than the %lld tokens this call can generate (max_new_tokens %d, "
                     "context room %lld)", (long long)out_capacity, (long long)can_make, opt.max_new_tokens,
                     (long long)(max_seq - n_prompt + 1));

        if (stats) vt::check_info(stats, "vt_generate stats");
        vt_generate_stats st = {};
        st.struct_size = uint32_t(sizeof st);
        st.prompt_tokens = n_prompt;
        int64_t produced = 0;
        if (opt.max_new_tokens > 0) {
            // The last generated token is never fed back: prompt + max_new - 1 positions. At
            // the context limit generation stops early with finish_reason "length".
            const int64_t want = n_prompt + std::max<int64_t>(opt.max_new_tokens - 1, 0);
            std::unique_ptr<vt_session> s = vt::new_session(*model, std::min(want, max_seq));
            const auto& eos = model->cfg.eos_token_ids;
            auto is_eos = [&](int32_t t) { return std::find(eos.begin(), eos.end(), t) != eos.end(); };

            auto t0 = std::chrono::steady_clock::now();
            int32_t tok = 0;
            vt::prefill(*s, prompt, n_prompt, &opt.sampling, &tok, nullptr, VT_LOGITS_NONE);
            st.prefill_ms = ms_since(t0);
            out_tokens[produced++] = tok;
            auto t1 = std::chrono::steady_clock::now();
            bool stopped = opt.stop_on_eos && is_eos(tok);
            while (!stopped && produced < opt.max_new_tokens && s->len < s->max_tokens) {
                vt::decode(*s, tok, &opt.sampling, &tok, nullptr);
                out_tokens[produced++] = tok;
                stopped = opt.stop_on_eos && is_eos(tok);
            }
            st.decode_ms = ms_since(t1);
            st.finish_reason = stopped ? 1 : 0;
        }
        st.generated_tokens = produced;
        *n_out = produced;
        if (stats) vt::write_info(st, stats, "vt_generate stats");
    });
}

}  // extern "C"
