// Fuzz target: config.json and generation_config.json as vt_model_load reads them (the strict
// JSON parser, every field's type and range checks, rope scaling, EOS lists, the resolution
// of the config against the tensor shapes).
//
// Input: the bytes of config.json, optionally followed by the line "//GEN" and the bytes of
// generation_config.json (a raw newline cannot occur inside a JSON string, so the split is
// unambiguous). The weights are fuzz/data/model.safetensors (a tiny Llama); a model that
// loads is run (see fuzz_common.h).
#include "fuzz_common.h"

static fuzz::TempDir* g_dir = nullptr;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    g_dir = new fuzz::TempDir();
    atexit([] { delete g_dir; });
    fuzz::copy_or_die(fuzz::data_dir() + "/model.safetensors", g_dir->file("model.safetensors"));
    vt_set_num_threads(1);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const char kSep[] = "\n//GEN\n";
    const size_t sep_len = sizeof kSep - 1;
    size_t cut = size;
    for (size_t i = 0; i + sep_len <= size; ++i)
        if (memcmp(data + i, kSep, sep_len) == 0) {
            cut = i;
            break;
        }
    if (!fuzz::write_file(g_dir->file("config.json"), data, cut)) abort();
    const std::string gen = g_dir->file("generation_config.json");
    if (cut < size) {
        if (!fuzz::write_file(gen, data + cut + sep_len, size - cut - sep_len)) abort();
    } else {
        unlink(gen.c_str());
    }
    vt_model_options o = vt_model_default_options();
    o.device = VT_DEVICE_CPU;
    o.weight_format = VT_FORMAT_INT8_BLOCKED;
    o.block_size = 16;
    fuzz::load_and_run(g_dir->path, o);
    return 0;
}
