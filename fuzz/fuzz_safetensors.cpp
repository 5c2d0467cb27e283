// Fuzz target: the SafeTensors reader and the model loader behind vt_model_load.
//
// Input: the bytes of a model.safetensors file. It is written into a folder that also holds
// fuzz/data/config.json (a tiny Llama: hidden 16, 1 layer, vocab 8), then loaded in BF16 and
// INT8 (block 16); a model that loads is run (see fuzz_common.h). Any crash, sanitizer
// report, leak, VT_STATUS_INTERNAL or empty error message is a finding.
#include "fuzz_common.h"

static fuzz::TempDir* g_dir = nullptr;

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    g_dir = new fuzz::TempDir();
    atexit([] { delete g_dir; });
    fuzz::copy_or_die(fuzz::data_dir() + "/config.json", g_dir->file("config.json"));
    vt_set_num_threads(1);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (!fuzz::write_file(g_dir->file("model.safetensors"), data, size)) abort();
    vt_model_options o = vt_model_default_options();
    o.device = VT_DEVICE_CPU;
    o.weight_format = VT_FORMAT_BF16;
    fuzz::load_and_run(g_dir->path, o);
    o.weight_format = VT_FORMAT_INT8_BLOCKED;
    o.block_size = 16;
    fuzz::load_and_run(g_dir->path, o);
    return 0;
}
