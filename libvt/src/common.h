// Internal helpers shared by every libvt translation unit: errors, aligned buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "vt/vt.h"

namespace vt {

// ---- Errors ---------------------------------------------------------------------------
// Internal code throws vt::Error; the C ABI boundary (api.cpp, vt::guard) turns it into a
// status + thread-local message. Nothing else may escape.

class Error : public std::exception {
public:
    Error(vt_status status, std::string message) : status_(status), message_(std::move(message)) {}
    vt_status status() const noexcept { return status_; }
    const char* what() const noexcept override { return message_.c_str(); }

private:
    vt_status status_;
    std::string message_;
};

// printf-style formatting into a std::string.
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

[[noreturn]] void fail(vt_status status, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

#define VT_CHECK_ARG(cond, ...)                                                   \
    do {                                                                          \
        if (!(cond)) ::vt::fail(VT_STATUS_INVALID_ARGUMENT, __VA_ARGS__);         \
    } while (0)

// An array the caller says has n elements of `elem` bytes at p (n >= 0): refused
// (INVALID_ARGUMENT naming `what`) when its byte size is larger than any object can be or it
// would run past the end of the address space. No such array exists, so n is not its length:
// checked before anything is read or written, where computing p + n would already be
// undefined behaviour. (A length that is merely too long for the caller's buffer cannot be
// seen from here.)
void check_array(const void* p, int64_t n, size_t elem, const char* what);
// Whether check_array would accept the array (no message built: for per-call checks on hot
// paths, which call check_array for the message only when this is false).
bool array_ok(const void* p, int64_t n, size_t elem);

// Thread-local last error (api.cpp).
void set_last_error(vt_status status, const char* message);
void clear_last_error();

// Runs f() and maps whatever it throws to a status + message. Used once per C entry point.
template <class F>
vt_status guard(F&& f) noexcept {
    try {
        f();
        clear_last_error();
        return VT_OK;
    } catch (const Error& e) {
        set_last_error(e.status(), e.what());
        return e.status();
    } catch (const std::bad_alloc&) {
        set_last_error(VT_STATUS_OUT_OF_MEMORY, "out of host memory");
        return VT_STATUS_OUT_OF_MEMORY;
    } catch (const std::exception& e) {
        set_last_error(VT_STATUS_INTERNAL, e.what());
        return VT_STATUS_INTERNAL;
    } catch (...) {
        set_last_error(VT_STATUS_INTERNAL, "unknown internal error");
        return VT_STATUS_INTERNAL;
    }
}

// ---- Enum arguments -------------------------------------------------------------------
// C may pass any int where vt.h declares an enum parameter, but in C++ reading an enum object
// whose value lies outside the enumeration's range is undefined (UBSan: -fsanitize=enum). The
// entry points read such parameters' bits as an int with this, then validate the int.
template <class E>
int enum_arg(const E& e) {
    static_assert(sizeof(E) == sizeof(int), "vt.h enums are int-sized");
    int v;
    std::memcpy(&v, &e, sizeof v);
    return v;
}

// ---- Extensible structs (vt.h "Conventions": struct_size) ------------------------------

// Throws INVALID_ARGUMENT unless 4 <= size <= ours (size 0: not made by *_default_options()).
void check_struct_size(uint32_t size, size_t ours, const char* what, bool output);

// A caller's options: `dflt` with the first p->struct_size bytes of *p over it (an older
// caller's struct lacks the tail: those fields keep libvt's defaults); NULL -> dflt.
template <class T>
T read_options(const T* p, T dflt, const char* what) {
    if (!p) return dflt;
    const uint32_t size = p->struct_size;
    check_struct_size(size, sizeof(T), what, false);
    std::memcpy(static_cast<void*>(&dflt), p, size);
    dflt.struct_size = uint32_t(sizeof(T));
    return dflt;
}

// An info struct the caller made ready (struct_size set; a newer caller's larger struct is
// fine: libvt fills what it knows). Call before the work, so a bad one changes nothing.
template <class T>
void check_info(const T* out, const char* what) {
    const uint32_t size = out->struct_size;
    check_struct_size(size, size > sizeof(T) ? size : sizeof(T), what, true);
}

// Fills a caller's info struct: at most out->struct_size bytes of v, and struct_size set to
// what was written.
template <class T>
void write_info(const T& v, T* out, const char* what) {
    check_info(out, what);
    const uint32_t size = out->struct_size;
    const size_t n = size < sizeof(T) ? size : sizeof(T);
    std::memcpy(static_cast<void*>(out), &v, n);
    out->struct_size = uint32_t(n);
}

// ---- Aligned storage ------------------------------------------------------------------

template <class T, size_t Align = 64>
struct AlignedAllocator {
    using value_type = T;
    template <class U>
    struct rebind {
        using other = AlignedAllocator<U, Align>;
    };
    AlignedAllocator() noexcept = default;
    template <class U>
    AlignedAllocator(const AlignedAllocator<U, Align>&) noexcept {}
    T* allocate(size_t n) {
        if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
        size_t bytes = (n * sizeof(T) + Align - 1) / Align * Align;
        void* p = std::aligned_alloc(Align, bytes ? bytes : Align);
        if (!p) throw std::bad_alloc();
        return static_cast<T*>(p);
    }
    void deallocate(T* p, size_t) noexcept { std::free(p); }
    template <class U>
    bool operator==(const AlignedAllocator<U, Align>&) const noexcept { return true; }
    template <class U>
    bool operator!=(const AlignedAllocator<U, Align>&) const noexcept { return false; }
};

template <class T>
using AlignedVec = std::vector<T, AlignedAllocator<T>>;

}  // namespace vt

namespace vt {
const char* last_error_cstr();
}
