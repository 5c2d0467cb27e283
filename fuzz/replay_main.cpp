// main() for the fuzz targets without libFuzzer: runs LLVMFuzzerTestOneInput on every file
// given (folders: every file inside, sorted), prints "N passed, 0 failed". A crash or a
// sanitizer report ends the process, which is the failure. Used by tests/c/meson.build to
// replay fuzz/corpus and fuzz/crashers (also under ASan + UBSan).
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <vector>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static void collect(const std::string& path, std::vector<std::string>* files) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return;
    if (!S_ISDIR(st.st_mode)) {
        files->push_back(path);
        return;
    }
    DIR* d = opendir(path.c_str());
    if (!d) return;
    std::vector<std::string> names;
    while (struct dirent* e = readdir(d))
        if (e->d_name[0] != '.') names.push_back(e->d_name);
    closedir(d);
    std::sort(names.begin(), names.end());
    for (const auto& n : names) collect(path + "/" + n, files);
}

int main(int argc, char** argv) {
    LLVMFuzzerInitialize(&argc, &argv);
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) collect(argv[i], &files);
    int n = 0;
    for (const auto& f : files) {
        std::string bytes;
        if (!fuzz::read_file(f, &bytes)) {
            fprintf(stderr, "cannot read %s\n", f.c_str());
            printf("%d passed, 1 failed\n", n);
            return 1;
        }
        LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
        ++n;
    }
    if (n == 0) {
        fprintf(stderr, "no input files\n");
        printf("0 passed, 1 failed\n");
        return 1;
    }
    printf("%d passed, 0 failed\n", n);
    return 0;
}
