/*
 * vt_generate — generate token ids with libvt from C.
 *
 *   vt_generate [--format F] MODEL_PATH [n_tokens] [token ids...]
 *                                  greedy generation, ids on stdout; F the weight format:
 *                                  auto (default), int8, fp8, fp8-channel, bf16, int4, int4-min,
 *                                  mxfp4
 *   vt_generate --self-test        builds a tiny random Llama checkpoint in a temp folder and
 *                                  checks the API
 *
 * MODEL_PATH is a folder (config.json + model.safetensors or a sharded set), a .safetensors
 * file or an index .json. Without token ids the prompt is the model's BOS token (or 0).
 * With --self-test and VT_TEST_MODEL set, that model is also loaded and run.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vt/vt.h"

/* ---- Normal mode ------------------------------------------------------------------- */

/* vt_format of a --format name, or -1. */
static int format_named(const char* name) {
    static const struct {
        const char* name;
        int format;
    } names[] = {{"auto", VT_FORMAT_AUTO},   {"int8", VT_FORMAT_INT8_BLOCKED}, {"fp8", VT_FORMAT_FP8_BLOCKED},
                 {"fp8-channel", VT_FORMAT_FP8_CHANNEL}, {"bf16", VT_FORMAT_BF16}, {"int4", VT_FORMAT_INT4_BLOCKED},
                 {"int4-min", VT_FORMAT_INT4_MIN_BLOCKED},
                 {"mxfp4", VT_FORMAT_MXFP4}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i)
        if (strcmp(name, names[i].name) == 0) return names[i].format;
    return -1;
}

static int run_generate(int argc, char** argv, int format) {
    const char* path = argv[1];
    int64_t n_tokens = argc > 2 ? atoll(argv[2]) : 16;
    if (n_tokens < 0 || n_tokens > 1000000) {
        fprintf(stderr, "n_tokens must be in [0, 1000000]\n");
        return 2;
    }
    vt_model* model = NULL;
    vt_model_options mopt = vt_model_default_options();
    mopt.weight_format = format;
    if (vt_model_load(path, &mopt, &model) != VT_OK) {
        fprintf(stderr, "error: %s\n", vt_last_error());
        return 1;
    }
    vt_model_info info = VT_INFO_INIT(vt_model_info);
    vt_model_get_info(model, &info);

    int64_t n_prompt = argc > 3 ? argc - 3 : 1;
    int32_t* prompt = malloc((size_t)n_prompt * sizeof *prompt);
    int32_t* out = malloc((size_t)(n_tokens > 0 ? n_tokens : 1) * sizeof *out);
    if (!prompt || !out) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    if (argc > 3) {
        for (int64_t i = 0; i < n_prompt; ++i) prompt[i] = (int32_t)atol(argv[3 + i]);
    } else {
        prompt[0] = info.bos_token_id >= 0 ? info.bos_token_id : 0;
    }

    vt_generate_options gopt = vt_generate_default_options();
    gopt.max_new_tokens = (int32_t)n_tokens;
    vt_generate_stats stats = VT_INFO_INIT(vt_generate_stats);
    int64_t n_out = 0;
    int rc = 0;
    if (vt_generate(model, prompt, n_prompt, &gopt, out, n_tokens, &n_out, &stats) != VT_OK) {
        fprintf(stderr, "error: %s\n", vt_last_error());
        rc = 1;
    } else {
        for (int64_t i = 0; i < n_out; ++i) printf(i ? " %d" : "%d", out[i]);
        printf("\n");
        fprintf(stderr, "%lld prompt tokens, %lld generated (%s); prefill %.1f ms, decode %.2f ms/token\n",
                (long long)stats.prompt_tokens, (long long)stats.generated_tokens,
                stats.finish_reason == 1 ? "eos" : "length", stats.prefill_ms,
                stats.generated_tokens > 1 ? stats.decode_ms / (double)(stats.generated_tokens - 1) : 0.0);
    }
    free(prompt);
    free(out);
    vt_model_free(model);
    return rc;
}

/* ---- Self-test: a tiny random checkpoint written here ------------------------------ */

enum { HID = 64, INTER = 96, LAYERS = 2, HEADS = 4, KV_HEADS = 2, HEAD_DIM = 16, VOCAB = 80 };

static int passed = 0, failed = 0;

static void check(int ok, const char* what) {
    if (ok) {
        ++passed;
    } else {
        ++failed;
        fprintf(stderr, "FAIL: %s (last error: %s)\n", what, vt_last_error());
    }
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static float rnd(float scale) { /* uniform in [-scale, scale) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return scale * ((float)(rng_state >> 40) / (float)(1ull << 24) * 2.0f - 1.0f);
}

typedef struct {
    char name[64];
    int64_t rows, cols; /* cols == 0: a vector of `rows` */
    int norm;
} tensor_spec;

static int write_file(const char* path, const void* data, size_t n) {
    FILE* f = fopen(path, "wb");
    if (!f) return 0;
    int ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

static int write_checkpoint(const char* dir) {
    char path[512];
    char config[1024];
    int n = snprintf(config, sizeof config,
                     "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", "
                     "\"hidden_size\": %d, \"intermediate_size\": %d, \"num_hidden_layers\": %d, "
                     "\"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"vocab_size\": %d, "
                     "\"max_position_embeddings\": 256, \"rms_norm_eps\": 1e-5, \"rope_theta\": 10000.0, "
                     "\"tie_word_embeddings\": false, \"bos_token_id\": 1, \"eos_token_id\": 2, "
                     "\"hidden_act\": \"silu\"}\n",
                     HID, INTER, LAYERS, HEADS, KV_HEADS, VOCAB);
    snprintf(path, sizeof path, "%s/config.json", dir);
    if (!write_file(path, config, (size_t)n)) return 0;

    tensor_spec specs[3 + 9 * LAYERS];
    int nt = 0;
    const char* names[9] = {"self_attn.q_proj.weight", "self_attn.k_proj.weight", "self_attn.v_proj.weight",
                            "self_attn.o_proj.weight", "mlp.gate_proj.weight",    "mlp.up_proj.weight",
                            "mlp.down_proj.weight",    "input_layernorm.weight",  "post_attention_layernorm.weight"};
    const int64_t shapes[9][2] = {{HEADS * HEAD_DIM, HID}, {KV_HEADS * HEAD_DIM, HID}, {KV_HEADS * HEAD_DIM, HID},
                                  {HID, HEADS * HEAD_DIM}, {INTER, HID},               {INTER, HID},
                                  {HID, INTER},            {HID, 0},                   {HID, 0}};
    snprintf(specs[nt].name, 64, "model.embed_tokens.weight");
    specs[nt].rows = VOCAB; specs[nt].cols = HID; specs[nt].norm = 0; ++nt;
    for (int l = 0; l < LAYERS; ++l) {
        for (int k = 0; k < 9; ++k) {
            snprintf(specs[nt].name, 64, "model.layers.%d.%s", l, names[k]);
            specs[nt].rows = shapes[k][0];
            specs[nt].cols = shapes[k][1];
            specs[nt].norm = k >= 7;
            ++nt;
        }
    }
    snprintf(specs[nt].name, 64, "model.norm.weight");
    specs[nt].rows = HID; specs[nt].cols = 0; specs[nt].norm = 1; ++nt;
    snprintf(specs[nt].name, 64, "lm_head.weight");
    specs[nt].rows = VOCAB; specs[nt].cols = HID; specs[nt].norm = 0; ++nt;

    /* Header JSON, padded with spaces to a multiple of 8 bytes. */
    size_t cap = 256 + (size_t)nt * 160, len = 0, off = 0;
    char* hdr = malloc(cap);
    if (!hdr) return 0;
    len += (size_t)snprintf(hdr + len, cap - len, "{");
    for (int i = 0; i < nt; ++i) {
        size_t bytes = (size_t)(specs[i].rows * (specs[i].cols ? specs[i].cols : 1)) * 4;
        if (specs[i].cols)
            len += (size_t)snprintf(hdr + len, cap - len, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld,%lld],"
                                    "\"data_offsets\":[%zu,%zu]}", i ? "," : "", specs[i].name,
                                    (long long)specs[i].rows, (long long)specs[i].cols, off, off + bytes);
        else
            len += (size_t)snprintf(hdr + len, cap - len, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[%lld],"
                                    "\"data_offsets\":[%zu,%zu]}", i ? "," : "", specs[i].name,
                                    (long long)specs[i].rows, off, off + bytes);
        off += bytes;
    }
    len += (size_t)snprintf(hdr + len, cap - len, "}");
    while (len % 8) hdr[len++] = ' ';

    size_t total = 8 + len + off;
    unsigned char* file = malloc(total);
    if (!file) {
        free(hdr);
        return 0;
    }
    for (int k = 0; k < 8; ++k) file[k] = (unsigned char)((uint64_t)len >> (8 * k));
    memcpy(file + 8, hdr, len);
    float* data = (float*)(void*)(file + 8 + len);
    size_t at = 0;
    for (int i = 0; i < nt; ++i) {
        int64_t count = specs[i].rows * (specs[i].cols ? specs[i].cols : 1);
        for (int64_t j = 0; j < count; ++j) {
            float v;
            if (specs[i].norm) v = 1.0f + rnd(0.1f);
            else v = rnd(specs[i].cols == HID ? 0.125f : 0.1f);
            memcpy(&data[at++], &v, 4);
        }
    }
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    int ok = write_file(path, file, total);
    free(hdr);
    free(file);
    return ok;
}

static int remove_checkpoint(const char* dir) {
    char path[512];
    snprintf(path, sizeof path, "%s/config.json", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    remove(path);
    return rmdir(dir) == 0;
}

static int same_tokens(const int32_t* a, const int32_t* b, int64_t n) {
    for (int64_t i = 0; i < n; ++i)
        if (a[i] != b[i]) return 0;
    return 1;
}

static void test_model(vt_model* model, int64_t vocab) {
    enum { N = 8 };
    const int32_t prompt[4] = {1, 17, 42, 5};
    int32_t a[N], b[N], c[N];
    int64_t na = 0, nb = 0;
    vt_generate_options g = vt_generate_default_options();
    g.max_new_tokens = N;
    g.stop_on_eos = 0;
    vt_generate_stats st = VT_INFO_INIT(vt_generate_stats);
    check(vt_generate(model, prompt, 4, &g, a, N, &na, &st) == VT_OK, "vt_generate");
    check(na == N && st.generated_tokens == N && st.prompt_tokens == 4, "vt_generate produced max_new_tokens");
    check(vt_generate(model, prompt, 4, &g, b, N, &nb, NULL) == VT_OK, "vt_generate (again)");
    check(na == nb && same_tokens(a, b, na), "greedy generation is reproducible");
    int in_vocab = 1;
    for (int64_t i = 0; i < na; ++i) in_vocab = in_vocab && a[i] >= 0 && a[i] < vocab;
    check(in_vocab, "generated ids are inside the vocabulary");

    /* A session: prefill + decode must give what vt_generate gave. */
    vt_session* s = NULL;
    check(vt_session_new(model, 0, &s) == VT_OK && s != NULL, "vt_session_new");
    if (s) {
        int32_t tok = -1;
        check(vt_session_prefill(s, prompt, 4, NULL, &tok, NULL, VT_LOGITS_NONE) == VT_OK, "vt_session_prefill");
        c[0] = tok;
        for (int i = 1; i < N; ++i) {
            check(vt_session_decode(s, c[i - 1], NULL, &tok, NULL) == VT_OK, "vt_session_decode");
            c[i] = tok;
        }
        check(same_tokens(a, c, N), "session prefill + decode equals vt_generate");
        check(vt_session_length(s) == 4 + N - 1, "session length counts prompt and fed tokens");
        /* Errors leave the session usable. */
        check(vt_session_decode(s, (int32_t)vocab, NULL, &tok, NULL) == VT_STATUS_INVALID_ARGUMENT,
              "a token id >= vocab is refused");
        check(strlen(vt_last_error()) > 0, "the refusal has a message");
        check(vt_session_length(s) == 4 + N - 1, "a refused token is not appended");
        check(vt_session_reset(s) == VT_OK && vt_session_length(s) == 0, "vt_session_reset");
        vt_session_free(s);
    }
}

static int self_test(void) {
    const char* tmp = getenv("TMPDIR");
    char dir[256];
    snprintf(dir, sizeof dir, "%s/vt_selftest_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "cannot create a temp folder\n");
        return 1;
    }
    check(write_checkpoint(dir), "write the tiny checkpoint");

    vt_model* model = NULL;
    check(vt_model_load(dir, NULL, &model) == VT_OK && model != NULL, "vt_model_load (int8)");
    if (model) {
        vt_model_info info = VT_INFO_INIT(vt_model_info);
        check(vt_model_get_info(model, &info) == VT_OK, "vt_model_get_info");
        check(info.hidden_size == HID && info.num_layers == LAYERS && info.num_heads == HEADS &&
                  info.num_kv_heads == KV_HEADS && info.head_dim == HEAD_DIM && info.vocab_size == VOCAB &&
                  info.num_eos == 1 && info.eos_token_ids[0] == 2 && info.bos_token_id == 1 &&
                  info.weight_format == VT_FORMAT_INT8_BLOCKED && info.max_seq_len == 256,
              "model info matches config.json");
        test_model(model, VOCAB);
        vt_model_free(model);
    }
    vt_model_options bf16 = vt_model_default_options();
    bf16.weight_format = VT_FORMAT_BF16;
    model = NULL;
    check(vt_model_load(dir, &bf16, &model) == VT_OK && model != NULL, "vt_model_load (bf16)");
    if (model) {
        test_model(model, VOCAB);
        vt_model_free(model);
    }

    /* Error paths: a clear status and message, nothing created. */
    char missing[320];
    snprintf(missing, sizeof missing, "%s/no_such_model", dir);
    model = NULL;
    check(vt_model_load(missing, NULL, &model) == VT_STATUS_FILE_NOT_FOUND && model == NULL,
          "a missing folder gives VT_STATUS_FILE_NOT_FOUND");
    check(strstr(vt_last_error(), "no_such_model") != NULL, "the message names the path");
    check(vt_model_load(NULL, NULL, &model) == VT_STATUS_INVALID_ARGUMENT, "a NULL path is refused");

    check(remove_checkpoint(dir), "clean up the temp folder");

    const char* extra = getenv("VT_TEST_MODEL");
    if (extra && *extra) {
        model = NULL;
        check(vt_model_load(extra, NULL, &model) == VT_OK, "vt_model_load(VT_TEST_MODEL)");
        if (model) {
            vt_model_info info = VT_INFO_INIT(vt_model_info);
            vt_model_get_info(model, &info);
            test_model(model, info.vocab_size);
            vt_model_free(model);
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

int main(int argc, char** argv) {
    if (argc == 2 && strcmp(argv[1], "--self-test") == 0) return self_test();
    int format = VT_FORMAT_AUTO;
    if (argc >= 3 && strcmp(argv[1], "--format") == 0) {
        format = format_named(argv[2]);
        if (format < 0) {
            fprintf(stderr, "error: --format %s is not auto, int8, fp8, fp8-channel, bf16, int4, int4-min or mxfp4\n",
                    argv[2]);
            return 2;
        }
        argv[2] = argv[0];  /* the rest as if the options were not there */
        argc -= 2;
        argv += 2;
    }
    if (argc < 2 || argv[1][0] == '-') {
        fprintf(stderr, "usage: %s [--format F] MODEL_PATH [n_tokens] [token ids...]\n       %s --self-test\n",
                argv[0], argv[0]);
        return 2;
    }
    return run_generate(argc, argv, format);
}
