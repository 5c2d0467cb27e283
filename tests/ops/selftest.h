// The tally of the native self-test programs (tests/ops/test_threadpool.cpp, test_memory.cpp):
// each check prints "ok   WHAT" or "FAIL WHAT" (tests/native_selftest.py looks for the "ok"
// lines it expects), finish() prints "N passed, M failed" and is the program's exit status.
#pragma once

#include <cstdio>
#include <string>

namespace selftest {

inline int& passed() {
    static int n = 0;
    return n;
}
inline int& failed() {
    static int n = 0;
    return n;
}

inline void expect(bool ok, const std::string& what) {
    ok ? ++passed() : ++failed();
    std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
}

inline int finish() {
    std::printf("%d passed, %d failed\n", passed(), failed());
    return failed() ? 1 : 0;
}

}  // namespace selftest
