// Shared helpers of the libvt fuzz targets (fuzz_safetensors.cpp, fuzz_config.cpp).
//
// The targets use only the public C API (vt.h): the input is written to a file in a private
// temp folder and loaded with vt_model_load, exactly as a downloaded checkpoint would be.
// They build two ways:
//   * with clang's libFuzzer (tools/fuzz.sh: -fsanitize=fuzzer,address,undefined, libvt's
//     sources compiled in with coverage instrumentation), for coverage-guided fuzzing;
//   * with any C++17 compiler and fuzz/replay_main.cpp as main(), linked to libvt.so
//     (tests/c/meson.build), to replay the corpus and every past crasher — under ASan +
//     UBSan in tests/test_sanitizers.py.
// The folder fuzz/data/ (a tiny Llama: config.json + model.safetensors) is found through
// $VT_FUZZ_DATA, else the VT_FUZZ_DATA_DIR macro given at build time.
#pragma once

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <string>

#include "vt/vt.h"

namespace fuzz {

inline std::string data_dir() {
    const char* env = getenv("VT_FUZZ_DATA");
    if (env && *env) return env;
#ifdef VT_FUZZ_DATA_DIR
    return VT_FUZZ_DATA_DIR;
#else
    return "fuzz/data";
#endif
}

inline bool write_file(const std::string& path, const uint8_t* data, size_t n) {
    FILE* f = fopen(path.c_str(), "wb");
    if (!f) return false;
    bool ok = n == 0 || fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

inline bool read_file(const std::string& path, std::string* out) {
    FILE* f = fopen(path.c_str(), "rb");
    if (!f) return false;
    char buf[65536];
    size_t r;
    out->clear();
    while ((r = fread(buf, 1, sizeof buf, f)) > 0) out->append(buf, r);
    fclose(f);
    return true;
}

// A private temp folder, removed at exit (files named in `names`).
struct TempDir {
    std::string path;
    TempDir() {
        const char* base = getenv("TMPDIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/vt_fuzz_XXXXXX";
        char* p = mkdtemp(&tmpl[0]);
        if (!p) {
            fprintf(stderr, "fuzz: cannot create a temp folder\n");
            abort();
        }
        path = p;
    }
    std::string file(const char* name) const { return path + "/" + name; }
    ~TempDir() {
        for (const char* n : {"model.safetensors", "config.json", "generation_config.json"}) unlink(file(n).c_str());
        rmdir(path.c_str());
    }
};

inline void copy_or_die(const std::string& from, const std::string& to) {
    std::string s;
    if (!read_file(from, &s) || !write_file(to, reinterpret_cast<const uint8_t*>(s.data()), s.size())) {
        fprintf(stderr, "fuzz: cannot copy %s to %s (set VT_FUZZ_DATA to the fuzz/data folder)\n", from.c_str(),
                to.c_str());
        abort();
    }
}

// Every status must come with a message; VT_STATUS_INTERNAL is a bug in libvt.
inline void check_status(vt_status st, const char* what) {
    if (st == VT_OK) return;
    if (st == VT_STATUS_INTERNAL || vt_last_error()[0] == '\0') {
        fprintf(stderr, "fuzz: %s returned %s with message \"%s\"\n", what, vt_status_name(st), vt_last_error());
        abort();
    }
}

// Loads `dir` with `options`; when that works, runs what a user would run on it: info, a
// short greedy generation, a sampled one, and a prefill that asks for every logit.
inline void load_and_run(const std::string& dir, const vt_model_options& options) {
    vt_model* m = nullptr;
    vt_status st = vt_model_load(dir.c_str(), &options, &m);
    check_status(st, "vt_model_load");
    if (st != VT_OK) {
        if (m) abort();  // outputs are untouched on error
        return;
    }
    vt_model_info info = VT_INFO_INIT(vt_model_info);
    check_status(vt_model_get_info(m, &info), "vt_model_get_info");
    const int32_t last = int32_t(info.vocab_size - 1);
    const int32_t prompt[3] = {0, last, last / 2};
    int32_t out[4];
    int64_t n_out = 0;
    vt_generate_options g = vt_generate_default_options();
    g.max_new_tokens = 4;
    st = vt_generate(m, prompt, 3, &g, out, 4, &n_out, nullptr);
    check_status(st, "vt_generate");
    for (int64_t i = 0; st == VT_OK && i < n_out; ++i)
        if (out[i] < 0 || out[i] > last) abort();  // a token outside the vocabulary
    g.sampling.temperature = 0.8f;
    g.sampling.top_p = 0.9f;
    g.sampling.repetition_penalty = 1.3f;
    check_status(vt_generate(m, prompt, 3, &g, out, 4, &n_out, nullptr), "vt_generate (sampled)");
    vt_session* s = nullptr;
    st = vt_session_new(m, 0, &s);
    check_status(st, "vt_session_new");
    if (st == VT_OK) {
        float* logits = static_cast<float*>(malloc(sizeof(float) * 3 * size_t(info.vocab_size)));
        if (logits) check_status(vt_session_prefill(s, prompt, 3, nullptr, nullptr, logits, VT_LOGITS_ALL), "prefill");
        free(logits);
        vt_session_free(s);
    }
    vt_model_free(m);
}

}  // namespace fuzz
