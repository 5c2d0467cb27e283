#include "common.h"

#include <cstdarg>
#include <cstdio>

namespace vt {

static std::string vformat(const char* fmt, va_list ap) {
    va_list ap2;
    va_copy(ap2, ap);
    int n = std::vsnprintf(nullptr, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return fmt;
    std::string s(static_cast<size_t>(n) + 1, '\0');
    std::vsnprintf(&s[0], s.size(), fmt, ap);
    s.resize(static_cast<size_t>(n));
    return s;
}

std::string format(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string s = vformat(fmt, ap);
    va_end(ap);
    return s;
}

void fail(vt_status status, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    std::string s = vformat(fmt, ap);
    va_end(ap);
    throw Error(status, std::move(s));
}

void check_struct_size(uint32_t size, size_t ours, const char* what, bool output) {
    if (size == 0)
        fail(VT_STATUS_INVALID_ARGUMENT,
             output ? "%s: struct_size is 0: set it to sizeof the struct (VT_INFO_INIT does) before the call"
                    : "%s: struct_size is 0: make the options with the matching *_default_options()",
             what);
    if (size < sizeof(uint32_t) || size > ours)
        fail(VT_STATUS_INVALID_ARGUMENT,
             "%s: struct_size %u is outside [4, %zu]: the caller was built against a newer vt.h than this "
             "libvt (ABI %d), or the struct is not initialized",
             what, size, ours, VT_ABI_VERSION);
}

namespace {
thread_local std::string t_last_error;
}

void set_last_error(vt_status, const char* message) {
    try {
        t_last_error = message ? message : "";
    } catch (...) {
        // Out of memory while storing the message: keep the old one rather than throw.
    }
}

void clear_last_error() { t_last_error.clear(); }

const char* last_error_cstr() { return t_last_error.c_str(); }

bool array_ok(const void* p, int64_t n, size_t elem) {
    if (n < 0) return false;
    if (n == 0 || elem == 0) return true;
    if (uint64_t(n) > uint64_t(PTRDIFF_MAX) / elem) return false;
    return reinterpret_cast<uintptr_t>(p) <= UINTPTR_MAX - uintptr_t(n) * elem;
}

void check_array(const void* p, int64_t n, size_t elem, const char* what) {
    VT_CHECK_ARG(n >= 0, "%s: negative length %lld", what, (long long)n);
    if (n == 0 || elem == 0) return;
    VT_CHECK_ARG(uint64_t(n) <= uint64_t(PTRDIFF_MAX) / elem,
                 "%s: %lld elements of %zu bytes are more than memory can hold", what, (long long)n, elem);
    const uintptr_t bytes = uintptr_t(n) * elem;
    VT_CHECK_ARG(reinterpret_cast<uintptr_t>(p) <= UINTPTR_MAX - bytes,
                 "%s: %lld elements from %p run past the end of memory", what, (long long)n, p);
}

}  // namespace vt
