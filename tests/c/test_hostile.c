/* C99 test: hostile arguments to every libvt entry point that takes a model, a session or a
 * length. Each call must return a status with a message and leave everything untouched;
 * the model must generate exactly as before afterwards. Run as
 *     test_hostile MODEL_DIR          (fuzz/data: a tiny Llama, vocab 8)
 * Prints "N passed, M failed"; exit status != 0 on any failure. Built and run by meson
 * (tests/c/meson.build), also under ASan + UBSan (tests/test_sanitizers.py), and by
 * tests/test_hostile_inputs.py against the installed library. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vt/vt.h"

#include "check.h"

/* A refusal: the expected status and a non-empty message. */
#define REFUSED(call, status)                                                                     \
    do {                                                                                          \
        vt_status st_ = (call);                                                                   \
        CHECK(st_ == (status) && vt_last_error()[0] != '\0', "%s gave %s, expected %s", #call,    \
              vt_status_name(st_), vt_status_name(status));                                       \
    } while (0)

enum { N_NEW = 6 };

static int generate(const vt_model* m, int32_t* out) {
    const int32_t prompt[3] = {1, 5, 3};
    int64_t n = 0;
    vt_generate_options g = vt_generate_default_options();
    g.max_new_tokens = N_NEW;
    g.stop_on_eos = 0;
    if (vt_generate(m, prompt, 3, &g, out, N_NEW, &n, NULL) != VT_OK) return 0;
    return n == N_NEW;
}

static void test_session_calls(vt_model* m, int64_t vocab, int64_t max_seq) {
    vt_session* s = NULL;
    vt_session* s2 = NULL;
    int32_t tok = -1;
    float logits[64];
    int32_t toks[3] = {1, 2, 3};

    REFUSED(vt_session_new(NULL, 0, &s), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_session_new(m, 0, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_session_new(m, -1, &s), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_session_new(m, INT64_MIN, &s), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_session_new(m, max_seq + 1, &s), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_session_new(m, INT64_MAX, &s), VT_STATUS_INVALID_ARGUMENT);
    CHECK(s == NULL, "no session is created on error");

    CHECK(vt_session_new(m, 4, &s) == VT_OK && s != NULL, "vt_session_new(4)");
    if (!s) return;
    /* prefill: lengths, ids, modes, room */
    REFUSED(vt_session_prefill(NULL, toks, 3, NULL, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_session_prefill(s, toks, 0, NULL, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_session_prefill(s, toks, -3, NULL, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_session_prefill(s, toks, INT64_MIN, NULL, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_session_prefill(s, NULL, 3, NULL, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
    {
        int32_t five[5] = {1, 2, 3, 4, 5};
        REFUSED(vt_session_prefill(s, five, 5, NULL, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
    }
    /* an n no array can have: refused on its size, tokens[3...] never read */
    REFUSED(vt_session_prefill(s, toks, INT64_MAX, NULL, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_session_prefill(s, toks, 3, NULL, &tok, NULL, VT_LOGITS_ALL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_session_prefill(s, toks, 3, NULL, &tok, logits, (vt_logits_mode)7), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_session_prefill(s, toks, 3, NULL, &tok, logits, (vt_logits_mode)-1), VT_STATUS_INVALID_ARGUMENT);
    {
        int32_t bad[3] = {1, (int32_t)vocab, 2};
        REFUSED(vt_session_prefill(s, bad, 3, NULL, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
        CHECK(strstr(vt_last_error(), "tokens[1]") != NULL, "the message names the position");
        bad[1] = -1;
        REFUSED(vt_session_prefill(s, bad, 3, NULL, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
        bad[1] = INT32_MIN;
        REFUSED(vt_session_prefill(s, bad, 3, NULL, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
        bad[1] = INT32_MAX;
        REFUSED(vt_session_prefill(s, bad, 3, NULL, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
    }
    {
        vt_sample_options o = vt_sample_default_options();
        o.temperature = -1.0f;
        REFUSED(vt_session_prefill(s, toks, 3, &o, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
        o = vt_sample_default_options();
        o.top_p = 0.0f;
        REFUSED(vt_session_prefill(s, toks, 3, &o, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
        o = vt_sample_default_options();
        o.top_k = -5;
        REFUSED(vt_session_prefill(s, toks, 3, &o, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
        o = vt_sample_default_options();
        o.repetition_penalty = 0.0f;
        REFUSED(vt_session_prefill(s, toks, 3, &o, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
        o = vt_sample_default_options();
        o.min_p = 2.0f;
        REFUSED(vt_session_prefill(s, toks, 3, &o, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
    }
    CHECK(vt_session_length(s) == 0 && tok == -1, "refused prefills append nothing and write nothing");
    CHECK(vt_session_length(NULL) == 0, "vt_session_length(NULL) is 0");

    /* decode: ids and room */
    CHECK(vt_session_prefill(s, toks, 3, NULL, &tok, NULL, VT_LOGITS_NONE) == VT_OK, "prefill 3 of 4");
    REFUSED(vt_session_decode(NULL, 1, NULL, &tok, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_session_decode(s, (int32_t)vocab, NULL, &tok, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_session_decode(s, -7, NULL, &tok, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_session_prefill(s, toks, 2, NULL, &tok, NULL, VT_LOGITS_NONE), VT_STATUS_INVALID_ARGUMENT);
    CHECK(vt_session_decode(s, tok, NULL, &tok, logits) == VT_OK, "decode into the last position");
    REFUSED(vt_session_decode(s, 1, NULL, &tok, NULL), VT_STATUS_INVALID_ARGUMENT);
    CHECK(vt_session_length(s) == 4, "a full cache stays full, nothing overwritten");

    /* decode_batch: sizes, duplicates, NULLs, a full session */
    CHECK(vt_session_new(m, 0, &s2) == VT_OK && s2 != NULL, "a second session");
    if (s2) {
        vt_session* both[2];
        vt_session* same[2];
        vt_session* with_null[2];
        int32_t in2[2] = {1, 2}, out2[2] = {-1, -1};
        both[0] = s2; both[1] = s;
        same[0] = s2; same[1] = s2;
        with_null[0] = s2; with_null[1] = NULL;
        CHECK(vt_session_prefill(s2, toks, 3, NULL, NULL, NULL, VT_LOGITS_NONE) == VT_OK, "prefill s2");
        REFUSED(vt_session_decode_batch(NULL, 1, in2, NULL, out2, NULL), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_session_decode_batch(both, 0, in2, NULL, out2, NULL), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_session_decode_batch(both, -1, in2, NULL, out2, NULL), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_session_decode_batch(both, VT_MAX_BATCH + 1, in2, NULL, out2, NULL), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_session_decode_batch(both, 2, NULL, NULL, out2, NULL), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_session_decode_batch(same, 2, in2, NULL, out2, NULL), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_session_decode_batch(with_null, 2, in2, NULL, out2, NULL), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_session_decode_batch(both, 2, in2, NULL, out2, NULL), VT_STATUS_INVALID_ARGUMENT); /* s full */
        in2[1] = (int32_t)vocab;
        REFUSED(vt_session_decode_batch(both, 1 + 0 * 2, in2 + 1, NULL, out2, NULL), VT_STATUS_INVALID_ARGUMENT);
        CHECK(out2[0] == -1 && out2[1] == -1 && vt_session_length(s2) == 3,
              "refused batches change no session and write nothing");
        /* copy_prefix: NULLs, n out of range, a session onto itself */
        REFUSED(vt_session_copy_prefix(NULL, s, 1), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_session_copy_prefix(s2, NULL, 1), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_session_copy_prefix(s2, s2, 1), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_session_copy_prefix(s2, s, -1), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_session_copy_prefix(s2, s, 5), VT_STATUS_INVALID_ARGUMENT); /* s holds 4 */
        CHECK(vt_session_length(s2) == 3, "refused copies change nothing");
        CHECK(vt_session_copy_prefix(s2, s, 2) == VT_OK && vt_session_length(s2) == 2, "copy 2 of s's 4 positions");
        CHECK(vt_session_decode(s2, 3, NULL, &tok, NULL) == VT_OK && vt_session_length(s2) == 3, "decode after a copy");
        /* verify / truncate: NULLs, n out of range, ids, room; refused calls change nothing */
        {
            int32_t vin[3] = {1, 2, 3}, vout[3] = {-1, -1, -1};
            int64_t nout = -1;
            REFUSED(vt_session_verify(NULL, vin, 3, NULL, vout, &nout), VT_STATUS_INVALID_ARGUMENT);
            REFUSED(vt_session_verify(s2, NULL, 3, NULL, vout, &nout), VT_STATUS_INVALID_ARGUMENT);
            REFUSED(vt_session_verify(s2, vin, 3, NULL, NULL, &nout), VT_STATUS_INVALID_ARGUMENT);
            REFUSED(vt_session_verify(s2, vin, 3, NULL, vout, NULL), VT_STATUS_INVALID_ARGUMENT);
            REFUSED(vt_session_verify(s2, vin, 0, NULL, vout, &nout), VT_STATUS_INVALID_ARGUMENT);
            REFUSED(vt_session_verify(s2, vin, -1, NULL, vout, &nout), VT_STATUS_INVALID_ARGUMENT);
            REFUSED(vt_session_verify(s2, vin, VT_MAX_VERIFY + 1, NULL, vout, &nout), VT_STATUS_INVALID_ARGUMENT);
            REFUSED(vt_session_verify(s2, vin, INT64_MAX, NULL, vout, &nout), VT_STATUS_INVALID_ARGUMENT);
            REFUSED(vt_session_verify(s, vin, 1, NULL, vout, &nout), VT_STATUS_INVALID_ARGUMENT); /* s full */
            vin[2] = (int32_t)vocab;
            REFUSED(vt_session_verify(s2, vin, 3, NULL, vout, &nout), VT_STATUS_INVALID_ARGUMENT);
            CHECK(strstr(vt_last_error(), "tokens[2]") != NULL, "the message names the position");
            vin[2] = 3;
            {
                vt_sample_options o = vt_sample_default_options();
                o.temperature = -1.0f;
                REFUSED(vt_session_verify(s2, vin, 3, &o, vout, &nout), VT_STATUS_INVALID_ARGUMENT);
            }
            CHECK(vt_session_length(s2) == 3 && vout[0] == -1 && nout == -1, "refused verifies change nothing");
            CHECK(vt_session_verify(s2, vin, 3, NULL, vout, &nout) == VT_OK && nout >= 1 && nout <= 3 &&
                      vt_session_length(s2) == 3 + nout,
                  "a verify keeps the inputs its choices confirmed");
            REFUSED(vt_session_truncate(NULL, 1), VT_STATUS_INVALID_ARGUMENT);
            REFUSED(vt_session_truncate(s2, -1), VT_STATUS_INVALID_ARGUMENT);
            REFUSED(vt_session_truncate(s2, vt_session_length(s2) + 1), VT_STATUS_INVALID_ARGUMENT);
            CHECK(vt_session_truncate(s2, 2) == VT_OK && vt_session_length(s2) == 2, "truncate to 2 positions");
            CHECK(vt_session_decode(s2, 3, NULL, &tok, NULL) == VT_OK && vt_session_length(s2) == 3,
                  "decode after a truncate");
        }
        vt_session_free(s2);
    }
    REFUSED(vt_session_reset(NULL), VT_STATUS_INVALID_ARGUMENT);
    CHECK(vt_session_reset(s) == VT_OK && vt_session_length(s) == 0, "reset after errors");
    vt_session_free(s);
    vt_session_free(NULL);
}

static void test_generate_calls(vt_model* m, int64_t vocab, int64_t max_seq) {
    const int32_t prompt[3] = {1, 5, 3};
    int32_t out[8];
    int64_t n = -1;
    vt_generate_options g = vt_generate_default_options();
    g.max_new_tokens = 4;
    REFUSED(vt_generate(NULL, prompt, 3, &g, out, 8, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_generate(m, NULL, 3, &g, out, 8, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_generate(m, prompt, 0, &g, out, 8, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_generate(m, prompt, -1, &g, out, 8, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_generate(m, prompt, INT64_MIN, &g, out, 8, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_generate(m, prompt, max_seq + 1, &g, out, 8, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_generate(m, prompt, 3, &g, NULL, 8, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_generate(m, prompt, 3, &g, out, 3, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_generate(m, prompt, 3, &g, out, -1, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_generate(m, prompt, 3, &g, out, 8, NULL, NULL), VT_STATUS_INVALID_ARGUMENT);
    g.max_new_tokens = -1;
    REFUSED(vt_generate(m, prompt, 3, &g, out, 8, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
    g.max_new_tokens = INT32_MIN;
    REFUSED(vt_generate(m, prompt, 3, &g, out, 8, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
    g.max_new_tokens = 4;
    {
        int32_t bad[3] = {1, (int32_t)vocab, 3};
        REFUSED(vt_generate(m, bad, 3, &g, out, 8, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
        bad[1] = -1;
        REFUSED(vt_generate(m, bad, 3, &g, out, 8, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
    }
    g.sampling.temperature = 1.0f / 0.0f;
    REFUSED(vt_generate(m, prompt, 3, &g, out, 8, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
    CHECK(n == -1, "n_out is untouched by refused calls");
    /* max_new_tokens 0: nothing generated, nothing written */
    g = vt_generate_default_options();
    g.max_new_tokens = 0;
    CHECK(vt_generate(m, prompt, 3, &g, NULL, 0, &n, NULL) == VT_OK && n == 0, "max_new_tokens 0");
    /* a huge max_new_tokens is bounded by the context: stops with "length" */
    {
        int32_t* big = (int32_t*)malloc(sizeof(int32_t) * (size_t)(max_seq + 8));
        vt_generate_stats st = VT_INFO_INIT(vt_generate_stats);
        g.max_new_tokens = (int32_t)(max_seq + 8);
        g.stop_on_eos = 0;
        CHECK(big && vt_generate(m, prompt, 3, &g, big, max_seq + 8, &n, &st) == VT_OK && n == max_seq - 3 + 1 &&
                  st.finish_reason == 0,
              "max_new_tokens beyond the context stops at the context (n = %lld)", (long long)n);
        free(big);
    }
}

static void test_load_options(const char* dir) {
    vt_model* m = NULL;
    vt_model_options o = vt_model_default_options();
    o.max_seq_len = -1;
    REFUSED(vt_model_load(dir, &o, &m), VT_STATUS_INVALID_ARGUMENT);
    o.max_seq_len = ((int64_t)1 << 24) + 1;
    REFUSED(vt_model_load(dir, &o, &m), VT_STATUS_INVALID_ARGUMENT);
    o.max_seq_len = INT64_MAX;
    REFUSED(vt_model_load(dir, &o, &m), VT_STATUS_INVALID_ARGUMENT);
    o = vt_model_default_options();
    o.num_layers = -1;
    REFUSED(vt_model_load(dir, &o, &m), VT_STATUS_INVALID_ARGUMENT);
    o.num_layers = 1000;
    REFUSED(vt_model_load(dir, &o, &m), VT_STATUS_INVALID_ARGUMENT);
    o = vt_model_default_options();
    o.weight_format = 99;
    REFUSED(vt_model_load(dir, &o, &m), VT_STATUS_INVALID_ARGUMENT);
    o.weight_format = VT_FORMAT_INT8_SPARSE24;
    REFUSED(vt_model_load(dir, &o, &m), VT_STATUS_INVALID_ARGUMENT);
    o = vt_model_default_options();
    o.block_size = 17;
    REFUSED(vt_model_load(dir, &o, &m), VT_STATUS_INVALID_ARGUMENT);
    o = vt_model_default_options();
    o.device = 42;
    REFUSED(vt_model_load(dir, &o, &m), VT_STATUS_INVALID_ARGUMENT);
    o.device = VT_DEVICE_CPU;
    o.device_index = -1;
    REFUSED(vt_model_load(dir, &o, &m), VT_STATUS_INVALID_ARGUMENT);
    o = vt_model_default_options();
    CHECK(o.kv_cache_dtype == VT_DTYPE_F16, "the default KV cache is f16");
    o.kv_cache_dtype = VT_DTYPE_BF16;
    REFUSED(vt_model_load(dir, &o, &m), VT_STATUS_INVALID_ARGUMENT);
    CHECK(strstr(vt_last_error(), "kv_cache_dtype") != NULL, "the error names kv_cache_dtype: %s", vt_last_error());
    o.kv_cache_dtype = -1;
    REFUSED(vt_model_load(dir, &o, &m), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_model_load("", NULL, &m), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_model_load(dir, NULL, NULL), VT_STATUS_INVALID_ARGUMENT);
    CHECK(m == NULL, "no model is created on error");
    /* the largest max_seq_len is accepted (memory grows with use, not with the limit) */
    o = vt_model_default_options();
    o.device = VT_DEVICE_CPU;
    o.block_size = 16;
    o.max_seq_len = (int64_t)1 << 24;
    CHECK(vt_model_load(dir, &o, &m) == VT_OK && m != NULL, "max_seq_len 2^24 loads");
    if (m) {
        vt_session* s = NULL;
        vt_model_info info = VT_INFO_INIT(vt_model_info);
        CHECK(vt_model_get_info(m, &info) == VT_OK && info.max_seq_len == ((int64_t)1 << 24), "info.max_seq_len");
        CHECK(info.kv_cache_dtype == VT_DTYPE_F16, "info.kv_cache_dtype %d", info.kv_cache_dtype);
        CHECK(vt_session_new(m, 0, &s) == VT_OK && s != NULL, "a session of 2^24 positions");
        vt_session_free(s);
        vt_model_free(m);
    }
    vt_model_free(NULL);
}

static void test_primitives(void) {
    float x[4] = {1, 2, 3, 4}, y[4];
    int64_t idx = -1;
    vt_sample_options so = vt_sample_default_options();
    vt_packed* p = NULL;
    vt_packed_info pi = VT_INFO_INIT(vt_packed_info);
    REFUSED(vt_argmax(x, 0, &idx), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_argmax(x, -4, &idx), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_softmax(x, -1, y), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_sample(x, 0, &so, 0, &idx), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_sample(NULL, 4, &so, 0, &idx), VT_STATUS_INVALID_ARGUMENT);
    CHECK(idx == -1, "refused sampling writes nothing");
    REFUSED(vt_prepack(x, VT_DTYPE_F32, 0, 4, NULL, &p), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_prepack(x, VT_DTYPE_F32, -2, 2, NULL, &p), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_prepack(x, VT_DTYPE_F32, 2, -2, NULL, &p), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_prepack(x, VT_DTYPE_F32, INT64_MAX, INT64_MAX, NULL, &p), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_prepack(x, (vt_dtype)77, 1, 4, NULL, &p), VT_STATUS_INVALID_ARGUMENT);
    CHECK(p == NULL, "no packed handle on error");
    REFUSED(vt_packed_get_info(NULL, &pi), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_linear(NULL, x, 1, NULL, NULL, y), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_convert(x, VT_DTYPE_F32, y, (vt_dtype)99, 4), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_convert(NULL, VT_DTYPE_F32, y, VT_DTYPE_F16, 4), VT_STATUS_INVALID_ARGUMENT);
    /* Element counts whose byte size wraps size_t (was a segfault or VT_OK with nothing
     * written), or that run past the end of the address space. */
    REFUSED(vt_convert(x, VT_DTYPE_F32, y, VT_DTYPE_F16, ((size_t)1 << 62) + 1), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_convert(x, VT_DTYPE_F64, y, VT_DTYPE_F32, SIZE_MAX / 8 + 2), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_convert(x, VT_DTYPE_F32, y, VT_DTYPE_F16, SIZE_MAX), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_convert(x, VT_DTYPE_F32, (void*)(UINTPTR_MAX - 16), VT_DTYPE_F32, 1024), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_transpose(x, (void*)(UINTPTR_MAX - 16), 32, 32, 4), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_transpose(x, y, SIZE_MAX, 2, 1), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_transpose(x, y, (size_t)1 << 40, (size_t)1 << 40, 4), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_transpose(x, y, 2, 2, 3), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_model_get_info(NULL, NULL), VT_STATUS_INVALID_ARGUMENT);
    vt_packed_free(NULL);
    CHECK(strcmp(vt_status_name((vt_status)12345), "") != 0, "vt_status_name of an unknown status");
}

/* Sizes, counts and pointers at every entry point that takes them (issue 20's audit): negative
 * and zero counts, element counts whose byte size wraps or whose array would run past the end
 * of the address space (pointers near UINTPTR_MAX stand for "an array that long cannot exist";
 * they are never dereferenced), NULL with a count > 0, and out-buffers. Each is a refusal with
 * a message, before anything is read or written. */
static void test_sizes(void) {
    float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, y[8], y2[8];
    float* const end = (float*)(UINTPTR_MAX - 3); /* 4 bytes before the end of memory */
    int64_t idx = -1;
    int32_t ids[2] = {0, 1};
    vt_sample_options so = vt_sample_default_options();
    vt_packed* p = NULL;
    vt_packed* p2 = NULL;
    vt_prepack_options po = vt_prepack_default_options();
    void* dptr = NULL;

    /* argmax / softmax / sample / logits_process */
    REFUSED(vt_argmax(NULL, 4, &idx), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_argmax(x, 4, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_argmax(x, INT64_MIN, &idx), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_argmax(x, INT64_MAX, &idx), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_argmax(end, 8, &idx), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_softmax(NULL, 4, y), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_softmax(x, 4, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_softmax(x, 0, y), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_softmax(x, INT64_MAX / 2, y), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_softmax(x, 8, end), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_sample(x, 4, &so, 0, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_sample(x, -1, &so, 0, &idx), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_sample(x, INT64_MAX, &so, 0, &idx), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_sample(end, 8, &so, 0, &idx), VT_STATUS_INVALID_ARGUMENT);
    CHECK(idx == -1, "refused argmax / sample calls write nothing");
    REFUSED(vt_logits_process(NULL, 4, &so, NULL, 0, NULL, 0, 0, y), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_logits_process(x, 4, &so, NULL, 0, NULL, 0, 0, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_logits_process(x, 0, &so, NULL, 0, NULL, 0, 0, y), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_logits_process(x, INT64_MAX, &so, NULL, 0, NULL, 0, 0, y), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_logits_process(x, 4, &so, NULL, 2, NULL, 0, VT_PROCESS_PENALTIES, y), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_logits_process(x, 4, &so, ids, -1, NULL, 0, VT_PROCESS_PENALTIES, y), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_logits_process(x, 4, &so, ids, INT64_MAX, NULL, 0, VT_PROCESS_PENALTIES, y), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_logits_process(x, 4, &so, (const int32_t*)end, 8, NULL, 0, VT_PROCESS_PENALTIES, y),
            VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_logits_process(x, 4, &so, NULL, 0, NULL, 1, VT_PROCESS_PENALTIES, y), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_logits_process(x, 4, &so, NULL, 0, ids, INT64_MIN, VT_PROCESS_PENALTIES, y), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_logits_process(x, 4, &so, NULL, 0, ids, INT64_MAX / 2, VT_PROCESS_PENALTIES, y),
            VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_logits_process(x, 4, &so, NULL, 0, NULL, 0, 1 << 20, y), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_logits_process(x, 8, &so, NULL, 0, NULL, 0, 0, end), VT_STATUS_INVALID_ARGUMENT);

    /* prepack: products of out x in that wrap int64 (2^32 x 2^32 = 0 mod 2^64), NULLs */
    REFUSED(vt_prepack(NULL, VT_DTYPE_F32, 2, 4, NULL, &p), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_prepack(x, VT_DTYPE_F32, 2, 4, NULL, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_prepack(x, VT_DTYPE_F32, (int64_t)1 << 32, (int64_t)1 << 32, NULL, &p), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_prepack(x, VT_DTYPE_F32, (int64_t)1 << 31, (int64_t)1 << 33, NULL, &p), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_prepack(x, VT_DTYPE_F32, INT64_MIN, INT64_MIN, NULL, &p), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_prepack(end, VT_DTYPE_F32, 2, 16, NULL, &p), VT_STATUS_INVALID_ARGUMENT);
    CHECK(p == NULL, "no packed handle from a refused prepack");

    /* linears on a real [2, 16] weight: m, x, y, bias sizes */
    {
        float w[32];
        int i;
        for (i = 0; i < 32; ++i) w[i] = (float)(i % 7) - 3.0f;
        po.block_size = 16;
        CHECK(vt_prepack(w, VT_DTYPE_F32, 2, 16, &po, &p) == VT_OK && p != NULL, "prepack [2, 16]");
        CHECK(vt_prepack(w, VT_DTYPE_F32, 2, 16, &po, &p2) == VT_OK && p2 != NULL, "prepack [2, 16] again");
    }
    if (p && p2) {
        float xin[48] = {0};
        REFUSED(vt_linear(p, NULL, 1, NULL, NULL, y), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_linear(p, xin, 1, NULL, NULL, NULL), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_linear(p, xin, 0, NULL, NULL, y), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_linear(p, xin, -1, NULL, NULL, y), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_linear(p, xin, INT64_MIN, NULL, NULL, y), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_linear(p, xin, INT64_MAX, NULL, NULL, y), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_linear(p, xin, (int64_t)1 << 40, NULL, NULL, y), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_linear(p, end, 1, NULL, NULL, y), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_linear(p, xin, 1, NULL, NULL, end), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_linear(p, xin, 1, end, NULL, y), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_linear(p, xin, 2, NULL, NULL, xin + 8), VT_STATUS_INVALID_ARGUMENT); /* y overlaps x */
        REFUSED(vt_linear_swiglu(p, p2, NULL, 1, NULL, NULL, NULL, y), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_linear_swiglu(p, p2, xin, INT64_MAX, NULL, NULL, NULL, y), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_linear_swiglu(p, p2, xin, 1, NULL, NULL, NULL, end), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_linear_swiglu(p, p2, xin, 1, end, NULL, NULL, y), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_linear_swiglu(p, p2, xin, 1, NULL, end, NULL, y), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_linear_swiglu(p, NULL, xin, 1, NULL, NULL, NULL, y), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_packed_unpack(p, NULL), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_packed_unpack(NULL, y2), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_packed_unpack(p, end), VT_STATUS_INVALID_ARGUMENT);
        {
            vt_packed_info pi = VT_INFO_INIT(vt_packed_info);
            REFUSED(vt_packed_get_info(p, NULL), VT_STATUS_INVALID_ARGUMENT);
            pi.struct_size = 2; /* smaller than its first field */
            REFUSED(vt_packed_get_info(p, &pi), VT_STATUS_INVALID_ARGUMENT);
        }
        /* device entry points with host weights / no device: refused, never run */
        CHECK(vt_linear_device(p, xin, 1, NULL, NULL, y, NULL) != VT_OK && vt_last_error()[0] != '\0',
              "vt_linear_device with a host weight is refused");
        CHECK(vt_linear_device(p, xin, INT64_MAX, NULL, NULL, y, NULL) != VT_OK, "vt_linear_device, m INT64_MAX");
        CHECK(vt_linear_swiglu_device(p, p2, xin, 1, NULL, NULL, NULL, y, NULL) != VT_OK,
              "vt_linear_swiglu_device with host weights is refused");
    }
    vt_packed_free(p);
    vt_packed_free(p2);

    /* device memory: NULLs and sizes are refused (or the device is unavailable), never used */
    REFUSED(vt_device_alloc(0, 16, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_device_alloc(-1, 16, &dptr), VT_STATUS_INVALID_ARGUMENT);
    CHECK(vt_device_alloc(0, SIZE_MAX, &dptr) != VT_OK && dptr == NULL, "vt_device_alloc(SIZE_MAX) fails");
    REFUSED(vt_device_copy(0, NULL, x, 16, VT_COPY_HOST_TO_DEVICE, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_device_copy(0, y, NULL, 16, VT_COPY_DEVICE_TO_HOST, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_device_copy(0, y, x, 16, 3, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_device_copy(-5, y, x, 16, VT_COPY_HOST_TO_DEVICE, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_device_copy(0, y, end, 64, VT_COPY_HOST_TO_DEVICE, NULL), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_device_copy(0, end, x, 64, VT_COPY_DEVICE_TO_HOST, NULL), VT_STATUS_INVALID_ARGUMENT);
    vt_device_free(0, NULL);
}

/* Model-level sizes: extra EOS lists, info structs, prefill / batch out-buffers. */
static void test_model_sizes(const char* dir, vt_model* m) {
    vt_model* m2 = NULL;
    vt_model_options o = vt_model_default_options();
    int32_t eos[2] = {1, 2};
    o.device = VT_DEVICE_CPU;
    o.block_size = 16;
    o.num_extra_eos = 2;
    o.extra_eos_ids = NULL;
    REFUSED(vt_model_load(dir, &o, &m2), VT_STATUS_INVALID_ARGUMENT);
    o.extra_eos_ids = eos;
    o.num_extra_eos = -1;
    REFUSED(vt_model_load(dir, &o, &m2), VT_STATUS_INVALID_ARGUMENT);
    o.num_extra_eos = INT32_MAX;
    REFUSED(vt_model_load(dir, &o, &m2), VT_STATUS_INVALID_ARGUMENT);
    o.num_extra_eos = 2;
    eos[1] = -3;
    REFUSED(vt_model_load(dir, &o, &m2), VT_STATUS_INVALID_ARGUMENT);
    o = vt_model_default_options();
    o.struct_size = 2;
    REFUSED(vt_model_load(dir, &o, &m2), VT_STATUS_INVALID_ARGUMENT);
    REFUSED(vt_model_load(NULL, NULL, &m2), VT_STATUS_INVALID_ARGUMENT);
    CHECK(m2 == NULL, "no model from refused loads");
    {
        vt_model_info info = VT_INFO_INIT(vt_model_info);
        REFUSED(vt_model_get_info(m, NULL), VT_STATUS_INVALID_ARGUMENT);
        info.struct_size = 0;
        REFUSED(vt_model_get_info(m, &info), VT_STATUS_INVALID_ARGUMENT);
    }
    {
        vt_session* s = NULL;
        int32_t toks[2] = {1, 2}, tok = -1;
        CHECK(vt_session_new(m, 8, &s) == VT_OK && s != NULL, "a session");
        if (s) {
            vt_session* one[1];
            float* const end = (float*)(UINTPTR_MAX - 3);
            one[0] = s;
            REFUSED(vt_session_prefill(s, (const int32_t*)end, 2, NULL, &tok, NULL, VT_LOGITS_NONE),
                    VT_STATUS_INVALID_ARGUMENT);
            REFUSED(vt_session_prefill(s, toks, 2, NULL, &tok, end, VT_LOGITS_ALL), VT_STATUS_INVALID_ARGUMENT);
            REFUSED(vt_session_prefill(s, toks, 2, NULL, &tok, end, VT_LOGITS_LAST), VT_STATUS_INVALID_ARGUMENT);
            REFUSED(vt_session_decode(s, 1, NULL, &tok, end), VT_STATUS_INVALID_ARGUMENT);
            REFUSED(vt_session_decode_batch(one, 1, toks, NULL, NULL, end), VT_STATUS_INVALID_ARGUMENT);
            REFUSED(vt_session_decode_batch(one, 1, (const int32_t*)end, NULL, NULL, NULL), VT_STATUS_INVALID_ARGUMENT);
            REFUSED(vt_session_decode_batch((vt_session* const*)end, 4, toks, NULL, NULL, NULL),
                    VT_STATUS_INVALID_ARGUMENT);
            CHECK(vt_session_length(s) == 0 && tok == -1, "refused calls append and write nothing");
            vt_session_free(s);
        }
    }
    {
        const int32_t prompt[3] = {1, 5, 3};
        int32_t out[8];
        int64_t n = -1;
        vt_generate_options g = vt_generate_default_options();
        g.max_new_tokens = 4;
        REFUSED(vt_generate(m, (const int32_t*)(UINTPTR_MAX - 7), 3, &g, out, 8, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_generate(m, prompt, 3, &g, (int32_t*)(UINTPTR_MAX - 7), 8, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
        REFUSED(vt_generate(m, prompt, 3, &g, out, INT64_MIN, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
        g.struct_size = 3;
        REFUSED(vt_generate(m, prompt, 3, &g, out, 8, &n, NULL), VT_STATUS_INVALID_ARGUMENT);
        CHECK(n == -1, "n_out untouched");
    }
}

int main(int argc, char** argv) {
    vt_model* m = NULL;
    vt_model_info info = VT_INFO_INIT(vt_model_info);
    int32_t before[N_NEW], after[N_NEW];
    vt_model_options o = vt_model_default_options();
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL_DIR\n", argv[0]);
        return 2;
    }
    o.device = VT_DEVICE_CPU;
    o.block_size = 16;
    if (vt_model_load(argv[1], &o, &m) != VT_OK) {
        printf("cannot load %s: %s\n0 passed, 1 failed\n", argv[1], vt_last_error());
        return 1;
    }
    CHECK(vt_model_get_info(m, &info) == VT_OK, "vt_model_get_info");
    CHECK(generate(m, before), "generate before");

    test_session_calls(m, info.vocab_size, info.max_seq_len);
    test_generate_calls(m, info.vocab_size, info.max_seq_len);
    test_load_options(argv[1]);
    test_primitives();
    test_sizes();
    test_model_sizes(argv[1], m);

    CHECK(generate(m, after) && memcmp(before, after, sizeof before) == 0,
          "the model generates exactly as before after all the refused calls");
    vt_model_free(m);
    return check_summary();
}
